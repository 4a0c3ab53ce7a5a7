/*
 * recommend_naive.c - the baselines `rotor recommend` is measured against
 * (bench/ranking.sh), on a model directory's W.npy and H.npy (float32,
 * C order, no biases assumed: the model is trained with --no-biases).
 *
 *   recommend_naive naive DIR K USERS   per user: score every item with a
 *                                       plain dot-product loop, sort all
 *                                       items, keep K (what a script does)
 *   recommend_naive sgemm DIR K USERS   (built with -DWITH_CBLAS) blocks of
 *                                       256 users x all items by
 *                                       cblas_sgemm, then a K-heap per user
 *
 * Scores the first USERS users and prints {"mode", "users", "seconds",
 * "users_per_s", "checksum"} (the checksum sums the kept scores, so the work
 * cannot be optimised away).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef WITH_CBLAS
#include <cblas.h>
#endif

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

/* A version 1 .npy of float32 with shape (rows, cols). */
static float *read_npy(const char *dir, const char *name, long *rows, long *cols)
{
    char path[4096], head[1024];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    FILE *f = fopen(path, "rb");
    if (!f || fread(head, 1, 10, f) != 10) {
        fprintf(stderr, "%s: cannot read\n", path);
        exit(1);
    }
    unsigned hl = (unsigned char)head[8] | (unsigned char)head[9] << 8;
    if (hl >= sizeof(head) || fread(head, 1, hl, f) != hl) {
        fprintf(stderr, "%s: bad header\n", path);
        exit(1);
    }
    head[hl] = 0;
    char *s = strstr(head, "'shape': (");
    if (!s || sscanf(s, "'shape': (%ld, %ld)", rows, cols) != 2) {
        fprintf(stderr, "%s: no 2-D shape\n", path);
        exit(1);
    }
    float *m = malloc(sizeof(float) * *rows * *cols);
    if (!m || fread(m, sizeof(float), *rows * *cols, f) != (size_t)(*rows * *cols)) {
        fprintf(stderr, "%s: short\n", path);
        exit(1);
    }
    fclose(f);
    return m;
}

static const float *sort_scores;
static int by_score(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    if (sort_scores[x] != sort_scores[y])
        return sort_scores[x] > sort_scores[y] ? -1 : 1;
    return (x > y) - (x < y);
}

static double naive(const float *W, const float *H, long n_items, long k, long K, long users)
{
    float *s = malloc(sizeof(float) * n_items);
    uint32_t *idx = malloc(sizeof(uint32_t) * n_items);
    double sum = 0;
    for (long u = 0; u < users; u++) {
        for (long j = 0; j < n_items; j++) {
            float d = 0;
            for (long c = 0; c < k; c++)
                d += W[u * k + c] * H[j * k + c];
            s[j] = d;
            idx[j] = (uint32_t)j;
        }
        sort_scores = s;
        qsort(idx, n_items, sizeof(uint32_t), by_score);
        for (long j = 0; j < K; j++)
            sum += s[idx[j]];
    }
    free(s);
    free(idx);
    return sum;
}

#ifdef WITH_CBLAS
/* Keep the K best of one row: a min-heap on score. */
static double topk_row(const float *row, long n, long K, float *hs)
{
    long h = 0;
    for (long j = 0; j < n; j++) {
        float v = row[j];
        if (h < K) {
            long i = h++;
            while (i > 0 && hs[(i - 1) / 2] > v) {
                hs[i] = hs[(i - 1) / 2];
                i = (i - 1) / 2;
            }
            hs[i] = v;
        } else if (v > hs[0]) {
            long i = 0;
            for (;;) {
                long l = 2 * i + 1, r = l + 1, m = i;
                float mv = v;
                if (l < K && hs[l] < mv)
                    m = l, mv = hs[l];
                if (r < K && hs[r] < mv)
                    m = r;
                if (m == i)
                    break;
                hs[i] = hs[m];
                i = m;
            }
            hs[i] = v;
        }
    }
    double sum = 0;
    for (long i = 0; i < h; i++)
        sum += hs[i];
    return sum;
}

static double sgemm(const float *W, const float *H, long n_items, long k, long K, long users)
{
    enum { B = 256 };
    float *C = malloc(sizeof(float) * B * n_items), *hs = malloc(sizeof(float) * K);
    double sum = 0;
    for (long u0 = 0; u0 < users; u0 += B) {
        long nb = users - u0 < B ? users - u0 : B;
        cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, (int)nb, (int)n_items, (int)k, 1.0f,
                    W + u0 * k, (int)k, H, (int)k, 0.0f, C, (int)n_items);
        for (long i = 0; i < nb; i++)
            sum += topk_row(C + i * n_items, n_items, K, hs);
    }
    free(C);
    free(hs);
    return sum;
}
#endif

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: recommend_naive naive|sgemm DIR K USERS\n");
        return 2;
    }
    long wr, wc, hr, hc, K = atol(argv[3]), users = atol(argv[4]);
    float *W = read_npy(argv[2], "W.npy", &wr, &wc), *H = read_npy(argv[2], "H.npy", &hr, &hc);
    if (users > wr)
        users = wr;
    double t0 = now(), sum;
    if (!strcmp(argv[1], "naive"))
        sum = naive(W, H, hr, wc, K, users);
#ifdef WITH_CBLAS
    else if (!strcmp(argv[1], "sgemm"))
        sum = sgemm(W, H, hr, wc, K, users);
#endif
    else {
        fprintf(stderr, "recommend_naive: mode %s not built\n", argv[1]);
        return 2;
    }
    double t = now() - t0;
    printf("{\"mode\": \"%s\", \"users\": %ld, \"seconds\": %.3f, \"users_per_s\": %.1f, "
           "\"checksum\": %.6g}\n",
           argv[1], users, t, users / t, sum);
    free(W);
    free(H);
    return 0;
}
