/* cd_mf_ref.c - serial reference CCD++ (see cd_mf_ref.h).
 *
 * Deliberately naive: global row and column lists, every rank-one term added
 * back and taken out explicitly, the objective computed from the
 * predictions.  Only the initialisation comes from cd-mf's code: W = 0 and
 * H0 from the MF apps' rt_mf_init_vector. */
#include "tests/apps/cd_mf_ref.h"
#include "apps/mf_common.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* Entry indices grouped by key (counting sort): idx[start[x] .. start[x+1]),
 * validation entries left out. */
static int group_by(const uint32_t *key, const uint8_t *held, size_t n, uint32_t n_keys,
                    size_t **start, size_t **idx)
{
    *start = calloc((size_t)n_keys + 1, sizeof(size_t));
    *idx = malloc((n ? n : 1) * sizeof(size_t));
    size_t *fill = calloc((size_t)n_keys + 1, sizeof(size_t));
    if (!*start || !*idx || !fill) {
        free(fill);
        return -1;
    }
    for (size_t e = 0; e < n; e++)
        if (!held || !held[e])
            (*start)[key[e] + 1]++;
    for (uint32_t x = 0; x < n_keys; x++)
        (*start)[x + 1] += (*start)[x];
    for (size_t e = 0; e < n; e++)
        if (!held || !held[e])
            (*idx)[(*start)[key[e]] + fill[key[e]]++] = e;
    free(fill);
    return 0;
}

float *cd_ref_initial_H(uint32_t n_cols, int k, uint64_t seed, double init_scale)
{
    rt_mf_common_opts o;
    rt_mf_common_defaults(&o);
    o.k = (uint32_t)k;
    o.seed = seed;
    o.init_scale = init_scale;
    o.init_uniform = 1;
    uint32_t kp = rt_mf_padded_rank(o.k);
    float *H = malloc(((size_t)n_cols * k + 1) * sizeof(float));
    float *h = malloc(kp * sizeof(float));
    if (!H || !h) {
        free(H);
        free(h);
        return NULL;
    }
    for (uint32_t j = 0; j < n_cols; j++) {
        rt_mf_init_vector(h, o.k, kp, &o, 1, j);
        for (int r = 0; r < k; r++)
            H[(size_t)r * n_cols + j] = h[r];
    }
    free(h);
    return H;
}

typedef struct ref {
    const cd_ref_data *d;
    const cd_ref_opts *o;
    size_t *rs, *ri, *cs, *ci; /* training entries by row and by column */
    float *R, *T;              /* residuals of the training (and held) and test entries */
    float *W, *H, *b, *c, *ones_r, *ones_c;
    double *nr, *nc; /* training ratings per row and column */
    float mu;
} ref;

static int slots(const ref *f)
{
    return f->o->k + (f->o->biases ? 2 : 0);
}

/* The factors of slot s and which of them is solved. */
static void slot_factors(ref *f, int s, float **u, float **v, int *free_u, int *free_v)
{
    int first = f->o->biases ? 2 : 0;
    *free_u = *free_v = 1;
    if (f->o->biases && s == 0) {
        *u = f->b, *v = f->ones_c, *free_v = 0;
    } else if (f->o->biases && s == 1) {
        *u = f->ones_r, *v = f->c, *free_u = 0;
    } else {
        *u = f->W + (size_t)(s - first) * f->d->n_rows;
        *v = f->H + (size_t)(s - first) * f->d->n_cols;
    }
}

/* E += sign u v^T on every residual, in float as cd-mf does. */
static void adjust(ref *f, const float *u, const float *v, int sign)
{
    const cd_ref_data *d = f->d;
    for (size_t e = 0; e < d->n; e++) {
        float uv = u[d->row[e]] * v[d->col[e]];
        f->R[e] = sign > 0 ? f->R[e] + uv : f->R[e] - uv;
    }
    for (size_t e = 0; e < d->nt; e++) {
        float uv = u[d->trow[e]] * v[d->tcol[e]];
        f->T[e] = sign > 0 ? f->T[e] + uv : f->T[e] - uv;
    }
}

/* lambda_a of a row or column with n training ratings. */
static double reg_weight(const cd_ref_opts *o, double n)
{
    return (o->weighted ? o->lambda * n : o->lambda) + o->lambda_const;
}

