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
 * topic.
 *
 * The r bucket in float, 8 entries at a time (AVX2 when the CPU has it,
 * else a portable path doing the same IEEE operations, so the bits do not
 * depend on the machine):
 *     w_x = (float)(count_x - [topic_x is the token's old topic]) * coef_f[topic_x]
 *     A_b = A_{b-1} + (w_{8b} .. w_{8b+7})     (8 lane sums, A_{-1} = +0)
 *     P_b = ((A_b0 + A_b1) + (A_b2 + A_b3)) + ((A_b4 + A_b5) + (A_b6 + A_b7))
 * r = P of the last block; the P_b never fall (each lane only grows), so a
 * draw below r finds its block by bisection, then its entry by the running
 * sum of the block's weights after P_{b-1} (the block's last entry with
 * weight, should rounding leave u past them).
 *
 * A list is packed (t->dlist: topic << 16 | count, 4 bytes an entry in one
 * array) when its worker's documents all have at most LDA_LIST_COUNT_MAX
 * tokens, else topics and counts apart (t->dnz, t->dnc); each form has
 * its kernels, doing the same float operations in the same order, so the
 * bits do not depend on the form.
 *
 * The sparse sampler's visits run document-major (lda_doc.c) where the
 * worker's lists pack; this word-major visit samples the others, and in
 * those visits the words with many topics (lda_visit_lists_of). */
#include "apps/lda.h"
#include "apps/lda_simd.h"

#include <string.h>

/* Tokens ahead whose document list and topic are prefetched. */
#define LIST_PREFETCH 12

/* The document list itself is prefetched too (its place and length
 * LIST_PREFETCH tokens earlier) at every K this visit runs at (above
 * LDA_DENSE_K): at K = 10000 a word-major token's list load was 14% of the
 * samples (perf cpu-clock), and prefetching it gave paired tokens/s 1.16x
 * on the synthetic corpus (1.12-1.19 in 4 rounds; KOS 0.98, AP 1.00).  It
 * was once left out below K = 1024 on K = 100 A/Bs, which timed the dense
 * kernel (it never comes here); with it against without at K = 600 / 1000
 * (6 rounds each, load 8-17): KOS 1.033 / 1.043, AP 1.007 / 1.033,
 * synthetic 1.018 / 0.977, and over sweeps 1-25, where more words are drawn
 * word-major, KOS 1.018 / 1.018, AP 0.978 / 0.992, synthetic 1.121 / 0.967:
 * nothing past the noise either way, so one path.  bench/lda_ab.sh under
 * the bench lock.  (Until ff0964a GCC had dropped the prefetch loop whole:
 * see prefetch_bytes.) */

/* What one visit's token loop needs. */
typedef struct list_run {
    lda_tokens *t;
    int64_t *nk;
    lda_word *wd;
    lda_ftree *tree;
    float *coef;    /* K: (n_wk + beta) / (n_k + V beta) of the loaded word */
    float *w, *acc; /* a document's weights and lane sums (above) */
    double alpha, beta, vbeta;
    int avx2;
} list_run;

/* coef[k] and its leaf for word count nwk of topic k. */
static inline void coef_set(const list_run *l, uint32_t k, int32_t nwk)
{
    const double c = (nwk + l->beta) / ((double)l->nk[k] + l->vbeta);
    l->coef[k] = (float)c;
    lda_ftree_set(l->tree, k, l->alpha * c);
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

/* Document list (topics tz, counts tc, n entries) with one count less at
 * entry x, an entry of count 0 dropped (the last moves into its place);
 * returns the entries. */
static inline uint32_t list_drop(uint16_t *tz, uint32_t *tc, uint32_t n, uint32_t x)
{
    if (--tc[x] == 0) {
        n--;
        tz[x] = tz[n];
        tc[x] = tc[n];
    }
    return n;
}

/* ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7)) by shuffles: the pairs
 * side by side, then the pairs of pairs (9 instructions, not 15). */
static inline float lanes_total(const float *a)
{
    const __m128 lo = _mm_loadu_ps(a), hi = _mm_loadu_ps(a + 4);
    const __m128 pair = _mm_add_ps(_mm_shuffle_ps(lo, hi, _MM_SHUFFLE(2, 0, 2, 0)),
                                   _mm_shuffle_ps(lo, hi, _MM_SHUFFLE(3, 1, 3, 1)));
    const __m128 quad = _mm_add_ps(pair, _mm_shuffle_ps(pair, pair, _MM_SHUFFLE(2, 3, 0, 1)));
    return _mm_cvtss_f32(_mm_add_ss(quad, _mm_movehl_ps(quad, quad)));
}

static float r_weights_portable(const uint16_t *tz, const uint32_t *tc, uint32_t n, uint32_t from,
                                const float *coef, float *w, float *acc, uint32_t *own)
{
    float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (uint32_t x = 0; x < n; x += 8) {
        for (uint32_t j = 0; j < 8; j++) {
            const uint32_t at = x + j, mine = at < n && tz[at] == from;
            const float wx = at < n ? (float)(int32_t)(tc[at] - mine) * coef[tz[at]] : 0.0f;
            *own = mine ? at : *own;
            w[at] = wx;
            a[j] += wx;
        }
        memcpy(acc + x, a, sizeof(a));
    }
    return n ? lanes_total(acc + (n - 1) / 8 * 8) : 0.0f;
}

/* lanes_total of the lanes in a register: the same adds by two hadds. */
AVX2 static inline float lanes_total_avx2(__m256 a)
{
    const __m256 pair = _mm256_hadd_ps(a, a), quad = _mm256_hadd_ps(pair, pair);
    return _mm_cvtss_f32(_mm_add_ss(_mm256_castps256_ps128(quad), _mm256_extractf128_ps(quad, 1)));
}

/* One block of 8 entries at x (lanes from `valid` on: +0 weight); cf their
 * coef, acc the lane sums so far. */
AVX2 static inline __m256 r_block_avx2(const uint16_t *tz, const uint32_t *tc, uint32_t x,
                                       uint32_t valid, __m256i fv, __m256 cf, __m256 a, float *w,
                                       float *acc, uint32_t *own)
{
    const __m256i in = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)valid),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i k =
        _mm256_and_si256(in, _mm256_cvtepu16_epi32(_mm_loadu_si128((const __m128i *)(tz + x))));
    const __m256i mine = _mm256_and_si256(in, _mm256_cmpeq_epi32(k, fv));
    const __m256i c = _mm256_add_epi32(_mm256_loadu_si256((const __m256i *)(tc + x)), mine);
    const __m256 wx =
        _mm256_and_ps(_mm256_castsi256_ps(in), _mm256_mul_ps(_mm256_cvtepi32_ps(c), cf));
    _mm256_storeu_ps(w + x, wx);
    a = _mm256_add_ps(a, wx);
    _mm256_storeu_ps(acc + x, a);
    const unsigned m = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(mine));
    *own = m ? x + (uint32_t)__builtin_ctz(m) : *own;
    return a;
}

