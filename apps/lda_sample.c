/* lda_sample.c - the per-block kernels: initial counting, the sparse bucket
 * sampler, the Metropolis-Hastings sampler and held-out fold-in.
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
 * a random token of the document, or a uniform topic) and the word proposal
 * q_w(k) ∝ n_wk + beta  (the topic of a random token of the word from its
 * live urn, lda_word_urn_live, or a uniform topic), each accepted with the
 * Metropolis-Hastings ratio, in which the proposal's own factor of the
 * conditional cancels.  Both proposals count the token itself where its
 * chain is now, which the ratio allows for: q(t | s) / q(s | t) is then the
 * ratio of the counts without it.  Per-token cost does not depend on K.
 * The word proposal draws from the word's counts as they are now, not from
 * a table built when the word's run starts (LightLDA's stale alias table):
 * such a table holds the run's earlier tokens where they were before this
 * visit moved them, a function of the chain's path that is correlated with
 * the token's current state, and the sweep then does not keep the Gibbs
 * posterior: the chain settled 0.26-0.73% above its log-likelihood
 * (e2e_lda_stationary), and one sweep's exact transition matrix on a
 * 6-token, 3-topic corpus moved the posterior's mass by up to 44% of a
 * state's (1e-15 with the live urn; docs/benchmark-log.md). */
#include "apps/lda.h"
#include "apps/lda_simd.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Floats from one set of the dense kernel's running totals to the next: a
 * set's lda_dense_totals_len(K), after LDA_CHUNK of +0 (lda_dense_find
 * reads total[-1]; a whole chunk keeps the sets' alignment). */
static uint32_t dense_total_stride(uint32_t K)
{
    return LDA_CHUNK + lda_dense_totals_len(K);
}

unsigned lda_scratch_parts(const lda_opts *o, int held_out)
{
    if (lda_uses_lists(o->sampler, o->K)) /* the K-wide arrays only for the progressive sweep and
                                           * the held-out fold-in */
        return LDA_SCRATCH_LISTS |
               (o->init == LDA_INIT_PROGRESSIVE || held_out ? LDA_SCRATCH_BUCKETS : 0);
    return (o->K <= LDA_DENSE_K ? LDA_SCRATCH_DENSE : 0) | LDA_SCRATCH_BUCKETS | LDA_SCRATCH_MH;
}

int lda_scratch_init(lda_scratch *s, uint32_t K, unsigned parts)
{
    memset(s, 0, sizeof(*s));
    int fail = 0;
    s->word.nwk = rt_alloc(K * sizeof(int32_t));
    /* + 1: written past the list (lda_warp.c's word_count_add, lda_word_load) */
    s->word.nz = rt_alloc((K + 1) * sizeof(uint16_t));
    s->word.pos = rt_alloc(K * sizeof(uint32_t));
    fail |= !s->word.nwk || !s->word.nz || !s->word.pos;
    if (parts & LDA_SCRATCH_BUCKETS) {
        s->inv = rt_alloc(K * sizeof(double));
        s->buf = rt_alloc(K * sizeof(double));
        s->coef = rt_alloc(K * sizeof(double));
        fail |= !s->inv || !s->buf || !s->coef;
    }
    if (parts & LDA_SCRATCH_DENSE) {
        s->dense_coef = rt_alloc(lda_dense_totals_len(K) * LDA_CHUNK * sizeof(float));
        /* each set after LDA_CHUNK floats (+0: the find reads the one before its first) */
        s->dense_total = rt_alloc(2 * dense_total_stride(K) * sizeof(float));
        fail |= !s->dense_coef || !s->dense_total;
    }
    if (parts & LDA_SCRATCH_MH) {
        s->urn_own = rt_alloc(K * sizeof(int32_t));
        s->dcnt = rt_alloc(K * sizeof(int32_t));
        fail |= !s->urn_own || !s->dcnt;
    }
    if ((parts & LDA_SCRATCH_LISTS) && (lda_list_scratch_init(s, K) || lda_doc_scratch_init(s, K)))
        fail = 1;
    if (fail) {
        lda_scratch_free(s);
        return -1;
    }
    memset(s->word.pos, 0xff, K * sizeof(uint32_t));
    if (s->dense_total)
        memset(s->dense_total, 0, 2 * dense_total_stride(K) * sizeof(float));
    s->avx2 = lda_have_avx2();
    return 0;
}

int lda_scratch_urn(lda_scratch *s, const lda_layout *l, uint64_t n_words)
{
    uint64_t most = 1;
    for (uint64_t i = 0; i < n_words; i++)
        if (l->tokens[i] > most)
            most = l->tokens[i];
    s->urn = rt_alloc((most + LDA_URN_SLACK) * sizeof(uint16_t));
    return s->urn ? 0 : -1;
}

