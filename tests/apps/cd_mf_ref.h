/* cd_mf_ref.h - a plain serial CCD++ written straight from the update
 * equations of Yu et al. (ICDM'12), in double precision on one global
 * ratings list.  The tests check the distributed cd-mf against it. */
#ifndef ROTOR_TESTS_CD_MF_REF_H
#define ROTOR_TESTS_CD_MF_REF_H

#include <stddef.h>
#include <stdint.h>

typedef struct cd_ref_data {
    uint32_t n_rows, n_cols;
    size_t n; /* training ratings */
    uint32_t *row, *col;
    float *val;
    size_t nt; /* test ratings */
    uint32_t *trow, *tcol;
    float *tval;
} cd_ref_data;

typedef struct cd_ref_point { /* after one outer iteration */
    double objective, loss, train_rmse, test_rmse;
} cd_ref_point;

/* Run `outer` outer iterations from W = 0 and H = H0 (n_cols x k,
 * row-major); per_outer[o] receives the numbers after iteration o.  W
 * (n_rows x k) and H (n_cols x k) may be NULL or receive the final factors.
 * Returns 0, or -1 when out of memory. */
int cd_ref_run(const cd_ref_data *d, int k, int outer, int inner, double lambda, const double *H0,
               cd_ref_point *per_outer, double *W, double *H);

/* H0 as cd-mf draws it (rt_mf_init_vector for each global column). */
double *cd_ref_initial_H(uint32_t n_cols, int k, uint64_t seed, double init_scale);

#endif
