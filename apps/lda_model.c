/*
 * lda_model.c - the saved LDA model read back (the rt_app_desc model hooks
 * of lda), merged by `rotor export`, and the one owner of "top words per
 * topic": topics.txt at save time and `rotor topics` both print lda_top's
 * lines
 *
 *   topic K (SHARE): WORD WORD ...
 *
 * with SHARE = n_k / sum n_k and the words by count n_wk, most frequent
 * first, ties by word id.  The model files are described in lda_save.c.
 */
#include "apps/app_common.h"
#include "apps/lda.h"
#include "apps/model_set.h"

#include <errno.h>
#include <inttypes.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#define LDA_READ_BUFFER (16u << 20) /* bytes of buffers when reading parts */

/* ------------------------------------------------------------ top words */

int lda_top_init(lda_top *t, uint32_t K, uint32_t top, rt_error *err)
{
    memset(t, 0, sizeof(*t));
    t->best = malloc((size_t)K * top * sizeof(lda_word_count) + 1);
    if (!t->best)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (top words)");
    t->K = K;
    t->top = top;
    for (size_t i = 0; i < (size_t)K * top; i++)
        t->best[i] = (lda_word_count){.count = -1, .word = 0};
    return 0;
}

void lda_top_free(lda_top *t)
{
    free(t->best);
    memset(t, 0, sizeof(*t));
}

static int better(lda_word_count a, lda_word_count b)
{
    return b.count < 0 || a.count > b.count || (a.count == b.count && a.word < b.word);
}

static void offer(lda_top *t, uint32_t k, lda_word_count c)
{
    lda_word_count *list = t->best + (size_t)k * t->top;
    if (!t->top || !better(c, list[t->top - 1]))
        return;
    uint32_t at = t->top - 1;
    while (at > 0 && better(c, list[at - 1]))
        at--;
    memmove(list + at + 1, list + at, (t->top - 1 - at) * sizeof(*list));
    list[at] = c;
}

void lda_top_add_word(lda_top *t, uint32_t word, const int32_t *counts)
{
    for (uint32_t k = 0; k < t->K; k++)
        offer(t, k, (lda_word_count){.count = counts[k], .word = word});
}

size_t lda_top_bytes(const lda_top *t)
{
    return t->best ? (size_t)t->K * t->top * sizeof(lda_word_count) : 0;
}

int lda_top_merge(lda_top *t, const void *other, uint64_t V, rt_error *err)
{
    const lda_word_count *o = other;
    for (uint32_t k = 0; k < t->K; k++)
        for (uint32_t i = 0; i < t->top; i++) {
            lda_word_count c = o[(size_t)k * t->top + i];
            if (c.count < 0)
                continue;
            if (c.word >= V)
                return rt_fail(err, RT_EXIT_RUNTIME, "top words: word %u of %" PRIu64, c.word, V);
            offer(t, k, c);
        }
    return 0;
}

int lda_top_write(FILE *fp, const lda_top *t, const int64_t *nk, const char *const *vocab,
                  rt_error *err)
{
    int64_t total = 0;
    for (uint32_t k = 0; k < t->K; k++)
        total += nk[k];
    for (uint32_t k = 0; k < t->K; k++) {
        const lda_word_count *list = t->best + (size_t)k * t->top;
        fprintf(fp, "topic %u (%.4f):", k, total ? (double)nk[k] / (double)total : 0.0);
        for (uint32_t i = 0; i < t->top && list[i].count >= 0; i++)
            fprintf(fp, " %s", vocab[list[i].word]);
        fputc('\n', fp);
    }
    if (ferror(fp))
        return rt_fail(err, RT_EXIT_RUNTIME, "write failed");
    return 0;
}

/* ------------------------------------------------------------ the reader */

void lda_model_free(void *p)
{
    lda_model *m = p;
    if (!m)
        return;
    free(m->wt);
    free(m->nk);
    free(m->words);
    rt_idmap_free(&m->vocab);
    free(m);
}

static int read_vocab(const char *dir, lda_model *m, rt_error *err)
{
    if (rt_app_read_ids(dir, "vocab.txt", &m->vocab, m->V, err))
        return -1;
    m->words = malloc((m->V ? m->V : 1) * sizeof(char *));
    if (!m->words)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    for (uint64_t w = 0; w < m->V; w++)
        m->words[w] = rt_idmap_str(&m->vocab, w);
    return 0;
}

