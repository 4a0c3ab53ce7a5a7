/* lda_infer.c - topic mixtures of new documents (`rotor infer`, the
 * model_infer hook of lda).
 *
 * The model's word-topic counts n_wk and totals n_k stay fixed; each new
 * document's topics are Gibbs-sampled from
 *     p(z = k) ∝ (n_dk + alpha) phi_wk,   phi_wk = (n_wk + beta) / (n_k + V beta)
 * split as in SparseLDA into three buckets:
 *     r = sum_k n_dk phi_wk               (the document's topics, per token)
 *     q = sum_k alpha n_wk / (n_k + V beta)   (the word's topics, fixed)
 *     s = sum_k alpha beta / (n_k + V beta)   (every topic, fixed)
 * q and s never change, so their cumulative tables are built once.
 *
 * Two chains run per document from its own random streams: one over every
 * token (its final counts are the document's mixture, doc_topic.npy), and one
 * over the observed half of the document-completion split that training
 * uses for held-out documents (lda_token_held, with the document's index in
 * the input and the model's word id), whose final state scores the
 * completion half: log p(w | d) = log sum_k theta_dk phi_wk.  Documents are
 * independent, so threads take them in any order and the result depends only
 * on the seed.
 *
 * Output files (in the output directory):
 *   doc_topic.npy   int32 D x K   n_dk of the new documents (as training writes it)
 *   docs.txt        document ids, line i = row i
 *   doc_topics.txt  "DOC k:share k:share ...": each document's top topics,
 *                   share = (n_dk + alpha) / (n_d + K alpha)
 *   infer.json      sizes, unknown words, held-out tokens and perplexity
 */
#include "apps/app_common.h"
#include "apps/lda.h"
#include "ground/json.h"

#include <math.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define PURPOSE_ALL 0x1f01u
#define PURPOSE_OBSERVED 0x1f02u
#define DOCS_PER_GRAB 16

/* The new documents as tokens of model words, doc-major. */
typedef struct infer_tokens {
    uint64_t n_docs;
    uint64_t *off;  /* n_docs + 1 into word / held */
    uint32_t *word; /* model word id */
    uint8_t *held;  /* 1 = completion half */
} infer_tokens;

/* The fixed parts of the conditional. */
typedef struct infer_tables {
    const lda_model *m;
    double *inv;     /* K: 1 / (n_k + V beta) */
    double *s_cdf;   /* K: cumulative alpha beta inv[k] */
    uint64_t *q_off; /* V + 1 into q_topic / q_cdf */
    uint16_t *q_topic;
    double *q_cdf;      /* cumulative alpha n_wk inv[k] over the word's topics */
    void *topic_arrays; /* the one allocation inv, s_cdf and q_off live in */
    void *q_arrays;     /* the one allocation q_topic and q_cdf live in */
} infer_tables;

/* One thread's document state. */
typedef struct infer_scratch {
    int32_t *ndk;  /* K */
    uint16_t *nz;  /* the document's nonzero topics */
    uint32_t *pos; /* K: index in nz, UINT32_MAX = absent */
    uint32_t n_nz;
    double *rb;   /* K: cumulative r bucket */
    uint16_t *z;  /* the document's topics (longest document) */
    void *arrays; /* the one allocation ndk .. z live in */
} infer_scratch;

typedef struct infer_job {
    const infer_tables *t;
    const infer_tokens *docs;
    const rt_infer_opts *o;
    int32_t *doc_topic; /* D x K */
    double *held_ll;    /* D */
    uint64_t max_len;
    atomic_uint_fast64_t next, done;
    atomic_int failed;
} infer_job;

/* ------------------------------------------------------------ inputs */

static void tokens_free(infer_tokens *d)
{
    free(d->off);
    free(d->word);
    free(d->held);
    memset(d, 0, sizeof(*d));
}