/* The topics' coef by eight loads rather than a gather, which this path
 * found slower (AMD EPYC, n = 75: 45 against 58 ns a list); in the last
 * block no topic past n is read (lane +0). */
AVX2 static float r_weights_avx2(const uint16_t *tz, const uint32_t *tc, uint32_t n, uint32_t from,
                                 const float *coef, float *w, float *acc, uint32_t *own)
{
    const __m256i fv = _mm256_set1_epi32((int)from);
    __m256 a = _mm256_setzero_ps();
    uint32_t x = 0;
    for (; x + 8 <= n; x += 8) {
        const uint16_t *t = tz + x;
        const __m256 cf = _mm256_setr_ps(coef[t[0]], coef[t[1]], coef[t[2]], coef[t[3]], coef[t[4]],
                                         coef[t[5]], coef[t[6]], coef[t[7]]);
        a = r_block_avx2(tz, tc, x, 8, fv, cf, a, w, acc, own);
    }
    if (x < n) {
        float c[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (uint32_t j = 0; x + j < n; j++)
            c[j] = coef[tz[x + j]];
        r_block_avx2(tz, tc, x, n - x, fv, _mm256_loadu_ps(c), a, w, acc, own);
    }
    return n ? lanes_total(acc + (n - 1) / 8 * 8) : 0.0f;
}

float lda_list_weights(int avx2, const uint16_t *tz, const uint32_t *tc, uint32_t n, uint32_t from,
                       const float *coef, float *w, float *acc, uint32_t *own)
{
    return avx2 ? r_weights_avx2(tz, tc, n, from, coef, w, acc, own)
                : r_weights_portable(tz, tc, n, from, coef, w, acc, own);
}

/* The packed form's r bucket: as r_weights_portable, entry by entry. */
static float packed_weights_portable(const uint32_t *e, uint32_t n, uint32_t from,
                                     const float *coef, float *w, float *acc, uint32_t *own)
{
    float a[8] = {0, 0, 0, 0, 0, 0, 0, 0};
    for (uint32_t x = 0; x < n; x += 8) {
        for (uint32_t j = 0; j < 8; j++) {
            const uint32_t at = x + j, k = at < n ? e[at] >> 16 : 0, mine = at < n && k == from;
            const float wx = at < n ? (float)(int32_t)((e[at] & 0xffff) - mine) * coef[k] : 0.0f;
            *own = mine ? at : *own;
            w[at] = wx;
            a[j] += wx;
        }
        memcpy(acc + x, a, sizeof(a));
    }
    return n ? lanes_total(acc + (n - 1) / 8 * 8) : 0.0f;
}

/* One packed block of 8 entries at x (lanes from `valid` on: +0 weight), as
 * r_block_avx2: one load gives the topics and the counts. */
AVX2 static inline __m256 packed_block_avx2(const uint32_t *e, uint32_t x, uint32_t valid,
                                            __m256i fv, __m256 cf, __m256 a, float *w, float *acc,
                                            uint32_t *own)
{
    const __m256i in = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)valid),
                                          _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256i v = _mm256_and_si256(in, _mm256_loadu_si256((const __m256i *)(e + x)));
    const __m256i mine = _mm256_and_si256(in, _mm256_cmpeq_epi32(_mm256_srli_epi32(v, 16), fv));
    const __m256i c = _mm256_add_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), mine);
    const __m256 wx =
        _mm256_and_ps(_mm256_castsi256_ps(in), _mm256_mul_ps(_mm256_cvtepi32_ps(c), cf));
    _mm256_storeu_ps(w + x, wx);
    a = _mm256_add_ps(a, wx);
    _mm256_storeu_ps(acc + x, a);
    const unsigned m = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(mine));
    *own = m ? x + (uint32_t)__builtin_ctz(m) : *own;
    return a;
}