/* alpha and beta of model.json (rotor infer samples with them). */
static int read_hyper(json_t *meta, lda_model *m, const char *path, rt_error *err)
{
    json_t *a = json_object_get(meta, "alpha"), *b = json_object_get(meta, "beta");
    int ok = json_is_number(a) && json_is_number(b);
    m->alpha = json_number_value(a);
    m->beta = json_number_value(b);
    if (!ok || !(m->alpha > 0) || !(m->beta > 0) || m->alpha > RT_LDA_MAX_PRIOR ||
        m->beta > RT_LDA_MAX_PRIOR)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: \"alpha\" and \"beta\" must be positive numbers up to %g", path,
                       RT_LDA_MAX_PRIOR);
    return 0;
}

static int scatter_words(void *ctx, const int32_t *ids, const void *rows, uint64_t n, rt_error *err)
{
    lda_model *m = ctx;
    (void)err;
    for (uint64_t i = 0; i < n; i++)
        memcpy(m->wt + (size_t)ids[i] * m->K, (const int32_t *)rows + i * m->K,
               m->K * sizeof(int32_t));
    return 0;
}

/* The word-topic counts of every rank's parts, into m->wt. */
static int load_parts(const rt_model_parts *mp, lda_model *m, const char *path, rt_error *err)
{
    uint64_t K;
    size_t bytes;
    if (rt_json_u64(mp->meta, "topics", 2, RT_LDA_MAX_TOPICS, &K, path, err) ||
        rt_json_u64(mp->meta, "words", 0, INT32_MAX, &m->V, path, err) ||
        rt_size_mul(m->V, K * sizeof(int32_t), &bytes, path, "words x topics", err))
        return -1;
    m->K = (uint32_t)K;
    if (!(m->wt = malloc(bytes + 1)))
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: out of memory (word topics)", mp->dir);
    return rt_model_scan(mp, "word_topic", "words", m->V, K, LDA_READ_BUFFER, scatter_words, m,
                         err);
}

static int load_single(const char *dir, lda_model *m, rt_error *err)
{
    char path[4200];
    uint64_t K;
    if (rt_path_join(path, sizeof(path), dir, "word_topic.npy", err) ||
        rt_npy_read_i32(path, &m->wt, &m->V, &K, err))
        return -1;
    if (K < 2 || K > RT_LDA_MAX_TOPICS)
        return rt_fail(err, RT_EXIT_INPUT, "%s: %llu topics (2..%u expected)", path,
                       (unsigned long long)K, RT_LDA_MAX_TOPICS);
    m->K = (uint32_t)K;
    return 0;
}

static int load(const char *dir, lda_model *m, rt_error *err)
{
    char path[4200];
    rt_model_parts mp;
    int rc = -1;
    if (rt_model_parts_open(dir, &mp, err) ||
        rt_path_join(path, sizeof(path), dir, "model.json", err) ||
        (mp.n ? load_parts(&mp, m, path, err) : load_single(dir, m, err)) ||
        read_hyper(mp.meta, m, path, err))
        goto out;
    /* where the counts came from, for the message of a negative one */
    char what[4300];
    snprintf(what, sizeof(what), mp.n ? "%s: word_topic" : "%s/word_topic.npy", dir);
    m->nk = calloc(m->K, sizeof(int64_t));
    if (!m->nk) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
        goto out;
    }
    for (uint64_t w = 0; w < m->V; w++)
        for (uint32_t k = 0; k < m->K; k++) {
            int32_t n = m->wt[w * m->K + k];
            if (n < 0) {
                rt_fail(err, RT_EXIT_INPUT, "%s: negative count %d at word %llu, topic %u", what, n,
                        (unsigned long long)w, k);
                goto out;
            }
            m->nk[k] += n;
        }
    rc = read_vocab(dir, m, err);
out:
    rt_model_parts_close(&mp);
    return rc;
}

