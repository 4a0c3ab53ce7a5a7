/* cd_mf_ref.h - a plain serial CCD++ written straight from the update
 * equations of Yu et al. (ICDM'12) as LIBPMF runs them (frequency-weighted
 * regulariser, early exit of the inner alternations), plus the global mean
 * and the row and column biases as rank-one terms with a unit factor, on one
 * global ratings list.  Residuals and factors are stored in float as cd-mf
 * stores them, every sum is in double.  The tests check the distributed
 * cd-mf against it. */
#ifndef ROTOR_TESTS_CD_MF_REF_H
#define ROTOR_TESTS_CD_MF_REF_H

#include <stddef.h>
#include <stdint.h>

typedef struct cd_ref_data {
    uint32_t n_rows, n_cols;
    size_t n; /* training ratings (validation ones included, flagged in held) */
    uint32_t *row, *col;
    float *val;
    uint8_t *held; /* NULL, or 1 for a training rating held out for validation */
    size_t nt;     /* test ratings */
    uint32_t *trow, *tcol;
    float *tval;
} cd_ref_data;

typedef struct cd_ref_opts {
    int k, outer, inner;
    double lambda, inner_eps;
    double lambda_const; /* added to every row's and column's lambda (n) */
    int weighted, biases, center;
    /* Implicit feedback (no biases, no mean): a dense confidence matrix,
     * c = 1 + alpha f(r) on the training pairs (f = r, ln(1 + r) or 1 for
     * confidence 0, 1, 2), w0 elsewhere, and preferences 1 and 0. */
    int implicit, confidence;
    double alpha, w0;
} cd_ref_opts;

typedef struct cd_ref_point { /* after one outer iteration */
    double objective, loss, train_rmse, test_rmse, valid_rmse;
} cd_ref_point;

/* Run `outer` outer iterations from W = 0, biases 0 and H = H0 (k x n_cols,
 * rank-major); per_outer[o] receives the numbers after iteration o.  W
 * (k x n_rows) and H (k x n_cols), rank-major, may be NULL or receive the
 * final factors.  Returns 0, or -1 when out of memory. */
int cd_ref_run(const cd_ref_data *d, const cd_ref_opts *o, const float *H0, cd_ref_point *per_outer,
               float *W, float *H);

/* H0 as cd-mf draws it (rt_mf_init_vector for each global column), k x n_cols. */
float *cd_ref_initial_H(uint32_t n_cols, int k, uint64_t seed, double init_scale);

#endif
