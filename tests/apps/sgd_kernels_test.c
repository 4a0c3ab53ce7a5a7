/*
 * sgd_kernels_test.c - the MF kernels: both code paths give the same bits,
 * SGD actually fits a planted rank-k matrix (on either path, with one rate or
 * with AdaGrad), padding stays zero, and the --lambda-const shares weigh on
 * their own row and column only.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "apps/mf_common.h"

typedef struct problem {
    uint32_t rows, cols, k, kp;
    size_t n;
    rt_entry *e;
    float *W, *H;
    float *bu, *bi;             /* NULL unless the problem trains biases */
    float *gW, *gH, *gbu, *gbi; /* AdaGrad accumulators; NULL = one rate */
    float *reg_row, *reg_col;   /* --lambda-const shares; NULL = none */
} problem;

static void make_problem(problem *p, uint32_t k, uint64_t seed)
{
    rt_rng rng;
    rt_rng_seed(&rng, seed, 0);
    p->rows = 200;
    p->cols = 150;
    p->k = k;
    p->kp = rt_mf_padded_rank(k);
    p->n = 6000;
    p->bu = p->bi = NULL;
    p->gW = p->gH = p->gbu = p->gbi = NULL;
    p->reg_row = p->reg_col = NULL;
    p->e = malloc(p->n * sizeof(rt_entry));
    p->W = rt_alloc((size_t)p->rows * p->kp * sizeof(float));
    p->H = rt_alloc((size_t)p->cols * p->kp * sizeof(float));
    float *wt = calloc((size_t)p->rows * 4, sizeof(float));
    float *ht = calloc((size_t)p->cols * 4, sizeof(float));
    for (size_t i = 0; i < (size_t)p->rows * 4; i++)
        wt[i] = (float)rt_rng_normal(&rng) * 0.7f;
    for (size_t i = 0; i < (size_t)p->cols * 4; i++)
        ht[i] = (float)rt_rng_normal(&rng) * 0.7f;
    for (size_t i = 0; i < p->n; i++) {
        uint32_t u = (uint32_t)rt_rng_below(&rng, p->rows),
                 v = (uint32_t)rt_rng_below(&rng, p->cols);
        float r = 0;
        for (int d = 0; d < 4; d++)
            r += wt[u * 4 + d] * ht[v * 4 + d];
        p->e[i] = (rt_entry){u, v, r};
    }
    for (uint32_t u = 0; u < p->rows; u++)
        for (uint32_t d = 0; d < k; d++)
            p->W[(size_t)u * p->kp + d] = (float)rt_rng_normal(&rng) * 0.1f;
    for (uint32_t v = 0; v < p->cols; v++)
        for (uint32_t d = 0; d < k; d++)
            p->H[(size_t)v * p->kp + d] = (float)rt_rng_normal(&rng) * 0.1f;
    free(wt);
    free(ht);
}

static void add_biases(problem *p)
{
    p->bu = calloc(p->rows, sizeof(float));
    p->bi = calloc(p->cols, sizeof(float));
    for (size_t i = 0; i < p->n; i++)
        p->e[i].val += 0.3f * (float)(p->e[i].row % 5) - 0.2f * (float)(p->e[i].col % 3);
}

static float *ones(size_t n)
{
    float *a = malloc(n * sizeof(float));
    for (size_t i = 0; i < n; i++)
        a[i] = 1.0f;
    return a;
}

static void add_adagrad(problem *p)
{
    p->gW = ones(p->rows), p->gH = ones(p->cols);
    p->gbu = ones(p->rows), p->gbi = ones(p->cols);
}

/* A different share for every row and column (as L0 / n would be). */
static void add_reg(problem *p, float scale)
{
    p->reg_row = malloc(p->rows * sizeof(float));
    p->reg_col = malloc(p->cols * sizeof(float));
    for (uint32_t u = 0; u < p->rows; u++)
        p->reg_row[u] = scale / (float)(1 + u % 7);
    for (uint32_t v = 0; v < p->cols; v++)
        p->reg_col[v] = scale / (float)(2 + v % 5);
}

static void free_problem(problem *p)
{
    free(p->gW), free(p->gH), free(p->gbu), free(p->gbi);
    free(p->reg_row), free(p->reg_col);
    free(p->bu);
    free(p->bi);
    free(p->e);
    rt_free(p->W);
    rt_free(p->H);
}