void lda_scratch_free(lda_scratch *s)
{
    rt_free(s->word.nwk);
    rt_free(s->word.nz);
    rt_free(s->word.pos);
    rt_free(s->inv);
    rt_free(s->buf);
    rt_free(s->dense_coef);
    rt_free(s->dense_total);
    rt_free(s->coef);
    rt_free(s->urn_own);
    rt_free(s->dcnt);
    rt_free(s->urn);
    lda_list_scratch_free(s);
    lda_doc_scratch_free(s);
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
            uint32_t k = lda_topic(t, lda_tok_slot(t, i));
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

/* The full conditional's weights over all K topics in 32-bit floats (8 to
 * a vector op), in chunks of LDA_CHUNK topics:
 *     coef[k] = (float)((n_wk + beta) / (n_k + V beta))   (computed in double)
 *     w_k     = ((float)n_dk + alpha) * coef[k]            (+0 past K)
 *     S_c     = ((w0 + w1) + (w2 + w3)) + ((w4 + w5) + (w6 + w7))
 * then running totals over the chunks in blocks of four (chains of at most
 * four dependent adds, where one serial run would chain all of them, and
 * the totals still never fall):
 *     T_c = T_{4b-1} + P_c   in block b,  P_c = S_{4b} + ... + S_c (serially),
 *                            T_{-1} = +0 (so T_c = P_c in the first block)
 * A draw finds its chunk (how many totals u has reached), then its topic
 * among the chunk's 8 weights by the same blocked running sums, the 8
 * weights computed again from the counts and coef as they are then (the
 * token loop keeps no weights: storing all K of them for every token cost
 * more than computing one chunk again).  Both code
 * paths perform the same IEEE operations, so the bits do not depend on the
 * machine. */

static inline float chunk_sum(const float *w)
{
    return ((w[0] + w[1]) + (w[2] + w[3])) + ((w[4] + w[5]) + (w[6] + w[7]));
}

/* x[0 .. n) into their blocked running sums (the order above), in place;
 * returns the last. */
static inline float blocked_totals(float *x, uint32_t n)
{
    float base = 0;
    uint32_t b = 0;
    for (; b + 4 <= n; b += 4) {
        const float p0 = x[b], p1 = p0 + x[b + 1], p2 = p1 + x[b + 2], p3 = p2 + x[b + 3];
        x[b] = base + p0;
        x[b + 1] = base + p1;
        x[b + 2] = base + p2;
        x[b + 3] = base = base + p3;
    }
    float p = 0;
    for (; b < n; b++)
        x[b] = base + (p += x[b]);
    return n ? x[n - 1] : 0.0f;
}

/* The token loop computes the weights at two places (a run's first token,
 * then the next token's beside each draw); inlined at both, as GCC would
 * not, since they are large. */
#define DENSE_INLINE inline __attribute__((always_inline))

/* (last: see weights_avx2; this path computes every chunk).  The weights
 * into w when `store` (lda_dense_weights' test). */
static DENSE_INLINE float weights_portable(const int32_t *ndk, float alpha, const float *coef,
                                           uint32_t K, float *w, float *total, uint32_t last,
                                           const int store)
{
    (void)last;
    const uint32_t nc = lda_chunks(K);
    for (uint32_t c = 0; c < nc; c++) {
        float x[LDA_CHUNK];
        for (uint32_t j = 0, k = c * LDA_CHUNK; j < LDA_CHUNK; j++, k++)
            x[j] = k < K ? ((float)ndk[k] + alpha) * coef[k] : 0.0f;
        if (store)
            memcpy(w + c * LDA_CHUNK, x, sizeof(x));
        total[c] = chunk_sum(x);
    }
    return blocked_totals(total, nc);
}

/* How many of x[0 .. n) u has reached. */
static inline uint32_t passed_portable(const float *x, uint32_t n, float u)
{
    uint32_t c = 0;
    for (uint32_t i = 0; i < n; i++)
        c += !(u < x[i]);
    return c;
}

/* The topic j of chunk c (weights x) whose running sum first passes u, or
 * LDA_CHUNK when rounding left u past the chunk: then its last nonzero weight. */
static inline uint32_t chunk_topic(const float *x, uint32_t c, uint32_t j)
{
    if (j == LDA_CHUNK)
        for (j = LDA_CHUNK - 1; j && !(x[j] > 0); j--)
            ;
    return c * LDA_CHUNK + j;
}

/* Running total c after patch p (lda.h): + d from p's chunk on (+0, the
 * same total, before it). */
static inline float patched_total(const float *total, uint32_t c, lda_dense_patch p)
{
    return total[c] + (c >= p.k / LDA_CHUNK ? p.d : 0.0f);
}

/* The chunk: how many (patched) running totals u has reached, counted
 * without branches, whose outcome no predictor could guess.  Its topic,
 * alike: v = u - (the total before), and a zero weight leaves the running
 * sum as it was, so it is never the first to pass v.  (The patched totals
 * never fall, but for rounding, as d >= -(the weight before); where they
 * do, the count is still a chunk below lda_chunks(K), and a v below +0
 * picks the chunk's first topic, whose weight is not zero in a real run:
 * alpha, beta > 0.) */
static inline uint32_t find_portable(const int32_t *ndk, float alpha, const float *coef,
                                     const float *total, uint32_t K, uint32_t last, float u,
                                     lda_dense_patch p)
{
    (void)last; /* (find_avx2's) */
    const uint32_t n = lda_chunks(K) - 1;
    uint32_t c = 0;
    for (uint32_t i = 0; i < n; i++)
        c += !(u < patched_total(total, i, p));
    const float v = u - (c ? patched_total(total, c - 1, p) : 0.0f);
    float x[LDA_CHUNK], a[LDA_CHUNK];
    for (uint32_t j = 0, k = c * LDA_CHUNK; j < LDA_CHUNK; j++, k++)
        x[j] = k < K ? ((float)ndk[k] + alpha) * coef[k] : 0.0f;
    memcpy(a, x, sizeof(a));
    blocked_totals(a, LDA_CHUNK);
    return chunk_topic(x, c, passed_portable(a, LDA_CHUNK, v));
}

AVX2 static inline __m256 chunk_full_avx2(const int32_t *ndk, __m256 alpha, const float *coef,
                                          uint32_t k)
{
    const __m256 n = _mm256_cvtepi32_ps(_mm256_loadu_si256((const __m256i *)(ndk + k)));
    return _mm256_mul_ps(_mm256_add_ps(n, alpha), _mm256_loadu_ps(coef + k));
}

/* Pairwise adds of two vectors' lanes (hadd), or +0 when neither holds a
 * topic (at or past `last`, the chunks holding topics: +0 + +0 is +0). */
AVX2 static inline __m256 pair_sums_avx2(__m256 a, __m256 b, uint32_t first, uint32_t last)
{
    return first < last ? _mm256_hadd_ps(a, b) : _mm256_setzero_ps();
}

/* The sums S_c of 8 chunks (as above), the first `last` of them holding
 * topics: two rounds of pairwise adds within each 128-bit half, then the
 * halves added. */
AVX2 static inline __m256 chunk_sums_avx2(__m256 v0, __m256 v1, __m256 v2, __m256 v3, __m256 v4,
                                          __m256 v5, __m256 v6, __m256 v7, uint32_t last)
{
    const __m256 q0 = _mm256_hadd_ps(_mm256_hadd_ps(v0, v1), pair_sums_avx2(v2, v3, 2, last));
    const __m256 q1 =
        pair_sums_avx2(pair_sums_avx2(v4, v5, 4, last), pair_sums_avx2(v6, v7, 6, last), 4, last);
    return _mm256_add_ps(_mm256_permute2f128_ps(q0, q1, 0x20),
                         _mm256_permute2f128_ps(q0, q1, 0x31));
}

/* x's lanes one place up within each 128-bit half, +0 into the first. */
AVX2 static inline __m256 shift_lane_avx2(__m256 x)
{
    return _mm256_castsi256_ps(_mm256_slli_si256(_mm256_castps_si256(x), 4));
}

/* Serial running sums within each 4-lane half of x (a block of four).
 * Each round adds x to the previous round shifted one lane up: after round
 * r the first r + 1 lanes of a block hold x_0 + ... + x_j added left to
 * right, the order above (x_j + (the sum before) is the same add, and
 * x_0 + +0 = x_0 as the values are >= +0).  Three rounds of a shift and an
 * add, where a mask per round would lengthen the chain. */
AVX2 static inline __m256 scan4_avx2(__m256 x)
{
    const __m256 r1 = _mm256_add_ps(x, shift_lane_avx2(x));
    const __m256 r2 = _mm256_add_ps(x, shift_lane_avx2(r1));
    return _mm256_add_ps(x, shift_lane_avx2(r2));
}

/* The running sums of 8 weights in the blocked order (a chunk's, for the
 * find): the high block after the low block's total. */
AVX2 static inline __m256 chunk_scan_avx2(__m256 x)
{
    const __m256 t = scan4_avx2(x);
    const __m256 last = _mm256_permute_ps(t, 0xff);
    return _mm256_add_ps(t, _mm256_permute2f128_ps(last, last, 0x08));
}

/* The blocked running totals of 8 sums s (two blocks), after the total
 * in base's low half (its high half is +0). */
AVX2 static inline __m256 group_totals_avx2(__m256 s, __m256 base)
{
    const __m256 t = _mm256_add_ps(scan4_avx2(s), base);
    const __m256 last = _mm256_permute_ps(t, 0xff);
    return _mm256_add_ps(t, _mm256_permute2f128_ps(last, last, 0x08));
}

/* The totals of 8 chunks v0..v7 (the first `last` holding topics) into
 * total, after base; the next base. */
AVX2 static inline __m256 group_avx2(__m256 v0, __m256 v1, __m256 v2, __m256 v3, __m256 v4,
                                     __m256 v5, __m256 v6, __m256 v7, __m256 base, float *total,
                                     uint32_t last)
{
    const __m256 t = group_totals_avx2(chunk_sums_avx2(v0, v1, v2, v3, v4, v5, v6, v7, last), base);
    _mm256_storeu_ps(total, t);
    const __m256 top = _mm256_permute_ps(t, 0xff);
    return _mm256_permute2f128_ps(top, top, 0x81);
}

/* The groups of 8 chunks before the last, and the chunks of the last
 * group that hold topics (1 .. 8): lda_chunks(K) = 8 full + last. */
static inline uint32_t dense_full_groups(uint32_t K)
{
    return lda_dense_totals_len(K) / LDA_CHUNK - 1;
}
static inline uint32_t dense_last_chunks(uint32_t K)
{
    return lda_chunks(K) - dense_full_groups(K) * LDA_CHUNK;
}

/* Groups of 8 chunks in registers (their weights stored to w only when
 * `store`, a constant: lda_dense_weights' test; the find computes its
 * chunk again):
 * `full` whole groups (dense_full_groups), then the last.  Every group is
 * whole, so every token runs the same code: the chunks of
 * the last group past the row's K counts (before `last`, a constant in
 * each stamped kernel below) read on into the next row's counts (or the
 * slack after the last row, lda.h), which weigh +0 against coef's +0
 * there, as on the portable path (a count is >= 0, so (n + alpha) * +0 is
 * +0).  The last group's chunks from `last` on hold no topic: +0 without a
 * load or a store (the find reads no weight past lda_chunks(K), and their
 * totals only repeat the last one), and two of them no pairwise add
 * (+0 + +0 is the same +0). */
AVX2 static DENSE_INLINE float weights_avx2(const int32_t *ndk, float alpha, const float *coef,
                                            uint32_t full, float *w, float *total,
                                            const uint32_t last, const int store)
{
    const float *end = total + full * LDA_CHUNK;
    const __m256 av = _mm256_set1_ps(alpha);
    __m256 base = _mm256_setzero_ps();
    /* pointers stepped a group at a time, so the chunks' loads and stores
     * take constant offsets (a 32-bit index costs an add a chunk) */
    for (; total < end; total += 8, ndk += 64, coef += 64, w += store ? 64 : 0) {
        __m256 v[8];
        for (uint32_t i = 0; i < 8; i++) {
            v[i] = chunk_full_avx2(ndk, av, coef, i * LDA_CHUNK);
            if (store)
                _mm256_storeu_ps(w + i * LDA_CHUNK, v[i]);
        }
        base = group_avx2(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], base, total, 8);
    }
    __m256 v[8];
    for (uint32_t i = 0; i < 8; i++) {
        v[i] = _mm256_setzero_ps();
        if (i < last) {
            v[i] = chunk_full_avx2(ndk, av, coef, i * LDA_CHUNK);
            if (store)
                _mm256_storeu_ps(w + i * LDA_CHUNK, v[i]);
        }
    }
    base = group_avx2(v[0], v[1], v[2], v[3], v[4], v[5], v[6], v[7], base, total, last);
    /* total[lda_chunks(K) - 1] without the trip through memory: the last
     * group's last total (the chunks past lda_chunks(K) add +0), in base's
     * low lane */
    return _mm256_cvtss_f32(base);
}

