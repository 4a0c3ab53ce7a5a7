/* lda_kernels_test.c - LDA building blocks without the engine: word slices
 * (sparse and dense) moving between a payload and thread scratch, overflow
 * detection, the Griffiths & Steyvers log-likelihood parts against a
 * direct computation, and the dense full conditional's weights (the same
 * bits on both code paths) and draw, and the list sampler's F+ tree and r
 * bucket. */
#include "apps/lda.h"

#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#define NK 16

/* One block of three words: tokens 3 (sparse, cap 4), 20 (dense), 1 (sparse). */
static uint64_t col_off[2] = {0, 3};
static uint32_t col_ids[3] = {0, 1, 2};
static uint64_t tokens[3] = {3, 20, 1};
static uint64_t slice_off[3], block_u32[1];
static uint32_t slice_cap[3];

static void make(rt_plan *plan, lda_layout *l)
{
    memset(plan, 0, sizeof(*plan));
    plan->blocks = 1;
    plan->n_cols = 3;
    plan->block_col_offset = col_off;
    plan->block_col_ids = col_ids;
    memset(l, 0, sizeof(*l));
    l->K = NK;
    l->blocks = 1;
    l->tokens = tokens;
    l->slice_off = slice_off;
    l->slice_cap = slice_cap;
    l->block_u32 = block_u32;
    uint64_t off = RT_LDA_HEADER_U32;
    for (int i = 0; i < 3; i++) {
        slice_cap[i] = 2 * (tokens[i] + 1) < NK ? (uint32_t)tokens[i] + 1 : 0;
        slice_off[i] = off;
        off += slice_cap[i] ? slice_cap[i] : NK;
    }
    block_u32[0] = off;
}

static void test_slices(void **state)
{
    (void)state;
    rt_plan plan;
    lda_layout l;
    make(&plan, &l);
    assert_int_equal(slice_cap[0], 4);
    assert_int_equal(slice_cap[1], 0);
    assert_int_equal(slice_cap[2], 2);
    uint32_t payload[64];
    size_t len = lda_payload_init(&l, &plan, 0, payload);
    assert_int_equal(len, block_u32[0] * 4);
    rt_error err;
    assert_int_equal(lda_payload_check(&l, 0, payload, len, &err), 0);
    assert_int_equal(lda_payload_check(&l, 0, payload, len - 4, &err), -1);

    lda_scratch s;
    assert_int_equal(lda_scratch_init(&s, NK, LDA_SCRATCH_ALL), 0);
    /* sparse word 0: put 2 tokens on topic 5, one on topic 1 */
    lda_word_load(&s.word, NK, payload + slice_off[0], slice_cap[0]);
    assert_int_equal(s.word.n_nz, 0);
    int topics0[3] = {5, 1, 5};
    for (int i = 0; i < 3; i++) {
        lda_word_nz_add(&s.word, (uint32_t)topics0[i]);
        s.word.nwk[topics0[i]]++;
    }
    assert_int_equal(lda_word_store(&s.word, NK), 0);
    for (int k = 0; k < NK; k++)
        assert_int_equal(s.word.nwk[k], 0); /* scratch reset */
    assert_int_equal(payload[slice_off[0]], 2);
    /* dense word 1 */
    lda_word_load(&s.word, NK, payload + slice_off[1], 0);
    s.word.nwk[7] = 20;
    lda_word_nz_add(&s.word, 7);
    assert_int_equal(lda_word_store(&s.word, NK), 0);
    assert_int_equal(payload[slice_off[1] + 7], 20);
    /* reload word 0 and move one token from 5 to 2 (the sampler's pattern) */
    lda_word_load(&s.word, NK, payload + slice_off[0], slice_cap[0]);
    assert_int_equal(s.word.n_nz, 2);
    assert_int_equal(s.word.nwk[5], 2);
    assert_int_equal(s.word.nwk[1], 1);
    s.word.nwk[5]--;
    s.word.nwk[2]++;
    lda_word_nz_add(&s.word, 2);
    assert_int_equal(lda_word_store(&s.word, NK), 0);
    lda_word_load(&s.word, NK, payload + slice_off[0], slice_cap[0]);
    assert_int_equal(s.word.n_nz, 3);
    assert_int_equal(s.word.nwk[5] + s.word.nwk[1] + s.word.nwk[2], 3);
    lda_word_nz_remove(&s.word, 1); /* drop topic 1 from the list */
    s.word.nwk[1] = 0;
    assert_int_equal(lda_word_store(&s.word, NK), 0);
    assert_int_equal(payload[slice_off[0]], 2);
    /* word 2 has one token: two topics would overflow its slice */
    lda_word_load(&s.word, NK, payload + slice_off[2], slice_cap[2]);
    s.word.nwk[0] = 1;
    s.word.nwk[3] = 1;
    lda_word_nz_add(&s.word, 0);
    lda_word_nz_add(&s.word, 3);
    assert_int_equal(lda_word_store(&s.word, NK), -1);
    lda_scratch_free(&s);
}

