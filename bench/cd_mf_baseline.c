/*
 * cd_mf_baseline.c - a shared-memory CCD++ in the style of LIBPMF's ccd-r1,
 * the yardstick for bench/cd_mf.sh (LIBPMF itself is not packaged here).
 *
 *   cd_mf_baseline TRAIN TEST RANK OUTER INNER LAMBDA
 *
 * Same model, objective, update order (u then v) and unweighted lambda as
 * `rotor train --app cd-mf`: residuals kept twice, row-major (CSR) and
 * column-major (CSC) in float, factors rank-major, rows and columns updated
 * in parallel with OpenMP when built with -fopenmp (as LIBPMF is).  Input
 * lines: "user item rating [...]" with integer ids.  Prints one JSON object:
 * seconds (timed updates only) and objective / RMSE per outer iteration.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

typedef struct coo {
    size_t n, cap;
    uint32_t *r, *c;
    float *v;
} coo;

typedef struct csr { /* n_major lists of (minor index, residual) */
    size_t *ptr;
    uint32_t *idx;
    float *val;
} csr;

static double clock_s(clockid_t id)
{
    struct timespec ts;
    clock_gettime(id, &ts);
    return (double)ts.tv_sec + ts.tv_nsec * 1e-9;
}
static double now(void)
{
    return clock_s(CLOCK_MONOTONIC);
}

static void die(const char *m)
{
    fprintf(stderr, "cd_mf_baseline: %s\n", m);
    exit(1);
}

static void read_file(const char *path, coo *m, uint32_t *max_r, uint32_t *max_c)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        die("cannot open input");
    char line[512];
    while (fgets(line, sizeof(line), fp)) {
        unsigned long u, i;
        double v;
        if (sscanf(line, "%lu %lu %lf", &u, &i, &v) != 3)
            continue;
        if (m->n == m->cap) {
            m->cap = m->cap ? 2 * m->cap : 1 << 16;
            m->r = realloc(m->r, m->cap * 4);
            m->c = realloc(m->c, m->cap * 4);
            m->v = realloc(m->v, m->cap * 4);
            if (!m->r || !m->c || !m->v)
                die("out of memory");
        }
        m->r[m->n] = (uint32_t)u, m->c[m->n] = (uint32_t)i, m->v[m->n++] = (float)v;
        if (u > *max_r)
            *max_r = (uint32_t)u;
        if (i > *max_c)
            *max_c = (uint32_t)i;
    }
    fclose(fp);
}

/* Group entries by `major` (counting sort). */
static void build(const coo *m, int by_row, uint32_t n_major, csr *out)
{
    const uint32_t *maj = by_row ? m->r : m->c, *min = by_row ? m->c : m->r;
    out->ptr = calloc(n_major + 1, sizeof(size_t));
    out->idx = malloc(m->n * 4 + 4);
    out->val = malloc(m->n * 4 + 4);
    size_t *fill = calloc(n_major + 1, sizeof(size_t));
    for (size_t e = 0; e < m->n; e++)
        out->ptr[maj[e] + 1]++;
    for (uint32_t x = 0; x < n_major; x++)
        out->ptr[x + 1] += out->ptr[x];
    for (size_t e = 0; e < m->n; e++) {
        size_t p = out->ptr[maj[e]] + fill[maj[e]]++;
        out->idx[p] = min[e];
        out->val[p] = m->v[e];
    }
    free(fill);
}

/* One side of a rank-one update: x_i = sum R_ij y_j / (lambda + sum y_j^2). */
static void solve_side(const csr *R, uint32_t n, const float *y, float *x, double lambda)
{
#pragma omp parallel for schedule(dynamic, 64)
    for (uint32_t i = 0; i < n; i++) {
        double num = 0, den = 0;
        for (size_t p = R->ptr[i]; p < R->ptr[i + 1]; p++) {
            double yj = y[R->idx[p]];
            num += R->val[p] * yj;
            den += yj * yj;
        }
        x[i] = lambda + den > 0 ? (float)(num / (lambda + den)) : 0.0f;
    }
}

