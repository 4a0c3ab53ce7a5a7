/* lda_init.c - the progressive initial sweep (--init progressive).
 *
 * Rotation 0 visits the blocks in the schedule's own order (word blocks
 * travel the ring, documents stay home, topic totals at most one step
 * stale).  Instead of counting topics drawn uniformly at random, every
 * token starts unassigned and is assigned, one after the other, by a draw
 * from the collapsed conditional given the tokens assigned before it:
 *     p(z_i = k) ∝ (n_dk + alpha) (n_wk + beta) / (n_k + V beta)
 * (counts of the tokens assigned so far).  That is the first sweep of a
 * collapsed Gibbs sampler started from nothing: a start much nearer the
 * posterior than uniform topics, for any sampler that follows.
 *
 * The draw is SparseLDA's split (see lda_sample.c) into
 *     s = sum_k alpha beta / (n_k + V beta)      (all topics)
 *     q = sum_k alpha n_wk / (n_k + V beta)      (the word's topics so far)
 *     r = sum_k n_dk (n_wk + beta) / (n_k + V beta)  (the document's so far)
 * with the document's counts in a list per document (t->dnz topics,
 * t->dnc counts; capacity min(K, length), kept only for this sweep), so
 * nothing grows with K x documents.  The topic totals only grow during
 * the sweep, so their smallest value at the start of a visit bounds them
 * all visit long: the s bucket is drawn by rejection from a uniform topic
 * (accepted with (n_min + V beta) / (n_k + V beta)), with the exact
 * cumulative search after a few failures; both draw exactly from s.
 *
 * Every draw comes from the visit's (worker, rotation 0, block) stream and
 * reads only the visit's own counts and the worker's totals, so any split
 * of the workers gives the same topics, equal to the serial replay. */
#include "apps/lda.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#define S_TRIES 8 /* rejection tries for the s bucket before the exact search */

/* The document of doc-major token position p (the warp sampler keeps no
 * per-token document). */
static uint32_t doc_of(const lda_tokens *t, uint64_t p)
{
    uint32_t lo = 0, hi = t->n_docs; /* doc_off[lo] <= p < doc_off[hi] */
    while (hi - lo > 1) {
        uint32_t mid = lo + (hi - lo) / 2;
        if (t->doc_off[mid] <= p)
            lo = mid;
        else
            hi = mid;
    }
    return lo;
}

/* A topic k with probability ∝ inv[k] = 1 / (n_k + V beta), total sum_inv;
 * n_k + V beta >= floor for every k. */
static uint32_t draw_s(const double *inv, uint32_t K, double floor, double sum_inv, rt_rng *rng)
{
    for (int i = 0; i < S_TRIES; i++) {
        uint32_t k = lda_below(rng, K);
        if (rt_rng_uniform(rng) < floor * inv[k])
            return k;
    }
    double u = rt_rng_uniform(rng) * sum_inv, acc = 0;
    uint32_t k = 0;
    for (; k + 1 < K; k++) {
        acc += inv[k];
        if (u < acc)
            break;
    }
    return k;
}

/* One token fewer of topic k in document d's list (k is there). */
static void doc_remove(lda_tokens *t, uint32_t d, uint32_t k)
{
    uint16_t *nz = t->dnz + t->dnz_off[d];
    uint32_t *cnt = t->dnc + t->dnz_off[d], n = t->dnz_n[d], x = 0;
    while (nz[x] != k)
        x++;
    if (--cnt[x] == 0) {
        nz[x] = nz[n - 1];
        cnt[x] = cnt[n - 1];
        t->dnz_n[d] = n - 1;
    }
}

/* Count one more token of topic k in document d's list. */
static void doc_add(lda_tokens *t, uint32_t d, uint32_t k)
{
    uint16_t *nz = t->dnz + t->dnz_off[d];
    uint32_t *cnt = t->dnc + t->dnz_off[d], n = t->dnz_n[d], x = 0;
    while (x < n && nz[x] != k)
        x++;
    if (x == n) {
        nz[x] = (uint16_t)k;
        cnt[x] = 0;
        t->dnz_n[d] = n + 1;
    }
    cnt[x]++;
}