AVX2 static float packed_weights_avx2(const uint32_t *e, uint32_t n, uint32_t from,
                                      const float *coef, float *w, float *acc, uint32_t *own)
{
    const __m256i fv = _mm256_set1_epi32((int)from);
    __m256 a = _mm256_setzero_ps();
    uint32_t x = 0;
    for (; x + 8 <= n; x += 8) {
        const uint32_t *p = e + x;
        const __m256 cf = lda_coef8_avx2(p, coef);
        a = packed_block_avx2(e, x, 8, fv, cf, a, w, acc, own);
    }
    if (x < n) { /* the last block's lanes past n read coef[0], then weigh +0 */
        const __m256i in = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - x)),
                                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const __m256i k = _mm256_and_si256(
            in, _mm256_srli_epi32(_mm256_loadu_si256((const __m256i *)(e + x)), 16));
        const __m256 cf = lda_coef8_of_topics_avx2(k, coef);
        a = packed_block_avx2(e, x, n - x, fv, cf, a, w, acc, own);
    }
    return lanes_total_avx2(a); /* (+0 when n = 0) */
}

float lda_packed_weights(int avx2, const uint32_t *e, uint32_t n, uint32_t from, const float *coef,
                         float *w, float *acc, uint32_t *own)
{
    return avx2 ? packed_weights_avx2(e, n, from, coef, w, acc, own)
                : packed_weights_portable(e, n, from, coef, w, acc, own);
}

