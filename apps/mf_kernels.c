/*
 * mf_kernels.c - the SGD-MF inner loop and the squared-error evaluator.
 *
 * Determinism across machines: the result of every kernel is defined by one
 * fixed sequence of IEEE float operations, and both code paths perform
 * exactly that sequence, so a model is bit-identical whether a node runs the
 * AVX2+FMA path (host, VM guest) or the portable one:
 *
 *   dot(a, b):  four 8-lane accumulators; chunk c (floats 8c..8c+7) is
 *               fused-multiply-added into accumulator c % 4; then
 *               s = (acc0 + acc1) + (acc2 + acc3) lane-wise, and lanes are
 *               folded (l, l+4), then (l, l+2), then (0, 1).
 *   update:     err = (((r - mu) - b_u) - b_i) - dot(u, h)   (biases optional)
 *               u' = fma(lr, fma(err, h, -(lambda_u * u)), u)
 *               h' = fma(lr, fma(err, u, -(lambda_h * h)), h)   (old u)
 *               b' = fma(lr, err - lambda_b * b, b)             (b_u and b_i)
 *               with lambda_u = lambda + reg_row[u], lambda_h = lambda +
 *               reg_col[h], lambda_b = lambda_bias + the same share (one
 *               float add each; without --lambda-const lambda itself)
 *   AdaGrad:    gu = fma(err, h, -(lambda_u * u)) (the negative gradient, gh
 *               alike), u' = fma(lr / sqrt(G_u), gu, u); G_u += fold(s) *
 *               grad_scale with s lane-wise fma(gu, gu, s) over the chunks and
 *               the same lane fold as dot; biases: g = err - lambda_b * b,
 *               b' = fma(lr / sqrt(G_b), g, b), G_b = fma(g, g, G_b).
 *
 * There is deliberately no AVX-512 path: 16-lane accumulation would change
 * the summation order (and so the bits), and at the ranks MF uses (k <= 128)
 * the kernel is bound by memory latency, not by vector width.
 */
#include "apps/mf_common.h"

#include <immintrin.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------- portable path */

static inline float fold_lanes(const float s[RT_MF_LANES]);

static float dot_portable(const float *a, const float *b, uint32_t kp)
{
    float acc[4][RT_MF_LANES] = {{0}};
    for (uint32_t c = 0; c < kp / RT_MF_LANES; c++)
        for (int l = 0; l < RT_MF_LANES; l++)
            acc[c % 4][l] = fmaf(a[c * RT_MF_LANES + l], b[c * RT_MF_LANES + l], acc[c % 4][l]);
    float s[RT_MF_LANES];
    for (int l = 0; l < RT_MF_LANES; l++)
        s[l] = (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]);
    return fold_lanes(s);
}

/* The L2 weights of one update: of the row's factors (u) and bias (bu), of
 * the column's (h, bi). */
typedef struct sgd_reg {
    float u, h, bu, bi;
} sgd_reg;

static inline sgd_reg update_reg(const rt_entry *e, const rt_sgd_params *p)
{
    sgd_reg r = {p->lambda, p->lambda, p->lambda_bias, p->lambda_bias};
    if (p->reg_row) {
        float row = p->reg_row[e->row], col = p->reg_col[e->col];
        r.u += row;
        r.bu += row;
        r.h += col;
        r.bi += col;
    }
    return r;
}

/* err = ((r - mu) - b_u - b_i) - dot, then b += lr * (err - lambda_b * b). */
static inline float bias_error(const rt_entry *e, const rt_sgd_params *p)
{
    float base = e->val * p->rating_inv - p->mu; /* exact: rating_inv is a power of two */
    if (p->bu)
        base = (base - p->bu[e->row]) - p->bi[e->col];
    return base;
}

/* lr / sqrt(G) and G += g^2 for one AdaGrad bias; plain lr without. */
static inline float adagrad_bias_step(const rt_sgd_params *p, float *G, float g)
{
    if (!G)
        return p->lr;
    float step = p->lr / sqrtf(*G);
    *G = fmaf(g, g, *G);
    return step;
}