/* x_a = sum_{e in a} R_e y_{other(e)} / (lambda_a + sum y^2) for every a;
 * returns the objective decrease sum (lambda_a + den) (old - new)^2. */
static double solve(ref *f, uint32_t n, const size_t *start, const size_t *idx,
                    const uint32_t *other, const float *y, const double *count, float *x)
{
    double dec = 0;
    for (uint32_t a = 0; a < n; a++) {
        double num = 0, den = 0;
        for (size_t p = start[a]; p < start[a + 1]; p++) {
            double yv = y[other[idx[p]]];
            num += f->R[idx[p]] * yv;
            den += yv * yv;
        }
        double dn = reg_weight(f->o, count[a]) + den;
        float nx = dn > 0 ? (float)(num / dn) : 0.0f;
        dec += dn * ((double)x[a] - nx) * ((double)x[a] - nx);
        x[a] = nx;
    }
    return dec;
}

static double predict(const ref *f, uint32_t i, uint32_t j)
{
    double p = (double)f->mu + f->b[i] + f->c[j];
    for (int r = 0; r < f->o->k; r++)
        p += (double)f->W[(size_t)r * f->d->n_rows + i] * f->H[(size_t)r * f->d->n_cols + j];
    return p;
}

static double norms(const ref *f, const float *F, const float *bias, const double *count,
                    uint32_t n)
{
    double s = 0;
    for (uint32_t x = 0; x < n; x++) {
        double q = (double)bias[x] * bias[x];
        for (int r = 0; r < f->o->k; r++)
            q += (double)F[(size_t)r * n + x] * F[(size_t)r * n + x];
        s += reg_weight(f->o, count[x]) * q;
    }
    return s;
}

static void measure(const ref *f, cd_ref_point *pt)
{
    const cd_ref_data *d = f->d;
    double loss = 0, valid = 0, test = 0;
    size_t n = 0, nv = 0;
    for (size_t e = 0; e < d->n; e++) {
        double r = d->val[e] - predict(f, d->row[e], d->col[e]);
        if (d->held && d->held[e])
            valid += r * r, nv++;
        else
            loss += r * r, n++;
    }
    for (size_t e = 0; e < d->nt; e++) {
        double r = d->tval[e] - predict(f, d->trow[e], d->tcol[e]);
        test += r * r;
    }
    double reg = norms(f, f->W, f->b, f->nr, d->n_rows) + norms(f, f->H, f->c, f->nc, d->n_cols);
    pt->loss = loss;
    pt->objective = loss + reg;
    pt->train_rmse = n ? sqrt(loss / (double)n) : NAN;
    pt->valid_rmse = nv ? sqrt(valid / (double)nv) : NAN;
    pt->test_rmse = d->nt ? sqrt(test / (double)d->nt) : NAN;
}

/* One outer iteration: every slot in turn, LIBPMF's early exit. */
static void outer_iteration(ref *f, int o)
{
    const cd_ref_data *d = f->d;
    int S = slots(f), first = f->o->biases ? 2 : 0;
    double dec_max = 0;
    for (int s = 0; s < S; s++) {
        float *u, *v;
        int free_u, free_v;
        slot_factors(f, s, &u, &v, &free_u, &free_v);
        if (o > 0 && S > 1)
            adjust(f, u, v, +1); /* E^ = E + u v^T */
        int T = s >= first ? f->o->inner : 1;
        for (int t = 0; t < T; t++) {
            double dec = 0;
            if (free_u)
                dec += solve(f, d->n_rows, f->rs, f->ri, d->col, v, f->nr, u);
            if (free_v)
                dec += solve(f, d->n_cols, f->cs, f->ci, d->row, u, f->nc, v);
            if (s < first || !(f->o->inner_eps > 0))
                continue;
            if (dec < dec_max * f->o->inner_eps)
                break;
            if (!(o == 0 && s == first && t == 0) && dec > dec_max)
                dec_max = dec;
        }
        if (S > 1)
            adjust(f, u, v, -1); /* E = E^ - u v^T */
    }
}

/* ---- implicit feedback: dense loops over every pair ---- */