static double train(problem *p, int epochs, rt_mf_kernel kernel)
{
    rt_sgd_params params = {.kernel = kernel,
                            .lr = p->gW ? 0.1f : 0.02f,
                            .lambda = 0.001f,
                            .mu = 0.0f,
                            .kp = p->kp,
                            .bu = p->bu,
                            .bi = p->bi,
                            .lambda_bias = 0.002f,
                            .gW = p->gW,
                            .gH = p->gH,
                            .gbu = p->bu ? p->gbu : NULL,
                            .gbi = p->bu ? p->gbi : NULL,
                            .grad_scale = 1.0f / (float)p->k,
                            .rating_inv = 1.0f,
                            .reg_row = p->reg_row,
                            .reg_col = p->reg_col};
    for (int ep = 0; ep < epochs; ep++)
        rt_sgd_block(p->e, p->n, p->W, p->H, &params);
    return sqrt(rt_mf_block_sse(p->e, p->n, p->W, p->H, &params) / (double)p->n);
}

static void fits_planted_rank4(rt_mf_kernel kernel, int adagrad)
{
    problem p;
    make_problem(&p, 8, 42);
    if (adagrad)
        add_adagrad(&p);
    rt_sgd_params params = {.kernel = kernel, .kp = p.kp, .rating_inv = 1.0f};
    double before = sqrt(rt_mf_block_sse(p.e, p.n, p.W, p.H, &params) / (double)p.n);
    double after = train(&p, 200, kernel);
    assert_true(before > 0.5);
    assert_true(after < 0.1 * before);
    free_problem(&p);
}

static void test_portable_fits_planted_rank4(void **state)
{
    (void)state;
    fits_planted_rank4(RT_MF_KERNEL_PORTABLE, 0);
    fits_planted_rank4(RT_MF_KERNEL_PORTABLE, 1);
}

/* Skips (with a message) where the CPU has no AVX2+FMA: there, only the
 * portable path exists. */
static int have_avx2(void)
{
    if (rt_mf_kernel_best() == RT_MF_KERNEL_AVX2)
        return 1;
    printf("skipping: this CPU has no AVX2+FMA, only the portable path can run\n");
    return 0;
}

static void test_avx2_fits_planted_rank4(void **state)
{
    (void)state;
    if (!have_avx2())
        skip();
    fits_planted_rank4(RT_MF_KERNEL_AVX2, 0);
    fits_planted_rank4(RT_MF_KERNEL_AVX2, 1);
}

static void test_biases_fit_offsets(void **state)
{
    (void)state;
    problem p;
    make_problem(&p, 8, 43);
    add_biases(&p);
    double after = train(&p, 200, rt_mf_kernel_best());
    assert_true(after < 0.1);
    /* rows with row % 5 == 4 carry +1.2 more than rows with row % 5 == 0 */
    double d = 0;
    int n = 0;
    for (uint32_t u = 0; u + 4 < p.rows; u += 5, n++)
        d += p.bu[u + 4] - p.bu[u];
    assert_true(fabs(d / n - 1.2) < 0.3);
    free_problem(&p);
}

static void test_padding_stays_zero(void **state)
{
    (void)state;
    problem p;
    make_problem(&p, 5, 7); /* kp = 8: three padding floats per row */
    train(&p, 5, rt_mf_kernel_best());
    for (uint32_t u = 0; u < p.rows; u++)
        for (uint32_t d = p.k; d < p.kp; d++)
            assert_true(p.W[(size_t)u * p.kp + d] == 0.0f);
    for (uint32_t v = 0; v < p.cols; v++)
        for (uint32_t d = p.k; d < p.kp; d++)
            assert_true(p.H[(size_t)v * p.kp + d] == 0.0f);
    free_problem(&p);
}

/* Shares of 0 change no bit (lambda + 0 is lambda); a share on one row
 * shrinks that row's factors and bias, on either path. */
