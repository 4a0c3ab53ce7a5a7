/* lda_doc.c - the exact sampler above LDA_DENSE_K visited document-major
 * within a block visit (SparseLDA, Yao et al. 2009): word blocks still
 * travel the ring and documents stay home, but a visit takes the block's
 * tokens document by document, so the document's counts sit in a dense
 * scratch row while its tokens are drawn.  The full conditional
 *     p(k) ∝ (n_dk + alpha) (n_wk + beta) inv[k],   inv[k] = 1 / (n_k + V beta)
 * splits into
 *     q = sum over the word's topics  n_wk c[k],  c[k] = (n_dk + alpha) inv[k]
 *     r = beta sum over the document's topics  n_dk inv[k]
 *     s = alpha beta sum over all K  inv[k]
 * q is summed per token over the word's nonzero topics (the word's list,
 * packed as the payload's sparse slices: topic << 16 | count), r is kept
 * per document (a move changes two terms) and summed afresh when the
 * document's tokens of the block begin, s is kept as one sum summed
 * afresh each visit and drawn by rejection.  Every sum is a function of the visit's inputs
 * alone, so any split of the workers gives the same bits.
 *
 * Why: a token's cost is the word's nonzero topics (q), where the
 * word-major visit (lda_bucket.c) pays the document's (its r bucket): at
 * K = 1000 after 25 sweeps 26 / 21 / 30 against 58 / 63 / 72 entries a
 * token (KOS / AP / the synthetic corpus), and the document's counts stay
 * in cache while its tokens are drawn.  At K = 10000 a token's word has
 * more topics than its document (KOS: 80 against 52), so the words with
 * more topics than a mean document list are then drawn word-major, after
 * the others (visit_docs).  callgrind Ir a token, sweeps 25-26, against
 * the word-major visit alone: K = 1000 KOS 514 / 799; K = 10000 KOS 835 /
 * 861 (document-major alone: 503 and 1004). */
#include "apps/lda.h"
#include "apps/lda_simd.h"

#include <stdlib.h>
#include <string.h>

/* ---- the q bucket: the word's weights n_wk c[k] (the token's own entry
 * one count less) and their running sums, in float, 8 entries at a time
 * (AVX2 when the CPU has it, else a portable path doing the same IEEE
 * operations in the same order, so the bits do not depend on the machine):
 *     w_x = (float)(count_x - [topic_x is the token's old topic]) * c_f[topic_x]
 *     within a block of 8, each half of 4 summed serially: t_j = w_j + t_{j-1}
 *     the high half's after the low half's last: t_j = t_j + t_3   (j >= 4)
 *     pre_x = t_j + P,  P the last pre of the block before (+0 first)
 * The pre never fall (the weights are >= +0), so a draw u < pre_{n-1} = q
 * finds its entry by bisection: the first whose pre passes u (a weight of
 * +0 never does). ---- */
static float q_prefix_portable(const uint32_t *e, uint32_t n, uint32_t from, const float *cf,
                               float *pre, uint32_t *own)
{
    float base = 0;
    for (uint32_t x = 0; x < n; x += 8) {
        float t[8];
        for (uint32_t j = 0; j < 8; j++) {
            const uint32_t at = x + j, k = at < n ? e[at] >> 16 : 0, mine = at < n && k == from;
            t[j] = at < n ? (float)(int32_t)((e[at] & 0xffff) - mine) * cf[k] : 0.0f;
            *own = mine ? at : *own;
        }
        for (uint32_t j = 1; j < 4; j++) {
            t[j] = t[j] + t[j - 1];
            t[j + 4] = t[j + 4] + t[j + 3];
        }
        for (uint32_t j = 4; j < 8; j++)
            t[j] = t[j] + t[3];
        for (uint32_t j = 0; j < 8; j++)
            pre[x + j] = t[j] + base;
        base = pre[x + 7];
    }
    return n ? pre[n - 1] : 0.0f;
}

/* x's lanes one place up within each 128-bit half, +0 into the first. */
AVX2 static inline __m256 shift_lane_avx2(__m256 x)
{
    return _mm256_castsi256_ps(_mm256_slli_si256(_mm256_castps_si256(x), 4));
}

/* One block's running sums (the order above) after base, stored at pre + x:
 * v the block's entries (+0 in the lanes past the list), in its lanes in
 * the list, cf8 their topics' c.  Returns the last sum in every lane. */
AVX2 static inline __m256 q_block_avx2(__m256i v, __m256i in, uint32_t x, __m256i fv, __m256 cf8,
                                       __m256 base, float *pre, uint32_t *own)
{
    const __m256i mine = _mm256_and_si256(in, _mm256_cmpeq_epi32(_mm256_srli_epi32(v, 16), fv));
    const __m256i c = _mm256_add_epi32(_mm256_and_si256(v, _mm256_set1_epi32(0xffff)), mine);
    const __m256 w = _mm256_mul_ps(_mm256_cvtepi32_ps(c), cf8);
    const __m256 r1 = _mm256_add_ps(w, shift_lane_avx2(w));
    const __m256 r2 = _mm256_add_ps(w, shift_lane_avx2(r1));
    const __m256 t = _mm256_add_ps(w, shift_lane_avx2(r2));
    const __m256 l3 = _mm256_permute_ps(t, 0xff);
    const __m256 p = _mm256_add_ps(_mm256_add_ps(t, _mm256_permute2f128_ps(l3, l3, 0x08)), base);
    _mm256_storeu_ps(pre + x, p);
    const unsigned m = (unsigned)_mm256_movemask_ps(_mm256_castsi256_ps(mine));
    *own = m ? x + (uint32_t)__builtin_ctz(m) : *own;
    const __m256 top = _mm256_permute_ps(p, 0xff);
    return _mm256_permute2f128_ps(top, top, 0x11);
}

