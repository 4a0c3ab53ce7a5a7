/* cd_mf_kernels.c - the inner loops of CCD++ over one data block.
 *
 * A block is a list of row runs (cd_span), so the u-phase keeps a row's sums
 * in registers and touches the row accumulators once per run, and the
 * v-phase loads u_i once per run; the block's columns (v and its
 * accumulators) are a small array that stays in cache.  Sums are in double,
 * residuals and factors in float. */
#include "apps/cd_mf.h"

/* One rating of the u-phase: adjust and store its residual when asked, then
 * add its terms to the partial sums (a, b): E^ v and v^2, or with implicit
 * feedback ((c - w0) E^ + w0) v and (c - w0) v^2 (cf = c - w0).  `sub`,
 * `add` and `imp` are constants at each call site, so the compiler drops the
 * unused arithmetic. */
static inline void u_step(const cd_adjust *adj, int sub, int add, int imp, float us, float ua,
                          uint32_t j, float *res, float cf, double w0, const float *v, double *a,
                          double *b)
{
    float x = *res;
    if (sub)
        x -= us * adj->v_sub[j];
    if (add)
        x += ua * adj->v_add[j];
    if (sub || add)
        *res = x;
    double vj = v[j];
    if (imp) {
        *a += ((double)cf * x + w0) * vj;
        *b += (double)cf * (vj * vj);
    } else {
        *a += (double)x * vj;
        *b += vj * vj;
    }
}

/* Four independent partial sums per row run, so the loop is not bound by
 * the latency of one chain of additions. */
static inline void kernel_u(const cd_span *s, const cd_adjust *adj, int sub, int add, int imp,
                            const float *v, double *acc)
{
    const uint32_t *col = s->col;
    float *res = s->res;
    const float *conf = s->conf;
    double w0 = s->w0;
    for (size_t r = 0; r < s->n_runs; r++) {
        uint32_t i = s->run_row[r], n = s->run_len[r], e = 0;
        float us = sub ? adj->u_sub[i] : 0.0f, ua = add ? adj->u_add[i] : 0.0f;
        double a[4] = {0, 0, 0, 0}, b[4] = {0, 0, 0, 0};
        for (; e + 4 <= n; e += 4)
            for (int q = 0; q < 4; q++)
                u_step(adj, sub, add, imp, us, ua, col[e + q], res + e + q,
                       imp ? conf[e + q] : 0.0f, w0, v, &a[q], &b[q]);
        for (; e < n; e++)
            u_step(adj, sub, add, imp, us, ua, col[e], res + e, imp ? conf[e] : 0.0f, w0, v, &a[0],
                   &b[0]);
        acc[2 * (size_t)i] += (a[0] + a[1]) + (a[2] + a[3]);
        acc[2 * (size_t)i + 1] += (b[0] + b[1]) + (b[2] + b[3]);
        col += n;
        res += n;
        if (imp)
            conf += n;
    }
}

static void kernel_u_explicit(const cd_span *s, const cd_adjust *adj, int sub, int add,
                              const float *v, double *acc)
{
    if (sub && add)
        kernel_u(s, adj, 1, 1, 0, v, acc);
    else if (sub)
        kernel_u(s, adj, 1, 0, 0, v, acc);
    else if (add)
        kernel_u(s, adj, 0, 1, 0, v, acc);
    else
        kernel_u(s, adj, 0, 0, 0, v, acc);
}

static void kernel_u_implicit(const cd_span *s, const cd_adjust *adj, int sub, int add,
                              const float *v, double *acc)
{
    if (sub && add)
        kernel_u(s, adj, 1, 1, 1, v, acc);
    else if (sub)
        kernel_u(s, adj, 1, 0, 1, v, acc);
    else if (add)
        kernel_u(s, adj, 0, 1, 1, v, acc);
    else
        kernel_u(s, adj, 0, 0, 1, v, acc);
}

void cd_kernel_u(const cd_span *s, const cd_adjust *adj, const float *v, double *acc)
{
    int sub = adj && adj->u_sub, add = adj && adj->u_add;
    if (s->conf)
        kernel_u_implicit(s, adj, sub, add, v, acc);
    else
        kernel_u_explicit(s, adj, sub, add, v, acc);
}

