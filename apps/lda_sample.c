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
 * At K <= LDA_DENSE_K the sparse sampler draws from the full conditional
 * over all K topics at once instead (vectorised, see "dense" below): at
 * small K that costs less than the buckets' bookkeeping and searches.
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

#include <immintrin.h>
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
    s->chunk = rt_alloc(lda_chunks(K) * sizeof(double));
    s->coef = rt_alloc(K * sizeof(double));
    s->aprob = rt_alloc(K * sizeof(float));
    s->alias = rt_alloc(K * sizeof(uint16_t));
    s->atopic = rt_alloc(K * sizeof(uint16_t));
    s->small = rt_alloc(K * sizeof(uint32_t));
    s->large = rt_alloc(K * sizeof(uint32_t));
    s->stale = rt_alloc(K * sizeof(int32_t));
    s->dcnt = rt_alloc(K * sizeof(int32_t));
    if (!s->dcnt || !s->word.nwk || !s->word.nz || !s->word.pos || !s->inv || !s->buf ||
        !s->chunk || !s->coef || !s->aprob || !s->alias || !s->atopic || !s->small || !s->large ||
        !s->stale) {
        lda_scratch_free(s);
        return -1;
    }
    memset(s->word.pos, 0xff, K * sizeof(uint32_t));
    s->avx2 = lda_have_avx2();
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
    rt_free(s->chunk);
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

/* ------------------------------------------------------------ dense */

/* The full conditional's weights w_k = (n_dk + alpha) coef[k] over all K
 * topics, coef[k] = (n_wk + beta) / (n_k + V beta), in chunks of LDA_CHUNK:
 * no long chain of dependent adds (the weights and chunk sums vectorise),
 * and a draw finds its chunk first, then its topic (the chunk's weights
 * computed again).  Both code paths perform the same IEEE operations, so
 * the bits do not depend on the machine:
 *     w_k     = ((double)n_dk + alpha) * coef[k]   (0 past K)
 *     chunk_c = ((w0 + w4) + (w1 + w5)) + ((w2 + w6) + (w3 + w7))
 *     total_c = total_{c-1} + chunk_c   (total_{-1} = 0) */

static inline double chunk_sum(const double *w)
{
    return ((w[0] + w[4]) + (w[1] + w[5])) + ((w[2] + w[6]) + (w[3] + w[7]));
}

/* The chunk sums into running totals, in place; returns the last. */
static inline double chunks_total(double *total, uint32_t nc)
{
    double r = 0;
    for (uint32_t c = 0; c < nc; c++)
        total[c] = r += total[c];
    return r;
}

/* The weights of the chunk at topic k0. */
static inline void chunk_weights(const int32_t *ndk, double alpha, const double *coef, uint32_t K,
                                 uint32_t k0, double w[LDA_CHUNK])
{
    for (uint32_t i = 0; i < LDA_CHUNK; i++)
        w[i] = k0 + i < K ? (ndk[k0 + i] + alpha) * coef[k0 + i] : 0.0;
}

static double weights_portable(const int32_t *ndk, double alpha, const double *coef, uint32_t K,
                               double *total)
{
    const uint32_t nc = lda_chunks(K);
    for (uint32_t c = 0; c < nc; c++) {
        double w[LDA_CHUNK];
        chunk_weights(ndk, alpha, coef, K, c * LDA_CHUNK, w);
        total[c] = chunk_sum(w);
    }
    return chunks_total(total, nc);
}

#define AVX2 __attribute__((target("avx2")))

/* The 8 weights (n + alpha) coef of a chunk, stored into w unless NULL;
 * returns w_j + w_{j+4}. */
AVX2 static inline __m256d chunk_half_avx2(__m256i n, __m256d alpha, __m256d clo, __m256d chi,
                                           double *w)
{
    const __m256d lo =
        _mm256_mul_pd(_mm256_add_pd(_mm256_cvtepi32_pd(_mm256_castsi256_si128(n)), alpha), clo);
    const __m256d hi = _mm256_mul_pd(
        _mm256_add_pd(_mm256_cvtepi32_pd(_mm256_extracti128_si256(n, 1)), alpha), chi);
    if (w) {
        _mm256_storeu_pd(w, lo);
        _mm256_storeu_pd(w + 4, hi);
    }
    return _mm256_add_pd(lo, hi);
}

AVX2 static inline __m256d chunk_full_avx2(const int32_t *ndk, __m256d alpha, const double *coef,
                                           uint32_t k, double *w)
{
    return chunk_half_avx2(_mm256_loadu_si256((const __m256i *)(ndk + k)), alpha,
                           _mm256_loadu_pd(coef + k), _mm256_loadu_pd(coef + k + 4), w);
}

