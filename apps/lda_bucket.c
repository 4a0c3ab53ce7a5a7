/* lda_bucket.c - the sparse sampler above LDA_DENSE_K: collapsed Gibbs,
 * each token drawn from its full conditional (counts without the token)
 *     p(z_i = k) ∝ (n_dk + alpha) coef[k],   coef[k] = (n_wk + beta) / (n_k + V beta)
 * split as F+LDA does (Yu et al., WWW 2015), turned word-major:
 *     r = sum_k n_dk coef[k]      over the document's topics (its list)
 *     a = sum_k alpha coef[k]     over all K, an F+ tree (lda_ftree.c)
 * The tree holds the loaded word's term for every topic, so a draw in it
 * costs O(log K) whatever the word's spread over topics, and each count
 * change updates one leaf.  r is summed over the document's list, whose
 * topics and counts lie side by side (lda_uses_lists): no K-wide document
 * row is touched, which in word-major order would be a cache miss per
 * topic. */
#include "apps/lda.h"

/* Tokens ahead whose document list and topic are prefetched. */
#define LIST_PREFETCH 12

/* What one visit's token loop needs. */
typedef struct list_run {
    lda_tokens *t;
    int64_t *nk;
    lda_word *wd;
    lda_ftree *tree;
    double *coef; /* K: (n_wk + beta) / (n_k + V beta) of the loaded word */
    double *rb;   /* the r bucket's running sums */
    double alpha, beta, vbeta;
} list_run;

/* coef[k] and its leaf for word count nwk of topic k. */
static inline void coef_set(const list_run *l, uint32_t k, int32_t nwk)
{
    l->coef[k] = (nwk + l->beta) / ((double)l->nk[k] + l->vbeta);
    lda_ftree_set(l->tree, k, l->alpha * l->coef[k]);
}

/* ... after topic k's counts changed. */
static inline void coef_update(const list_run *l, uint32_t k)
{
    coef_set(l, k, l->wd->nwk[k]);
}

/* A token of topic k joins (dn = +1) or leaves (-1) the loaded word and
 * the totals. */
static inline void word_move(const list_run *l, uint32_t k, int dn)
{
    lda_word_token_move(l->wd, l->nk, k, dn);
    coef_update(l, k);
}

/* Document list (topics tz, counts tc, n entries) with one count of topic
 * k (present) less, an entry of count 0 dropped (the last moves into its
 * place); returns the entries. */
static inline uint32_t list_remove(uint16_t *tz, uint32_t *tc, uint32_t n, uint32_t k)
{
    uint32_t x = 0;
    while (tz[x] != k)
        x++;
    if (--tc[x] == 0) {
        n--;
        tz[x] = tz[n];
        tc[x] = tc[n];
    }
    return n;
}

/* Token i's new topic: its count is out of the word, the totals and the
 * document's list (tz, tc, *n entries; the drawn topic's count goes in
 * here). */
static inline uint32_t list_draw(const list_run *l, uint16_t *tz, uint32_t *tc, uint32_t *n,
                                 rt_rng *rng)
{
    const double *coef = l->coef;
    double *rb = l->rb, rsum = 0;
    const uint32_t dn = *n;
    for (uint32_t x = 0; x < dn; x++)
        rb[x] = (rsum += tc[x] * coef[tz[x]]);
    double u = rt_rng_uniform(rng) * (rsum + lda_ftree_total(l->tree));
    if (u < rsum) { /* the document's topics (every weight > 0) */
        uint32_t x = 0;
        while (x + 1 < dn && rb[x] <= u)
            x++;
        tc[x]++;
        return tz[x];
    }
    const uint32_t k = lda_ftree_find(l->tree, u - rsum);
    *n = lda_list_add(tz, tc, dn, k);
    return k;
}

/* The tokens [i, end) of the loaded word. */
static void list_tokens(const list_run *l, uint64_t i, uint64_t end, rt_rng *rng)
{
    lda_tokens *t = l->t;
    for (; i < end; i++) {
        if (i + LIST_PREFETCH < end) {
            const uint64_t o = t->dnz_off[t->tok_doc[i + LIST_PREFETCH]];
            __builtin_prefetch(t->dnz + o, 1);
            __builtin_prefetch(t->dnc + o, 1);
            __builtin_prefetch(t->z + t->tok_pos[i + LIST_PREFETCH], 1);
        }
        const uint32_t d = t->tok_doc[i], p = t->tok_pos[i];
        uint16_t *tz = t->dnz + t->dnz_off[d];
        uint32_t *tc = t->dnc + t->dnz_off[d], n = t->dnz_n[d];
        uint32_t k = t->z[p];
        n = list_remove(tz, tc, n, k);
        word_move(l, k, -1);
        k = list_draw(l, tz, tc, &n, rng);
        word_move(l, k, +1);
        t->dnz_n[d] = n;
        t->z[p] = (uint16_t)k;
    }
}

int lda_visit_lists(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                    rt_rng *rng, rt_error *err)
{
    lda_tokens *t = &w->train;
    const uint32_t K = c->o->K;
    const list_run l = {.t = t,
                        .nk = w->nk,
                        .wd = &s->word,
                        .tree = &s->word_tree,
                        .coef = s->coef,
                        .rb = s->buf,
                        .alpha = c->o->alpha,
                        .beta = c->o->beta,
                        .vbeta = c->vbeta};
    /* outside the loaded word's topics n_wk = 0; the sums afresh once a
     * visit (clearing the rounding of the last visit's changes) */
    for (uint32_t k = 0; k < K; k++) {
        l.coef[k] = l.beta / ((double)l.nk[k] + l.vbeta);
        *lda_ftree_leaf(l.tree, k) = l.alpha * l.coef[k];
    }
    lda_ftree_build(l.tree);
    for (uint64_t r = t->blk_run[b]; r < t->blk_run[b + 1]; r++) {
        uint32_t cap, j = t->run_word[r];
        uint32_t *slice = lda_word_slice(c, b, j, payload, &cap);
        lda_word_load(l.wd, K, slice, cap);
        for (uint32_t x = 0; x < l.wd->n_nz; x++)
            coef_update(&l, l.wd->nz[x]);
        list_tokens(&l, r == t->blk_run[b] ? t->blk_tok[b] : t->run_end[r - 1], t->run_end[r], rng);
        for (uint32_t x = 0; x < l.wd->n_nz; x++) /* back to n_wk = 0 */
            coef_set(&l, l.wd->nz[x], 0);
        if (lda_word_store(l.wd, K))
            return lda_overflow(b, j, err);
    }
    return 0;
}
