/* lda_sample.c - the per-block kernels: initial counting, the sparse bucket
 * sampler, the Metropolis-Hastings alias sampler and held-out fold-in.
 *
 * Full conditional of token i (word w, document d), counts without i:
 *     p(z_i = k) ∝ (n_dk + alpha) (n_wk + beta) / (n_k + V beta)
 *
 * Sparse sampler (SparseLDA, Yao et al. 2009, turned word-major): split into
 *     s = sum_k alpha beta / (n_k + V beta)                 (all topics)
 *     q = sum_k alpha n_wk / (n_k + V beta)                 (word's topics)
 *     r = sum_k n_dk (n_wk + beta) / (n_k + V beta)         (document's topics)
 * s and q are kept up to date incrementally while one word's tokens are
 * sampled; r is summed over the document's nonzero topics.
 *
 * MH sampler (LightLDA / WarpLDA style): per token, `mh_steps` proposals
 * alternating between the doc proposal  q_d(k) ∝ n_dk + alpha  (the topic of
 * a random token of the document, the current token counted at its current
 * state, or a uniform topic) and the word proposal  q_w(k) ∝ n_wk + beta
 * (an alias table over the word's nonzero topics, built from the counts when
 * the word's run starts and fixed during it, with the current token taken
 * out by rejection, or a uniform topic), each
 * accepted with the Metropolis-Hastings ratio.  Per-token cost does not
 * depend on K. */
#include "apps/lda.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int lda_scratch_init(lda_scratch *s, uint32_t K)
{
    memset(s, 0, sizeof(*s));
    s->word.nwk = rt_alloc(K * sizeof(int32_t));
    s->word.nz = rt_alloc(K * sizeof(uint16_t));
    s->word.pos = rt_alloc(K * sizeof(uint32_t));
    s->inv = rt_alloc(K * sizeof(double));
    s->buf = rt_alloc(K * sizeof(double));
    s->coef = rt_alloc(K * sizeof(double));
    s->aprob = rt_alloc(K * sizeof(float));
    s->alias = rt_alloc(K * sizeof(uint16_t));
    s->atopic = rt_alloc(K * sizeof(uint16_t));
    s->small = rt_alloc(K * sizeof(uint32_t));
    s->large = rt_alloc(K * sizeof(uint32_t));
    s->stale = rt_alloc(K * sizeof(int32_t));
    s->dcnt = rt_alloc(K * sizeof(int32_t));
    if (!s->dcnt || !s->word.nwk || !s->word.nz || !s->word.pos || !s->inv || !s->buf || !s->coef ||
        !s->aprob || !s->alias || !s->atopic || !s->small || !s->large || !s->stale) {
        lda_scratch_free(s);
        return -1;
    }
    memset(s->word.pos, 0xff, K * sizeof(uint32_t));
    return 0;
}

int lda_scratch_urn(lda_scratch *s, const lda_layout *l, uint64_t n_words)
{
    uint64_t most = 1;
    for (uint64_t i = 0; i < n_words; i++)
        if (l->tokens[i] > most)
            most = l->tokens[i];
    s->urn = rt_alloc(most * sizeof(uint16_t));
    return s->urn ? 0 : -1;
}

void lda_scratch_free(lda_scratch *s)
{
    rt_free(s->word.nwk);
    rt_free(s->word.nz);
    rt_free(s->word.pos);
    rt_free(s->inv);
    rt_free(s->buf);
    rt_free(s->coef);
    rt_free(s->aprob);
    rt_free(s->alias);
    rt_free(s->atopic);
    rt_free(s->small);
    rt_free(s->large);
    rt_free(s->stale);
    rt_free(s->dcnt);
    rt_free(s->urn);
    memset(s, 0, sizeof(*s));
}

uint32_t *lda_word_slice(const lda_ctx *c, uint32_t b, uint32_t j, uint32_t *payload, uint32_t *cap)
{
    uint64_t i = c->plan->block_col_offset[b] + j;
    *cap = c->layout->slice_cap[i];
    return payload + c->layout->slice_off[i];
}

