/* lda_save.c - gather the trained model to rank 0 and write it:
 *
 *   word_topic.npy  int32 V x K   n_wk (row = dense word id, see vocab.txt)
 *   topic_word.npy  float32 K x V phi_kw = (n_wk + beta) / (n_k + V beta)
 *   doc_topic.npy   int32 D x K   n_dk of the training documents (docs.txt)
 *   vocab.txt, docs.txt           original word / document ids, line i = id i
 *   topics.txt      the top words of every topic
 *   model.json      options, sizes and final metrics
 */
#include "apps/app_common.h"
#include "apps/lda_app.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Records "u32 global id, K x i32" for this rank's home word slices. */
static int pack_words(lda_app *a, rt_engine *eng, uint32_t **buf, size_t *len, rt_error *err)
{
    const rt_plan *plan = a->plan;
    const lda_layout *l = &a->core.layout;
    const uint32_t K = a->core.o.K;
    size_t n = 0;
    for (uint32_t b = 0; b < plan->blocks; b++)
        if (rt_engine_home_payload(eng, b, NULL))
            n += rt_plan_block_cols(plan, b);
    uint32_t *out = calloc(n * (K + 1) + 1, sizeof(uint32_t)), *q = out;
    if (!out)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (saving word topics)");
    for (uint32_t b = 0; b < plan->blocks; b++) {
        const uint32_t *payload = rt_engine_home_payload(eng, b, NULL);
        if (!payload)
            continue;
        for (uint64_t i = plan->block_col_offset[b]; i < plan->block_col_offset[b + 1]; i++) {
            const uint32_t *slice = payload + l->slice_off[i];
            *q++ = plan->block_col_ids[i];
            if (!l->slice_cap[i])
                memcpy(q, slice, K * sizeof(uint32_t));
            else
                for (uint32_t x = 0; x < slice[0]; x++)
                    q[slice[1 + x] >> 16] = slice[1 + x] & 0xffff;
            q += K;
        }
    }
    *buf = out;
    *len = n * (K + 1) * sizeof(uint32_t);
    return 0;
}

static int pack_docs(lda_app *a, uint32_t **buf, size_t *len, rt_error *err)
{
    const uint32_t K = a->core.o.K;
    size_t n = 0;
    for (uint32_t i = 0; i < a->core.n_local; i++)
        n += a->core.workers[i].train.n_docs;
    uint32_t *out = calloc(n * (K + 1) + 1, sizeof(uint32_t)), *q = out;
    if (!out)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (saving doc topics)");
    for (uint32_t i = 0; i < a->core.n_local; i++) {
        const lda_tokens *t = &a->core.workers[i].train;
        for (uint32_t d = 0; d < t->n_docs; d++) {
            *q++ = a->shards[i].row_ids[d];
            memcpy(q, t->ndk + (size_t)d * K, K * sizeof(uint32_t));
            q += K;
        }
    }
    *buf = out;
    *len = n * (K + 1) * sizeof(uint32_t);
    return 0;
}

/* Unpack gathered records into a dense rows x K matrix. */
static int unpack(const uint32_t *rec, size_t bytes, uint64_t rows, uint32_t K, int32_t *m,
                  rt_error *err)
{
    size_t n = bytes / ((K + 1) * sizeof(uint32_t));
    for (size_t r = 0; r < n; r++, rec += K + 1) {
        if (rec[0] >= rows)
            return rt_fail(err, RT_EXIT_RUNTIME, "lda save: bad gathered id %u", rec[0]);
        memcpy(m + (size_t)rec[0] * K, rec + 1, K * sizeof(int32_t));
    }
    return 0;
}

static int write_topics(const char *path, const int32_t *wt, const int64_t *nk, uint64_t V,
                        uint32_t K, uint32_t top, char **vocab, rt_error *err)
{
    rt_outfile of;
    if (rt_outfile_open(&of, path, err))
        return -1;
    if (lda_topics_write(of.fp, wt, nk, V, K, top, (const char *const *)vocab, err)) {
        rt_outfile_abort(&of);
        return rt_error_prefix(err, "%s", path);
    }
    return rt_outfile_commit(&of, err);
}

static int write_lines(const char *path, char **ids, uint64_t n, rt_error *err)
{
    rt_outfile of;
    if (rt_outfile_open(&of, path, err))
        return -1;
    for (uint64_t i = 0; i < n; i++)
        fprintf(of.fp, "%s\n", ids[i]);
    if (ferror(of.fp)) {
        rt_outfile_abort(&of);
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: write failed", path);
    }
    return rt_outfile_commit(&of, err);
}