/* (inline in the token loops; lda_list_find for the tests) */
static inline uint32_t list_find(const float *w, const float *acc, uint32_t n, double u)
{
    uint32_t lo = 0, hi = (n - 1) / 8; /* the first block with P_b > u */
    while (lo < hi) {
        const uint32_t mid = (lo + hi) / 2;
        if (lanes_total(acc + 8 * mid) > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    double v = u - (lo ? lanes_total(acc + 8 * (lo - 1)) : 0.0);
    const uint32_t end = 8 * lo + 8 < n ? 8 * lo + 8 : n;
    uint32_t last = 8 * lo;
    for (uint32_t x = 8 * lo; x < end; x++) {
        if (!(w[x] > 0))
            continue;
        if (v < w[x])
            return x;
        v -= w[x];
        last = x;
    }
    return last;
}

uint32_t lda_list_find(const float *w, const float *acc, uint32_t n, double u)
{
    return list_find(w, acc, n, u);
}

/* The entry of topic k in a list of n entries (tz readable to n rounded up
 * to 8), n when absent: 8 entries a compare. */
static inline uint32_t list_topic(const uint16_t *tz, uint32_t n, uint32_t k)
{
    const __m128i kv = _mm_set1_epi16((short)k);
    for (uint32_t x = 0; x < n; x += 8) {
        const __m128i e = _mm_loadu_si128((const __m128i *)(tz + x));
        const unsigned m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi16(e, kv));
        if (m) {
            const uint32_t at = x + (uint32_t)__builtin_ctz(m) / 2;
            return at < n ? at : n;
        }
    }
    return n;
}

uint32_t lda_list_topic(const uint16_t *tz, uint32_t n, uint32_t k)
{
    return list_topic(tz, n, k);
}

/* The entry of topic k in a packed list of n entries (readable to n
 * rounded up to 8), n when absent: 8 entries a round, the topics compared
 * as the entries' upper halves. */
static inline uint32_t packed_topic(const uint32_t *e, uint32_t n, uint32_t k)
{
    const __m128i kv = _mm_set1_epi32((int)(k << 16)), top = _mm_set1_epi32((int)0xffff0000u);
    for (uint32_t x = 0; x < n; x += 8) {
        const __m128i lo = _mm_and_si128(_mm_loadu_si128((const __m128i *)(e + x)), top);
        const __m128i hi = _mm_and_si128(_mm_loadu_si128((const __m128i *)(e + x + 4)), top);
        const unsigned m = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(lo, kv))) |
                           (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(hi, kv)))
                               << 4;
        if (m) {
            const uint32_t at = x + (uint32_t)__builtin_ctz(m);
            return at < n ? at : n;
        }
    }
    return n;
}

uint32_t lda_packed_topic(const uint32_t *e, uint32_t n, uint32_t k)
{
    return packed_topic(e, n, k);
}

/* A packed list with one count less at entry x, an entry of count 0
 * dropped (the last moves into its place); returns the entries. */
static inline uint32_t packed_drop(uint32_t *e, uint32_t n, uint32_t x)
{
    if ((--e[x] & 0xffff) == 0)
        e[x] = e[--n];
    return n;
}

/* The last r bucket (the weights and lane sums stay in the scratch): a
 * token of the same document and word right after a token that kept its
 * topic, and of that topic, sees the same list, counts and coef, so the
 * same bucket (a word's tokens run document by document: a repeated word
 * in a document is such a token about half the time). */