/* The patched running total before chunk c (total[-1], +0, before the
 * first), as find_portable has it, without branches: its condition is as
 * likely one way as the other (about half the draws pass the patched
 * chunk), and a mispredicted branch here discards the next token's
 * weights, which run behind the draw.  The float bits are the same: x & 0
 * is +0, and +0 + +0 = +0. */
AVX2 static inline float total_before_avx2(const float *total, uint32_t c, lda_dense_patch p)
{
    const __m128 after = _mm_castsi128_ps(_mm_cvtsi32_si128(-(int)(c > p.k / LDA_CHUNK)));
    const __m128 t = _mm_load_ss(total + (ptrdiff_t)c - 1);
    return _mm_cvtss_f32(_mm_add_ss(t, _mm_and_ps(_mm_set_ss(p.d), after)));
}

/* Which of the 8 patched totals from total[i] u has reached, as lane bits. */
AVX2 static inline unsigned reached_avx2(const float *total, uint32_t i, __m256 uv, __m256 dv,
                                         __m256i pc)
{
    /* pc: the patched chunk - i in every lane, so lane j is before it
     * where pc > j (a subtraction a group, not a broadcast of i) */
    const __m256 before =
        _mm256_castsi256_ps(_mm256_cmpgt_epi32(pc, _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7)));
    const __m256 t = _mm256_add_ps(_mm256_loadu_ps(total + i), _mm256_andnot_ps(before, dv));
    return (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(t, uv, _CMP_LE_OQ));
}