int lda_model_load(const char *dir, void **out, rt_error *err)
{
    lda_model *m = calloc(1, sizeof(*m));
    if (!m)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    rt_idmap_init(&m->vocab);
    if (load(dir, m, err)) {
        lda_model_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

int lda_model_topics(const void *p, uint32_t top, FILE *out, rt_error *err)
{
    const lda_model *m = p;
    lda_top t;
    if (lda_top_init(&t, m->K, top < m->V ? top : (uint32_t)m->V, err))
        return -1;
    for (uint64_t w = 0; w < m->V; w++)
        lda_top_add_word(&t, (uint32_t)w, m->wt + w * m->K);
    int rc = lda_top_write(out, &t, m->nk, m->words, err);
    lda_top_free(&t);
    return rc;
}

/* ------------------------------------------------------------ export */

/* word_topic.npy and topic_word.npy from one pass over the word parts:
 * each chunk of words in dense order is appended to word_topic.npy, and
 * its phi_kw = (n_wk + beta) / (n_k + V beta) are written into topic_word's
 * K rows at the chunk's columns. */
typedef struct lda_export {
    uint32_t K;
    uint64_t V;
    double beta;
    int64_t *nk;
    rt_outfile wt, phi;
    off_t phi_data; /* where topic_word.npy's cells start */
    float *col;     /* one topic's phi of a chunk */
    uint64_t chunk;
} lda_export;

static int emit_words(void *ctx, const void *rows, uint64_t lo, uint64_t n, rt_error *err)
{
    lda_export *x = ctx;
    const int32_t *wt = rows;
    if (n > x->chunk)
        return rt_fail(err, RT_EXIT_RUNTIME, "lda export: a chunk of %" PRIu64 " words", n);
    if (rt_write_all(x->wt.fp, rows, n * x->K * sizeof(int32_t), x->wt.path, err))
        return -1;
    for (uint32_t k = 0; k < x->K; k++) {
        double norm = 1.0 / ((double)x->nk[k] + (double)x->V * x->beta);
        for (uint64_t w = 0; w < n; w++)
            x->col[w] = (float)((wt[w * x->K + k] + x->beta) * norm);
        off_t at = x->phi_data + (off_t)(((uint64_t)k * x->V + lo) * sizeof(float));
        if (fseeko(x->phi.fp, at, SEEK_SET) != 0)
            return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: seek", x->phi.path);
        if (rt_write_all(x->phi.fp, x->col, n * sizeof(float), x->phi.path, err))
            return -1;
    }
    return 0;
}

/* n_k as the manifest records them. */
static int read_totals(json_t *meta, uint32_t K, int64_t *nk, const char *path, rt_error *err)
{
    json_t *a = json_object_get(meta, "topic_totals");
    if (!json_is_array(a) || json_array_size(a) != K)
        return rt_fail(err, RT_EXIT_INPUT, "%s: \"topic_totals\" must list %u counts", path, K);
    for (uint32_t k = 0; k < K; k++) {
        json_t *v = json_array_get(a, k);
        if (!json_is_integer(v) || json_integer_value(v) < 0)
            return rt_fail(err, RT_EXIT_INPUT, "%s: \"topic_totals\" must be counts", path);
        nk[k] = json_integer_value(v);
    }
    return 0;
}

static int export_words(const rt_model_parts *mp, lda_export *x, const char *dir,
                        const rt_export_opts *o, rt_progress *progress, rt_error *err)
{
    char wpath[4200], ppath[4200];
    int rc = -1, wopen = 0, popen = 0;
    /* The chunk rt_model_dense_rows will use, for the phi buffer. */
    x->chunk = o->memory / 2 / ((uint64_t)x->K * sizeof(int32_t));
    if (x->chunk < 1)
        x->chunk = 1;
    if (!(x->col = malloc((x->chunk < x->V ? x->chunk : x->V) * sizeof(float) + 1)))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    if (rt_path_join(wpath, sizeof(wpath), dir, "word_topic.npy", err) ||
        rt_path_join(ppath, sizeof(ppath), dir, "topic_word.npy", err) ||
        rt_outfile_open(&x->wt, wpath, err))
        goto out;
    wopen = 1;
    if (rt_outfile_open(&x->phi, ppath, err))
        goto out;
    popen = 1;
    if (rt_npy_write_header(x->wt.fp, "<i4", x->V, x->K, wpath, err) ||
        rt_npy_write_header(x->phi.fp, "<f4", x->K, x->V, ppath, err))
        goto out;
    if ((x->phi_data = ftello(x->phi.fp)) < 0) {
        rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: tell", ppath);
        goto out;
    }
    if (rt_model_dense_rows(mp, "word_topic", "words", x->V, x->K, o->memory, emit_words, x,
                            progress, err))
        goto out;
    wopen = popen = 0;
    if (rt_outfile_commit(&x->wt, err) || rt_outfile_commit(&x->phi, err))
        goto out;
    rc = 0;
out:
    if (wopen)
        rt_outfile_abort(&x->wt);
    if (popen)
        rt_outfile_abort(&x->phi);
    free(x->col);
    return rc;
}

/* The single-file model's model.json: the manifest without the parts. */
static int export_meta(const rt_model_parts *mp, const char *dir, rt_error *err)
{
    char path[4200];
    json_t *meta = rt_model_single_meta(mp);
    if (!meta)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    json_object_del(meta, "topic_totals");
    int rc = rt_path_join(path, sizeof(path), dir, "model.json", err)
                 ? -1
                 : rt_app_write_json(path, meta, err);
    json_decref(meta);
    return rc;
}

static int export_files(const rt_model_parts *mp, lda_export *x, uint64_t D, const char *dir,
                        const rt_export_opts *o, rt_progress *progress, rt_error *err)
{
    char path[4200];
    if (o->format == RT_EXPORT_TEXT)
        return rt_path_join(path, sizeof(path), dir, "word_topic.txt", err) ||
                       rt_model_merge(mp, "word_topic", "words", x->V, x->K, path, "vocab.txt",
                                      o->memory, progress, err) ||
                       rt_path_join(path, sizeof(path), dir, "doc_topic.txt", err) ||
                       rt_model_merge(mp, "doc_topic", "docs", D, x->K, path, "docs.txt", o->memory,
                                      progress, err)
                   ? -1
                   : 0;
    return export_words(mp, x, dir, o, progress, err) ||
                   rt_path_join(path, sizeof(path), dir, "doc_topic.npy", err) ||
                   rt_model_merge(mp, "doc_topic", "docs", D, x->K, path, NULL, o->memory, progress,
                                  err) ||
                   rt_model_copy_file(mp->dir, dir, "vocab.txt", x->V, err) ||
                   rt_model_copy_file(mp->dir, dir, "docs.txt", D, err) ||
                   rt_model_copy_file(mp->dir, dir, "topics.txt", x->K, err) ||
                   export_meta(mp, dir, err)
               ? -1
               : 0;
}

int lda_model_export(const char *dir, const rt_export_opts *o, rt_error *err)
{
    char path[4200], tmp[4096];
    rt_model_parts mp;
    lda_export x = {0};
    uint64_t K, D;
    rt_progress progress;
    int rc = -1;
    if (o->format == RT_EXPORT_LIBMF)
        return rt_fail(err, RT_EXIT_INPUT, "%s: --format libmf is for MF models", dir);
    if (rt_model_parts_open(dir, &mp, err) ||
        rt_path_join(path, sizeof(path), dir, "model.json", err))
        goto out;
    if (!mp.n) {
        rt_fail(err, RT_EXIT_INPUT, "%s: a single-file model already (word_topic.npy)", dir);
        goto out;
    }
    json_t *beta = json_object_get(mp.meta, "beta");
    if (rt_json_u64(mp.meta, "topics", 2, RT_LDA_MAX_TOPICS, &K, path, err) ||
        rt_json_u64(mp.meta, "words", 0, INT32_MAX, &x.V, path, err) ||
        rt_json_u64(mp.meta, "documents", 0, INT32_MAX, &D, path, err))
        goto out;
    if (!json_is_number(beta) || !(json_number_value(beta) > 0)) {
        rt_fail(err, RT_EXIT_INPUT, "%s: \"beta\" must be a positive number", path);
        goto out;
    }
    x.K = (uint32_t)K;
    x.beta = json_number_value(beta);
    if (!(x.nk = calloc(K, sizeof(int64_t)))) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
        goto out;
    }
    if (read_totals(mp.meta, x.K, x.nk, path, err))
        goto out;
    uint64_t total = (x.V + D) * K * sizeof(int32_t);
    if (o->quiet)
        rt_progress_start_on(&progress, NULL, 0, "merging", "MB", 1e6, total);
    else
        rt_progress_start(&progress, "merging the model's parts", "MB", 1e6, total);
    if (rt_model_dir_begin(o->out, tmp, sizeof(tmp), err))
        goto out;
    if (export_files(&mp, &x, D, tmp, o, &progress, err)) {
        rt_remove_tree(tmp);
        goto out;
    }
    rc = rt_model_dir_commit(tmp, o->out, err);
    rt_progress_end(&progress);
out:
    free(x.nk);
    rt_model_parts_close(&mp);
    return rc;
}