typedef struct bucket_memo {
    uint32_t doc, topic; /* doc: UINT32_MAX when nothing is kept */
    uint32_t own;
    double r;
} bucket_memo;

/* Token i's new topic; its old topic `from` is out of coef[from], and
 * `leaf` is alpha coef[from] without it (the tree's leaf still counts it:
 * lda_ftree_find_with draws as if it did not), but the document's list
 * (tz, tc, *n entries) still counts it: the r bucket takes it out of its
 * weight, and finds its entry on the way.  The list changes only when the
 * topic does: the old topic's count down (first, so an append always has
 * room), the new one's up. */
static inline uint32_t list_draw(const list_run *l, uint16_t *tz, uint32_t *tc, uint32_t *n,
                                 uint32_t from, double leaf, bucket_memo *b, int same,
                                 rt_wyrand *rng)
{
    const uint32_t dn = *n;
    if (!same) {
        b->r = l->avx2 ? r_weights_avx2(tz, tc, dn, from, l->coef, l->w, l->acc, &b->own)
                       : r_weights_portable(tz, tc, dn, from, l->coef, l->w, l->acc, &b->own);
    }
    const double r = b->r;
    const uint32_t xf = b->own;
    const double a = lda_ftree_total(l->tree) + (leaf - *lda_ftree_leaf(l->tree, from));
    const double u = rt_wyrand_uniform(rng) * (r + a);
    if (u < r) { /* the document's topics */
        const uint32_t x = list_find(l->w, l->acc, dn, u), k = tz[x];
        if (k != from) {
            tc[x]++;
            *n = list_drop(tz, tc, dn, xf);
        }
        return k;
    }
    const uint32_t k = lda_ftree_find_with(l->tree, u - r, from, leaf);
    if (k != from) {
        const uint32_t m = list_drop(tz, tc, dn, xf), x = list_topic(tz, m, k);
        if (x == m) {
            tz[m] = (uint16_t)k;
            tc[m] = 0;
        }
        tc[x]++;
        *n = x == m ? m + 1 : m;
    }
    return k;
}

/* list_draw on a packed list e (counts in 16 bits: a count never passes
 * its document's length, at most LDA_LIST_COUNT_MAX, so ++ stays in the
 * count). */
static inline uint32_t packed_draw(const list_run *l, uint32_t *e, uint32_t *n, uint32_t from,
                                   double leaf, bucket_memo *b, int same, rt_wyrand *rng)
{
    const uint32_t dn = *n;
    if (!same) { /* (the vector path called directly: one call a token, not two) */
        b->r = l->avx2 ? packed_weights_avx2(e, dn, from, l->coef, l->w, l->acc, &b->own)
                       : packed_weights_portable(e, dn, from, l->coef, l->w, l->acc, &b->own);
    }
    const double r = b->r;
    const uint32_t xf = b->own;
    const double a = lda_ftree_total(l->tree) + (leaf - *lda_ftree_leaf(l->tree, from));
    const double u = rt_wyrand_uniform(rng) * (r + a);
    if (u < r) { /* the document's topics */
        const uint32_t x = list_find(l->w, l->acc, dn, u), k = e[x] >> 16;
        if (k != from) {
            e[x]++;
            *n = packed_drop(e, dn, xf);
        }
        return k;
    }
    const uint32_t k = lda_ftree_find_with(l->tree, u - r, from, leaf);
    if (k != from) {
        const uint32_t m = packed_drop(e, dn, xf), x = packed_topic(e, m, k);
        if (x == m)
            e[m] = k << 16;
        e[x]++;
        *n = x == m ? m + 1 : m;
    }
    return k;
}

/* Word-major token i's document: tok_doc, or where z is doc-major (bypos:
 * lda_doc_layout) the document of its place (lda_doc_of). */
static inline uint32_t token_doc(const lda_tokens *t, uint64_t i, const int bypos)
{
    return bypos ? lda_doc_of(t, t->tok_pos[i]) : t->tok_doc[i];
}