/* The chunk past the last whole one: lanes past K read as 0, so their
 * weight is +0.0, as on the portable path. */
AVX2 static inline __m256d chunk_part_avx2(const int32_t *ndk, __m256d alpha, const double *coef,
                                           uint32_t k, uint32_t rest, double *w)
{
    const __m256i m =
        _mm256_cmpgt_epi32(_mm256_set1_epi32((int)rest), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i mlo = _mm256_cvtepi32_epi64(_mm256_castsi256_si128(m));
    const __m256i mhi = _mm256_cvtepi32_epi64(_mm256_extracti128_si256(m, 1));
    return chunk_half_avx2(_mm256_maskload_epi32(ndk + k, m), alpha,
                           _mm256_maskload_pd(coef + k, mlo), _mm256_maskload_pd(coef + k + 4, mhi),
                           w);
}

/* The weights of the chunk at topic k0 (chunk_weights' values). */
AVX2 static void chunk_weights_avx2(const int32_t *ndk, double alpha, const double *coef,
                                    uint32_t K, uint32_t k0, double w[LDA_CHUNK])
{
    const __m256d av = _mm256_set1_pd(alpha);
    if (k0 + LDA_CHUNK <= K)
        chunk_full_avx2(ndk, av, coef, k0, w);
    else
        chunk_part_avx2(ndk, av, coef, k0, K - k0, w);
}

/* The sum of one chunk from chunk_half_avx2's result. */
AVX2 static inline double chunk_fold_avx2(__m256d v)
{
    const __m128d h = _mm_hadd_pd(_mm256_castpd256_pd128(v), _mm256_extractf128_pd(v, 1));
    return _mm_cvtsd_f64(_mm_add_sd(h, _mm_unpackhi_pd(h, h)));
}

AVX2 static double weights_avx2(const int32_t *ndk, double alpha, const double *coef, uint32_t K,
                                double *total)
{
    const uint32_t full = K / LDA_CHUNK, rest = K % LDA_CHUNK;
    const __m256d av = _mm256_set1_pd(alpha);
    uint32_t c = 0;
    for (; c + 4 <= full; c += 4) { /* four chunk sums at once */
        __m256d v[4];
        for (uint32_t i = 0; i < 4; i++)
            v[i] = chunk_full_avx2(ndk, av, coef, (c + i) * LDA_CHUNK, NULL);
        const __m256d h01 = _mm256_hadd_pd(v[0], v[1]), h23 = _mm256_hadd_pd(v[2], v[3]);
        _mm256_storeu_pd(total + c, _mm256_add_pd(_mm256_permute2f128_pd(h01, h23, 0x20),
                                                  _mm256_permute2f128_pd(h01, h23, 0x31)));
    }
    for (; c < full; c++)
        total[c] = chunk_fold_avx2(chunk_full_avx2(ndk, av, coef, c * LDA_CHUNK, NULL));
    if (rest)
        total[c] = chunk_fold_avx2(chunk_part_avx2(ndk, av, coef, c * LDA_CHUNK, rest, NULL));
    return chunks_total(total, lda_chunks(K));
}

double lda_dense_weights(int avx2, const int32_t *ndk, double alpha, const double *coef, uint32_t K,
                         double *total)
{
    return avx2 ? weights_avx2(ndk, alpha, coef, K, total)
                : weights_portable(ndk, alpha, coef, K, total);
}

/* How many of total[0 .. n) u has reached. */
static uint32_t passed_portable(const double *total, uint32_t n, double u)
{
    uint32_t c = 0;
    for (uint32_t i = 0; i < n; i++)
        c += !(u < total[i]);
    return c;
}

AVX2 static uint32_t passed_avx2(const double *total, uint32_t n, double u)
{
    const __m256d uv = _mm256_set1_pd(u);
    uint32_t c = 0, i = 0;
    for (; i + 4 <= n; i += 4) {
        const __m256d reached = _mm256_cmp_pd(_mm256_loadu_pd(total + i), uv, _CMP_LE_OQ);
        c += (uint32_t)__builtin_popcount((unsigned)_mm256_movemask_pd(reached));
    }
    return c + passed_portable(total + i, n - i, u);
}

uint32_t lda_dense_find(int avx2, const int32_t *ndk, double alpha, const double *coef,
                        const double *total, uint32_t K, double u)
{
    /* the chunk: how many running totals u has reached (they never fall),
     * counted without branches, whose outcome no predictor could guess */
    const uint32_t nc = lda_chunks(K);
    const uint32_t c = avx2 ? passed_avx2(total, nc - 1, u) : passed_portable(total, nc - 1, u);
    /* its topic, alike; u - (the total before) >= 0, so a zero weight is
     * never the first to pass it */
    double w[LDA_CHUNK], a = 0;
    if (avx2)
        chunk_weights_avx2(ndk, alpha, coef, K, c * LDA_CHUNK, w);
    else
        chunk_weights(ndk, alpha, coef, K, c * LDA_CHUNK, w);
    const double v = u - (c ? total[c - 1] : 0.0);
    uint32_t j = 0;
    for (uint32_t i = 0; i < LDA_CHUNK; i++) {
        a += w[i];
        j += !(v < a);
    }
    if (j == LDA_CHUNK) /* rounding left u past the chunk: its last weight */
        for (j = LDA_CHUNK - 1; j && !(w[j] > 0); j--)
            ;
    return c * LDA_CHUNK + j;
}

int lda_have_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
}