/* As find_portable, for lda_chunks(K) = 8 full + last (dense_full_groups,
 * dense_last_chunks): the totals before the last chunk are the full
 * groups' 8 each, then the last group's first last - 1. */
AVX2 static inline uint32_t find_avx2(const int32_t *ndk, float alpha, const float *coef,
                                      const float *total, uint32_t full, const uint32_t last,
                                      float u, lda_dense_patch p)
{
    const __m256i step = _mm256_set1_epi32(LDA_CHUNK);
    __m256i pc = _mm256_set1_epi32((int)(p.k / LDA_CHUNK));
    const __m256 uv = _mm256_set1_ps(u), dv = _mm256_set1_ps(p.d);
    uint32_t c = 0;
    for (uint32_t g = 0; g < full; g++, pc = _mm256_sub_epi32(pc, step))
        c += (uint32_t)__builtin_popcount(reached_avx2(total, g * LDA_CHUNK, uv, dv, pc));
    if (last > 1)
        c += (uint32_t)__builtin_popcount(reached_avx2(total, full * LDA_CHUNK, uv, dv, pc) &
                                          ((1u << (last - 1)) - 1));
    const float v = u - total_before_avx2(total, c, p);
    const __m256 x = chunk_full_avx2(ndk, _mm256_set1_ps(alpha), coef, c * LDA_CHUNK);
    const unsigned m = (unsigned)_mm256_movemask_ps(
        _mm256_cmp_ps(chunk_scan_avx2(x), _mm256_set1_ps(v), _CMP_LE_OQ));
    const uint32_t j = (uint32_t)__builtin_popcount(m);
    if (j < LDA_CHUNK)
        return c * LDA_CHUNK + j;
    float xs[LDA_CHUNK]; /* rounding left v past the chunk (rare) */
    _mm256_storeu_ps(xs, x);
    return chunk_topic(xs, c, j);
}

/* Each value of `last` stamped out as a constant (the kernels below are
 * too, one for each). */
#define DENSE_LAST_CASES(CASE) CASE(1) CASE(2) CASE(3) CASE(4) CASE(5) CASE(6) CASE(7) CASE(8)

AVX2 static float dense_weights_avx2(const int32_t *ndk, float alpha, const float *coef, uint32_t K,
                                     float *w, float *total)
{
    switch (dense_last_chunks(K)) {
#define WEIGHTS_CASE(L)                                                                            \
    case L:                                                                                        \
        return weights_avx2(ndk, alpha, coef, dense_full_groups(K), w, total, L, 1);
        DENSE_LAST_CASES(WEIGHTS_CASE)
#undef WEIGHTS_CASE
    }
    return 0.0f; /* (unreachable: 1 <= dense_last_chunks(K) <= 8) */
}

AVX2 static uint32_t dense_find_avx2(const int32_t *ndk, float alpha, const float *coef,
                                     const float *total, uint32_t K, float u, lda_dense_patch p)
{
    switch (dense_last_chunks(K)) {
#define FIND_CASE(L)                                                                               \
    case L:                                                                                        \
        return find_avx2(ndk, alpha, coef, total, dense_full_groups(K), L, u, p);
        DENSE_LAST_CASES(FIND_CASE)
#undef FIND_CASE
    }
    return 0; /* (unreachable) */
}

float lda_dense_weights(int avx2, const int32_t *ndk, float alpha, const float *coef, uint32_t K,
                        float *w, float *total)
{
    return avx2 ? dense_weights_avx2(ndk, alpha, coef, K, w, total)
                : weights_portable(ndk, alpha, coef, K, w, total, LDA_CHUNK, 1);
}

uint32_t lda_dense_find(int avx2, const int32_t *ndk, float alpha, const float *coef,
                        const float *total, uint32_t K, float u, lda_dense_patch p)
{
    return avx2 ? dense_find_avx2(ndk, alpha, coef, total, K, u, p)
                : find_portable(ndk, alpha, coef, total, K, LDA_CHUNK, u, p);
}