/* The error of document `doc`, whose `len` tokens of the model's words are
 * more than its int32 topic counts (ndk, doc_topic.npy) hold: at the
 * input's line where it starts, or at its file (a directory's). */
static int doc_too_long(const rt_corpus *c, uint64_t doc, const char *input, uint64_t len,
                        rt_error *err)
{
    const char *name = rt_strpool_get(&c->doc_names, doc);
    if (!c->doc_line[doc])
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s/%s: the document has %llu tokens of the model's words; at most %d",
                       input, name, (unsigned long long)len, INT32_MAX);
    return rt_fail(err, RT_EXIT_INPUT,
                   "%s:%llu: document %s has %llu tokens of the model's words; at most %d",
                   rt_is_stdio(input) ? "standard input" : input,
                   (unsigned long long)c->doc_line[doc], name, (unsigned long long)len, INT32_MAX);
}

/* Map the corpus's words to the model's; expand counts into tokens and
 * mark each token's half.  Unknown words are counted into res. */
static int tokens_build(infer_tokens *d, const lda_model *m, const rt_corpus *c, const char *input,
                        uint64_t seed, rt_infer_result *res, uint64_t *max_len, rt_error *err)
{
    int64_t *map = rt_alloc_array(c->n_words, sizeof(int64_t), "corpus", "words", err);
    uint8_t *seen = calloc(c->n_words ? c->n_words : 1, 1);
    int rc = -1;
    if (!map || !seen) {
        if (map)
            rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
        goto out;
    }
    for (uint64_t w = 0; w < c->n_words; w++) {
        const char *name = rt_idmap_str(&c->words, w);
        map[w] = rt_idmap_find(&m->vocab, name, strlen(name));
    }
    uint64_t n = 0;
    for (uint64_t doc = 0; doc < c->n_docs; doc++) {
        uint64_t len = 0;
        for (uint64_t i = c->doc_off[doc]; i < c->doc_off[doc + 1]; i++) {
            if (map[c->word[i]] >= 0) {
                len += c->count[i];
            } else {
                res->unknown_tokens += c->count[i];
                res->unknown_words += !seen[c->word[i]];
                seen[c->word[i]] = 1;
            }
        }
        if (len > INT32_MAX) { /* its topic counts (ndk, doc_topic.npy) are int32 */
            doc_too_long(c, doc, input, len, err);
            goto out;
        }
        n += len;
    }
    if (n == 0 && res->unknown_tokens > 0) {
        /* Nothing to sample: almost always word ids read without the
         * vocabulary they index (uci, libsvm, ldac need --vocab). */
        rt_fail(err, RT_EXIT_INPUT,
                "%s: no word of the input is in the model's vocabulary (word ids read without "
                "--vocab?)",
                rt_is_stdio(input) ? "standard input" : input);
        goto out;
    }
    d->n_docs = c->n_docs;
    d->off = rt_calloc_array(c->n_docs + 1, sizeof(uint64_t), "corpus", "documents", err);
    d->word = d->off ? rt_alloc_array(n ? n : 1, sizeof(uint32_t), "corpus", "tokens", err) : NULL;
    d->held = d->word ? rt_alloc_array(n ? n : 1, 1, "corpus", "tokens", err) : NULL;
    if (!d->held)
        goto out;
    uint64_t t = 0;
    for (uint64_t doc = 0; doc < c->n_docs; doc++) {
        for (uint64_t i = c->doc_off[doc]; i < c->doc_off[doc + 1]; i++) {
            int64_t w = map[c->word[i]];
            for (uint32_t x = 0; w >= 0 && x < c->count[i]; x++) {
                d->word[t] = (uint32_t)w;
                d->held[t++] = (uint8_t)lda_token_held(seed, (uint32_t)doc, (uint32_t)w, x);
            }
        }
        d->off[doc + 1] = t;
        uint64_t len = t - d->off[doc];
        res->empty_docs += len == 0;
        *max_len = len > *max_len ? len : *max_len;
    }
    res->docs = c->n_docs;
    res->tokens = n;
    rc = 0;
out:
    free(map);
    free(seen);
    return rc;
}