/* Token count change dn (+1 or -1) of topic k for the loaded word, with
 * coef[k] in step. */
static inline void dense_change(int64_t *nk, lda_word *wd, double *coef, double beta, double vbeta,
                                uint32_t k, int dn)
{
    lda_word_token_move(wd, nk, k, dn);
    coef[k] = (wd->nwk[k] + beta) / ((double)nk[k] + vbeta);
}

/* Tokens ahead whose document row and topic are prefetched, and the most
 * bytes of the row. */
#define DENSE_PREFETCH 8
#define DENSE_PREFETCH_ROW 512u

/* The sparse sampler at K <= LDA_DENSE_K.  The documents' topic lists are
 * not used, and not kept. */
static int visit_dense(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload,
                       lda_scratch *s, rt_rng *rng, rt_error *err)
{
    lda_tokens *t = &w->train;
    const uint32_t K = c->o->K;
    const uint32_t row_bytes = K * 4 < DENSE_PREFETCH_ROW ? K * 4 : DENSE_PREFETCH_ROW;
    const double alpha = c->o->alpha, beta = c->o->beta, vbeta = c->vbeta;
    int64_t *nk = w->nk;
    double *total = s->chunk, *coef = s->coef;
    lda_word *wd = &s->word;
    /* coef[k] = (n_wk + beta) / (n_k + V beta): beta / (n_k + V beta)
     * outside the loaded word's topics */
    for (uint32_t k = 0; k < K; k++)
        coef[k] = beta / ((double)nk[k] + vbeta);
    for (uint64_t r = t->blk_run[b]; r < t->blk_run[b + 1]; r++) {
        uint32_t cap, j = t->run_word[r];
        uint32_t *slice = lda_word_slice(c, b, j, payload, &cap);
        lda_word_load(wd, K, slice, cap);
        for (uint32_t x = 0; x < wd->n_nz; x++) {
            const uint32_t k = wd->nz[x];
            coef[k] = (wd->nwk[k] + beta) / ((double)nk[k] + vbeta);
        }
        const uint64_t end = t->run_end[r];
        for (uint64_t i = r == t->blk_run[b] ? t->blk_tok[b] : t->run_end[r - 1]; i < end; i++) {
            if (i + DENSE_PREFETCH < end) {
                const char *row =
                    (const char *)(t->ndk + (size_t)t->tok_doc[i + DENSE_PREFETCH] * K);
                __builtin_prefetch(t->z + t->tok_pos[i + DENSE_PREFETCH], 1);
                for (uint32_t o = 0; o < row_bytes; o += 64)
                    __builtin_prefetch(row + o, 1);
            }
            const uint32_t p = t->tok_pos[i], k0 = t->z[p];
            int32_t *ndk = t->ndk + (size_t)t->tok_doc[i] * K;
            ndk[k0]--;
            dense_change(nk, wd, coef, beta, vbeta, k0, -1);
            const double sum = lda_dense_weights(s->avx2, ndk, alpha, coef, K, total);
            const uint32_t k =
                lda_dense_find(s->avx2, ndk, alpha, coef, total, K, rt_rng_uniform(rng) * sum);
            ndk[k]++;
            dense_change(nk, wd, coef, beta, vbeta, k, +1);
            t->z[p] = (uint16_t)k;
        }
        for (uint32_t x = 0; x < wd->n_nz; x++) {
            const uint32_t k = wd->nz[x];
            coef[k] = beta / ((double)nk[k] + vbeta);
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
    if (c->o->K <= LDA_DENSE_K)
        return visit_dense(c, w, b, payload, s, rng, err);
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
