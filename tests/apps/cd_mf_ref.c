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
        double dn = (f->o->weighted ? f->o->lambda * count[a] : f->o->lambda) + den;
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
        s += (f->o->weighted ? count[x] : 1.0) * q;
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
    pt->objective = loss + f->o->lambda * reg;
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