/* Token i's document list into cache ahead of its draw: the list's place
 * and length (random in the documents) first, then, later, all of the list.
 * (z is word-major: the sweep streams it; doc-major, its topic comes with
 * the place.) */
static inline void prefetch_place(const lda_tokens *t, uint64_t i, const int bypos)
{
    const uint32_t d = token_doc(t, i, bypos);
    __builtin_prefetch(t->dnz_off + d);
    __builtin_prefetch(t->dnz_n + d);
    if (bypos)
        __builtin_prefetch(t->z + t->tok_pos[i], 1);
}

/* The lines of BYTES bytes at P, the last one's too when P is not line
 * aligned.  The addresses are integers: that line may start past the
 * object's end, where a pointer would be undefined even unread (and with
 * them as pointers GCC 12 -O2 emitted none of these prefetches). */
static inline void prefetch_bytes(const void *p, size_t bytes)
{
    const uintptr_t a = (uintptr_t)p;
    for (uintptr_t o = 0; o < bytes + 63; o += 64)
        __builtin_prefetch((const void *)(a + o), 1);
}

static inline void prefetch_list(const lda_tokens *t, uint64_t i, const int packed, const int bypos)
{
    const uint32_t d = token_doc(t, i, bypos), n = t->dnz_n[d];
    if (packed) {
        prefetch_bytes(t->dlist + t->dnz_off[d], n * sizeof(uint32_t));
    } else {
        prefetch_bytes(t->dnz + t->dnz_off[d], n * sizeof(uint16_t));
        prefetch_bytes(t->dnc + t->dnz_off[d], n * sizeof(uint32_t));
    }
}

/* The tokens [i, end) of the loaded word, on lists of either form (packed:
 * a constant, so each form's loop is compiled on its own), z word-major or
 * doc-major (bypos, likewise: lda_doc_layout). */
static inline void list_tokens(const list_run *l, uint64_t i, uint64_t end, rt_wyrand *rng_io,
                               const int packed, const int bypos)
{
    lda_tokens *t = l->t;
    bucket_memo memo = {.doc = UINT32_MAX};
    rt_wyrand g = *rng_io, *rng = &g; /* a local: its state can stay in a register */
    for (; i < end; i++) {
        if (i + 2 * LIST_PREFETCH < end)
            prefetch_place(t, i + 2 * LIST_PREFETCH, bypos);
        if (i + LIST_PREFETCH < end)
            prefetch_list(t, i + LIST_PREFETCH, packed, bypos);
        const uint64_t zi = bypos ? t->tok_pos[i] : i;
        const uint32_t d = token_doc(t, i, bypos), from = t->z[zi];
        const uint64_t o = t->dnz_off[d];
        uint32_t n = t->dnz_n[d];
        /* the draw sees coef[from] without the token; the counts and the
         * tree change only when the topic does (half the tokens keep it,
         * and their change would be undone at once) */
        const float kept = l->coef[from];
        const double c = (l->wd->nwk[from] - 1 + l->beta) / ((double)(l->nk[from] - 1) + l->vbeta);
        l->coef[from] = (float)c;
        const int same = d == memo.doc && from == memo.topic;
        memo.own = same ? memo.own : 0;
        const uint32_t k =
            packed ? packed_draw(l, t->dlist + o, &n, from, l->alpha * c, &memo, same, rng)
                   : list_draw(l, t->dnz + o, t->dnc + o, &n, from, l->alpha * c, &memo, same, rng);
        if (k == from) {
            l->coef[from] = kept;
            memo.doc = d;
            memo.topic = from;
            continue;
        }
        memo.doc = UINT32_MAX;
        lda_word_token_move(l->wd, l->nk, from, -1);
        lda_ftree_set(l->tree, from, l->alpha * c);
        word_move(l, k, +1);
        t->dnz_n[d] = n;
        t->z[zi] = (uint16_t)k;
    }
    *rng_io = g;
}