int lda_overflow(uint32_t b, uint32_t j, rt_error *err)
{
    return rt_fail(err, RT_EXIT_RUNTIME,
                   "lda: word %u of block %u has more topics than tokens (corrupt counts)", j, b);
}

int lda_visit_init(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                   rt_error *err)
{
    const lda_tokens *t = &w->train;
    uint32_t K = c->o->K;
    lda_word *wd = &s->word;
    for (uint64_t r = t->blk_run[b]; r < t->blk_run[b + 1]; r++) {
        uint32_t cap, j = t->run_word[r];
        uint32_t *slice = lda_word_slice(c, b, j, payload, &cap);
        lda_word_load(wd, K, slice, cap);
        for (uint64_t i = r == t->blk_run[b] ? t->blk_tok[b] : t->run_end[r - 1]; i < t->run_end[r];
             i++) {
            uint32_t k = lda_topic(t, t->tok_pos[i]);
            lda_word_nz_add(wd, k);
            wd->nwk[k]++;
            w->nk[k]++;
        }
        if (lda_word_store(wd, K))
            return lda_overflow(b, j, err);
    }
    return 0;
}

/* ------------------------------------------------------------ sparse */

static inline void doc_nz_remove(lda_tokens *t, uint32_t d, uint32_t k)
{
    uint16_t *nz = t->dnz + t->dnz_off[d];
    uint32_t n = t->dnz_n[d];
    for (uint32_t i = 0; i < n; i++)
        if (nz[i] == k) {
            nz[i] = nz[n - 1];
            break;
        }
    t->dnz_n[d] = n - 1;
}

int lda_visit_sparse(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                     rt_rng *rng, rt_error *err)
{
    lda_tokens *t = &w->train;
    const uint32_t K = c->o->K;
    const double alpha = c->o->alpha, beta = c->o->beta, ab = alpha * beta, vbeta = c->vbeta;
    int64_t *nk = w->nk;
    double *inv = s->inv, *rb = s->buf, *coef = s->coef;
    lda_word *wd = &s->word;
    double sb = 0;
    /* inv[k] = 1 / (n_k + V beta); coef[k] = (n_wk + beta) inv[k], which is
     * beta inv[k] outside the loaded word's topics */
    for (uint32_t k = 0; k < K; k++) {
        inv[k] = 1.0 / ((double)nk[k] + vbeta);
        coef[k] = beta * inv[k];
        sb += ab * inv[k];
    }
    for (uint64_t r = t->blk_run[b]; r < t->blk_run[b + 1]; r++) {
        uint32_t cap, j = t->run_word[r];
        uint32_t *slice = lda_word_slice(c, b, j, payload, &cap);
        lda_word_load(wd, K, slice, cap);
        int32_t *nwk = wd->nwk;
        double qb = 0;
        for (uint32_t i = 0; i < wd->n_nz; i++) {
            uint32_t k = wd->nz[i];
            qb += alpha * nwk[k] * inv[k];
            coef[k] = (nwk[k] + beta) * inv[k];
        }
        for (uint64_t i = r == t->blk_run[b] ? t->blk_tok[b] : t->run_end[r - 1]; i < t->run_end[r];
             i++) {
            uint32_t d = t->tok_doc[i], p = t->tok_pos[i], k = t->z[p];
            int32_t *ndk = t->ndk + (size_t)d * K;
            /* remove token i */
            sb -= ab * inv[k];
            qb -= alpha * nwk[k] * inv[k];
            nk[k]--;
            nwk[k]--;
            inv[k] = 1.0 / ((double)nk[k] + vbeta);
            coef[k] = (nwk[k] + beta) * inv[k];
            sb += ab * inv[k];
            qb += alpha * nwk[k] * inv[k];
            if (--ndk[k] == 0)
                doc_nz_remove(t, d, k);
            if (nwk[k] == 0)
                lda_word_nz_remove(wd, k);
            /* doc bucket */
            const uint16_t *dnz = t->dnz + t->dnz_off[d];
            uint32_t dn = t->dnz_n[d];
            double rsum = 0;
            for (uint32_t x = 0; x < dn; x++) {
                rsum += ndk[dnz[x]] * coef[dnz[x]];
                rb[x] = rsum;
            }
            double u = rt_rng_uniform(rng) * (sb + qb + rsum);
            if (u < rsum) {
                uint32_t x = 0;
                while (x + 1 < dn && rb[x] <= u)
                    x++;
                k = dnz[x];
            } else if ((u -= rsum) < qb && wd->n_nz) {
                uint32_t x = 0;
                double acc = 0;
                for (; x + 1 < wd->n_nz; x++) {
                    acc += alpha * nwk[wd->nz[x]] * inv[wd->nz[x]];
                    if (u < acc)
                        break;
                }
                k = wd->nz[x];
            } else {
                u -= qb;
                double acc = 0;
                for (k = 0; k + 1 < K; k++) {
                    acc += ab * inv[k];
                    if (u < acc)
                        break;
                }
            }
            /* add token i with topic k */
            sb -= ab * inv[k];
            qb -= alpha * nwk[k] * inv[k];
            nk[k]++;
            if (nwk[k]++ == 0)
                lda_word_nz_add(wd, k);
            inv[k] = 1.0 / ((double)nk[k] + vbeta);
            coef[k] = (nwk[k] + beta) * inv[k];
            sb += ab * inv[k];
            qb += alpha * nwk[k] * inv[k];
            if (ndk[k]++ == 0)
                t->dnz[t->dnz_off[d] + t->dnz_n[d]++] = (uint16_t)k;
            t->z[p] = (uint16_t)k;
        }
        /* back to beta inv[k] for the topics this word touched */
        for (uint32_t i = 0; i < wd->n_nz; i++)
            coef[wd->nz[i]] = beta * inv[wd->nz[i]];
        if (lda_word_store(wd, K))
            return lda_overflow(b, j, err);
    }
    return 0;
}