static void tables_free(infer_tables *t)
{
    rt_free(t->topic_arrays);
    rt_free(t->q_arrays);
    memset(t, 0, sizeof(*t));
}

static int tables_build(infer_tables *t, const lda_model *m, rt_error *err)
{
    const uint32_t K = m->K;
    const double alpha = m->alpha, vbeta = (double)m->V * m->beta;
    t->m = m;
    rt_part per_topic[] = {RT_PART(t->inv, K), RT_PART(t->s_cdf, K), RT_PART(t->q_off, m->V + 1)};
    if (!(t->topic_arrays = rt_alloc_parts(per_topic, 3)))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    double acc = 0;
    for (uint32_t k = 0; k < K; k++) {
        t->inv[k] = 1.0 / ((double)m->nk[k] + vbeta);
        t->s_cdf[k] = (acc += alpha * m->beta * t->inv[k]);
    }
    for (uint64_t w = 0; w < m->V; w++) {
        uint64_t n = 0;
        for (uint32_t k = 0; k < K; k++)
            n += m->wt[w * K + k] != 0;
        t->q_off[w + 1] = t->q_off[w] + n;
    }
    uint64_t nnz = t->q_off[m->V];
    rt_part per_word_topic[] = {RT_PART(t->q_topic, nnz), RT_PART(t->q_cdf, nnz)};
    if (!(t->q_arrays = rt_alloc_parts(per_word_topic, 2)))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (%llu word topics)",
                       (unsigned long long)nnz);
    for (uint64_t w = 0; w < m->V; w++) {
        uint64_t at = t->q_off[w];
        acc = 0;
        for (uint32_t k = 0; k < K; k++)
            if (m->wt[w * K + k]) {
                t->q_topic[at] = (uint16_t)k;
                t->q_cdf[at++] = (acc += alpha * m->wt[w * K + k] * t->inv[k]);
            }
    }
    return 0;
}

/* ------------------------------------------------------------ sampling */

static inline double q_total(const infer_tables *t, uint32_t w)
{
    uint64_t a = t->q_off[w], b = t->q_off[w + 1];
    return a == b ? 0 : t->q_cdf[b - 1];
}

static inline double phi(const infer_tables *t, uint32_t w, uint32_t k)
{
    return (t->m->wt[(size_t)w * t->m->K + k] + t->m->beta) * t->inv[k];
}

static inline void doc_add(infer_scratch *s, uint32_t k)
{
    if (s->ndk[k]++ == 0) {
        s->pos[k] = s->n_nz;
        s->nz[s->n_nz++] = (uint16_t)k;
    }
}

static inline void doc_remove(infer_scratch *s, uint32_t k)
{
    if (--s->ndk[k] == 0) {
        uint32_t i = s->pos[k], last = s->nz[--s->n_nz];
        s->nz[i] = (uint16_t)last;
        s->pos[last] = i;
        s->pos[k] = UINT32_MAX;
    }
}

/* A new topic for a token of word w, its own count taken out. */
static uint32_t draw(const infer_tables *t, infer_scratch *s, uint32_t w, rt_rng *rng)
{
    const uint32_t K = t->m->K;
    double r = 0;
    for (uint32_t x = 0; x < s->n_nz; x++)
        s->rb[x] = (r += s->ndk[s->nz[x]] * phi(t, w, s->nz[x]));
    double q = q_total(t, w), u = rt_rng_uniform(rng) * (r + q + t->s_cdf[K - 1]);
    if (u < r) {
        uint32_t x = 0;
        while (x + 1 < s->n_nz && s->rb[x] <= u)
            x++;
        return s->nz[x];
    }
    u -= r;
    if (u < q) {
        uint64_t a = t->q_off[w];
        return t->q_topic[a + rt_search_cdf(t->q_cdf + a, t->q_off[w + 1] - a, u)];
    }
    return (uint32_t)rt_search_cdf(t->s_cdf, K, u - q);
}