/* c[k] of eight packed entries' topics by eight broadcast loads blended
 * together, where lda_coef8_avx2 inserts them one by one: a broadcast from
 * memory needs no shuffle and a blend runs beside the shuffles, of which
 * the running sums need seven a block (q_prefix and q_block are ~40% of
 * visit_docs at K = 1000 and 10000, perf cpu-clock).  Paired tokens/s
 * (bench/lda_ab.sh, 4 rounds, load 14-17): K = 10000 synthetic 1.024, KOS
 * 1.126, AP 0.987; K = 1000 KOS 1.070, AP 1.022, synthetic 1.082.  The
 * same values, so the same bits. */
AVX2 static inline __m256 coef8_blend_avx2(const uint32_t *p, const float *c)
{
    const __m256 a = _mm256_blend_ps(_mm256_broadcast_ss(c + (p[0] >> 16)),
                                     _mm256_broadcast_ss(c + (p[1] >> 16)), 0x02);
    const __m256 b = _mm256_blend_ps(_mm256_broadcast_ss(c + (p[2] >> 16)),
                                     _mm256_broadcast_ss(c + (p[3] >> 16)), 0x08);
    const __m256 d = _mm256_blend_ps(_mm256_broadcast_ss(c + (p[4] >> 16)),
                                     _mm256_broadcast_ss(c + (p[5] >> 16)), 0x20);
    const __m256 e = _mm256_blend_ps(_mm256_broadcast_ss(c + (p[6] >> 16)),
                                     _mm256_broadcast_ss(c + (p[7] >> 16)), 0x80);
    return _mm256_blend_ps(_mm256_blend_ps(a, b, 0x0c), _mm256_blend_ps(d, e, 0xc0), 0xf0);
}

AVX2 static inline float q_prefix_avx2(const uint32_t *e, uint32_t n, uint32_t from,
                                       const float *cf, float *pre, uint32_t *own)
{
    const __m256i fv = _mm256_set1_epi32((int)from), all = _mm256_set1_epi32(-1);
    __m256 base = _mm256_setzero_ps();
    uint32_t x = 0;
    for (; x + 8 <= n; x += 8) {
        const uint32_t *p = e + x;
        const __m256 cf8 = coef8_blend_avx2(p, cf);
        base =
            q_block_avx2(_mm256_loadu_si256((const __m256i *)p), all, x, fv, cf8, base, pre, own);
    }
    if (x < n) { /* a masked load (a payload slice may end here); lanes past n: topic 0, +0 */
        const __m256i in = _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n - x)),
                                              _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
        const __m256i v = _mm256_maskload_epi32((const int *)(e + x), in);
        const __m256i k = _mm256_srli_epi32(v, 16);
        const __m256 cf8 = lda_coef8_masked_avx2(k, in, cf);
        base = q_block_avx2(v, in, x, fv, cf8, base, pre, own);
    }
    return _mm256_cvtss_f32(base);
}

/* The largest float <= u (u >= 0): pre[x] <= u exactly when pre[x] <= it.
 * Without a branch: rounding went up for about half the draws, a
 * mispredicted branch each. */
static inline float float_below(double u)
{
    float f = (float)u;
    uint32_t b;
    memcpy(&b, &f, sizeof(b));
    b -= (uint32_t)((double)f > u);
    memcpy(&f, &b, sizeof(f));
    return f;
}

/* How many of pre[0 .. n) are <= uf: the entry the draw picks (pre never
 * falls; 8 at a time).  The first Q_FIND_FLAT entries are all counted, with
 * no exit at the first block not wholly passed: that exit, at a random
 * block, was a mispredicted branch nearly every draw (serial CPU at
 * K = 1000 1.01-1.06x on KOS, 1.03x on AP, 1.06x on the synthetic corpus;
 * at K = 10000 1.02-1.06x and 1.07-1.09x); past them a longer list (more
 * blocks counted for nothing than a mispredict costs) stops there. */
#define Q_FIND_FLAT 64u
AVX2 static inline uint32_t q_find_avx2(const float *pre, uint32_t n, float uf)
{
    const __m256 uv = _mm256_set1_ps(uf);
    const uint32_t flat = n < Q_FIND_FLAT ? n : Q_FIND_FLAT;
    uint32_t c = 0, x = 0;
    for (; x < flat; x += 8)
        c += (uint32_t)__builtin_popcount(
            (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(pre + x), uv, _CMP_LE_OQ)));
    for (; c == x && x < n; x += 8)
        c += (uint32_t)__builtin_popcount(
            (unsigned)_mm256_movemask_ps(_mm256_cmp_ps(_mm256_loadu_ps(pre + x), uv, _CMP_LE_OQ)));
    return c;
}

/* The first entry x < n whose pre passes u (0 <= u < pre[n - 1]). */
static inline uint32_t q_find(const float *pre, uint32_t n, double u)
{
    uint32_t lo = 0, len = n;
    while (len > 1) {
        const uint32_t half = len / 2;
        lo += (double)pre[lo + half - 1] <= u ? half : 0;
        len -= half;
    }
    return lo;
}

/* A thread scratch array with room for n elements of size sz (its
 * contents are not kept: each visit fills what it reads); it grows to the
 * largest visit's once. */
static int grow(void **p, size_t *have, size_t n, size_t sz)
{
    if (n <= *have)
        return 0;
    rt_free(*p);
    *have = 0;
    if (!(*p = rt_alloc(n * sz)))
        return -1;
    *have = n;
    return 0;
}