static void test_log_joint(void **state)
{
    (void)state;
    rt_plan plan;
    lda_layout l;
    make(&plan, &l);
    const double alpha = 0.3, beta = 0.05;
    /* two documents of the three words; random topics */
    uint32_t doc_words[2][6] = {{0, 0, 1, 1, 1, 2}, {1, 1, 1, 1, 0, 1}};
    int32_t ndk[2 * NK] = {0}, nwk[3 * NK] = {0};
    int64_t nk[NK] = {0};
    rt_rng rng;
    rt_rng_seed(&rng, 3, 4);
    for (int d = 0; d < 2; d++)
        for (int i = 0; i < 6; i++) {
            uint32_t k = (uint32_t)rt_rng_below(&rng, NK), w = doc_words[d][i];
            ndk[d * NK + k]++;
            nwk[w * NK + k]++;
            nk[k]++;
        }
    /* payload from nwk (slices sized for these counts: word 0 has 3 tokens) */
    tokens[0] = 3, tokens[1] = 8, tokens[2] = 1;
    make(&plan, &l);
    uint32_t payload[64];
    lda_payload_init(&l, &plan, 0, payload);
    lda_scratch s;
    assert_int_equal(lda_scratch_init(&s, NK, LDA_SCRATCH_ALL), 0);
    for (int w = 0; w < 3; w++) {
        lda_word_load(&s.word, NK, payload + slice_off[w], slice_cap[w]);
        for (int k = 0; k < NK; k++)
            if (nwk[w * NK + k]) {
                s.word.nwk[k] = nwk[w * NK + k];
                lda_word_nz_add(&s.word, (uint32_t)k);
            }
        assert_int_equal(lda_word_store(&s.word, NK), 0);
    }
    lda_scratch_free(&s);
    lda_tokens t = {0};
    uint64_t doc_off[3] = {0, 6, 12};
    t.n_docs = 2;
    t.doc_off = doc_off;
    t.ndk = ndk;
    double got =
        lda_log_joint(NK, 3, 2, alpha, beta, nk, lda_block_word_lgamma(&l, &plan, 0, payload, beta),
                      lda_worker_doc_lgamma(&t, NK, alpha));
    /* direct: log p(w|z) + log p(z) as products of Dirichlet-multinomials */
    double want = 0;
    for (int k = 0; k < NK; k++) {
        want += lgamma(3 * beta) - lgamma(nk[k] + 3 * beta);
        for (int w = 0; w < 3; w++)
            want += lgamma(nwk[w * NK + k] + beta) - lgamma(beta);
    }
    for (int d = 0; d < 2; d++) {
        want += lgamma(NK * alpha) - lgamma(6 + NK * alpha);
        for (int k = 0; k < NK; k++)
            want += lgamma(ndk[d * NK + k] + alpha) - lgamma(alpha);
    }
    assert_true(fabs(got - want) < 1e-9 * fabs(want));
    tokens[0] = 3, tokens[1] = 20, tokens[2] = 1;
}

static void test_stream(void **state)
{
    (void)state;
    /* streams differ in every coordinate */
    uint64_t a = lda_stream(1, 2, 3, 0);
    assert_true(a != lda_stream(2, 2, 3, 0));
    assert_true(a != lda_stream(1, 3, 3, 0));
    assert_true(a != lda_stream(1, 2, 4, 0));
    assert_true(a != lda_stream(1, 2, 3, 1));
    assert_true(a == lda_stream(1, 2, 3, 0));
    rt_rng r;
    rt_rng_seed(&r, 1, 2);
    for (int i = 0; i < 1000; i++)
        assert_true(lda_below(&r, 7) < 7);
}

/* The blocked running sums lda_sample.c states, written out: serial within
 * blocks of four, each block's added to the last sum before it. */
static void spec_blocked(const float *x, uint32_t n, float *out)
{
    for (uint32_t i = 0; i < n; i++) {
        const uint32_t b = i / 4 * 4;
        float p = x[b];
        for (uint32_t j = b + 1; j <= i; j++)
            p += x[j];
        out[i] = b ? out[b - 1] + p : p;
    }
}

/* The dense weights: both paths give the same bits at every K (whole and
 * partial chunks, fewer and more than eight chunks, every count of chunks in
 * the last group of eight), equal to the order
 * lda_sample.c states; a draw, with or without a patch of one weight,
 * lands where a plain search over the (patched) sums says, on both paths,
 * and never on a zero weight. */
