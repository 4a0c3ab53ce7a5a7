/*
 * lda_model.c - the saved LDA model read back (the rt_app_desc model hooks
 * of lda), and the one owner of "top words per topic": topics.txt at save
 * time and `rotor topics` both print lda_topics_write's lines
 *
 *   topic K (SHARE): WORD WORD ...
 *
 * with SHARE = n_k / sum n_k and the words by count n_wk, most frequent
 * first, ties by word id.  The model files are described in lda_save.c.
 */
#include "apps/app_common.h"
#include "apps/lda.h"

#include <jansson.h>
#include <stdlib.h>
#include <string.h>

typedef struct word_count {
    int32_t count;
    uint32_t word;
} word_count;

static int by_count(const void *x, const void *y)
{
    const word_count *a = x, *b = y;
    if (a->count != b->count)
        return a->count > b->count ? -1 : 1;
    return a->word < b->word ? -1 : a->word > b->word;
}

int lda_topics_write(FILE *fp, const int32_t *wt, const int64_t *nk, uint64_t V, uint32_t K,
                     uint32_t top, const char *const *vocab, rt_error *err)
{
    word_count *wc = malloc((V ? V : 1) * sizeof(word_count));
    if (!wc)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    int64_t total = 0;
    for (uint32_t k = 0; k < K; k++)
        total += nk[k];
    for (uint32_t k = 0; k < K; k++) {
        for (uint64_t w = 0; w < V; w++)
            wc[w] = (word_count){.count = wt[(size_t)w * K + k], .word = (uint32_t)w};
        qsort(wc, V, sizeof(word_count), by_count);
        fprintf(fp, "topic %u (%.4f):", k, total ? (double)nk[k] / (double)total : 0.0);
        for (uint64_t i = 0; i < top && i < V; i++)
            fprintf(fp, " %s", vocab[wc[i].word]);
        fputc('\n', fp);
    }
    free(wc);
    if (ferror(fp))
        return rt_fail(err, RT_EXIT_RUNTIME, "write failed");
    return 0;
}

/* ---- the reader ---- */

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

/* alpha and beta from model.json (rotor infer samples with them). */
static int read_hyper(const char *dir, lda_model *m, rt_error *err)
{
    char path[4096];
    json_t *meta = rt_app_model_json(dir, path, err);
    if (!meta)
        return -1;
    json_t *a = json_object_get(meta, "alpha"), *b = json_object_get(meta, "beta");
    int ok = json_is_number(a) && json_is_number(b);
    m->alpha = json_number_value(a);
    m->beta = json_number_value(b);
    json_decref(meta);
    if (!ok || !(m->alpha > 0) || !(m->beta > 0))
        return rt_fail(err, RT_EXIT_INPUT, "%s: \"alpha\" and \"beta\" must be positive numbers",
                       path);
    return 0;
}

static int load(const char *dir, lda_model *m, rt_error *err)
{
    char path[4096];
    uint64_t K;
    if (rt_path_join(path, sizeof(path), dir, "word_topic.npy", err) ||
        rt_npy_read_i32(path, &m->wt, &m->V, &K, err))
        return -1;
    if (K < 2 || K > RT_LDA_MAX_TOPICS)
        return rt_fail(err, RT_EXIT_INPUT, "%s: %llu topics (2..%u expected)", path,
                       (unsigned long long)K, RT_LDA_MAX_TOPICS);
    m->K = (uint32_t)K;
    if (read_hyper(dir, m, err))
        return -1;
    m->nk = calloc(K, sizeof(int64_t));
    if (!m->nk)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    for (uint64_t w = 0; w < m->V; w++)
        for (uint32_t k = 0; k < m->K; k++) {
            int32_t n = m->wt[w * K + k];
            if (n < 0)
                return rt_fail(err, RT_EXIT_INPUT, "%s: negative count at word %llu, topic %u",
                               path, (unsigned long long)w, k);
            m->nk[k] += n;
        }
    return read_vocab(dir, m, err);
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
    return lda_topics_write(out, m->wt, m->nk, m->V, m->K, top, m->words, err);
}