/* ------------------------------------------------------------ MH */

void lda_alias_build(lda_scratch *s, const lda_word *wd, double total)
{
    uint32_t n = wd->n_nz, ns = 0, nl = 0;
    for (uint32_t i = 0; i < n; i++) {
        uint32_t k = wd->nz[i];
        s->atopic[i] = (uint16_t)k;
        s->aprob[i] = (float)(wd->nwk[k] * (double)n / total);
        s->alias[i] = (uint16_t)i;
        if (s->aprob[i] < 1.0f)
            s->small[ns++] = i;
        else
            s->large[nl++] = i;
    }
    while (ns && nl) {
        uint32_t sm = s->small[--ns], lg = s->large[nl - 1];
        s->alias[sm] = (uint16_t)lg;
        s->aprob[lg] -= 1.0f - s->aprob[sm];
        if (s->aprob[lg] < 1.0f) {
            nl--;
            s->small[ns++] = lg;
        }
    }
    while (nl)
        s->aprob[s->large[--nl]] = 1.0f;
    while (ns)
        s->aprob[s->small[--ns]] = 1.0f;
}

int lda_visit_mh(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                 rt_rng *rng, rt_error *err)
{
    lda_tokens *t = &w->train;
    const uint32_t K = c->o->K, steps = c->o->mh_steps;
    const double alpha = c->o->alpha, beta = c->o->beta, vbeta = c->vbeta;
    const double Kalpha = K * alpha, Kbeta = K * beta;
    int64_t *nk = w->nk;
    lda_word *wd = &s->word;
    int32_t *stale = s->stale;
    for (uint64_t r = t->blk_run[b]; r < t->blk_run[b + 1]; r++) {
        uint32_t cap, j = t->run_word[r];
        uint32_t *slice = lda_word_slice(c, b, j, payload, &cap);
        lda_word_load(wd, K, slice, cap);
        int32_t *nwk = wd->nwk;
        uint32_t n_alias = wd->n_nz;
        double nw = 0;
        for (uint32_t i = 0; i < n_alias; i++) {
            stale[wd->nz[i]] = nwk[wd->nz[i]];
            nw += nwk[wd->nz[i]];
        }
        if (n_alias)
            lda_alias_build(s, wd, nw);
        for (uint64_t i = r == t->blk_run[b] ? t->blk_tok[b] : t->run_end[r - 1]; i < t->run_end[r];
             i++) {
            uint32_t d = t->tok_doc[i], p = t->tok_pos[i], k0 = t->z[p], sk = k0;
            /* z[p] keeps k0 during the chain; the doc proposal reads sk for it */
            int32_t *ndk = t->ndk + (size_t)d * K;
            uint64_t dbeg = t->doc_off[d];
            uint32_t len = (uint32_t)(t->doc_off[d + 1] - dbeg);
            nk[k0]--;
            nwk[k0]--;
            ndk[k0]--;
            /* pi(k) up to a constant, counts without token i */
            double pis = (ndk[sk] + alpha) * (nwk[sk] + beta) / ((double)nk[sk] + vbeta);
            for (uint32_t step = 0; step < steps; step++) {
                uint32_t tk;
                double ratio;
                if (step & 1) {
                    /* word proposal: q(k) ∝ stale n_wk without token i, + beta.
                     * The alias table holds token i at k0: a draw of k0 is
                     * token i with probability 1 / stale[k0], and redrawn. */
                    if (rt_rng_uniform(rng) * (nw - 1 + Kbeta) < nw - 1) {
                        do
                            tk = lda_alias_draw(s, n_alias, rng);
                        while (tk == k0 && lda_below(rng, (uint32_t)stale[k0]) == 0);
                    } else {
                        tk = lda_below(rng, K);
                    }
                    if (tk == sk)
                        continue;
                    double pit = (ndk[tk] + alpha) * (nwk[tk] + beta) / ((double)nk[tk] + vbeta);
                    double qs = stale[sk] - (sk == k0) + beta, qt = stale[tk] - (tk == k0) + beta;
                    ratio = pit * qs / (pis * qt);
                    if (ratio >= 1 || rt_rng_uniform(rng) < ratio) {
                        sk = tk;
                        pis = pit;
                    }
                } else { /* doc proposal: n_dk (token i at its current sk) + alpha */
                    if (rt_rng_uniform(rng) * (len + Kalpha) < len) {
                        uint64_t at = dbeg + lda_below(rng, len);
                        tk = at == p ? sk : t->z[at];
                    } else {
                        tk = lda_below(rng, K);
                    }
                    if (tk == sk)
                        continue;
                    /* q(t|s) / q(s|t) = (n_dt + alpha) / (n_ds + alpha) cancels the
                     * document factor of pi(t) / pi(s) */
                    double pit = (ndk[tk] + alpha) * (nwk[tk] + beta) / ((double)nk[tk] + vbeta);
                    ratio = (nwk[tk] + beta) * ((double)nk[sk] + vbeta) /
                            ((nwk[sk] + beta) * ((double)nk[tk] + vbeta));
                    if (ratio >= 1 || rt_rng_uniform(rng) < ratio) {
                        sk = tk;
                        pis = pit;
                    }
                }
            }
            nk[sk]++;
            if (nwk[sk]++ == 0)
                lda_word_nz_add(wd, sk);
            ndk[sk]++;
            t->z[p] = (uint16_t)sk;
        }
        for (uint32_t i = 0; i < n_alias; i++)
            stale[s->atopic[i]] = 0;
        if (lda_word_store(wd, K))
            return lda_overflow(b, j, err);
    }
    return 0;
}