static void test_dense(void **state)
{
    (void)state;
    enum { KMAX = LDA_DENSE_K, NC = (KMAX + LDA_CHUNK - 1) / LDA_CHUNK };
    /* the row, then the counts the vector path reads past it (lda.h) */
    static int32_t ndk[(NC + LDA_CHUNK) * LDA_CHUNK], pndk[(NC + LDA_CHUNK) * LDA_CHUNK];
    static float coef[(NC + LDA_CHUNK) * LDA_CHUNK], pcoef[(NC + LDA_CHUNK) * LDA_CHUNK],
        w[NC * LDA_CHUNK], got[2][(NC + LDA_CHUNK) * LDA_CHUNK], sums[NC],
        want_after0[1 + NC + LDA_CHUNK], tot[2][NC + LDA_CHUNK];
    float *const want = want_after0 + 1; /* want[-1] = +0, as lda_dense_find reads it */
    const float alpha = 0.5f;
    rt_rng r;
    rt_rng_seed(&r, 7, 1);
    const uint32_t Ks[] = {1, 3, 8, 9, 20, 31, 32, 33, 56, 64, 65, 100, 200, 257, 300, 511, KMAX};
    for (size_t ki = 0; ki < sizeof(Ks) / sizeof(Ks[0]); ki++) {
        const uint32_t K = Ks[ki], nc = lda_chunks(K);
        assert_true(lda_dense_totals_len(K) <= NC + LDA_CHUNK);
        assert_true(lda_dense_totals_len(K) * LDA_CHUNK - K <= LDA_DENSE_ROW_SLACK);
        memset(got, 0, sizeof(got));   /* the padding is the caller's zeroes */
        memset(coef, 0, sizeof(coef)); /* +0 past K */
        for (uint32_t k = K; k < lda_dense_totals_len(K) * LDA_CHUNK; k++)
            ndk[k] = (int32_t)lda_below(&r, 1000); /* the next row's: they weigh +0 */
        for (uint32_t k = 0; k < K; k++) {
            ndk[k] = lda_below(&r, 4) ? 0 : (int32_t)lda_below(&r, 50);
            /* some zero weights (a real coef is never 0), some whole zero chunks */
            coef[k] = lda_below(&r, 5) && (k / 16) % 3
                          ? (float)((lda_below(&r, 3) + 0.01) / (lda_below(&r, 1000) + 20.0))
                          : 0.0f;
        }
        coef[lda_below(&r, K)] = 1.0f; /* at least one weight */
        memset(w, 0, sizeof(w));
        for (uint32_t k = 0; k < K; k++)
            w[k] = ((float)ndk[k] + alpha) * coef[k];
        for (uint32_t c = 0; c < nc; c++) {
            const float *x = w + c * LDA_CHUNK;
            sums[c] = ((x[0] + x[1]) + (x[2] + x[3])) + ((x[4] + x[5]) + (x[6] + x[7]));
        }
        spec_blocked(sums, nc, want);
        const int paths = 1 + lda_have_avx2();
        for (int path = 0; path < paths; path++) {
            const float sum = lda_dense_weights(path, ndk, alpha, coef, K, got[path], tot[path]);
            assert_memory_equal(got[path], w, nc * LDA_CHUNK * sizeof(float));
            for (uint32_t k = nc * LDA_CHUNK; k < lda_dense_totals_len(K) * LDA_CHUNK; k++)
                assert_true(got[path][k] == 0.0f);
            assert_memory_equal(tot[path], want, nc * sizeof(float));
            assert_memory_equal(&sum, &want[nc - 1], sizeof(float));
        }
        for (int i = 0; i < 4000; i++) {
            /* every other draw with a patch: one weight grown (as a token joining its topic
             * does: its coef, and its count when in the same document), the totals from its
             * chunk on by the change, in float; the find reads the weights now */
            lda_dense_patch pt = {0, 0.0f};
            memcpy(pcoef, coef, sizeof(pcoef));
            memcpy(pndk, ndk, sizeof(pndk));
            if (i & 1) {
                pt.k = lda_below(&r, K);
                pndk[pt.k] += (int32_t)(i & 2) / 2;
                pcoef[pt.k] = coef[pt.k] + (float)lda_below(&r, 3) * rt_rng_uniformf(&r);
            }
            float pw[NC * LDA_CHUNK], ptot[NC];
            memcpy(pw, w, sizeof(pw));
            pw[pt.k] = ((float)pndk[pt.k] + alpha) * pcoef[pt.k];
            pt.d = pw[pt.k] - w[pt.k];
            for (uint32_t c = 0; c < nc; c++)
                ptot[c] = want[c] + (c >= pt.k / LDA_CHUNK ? pt.d : 0.0f);
            const float top = ptot[nc - 1];
            const float u = i > 1 ? rt_rng_uniformf(&r) * top : nextafterf(top, 0);
            assert_true(u < top);
            uint32_t c = 0; /* the plain search */
            while (c + 1 < nc && !(u < ptot[c]))
                c++;
            const float v = u - (c ? ptot[c - 1] : 0.0f);
            float a[LDA_CHUNK];
            spec_blocked(pw + c * LDA_CHUNK, LDA_CHUNK, a);
            uint32_t j = 0;
            while (j < LDA_CHUNK && !(v < a[j]))
                j++;
            for (int path = 0; path < paths; path++) {
                const uint32_t k = lda_dense_find(path, pndk, alpha, pcoef, want, K, u, pt);
                assert_true(k < K && pw[k] > 0);
                if (j < LDA_CHUNK)
                    assert_int_equal(k, c * LDA_CHUNK + j);
            }
        }
    }
}

/* A dense word's coef: both paths give the division's bits, at K below,
 * at and past a vector of four, for counts zero, small and past 2^32 (the
 * vector path converts 64-bit totals by hand), and leave coef past K. */