int lda_doc_scratch_init(lda_scratch *s, uint32_t K)
{
    s->doc_ndk = rt_alloc(K * sizeof(int32_t));
    s->doc_pos = rt_alloc(K * sizeof(uint32_t));
    s->doc_inv = rt_alloc(K * sizeof(double));
    s->doc_invm = rt_alloc(K * sizeof(double));
    s->doc_rw = rt_alloc(K * sizeof(double));
    return s->doc_ndk && s->doc_pos && s->doc_inv && s->doc_invm && s->doc_rw ? 0 : -1;
}

void lda_doc_scratch_free(lda_scratch *s)
{
    rt_free(s->doc_ndk);
    rt_free(s->doc_pos);
    rt_free(s->doc_inv);
    rt_free(s->doc_invm);
    rt_free(s->doc_rw);
    rt_free(s->doc_views);
    rt_free(s->doc_room);
    rt_free(s->doc_dense);
    rt_free(s->doc_ord);
    rt_free(s->doc_cnt);
    rt_free(s->doc_wordmajor);
}

/* A word is drawn word-major when its topics outnumber this many mean
 * document lists: a document-major draw's q entry costs less than a
 * word-major draw's list entry plus its F+ tree (callgrind Ir/token, sweeps
 * 25-26, x1 -> x2: K = 10000 KOS 738.1 -> 727.3, AP 643.5 -> 633.6; K = 1000
 * KOS 480.3 -> 479.4, AP 440.8 -> 438.1; x4 at K = 10000 KOS: 859.3). */
#define WORD_MAJOR_LISTS 2.0

/* The mean nonzero topics of the worker's documents, a token's document
 * weighed (the list a word-major draw would sum). */
static double mean_doc_list(const lda_tokens *t)
{
    double sum = 0;
    for (uint32_t d = 0; d < t->n_docs; d++)
        sum += (double)t->dnz_n[d] * (double)(t->doc_off[d + 1] - t->doc_off[d]);
    return t->n_tokens ? sum / (double)t->n_tokens : 0.0;
}

/* The block's words, each either sampled document-major, as a list (u32
 * n, then n entries topic << 16 | count; a sparse slice is one already,
 * used in place; a dense slice's nonzero counts are listed in scratch,
 * with room for K + 8 entries: the kernels read whole blocks of 8, and put
 * back by views_store), or word-major (s->doc_wordmajor[r] = 1), where its
 * topics outnumber `lbar` (a draw then costs more in q than in the
 * word-major visit's document bucket: at K = 10000 on KOS a token's word
 * has 80 nonzero topics, its document 52) or a count could pass 16 bits
 * within the visit (the count now plus the word's tokens in the block: a
 * count of 0xffff gaining a token would carry into its entry's topic).
 * s->doc_room[r]: the entries the word's list has room for (a sparse
 * slice's cap - 1; a word has no more topics than tokens, so consistent
 * counts never fill it).  Returns the words sampled word-major, -1 on error. */
static int64_t views_load(const lda_ctx *c, const lda_tokens *t, uint32_t b, uint32_t *payload,
                          lda_scratch *s, double lbar, rt_error *err)
{
    const uint32_t K = c->o->K;
    const uint64_t r0 = t->blk_run[b], runs = t->blk_run[b + 1] - r0;
    uint64_t dense = 0;
    for (uint64_t r = r0; r < r0 + runs; r++)
        dense += c->layout->slice_cap[c->plan->block_col_offset[b] + t->run_word[r]] == 0;
    if (grow((void **)&s->doc_views, &s->doc_views_n, runs + 1, sizeof(uint32_t *)) ||
        grow((void **)&s->doc_room, &s->doc_room_n, runs + 1, sizeof(uint32_t)) ||
        grow((void **)&s->doc_wordmajor, &s->doc_wordmajor_n, runs + 1, 1) ||
        grow((void **)&s->doc_dense, &s->doc_dense_n, dense * (K + 9) + 1, sizeof(uint32_t)))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA document-major scratch)");
    uint32_t *at = s->doc_dense;
    int64_t word_major = 0;
    for (uint64_t r = 0; r < runs; r++) {
        uint32_t cap;
        const uint32_t j = t->run_word[r0 + r];
        uint32_t *slice = lda_word_slice(c, b, j, payload, &cap);
        /* the word's tokens in the block: the most a count gains in the visit */
        const uint64_t beg = r == 0 ? t->blk_tok[b] : t->run_end[r0 + r - 1];
        const uint64_t gain = t->run_end[r0 + r] - beg;
        uint32_t n = 0, fits = 1;
        if (cap) {
            n = slice[0];
            if (n >= cap) /* the q kernel would read the next word's slice */
                return lda_overflow(b, j, err);
        } else {
            for (uint32_t k = 0; k < K; k++) {
                fits &= slice[k] + gain <= 0xffff;
                at[1 + n] = k << 16 | slice[k];
                n += slice[k] != 0;
            }
            at[0] = n;
        }
        s->doc_wordmajor[r] = !fits || (double)n > lbar;
        word_major += s->doc_wordmajor[r];
        s->doc_views[r] = cap ? slice : at;
        s->doc_room[r] = cap ? cap - 1 : K + 8;
        at += !cap && !s->doc_wordmajor[r] ? K + 9 : 0;
    }
    return word_major;
}

static void views_store(const lda_ctx *c, const lda_tokens *t, uint32_t b, uint32_t *payload,
                        const lda_scratch *s)
{
    const uint32_t K = c->o->K;
    const uint64_t r0 = t->blk_run[b], runs = t->blk_run[b + 1] - r0;
    for (uint64_t r = 0; r < runs; r++) {
        uint32_t cap;
        uint32_t *slice = lda_word_slice(c, b, t->run_word[r0 + r], payload, &cap);
        if (cap || s->doc_wordmajor[r])
            continue;
        const uint32_t *v = s->doc_views[r];
        memset(slice, 0, K * sizeof(uint32_t));
        for (uint32_t x = 0; x < v[0]; x++)
            slice[v[1 + x] >> 16] = v[1 + x] & 0xffff;
    }
}