static inline void bias_update(const rt_entry *e, const rt_sgd_params *p, sgd_reg reg, float err)
{
    if (!p->bu)
        return;
    float bu = p->bu[e->row], bi = p->bi[e->col];
    float gu = err - reg.bu * bu, gi = err - reg.bi * bi;
    float su = adagrad_bias_step(p, p->gbu ? &p->gbu[e->row] : NULL, gu);
    float si = adagrad_bias_step(p, p->gbi ? &p->gbi[e->col] : NULL, gi);
    p->bu[e->row] = fmaf(su, gu, bu);
    p->bi[e->col] = fmaf(si, gi, bi);
}

/* The lane fold of dot: (l, l+4), then (l, l+2), then (0, 1). */
static inline float fold_lanes(const float s[RT_MF_LANES])
{
    float h4[4], h2[2];
    for (int l = 0; l < 4; l++)
        h4[l] = s[l] + s[l + 4];
    for (int l = 0; l < 2; l++)
        h2[l] = h4[l] + h4[l + 2];
    return h2[0] + h2[1];
}

static void adagrad_rows_portable(float *u, float *h, float err, const rt_sgd_params *p,
                                  sgd_reg reg, float *Gu, float *Gh)
{
    float su[RT_MF_LANES] = {0}, sh[RT_MF_LANES] = {0};
    float lu = p->lr / sqrtf(*Gu), lh = p->lr / sqrtf(*Gh);
    for (uint32_t d = 0; d < p->kp; d++) {
        float ud = u[d], hd = h[d];
        float gu = fmaf(err, hd, -(reg.u * ud)), gh = fmaf(err, ud, -(reg.h * hd));
        su[d % RT_MF_LANES] = fmaf(gu, gu, su[d % RT_MF_LANES]);
        sh[d % RT_MF_LANES] = fmaf(gh, gh, sh[d % RT_MF_LANES]);
        u[d] = fmaf(lu, gu, ud);
        h[d] = fmaf(lh, gh, hd);
    }
    *Gu = fmaf(fold_lanes(su), p->grad_scale, *Gu);
    *Gh = fmaf(fold_lanes(sh), p->grad_scale, *Gh);
}

static double sgd_portable(const rt_entry *e, size_t n, float *W, float *H, const rt_sgd_params *p)
{
    const uint32_t kp = p->kp;
    double sse = 0;
    for (size_t i = 0; i < n; i++) {
        float *u = W + (size_t)e[i].row * kp;
        float *h = H + (size_t)e[i].col * kp;
        float err = bias_error(&e[i], p) - dot_portable(u, h, kp);
        sgd_reg reg = update_reg(&e[i], p);
        sse += (double)err * err;
        bias_update(&e[i], p, reg, err);
        if (p->gW) {
            adagrad_rows_portable(u, h, err, p, reg, &p->gW[e[i].row], &p->gH[e[i].col]);
            continue;
        }
        for (uint32_t d = 0; d < kp; d++) {
            float ud = u[d], hd = h[d];
            u[d] = fmaf(p->lr, fmaf(err, hd, -(reg.u * ud)), ud);
            h[d] = fmaf(p->lr, fmaf(err, ud, -(reg.h * hd)), hd);
        }
    }
    return sse;
}

static double sse_portable(const rt_entry *e, size_t n, const float *W, const float *H,
                           const rt_sgd_params *p)
{
    const uint32_t kp = p->kp;
    double sse = 0;
    for (size_t i = 0; i < n; i++) {
        float err = bias_error(&e[i], p) -
                    dot_portable(W + (size_t)e[i].row * kp, H + (size_t)e[i].col * kp, kp);
        sse += (double)err * err;
    }
    return sse;
}

/* ----------------------------------------------------------- AVX2 path */

#define AVX2 __attribute__((target("avx2,fma")))

AVX2 static inline float hsum_avx2(__m256 acc0, __m256 acc1, __m256 acc2, __m256 acc3)
{
    __m256 s = _mm256_add_ps(_mm256_add_ps(acc0, acc1), _mm256_add_ps(acc2, acc3));
    __m128 v4 = _mm_add_ps(_mm256_castps256_ps128(s), _mm256_extractf128_ps(s, 1));
    __m128 v2 = _mm_add_ps(v4, _mm_movehl_ps(v4, v4));
    __m128 v1 = _mm_add_ss(v2, _mm_shuffle_ps(v2, v2, 1));
    return _mm_cvtss_f32(v1);
}