static int write_json(const char *path, lda_app *a, rt_error *err)
{
    const lda_opts *o = &a->core.o;
    json_t *j =
        json_pack("{s:s, s:i, s:f, s:f, s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:s}", "app",
                  "lda", "topics", (int)o->K, "alpha", o->alpha, "beta", o->beta, "sampler",
                  o->sampler == LDA_SAMPLER_MH ? "mh" : "sparse", "seed", (json_int_t)o->seed,
                  "iters", (json_int_t)a->core.iters_done, "documents", (json_int_t)a->plan->n_rows,
                  "words", (json_int_t)a->plan->n_cols, "tokens", (json_int_t)a->core.tokens,
                  "ll_per_token", a->core.ll_per_token, "perplexity",
                  a->core.perplexity == a->core.perplexity ? a->core.perplexity : 0.0,
                  "sample_seconds", a->sample_seconds, "plan", a->plan->dir);
    if (!j)
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: cannot build JSON", path);
    int rc = rt_app_write_json(path, j, err);
    json_decref(j);
    return rc;
}

/* Rank 0: everything gathered; write the files. */
static int write_model(lda_app *a, const int32_t *wt, const int32_t *dt, rt_error *err)
{
    const rt_plan *plan = a->plan;
    const uint32_t K = a->core.o.K;
    const uint64_t V = plan->n_cols;
    const char *dir = a->core.o.out;
    char path[4200];
    char **vocab = NULL, **docs = NULL;
    uint64_t nv, nd;
    float *phi = malloc((size_t)K * V * sizeof(float) + 1);
    int rc = -1;
    if (!phi) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
        goto out;
    }
    for (uint32_t k = 0; k < K; k++) {
        double norm = 1.0 / ((double)a->core.nk[k] + (double)V * a->core.o.beta);
        for (uint64_t w = 0; w < V; w++)
            phi[(size_t)k * V + w] = (float)((wt[(size_t)w * K + k] + a->core.o.beta) * norm);
    }
    if (rt_mkdir_p(dir, err) || rt_plan_read_ids(plan, "cols", &vocab, &nv, err) ||
        rt_plan_read_ids(plan, "rows", &docs, &nd, err))
        goto out;
    if (rt_path_join(path, sizeof(path), dir, "word_topic.npy", err) ||
        rt_npy_write_i32(path, wt, V, K, err) ||
        rt_path_join(path, sizeof(path), dir, "topic_word.npy", err) ||
        rt_npy_write_f32(path, phi, K, V, V, err) ||
        rt_path_join(path, sizeof(path), dir, "doc_topic.npy", err) ||
        rt_npy_write_i32(path, dt, plan->n_rows, K, err) ||
        rt_path_join(path, sizeof(path), dir, "vocab.txt", err) ||
        write_lines(path, vocab, nv, err) ||
        rt_path_join(path, sizeof(path), dir, "docs.txt", err) ||
        write_lines(path, docs, nd, err) ||
        rt_path_join(path, sizeof(path), dir, "topics.txt", err) ||
        write_topics(path, wt, a->core.nk, V, K, a->core.o.top, vocab, err) ||
        rt_path_join(path, sizeof(path), dir, "model.json", err) || write_json(path, a, err))
        goto out;
    rt_info("lda: model written to %s", dir);
    rc = 0;
out:
    free(phi);
    free(vocab);
    free(docs);
    return rc;
}

int lda_save(void *p, rt_engine *eng, rt_error *err)
{
    lda_app *a = p;
    if (!a->core.o.out)
        return 0;
    const uint32_t K = a->core.o.K;
    int size = rt_engine_size(eng), root = rt_engine_rank(eng) == 0;
    uint32_t *wbuf = NULL, *dbuf = NULL;
    void *wall = NULL, *dall = NULL;
    size_t wlen = 0, dlen = 0, *lens = calloc((size_t)size, sizeof(size_t));
    int32_t *wt = NULL, *dt = NULL;
    int rc = -1;
    if (!lens) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
        goto out;
    }
    if (pack_words(a, eng, &wbuf, &wlen, err) || pack_docs(a, &dbuf, &dlen, err))
        goto out;
    if (size > 1) {
        if (rt_engine_gatherv(eng, wbuf, wlen, &wall, lens, err))
            goto out;
        size_t tot = 0;
        for (int r = 0; root && r < size; r++)
            tot += lens[r];
        wlen = tot;
        if (rt_engine_gatherv(eng, dbuf, dlen, &dall, lens, err))
            goto out;
        tot = 0;
        for (int r = 0; root && r < size; r++)
            tot += lens[r];
        dlen = tot;
    }
    if (root) {
        wt = calloc((size_t)a->plan->n_cols * K + 1, sizeof(int32_t));
        dt = calloc((size_t)a->plan->n_rows * K + 1, sizeof(int32_t));
        if (!wt || !dt) {
            rt_fail(err, RT_EXIT_RUNTIME, "out of memory (model)");
            goto out;
        }
        if (unpack(wall ? wall : wbuf, wlen, a->plan->n_cols, K, wt, err) ||
            unpack(dall ? dall : dbuf, dlen, a->plan->n_rows, K, dt, err) ||
            write_model(a, wt, dt, err))
            goto out;
    }
    rc = 0;
out:
    free(lens);
    free(wbuf);
    free(dbuf);
    free(wall);
    free(dall);
    free(wt);
    free(dt);
    return rc;
}