/* Block b's tokens counted by document and summed, the first half of a
 * stable counting sort: cnt[d] is where document d's tokens start and
 * cnt[d + 1] where they end; the runs r with skip[r - blk_run[b]] (drawn
 * word-major) are left out, none when skip is NULL.  cnt: n_docs + 1. */
static void doc_counts(const lda_tokens *t, uint32_t b, const uint8_t *skip, uint32_t *cnt)
{
    const uint64_t r0 = t->blk_run[b];
    memset(cnt, 0, ((size_t)t->n_docs + 1) * sizeof(uint32_t));
    for (uint64_t r = r0, i = t->blk_tok[b]; r < t->blk_run[b + 1]; i = t->run_end[r++])
        if (!skip || !skip[r - r0])
            for (; i < t->run_end[r]; i++)
                cnt[t->tok_doc[i] + 1]++;
    for (uint32_t d = 0; d < t->n_docs; d++)
        cnt[d + 1] += cnt[d];
}

/* The block's tokens of the words sampled document-major, by document (a
 * counting sort, stable: within a document in word-major order):
 * s->doc_ord gets (token - blk_tok[b], run - blk_run[b]) pairs, s->doc_cnt[d]
 * the end of document d's.  Returns how many. */
static int64_t doc_order(const lda_tokens *t, uint32_t b, lda_scratch *s, rt_error *err)
{
    const uint64_t base = t->blk_tok[b], ntok = t->blk_tok[b + 1] - base, r0 = t->blk_run[b];
    if (grow((void **)&s->doc_ord, &s->doc_ord_n, 2 * ntok + 10, sizeof(uint32_t)) ||
        grow((void **)&s->doc_cnt, &s->doc_cnt_n, (size_t)t->n_docs + 1, sizeof(uint32_t)))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA document-major scratch)");
    uint32_t *cnt = s->doc_cnt, *ord = s->doc_ord;
    const uint8_t *skip = s->doc_wordmajor;
    doc_counts(t, b, skip, cnt);
    uint64_t i = base;
    for (uint64_t r = r0; r < t->blk_run[b + 1]; r++) {
        if (skip[r - r0]) {
            i = t->run_end[r];
            continue;
        }
        for (; i < t->run_end[r]; i++) {
            const uint32_t at = cnt[t->tok_doc[i]]++;
            ord[2 * at] = (uint32_t)(i - base);
            ord[2 * at + 1] = (uint32_t)(r - r0);
        }
    }
    const uint32_t n = t->n_docs ? cnt[t->n_docs - 1] : 0;
    /* the token loop prefetches up to five pairs past its last (fewer than
     * ntok when words go word-major): pairs of the block's first token, not
     * an earlier block's leftovers */
    memset(ord + 2 * (size_t)n, 0, 10 * sizeof(uint32_t));
    return n;
}

/* Block b's documents as (document, first, end) z positions into seg
 * (NULL: only counted), in document order, from their tokens' places;
 * beg, end: n_docs scratch, beg all UINT32_MAX, left so.  Returns how many. */
static uint64_t block_segs(const lda_tokens *t, uint32_t b, uint32_t *beg, uint32_t *end,
                           uint32_t *seg)
{
    for (uint64_t i = t->blk_tok[b]; i < t->blk_tok[b + 1]; i++) {
        const uint32_t p = t->tok_pos[i], d = lda_doc_of(t, p);
        const int first = beg[d] == UINT32_MAX;
        beg[d] = first || p < beg[d] ? p : beg[d];
        end[d] = first || p + 1 > end[d] ? p + 1 : end[d];
    }
    uint64_t n = 0;
    for (uint32_t d = 0; d < t->n_docs; d++)
        if (beg[d] != UINT32_MAX) {
            if (seg) {
                seg[3 * n] = d;
                seg[3 * n + 1] = beg[d];
                seg[3 * n + 2] = end[d];
            }
            n++;
            beg[d] = UINT32_MAX;
        }
    return n;
}

/* lda_doc_order_build (lda.h): z doc-major (tok_pos), documents by
 * doc_step.  A document's tokens of a block are contiguous in z, in
 * word-major order (tokens_build deals them block by block, word by word),
 * so a segment in z order is doc_order's order. */
int lda_doc_order_build(lda_tokens *t, uint32_t blocks)
{
    uint32_t *beg = malloc(((size_t)t->n_docs + 1) * sizeof(uint32_t));
    uint32_t *end = malloc(((size_t)t->n_docs + 1) * sizeof(uint32_t));
    t->ord_run = calloc(t->n_tokens + LDA_DOC_ORDER_SLACK, sizeof(uint16_t));
    t->ord_seg_off = calloc((size_t)blocks + 1, sizeof(uint64_t));
    if (!beg || !end || !t->ord_run || !t->ord_seg_off)
        goto fail;
    memset(beg, 0xff, ((size_t)t->n_docs + 1) * sizeof(uint32_t));
    for (uint32_t b = 0; b < blocks; b++) {
        const uint64_t r0 = t->blk_run[b];
        for (uint64_t r = r0, i = t->blk_tok[b]; r < t->blk_run[b + 1]; r++)
            for (; i < t->run_end[r]; i++)
                t->ord_run[t->tok_pos[i]] = (uint16_t)(r - r0);
        t->ord_seg_off[b + 1] = t->ord_seg_off[b] + block_segs(t, b, beg, end, NULL);
    }
    t->ord_seg = malloc((3 * t->ord_seg_off[blocks] + 1) * sizeof(uint32_t));
    if (!t->ord_seg)
        goto fail;
    for (uint32_t b = 0; b < blocks; b++)
        block_segs(t, b, beg, end, t->ord_seg + 3 * t->ord_seg_off[b]);
    free(beg);
    free(end);
    return 0;
fail:
    free(beg);
    free(end);
    return -1;
}