/* Sample the tokens of document `doc` that belong to the chain (every
 * token, or only the observed half), leaving their counts in s. */
static void run_chain(const infer_job *j, infer_scratch *s, uint64_t doc, int observed_only)
{
    const infer_tables *t = j->t;
    const uint32_t K = t->m->K;
    const uint64_t a = j->docs->off[doc], b = j->docs->off[doc + 1];
    rt_rng rng;
    rt_rng_seed(
        &rng, j->o->seed,
        rt_hash64(doc * 0x100000001b3ULL + (observed_only ? PURPOSE_OBSERVED : PURPOSE_ALL)));
    for (uint32_t x = 0; x < s->n_nz; x++) {
        s->ndk[s->nz[x]] = 0;
        s->pos[s->nz[x]] = UINT32_MAX;
    }
    s->n_nz = 0;
    for (uint64_t i = a; i < b; i++)
        if (!observed_only || !j->docs->held[i]) {
            s->z[i - a] = (uint16_t)lda_below(&rng, K);
            doc_add(s, s->z[i - a]);
        }
    for (uint32_t it = 0; it < j->o->iters; it++)
        for (uint64_t i = a; i < b; i++) {
            if (observed_only && j->docs->held[i])
                continue;
            doc_remove(s, s->z[i - a]);
            uint32_t k = draw(t, s, j->docs->word[i], &rng);
            s->z[i - a] = (uint16_t)k;
            doc_add(s, k);
        }
}

/* log p of the completion half given the observed chain's counts in s. */
static double completion_ll(const infer_job *j, const infer_scratch *s, uint64_t doc)
{
    const infer_tables *t = j->t;
    const uint32_t K = t->m->K;
    const uint64_t a = j->docs->off[doc], b = j->docs->off[doc + 1];
    double observed = 0, ll = 0;
    for (uint64_t i = a; i < b; i++)
        observed += !j->docs->held[i];
    for (uint64_t i = a; i < b; i++) {
        if (!j->docs->held[i])
            continue;
        uint32_t w = j->docs->word[i];
        double pw = q_total(t, w) + t->s_cdf[K - 1];
        for (uint32_t x = 0; x < s->n_nz; x++)
            pw += s->ndk[s->nz[x]] * phi(t, w, s->nz[x]);
        ll += log(pw / (observed + K * t->m->alpha));
    }
    return ll;
}

static void infer_doc(infer_job *j, infer_scratch *s, uint64_t doc)
{
    const uint32_t K = j->t->m->K;
    run_chain(j, s, doc, 1);
    j->held_ll[doc] = completion_ll(j, s, doc);
    run_chain(j, s, doc, 0);
    memcpy(j->doc_topic + doc * K, s->ndk, K * sizeof(int32_t));
}

/* Take documents DOCS_PER_GRAB at a time until none are left; the calling
 * thread (report) also draws the progress. */
static void infer_loop(infer_job *j, int report)
{
    const uint32_t K = j->t->m->K;
    infer_scratch s = {0};
    rt_part part[] = {RT_PART(s.ndk, K), RT_PART(s.nz, K), RT_PART(s.pos, K), RT_PART(s.rb, K),
                      RT_PART(s.z, j->max_len)};
    if (!(s.arrays = rt_alloc_parts(part, 5))) {
        atomic_store(&j->failed, 1);
        return;
    }
    memset(s.pos, 0xff, K * sizeof(uint32_t));
    for (;;) {
        uint64_t first = atomic_fetch_add(&j->next, DOCS_PER_GRAB);
        if (first >= j->docs->n_docs || atomic_load(&j->failed))
            break;
        uint64_t last =
            first + DOCS_PER_GRAB < j->docs->n_docs ? first + DOCS_PER_GRAB : j->docs->n_docs;
        for (uint64_t d = first; d < last; d++)
            infer_doc(j, &s, d);
        uint64_t done = atomic_fetch_add(&j->done, last - first) + (last - first);
        if (report && j->o->progress)
            rt_progress_set(j->o->progress, done);
    }
    rt_free(s.arrays);
}

