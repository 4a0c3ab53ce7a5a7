/* cd_mf_kernels.c - the inner loops of CCD++ over one data block.
 *
 * A block is a list of row runs (cd_span), so the u-phase keeps a row's sums
 * in registers and touches the row accumulators once per run, and the
 * v-phase loads u_i once per run; the block's columns (v and its
 * accumulators) are a small array that stays in cache.  Sums are in double,
 * residuals and factors in float. */
#include "cd_mf.h"

/* `sub`/`add` are constants at each call site, so the compiler drops the
 * unused arithmetic from each copy of the loop. */
static inline void kernel_u(const cd_span *s, const cd_adjust *adj, int sub, int add,
                            const float *v, double *num, double *den)
{
    const uint32_t *col = s->col;
    float *res = s->res;
    for (size_t r = 0; r < s->n_runs; r++) {
        uint32_t i = s->run_row[r], n = s->run_len[r];
        float us = sub ? adj->u_sub[i] : 0.0f, ua = add ? adj->u_add[i] : 0.0f;
        double a = 0, b = 0;
        for (uint32_t e = 0; e < n; e++) {
            uint32_t j = col[e];
            float x = res[e];
            if (sub)
                x -= us * adj->v_sub[j];
            if (add)
                x += ua * adj->v_add[j];
            if (sub || add)
                res[e] = x;
            double vj = v[j];
            a += (double)x * vj;
            b += vj * vj;
        }
        num[i] += a;
        den[i] += b;
        col += n;
        res += n;
    }
}

void cd_kernel_u(const cd_span *s, const cd_adjust *adj, const float *v, double *num, double *den)
{
    int sub = adj && adj->u_sub, add = adj && adj->u_add;
    if (sub && add)
        kernel_u(s, adj, 1, 1, v, num, den);
    else if (sub)
        kernel_u(s, adj, 1, 0, v, num, den);
    else if (add)
        kernel_u(s, adj, 0, 1, v, num, den);
    else
        kernel_u(s, adj, 0, 0, v, num, den);
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

static inline double kernel_v(const cd_span *s, const float *u, double *num, double *den,
                              int want_ssq)
{
    const uint32_t *col = s->col;
    const float *res = s->res;
    double ssq = 0;
    for (size_t r = 0; r < s->n_runs; r++) {
        uint32_t n = s->run_len[r];
        double ui = u[s->run_row[r]], uu = ui * ui;
        for (uint32_t e = 0; e < n; e++) {
            double x = res[e];
            num[col[e]] += x * ui;
            den[col[e]] += uu;
            if (want_ssq)
                ssq += x * x;
        }
        col += n;
        res += n;
    }
    return ssq;
}

double cd_kernel_v(const cd_span *s, const float *u, double *num, double *den, int want_ssq)
{
    return want_ssq ? kernel_v(s, u, num, den, 1) : kernel_v(s, u, num, den, 0);
}

void cd_solve(const double *num, const double *den, size_t n, double lambda, float *out)
{
    for (size_t i = 0; i < n; i++) {
        double d = lambda + den[i];
        out[i] = d > 0 ? (float)(num[i] / d) : 0.0f;
    }
}

double cd_loss_delta(const float *v, const double *num, const double *den, size_t n)
{
    double s = 0;
    for (size_t i = 0; i < n; i++) {
        double x = v[i];
        s += x * x * den[i] - 2 * x * num[i];
    }
    return s;
}