static void test_dense_coefs(void **state)
{
    (void)state;
    enum { KMAX = 131 };
    static int32_t nwk[KMAX];
    static int64_t nk[KMAX];
    static float got[KMAX + 1];
    rt_rng r;
    rt_rng_seed(&r, 11, 1);
    const uint32_t Ks[] = {1, 3, 4, 5, 100, KMAX};
    const double beta = 0.01, vbeta = 12345 * beta;
    for (size_t ki = 0; ki < sizeof(Ks) / sizeof(Ks[0]); ki++) {
        const uint32_t K = Ks[ki];
        for (uint32_t k = 0; k < K; k++) {
            nwk[k] = lda_below(&r, 3) ? (int32_t)lda_below(&r, 100000) : 0;
            const uint32_t kind = lda_below(&r, 4);
            nk[k] = kind == 0   ? 0
                    : kind == 1 ? (int64_t)lda_below(&r, 1000)
                    : kind == 2 ? (int64_t)lda_below(&r, 1u << 30) * 1000003
                                : ((int64_t)1 << 50) + (int64_t)lda_below(&r, 1u << 30);
        }
        for (int path = 0; path < 1 + lda_have_avx2(); path++) {
            for (uint32_t k = 0; k <= K; k++)
                got[k] = -1.0f;
            lda_dense_coefs(path, got, nwk, nk, K, beta, vbeta);
            for (uint32_t k = 0; k < K; k++) {
                const float want = (float)((nwk[k] + beta) / ((double)nk[k] + vbeta));
                assert_memory_equal(&got[k], &want, sizeof(float));
            }
            assert_true(got[K] == -1.0f);
        }
    }
}

/* The F+ tree against plain sums: integer weights (exact in double, so
 * every sum is exact) set in any order, changed one at a time; the total
 * and every draw equal a direct sum and a linear search, and a u at or
 * past the total (rounding) still lands on a leaf below n; a draw with one
 * leaf read otherwise (0 too: never drawn) is the search with that weight. */
static void test_ftree(void **state)
{
    (void)state;
    const uint32_t sizes[] = {1, 2, 3, 8, 9, 37, 64, 65, 1000, 5000, 40000}; /* 2-7 levels */
    for (size_t c = 0; c < sizeof(sizes) / sizeof(sizes[0]); c++) {
        const uint32_t n = sizes[c];
        lda_ftree t;
        assert_int_equal(lda_ftree_init(&t, n), 0);
        double *w = calloc(n, sizeof(double));
        assert_non_null(w);
        for (uint32_t k = 0; k < n; k++)
            *lda_ftree_leaf(&t, k) = w[k] = 1 + (k * 7) % 5;
        lda_ftree_build(&t);
        rt_rng rng;
        rt_rng_seed(&rng, 11, n);
        for (int step = 0; step < 400; step++) {
            const uint32_t k = lda_below(&rng, n);
            w[k] = 1 + lda_below(&rng, 9);
            lda_ftree_set(&t, k, w[k]);
            double total = 0;
            for (uint32_t i = 0; i < n; i++)
                total += w[i];
            assert_true(lda_ftree_total(&t) == total);
            const double u = lda_below(&rng, (uint32_t)total * 4) / 4.0;
            uint32_t want = 0;
            for (double acc = w[0]; acc <= u; acc += w[++want])
                ;
            assert_int_equal(lda_ftree_find(&t, u), want);
            assert_int_equal(lda_ftree_find(&t, total), n - 1);
            assert_int_equal(lda_ftree_find(&t, 2 * total), n - 1);
            /* the draw with leaf k2 read as v: as a plain search with w[k2] = v */
            const uint32_t k2 = lda_below(&rng, n);
            const double v = (n > 1 ? 0 : 1) + lda_below(&rng, 10), keep = w[k2];
            w[k2] = v;
            const double u2 = lda_below(&rng, (uint32_t)(total - keep + v) * 4) / 4.0;
            uint32_t want2 = 0;
            while (!(w[want2] > 0))
                want2++;
            for (double acc = w[want2]; acc <= u2;) {
                while (!(w[++want2] > 0))
                    ;
                acc += w[want2];
            }
            w[k2] = keep;
            assert_int_equal(lda_ftree_find_with(&t, u2, k2, v), want2);
        }
        free(w);
        lda_ftree_free(&t);
    }
}

/* The list sampler's r bucket: both code paths give the same bits (weights,
 * lane sums, r) at list lengths around the 8-entry blocks, with the token's
 * own topic one count less (a count of 1: weight +0) and found; r is the
 * stated sum; a draw lands where a plain running sum puts it and never on a
 * weight of +0. */