int lda_have_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") != 0;
}

/* coef[k] of the loaded word (the definition above). */
static inline float dense_coef(int32_t nwk, int64_t nk, double beta, double vbeta)
{
    return (float)((nwk + beta) / ((double)nk + vbeta));
}

/* Tokens ahead whose document row and topic are prefetched, and the most
 * bytes of the row (8 lines). */
#define DENSE_PREFETCH 8
#define DENSE_PREFETCH_ROW 512u

/* What one word's run of tokens needs: total holds two sets, one token's
 * running totals and the next's (tstride floats apart, dense_total_stride).
 * The word's counts nwk are its dense slice itself, or the scratch of a
 * sparse one, whose topic list wd keeps in step (listed runs). */
typedef struct dense_run {
    /* the worker's tokens (lda_tokens): document, place in z, topic; rows */
    const uint32_t *tok_doc, *tok_pos;
    uint16_t *z;
    int32_t *ndk;
    int64_t *nk;
    int32_t *nwk;
    lda_word *wd;
    float *coef, *total;
    uint64_t last;                        /* the block's last token */
    uint32_t K, full, row_bytes, tstride; /* full: dense_full_groups(K) */
    float alpha;
    double beta, vbeta;
} dense_run;

/* Token count change dn (+1 or -1) of topic k for the loaded word and the
 * topic totals, with the word's topic list when listed (a sparse slice is
 * written back in its order; a dense slice has none to keep); returns the
 * new coef[k]. */
static DENSE_INLINE float dense_move(const dense_run *d, uint32_t k, int dn, int listed)
{
    if (listed) {
        lda_word_token_move(d->wd, d->nk, k, dn);
    } else {
        d->nk[k] += dn;
        d->nwk[k] += dn;
    }
    return dense_coef(d->nwk[k], d->nk[k], d->beta, d->vbeta);
}

/* The document row and topic of the token DENSE_PREFETCH ahead, on into
 * the next words' runs of the block (without that, the first tokens of
 * every run, a quarter of KOS's, would find their rows uncached), the
 * last token's again at the block's end.  Straight-line: 4 lines, 4 more
 * for a row past 256 bytes (the extra line is the row's last one when it
 * straddles, else the next row's); the branch goes the same way all visit.
 * Always inlined: as a call, GCC's IPA finds it without side effects and
 * drops it whole (GCC 12). */
static DENSE_INLINE void dense_prefetch(const dense_run *d, uint64_t i)
{
    const uint64_t a = i + DENSE_PREFETCH < d->last ? i + DENSE_PREFETCH : d->last;
    /* an integer: row + 448 lies past the last row's end when it is
     * shorter, where a pointer would be undefined even unread */
    const uintptr_t row = (uintptr_t)(d->ndk + (size_t)d->tok_doc[a] * d->K);
    __builtin_prefetch(d->z + d->tok_pos[a], 1);
    __builtin_prefetch((const void *)row, 1);
    __builtin_prefetch((const void *)(row + 64), 1);
    __builtin_prefetch((const void *)(row + 128), 1);
    __builtin_prefetch((const void *)(row + 192), 1);
    if (d->row_bytes > 256) {
        __builtin_prefetch((const void *)(row + 256), 1);
        __builtin_prefetch((const void *)(row + 320), 1);
        __builtin_prefetch((const void *)(row + 384), 1);
        __builtin_prefetch((const void *)(row + 448), 1);
    }
}

/* The document row of token i. */
static inline int32_t *dense_row(const dense_run *d, uint64_t i)
{
    return d->ndk + (size_t)d->tok_doc[i] * d->K;
}

/* n_dk (row ndk) and the word's and the totals' counts of topic k change
 * by dn (+1 or -1), and coef[k] with them; returns the new coef[k]. */
static DENSE_INLINE float dense_count_portable(const dense_run *d, int32_t *ndk, uint32_t k, int dn,
                                               int listed)
{
    ndk[k] += dn;
    return d->coef[k] = dense_move(d, k, dn, listed);
}

/* The vector path changes a count of the document row and a coef by a
 * load and a store of the whole chunk: the next weights' load of that
 * chunk is then served from the store, where a 4-byte store under a
 * 32-byte load would wait until it reached the cache. */
AVX2 static inline __m256i lane_avx2(uint32_t k)
{
    return _mm256_cmpeq_epi32(_mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
                              _mm256_set1_epi32((int)(k % LDA_CHUNK)));
}

/* n_dk += dn.  The chunk of a topic in the row's last, partial chunk
 * reaches into the next row (or the slack after the last row, lda.h),
 * whose counts are written back as they were: the worker's rows are this
 * thread's alone during a visit.  So no branch on k, which no predictor
 * could guess. */
AVX2 static inline void ndk_move_avx2(int32_t *ndk, uint32_t k, int dn)
{
    __m256i *x = (__m256i *)(ndk + k / LDA_CHUNK * LDA_CHUNK);
    const __m256i v = _mm256_loadu_si256(x), m = lane_avx2(k); /* m: -1 in lane k */
    _mm256_storeu_si256(x, dn > 0 ? _mm256_sub_epi32(v, m) : _mm256_add_epi32(v, m));
}

AVX2 static inline void coef_set_avx2(float *coef, uint32_t k, float c)
{
    float *x = coef + k / LDA_CHUNK * LDA_CHUNK;
    _mm256_storeu_ps(x, _mm256_blendv_ps(_mm256_loadu_ps(x), _mm256_set1_ps(c),
                                         _mm256_castsi256_ps(lane_avx2(k))));
}

/* As dense_count_portable. */
AVX2 static DENSE_INLINE float dense_count_avx2(const dense_run *d, int32_t *ndk, uint32_t k,
                                                int dn, int listed)
{
    ndk_move_avx2(ndk, k, dn);
    const float c = dense_move(d, k, dn, listed);
    coef_set_avx2(d->coef, k, c);
    return c;
}