/* Cache lines of a word's list the token loop prefetches two tokens ahead:
 * at K = 10000 a document-major token's list holds ~100 entries (7 lines)
 * and the block's lists (~2 MB on the synthetic corpus) do not stay in L2,
 * so the two lines fetched before left the q bucket's loads waiting on the
 * rest (16% of visit_docs' samples on them, perf cpu-clock).  8 against 2,
 * with the next document's list (visit_docs): paired tokens/s at K = 10000
 * 1.14x (synthetic), 1.11x (KOS), 1.15x (AP), medians of 3 rounds in
 * cecf7bc's message (its script was off-tree; `bench/lda_ab.sh --corpora
 * kos,ap,synthetic --topics 10000` with a 2-line build as --a redoes it);
 * 4 or 12 lines were no better than 8 (s19's closing note, 3 rounds).  A
 * prefetch past a short list's end cannot fault; its address is an integer
 * (doc_tokens). */
#define LIST_LINES_AHEAD 8

/* What a visit's token loop reads and keeps. */
typedef struct doc_run {
    lda_tokens *t;
    int64_t *nk;
    double *inv;    /* K: 1 / (n_k + V beta), exact */
    double *invm;   /* K: 1 / (n_k - 1 + V beta): inv without a token of k (no divide a token) */
    float *cf;      /* K: c[k] = (n_dk + alpha) inv[k] of the current document, in float */
    int32_t *ndk;   /* K: the current document's counts (0 outside it) */
    uint32_t *dpos; /* K: a topic's entry in the current document's list */
    double *rw;     /* n_dk inv[k] by the current document's list entries (dpos) */
    float *pre;     /* the q bucket's running sums (K + 8) */
    uint32_t **view;
    const uint32_t *room; /* entries each view has room for */
    double s_sum;         /* s = alpha beta s_sum: the sum of inv over all K */
    double inv_max;       /* >= every inv[k] (it only grows within a visit) */
    uint32_t K;
    double alpha, beta, vbeta, ab;
    const uint16_t *runs; /* the static order: t->ord_run */
    const uint8_t *skip;  /* the static order: the runs drawn word-major */
} doc_run;

/* A visit's tokens in document order: doc_order's pairs (q indexes them;
 * z word-major), or the static order (q is the token's place in z,
 * doc-major; t->ord_run its run), as it is or with the runs drawn
 * word-major skipped (the first sweeps at K = 1000); either way the same
 * tokens in the same order, so the same draws.  AHEAD(k): the visit's k-th
 * token after q's, for the prefetches (in the static order past a
 * document's end: in the next document's, nb .. ne, clamped there). */
#define ORDER_PAIRS 0
#define ORDER_STATIC 1
#define ORDER_SKIP 2
#define ORD_SLOT(q) (order == ORDER_PAIRS ? base + ord[2 * (q)] : (q))
#define ORD_RUN(q) (order == ORDER_PAIRS ? ord[2 * (q) + 1] : (uint32_t)l->runs[q])
#define AHEAD(q, k) (order == ORDER_PAIRS ? (q) + (k) : ahead((q) + (k), end, nb, ne))
static inline uint32_t ahead(uint32_t q, uint32_t end, uint32_t nb, uint32_t ne)
{
    const uint32_t n = nb + (q - end);
    return q < end ? q : n < ne ? n : ne - 1;
}

/* ---- the s bucket: alpha beta inv[k] over all K, drawn by rejection: a
 * topic uniform in K kept with probability inv[k] / inv_max, else another
 * (exact for any bound >= every inv[k]; the bound is the largest inv at the
 * visit's start, raised as a topic loses a token).  inv[k] = 1 / (n_k +
 * V beta) is nearly flat in k (at K = 10000 on KOS most n_k are within a
 * few times V beta), so a draw takes a few tries where a scan of the
 * running sums took ~800 instructions (9% of the draws at K = 10000), and
 * a move updates one sum instead of a leaf, its run and the total.  After
 * S_TRIES refusals (a corpus where one topic holds far fewer tokens than
 * the rest) a scan over K finishes the draw: still exact, as a try's
 * acceptance does not depend on the topic it would give.  Only s_sum is
 * kept by differences; it is summed afresh each visit. ---- */
#define S_TRIES 32
/* Uniform in [0, n), unbiased: a 32-bit draw times n, refusing the low
 * products that would favour some values (Lemire 2019; the visit's draws: rt_wyrand_uniform). */
static inline uint32_t wy_below(rt_wyrand *g, uint32_t n)
{
    uint64_t m = (rt_wyrand_next(g) >> 32) * n;
    if ((uint32_t)m < n) {
        const uint32_t t = -n % n;
        while ((uint32_t)m < t)
            m = (rt_wyrand_next(g) >> 32) * n;
    }
    return (uint32_t)(m >> 32);
}

/* The topic where u falls among inv (f's at invf) by a scan; rounding
 * past the sum takes the last topic. */
static uint32_t s_scan(const double *inv, uint32_t K, uint32_t f, double invf, rt_wyrand *rng)
{
    double sum = 0;
    for (uint32_t k = 0; k < K; k++)
        sum += k == f ? invf : inv[k];
    double u = rt_wyrand_uniform(rng) * sum;
    for (uint32_t k = 0; k < K; k++) {
        const double w = k == f ? invf : inv[k];
        if (u < w)
            return k;
        u -= w;
    }
    return K - 1;
}

