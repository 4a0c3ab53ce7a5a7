/* cd_mf_kernels.c - the inner loops of CCD++ over one data block.
 *
 * Entries of an MF data block are sorted by (row, col), so the u-phase keeps
 * a row's sums in registers and touches the row accumulators once per row
 * run; the block's columns (v and its accumulators) are a small array that
 * stays in cache.  Sums are in double, residuals and factors in float. */
#include "cd_mf.h"

#include <string.h>

/* Residual after the optional adjustment; `sub`/`add` are constants at each
 * call site so the compiler drops the unused arithmetic. */
static inline float adjusted(float r, uint32_t i, uint32_t j, const cd_adjust *adj, int sub,
                             int add)
{
    if (sub)
        r -= adj->u_sub[i] * adj->v_sub[j];
    if (add)
        r += adj->u_add[i] * adj->v_add[j];
    return r;
}

static inline void kernel_u(const rt_entry *ent, size_t n, float *res, const cd_adjust *adj,
                            int sub, int add, const float *v, double *num, double *den)
{
    size_t e = 0;
    while (e < n) {
        uint32_t i = ent[e].row;
        double a = 0, b = 0;
        for (; e < n && ent[e].row == i; e++) {
            uint32_t j = ent[e].col;
            float r = res[e];
            if (sub || add) {
                r = adjusted(r, i, j, adj, sub, add);
                res[e] = r;
            }
            double vj = v[j];
            a += (double)r * vj;
            b += vj * vj;
        }
        num[i] += a;
        den[i] += b;
    }
}

void cd_kernel_u(const rt_entry *ent, size_t n, float *res, const cd_adjust *adj, const float *v,
                 double *num, double *den)
{
    int sub = adj && adj->u_sub, add = adj && adj->u_add;
    if (sub && add)
        kernel_u(ent, n, res, adj, 1, 1, v, num, den);
    else if (sub)
        kernel_u(ent, n, res, adj, 1, 0, v, num, den);
    else if (add)
        kernel_u(ent, n, res, adj, 0, 1, v, num, den);
    else
        kernel_u(ent, n, res, adj, 0, 0, v, num, den);
}

void cd_kernel_adjust(const rt_entry *ent, size_t n, float *res, const cd_adjust *adj)
{
    int sub = adj && adj->u_sub, add = adj && adj->u_add;
    for (size_t e = 0; e < n; e++) {
        uint32_t i = ent[e].row, j = ent[e].col;
        if (sub && add)
            res[e] = adjusted(res[e], i, j, adj, 1, 1);
        else if (sub)
            res[e] = adjusted(res[e], i, j, adj, 1, 0);
        else if (add)
            res[e] = adjusted(res[e], i, j, adj, 0, 1);
    }
}

double cd_kernel_v(const rt_entry *ent, size_t n, const float *res, const float *u, double *num,
                   double *den, int want_ssq)
{
    double ssq = 0;
    size_t e = 0;
    while (e < n) {
        uint32_t i = ent[e].row;
        double ui = u[i], uu = ui * ui;
        for (; e < n && ent[e].row == i; e++) {
            uint32_t j = ent[e].col;
            double r = res[e];
            num[j] += r * ui;
            den[j] += uu;
            if (want_ssq)
                ssq += r * r;
        }
    }
    return ssq;
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