AVX2 static inline float dot_avx2(const float *a, const float *b, uint32_t kp)
{
    __m256 acc[4] = {_mm256_setzero_ps(), _mm256_setzero_ps(), _mm256_setzero_ps(),
                     _mm256_setzero_ps()};
    for (uint32_t c = 0; c < kp / RT_MF_LANES; c++)
        acc[c % 4] = _mm256_fmadd_ps(_mm256_load_ps(a + c * RT_MF_LANES),
                                     _mm256_load_ps(b + c * RT_MF_LANES), acc[c % 4]);
    return hsum_avx2(acc[0], acc[1], acc[2], acc[3]);
}

/* One update; `kp` is a compile-time constant in the specialised loops below. */
AVX2 static inline float update_avx2(float *u, float *h, float r, __m256 lr, sgd_reg reg,
                                     uint32_t kp)
{
    float err = r - dot_avx2(u, h, kp);
    const __m256 ev = _mm256_set1_ps(err), lam_u = _mm256_set1_ps(reg.u),
                 lam_h = _mm256_set1_ps(reg.h);
    for (uint32_t d = 0; d < kp; d += RT_MF_LANES) {
        __m256 uo = _mm256_load_ps(u + d), ho = _mm256_load_ps(h + d);
        __m256 gu = _mm256_fmsub_ps(ev, ho, _mm256_mul_ps(lam_u, uo));
        __m256 gh = _mm256_fmsub_ps(ev, uo, _mm256_mul_ps(lam_h, ho));
        _mm256_store_ps(u + d, _mm256_fmadd_ps(lr, gu, uo));
        _mm256_store_ps(h + d, _mm256_fmadd_ps(lr, gh, ho));
    }
    return err;
}

/* The AdaGrad update of the two rows (see the top of the file). */
AVX2 static inline float adagrad_avx2(float *u, float *h, float r, const rt_sgd_params *p,
                                      sgd_reg reg, float *Gu, float *Gh, uint32_t kp)
{
    float err = r - dot_avx2(u, h, kp);
    const __m256 ev = _mm256_set1_ps(err), lam_u = _mm256_set1_ps(reg.u),
                 lam_h = _mm256_set1_ps(reg.h);
    const __m256 lu = _mm256_set1_ps(p->lr / sqrtf(*Gu)), lh = _mm256_set1_ps(p->lr / sqrtf(*Gh));
    __m256 su = _mm256_setzero_ps(), sh = _mm256_setzero_ps();
    for (uint32_t d = 0; d < kp; d += RT_MF_LANES) {
        __m256 uo = _mm256_load_ps(u + d), ho = _mm256_load_ps(h + d);
        __m256 gu = _mm256_fmsub_ps(ev, ho, _mm256_mul_ps(lam_u, uo));
        __m256 gh = _mm256_fmsub_ps(ev, uo, _mm256_mul_ps(lam_h, ho));
        su = _mm256_fmadd_ps(gu, gu, su);
        sh = _mm256_fmadd_ps(gh, gh, sh);
        _mm256_store_ps(u + d, _mm256_fmadd_ps(lu, gu, uo));
        _mm256_store_ps(h + d, _mm256_fmadd_ps(lh, gh, ho));
    }
    float fu[RT_MF_LANES], fh[RT_MF_LANES];
    _mm256_storeu_ps(fu, su);
    _mm256_storeu_ps(fh, sh);
    *Gu = fmaf(fold_lanes(fu), p->grad_scale, *Gu);
    *Gh = fmaf(fold_lanes(fh), p->grad_scale, *Gh);
    return err;
}

#define PREFETCH_AHEAD 8