static void *infer_thread(void *arg)
{
    infer_loop(arg, 0);
    return NULL;
}

static int infer_all(infer_job *j, rt_error *err)
{
    uint32_t n = j->o->threads ? j->o->threads : 1;
    pthread_t *tid = calloc(n, sizeof(pthread_t));
    if (!tid)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    uint32_t started = 0;
    int rc = 0;
    for (; started + 1 < n; started++) {
        int e = pthread_create(&tid[started], NULL, infer_thread, j);
        if (e) {
            atomic_store(&j->failed, 1);
            rc = rt_fail_errno(err, RT_EXIT_RUNTIME, e, "infer: cannot start a thread");
            break;
        }
    }
    if (!rc)
        infer_loop(j, 1);
    for (uint32_t i = 0; i < started; i++)
        pthread_join(tid[i], NULL);
    free(tid);
    if (!rc && atomic_load(&j->failed))
        rc = rt_fail(err, RT_EXIT_RUNTIME, "infer: out of memory");
    return rc;
}

/* ------------------------------------------------------------ output */

typedef struct topic_share {
    double share;
    uint32_t k;
} topic_share;

static int by_share(const void *x, const void *y)
{
    const topic_share *a = x, *b = y;
    if (a->share != b->share)
        return a->share > b->share ? -1 : 1;
    return a->k < b->k ? -1 : a->k > b->k;
}

static int write_top_topics(const char *path, const rt_corpus *c, const int32_t *dt,
                            const lda_model *m, uint32_t top, rt_error *err)
{
    const uint32_t K = m->K;
    topic_share *ts = malloc(K * sizeof(topic_share));
    rt_outfile of;
    if (!ts)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    if (rt_outfile_open(&of, path, err)) {
        free(ts);
        return -1;
    }
    for (uint64_t d = 0; d < c->n_docs; d++) {
        const int32_t *row = dt + d * K;
        double len = 0;
        for (uint32_t k = 0; k < K; k++)
            len += row[k];
        for (uint32_t k = 0; k < K; k++)
            ts[k] = (topic_share){(row[k] + m->alpha) / (len + K * m->alpha), k};
        qsort(ts, K, sizeof(topic_share), by_share);
        fputs(rt_strpool_get(&c->doc_names, d), of.fp);
        for (uint32_t i = 0; i < top && i < K; i++)
            fprintf(of.fp, " %u:%.4f", ts[i].k, ts[i].share);
        fputc('\n', of.fp);
    }
    free(ts);
    if (rt_write_check(of.fp, path, err)) {
        rt_outfile_abort(&of);
        return -1;
    }
    return rt_outfile_commit(&of, err);
}

static int write_doc_names(const char *path, const rt_corpus *c, rt_error *err)
{
    rt_outfile of;
    if (rt_outfile_open(&of, path, err))
        return -1;
    for (uint64_t d = 0; d < c->n_docs; d++)
        fprintf(of.fp, "%s\n", rt_strpool_get(&c->doc_names, d));
    if (rt_write_check(of.fp, path, err)) {
        rt_outfile_abort(&of);
        return -1;
    }
    return rt_outfile_commit(&of, err);
}

