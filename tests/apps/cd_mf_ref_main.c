/* cd_mf_ref_main.c - run the serial reference CCD++ on a plan's ratings.
 *
 *   cd_mf_ref PLAN_DIR RANK OUTER INNER LAMBDA SEED [INIT_SCALE]
 *
 * Reads every shard of the plan back into one global ratings list (dense
 * global ids from layout.bin) and prints, per outer iteration,
 *   outer N objective X train_rmse Y test_rmse Z
 * The end-to-end tests compare these lines with `rotor train --app cd-mf`. */
#include "tests/apps/cd_mf_ref.h"
#include "partition/partition.h"

#include <stdio.h>
#include <stdlib.h>

static int load(const rt_plan *p, cd_ref_data *d, rt_error *err)
{
    d->n_rows = (uint32_t)p->n_rows;
    d->n_cols = (uint32_t)p->n_cols;
    size_t cap = p->nnz_train + 1, tcap = p->nnz_test + 1;
    d->row = malloc(cap * 4), d->col = malloc(cap * 4), d->val = malloc(cap * 4);
    d->trow = malloc(tcap * 4), d->tcol = malloc(tcap * 4), d->tval = malloc(tcap * 4);
    if (!d->row || !d->col || !d->val || !d->trow || !d->tcol || !d->tval)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    for (uint32_t w = 0; w < p->workers; w++) {
        rt_shard sh;
        if (rt_shard_open(p, w, &sh, err))
            return -1;
        for (uint32_t b = 0; b < p->blocks; b++) {
            const uint32_t *cols = p->block_col_ids + p->block_col_offset[b];
            for (uint64_t e = sh.train_off[b]; e < sh.train_off[b + 1]; e++) {
                if (d->n >= p->nnz_train)
                    return rt_fail(err, RT_EXIT_INPUT, "more ratings than plan.json says");
                d->row[d->n] = sh.row_ids[sh.train[e].row];
                d->col[d->n] = cols[sh.train[e].col];
                d->val[d->n++] = sh.train[e].val;
            }
            for (uint64_t e = sh.test_off[b]; e < sh.test_off[b + 1]; e++) {
                if (d->nt >= p->nnz_test)
                    return rt_fail(err, RT_EXIT_INPUT, "more test ratings than plan.json says");
                d->trow[d->nt] = sh.row_ids[sh.test[e].row];
                d->tcol[d->nt] = cols[sh.test[e].col];
                d->tval[d->nt++] = sh.test[e].val;
            }
        }
        rt_shard_close(&sh);
    }
    return 0;
}

int main(int argc, char **argv)
{
    rt_error err = {0};
    rt_plan plan;
    cd_ref_data d = {0};
    int k, outer, inner;
    double lambda;
    uint64_t seed;
    double init_scale = 0.1;
    if ((argc != 7 && argc != 8) || (argc == 8 && rt_parse_double(argv[7], &init_scale)) ||
        rt_parse_int(argv[2], &k) || rt_parse_int(argv[3], &outer) ||
        rt_parse_int(argv[4], &inner) || rt_parse_double(argv[5], &lambda) ||
        rt_parse_u64(argv[6], &seed) || k < 1 || outer < 1 || inner < 1 || lambda < 0) {
        fprintf(stderr, "usage: cd_mf_ref PLAN_DIR RANK OUTER INNER LAMBDA SEED [INIT_SCALE]\n");
        return 2;
    }
    if (rt_plan_open(argv[1], &plan, &err) || load(&plan, &d, &err))
        rt_die(&err);
    cd_ref_point *pts = calloc((size_t)outer, sizeof(*pts));
    double *H0 = cd_ref_initial_H(d.n_cols, k, seed, init_scale);
    if (!pts || !H0 || cd_ref_run(&d, k, outer, inner, lambda, H0, pts, NULL, NULL)) {
        fprintf(stderr, "cd_mf_ref: out of memory\n");
        return 1;
    }
    for (int o = 0; o < outer; o++)
        printf("outer %d objective %.17g train_rmse %.17g test_rmse %.17g\n", o + 1,
               pts[o].objective, pts[o].train_rmse, pts[o].test_rmse);
    free(pts);
    free(H0);
    free(d.row), free(d.col), free(d.val), free(d.trow), free(d.tcol), free(d.tval);
    rt_plan_close(&plan);
    return 0;
}