AVX2 static inline double sgd_avx2_k(const rt_entry *e, size_t n, float *W, float *H,
                                     const rt_sgd_params *p, const uint32_t kp)
{
    const __m256 lr = _mm256_set1_ps(p->lr);
    double sse = 0;
    for (size_t i = 0; i < n; i++) {
        if (i + PREFETCH_AHEAD < n) {
            const float *hn = H + (size_t)e[i + PREFETCH_AHEAD].col * kp;
            for (uint32_t d = 0; d < kp; d += 16)
                _mm_prefetch((const char *)(hn + d), _MM_HINT_T0);
        }
        float *u = W + (size_t)e[i].row * kp, *h = H + (size_t)e[i].col * kp, err;
        sgd_reg reg = update_reg(&e[i], p);
        if (p->gW)
            err = adagrad_avx2(u, h, bias_error(&e[i], p), p, reg, &p->gW[e[i].row],
                               &p->gH[e[i].col], kp);
        else
            err = update_avx2(u, h, bias_error(&e[i], p), lr, reg, kp);
        sse += (double)err * err;
        bias_update(&e[i], p, reg, err);
    }
    return sse;
}

AVX2 static double sgd_avx2(const rt_entry *e, size_t n, float *W, float *H, const rt_sgd_params *p)
{
    switch (p->kp) { /* constant kp lets the compiler unroll the row loops */
    case 8:
        return sgd_avx2_k(e, n, W, H, p, 8);
    case 16:
        return sgd_avx2_k(e, n, W, H, p, 16);
    case 32:
        return sgd_avx2_k(e, n, W, H, p, 32);
    case 64:
        return sgd_avx2_k(e, n, W, H, p, 64);
    case 128:
        return sgd_avx2_k(e, n, W, H, p, 128);
    default:
        return sgd_avx2_k(e, n, W, H, p, p->kp);
    }
}

AVX2 static double sse_avx2(const rt_entry *e, size_t n, const float *W, const float *H,
                            const rt_sgd_params *p)
{
    const uint32_t kp = p->kp;
    double sse = 0;
    for (size_t i = 0; i < n; i++) {
        float err = bias_error(&e[i], p) -
                    dot_avx2(W + (size_t)e[i].row * kp, H + (size_t)e[i].col * kp, kp);
        sse += (double)err * err;
    }
    return sse;
}

/* ------------------------------------------------------------- dispatch */

/* The caller decides the path once (rt_mf_kernel_pick at start-up) and
 * passes it in every call: no lazily cached flag raced by worker threads,
 * and no silent fallback, so a test that asks for a path gets that path. */

rt_mf_kernel rt_mf_kernel_best(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma") ? RT_MF_KERNEL_AVX2
                                                                           : RT_MF_KERNEL_PORTABLE;
}

int rt_mf_kernel_pick(const char *name, rt_mf_kernel *out, rt_error *err)
{
    if (!strcmp(name, "auto")) {
        *out = rt_mf_kernel_best();
    } else if (!strcmp(name, "portable")) {
        *out = RT_MF_KERNEL_PORTABLE;
    } else if (!strcmp(name, "avx2")) {
        if (rt_mf_kernel_best() != RT_MF_KERNEL_AVX2)
            return rt_fail(err, RT_EXIT_INPUT, "--kernel avx2: this CPU lacks AVX2 or FMA");
        *out = RT_MF_KERNEL_AVX2;
    } else {
        return rt_fail(err, RT_EXIT_INPUT, "--kernel must be auto, portable or avx2, got '%s'",
                       name);
    }
    return 0;
}

const char *rt_mf_kernel_name(rt_mf_kernel k)
{
    return k == RT_MF_KERNEL_AVX2 ? "avx2-fma" : "portable";
}

double rt_sgd_block(const rt_entry *e, size_t n, float *W, float *H, const rt_sgd_params *p)
{
    return p->kernel == RT_MF_KERNEL_AVX2 ? sgd_avx2(e, n, W, H, p) : sgd_portable(e, n, W, H, p);
}

double rt_mf_block_sse(const rt_entry *e, size_t n, const float *W, const float *H,
                       const rt_sgd_params *p)
{
    return p->kernel == RT_MF_KERNEL_AVX2 ? sse_avx2(e, n, W, H, p) : sse_portable(e, n, W, H, p);
}

/* Prediction outside the training loop (evaluation) is not hot: the portable
 * path gives the same bits as the AVX2 one without a kernel argument. */
float rt_mf_dot(const float *a, const float *b, uint32_t kp)
{
    return dot_portable(a, b, kp);
}
