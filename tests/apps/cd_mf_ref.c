/* cd_mf_ref.c - serial reference CCD++ (see cd_mf_ref.h).
 *
 * Deliberately naive: global row and column lists, double everywhere, every
 * rank-one term added back and taken out explicitly, the objective computed
 * from the residuals.  Only the initialisation comes from cd-mf's code:
 * W = 0 and H0 from the MF apps' rt_mf_init_vector. */
#include "tests/apps/cd_mf_ref.h"
#include "apps/mf_common.h"

#include <math.h>
#include <stdlib.h>

/* Entry indices grouped by key (counting sort): idx[start[x] .. start[x+1]). */
static int group_by(const uint32_t *key, size_t n, uint32_t n_keys, size_t **start, size_t **idx)
{
    *start = calloc((size_t)n_keys + 1, sizeof(size_t));
    *idx = malloc((n ? n : 1) * sizeof(size_t));
    size_t *fill = calloc((size_t)n_keys + 1, sizeof(size_t));
    if (!*start || !*idx || !fill) {
        free(fill);
        return -1;
    }
    for (size_t e = 0; e < n; e++)
        (*start)[key[e] + 1]++;
    for (uint32_t x = 0; x < n_keys; x++)
        (*start)[x + 1] += (*start)[x];
    for (size_t e = 0; e < n; e++)
        (*idx)[(*start)[key[e]] + fill[key[e]]++] = e;
    free(fill);
    return 0;
}

double *cd_ref_initial_H(uint32_t n_cols, int k, uint64_t seed, double init_scale)
{
    rt_mf_common_opts o;
    rt_mf_common_defaults(&o);
    o.k = (uint32_t)k;
    o.seed = seed;
    o.init_scale = init_scale;
    uint32_t kp = rt_mf_padded_rank(o.k);
    double *H = malloc(((size_t)n_cols * k + 1) * sizeof(double));
    float *h = malloc(kp * sizeof(float));
    if (!H || !h) {
        free(H);
        free(h);
        return NULL;
    }
    for (uint32_t j = 0; j < n_cols; j++) {
        rt_mf_init_vector(h, o.k, kp, &o, 1, j);
        for (int r = 0; r < k; r++)
            H[(size_t)j * k + r] = h[r];
    }
    free(h);
    return H;
}

int cd_ref_run(const cd_ref_data *d, int k, int outer, int inner, double lambda, const double *H0,
               cd_ref_point *per_outer, double *W_out, double *H_out)
{
    size_t *rs = NULL, *ri = NULL, *cs = NULL, *ci = NULL;
    double *W = calloc((size_t)d->n_rows * k, sizeof(double));
    double *H = calloc((size_t)d->n_cols * k, sizeof(double));
    double *R = malloc((d->n ? d->n : 1) * sizeof(double));
    int rc = -1;
    if (!W || !H || !R || group_by(d->row, d->n, d->n_rows, &rs, &ri) ||
        group_by(d->col, d->n, d->n_cols, &cs, &ci))
        goto out;

    for (size_t x = 0; x < (size_t)d->n_cols * k; x++)
        H[x] = H0[x];
    for (size_t e = 0; e < d->n; e++)
        R[e] = d->val[e]; /* R - W H^T with W = 0 */

    for (int o = 0; o < outer; o++) {
        for (int r = 0; r < k; r++) {
            /* R^ = R + u v^T */
            for (size_t e = 0; e < d->n; e++)
                R[e] += W[(size_t)d->row[e] * k + r] * H[(size_t)d->col[e] * k + r];
            for (int t = 0; t < inner; t++) {
                /* u_i = sum_j R^_ij v_j / (lambda + sum_j v_j^2) */
                for (uint32_t i = 0; i < d->n_rows; i++) {
                    double num = 0, den = 0;
                    for (size_t p = rs[i]; p < rs[i + 1]; p++) {
                        double v = H[(size_t)d->col[ri[p]] * k + r];
                        num += R[ri[p]] * v;
                        den += v * v;
                    }
                    W[(size_t)i * k + r] = lambda + den > 0 ? num / (lambda + den) : 0;
                }
                /* v_j = sum_i R^_ij u_i / (lambda + sum_i u_i^2) */
                for (uint32_t j = 0; j < d->n_cols; j++) {
                    double num = 0, den = 0;
                    for (size_t p = cs[j]; p < cs[j + 1]; p++) {
                        double u = W[(size_t)d->row[ci[p]] * k + r];
                        num += R[ci[p]] * u;
                        den += u * u;
                    }
                    H[(size_t)j * k + r] = lambda + den > 0 ? num / (lambda + den) : 0;
                }
            }
            /* R = R^ - u v^T */
            for (size_t e = 0; e < d->n; e++)
                R[e] -= W[(size_t)d->row[e] * k + r] * H[(size_t)d->col[e] * k + r];
        }
        double loss = 0, norms = 0, test = 0;
        for (size_t e = 0; e < d->n; e++)
            loss += R[e] * R[e];
        for (size_t x = 0; x < (size_t)d->n_rows * k; x++)
            norms += W[x] * W[x];
        for (size_t x = 0; x < (size_t)d->n_cols * k; x++)
            norms += H[x] * H[x];
        for (size_t e = 0; e < d->nt; e++) {
            double p = 0;
            for (int r = 0; r < k; r++)
                p += W[(size_t)d->trow[e] * k + r] * H[(size_t)d->tcol[e] * k + r];
            test += (d->tval[e] - p) * (d->tval[e] - p);
        }
        cd_ref_point *pt = &per_outer[o];
        pt->loss = loss;
        pt->objective = loss + lambda * norms;
        pt->train_rmse = d->n ? sqrt(loss / (double)d->n) : NAN;
        pt->test_rmse = d->nt ? sqrt(test / (double)d->nt) : NAN;
    }
    for (size_t x = 0; W_out && x < (size_t)d->n_rows * k; x++)
        W_out[x] = W[x];
    for (size_t x = 0; H_out && x < (size_t)d->n_cols * k; x++)
        H_out[x] = H[x];
    rc = 0;
out:
    free(W);
    free(H);
    free(R);
    free(rs);
    free(ri);
    free(cs);
    free(ci);
    return rc;
}