/* Tokens [i, end) of the loaded word, one loop for both paths (GCC inlines
 * the AVX2 intrinsics only into functions built for AVX2, so the loop is
 * stamped out once per path: dense_tokens_portable, and dense_tokens_avx2_L
 * for each count L of the last group's chunks, weights_avx2's `last`).
 *
 * Two tokens are in flight.  While token i's draw runs, token i + 1
 * leaves its topic and its weights' totals are computed (into the other
 * set) from counts that still lack token i's new topic k.  Once k is
 * known, token i joins it, and only one of token i + 1's weights differs
 * from what was computed, topic k's (its coef, and its n_dk when both
 * tokens are in one document): a patch (lda_dense_patch), which token
 * i + 1's draw applies to the totals (the weights of the chunk it lands
 * in are computed then, from counts that hold the change).  So a draw waits for the one weight the
 * previous draw changed, not for all K weights and their sums: the sums of the next token run
 * beside the draw.  The draw is still from the exact full conditional, up to float rounding (the
 * patched totals are the computed totals plus the change, added in float). */
#define DENSE_TOKENS(NAME, PATH, ATTR, LAST, LISTED, SIZE)                                         \
    ATTR static void dense_tokens_##NAME(const dense_run *run, uint64_t i, uint64_t end,           \
                                         rt_rng *stream)                                           \
    {                                                                                              \
        /* a copy the counts' stores cannot alias: its fields stay in registers */                 \
        const dense_run copy = *run, *d = &copy;                                                   \
        if (i >= end)                                                                              \
            return;                                                                                \
        rt_rng local = *stream, *rng = &local; /* in registers, not stored every token */          \
        float *total = d->total, *nt = d->total + d->tstride;                                      \
        int32_t *ndk = dense_row(d, i);                                                            \
        dense_count_##PATH(d, ndk, d->z[d->tok_pos[i]], -1, LISTED);                               \
        float sum = weights_##PATH(ndk, d->alpha, d->coef, d->SIZE, NULL, total, LAST, 0);         \
        lda_dense_patch patch = {0, 0.0f};                                                         \
        for (;;) {                                                                                 \
            dense_prefetch(d, i);                                                                  \
            const uint32_t p = d->tok_pos[i];                                                      \
            const uint32_t k = find_##PATH(ndk, d->alpha, d->coef, total, d->SIZE, LAST,           \
                                           rt_rng_uniformf(rng) * (sum + patch.d), patch);         \
            if (i + 1 == end) {                                                                    \
                dense_count_##PATH(d, ndk, k, +1, LISTED);                                         \
                d->z[p] = (uint16_t)k;                                                             \
                *stream = local;                                                                   \
                return;                                                                            \
            }                                                                                      \
            int32_t *next = dense_row(d, i + 1);                                                   \
            dense_count_##PATH(d, next, d->z[d->tok_pos[i + 1]], -1, LISTED);                      \
            sum = weights_##PATH(next, d->alpha, d->coef, d->SIZE, NULL, nt, LAST, 0);             \
            const float before = ((float)next[k] + d->alpha) * d->coef[k];                         \
            const float ck = dense_count_##PATH(d, ndk, k, +1, LISTED);                            \
            d->z[p] = (uint16_t)k;                                                                 \
            patch = (lda_dense_patch){k, ((float)next[k] + d->alpha) * ck - before};               \
            float *const ot = total; /* the sets trade places */                                   \
            total = nt, nt = ot, ndk = next, i++;                                                  \
        }                                                                                          \
    }