static int write_summary(const char *path, const rt_infer_opts *o, const rt_infer_result *r,
                         const lda_model *m, rt_error *err)
{
    json_t *j = json_pack(
        "{s:s, s:o, s:i, s:f, s:f, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:o}", "app", "lda",
        "input", rt_json_text(o->input ? o->input : ""), "topics", (int)m->K, "alpha", m->alpha,
        "beta", m->beta, "iters", (json_int_t)o->iters, "seed", (json_int_t)o->seed, "documents",
        (json_int_t)r->docs, "empty_documents", (json_int_t)r->empty_docs, "tokens",
        (json_int_t)r->tokens, "unknown_words", (json_int_t)r->unknown_words, "unknown_tokens",
        (json_int_t)r->unknown_tokens, "held_out_tokens", (json_int_t)r->held_tokens, "perplexity",
        r->perplexity == r->perplexity ? json_real(r->perplexity) : json_null());
    char *s = j ? json_dumps(j, JSON_INDENT(2) | JSON_SORT_KEYS) : NULL;
    json_decref(j);
    if (!s)
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: cannot build JSON", path);
    rt_outfile of;
    int rc = rt_outfile_open(&of, path, err);
    if (rc == 0) {
        fprintf(of.fp, "%s\n", s);
        rc = rt_outfile_commit(&of, err);
    }
    free(s);
    return rc;
}

static int write_outputs(const rt_infer_opts *o, const rt_corpus *c, const int32_t *dt,
                         const lda_model *m, const rt_infer_result *r, rt_error *err)
{
    char path[4200];
    return rt_mkdir_p(o->out, err) ||
                   rt_path_join(path, sizeof(path), o->out, "doc_topic.npy", err) ||
                   rt_npy_write_i32(path, dt, c->n_docs, m->K, err) ||
                   rt_path_join(path, sizeof(path), o->out, "docs.txt", err) ||
                   write_doc_names(path, c, err) ||
                   rt_path_join(path, sizeof(path), o->out, "doc_topics.txt", err) ||
                   write_top_topics(path, c, dt, m, o->top, err) ||
                   rt_path_join(path, sizeof(path), o->out, "infer.json", err) ||
                   write_summary(path, o, r, m, err)
               ? -1
               : 0;
}

/* ------------------------------------------------------------ the hook */

int lda_model_infer(const void *model, const rt_corpus *c, const rt_infer_opts *o,
                    rt_infer_result *res, rt_error *err)
{
    const lda_model *m = model;
    infer_tokens docs = {0};
    infer_tables t = {0};
    infer_job j = {.t = &t, .docs = &docs, .o = o};
    memset(res, 0, sizeof(*res));
    res->perplexity = NAN;
    int rc = -1;
    if (c->n_docs >= UINT32_MAX) {
        rt_fail(err, RT_EXIT_INPUT, "%s: more than %u documents", o->input, UINT32_MAX - 1);
        goto out;
    }
    if (tokens_build(&docs, m, c, o->input, o->seed, res, &j.max_len, err) ||
        tables_build(&t, m, err))
        goto out;
    size_t cells = 0;
    if (rt_size_mul(c->n_docs, m->K, &cells, o->input, "documents x topics", err))
        goto out;
    j.doc_topic =
        rt_calloc_array(cells ? cells : 1, sizeof(int32_t), o->input, "documents x topics", err);
    j.held_ll = j.doc_topic
                    ? rt_calloc_array(c->n_docs + 1, sizeof(double), o->input, "documents", err)
                    : NULL;
    if (!j.held_ll || infer_all(&j, err))
        goto out;
    double ll = 0;
    for (uint64_t d = 0; d < docs.n_docs; d++) { /* in document order: any thread count */
        ll += j.held_ll[d];
        for (uint64_t i = docs.off[d]; i < docs.off[d + 1]; i++)
            res->held_tokens += docs.held[i];
    }
    if (res->held_tokens)
        res->perplexity = exp(-ll / (double)res->held_tokens);
    rc = write_outputs(o, c, j.doc_topic, m, res, err);
out:
    free(j.doc_topic);
    free(j.held_ll);
    tokens_free(&docs);
    tables_free(&t);
    return rc;
}