/* ------------------------------------------------------------ held out */

/* Held-out documents.  With the word's counts fixed, the fold-in conditional
 *     p(z = k) ∝ (n_dk + alpha) phi_k,   phi_k = (n_wk + beta) / (n_k + V beta)
 * splits into alpha phi_k (a cumulative table built once per word, searched
 * by bisection) and n_dk phi_k over the document's nonzero topics, so the
 * cost per token does not grow with K. */
int lda_visit_test(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                   rt_rng *rng, int eval, rt_error *err)
{
    (void)err;
    lda_tokens *t = &w->test;
    if (!t->blk_tok)
        return 0;
    const uint32_t K = c->o->K;
    const double alpha = c->o->alpha, beta = c->o->beta, vbeta = c->vbeta;
    double *phi = s->inv, *cphi = s->coef, *rb = s->buf;
    const int32_t *nwk = s->word.nwk;
    uint64_t r = t->blk_run[b], rend = t->blk_run[b + 1];
    uint64_t h = t->blk_held[b], hend = eval ? t->blk_held[b + 1] : h;
    /* Words in block order: those with observed tokens (runs) and, when
     * evaluating, those with completion tokens (held entries). */
    while (r < rend || h < hend) {
        uint32_t jr = r < rend ? t->run_word[r] : UINT32_MAX;
        uint32_t jh = h < hend ? t->held_word[h] : UINT32_MAX;
        uint32_t cap, j = jr < jh ? jr : jh;
        uint32_t *slice = lda_word_slice(c, b, j, payload, &cap);
        lda_word_load(&s->word, K, slice, cap);
        double acc = 0;
        for (uint32_t k = 0; k < K; k++) {
            phi[k] = (nwk[k] + beta) / ((double)w->nk[k] + vbeta);
            cphi[k] = (acc += phi[k]);
        }
        const double smooth = alpha * acc;
        if (jr == j) { /* fold in: resample the observed tokens */
            for (uint64_t i = r == t->blk_run[b] ? t->blk_tok[b] : t->run_end[r - 1];
                 i < t->run_end[r]; i++) {
                uint32_t d = t->tok_doc[i], p = t->tok_pos[i], k = t->z[p];
                int32_t *ndk = t->ndk + (size_t)d * K;
                if (--ndk[k] == 0)
                    doc_nz_remove(t, d, k);
                const uint16_t *dnz = t->dnz + t->dnz_off[d];
                uint32_t dn = t->dnz_n[d];
                double rsum = 0;
                for (uint32_t x = 0; x < dn; x++) {
                    rsum += ndk[dnz[x]] * phi[dnz[x]];
                    rb[x] = rsum;
                }
                double u = rt_rng_uniform(rng) * (rsum + smooth);
                if (u < rsum) {
                    uint32_t x = 0;
                    while (x + 1 < dn && rb[x] <= u)
                        x++;
                    k = dnz[x];
                } else { /* first k with cphi[k] > (u - rsum) / alpha */
                    k = (uint32_t)rt_search_cdf(cphi, K, (u - rsum) / alpha);
                }
                if (ndk[k]++ == 0)
                    t->dnz[t->dnz_off[d] + t->dnz_n[d]++] = (uint16_t)k;
                t->z[p] = (uint16_t)k;
            }
            r++;
        }
        /* completion half: log p(w | d) = log sum_k theta_dk phi_k */
        for (; h < hend && t->held_word[h] == j; h++) {
            uint32_t d = t->held_doc[h];
            const int32_t *ndk = t->ndk + (size_t)d * K;
            const uint16_t *dnz = t->dnz + t->dnz_off[d];
            double len = (double)(t->doc_off[d + 1] - t->doc_off[d]), pw = smooth;
            for (uint32_t x = 0; x < t->dnz_n[d]; x++)
                pw += ndk[dnz[x]] * phi[dnz[x]];
            w->held_ll += t->held_cnt[h] * log(pw / (len + K * alpha));
        }
        lda_word_drop(&s->word);
    }
    return 0;
}