static inline void kernel_adjust(const cd_span *s, const cd_adjust *adj, int sub, int add)
{
    const uint32_t *col = s->col;
    float *res = s->res;
    for (size_t r = 0; r < s->n_runs; r++) {
        uint32_t i = s->run_row[r], n = s->run_len[r];
        float us = sub ? adj->u_sub[i] : 0.0f, ua = add ? adj->u_add[i] : 0.0f;
        for (uint32_t e = 0; e < n; e++) {
            float x = res[e];
            if (sub)
                x -= us * adj->v_sub[col[e]];
            if (add)
                x += ua * adj->v_add[col[e]];
            res[e] = x;
        }
        col += n;
        res += n;
    }
}

void cd_kernel_adjust(const cd_span *s, const cd_adjust *adj)
{
    int sub = adj && adj->u_sub, add = adj && adj->u_add;
    if (sub && add)
        kernel_adjust(s, adj, 1, 1);
    else if (sub)
        kernel_adjust(s, adj, 1, 0);
    else if (add)
        kernel_adjust(s, adj, 0, 1);
}

/* The v-phase over one block; per entry also the squared loss (E^2, or
 * with implicit feedback c E^2 - w0 (1 - E)^2 = cf E^2 + 2 w0 E - w0) when
 * want_ssq. */
static inline double kernel_v(const cd_span *s, const float *u, double *acc, int want_ssq, int imp)
{
    const uint32_t *col = s->col;
    const float *res = s->res, *conf = s->conf;
    double w0 = s->w0, ssq = 0;
    for (size_t r = 0; r < s->n_runs; r++) {
        uint32_t n = s->run_len[r];
        double ui = u[s->run_row[r]], uu = ui * ui;
        for (uint32_t e = 0; e < n; e++) {
            double x = res[e], *a = acc + 2 * (size_t)col[e];
            if (imp) {
                double cf = conf[e];
                a[0] += (cf * x + w0) * ui;
                a[1] += cf * uu;
                if (want_ssq)
                    ssq += cf * (x * x) + 2 * w0 * x - w0;
            } else {
                a[0] += x * ui;
                a[1] += uu;
                if (want_ssq)
                    ssq += x * x;
            }
        }
        col += n;
        res += n;
        if (imp)
            conf += n;
    }
    return ssq;
}

double cd_kernel_v(const cd_span *s, const float *u, double *acc, int want_ssq)
{
    if (s->conf)
        return want_ssq ? kernel_v(s, u, acc, 1, 1) : kernel_v(s, u, acc, 0, 1);
    return want_ssq ? kernel_v(s, u, acc, 1, 0) : kernel_v(s, u, acc, 0, 0);
}

double cd_solve(const double *acc, size_t n, double lambda, const double *count, double lambda0,
                float *out)
{
    double decrease = 0;
    for (size_t i = 0; i < n; i++) {
        double d = (count ? lambda * count[i] : lambda) + lambda0 + acc[2 * i + 1];
        float x = d > 0 ? (float)(acc[2 * i] / d) : 0.0f;
        double step = (double)out[i] - x;
        decrease += d * step * step;
        out[i] = x;
    }
    return decrease;
}

double cd_solve_gram(const double *acc, size_t n, double lambda, const double *count,
                     double lambda0, const float *F, uint32_t k, uint32_t s, const double *gram_col,
                     double w0, float *out)
{
    double decrease = 0;
    for (size_t i = 0; i < n; i++) {
        double others = 0;
        for (uint32_t r = 0; r < k; r++)
            if (r != s)
                others += (double)F[(size_t)r * n + i] * gram_col[r];
        double d =
            (count ? lambda * count[i] : lambda) + lambda0 + w0 * gram_col[s] + acc[2 * i + 1];
        float x = d > 0 ? (float)((acc[2 * i] - w0 * others) / d) : 0.0f;
        double step = (double)out[i] - x;
        decrease += d * step * step;
        out[i] = x;
    }
    return decrease;
}

double cd_loss_delta(const float *v, const double *acc, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        double x = v[i];
        s += x * x * acc[2 * i + 1] - 2 * x * acc[2 * i];
    }
    return s;
}