/* lda_doc_s_draw (lda.h). */
static uint32_t s_draw(const double *inv, uint32_t K, double inv_max, uint32_t f, double invf,
                       rt_wyrand *rng)
{
    const double bound = invf > inv_max ? invf : inv_max;
    for (uint32_t n = 0; n < S_TRIES; n++) {
        const uint32_t k = wy_below(rng, K);
        if (rt_wyrand_uniform(rng) * bound < (k == f ? invf : inv[k]))
            return k;
    }
    return s_scan(inv, K, f, invf, rng);
}

/* The r bucket's draw: the document's topic where v (u / beta) falls
 * among its list's weights rw (n_dk inv[k]; the token's own entry xf
 * read as wf, its weight without it), summed in the list's order
 * (rounding past the sum: the last of weight).  The weights are kept
 * beside the list, not gathered from the K-wide rows: at K = 10000 a
 * third of the draws scan a list of ~50 entries.  wf is not stored into
 * rw for the scan: a store just before the loads that read it cost more
 * time than the gathers saved (CPU A/B, 0.93-0.98x). */
static inline uint32_t r_find(const uint32_t *e, const double *rw, uint32_t dn, uint32_t xf,
                              double wf, double v)
{
    double acc = 0;
    uint32_t x = 0;
    for (; x < xf; x++)
        if (v < (acc += rw[x]))
            return e[x] >> 16;
    if (v < (acc += wf))
        return e[xf] >> 16;
    for (x = xf + 1; x < dn; x++)
        if (v < (acc += rw[x]))
            return e[x] >> 16;
    for (x = dn - 1; x && !((x == xf ? wf : rw[x]) > 0); x--)
        ;
    return e[x] >> 16;
}

/* The entry of topic k in a word's list of n entries, n when absent (8
 * entries a compare; the tail one by one: a payload slice may end there). */
static inline uint32_t word_topic(const uint32_t *e, uint32_t n, uint32_t k)
{
    const __m128i kv = _mm_set1_epi32((int)(k << 16)), top = _mm_set1_epi32((int)0xffff0000u);
    uint32_t x = 0;
    for (; x + 8 <= n; x += 8) {
        const __m128i lo = _mm_and_si128(_mm_loadu_si128((const __m128i *)(e + x)), top);
        const __m128i hi = _mm_and_si128(_mm_loadu_si128((const __m128i *)(e + x + 4)), top);
        const unsigned m = (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(lo, kv))) |
                           (unsigned)_mm_movemask_ps(_mm_castsi128_ps(_mm_cmpeq_epi32(hi, kv)))
                               << 4;
        if (m)
            return x + (uint32_t)__builtin_ctz(m);
    }
    for (; x < n && e[x] >> 16 != k; x++)
        ;
    return x;
}

/* lda_doc_word_gain (lda.h). */
static inline int word_gain(uint32_t *v, uint32_t room, uint32_t x, uint32_t k)
{
    if (x == v[0]) {
        if (v[0] >= room)
            return -1;
        v[1 + v[0]++] = k << 16;
    }
    v[1 + x]++;
    return 0;
}

/* Document d's tokens p .. end of the visit (ord pairs, base the block's
 * first token; or z places, nb .. ne the next document's): its list into
 * the dense row, r summed afresh, then each token drawn from its full
 * conditional (counts without it); the list back.  Returns -1 - r when the
 * list of the block's run r had no room (corrupt counts; the visit then
 * fails), else 0. */
