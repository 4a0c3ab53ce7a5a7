/* lda_save.c - save the trained LDA model as a set of per-rank parts
 * (apps/model_set.h), every rank writing only its share:
 *
 *   word_topic.part-RRRRR.npy  int32 words x K: n_wk of rank R's home words
 *   words.part-RRRRR.npy       int32 words x 1: their dense word ids
 *   doc_topic.part-RRRRR.npy   int32 docs x K: n_dk of its workers' training documents
 *   docs.part-RRRRR.npy        int32 docs x 1: their dense document ids
 *
 * and rank 0 the whole-model files:
 *
 *   vocab.txt, docs.txt   original word / document ids, line i = dense id i
 *   topics.txt            the top words of every topic (each rank sends its
 *                         own best words per topic; rank 0 merges them)
 *   model.json            options, sizes, the topic totals n_k, final
 *                         metrics and the manifest of the parts
 *
 * `rotor export` (lda_model.c) merges them into the single-file model:
 * word_topic.npy (V x K), topic_word.npy (K x V, phi_kw = (n_wk + beta) /
 * (n_k + V beta)), doc_topic.npy (D x K), the id files, topics.txt.
 */
#include "apps/lda_app.h"
#include "apps/model_set.h"
#include "ground/json.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The dense n_wk of word i (slice at `slice`) into row[K]. */
static void word_counts(const lda_layout *l, uint64_t i, const uint32_t *slice, uint32_t K,
                        int32_t *row)
{
    if (!l->slice_cap[i]) {
        memcpy(row, slice, K * sizeof(int32_t));
        return;
    }
    memset(row, 0, K * sizeof(int32_t));
    for (uint32_t x = 0; x < slice[0]; x++)
        row[slice[1 + x] >> 16] = (int32_t)(slice[1 + x] & 0xffff);
}

/* This rank's home words: counts, ids, and their best words per topic. */
static int save_words(rt_model_saver *s, lda_app *a, rt_engine *eng, lda_top *top, rt_error *err)
{
    const rt_plan *plan = a->plan;
    const uint32_t K = a->core.o.K;
    uint64_t n = 0;
    for (uint32_t b = 0; b < plan->blocks; b++)
        if (rt_engine_home_payload(eng, b, NULL))
            n += rt_plan_block_cols(plan, b);
    int32_t *row = malloc(K * sizeof(int32_t));
    if (!row)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (saving word topics)");
    int rc = rt_model_part_begin(s, "word_topic", "<i4", n, K, err);
    for (uint32_t b = 0; rc == 0 && b < plan->blocks; b++) {
        const uint32_t *payload = rt_engine_home_payload(eng, b, NULL);
        if (!payload)
            continue;
        for (uint64_t i = plan->block_col_offset[b]; rc == 0 && i < plan->block_col_offset[b + 1];
             i++) {
            word_counts(&a->core.layout, i, payload + a->core.layout.slice_off[i], K, row);
            lda_top_add_word(top, plan->block_col_ids[i], row);
            rc = rt_model_part_write(s, row, K * sizeof(int32_t), err);
        }
    }
    free(row);
    if (rc || rt_model_part_end(s, err) || rt_model_part_begin(s, "words", "<i4", n, 1, err))
        return -1;
    for (uint32_t b = 0; b < plan->blocks; b++)
        if (rt_engine_home_payload(eng, b, NULL) &&
            rt_model_part_write(s, plan->block_col_ids + plan->block_col_offset[b],
                                rt_plan_block_cols(plan, b) * sizeof(uint32_t), err))
            return -1;
    return rt_model_part_end(s, err);
}

/* This rank's workers' training documents: counts and ids. */
static int save_docs(rt_model_saver *s, lda_app *a, rt_error *err)
{
    const uint32_t K = a->core.o.K;
    uint64_t n = 0;
    for (uint32_t i = 0; i < a->core.n_local; i++)
        n += a->core.workers[i].train.n_docs;
    int32_t *row = malloc(K * sizeof(int32_t));
    if (!row)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    int rc = rt_model_part_begin(s, "doc_topic", "<i4", n, K, err);
    for (uint32_t i = 0; rc == 0 && i < a->core.n_local; i++) {
        const lda_tokens *t = &a->core.workers[i].train;
        if (t->ndk) {
            rc = rt_model_part_write(s, t->ndk, (size_t)t->n_docs * K * sizeof(int32_t), err);
            continue;
        }
        for (uint32_t d = 0; rc == 0 && d < t->n_docs; d++) { /* counted from the topics (warp) */
            memset(row, 0, K * sizeof(int32_t));
            lda_doc_counts(t, K, d, row);
            rc = rt_model_part_write(s, row, K * sizeof(int32_t), err);
        }
    }
    free(row);
    if (rc || rt_model_part_end(s, err) || rt_model_part_begin(s, "docs", "<i4", n, 1, err))
        return -1;
    for (uint32_t i = 0; i < a->core.n_local; i++)
        if (rt_model_part_write(s, a->shards[i].row_ids,
                                a->core.workers[i].train.n_docs * sizeof(uint32_t), err))
            return -1;
    return rt_model_part_end(s, err);
}