typedef struct dense {
    uint32_t m, n; /* rows, columns */
    int k;
    double *C, *P; /* confidence and preference of every pair, m x n */
    float *W, *H;  /* rank-major factors */
    double *nr, *nc;
} dense;

static double dense_confidence(const cd_ref_opts *o, double r)
{
    double f = o->confidence == 2 ? 1 : o->confidence == 1 ? log(1 + r) : r;
    return 1 + o->alpha * f;
}

/* The prediction of pair (i, j) without rank s (s = -1: all ranks). */
static double dense_predict(const dense *g, uint32_t i, uint32_t j, int s)
{
    double p = 0;
    for (int r = 0; r < g->k; r++)
        if (r != s)
            p += (double)g->W[(size_t)r * g->m + i] * g->H[(size_t)r * g->n + j];
    return p;
}

/* Rank s of one side: x_a = sum_b C (P - p^) y_b / (lambda_a + sum_b C y_b^2)
 * over every b of the other side (rows when rows = 1). */
static double dense_solve(const dense *g, const cd_ref_opts *o, int s, int rows)
{
    uint32_t na = rows ? g->m : g->n, nb = rows ? g->n : g->m;
    float *x = (rows ? g->W : g->H) + (size_t)s * na;
    const float *y = (rows ? g->H : g->W) + (size_t)s * nb;
    const double *count = rows ? g->nr : g->nc;
    double dec = 0;
    for (uint32_t a = 0; a < na; a++) {
        double num = 0, den = 0;
        for (uint32_t b = 0; b < nb; b++) {
            uint32_t i = rows ? a : b, j = rows ? b : a;
            size_t ij = (size_t)i * g->n + j;
            num += g->C[ij] * (g->P[ij] - dense_predict(g, i, j, s)) * y[b];
            den += g->C[ij] * (double)y[b] * y[b];
        }
        double d = reg_weight(o, count[a]) + den;
        float nx = d > 0 ? (float)(num / d) : 0.0f;
        dec += d * ((double)x[a] - nx) * ((double)x[a] - nx);
        x[a] = nx;
    }
    return dec;
}

static double dense_objective(const dense *g, const cd_ref_opts *o, double *loss)
{
    double l = 0, reg = 0;
    for (uint32_t i = 0; i < g->m; i++)
        for (uint32_t j = 0; j < g->n; j++) {
            size_t ij = (size_t)i * g->n + j;
            double e = g->P[ij] - dense_predict(g, i, j, -1);
            l += g->C[ij] * e * e;
        }
    for (int r = 0; r < g->k; r++) {
        for (uint32_t i = 0; i < g->m; i++) {
            double w = g->W[(size_t)r * g->m + i];
            reg += reg_weight(o, g->nr[i]) * w * w;
        }
        for (uint32_t j = 0; j < g->n; j++) {
            double h = g->H[(size_t)r * g->n + j];
            reg += reg_weight(o, g->nc[j]) * h * h;
        }
    }
    *loss = l;
    return l + reg;
}

/* The same outer iterations as CCD++ above, LIBPMF's early exit included. */
static void dense_outer(dense *g, const cd_ref_opts *o, int it, double *dec_max)
{
    for (int s = 0; s < g->k; s++)
        for (int t = 0; t < o->inner; t++) {
            double dec = dense_solve(g, o, s, 1) + dense_solve(g, o, s, 0);
            if (!(o->inner_eps > 0))
                continue;
            if (dec < *dec_max * o->inner_eps)
                break;
            if (!(it == 0 && s == 0 && t == 0) && dec > *dec_max)
                *dec_max = dec;
        }
}