static inline __attribute__((always_inline)) int64_t
doc_tokens(doc_run *l, uint32_t d, const uint32_t *ord, uint32_t p, uint32_t end, uint32_t nb,
           uint32_t ne, uint64_t base, rt_wyrand *rng, const int avx2, const int order)
{
    lda_tokens *t = l->t;
    int64_t *nk = l->nk;
    double *inv = l->inv;
    float *cf = l->cf;
    int32_t *ndk = l->ndk;
    const double alpha = l->alpha, beta = l->beta, vbeta = l->vbeta, ab = l->ab;
    uint32_t *e = t->dlist + t->dnz_off[d], dn = t->dnz_n[d];
    double *rw = l->rw;
    double rsum = 0; /* sum over the list of n_dk inv[k] (r = beta rsum) */
    for (uint32_t x = 0; x < dn; x++) {
        const uint32_t k = e[x] >> 16, n = e[x] & 0xffff;
        ndk[k] = (int32_t)n;
        l->dpos[k] = x;
        cf[k] = (float)((n + alpha) * inv[k]);
        rw[x] = (int32_t)n * inv[k];
        rsum += rw[x];
    }
    /* the last q bucket stays valid after a token of the same word that
     * kept its topic, for a token of that topic (nothing changed) */
    uint32_t memo_run = UINT32_MAX, memo_topic = 0, own = 0;
    float q = 0;
    for (; p < end; p++) {
        const uint64_t i = ORD_SLOT(p);
        const uint32_t r = ORD_RUN(p);
        if (order == ORDER_SKIP && l->skip[r])
            continue;
        const uint32_t f = t->z[i];
        uint32_t *v = l->view[r];
        /* the tokens ahead: the topic (doc_order's: at word-major places,
         * scattered; the static order's are in order) and list pointer four
         * tokens ahead, the list's first LIST_LINES_AHEAD lines two ahead
         * (the line count: see LIST_LINES_AHEAD).  The addresses are
         * integers: a line past a short list's end is no object's, and a
         * pointer there would be undefined even unread. */
        if (order == ORDER_PAIRS)
            __builtin_prefetch(t->z + ORD_SLOT(p + 4));
        __builtin_prefetch(l->view + ORD_RUN(AHEAD(p, 4)));
        const uintptr_t next = (uintptr_t)l->view[ORD_RUN(AHEAD(p, 2))];
        for (uintptr_t j = 0; j < LIST_LINES_AHEAD; j++)
            __builtin_prefetch((const void *)(next + 64 * j));
        /* the token's topic f without it: these, where a move keeps them */
        const int32_t nf = ndk[f];
        const double invf = l->invm[f];
        const float cff = (float)((nf - 1 + alpha) * invf), kept = cf[f];
        const double rs = rsum + ((nf - 1) * invf - nf * inv[f]);
        cf[f] = cff;
        if (!(r == memo_run && f == memo_topic)) {
            own = 0;
            q = avx2 ? q_prefix_avx2(v + 1, v[0], f, cf, l->pre, &own)
                     : q_prefix_portable(v + 1, v[0], f, cf, l->pre, &own);
        }
        const double s_tot = ab * (l->s_sum + (invf - inv[f]));
        double u = rt_wyrand_uniform(rng) * (q + beta * rs + s_tot);
        uint32_t k, xq = UINT32_MAX; /* k's entry in the word's list, when drawn in q */
        if (u < q) {
            xq = avx2 ? q_find_avx2(l->pre, v[0], float_below(u)) : q_find(l->pre, v[0], u);
            k = v[1 + xq] >> 16;
        } else if ((u -= q) < beta * rs) {
            k = r_find(e, rw, dn, l->dpos[f], (nf - 1) * invf, u / beta);
        } else {
            k = s_draw(inv, l->K, l->inv_max, f, invf, rng);
        }
        if (k == f) {
            cf[f] = kept;
            memo_run = r;
            memo_topic = f;
            continue;
        }
        memo_run = UINT32_MAX;
        /* f loses the token: the word's entry (the last into its place at
         * count 0), the document's (likewise), the totals */
        nk[f]--;
        l->s_sum += invf - inv[f];
        l->inv_max = invf > l->inv_max ? invf : l->inv_max;
        inv[f] = invf;
        l->invm[f] = 1.0 / ((double)(nk[f] - 1) + vbeta);
        ndk[f] = nf - 1;
        rsum = rs;
        if ((--v[1 + own] & 0xffff) == 0) {
            const uint32_t last = --v[0];
            v[1 + own] = v[1 + last];
            xq = xq == last ? own : xq;
        }
        rw[l->dpos[f]] = (nf - 1) * invf;
        if (nf == 1) {
            const uint32_t x = l->dpos[f], lastk = e[--dn] >> 16;
            e[x] = lastk << 16;
            rw[x] = rw[dn];
            l->dpos[lastk] = x;
        }
        /* k gains it */
        const int32_t nkk = ndk[k];
        const double invk_old = inv[k];
        nk[k]++;
        l->invm[k] = invk_old;
        inv[k] = 1.0 / ((double)nk[k] + vbeta);
        l->s_sum += inv[k] - invk_old;
        ndk[k] = nkk + 1;
        cf[k] = (float)((nkk + 1 + alpha) * inv[k]);
        rsum += (nkk + 1) * inv[k] - nkk * invk_old;
        if (nkk == 0) {
            e[dn] = k << 16;
            l->dpos[k] = dn++;
        }
        rw[l->dpos[k]] = (nkk + 1) * inv[k];
        const uint32_t x = xq != UINT32_MAX ? xq : word_topic(v + 1, v[0], k);
        if (word_gain(v, l->room[r], x, k))
            return -1 - (int64_t)r;
        t->z[i] = (uint16_t)k;
    }
    /* the list's counts from the row; the row and c back to n_dk = 0 */
    for (uint32_t x = 0; x < dn; x++) {
        const uint32_t k = e[x] >> 16;
        e[x] = k << 16 | (uint32_t)ndk[k];
        ndk[k] = 0;
        cf[k] = (float)(alpha * inv[k]);
    }
    t->dnz_n[d] = dn;
    return 0;
}

/* The next document's list while this one's tokens are drawn (its setup
 * loop read it cold: 4% of visit_docs' samples at K = 10000). */
static inline void prefetch_list(const lda_tokens *t, uint32_t d)
{
    const uint32_t *next = t->dlist + t->dnz_off[d];
    for (uint32_t j = 0; j < t->dnz_n[d]; j += 16)
        __builtin_prefetch(next + j);
}

/* The lines of [lo, hi) (an integer address each: hi may be an array's end). */
static inline void prefetch_span(const uint16_t *lo, const uint16_t *hi)
{
    for (uintptr_t a = (uintptr_t)lo & ~(uintptr_t)63; a < (uintptr_t)hi; a += 64)
        __builtin_prefetch((const void *)a);
}

/* The visit's documents in doc_order's order (its pairs, ntok of them);
 * doc_tokens' return. */
static inline __attribute__((always_inline)) int64_t sorted_docs(doc_run *l, lda_tokens *t,
                                                                 uint32_t b, const lda_scratch *s,
                                                                 int64_t ntok, rt_wyrand *g,
                                                                 const int avx2)
{
    const uint64_t base = t->blk_tok[b];
    for (uint32_t d = 0, p = 0; d < t->n_docs && p < ntok; d++) {
        const uint32_t end = s->doc_cnt[d];
        if (d + 1 < t->n_docs)
            prefetch_list(t, d + 1);
        const int64_t full =
            p < end ? doc_tokens(l, d, s->doc_ord, p, end, 0, 0, base, g, avx2, ORDER_PAIRS) : 0;
        if (full)
            return full;
        p = end;
    }
    return 0;
}

/* The same documents and tokens in the static order (their places in z):
 * the runs drawn word-major skipped where there are any. */