/* Every rank's best words per topic to rank 0, merged there into `top`. */
static int gather_top(lda_app *a, rt_engine *eng, lda_top *top, rt_error *err)
{
    int P = rt_engine_size(eng);
    size_t bytes = lda_top_bytes(top), *lens = calloc((size_t)P, sizeof(size_t));
    void *all = NULL;
    int rc = -1;
    if (!lens) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
        goto out;
    }
    if (rt_engine_gatherv(eng, top->best, top->best ? bytes : 0, &all, lens, err))
        goto out;
    rc = 0;
    if (rt_engine_rank(eng) != 0)
        goto out;
    for (int r = 0; rc == 0 && r < P; r++)
        if (lens[r] != bytes)
            rc = rt_fail(err, RT_EXIT_RUNTIME,
                         "lda save: rank %d sent %zu bytes of top words, not %zu", r, lens[r],
                         bytes);
    for (int r = 1; rc == 0 && r < P; r++)
        rc = lda_top_merge(top, (const char *)all + (size_t)r * bytes, a->plan->n_cols, err);
out:
    free(lens);
    free(all);
    return rc;
}

static int write_lines(const char *path, char **ids, uint64_t n, rt_error *err)
{
    rt_outfile of;
    if (rt_outfile_open(&of, path, err))
        return -1;
    for (uint64_t i = 0; i < n; i++)
        fprintf(of.fp, "%s\n", ids[i]);
    if (rt_write_check(of.fp, path, err)) {
        rt_outfile_abort(&of);
        return -1;
    }
    return rt_outfile_commit(&of, err);
}

static int write_topics(const char *path, const lda_top *top, const int64_t *nk, char **vocab,
                        rt_error *err)
{
    rt_outfile of;
    if (rt_outfile_open(&of, path, err))
        return -1;
    if (lda_top_write(of.fp, top, nk, (const char *const *)vocab, err)) {
        rt_outfile_abort(&of);
        return rt_error_prefix(err, "%s", path);
    }
    return rt_outfile_commit(&of, err);
}

static json_t *model_meta(lda_app *a)
{
    const lda_opts *o = &a->core.o;
    json_t *nk = json_array();
    for (uint32_t k = 0; k < o->K; k++)
        json_array_append_new(nk, json_integer((json_int_t)a->core.nk[k]));
    return json_pack("{s:s, s:i, s:f, s:f, s:s, s:I, s:I, s:I, s:I, s:I, s:f, s:f, s:f, s:o, s:o}",
                     "app", "lda", "topics", (int)o->K, "alpha", o->alpha, "beta", o->beta,
                     "sampler", lda_sampler_name(o->sampler), "seed", (json_int_t)o->seed, "iters",
                     (json_int_t)a->core.iters_done, "documents", (json_int_t)a->plan->n_rows,
                     "words", (json_int_t)a->plan->n_cols, "tokens", (json_int_t)a->core.tokens,
                     "ll_per_token", a->core.ll_per_token, "perplexity",
                     a->core.perplexity == a->core.perplexity ? a->core.perplexity : 0.0,
                     "sample_seconds", a->sample_seconds, "plan", rt_json_text(a->plan->dir),
                     "topic_totals", nk);
}

/* Rank 0: the id files and topics.txt into the directory being saved. */
static int write_side_files(lda_app *a, const char *dir, const lda_top *top, rt_error *err)
{
    char path[4200];
    char **vocab = NULL, **docs = NULL;
    uint64_t nv, nd;
    int rc = -1;
    if (rt_plan_read_ids(a->plan, "cols", &vocab, &nv, err) ||
        rt_plan_read_ids(a->plan, "rows", &docs, &nd, err))
        goto out;
    if (rt_path_join(path, sizeof(path), dir, "vocab.txt", err) ||
        write_lines(path, vocab, nv, err) ||
        rt_path_join(path, sizeof(path), dir, "docs.txt", err) ||
        write_lines(path, docs, nd, err) ||
        rt_path_join(path, sizeof(path), dir, "topics.txt", err) ||
        write_topics(path, top, a->core.nk, vocab, err))
        goto out;
    rc = 0;
out:
    free(vocab);
    free(docs);
    return rc;
}

int lda_save(void *p, rt_engine *eng, rt_error *err)
{
    lda_app *a = p;
    if (!a->core.o.out)
        return 0;
    const rt_plan *plan = a->plan;
    int root = rt_engine_rank(eng) == 0;
    rt_model_saver s;
    lda_top top;
    json_t *meta = NULL;
    int rc = rt_model_save_begin(&s, eng, a->core.o.out, err);
    if (rc == 0)
        rc = lda_top_init(&top, a->core.o.K,
                          a->core.o.top < plan->n_cols ? a->core.o.top : (uint32_t)plan->n_cols,
                          err);
    else
        memset(&top, 0, sizeof(top)); /* still take part in the collectives */
    if (rc == 0 && (plan->n_rows > INT32_MAX || plan->n_cols > INT32_MAX))
        rc = rt_fail(err, RT_EXIT_RUNTIME, "lda save: more than 2^31 documents or words");
    if (rc == 0 && (save_words(&s, a, eng, &top, err) || save_docs(&s, a, err)))
        rc = -1;
    /* Every rank takes part in the gather, also after a failure of its own. */
    rt_error gerr = {0};
    if (gather_top(a, eng, &top, rc ? &gerr : err))
        rc = -1;
    if (root) {
        if (rc == 0)
            rc = write_side_files(a, rt_model_save_dir(&s), &top, err);
        if (!(meta = model_meta(a)) && rc == 0)
            rc = rt_fail(err, RT_EXIT_RUNTIME, "lda save: cannot build model.json");
    }
    lda_top_free(&top);
    rc = rt_model_save_commit(&s, rc, meta, err);
    if (rc == 0 && root)
        rt_info("lda: model written to %s", a->core.o.out);
    return rc;
}