DENSE_TOKENS(portable_0, portable, , LDA_CHUNK, 0, K)
DENSE_TOKENS(portable_1, portable, , LDA_CHUNK, 1, K)
#define DENSE_TOKENS_AVX2(L)                                                                       \
    DENSE_TOKENS(avx2_##L##_0, avx2, AVX2, L, 0, full)                                             \
    DENSE_TOKENS(avx2_##L##_1, avx2, AVX2, L, 1, full)
DENSE_LAST_CASES(DENSE_TOKENS_AVX2)
#undef DENSE_TOKENS_AVX2

typedef void dense_tokens_fn(const dense_run *d, uint64_t i, uint64_t end, rt_rng *stream);

/* The token loop of the run's path and K, for runs of dense slices
 * (listed 0) or of sparse ones (1); picked once a visit. */
static dense_tokens_fn *dense_tokens(int avx2, uint32_t K, int listed)
{
    if (!avx2)
        return listed ? dense_tokens_portable_1 : dense_tokens_portable_0;
    switch (dense_last_chunks(K)) {
#define TOKENS_CASE(L)                                                                             \
    case L:                                                                                        \
        return listed ? dense_tokens_avx2_##L##_1 : dense_tokens_avx2_##L##_0;
        DENSE_LAST_CASES(TOKENS_CASE)
#undef TOKENS_CASE
    }
    return NULL; /* (unreachable: 1 <= dense_last_chunks(K) <= 8) */
}

/* Every coef[k], k < K, of a word with counts nwk (+0 past K stays). */
static void coefs_portable(float *coef, const int32_t *nwk, const int64_t *nk, uint32_t K,
                           double beta, double vbeta)
{
    for (uint32_t k = 0; k < K; k++)
        coef[k] = dense_coef(nwk[k], nk[k], beta, vbeta);
}

/* (double)x, exactly, for |x| < 2^51 (AVX2 converts no 64-bit integers):
 * x added to the bits of 1.5 * 2^52, where a double's unit in the last
 * place is 1, then 1.5 * 2^52 taken off. */
AVX2 static inline __m256d count_double_avx2(__m256i x)
{
    const __m256d magic = _mm256_set1_pd(0x1.8p52);
    return _mm256_sub_pd(_mm256_castsi256_pd(_mm256_add_epi64(x, _mm256_castpd_si256(magic))),
                         magic);
}

/* As coefs_portable, four at a time: the same IEEE operations (an exact
 * conversion, an add, a division and the rounding to float of each). */
AVX2 static void coefs_avx2(float *coef, const int32_t *nwk, const int64_t *nk, uint32_t K,
                            double beta, double vbeta)
{
    const __m256d bv = _mm256_set1_pd(beta), vv = _mm256_set1_pd(vbeta);
    uint32_t k = 0;
    for (; k + 4 <= K; k += 4) {
        const __m256d n = _mm256_cvtepi32_pd(_mm_loadu_si128((const __m128i *)(nwk + k)));
        const __m256d t = count_double_avx2(_mm256_loadu_si256((const __m256i *)(nk + k)));
        _mm_storeu_ps(coef + k,
                      _mm256_cvtpd_ps(_mm256_div_pd(_mm256_add_pd(n, bv), _mm256_add_pd(t, vv))));
    }
    for (; k < K; k++)
        coef[k] = dense_coef(nwk[k], nk[k], beta, vbeta);
}

void lda_dense_coefs(int avx2, float *coef, const int32_t *nwk, const int64_t *nk, uint32_t K,
                     double beta, double vbeta)
{
    if (avx2)
        coefs_avx2(coef, nwk, nk, K, beta, vbeta);
    else
        coefs_portable(coef, nwk, nk, K, beta, vbeta);
}

/* The sparse sampler at K <= LDA_DENSE_K.  The documents' topic lists are
 * not used, and not kept.  A word with a dense slice is sampled on the
 * slice in place, every coef set from it (four divisions to a vector op,
 * where a loaded word's topic list cost a pass over K and a division each
 * twice), with no topic list; a word with a sparse slice is loaded into
 * the scratch, its list kept in step (the slice is written back in the
 * list's order), and coef outside its topics holds n_wk = 0. */
static int visit_dense(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload,
                       lda_scratch *s, rt_rng *rng, rt_error *err)
{
    lda_tokens *t = &w->train;
    const uint32_t K = c->o->K;
    lda_word *wd = &s->word;
    dense_run d = {.tok_doc = t->tok_doc,
                   .tok_pos = t->tok_pos,
                   .z = t->z,
                   .ndk = t->ndk,
                   .nk = w->nk,
                   .nwk = wd->nwk,
                   .wd = wd,
                   .coef = s->dense_coef,
                   .total = s->dense_total + LDA_CHUNK,
                   .last = t->blk_tok[b + 1] - 1,
                   .K = K,
                   .full = dense_full_groups(K),
                   .row_bytes = K * 4 < DENSE_PREFETCH_ROW ? K * 4 : DENSE_PREFETCH_ROW,
                   .tstride = dense_total_stride(K),
                   .alpha = (float)c->o->alpha,
                   .beta = c->o->beta,
                   .vbeta = c->vbeta};
    dense_tokens_fn *const in_place = dense_tokens(s->avx2, K, 0), *const listed =
                                                                       dense_tokens(s->avx2, K, 1);
    int coef_idle = 0; /* whether coef holds n_wk = 0 (the idle scratch's counts) everywhere */
    for (uint64_t r = t->blk_run[b]; r < t->blk_run[b + 1]; r++) {
        uint32_t cap, j = t->run_word[r];
        uint32_t *slice = lda_word_slice(c, b, j, payload, &cap);
        const uint64_t i = r == t->blk_run[b] ? t->blk_tok[b] : t->run_end[r - 1];
        if (!cap) {
            d.nwk = (int32_t *)slice;
            lda_dense_coefs(s->avx2, d.coef, d.nwk, d.nk, K, d.beta, d.vbeta);
            coef_idle = 0;
            in_place(&d, i, t->run_end[r], rng);
            continue;
        }
        if (!coef_idle)
            lda_dense_coefs(s->avx2, d.coef, wd->nwk, d.nk, K, d.beta, d.vbeta);
        coef_idle = 1;
        d.nwk = wd->nwk;
        lda_word_load(wd, K, slice, cap);
        for (uint32_t x = 0; x < wd->n_nz; x++) {
            const uint32_t k = wd->nz[x];
            d.coef[k] = dense_coef(wd->nwk[k], d.nk[k], d.beta, d.vbeta);
        }
        listed(&d, i, t->run_end[r], rng);
        for (uint32_t x = 0; x < wd->n_nz; x++) {
            const uint32_t k = wd->nz[x];
            d.coef[k] = dense_coef(0, d.nk[k], d.beta, d.vbeta);
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
    if (!w->train.ndk) /* (the mh sampler's exact sweeps keep the matrix) */
        return lda_visit_docs(c, w, b, payload, s, rng, err);
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

#define MH_PREFETCH 16 /* tokens ahead */

/* The proposal q(k) ∝ c_k + prior of a token: the n topics it draws from
 * (one per count) and their share of the mass, n / (n + K prior). */
typedef struct mh_source {
    const uint16_t *from;
    uint32_t n;
    double mass, cut; /* n + K prior; n 2^32 */
} mh_source;

static inline mh_source mh_source_of(const uint16_t *from, uint32_t n, double prior_mass)
{
    return (mh_source){from, n, n + prior_mass, n * 0x1.0p32};
}

/* One proposal with one 64-bit draw x: the high half picks the counts
 * (below n / (n + K prior)) or a uniform topic, the low half one of the n
 * topics (a topic in proportion to its count) or the uniform topic.  A
 * mask, not a branch: which one is a coin flip. */
static inline uint32_t mh_propose(uint64_t x, const mh_source *q, uint32_t K)
{
    const uint64_t lo = x & 0xffffffffu;
    const uint32_t counted = q->from[(lo * q->n) >> 32], uniform = (uint32_t)((lo * K) >> 32);
    const uint32_t use = (uint32_t) - (uint32_t)((double)(x >> 32) * q->mass < q->cut);
    return (counted & use) | (uniform & ~use);
}

/* The token's topic after a step: t if the ratio num / den passes 32
 * random bits u, else k (t == k: num == den, a move that changes
 * nothing).  A mask, not a branch: acceptance is a coin flip. */
static inline uint32_t mh_step(double num, double den, uint32_t u, uint32_t t, uint32_t k)
{
    const uint32_t take = (uint32_t) - (uint32_t)((double)u * 0x1.0p-32 * den < num);
    return k ^ ((k ^ t) & take);
}

/* Fetch what token i + MH_PREFETCH's first step reads: its document's row at
 * its topic (the topic fetched MH_PREFETCH tokens before, with the topics
 * around it, which its document proposal draws from). */
static inline void mh_prefetch(const lda_tokens *t, uint64_t i, uint64_t end, uint32_t K)
{
    if (i + 2 * MH_PREFETCH < end)
        __builtin_prefetch(t->z + t->tok_pos[i + 2 * MH_PREFETCH], 1);
    if (i + MH_PREFETCH < end)
        __builtin_prefetch(t->ndk + (size_t)t->tok_doc[i + MH_PREFETCH] * K +
                               t->z[t->tok_pos[i + MH_PREFETCH]],
                           1);
}

/* One block visit with M steps per token (M a constant in the common
 * cases, so the alternation unrolls). */
static inline __attribute__((always_inline)) int mh_visit(const lda_ctx *c, lda_worker *w,
                                                          uint32_t b, uint32_t *payload,
                                                          lda_scratch *s, rt_rng *rng_io,
                                                          uint32_t M, rt_error *err)
{
    lda_tokens *t = &w->train;
    const uint32_t K = c->o->K;
    const double alpha = c->o->alpha, beta = c->o->beta, vbeta = c->vbeta;
    const double Kalpha = K * alpha, Kbeta = K * beta;
    /* the totals as doubles while the visit runs (integers, so exact): a
     * conversion would sit on the chain from one step's outcome to the
     * next step's ratio */
    double *nk = s->buf;
    for (uint32_t k = 0; k < K; k++)
        nk[k] = (double)w->nk[k];
    lda_word *wd = &s->word;
    uint16_t *z = t->z, *urn = s->urn;
    rt_wyrand rng = {rt_rng_next(rng_io)};
    uint64_t i = t->blk_tok[b];
    const uint64_t block_end = t->blk_tok[b + 1];
    for (uint64_t r = t->blk_run[b]; r < t->blk_run[b + 1]; r++) {
        uint32_t cap, j = t->run_word[r];
        uint32_t *slice = lda_word_slice(c, b, j, payload, &cap);
        lda_word_load(wd, K, slice, cap);
        int32_t *nwk = wd->nwk;
        const uint64_t first = i, end = t->run_end[r];
        const uint32_t n_other = lda_word_urn_live(wd, z, t->tok_pos, first, end, urn, s->urn_own);
        const mh_source wq = mh_source_of(urn, n_other + (uint32_t)(end - first), Kbeta);
        for (; i < end; i++) {
            mh_prefetch(t, i, block_end, K);
            const uint32_t d = t->tok_doc[i], p = t->tok_pos[i];
            int32_t *ndk = t->ndk + (size_t)d * K;
            const mh_source dq = mh_source_of(
                z + t->doc_off[d], (uint32_t)(t->doc_off[d + 1] - t->doc_off[d]), Kalpha);
            /* the token's topic in the document and in the urn follow its
             * chain, so both proposals draw it at its current state */
            uint16_t *own = urn + n_other + (i - first);
            uint32_t k = z[p];
            nk[k]--;
            nwk[k]--;
            ndk[k]--;
            uint64_t bits = 0;
            for (uint32_t m = 0; m < M; m++) {
                const uint64_t x = rt_wyrand_next(&rng);
                if (!(m & 1))
                    bits = rt_wyrand_next(&rng);
                const uint32_t u = (uint32_t)(m & 1 ? bits >> 32 : bits);
                uint32_t tk;
                double num, den;
                if (m & 1) { /* word proposal: n_wk + beta, word factor cancels */
                    tk = mh_propose(x, &wq, K);
                    num = (ndk[tk] + alpha) * (nk[k] + vbeta);
                    den = (ndk[k] + alpha) * (nk[tk] + vbeta);
                } else { /* doc proposal: n_dk + alpha, document factor cancels */
                    tk = mh_propose(x, &dq, K);
                    num = (nwk[tk] + beta) * (nk[k] + vbeta);
                    den = (nwk[k] + beta) * (nk[tk] + vbeta);
                }
                k = mh_step(num, den, u, tk, k);
                z[p] = *own = (uint16_t)k;
            }
            nk[k]++;
            if (nwk[k]++ == 0)
                lda_word_nz_add(wd, k);
            ndk[k]++;
        }
        if (lda_word_store(wd, K)) {
            for (uint32_t k = 0; k < K; k++)
                w->nk[k] = (int64_t)nk[k];
            return lda_overflow(b, j, err);
        }
    }
    for (uint32_t k = 0; k < K; k++)
        w->nk[k] = (int64_t)nk[k];
    return 0;
}

int lda_visit_mh(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                 rt_rng *rng, rt_error *err)
{
    switch (c->o->mh_steps) {
    case 1:
        return mh_visit(c, w, b, payload, s, rng, 1, err);
    case 2:
        return mh_visit(c, w, b, payload, s, rng, 2, err);
    case 4:
        return mh_visit(c, w, b, payload, s, rng, 4, err);
    default:
        return mh_visit(c, w, b, payload, s, rng, c->o->mh_steps, err);
    }
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