/* Give token position p topic k in the sampler's own form. */
static void set_topic(lda_tokens *t, uint32_t d, uint64_t p, uint32_t K, uint32_t k)
{
    if (t->aux) { /* warp: topic k, counted as k, no pending proposal */
        for (uint32_t m = 0; m < t->aux_stride; m++)
            t->aux[p * t->aux_stride + m] = (uint16_t)k;
    } else {
        t->z[p] = (uint16_t)k;
        t->ndk[(size_t)d * K + k]++;
    }
}

/* The visit's running sums: sum_k inv[k] (the s bucket over alpha beta),
 * the q bucket of the loaded word, and the floor of the totals. */
typedef struct exact_sums {
    double sum_inv, qb, floor;
} exact_sums;

/* Token count change dn (+1 or -1) of topic k for the loaded word, with
 * inv[k], coef[k] and the sums kept in step. */
static inline void count_change(exact_sums *e, const lda_ctx *c, int64_t *nk, lda_word *wd,
                                double *inv, double *coef, uint32_t k, int dn)
{
    const double alpha = c->o->alpha, beta = c->o->beta;
    int32_t *nwk = wd->nwk;
    e->sum_inv -= inv[k];
    e->qb -= alpha * nwk[k] * inv[k];
    nk[k] += dn;
    if (dn > 0 && nwk[k] == 0)
        lda_word_nz_add(wd, k);
    nwk[k] += dn;
    if (nwk[k] == 0)
        lda_word_nz_remove(wd, k);
    const double n = (double)nk[k] + c->vbeta;
    e->floor = n < e->floor ? n : e->floor;
    inv[k] = 1.0 / n;
    coef[k] = (nwk[k] + beta) * inv[k];
    e->sum_inv += inv[k];
    e->qb += alpha * nwk[k] * inv[k];
}

/* Draw token i's topic (document d, counts without it). */
static uint32_t exact_draw(const lda_ctx *c, const lda_tokens *t, uint32_t d, const lda_word *wd,
                           const exact_sums *e, const double *inv, const double *coef, double *rb,
                           rt_rng *rng)
{
    const double alpha = c->o->alpha, ab = alpha * c->o->beta;
    const uint16_t *dnz = t->dnz + t->dnz_off[d];
    const uint32_t *dnc = t->dnc + t->dnz_off[d], dn = t->dnz_n[d];
    double rsum = 0;
    for (uint32_t x = 0; x < dn; x++) {
        rsum += dnc[x] * coef[dnz[x]];
        rb[x] = rsum;
    }
    double u = rt_rng_uniform(rng) * (ab * e->sum_inv + e->qb + rsum);
    if (u < rsum) { /* the document's topics */
        uint32_t x = 0;
        while (x + 1 < dn && rb[x] <= u)
            x++;
        return dnz[x];
    }
    u -= rsum;
    if (u < e->qb && wd->n_nz) { /* the word's topics */
        double acc = 0;
        uint32_t x = 0;
        while (x + 1 < wd->n_nz && (acc += alpha * wd->nwk[wd->nz[x]] * inv[wd->nz[x]]) <= u)
            x++;
        return wd->nz[x];
    }
    return draw_s(inv, c->o->K, e->floor, e->sum_inv, rng);
}