/* R += sign * u v^T on both copies (rows of A index u, minors index v). */
static void update(csr *A, uint32_t n, const float *u, const float *v, float sign)
{
#pragma omp parallel for schedule(static)
    for (uint32_t i = 0; i < n; i++)
        for (size_t p = A->ptr[i]; p < A->ptr[i + 1]; p++)
            A->val[p] += sign * u[i] * v[A->idx[p]];
}

int main(int argc, char **argv)
{
    if (argc != 7)
        die("usage: cd_mf_baseline TRAIN TEST RANK OUTER INNER LAMBDA");
    coo tr = {0}, te = {0};
    uint32_t mr = 0, mc = 0;
    read_file(argv[1], &tr, &mr, &mc);
    read_file(argv[2], &te, &mr, &mc);
    int k = atoi(argv[3]), outer = atoi(argv[4]), inner = atoi(argv[5]);
    double lambda = atof(argv[6]);
    uint32_t nr = mr + 1, nc = mc + 1;
    csr R, Rt;
    build(&tr, 1, nr, &R);
    build(&tr, 0, nc, &Rt);
    float *W = calloc((size_t)k * nr, 4), *H = malloc((size_t)k * nc * 4);
    srand(1);
    for (size_t x = 0; x < (size_t)k * nc; x++) /* H ~ N(0, 0.1/sqrt(k)) as cd-mf */
        H[x] = (float)(0.1 / sqrt(k) * sqrt(-2 * log((rand() + 1.0) / (RAND_MAX + 2.0))) *
                       cos(6.283185307179586 * rand() / (RAND_MAX + 1.0)));
    printf("{\"nnz_train\": %zu, \"nnz_test\": %zu, \"outer\": [", tr.n, te.n);
    double total = 0;
    for (int o = 0; o < outer; o++) {
        double t0 = now(), c0 = clock_s(CLOCK_PROCESS_CPUTIME_ID);
        for (int r = 0; r < k; r++) {
            float *u = W + (size_t)r * nr, *v = H + (size_t)r * nc;
            if (o > 0) {
                update(&R, nr, u, v, 1);
                update(&Rt, nc, v, u, 1);
            }
            for (int t = 0; t < inner; t++) {
                solve_side(&R, nr, v, u, lambda);
                solve_side(&Rt, nc, u, v, lambda);
            }
            update(&R, nr, u, v, -1);
            update(&Rt, nc, v, u, -1);
        }
        double secs = now() - t0, cpu = clock_s(CLOCK_PROCESS_CPUTIME_ID) - c0;
        total += secs;
        double loss = 0, norms = 0, test = 0;
        for (size_t p = 0; p < tr.n; p++)
            loss += (double)R.val[p] * R.val[p];
        for (size_t x = 0; x < (size_t)k * nr; x++)
            norms += (double)W[x] * W[x];
        for (size_t x = 0; x < (size_t)k * nc; x++)
            norms += (double)H[x] * H[x];
        for (size_t e = 0; e < te.n; e++) {
            double p = 0;
            for (int r = 0; r < k; r++)
                p += (double)W[(size_t)r * nr + te.r[e]] * H[(size_t)r * nc + te.c[e]];
            test += (te.v[e] - p) * (te.v[e] - p);
        }
        printf("%s{\"outer\": %d, \"seconds\": %.6f, \"cpu_seconds\": %.6f, \"objective\": %.9e, "
               "\"train_rmse\": %.6f, \"test_rmse\": %.6f}",
               o ? ", " : "", o + 1, secs, cpu, loss + lambda * norms, sqrt(loss / tr.n),
               te.n ? sqrt(test / te.n) : -1.0);
    }
    printf("], \"seconds_per_outer\": %.6f}\n", total / outer);
    return 0;
}