static inline __attribute__((always_inline)) int64_t
static_docs(doc_run *l, lda_tokens *t, uint32_t b, int64_t word_major, rt_wyrand *g, const int avx2)
{
    const uint64_t n = t->ord_seg_off[b + 1] - t->ord_seg_off[b];
    const uint32_t *seg = t->ord_seg + 3 * t->ord_seg_off[b];
    for (uint64_t x = 0; x < n; x++, seg += 3) {
        const uint32_t d = seg[0], p = seg[1], end = seg[2];
        /* the next document's places (the last: its own last token) */
        const uint32_t nb = x + 1 < n ? seg[4] : end - 1, ne = x + 1 < n ? seg[5] : end;
        if (x + 1 < n)
            prefetch_list(t, seg[3]);
        /* the topics and runs of the document after next: a document's
         * place in z jumps past its tokens of the other blocks, beyond
         * what the hardware prefetcher follows */
        if (x + 2 < n) {
            prefetch_span(t->z + seg[7], t->z + seg[8]);
            prefetch_span(t->ord_run + seg[7], t->ord_run + seg[8]);
        }
        const int64_t full = word_major
                                 ? doc_tokens(l, d, NULL, p, end, nb, ne, 0, g, avx2, ORDER_SKIP)
                                 : doc_tokens(l, d, NULL, p, end, nb, ne, 0, g, avx2, ORDER_STATIC);
        if (full)
            return full;
    }
    return 0;
}

static inline __attribute__((always_inline)) int visit_docs(const lda_ctx *c, lda_worker *w,
                                                            uint32_t b, uint32_t *payload,
                                                            lda_scratch *s, rt_rng *rng,
                                                            rt_error *err, const int avx2)
{
    lda_tokens *t = &w->train;
    const uint32_t K = c->o->K;
    const int64_t word_major =
        views_load(c, t, b, payload, s, WORD_MAJOR_LISTS * mean_doc_list(t), err);
    /* the static order where it was built (no sort a visit), else doc_order */
    const int stat = t->ord_run != NULL;
    const int64_t ntok = word_major < 0 ? -1 : stat ? 0 : doc_order(t, b, s, err);
    if (ntok < 0)
        return -1;
    doc_run l = {.t = t,
                 .nk = w->nk,
                 .inv = s->doc_inv,
                 .invm = s->doc_invm,
                 .cf = s->list_coef,
                 .ndk = s->doc_ndk,
                 .dpos = s->doc_pos,
                 .rw = s->doc_rw,
                 .pre = s->list_w,
                 .view = s->doc_views,
                 .room = s->doc_room,
                 .K = K,
                 .alpha = c->o->alpha,
                 .beta = c->o->beta,
                 .vbeta = c->vbeta,
                 .ab = c->o->alpha * c->o->beta,
                 .runs = t->ord_run,
                 .skip = s->doc_wordmajor};
    /* every sum afresh each visit (clearing the last visit's rounding) */
    for (uint32_t k = 0; k < K; k++) {
        l.inv[k] = 1.0 / ((double)l.nk[k] + l.vbeta);
        l.invm[k] = 1.0 / ((double)(l.nk[k] - 1) + l.vbeta);
        l.cf[k] = (float)(l.alpha * l.inv[k]);
        l.s_sum += l.inv[k];
        l.inv_max = l.inv[k] > l.inv_max ? l.inv[k] : l.inv_max;
    }
    rt_wyrand g = {rt_rng_next(rng)};
    const int64_t full = stat ? static_docs(&l, t, b, word_major, &g, avx2)
                              : sorted_docs(&l, t, b, s, ntok, &g, avx2);
    if (full)
        return lda_overflow(b, t->run_word[t->blk_run[b] + (uint64_t)(-1 - full)], err);
    views_store(c, t, b, payload, s);
    /* then the words with many topics, word-major (their counts unchanged so far) */
    return word_major ? lda_visit_lists_of(c, w, b, payload, s, rng, s->doc_wordmajor, err) : 0;
}

AVX2 static int visit_docs_avx2(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload,
                                lda_scratch *s, rt_rng *rng, rt_error *err)
{
    return visit_docs(c, w, b, payload, s, rng, err, 1);
}

static int visit_docs_portable(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload,
                               lda_scratch *s, rt_rng *rng, rt_error *err)
{
    return visit_docs(c, w, b, payload, s, rng, err, 0);
}

int lda_visit_docs(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                   rt_rng *rng, rt_error *err)
{
    if (!w->train.dlist || w->train.blk_tok[b + 1] - w->train.blk_tok[b] >= UINT32_MAX)
        return lda_visit_lists(c, w, b, payload, s, rng, err);
    return (s->avx2 ? visit_docs_avx2 : visit_docs_portable)(c, w, b, payload, s, rng, err);
}

/* The kernels for the tests (lda.h). */
AVX2 static float q_weights_avx2_call(const uint32_t *e, uint32_t n, uint32_t from, const float *cf,
                                      float *pre, uint32_t *own)
{
    return q_prefix_avx2(e, n, from, cf, pre, own);
}

AVX2 static uint32_t q_find_avx2_call(const float *pre, uint32_t n, double u)
{
    return q_find_avx2(pre, n, float_below(u));
}

float lda_doc_q_weights(int avx2, const uint32_t *e, uint32_t n, uint32_t from, const float *cf,
                        float *pre, uint32_t *own)
{
    return avx2 ? q_weights_avx2_call(e, n, from, cf, pre, own)
                : q_prefix_portable(e, n, from, cf, pre, own);
}

uint32_t lda_doc_q_find(int avx2, const float *pre, uint32_t n, double u)
{
    return avx2 ? q_find_avx2_call(pre, n, u) : q_find(pre, n, u);
}

uint32_t lda_doc_word_topic(const uint32_t *e, uint32_t n, uint32_t k)
{
    return word_topic(e, n, k);
}

int lda_doc_word_gain(uint32_t *v, uint32_t room, uint32_t x, uint32_t k)
{
    return word_gain(v, room, x, k);
}

uint32_t lda_doc_s_draw(const double *inv, uint32_t K, double inv_max, uint32_t f, double invf,
                        rt_wyrand *rng)
{
    return s_draw(inv, K, inv_max, f, invf, rng);
}