int lda_visit_exact(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                    rt_rng *rng, int assigned, rt_error *err)
{
    lda_tokens *t = &w->train;
    const uint32_t K = c->o->K;
    const double alpha = c->o->alpha, beta = c->o->beta, vbeta = c->vbeta;
    int64_t *nk = w->nk;
    double *inv = s->inv, *coef = s->coef;
    lda_word *wd = &s->word;
    exact_sums e = {.sum_inv = 0, .floor = HUGE_VAL};
    /* coef[k] = (n_wk + beta) inv[k]: beta inv[k] outside the word's topics */
    for (uint32_t k = 0; k < K; k++) {
        const double n = (double)nk[k] + vbeta;
        inv[k] = 1.0 / n;
        coef[k] = beta * inv[k];
        e.sum_inv += inv[k];
        e.floor = n < e.floor ? n : e.floor;
    }
    for (uint64_t r = t->blk_run[b]; r < t->blk_run[b + 1]; r++) {
        uint32_t cap, j = t->run_word[r];
        uint32_t *slice = lda_word_slice(c, b, j, payload, &cap);
        lda_word_load(wd, K, slice, cap);
        e.qb = 0;
        for (uint32_t x = 0; x < wd->n_nz; x++) {
            uint32_t k = wd->nz[x];
            e.qb += alpha * wd->nwk[k] * inv[k];
            coef[k] = (wd->nwk[k] + beta) * inv[k];
        }
        for (uint64_t i = r == t->blk_run[b] ? t->blk_tok[b] : t->run_end[r - 1]; i < t->run_end[r];
             i++) {
            uint64_t p = t->tok_pos[i];
            uint32_t d = t->tok_doc ? t->tok_doc[i] : doc_of(t, p), k;
            if (assigned) { /* take the token out first */
                k = lda_topic(t, p);
                count_change(&e, c, nk, wd, inv, coef, k, -1);
                doc_remove(t, d, k);
                if (t->ndk)
                    t->ndk[(size_t)d * K + k]--;
            }
            k = exact_draw(c, t, d, wd, &e, inv, coef, s->buf, rng);
            count_change(&e, c, nk, wd, inv, coef, k, +1);
            doc_add(t, d, k);
            set_topic(t, d, p, K, k);
        }
        for (uint32_t x = 0; x < wd->n_nz; x++)
            coef[wd->nz[x]] = beta * inv[wd->nz[x]];
        if (lda_word_store(wd, K))
            return lda_overflow(b, j, err);
    }
    return 0;
}

void lda_exact_lists_fill(lda_tokens *t, int32_t *row)
{
    for (uint32_t d = 0; d < t->n_docs; d++) {
        uint16_t *nz = t->dnz + t->dnz_off[d];
        uint32_t *cnt = t->dnc + t->dnz_off[d], n = 0;
        for (uint64_t p = t->doc_off[d]; p < t->doc_off[d + 1]; p++) {
            uint32_t k = lda_topic(t, p);
            if (row[k]++ == 0)
                nz[n++] = (uint16_t)k;
        }
        for (uint32_t x = 0; x < n; x++) {
            cnt[x] = (uint32_t)row[nz[x]];
            row[nz[x]] = 0;
        }
        t->dnz_n[d] = n;
    }
}

int lda_init_lists(lda_tokens *t, uint32_t K)
{
    if (!t->dnz_off) { /* the warp sampler: lists for this sweep only */
        t->dnz_off = calloc(t->n_docs + 1, sizeof(uint64_t));
        t->dnz_n = calloc(t->n_docs ? t->n_docs : 1, sizeof(uint32_t));
        if (!t->dnz_off || !t->dnz_n)
            return -1;
        for (uint32_t d = 0; d < t->n_docs; d++) {
            uint64_t len = t->doc_off[d + 1] - t->doc_off[d];
            t->dnz_off[d + 1] = t->dnz_off[d] + (len < K ? len : K);
        }
        t->dnz = malloc((t->dnz_off[t->n_docs] + 1) * sizeof(uint16_t));
    }
    t->dnc = malloc((t->dnz_off[t->n_docs] + 1) * sizeof(uint32_t));
    return t->dnz && t->dnc ? 0 : -1;
}

void lda_init_lists_done(lda_tokens *t)
{
    free(t->dnc);
    t->dnc = NULL;
    if (t->ndk) /* the sparse and mh samplers go on with the lists */
        return;
    free(t->dnz);
    free(t->dnz_off);
    free(t->dnz_n);
    t->dnz = NULL;
    t->dnz_off = NULL;
    t->dnz_n = NULL;
}