/* list_tokens compiled for each (bypos, packed): TOKENS[bypos][packed]. */
typedef void tokens_fn(const list_run *l, uint64_t i, uint64_t end, rt_wyrand *rng);
#define LIST_TOKENS(name, packed, bypos)                                                           \
    static void name(const list_run *l, uint64_t i, uint64_t end, rt_wyrand *rng)                  \
    {                                                                                              \
        list_tokens(l, i, end, rng, packed, bypos);                                                \
    }
LIST_TOKENS(wide_tokens, 0, 0)
LIST_TOKENS(packed_tokens, 1, 0)
LIST_TOKENS(wide_tokens_bypos, 0, 1)
LIST_TOKENS(packed_tokens_bypos, 1, 1)
#undef LIST_TOKENS
static tokens_fn *const TOKENS[2][2] = {{wide_tokens, packed_tokens},
                                        {wide_tokens_bypos, packed_tokens_bypos}};

int lda_visit_lists(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                    rt_rng *rng, rt_error *err)
{
    return lda_visit_lists_of(c, w, b, payload, s, rng, NULL, err);
}

int lda_visit_lists_of(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload,
                       lda_scratch *s, rt_rng *rng, const uint8_t *runs, rt_error *err)
{
    lda_tokens *t = &w->train;
    const uint32_t K = c->o->K;
    const list_run l = {.t = t,
                        .nk = w->nk,
                        .wd = &s->word,
                        .tree = &s->word_tree,
                        .coef = s->list_coef,
                        .w = s->list_w,
                        .acc = s->list_acc,
                        .avx2 = s->avx2,
                        .alpha = c->o->alpha,
                        .beta = c->o->beta,
                        .vbeta = c->vbeta};
    /* outside the loaded word's topics n_wk = 0; the sums afresh once a
     * visit (clearing the rounding of the last visit's changes) */
    for (uint32_t k = 0; k < K; k++) {
        const double idle = l.beta / ((double)l.nk[k] + l.vbeta);
        l.coef[k] = (float)idle;
        *lda_ftree_leaf(l.tree, k) = l.alpha * idle;
    }
    lda_ftree_build(l.tree);
    rt_wyrand g = {rt_rng_next(rng)}; /* the visit's draws (rt_wyrand_uniform) */
    tokens_fn *const tokens = TOKENS[t->tok_pos != NULL][t->dlist != NULL];
    for (uint64_t r = t->blk_run[b]; r < t->blk_run[b + 1]; r++) {
        if (runs && !runs[r - t->blk_run[b]])
            continue;
        uint32_t cap, j = t->run_word[r];
        uint32_t *slice = lda_word_slice(c, b, j, payload, &cap);
        lda_word_load(l.wd, K, slice, cap);
        for (uint32_t x = 0; x < l.wd->n_nz; x++)
            coef_update(&l, l.wd->nz[x]);
        const uint64_t beg = r == t->blk_run[b] ? t->blk_tok[b] : t->run_end[r - 1];
        tokens(&l, beg, t->run_end[r], &g);
        for (uint32_t x = 0; x < l.wd->n_nz; x++) /* back to n_wk = 0 */
            coef_set(&l, l.wd->nz[x], 0);
        if (lda_word_store(l.wd, K))
            return lda_overflow(b, j, err);
    }
    return 0;
}

int lda_list_scratch_init(lda_scratch *s, uint32_t K)
{
    s->list_coef = rt_alloc(K * sizeof(float));
    s->list_w = rt_alloc((K + 8) * sizeof(float));
    s->list_acc = rt_alloc((K + 8) * sizeof(float));
    return lda_ftree_init(&s->word_tree, K) || !s->list_coef || !s->list_w || !s->list_acc ? -1 : 0;
}

void lda_list_scratch_free(lda_scratch *s)
{
    lda_ftree_free(&s->word_tree);
    rt_free(s->list_coef);
    rt_free(s->list_w);
    rt_free(s->list_acc);
}