static int implicit_run(const cd_ref_data *d, const cd_ref_opts *o, const float *H0,
                        cd_ref_point *per_outer, float *W_out, float *H_out)
{
    dense g = {.m = d->n_rows, .n = d->n_cols, .k = o->k};
    size_t mn = (size_t)g.m * g.n, k = (size_t)o->k;
    g.C = malloc((mn + 1) * sizeof(double)), g.P = calloc(mn + 1, sizeof(double));
    g.W = calloc(g.m * k + 1, sizeof(float)), g.H = malloc((g.n * k + 1) * sizeof(float));
    g.nr = calloc(g.m + 1, sizeof(double)), g.nc = calloc(g.n + 1, sizeof(double));
    int rc = -1;
    if (!g.C || !g.P || !g.W || !g.H || !g.nr || !g.nc)
        goto out;
    for (size_t x = 0; x < mn; x++)
        g.C[x] = o->w0;
    for (size_t e = 0; e < d->n; e++) {
        size_t ij = (size_t)d->row[e] * g.n + d->col[e];
        g.C[ij] = dense_confidence(o, d->val[e]);
        g.P[ij] = 1;
        g.nr[d->row[e]]++, g.nc[d->col[e]]++;
    }
    memcpy(g.H, H0, g.n * k * sizeof(float));
    double dec_max = 0;
    for (int it = 0; it < o->outer; it++) {
        dense_outer(&g, o, it, &dec_max);
        dec_max = 0;
        cd_ref_point *pt = &per_outer[it];
        pt->objective = dense_objective(&g, o, &pt->loss);
        pt->train_rmse = pt->test_rmse = pt->valid_rmse = NAN;
    }
    if (W_out)
        memcpy(W_out, g.W, g.m * k * sizeof(float));
    if (H_out)
        memcpy(H_out, g.H, g.n * k * sizeof(float));
    rc = 0;
out:
    free(g.C), free(g.P), free(g.W), free(g.H), free(g.nr), free(g.nc);
    return rc;
}

static float *filled(size_t n, float x)
{
    float *a = malloc((n ? n : 1) * sizeof(float));
    for (size_t i = 0; a && i < n; i++)
        a[i] = x;
    return a;
}

int cd_ref_run(const cd_ref_data *d, const cd_ref_opts *o, const float *H0, cd_ref_point *per_outer,
               float *W_out, float *H_out)
{
    if (o->implicit)
        return implicit_run(d, o, H0, per_outer, W_out, H_out);
    ref f = {.d = d, .o = o};
    size_t k = (size_t)o->k;
    f.W = filled(d->n_rows * k, 0), f.H = filled(d->n_cols * k, 0);
    f.b = filled(d->n_rows, 0), f.c = filled(d->n_cols, 0);
    f.ones_r = filled(d->n_rows, 1), f.ones_c = filled(d->n_cols, 1);
    f.R = filled(d->n, 0), f.T = filled(d->nt, 0);
    f.nr = calloc(d->n_rows + 1, sizeof(double)), f.nc = calloc(d->n_cols + 1, sizeof(double));
    int rc = -1;
    if (!f.W || !f.H || !f.b || !f.c || !f.ones_r || !f.ones_c || !f.R || !f.T || !f.nr || !f.nc ||
        group_by(d->row, d->held, d->n, d->n_rows, &f.rs, &f.ri) ||
        group_by(d->col, d->held, d->n, d->n_cols, &f.cs, &f.ci))
        goto out;

    double sum = 0, n = 0;
    for (size_t e = 0; e < d->n; e++)
        if (!d->held || !d->held[e]) {
            sum += d->val[e], n++;
            f.nr[d->row[e]]++, f.nc[d->col[e]]++;
        }
    f.mu = o->center && n > 0 ? (float)(sum / n) : 0.0f;
    memcpy(f.H, H0, d->n_cols * k * sizeof(float));
    for (size_t e = 0; e < d->n; e++)
        f.R[e] = d->val[e] - f.mu; /* E = R - mu: W and the biases start at 0 */
    for (size_t e = 0; e < d->nt; e++)
        f.T[e] = d->tval[e] - f.mu;

    for (int it = 0; it < o->outer; it++) {
        outer_iteration(&f, it);
        measure(&f, &per_outer[it]);
    }
    if (W_out)
        memcpy(W_out, f.W, d->n_rows * k * sizeof(float));
    if (H_out)
        memcpy(H_out, f.H, d->n_cols * k * sizeof(float));
    rc = 0;
out:
    free(f.W), free(f.H), free(f.b), free(f.c), free(f.ones_r), free(f.ones_c);
    free(f.R), free(f.T), free(f.nr), free(f.nc);
    free(f.rs), free(f.ri), free(f.cs), free(f.ci);
    return rc;
}