static void reg_weighs_its_row(rt_mf_kernel kernel)
{
    problem plain, zero, one;
    make_problem(&plain, 8, 44);
    make_problem(&zero, 8, 44);
    make_problem(&one, 8, 44);
    problem *all[] = {&plain, &zero, &one};
    for (int i = 0; i < 3; i++) {
        add_biases(all[i]);
        add_adagrad(all[i]);
    }
    add_reg(&zero, 0.0f);
    add_reg(&one, 0.0f);
    one.reg_row[3] = 2.0f; /* L0 = 2 over one rating a row */
    for (int i = 0; i < 3; i++)
        train(all[i], 50, kernel);
    size_t wb = (size_t)plain.rows * plain.kp * sizeof(float);
    assert_memory_equal(plain.W, zero.W, wb);
    assert_memory_equal(plain.H, zero.H, (size_t)plain.cols * plain.kp * sizeof(float));
    assert_memory_equal(plain.bu, zero.bu, plain.rows * sizeof(float));
    double n_plain = 0, n_one = 0;
    for (uint32_t d = 0; d < plain.kp; d++) {
        n_plain += (double)plain.W[3 * plain.kp + d] * plain.W[3 * plain.kp + d];
        n_one += (double)one.W[3 * one.kp + d] * one.W[3 * one.kp + d];
    }
    assert_true(n_one < 0.5 * n_plain);
    assert_true(fabsf(one.bu[3]) < 0.5f * fabsf(plain.bu[3]));
    for (int i = 0; i < 3; i++)
        free_problem(all[i]);
}

static void test_lambda_const_shares(void **state)
{
    (void)state;
    reg_weighs_its_row(RT_MF_KERNEL_PORTABLE);
    if (have_avx2())
        reg_weighs_its_row(RT_MF_KERNEL_AVX2);
}

/* A checksum of the factors trained by one path, for every rank we support
 * (with and without biases and --lambda-const shares), one line each. */
static char *fingerprints(rt_mf_kernel kernel)
{
    static const uint32_t ks[] = {3, 8, 16, 24, 32, 40, 64, 128};
    size_t cap = 1 << 16, len = 0;
    char *out = calloc(1, cap);
    assert_non_null(out);
    for (int reg = 0; reg < 2; reg++)
        for (int ada = 0; ada < 2; ada++)
            for (int bias = 0; bias < 2; bias++)
                for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
                    problem p;
                    make_problem(&p, ks[i], 1000 + i);
                    if (bias)
                        add_biases(&p);
                    if (ada)
                        add_adagrad(&p);
                    if (reg)
                        add_reg(&p, 0.3f);
                    double rmse = train(&p, 3, kernel);
                    uint64_t hw = rt_checksum(p.W, (size_t)p.rows * p.kp * sizeof(float));
                    uint64_t hh = rt_checksum(p.H, (size_t)p.cols * p.kp * sizeof(float));
                    uint64_t hb = bias ? rt_checksum(p.bi, p.cols * sizeof(float)) : 0;
                    len +=
                        (size_t)snprintf(out + len, cap - len,
                                         "k=%u bias=%d adagrad=%d reg=%d %016llx %016llx %016llx "
                                         "%.17g\n",
                                         ks[i], bias, ada, reg, (unsigned long long)hw,
                                         (unsigned long long)hh, (unsigned long long)hb, rmse);
                    free_problem(&p);
                }
    return out;
}

/* Each path is asked for explicitly (the dispatcher never falls back), so
 * this compares the AVX2 path with the portable one, not a path with itself. */
static void test_paths_bit_identical(void **state)
{
    (void)state;
    if (!have_avx2())
        skip();
    char *fast = fingerprints(RT_MF_KERNEL_AVX2);
    char *portable = fingerprints(RT_MF_KERNEL_PORTABLE);
    assert_string_equal(fast, portable);
    printf("avx2-fma and portable: identical factors for %d runs\n", 64);
    free(fast);
    free(portable);
}

int main(void)
{
    printf("kernel: best on this CPU is %s\n", rt_mf_kernel_name(rt_mf_kernel_best()));
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_portable_fits_planted_rank4),
        cmocka_unit_test(test_avx2_fits_planted_rank4),
        cmocka_unit_test(test_biases_fit_offsets),
        cmocka_unit_test(test_padding_stays_zero),
        cmocka_unit_test(test_paths_bit_identical),
        cmocka_unit_test(test_lambda_const_shares),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