static void test_list_bucket(void **state)
{
    (void)state;
    enum { KL = 700, NMAX = 150 }; /* past the find's flat part (64 entries) */
    float *coef = malloc(KL * sizeof(float));
    assert_non_null(coef);
    for (uint32_t k = 0; k < KL; k++)
        coef[k] = 1.0f / (float)(3 + (k * 13) % 17);
    for (uint32_t n = 1; n <= NMAX; n++) {
        uint16_t tz[NMAX + 8];
        uint32_t tc[NMAX + 8];
        for (uint32_t x = 0; x < NMAX + 8; x++) { /* past n: junk the paths must ignore */
            tz[x] = (uint16_t)(x < n ? (x * 37 + n) % KL : 0xffff);
            tc[x] = x < n ? 1 + (x * 5 + n) % 4 : 0xdeadbeef;
        }
        const uint32_t from = tz[n / 2];
        float w[2][NMAX + 8], acc[2][NMAX + 8];
        uint32_t own[2] = {UINT32_MAX, UINT32_MAX};
        float r[2];
        for (int p = 0; p < 2; p++)
            r[p] = lda_list_weights(p, tz, tc, n, from, coef, w[p], acc[p], &own[p]);
        assert_int_equal(own[0], n / 2);
        assert_int_equal(own[1], n / 2);
        assert_memory_equal(w[0], w[1], n * sizeof(float));
        assert_memory_equal(acc[0], acc[1], (n + 7) / 8 * 8 * sizeof(float));
        assert_memory_equal(&r[0], &r[1], sizeof(float));
        float lane[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        for (uint32_t x = 0; x < n; x++) {
            const float want = (float)(int32_t)(tc[x] - (x == n / 2)) * coef[tz[x]];
            assert_memory_equal(&w[0][x], &want, sizeof(float));
            lane[x % 8] += want;
        }
        const float sum = ((lane[0] + lane[1]) + (lane[2] + lane[3])) +
                          ((lane[4] + lane[5]) + (lane[6] + lane[7]));
        assert_memory_equal(&r[0], &sum, sizeof(float));
        for (uint32_t i = 0; i < 200; i++) {
            const double u = r[0] * (i / 200.0);
            const uint32_t x = lda_list_find(w[0], acc[0], n, u);
            assert_true(x < n && w[0][x] > 0);
            double below = 0; /* the running sum before x: at most u, up to rounding */
            for (uint32_t y = 0; y < x; y++)
                below += w[0][y];
            assert_true(below <= u * (1 + 1e-5) + 1e-6 &&
                        u < (below + w[0][x]) * (1 + 1e-5) + 1e-6);
        }
    }
    free(coef);
}

/* A topic's entry in a list: the first entry that holds it at every
 * position around the 8-entry compares, n when absent, and never an entry
 * past n, even one holding the topic. */
static void test_list_topic(void **state)
{
    (void)state;
    enum { NMAX = 40 };
    for (uint32_t n = 0; n <= NMAX; n++) {
        uint16_t tz[NMAX + 8];
        for (uint32_t x = 0; x < NMAX + 8; x++)
            tz[x] = (uint16_t)(x < n ? 100 + x : x == n ? 5 : 7); /* past n: junk, and 7 */
        for (uint32_t x = 0; x < n; x++)
            assert_int_equal(lda_list_topic(tz, n, 100 + x), x);
        assert_int_equal(lda_list_topic(tz, n, 7), n);
        assert_int_equal(lda_list_topic(tz, n, 99), n);
        if (n > 3) { /* a topic twice: its first entry */
            tz[n - 1] = tz[2];
            assert_int_equal(lda_list_topic(tz, n, tz[2]), 2);
        }
    }
}

/* The packed form's r bucket gives the bits of the topics-and-counts form
 * on both code paths (weights, lane sums, r, the token's entry), with
 * counts up to LDA_LIST_COUNT_MAX (all 16 bits) and junk past n. */
static void test_packed_bucket(void **state)
{
    (void)state;
    enum { KL = 700, NMAX = 150 }; /* past the find's flat part (64 entries) */
    float *coef = malloc(KL * sizeof(float));
    assert_non_null(coef);
    for (uint32_t k = 0; k < KL; k++)
        coef[k] = 1.0f / (float)(3 + (k * 13) % 17);
    for (uint32_t n = 1; n <= NMAX; n++) {
        uint16_t tz[NMAX + 8];
        uint32_t tc[NMAX + 8], e[NMAX + 8];
        for (uint32_t x = 0; x < NMAX + 8; x++) {
            tz[x] = (uint16_t)(x < n ? (x * 37 + n) % KL : 0xffff);
            tc[x] = x < n ? (x % 3 ? 1 + (x * 5 + n) % 4 : LDA_LIST_COUNT_MAX - x) : 0;
            e[x] = x < n ? (uint32_t)tz[x] << 16 | tc[x] : 0xdeadbeef;
        }
        const uint32_t from = tz[n / 2];
        float w[3][NMAX + 8], acc[3][NMAX + 8], r[3];
        uint32_t own[3] = {UINT32_MAX, UINT32_MAX, UINT32_MAX};
        r[2] = lda_list_weights(0, tz, tc, n, from, coef, w[2], acc[2], &own[2]);
        for (int p = 0; p < 2; p++) {
            r[p] = lda_packed_weights(p, e, n, from, coef, w[p], acc[p], &own[p]);
            assert_int_equal(own[p], n / 2);
            assert_memory_equal(w[p], w[2], n * sizeof(float));
            assert_memory_equal(acc[p], acc[2], (n + 7) / 8 * 8 * sizeof(float));
            assert_memory_equal(&r[p], &r[2], sizeof(float));
        }
    }
    free(coef);
}

/* A topic's entry in a packed list: as test_list_topic, with counts that
 * equal the topics sought (only the upper half is a topic). */
static void test_packed_topic(void **state)
{
    (void)state;
    enum { NMAX = 40 };
    for (uint32_t n = 0; n <= NMAX; n++) {
        uint32_t e[NMAX + 8];
        for (uint32_t x = 0; x < NMAX + 8; x++) /* past n: junk, and 7 */
            e[x] = x < n ? (100 + x) << 16 | (101 + x) : x == n ? 5u << 16 : 7u << 16 | 7;
        for (uint32_t x = 0; x < n; x++)
            assert_int_equal(lda_packed_topic(e, n, 100 + x), x);
        assert_int_equal(lda_packed_topic(e, n, 7), n);
        assert_int_equal(lda_packed_topic(e, n, 99), n);
        if (n > 3) { /* a topic twice: its first entry */
            e[n - 1] = e[2] + 1;
            assert_int_equal(lda_packed_topic(e, n, e[2] >> 16), 2);
        }
    }
}

/* The document-major sampler's q bucket: both paths give the same bits;
 * each running sum is the last plus the entry's weight (count, the token's
 * own entry one less, times c of its topic; an own count of 1 weighs +0);
 * a draw picks the first entry whose sum passes u, never one of weight
 * +0, on both paths alike. */
static void test_doc_q(void **state)
{
    (void)state;
    enum { KL = 700, NMAX = 150 }; /* past the find's flat part (64 entries) */
    float *cf = malloc(KL * sizeof(float));
    assert_non_null(cf);
    for (uint32_t k = 0; k < KL; k++)
        cf[k] = 1.0f / (float)(3 + (k * 13) % 17);
    for (uint32_t n = 1; n <= NMAX; n++) {
        uint32_t e[NMAX];
        for (uint32_t x = 0; x < n; x++) /* the own entry (n / 2) of count 1 when n > 1 is odd */
            e[x] = ((x * 37 + n) % KL) << 16 |
                   (x == n / 2 && n % 2 && n > 1 ? 1 : 1 + (x * 5 + n) % 600);
        const uint32_t from = e[n / 2] >> 16;
        float pre[2][NMAX + 8], q[2];
        uint32_t own[2] = {UINT32_MAX, UINT32_MAX};
        for (int p = 0; p < 2; p++) {
            q[p] = lda_doc_q_weights(p, e, n, from, cf, pre[p], &own[p]);
            assert_int_equal(own[p], n / 2);
        }
        assert_memory_equal(pre[0], pre[1], n * sizeof(float));
        assert_memory_equal(&q[0], &q[1], sizeof(float));
        assert_memory_equal(&q[0], &pre[0][n - 1], sizeof(float));
        for (uint32_t x = 0; x < n; x++) {
            const float w = (float)((e[x] & 0xffff) - (x == n / 2)) * cf[e[x] >> 16];
            const float before = x ? pre[0][x - 1] : 0.0f, step = pre[0][x] - before;
            assert_true(pre[0][x] >= before);
            assert_true(fabsf(step - w) <= 1e-5f * pre[0][x]);
        }
        for (uint32_t i = 0; i < 200 + n; i++) { /* then u at each sum below q */
            const double u = i < 200 ? q[0] * (i / 200.0) : pre[0][i - 200];
            if (!(u < q[0]))
                continue;
            uint32_t want = 0;
            while (!((double)pre[0][want] > u))
                want++;
            for (int p = 0; p < 2; p++)
                assert_int_equal(lda_doc_q_find(p, pre[0], n, u), want);
            assert_true(want != n / 2 || n % 2 == 0 || n == 1);
        }
    }
    free(cf);
}

/* A topic's entry in a word's list: the first, n when absent; nothing
 * past n is read (the list is copied to the end of an exact allocation,
 * where ASan would see a read past it). */
static void test_doc_word_topic(void **state)
{
    (void)state;
    enum { NMAX = 40 };
    for (uint32_t n = 0; n <= NMAX; n++) {
        uint32_t *e = malloc((n ? n : 1) * sizeof(uint32_t));
        assert_non_null(e);
        for (uint32_t x = 0; x < n; x++)
            e[x] = (100 + x) << 16 | (101 + x);
        for (uint32_t x = 0; x < n; x++)
            assert_int_equal(lda_doc_word_topic(e, n, 100 + x), x);
        assert_int_equal(lda_doc_word_topic(e, n, 101 + n), n);
        assert_int_equal(lda_doc_word_topic(e, n, 99), n);
        if (n > 3) {
            e[n - 1] = e[2] + 1;
            assert_int_equal(lda_doc_word_topic(e, n, e[2] >> 16), 2);
        }
        free(e);
    }
}

/* A topic gaining a token in a word's list: appended at count 1 when
 * absent, its count up when present, and a full list (corrupt counts: more
 * topics than the slice has room for) refused with nothing written (the
 * list is an exact allocation: ASan would see a write past it). */
static void test_doc_word_gain(void **state)
{
    (void)state;
    enum { ROOM = 3 };
    uint32_t *v = malloc((1 + ROOM) * sizeof(uint32_t));
    assert_non_null(v);
    v[0] = 0;
    for (uint32_t k = 0; k < ROOM; k++)
        assert_int_equal(lda_doc_word_gain(v, ROOM, v[0], 10 + k), 0);
    assert_int_equal(v[0], ROOM);
    for (uint32_t x = 0; x < ROOM; x++)
        assert_int_equal(v[1 + x], (10 + x) << 16 | 1);
    assert_int_equal(lda_doc_word_gain(v, ROOM, v[0], 20), -1);
    assert_int_equal(v[0], ROOM);
    for (uint32_t x = 0; x < ROOM; x++)
        assert_int_equal(v[1 + x], (10 + x) << 16 | 1);
    /* a topic already listed still gains in a full list */
    assert_int_equal(lda_doc_word_gain(v, ROOM, 1, 11), 0);
    assert_int_equal(v[2], 11u << 16 | 2);
    assert_int_equal(v[0], ROOM);
    free(v);
}

/* The document-major visit's guards on a word's sparse slice (rev23 F5:
 * lda_doc_word_gain alone was tested, not its wiring in lda_visit_docs).
 * One block of three words, one document of two tokens: word 0 (slice cap
 * 4, consistent) and word 2 (cap 4: room for 3 entries), word 1 absent,
 * so the runs are words 0 and 2.  Word 2's slice holds corrupt counts:
 * three topics whose totals are so large that the token draws another
 * topic, which must be refused as an overflow naming word 2 (run 1 maps
 * back to word 2, not 1); a room of cap entries instead of cap - 1 writes
 * past the slice and passes.  A slice claiming cap entries is refused at
 * load, before any token moves (the q kernel would read the next slice;
 * a check of n > cap would fail later, at the gain, with counts moved);
 * with room left the token moves without error. */
enum { VK = 16, VH = RT_LDA_HEADER_U32 };

typedef struct visit_fixture {
    uint64_t col_off[2], tokens[3], slice_off[3], block_u32[1], blk_run[2], run_end[2], blk_tok[2];
    uint64_t doc_off[2], dnz_off[2];
    uint32_t col_ids[3], slice_cap[3], run_word[2], tok_doc[2], dnz_n[1], dlist[8];
    uint16_t z[2];
    int64_t nk[VK];
    uint32_t payload[256]; /* room past the block: a wrong room writes there, not past memory */
    rt_plan plan;
    lda_layout layout;
    lda_opts o;
    lda_ctx ctx;
    lda_worker w;
} visit_fixture;

/* word 2's slice: n entries of topics 1, 2, 3 (count 5 each; topic totals 1e12) */
static void visit_fixture_make(visit_fixture *f, uint32_t n)
{
    memset(f, 0, sizeof(*f));
    f->col_off[1] = 3;
    for (uint32_t j = 0; j < 3; j++)
        f->col_ids[j] = j;
    f->tokens[0] = 3, f->tokens[2] = 3;
    f->slice_cap[0] = 4, f->slice_cap[1] = 0, f->slice_cap[2] = 4;
    f->slice_off[0] = VH, f->slice_off[1] = VH + 4, f->slice_off[2] = VH + 4 + VK;
    f->block_u32[0] = VH + 8 + VK;
    f->plan.blocks = 1, f->plan.n_cols = 3;
    f->plan.block_col_offset = f->col_off, f->plan.block_col_ids = f->col_ids;
    f->layout.K = VK, f->layout.blocks = 1, f->layout.tokens = f->tokens;
    f->layout.slice_off = f->slice_off, f->layout.slice_cap = f->slice_cap;
    f->layout.block_u32 = f->block_u32;
    f->o.K = VK, f->o.alpha = 0.1, f->o.beta = 0.01;
    f->ctx = (lda_ctx){.o = &f->o, .plan = &f->plan, .layout = &f->layout, .vbeta = 3 * 0.01};
    /* the payload: word 0 holds its token (topic 5), word 2 the n entries */
    f->payload[VH] = 1, f->payload[VH + 1] = 5u << 16 | 1;
    uint32_t *v = f->payload + f->slice_off[2];
    v[0] = n;
    for (uint32_t x = 0; x < n && x < 3; x++)
        v[1 + x] = (1 + x) << 16 | 5;
    for (uint32_t k = 0; k < VK; k++)
        f->nk[k] = k >= 1 && k <= 3 ? 1000000000000 : k == 5;
    /* the worker: document 0 = (word 0, topic 5), (word 2, topic 1), word-major */
    lda_tokens *t = &f->w.train;
    t->n_docs = 1, t->n_tokens = 2;
    f->doc_off[1] = 2, t->doc_off = f->doc_off;
    f->z[0] = 5, f->z[1] = 1, t->z = f->z;
    f->blk_run[1] = 2, t->blk_run = f->blk_run;
    f->run_word[0] = 0, f->run_word[1] = 2, t->run_word = f->run_word;
    f->run_end[0] = 1, f->run_end[1] = 2, t->run_end = f->run_end;
    f->blk_tok[1] = 2, t->blk_tok = f->blk_tok;
    t->tok_doc = f->tok_doc;
    f->dnz_off[1] = 8, t->dnz_off = f->dnz_off;
    f->dnz_n[0] = 2, t->dnz_n = f->dnz_n;
    f->dlist[0] = 5u << 16 | 1, f->dlist[1] = 1u << 16 | 1, t->dlist = f->dlist;
    f->w.nk = f->nk;
}

/* The visit's result; *moved: whether the payload changed. */
static int visit_word2(uint32_t n, int avx2, int *moved, rt_error *err)
{
    visit_fixture *f = calloc(1, sizeof(*f));
    assert_non_null(f);
    visit_fixture_make(f, n);
    lda_scratch s;
    assert_int_equal(lda_scratch_init(&s, VK, LDA_SCRATCH_ALL), 0);
    s.avx2 = avx2;
    rt_rng rng;
    rt_rng_seed(&rng, 7, 1);
    memset(err, 0, sizeof(*err));
    uint32_t before[256];
    memcpy(before, f->payload, sizeof(before));
    int rc = lda_visit_docs(&f->ctx, &f->w, 0, f->payload, &s, &rng, err);
    *moved = memcmp(before, f->payload, sizeof(before)) != 0;
    for (uint32_t i = f->block_u32[0]; i < 256; i++) /* nothing written past the block */
        assert_int_equal(f->payload[i], 0);
    lda_scratch_free(&s);
    free(f);
    return rc;
}

static void test_doc_visit_slice_guards(void **state)
{
    (void)state;
    for (int avx2 = 0; avx2 <= lda_have_avx2(); avx2++) {
        rt_error err;
        int moved;
        /* full: the new topic has no room; named by its word */
        assert_int_equal(visit_word2(3, avx2, &moved, &err), -1);
        assert_non_null(strstr(err.msg, "word 2 of block 0 has more topics than tokens"));
        /* a count claiming the whole slice: refused at load, before a token moves */
        assert_int_equal(visit_word2(4, avx2, &moved, &err), -1);
        assert_non_null(strstr(err.msg, "word 2 of block 0 has more topics than tokens"));
        assert_false(moved);
        /* room left: the token moves, no error */
        assert_int_equal(visit_word2(2, avx2, &moved, &err), 0);
        assert_true(moved);
    }
}

/* The s bucket's draw gives topic k with probability inv[k] / sum (f's
 * weight taken as invf): chi-square over 200000 draws (9 degrees of
 * freedom; 40 is p < 1e-5) with a tight bound (rejection alone), a bound
 * 1e4 times too loose (the scan after the tries, nearly every draw) and f's
 * weight above the bound (the bound raised to it).  Fails with f's weight
 * left at inv[f], with the scan drawing uniformly, or with the bound not
 * raised. */
static double s_draw_chi2(const double *inv, double inv_max, uint32_t f, double invf)
{
    enum { K = 10, N = 200000 };
    uint32_t seen[K] = {0};
    rt_rng rng;
    rt_rng_seed(&rng, 5, 1);
    rt_wyrand g = {rt_rng_next(&rng)};
    for (uint32_t n = 0; n < N; n++) {
        const uint32_t k = lda_doc_s_draw(inv, K, inv_max, f, invf, &g);
        assert_true(k < K);
        seen[k]++;
    }
    double sum = 0, chi2 = 0;
    for (uint32_t k = 0; k < K; k++)
        sum += k == f ? invf : inv[k];
    for (uint32_t k = 0; k < K; k++) {
        const double want = N * (k == f ? invf : inv[k]) / sum;
        chi2 += (seen[k] - want) * (seen[k] - want) / want;
    }
    return chi2;
}

static void test_doc_s_draw(void **state)
{
    (void)state;
    double inv[10], top = 0;
    for (uint32_t k = 0; k < 10; k++) {
        inv[k] = 1.0 / (3.0 + k * k);
        top = inv[k] > top ? inv[k] : top;
    }
    assert_true(s_draw_chi2(inv, top, 4, 0.2) < 40);
    assert_true(s_draw_chi2(inv, 1e4 * top, 4, 0.2) < 40);
    assert_true(s_draw_chi2(inv, top, 7, 3 * top) < 40);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slices),
        cmocka_unit_test(test_log_joint),
        cmocka_unit_test(test_stream),
        cmocka_unit_test(test_dense),
        cmocka_unit_test(test_dense_coefs),
        cmocka_unit_test(test_ftree),
        cmocka_unit_test(test_list_bucket),
        cmocka_unit_test(test_list_topic),
        cmocka_unit_test(test_packed_bucket),
        cmocka_unit_test(test_packed_topic),
        cmocka_unit_test(test_doc_q),
        cmocka_unit_test(test_doc_word_topic),
        cmocka_unit_test(test_doc_word_gain),
        cmocka_unit_test(test_doc_s_draw),
        cmocka_unit_test(test_doc_visit_slice_guards),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
