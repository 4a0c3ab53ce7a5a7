/*
 * sgd_kernels_test.c - the MF kernels: both code paths give the same bits,
 * SGD actually fits a planted rank-k matrix, and padding stays zero.
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

/* Force a kernel path: the dispatcher reads ROTOR_KERNEL once per process,
 * so this test re-executes itself for the portable path (see main). */

typedef struct problem {
    uint32_t rows, cols, k, kp;
    size_t n;
    rt_entry *e;
    float *W, *H;
    float *bu, *bi; /* NULL unless the problem trains biases */
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

static void free_problem(problem *p)
{
    free(p->bu);
    free(p->bi);
    free(p->e);
    rt_free(p->W);
    rt_free(p->H);
}

static double train(problem *p, int epochs)
{
    rt_sgd_params params = {.lr = 0.02f,
                            .lambda = 0.001f,
                            .mu = 0.0f,
                            .kp = p->kp,
                            .bu = p->bu,
                            .bi = p->bi,
                            .lambda_bias = 0.002f};
    for (int ep = 0; ep < epochs; ep++)
        rt_sgd_block(p->e, p->n, p->W, p->H, &params);
    return sqrt(rt_mf_block_sse(p->e, p->n, p->W, p->H, &params) / (double)p->n);
}

static void test_sgd_fits_planted_rank4(void **state)
{
    (void)state;
    problem p;
    make_problem(&p, 8, 42);
    rt_sgd_params params = {.kp = p.kp};
    double before = sqrt(rt_mf_block_sse(p.e, p.n, p.W, p.H, &params) / (double)p.n);
    double after = train(&p, 200);
    assert_true(before > 0.5);
    assert_true(after < 0.1 * before);
    free_problem(&p);
}

static void test_biases_fit_offsets(void **state)
{
    (void)state;
    problem p;
    make_problem(&p, 8, 43);
    add_biases(&p);
    double after = train(&p, 200);
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
    train(&p, 5);
    for (uint32_t u = 0; u < p.rows; u++)
        for (uint32_t d = p.k; d < p.kp; d++)
            assert_true(p.W[(size_t)u * p.kp + d] == 0.0f);
    for (uint32_t v = 0; v < p.cols; v++)
        for (uint32_t d = p.k; d < p.kp; d++)
            assert_true(p.H[(size_t)v * p.kp + d] == 0.0f);
    free_problem(&p);
}

/* Print a checksum of the trained factors for every rank we support; the
 * test driver compares the output of the AVX2 and portable processes. */
static void print_fingerprints(void)
{
    static const uint32_t ks[] = {3, 8, 16, 24, 32, 40, 64, 128};
    for (int bias = 0; bias < 2; bias++)
        for (size_t i = 0; i < sizeof(ks) / sizeof(ks[0]); i++) {
            problem p;
            make_problem(&p, ks[i], 1000 + i);
            if (bias)
                add_biases(&p);
            double rmse = train(&p, 3);
            uint64_t hw = rt_checksum(p.W, (size_t)p.rows * p.kp * sizeof(float));
            uint64_t hh = rt_checksum(p.H, (size_t)p.cols * p.kp * sizeof(float));
            uint64_t hb = bias ? rt_checksum(p.bi, p.cols * sizeof(float)) : 0;
            printf("k=%u bias=%d %016llx %016llx %016llx %.17g\n", ks[i], bias,
                   (unsigned long long)hw, (unsigned long long)hh, (unsigned long long)hb, rmse);
            free_problem(&p);
        }
}

static char *run_fingerprints(const char *self, const char *kernel)
{
    char cmd[8192];
    snprintf(cmd, sizeof(cmd), "ROTOR_KERNEL=%s '%s' --fingerprints", kernel, self);
    FILE *fp = popen(cmd, "r");
    assert_non_null(fp);
    char *out = calloc(1, 1 << 16);
    size_t n = fread(out, 1, (1 << 16) - 1, fp);
    assert_int_equal(pclose(fp), 0);
    assert_true(n > 0);
    return out;
}

static const char *self_path;

static void test_paths_bit_identical(void **state)
{
    (void)state;
    char *fast = run_fingerprints(self_path, "auto");
    char *portable = run_fingerprints(self_path, "portable");
    assert_string_equal(fast, portable);
    free(fast);
    free(portable);
}

int main(int argc, char **argv)
{
    if (argc > 1 && !strcmp(argv[1], "--fingerprints")) {
        print_fingerprints();
        return 0;
    }
    self_path = argv[0];
    printf("kernel: %s\n", rt_mf_kernel_name());
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_sgd_fits_planted_rank4),
        cmocka_unit_test(test_biases_fit_offsets),
        cmocka_unit_test(test_padding_stays_zero),
        cmocka_unit_test(test_paths_bit_identical),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
