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
 * t->dnc counts, or the list sampler's packed t->dlist; capacity
 * min(K, length), kept only for this sweep unless the list sampler follows), so
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

#define S_TRIES 8   /* rejection tries for the s bucket before the exact search */
#define PREFETCH 16 /* tokens ahead */

static inline uint32_t token_doc(const lda_tokens *t, uint64_t i)
{
    return t->tok_doc ? t->tok_doc[i] : lda_doc_of(t, t->tok_pos[i]);
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

/* Document d's list (entries from o, n of them) with one count of topic k
 * more, a new entry at the end when absent (the list has room for
 * min(K, length) topics, and the token is one); returns the entries. */
static uint32_t list_add(lda_tokens *t, uint64_t o, uint32_t n, uint32_t k)
{
    uint32_t x = 0;
    while (x < n && lda_list_topic_at(t, o + x) != k)
        x++;
    lda_list_set_at(t, o + x, k, x == n ? 1 : lda_list_count_at(t, o + x) + 1);
    return x == n ? n + 1 : n;
}

/* Document d's list after its token moved from topic `from` (UINT32_MAX:
 * the token had no topic) to topic `to` (at x_to,
 * or UINT32_MAX when not known): `from` down first, dropped at zero (the
 * list has room for min(K, length) topics, no more), then `to` up. */
static void doc_move(lda_tokens *t, uint32_t d, uint32_t from, uint32_t to, uint32_t x_to)
{
    const uint64_t o = t->dnz_off[d];
    uint32_t n = t->dnz_n[d];
    if (to == from)
        return;
    uint32_t x_from = 0;
    while (from != UINT32_MAX && lda_list_topic_at(t, o + x_from) != from)
        x_from++;
    if (from != UINT32_MAX) {
        const uint32_t left = lda_list_count_at(t, o + x_from) - 1;
        lda_list_set_at(t, o + x_from, from, left);
        if (left == 0) {
            n--;
            lda_list_set_at(t, o + x_from, lda_list_topic_at(t, o + n),
                            lda_list_count_at(t, o + n));
            if (x_to == n) /* `to` was the last entry: it moved into the gap */
                x_to = x_from;
        }
    }
    if (x_to == UINT32_MAX)
        n = list_add(t, o, n, to);
    else
        lda_list_set_at(t, o + x_to, to, lda_list_count_at(t, o + x_to) + 1);
    t->dnz_n[d] = n;
}

/* Move token position p from topic `from` (UINT32_MAX: none) to k, in the
 * sampler's own form. */
static void set_topic(lda_tokens *t, uint32_t d, uint64_t p, uint32_t K, uint32_t from, uint32_t k)
{
    if (t->aux) { /* warp: topic k, counted as k, no pending proposal */
        for (uint32_t m = 0; m < t->aux_stride; m++)
            t->aux[p * t->aux_stride + m] = (uint16_t)k;
        return;
    }
    t->z[p] = (uint16_t)k;
    if (!t->ndk) /* (the list sampler: the lists are the counts) */
        return;
    if (from != UINT32_MAX)
        t->ndk[(size_t)d * K + from]--;
    t->ndk[(size_t)d * K + k]++;
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
    lda_word_token_move(wd, nk, k, dn);
    const double n = (double)nk[k] + c->vbeta;
    e->floor = n < e->floor ? n : e->floor;
    inv[k] = 1.0 / n;
    coef[k] = (nwk[k] + beta) * inv[k];
    e->sum_inv += inv[k];
    e->qb += alpha * nwk[k] * inv[k];
}

/* Draw token i's topic: document d, counts without the token except in
 * d's list, where its old topic `from` still counts it (taken out here).
 * *x_to: the list index of the topic drawn, UINT32_MAX when it came from
 * another bucket. */
static uint32_t exact_draw(const lda_ctx *c, const lda_tokens *t, uint32_t d, const lda_word *wd,
                           const exact_sums *e, const double *inv, const double *coef, rt_rng *rng,
                           uint32_t from, uint32_t *x_to)
{
    const double alpha = c->o->alpha, ab = alpha * c->o->beta;
    const uint64_t o = t->dnz_off[d];
    const uint32_t dn = t->dnz_n[d];
    /* four sums side by side (no chain of dependent adds), in a fixed
     * order; the token itself is one count of `from` */
    double r[4] = {0, 0, 0, 0};
    uint32_t x = 0;
    for (; x + 4 <= dn; x += 4)
        for (int l = 0; l < 4; l++)
            r[l] += lda_list_count_at(t, o + x + l) * coef[lda_list_topic_at(t, o + x + l)];
    for (; x < dn; x++)
        r[0] += lda_list_count_at(t, o + x) * coef[lda_list_topic_at(t, o + x)];
    const double rsum = (r[0] + r[1]) + (r[2] + r[3]) - (from != UINT32_MAX ? coef[from] : 0);
    *x_to = UINT32_MAX;
    double u = rt_rng_uniform(rng) * (ab * e->sum_inv + e->qb + rsum);
    if (u < rsum) { /* the document's topics (the last with weight, should
                     * rounding leave u past the sum) */
        double acc = 0;
        uint32_t last = 0;
        for (x = 0; x < dn; x++) {
            const uint32_t k = lda_list_topic_at(t, o + x);
            const double wx = (lda_list_count_at(t, o + x) - (k == from)) * coef[k];
            last = wx > 0 ? x : last;
            if (u < (acc += wx))
                break;
        }
        *x_to = x < dn ? x : last;
        return lda_list_topic_at(t, o + *x_to);
    }
    u -= rsum;
    if (u < e->qb && wd->n_nz) { /* the word's topics */
        double acc = 0;
        x = 0;
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
            if (i + PREFETCH < t->run_end[r]) { /* the record and list ahead */
                const uint64_t pa = lda_tok_slot(t, i + PREFETCH);
                const uint32_t da = token_doc(t, i + PREFETCH);
                if (t->aux)
                    __builtin_prefetch(t->aux + pa * t->aux_stride);
                if (t->dlist) {
                    __builtin_prefetch(t->dlist + t->dnz_off[da]);
                } else {
                    __builtin_prefetch(t->dnz + t->dnz_off[da]);
                    __builtin_prefetch(t->dnc + t->dnz_off[da]);
                }
            }
            const uint64_t p = lda_tok_slot(t, i);
            const uint32_t d = token_doc(t, i), from = assigned ? lda_topic(t, p) : UINT32_MAX;
            uint32_t x_to;
            if (assigned) /* the token out of the word's counts and the totals */
                count_change(&e, c, nk, wd, inv, coef, from, -1);
            const uint32_t k = exact_draw(c, t, d, wd, &e, inv, coef, rng, from, &x_to);
            count_change(&e, c, nk, wd, inv, coef, k, +1);
            doc_move(t, d, from, k, x_to);
            if (k != from)
                set_topic(t, d, p, K, from, k);
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
        const uint64_t o = t->dnz_off[d];
        uint32_t n = 0;
        for (uint64_t p = t->doc_off[d]; p < t->doc_off[d + 1]; p++) {
            uint32_t k = lda_topic(t, p);
            if (row[k]++ == 0)
                lda_list_set_at(t, o + n++, k, 0);
        }
        for (uint32_t x = 0; x < n; x++) {
            const uint32_t k = lda_list_topic_at(t, o + x);
            lda_list_set_at(t, o + x, k, (uint32_t)row[k]);
            row[k] = 0;
        }
        t->dnz_n[d] = n;
    }
}

int lda_list_packs(const lda_tokens *t)
{
    for (uint32_t d = 0; d < t->n_docs; d++)
        if (t->doc_off[d + 1] - t->doc_off[d] > LDA_LIST_COUNT_MAX)
            return 0;
    return 1;
}

int lda_init_lists(lda_tokens *t, uint32_t K, int packed)
{
    if (!t->dnz_off) { /* the list and warp samplers: no lists yet */
        t->dnz_off = calloc(t->n_docs + 1, sizeof(uint64_t));
        t->dnz_n = calloc(t->n_docs ? t->n_docs : 1, sizeof(uint32_t));
        if (!t->dnz_off || !t->dnz_n)
            return -1;
        for (uint32_t d = 0; d < t->n_docs; d++) {
            uint64_t len = t->doc_off[d + 1] - t->doc_off[d];
            t->dnz_off[d + 1] = t->dnz_off[d] + (len < K ? len : K);
        }
        const uint64_t entries = t->dnz_off[t->n_docs] + LDA_LIST_SLACK;
        if (packed) /* (calloc: the slack past the last list is read, never taken) */
            t->dlist = calloc(entries, sizeof(uint32_t));
        else
            t->dnz = malloc(entries * sizeof(uint16_t));
    }
    if (!t->tok_doc && lda_doc_step_build(t))
        return -1;
    if (t->dlist)
        return 0;
    if (!t->dnc) /* (the list sampler has them already) */
        t->dnc = malloc((t->dnz_off[t->n_docs] + LDA_LIST_SLACK) * sizeof(uint32_t));
    return t->dnz && t->dnc ? 0 : -1;
}

int lda_doc_step_build(lda_tokens *t)
{
    if (t->doc_step) /* (built once; it does not change) */
        return 0;
    const uint64_t steps = (t->n_tokens >> LDA_DOC_STEP) + 1;
    t->doc_step = malloc(steps * sizeof(uint32_t));
    if (!t->doc_step)
        return -1;
    for (uint64_t i = 0, d = 0; i < steps; i++) {
        while (d + 1 < t->n_docs && t->doc_off[d + 1] <= i << LDA_DOC_STEP)
            d++;
        t->doc_step[i] = (uint32_t)d;
    }
    return 0;
}

void lda_init_lists_done(lda_tokens *t)
{
    free(t->dnc);
    t->dnc = NULL;
    if (t->ndk) /* the sparse and mh samplers go on with the lists */
        return;
    free(t->dnz);
    free(t->dlist);
    free(t->dnz_off);
    free(t->dnz_n);
    t->dnz = NULL;
    t->dlist = NULL;
    t->dnz_off = NULL;
    t->dnz_n = NULL;
}
