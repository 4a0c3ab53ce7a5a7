/* cd_mf_ref_main.c - run the serial reference CCD++ on a plan's ratings.
 *
 *   cd_mf_ref PLAN_DIR RANK OUTER INNER LAMBDA SEED [--init-scale S]
 *             [--inner-eps E] [--unweighted] [--lambda-const L0] [--no-biases] [--no-center]
 *             [--validation-fraction F]
 *             [--implicit [--alpha A] [--confidence linear|log|binary]
 *              [--unobserved-weight W]]
 * (defaults as cd-mf's).  Reads every shard of the plan back into one global
 * ratings list (dense global ids from layout.bin) and prints, per outer
 * iteration,
 *   outer N objective X train_rmse Y test_rmse Z valid_rmse V
 * The end-to-end tests compare these lines with `rotor train --app cd-mf`. */
#include "tests/apps/cd_mf_ref.h"
#include "apps/mf_common.h"
#include "partition/partition.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int load(const rt_plan *p, const rt_mf_common_opts *mf, cd_ref_data *d, rt_error *err)
{
    d->n_rows = (uint32_t)p->n_rows;
    d->n_cols = (uint32_t)p->n_cols;
    size_t cap = p->nnz_train + 1, tcap = p->nnz_test + 1;
    d->row = malloc(cap * 4), d->col = malloc(cap * 4), d->val = malloc(cap * 4);
    d->held = malloc(cap);
    d->trow = malloc(tcap * 4), d->tcol = malloc(tcap * 4), d->tval = malloc(tcap * 4);
    if (!d->row || !d->col || !d->val || !d->held || !d->trow || !d->tcol || !d->tval)
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
                d->held[d->n] = (uint8_t)rt_mf_is_validation(mf, d->row[d->n], d->col[d->n]);
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

static int parse_flags(int argc, char **argv, cd_ref_opts *o, rt_mf_common_opts *mf)
{
    for (int i = 7; i < argc; i++) {
        const char *a = argv[i];
        int has_value = i + 1 < argc;
        if (!strcmp(a, "--unweighted"))
            o->weighted = 0;
        else if (!strcmp(a, "--no-biases"))
            o->biases = 0;
        else if (!strcmp(a, "--no-center"))
            o->center = 0;
        else if (!strcmp(a, "--lambda-const") && has_value)
            o->lambda_const = atof(argv[++i]);
        else if (!strcmp(a, "--inner-eps") && has_value)
            o->inner_eps = atof(argv[++i]);
        else if (!strcmp(a, "--init-scale") && has_value)
            mf->init_scale = atof(argv[++i]);
        else if (!strcmp(a, "--validation-fraction") && has_value)
            mf->valid_fraction = atof(argv[++i]);
        else if (!strcmp(a, "--implicit"))
            o->implicit = 1, o->biases = o->center = 0;
        else if (!strcmp(a, "--alpha") && has_value)
            o->alpha = atof(argv[++i]);
        else if (!strcmp(a, "--unobserved-weight") && has_value)
            o->w0 = atof(argv[++i]);
        else if (!strcmp(a, "--confidence") && has_value)
            o->confidence = !strcmp(argv[++i], "log") ? 1 : !strcmp(argv[i], "binary") ? 2 : 0;
        else
            return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    rt_error err = {0};
    rt_plan plan;
    cd_ref_data d = {0};
    cd_ref_opts o = {.inner_eps = 1e-3,
                     .lambda_const = -1,
                     .weighted = 1,
                     .biases = 1,
                     .center = 1,
                     .alpha = 1,
                     .w0 = 1};
    rt_mf_common_opts mf;
    rt_mf_common_defaults(&mf);
    if (argc < 7 || rt_parse_int(argv[2], &o.k) || rt_parse_int(argv[3], &o.outer) ||
        rt_parse_int(argv[4], &o.inner) || rt_parse_double(argv[5], &o.lambda) ||
        rt_parse_u64(argv[6], &mf.seed) || o.k < 1 || o.outer < 1 || o.inner < 1 || o.lambda < 0 ||
        parse_flags(argc, argv, &o, &mf)) {
        fprintf(stderr, "usage: cd_mf_ref PLAN_DIR RANK OUTER INNER LAMBDA SEED [--init-scale S] "
                        "[--inner-eps E] [--unweighted] [--lambda-const L0] [--no-biases] "
                        "[--no-center] "
                        "[--validation-fraction F] [--implicit [--alpha A] "
                        "[--confidence linear|log|binary] [--unobserved-weight W]]\n");
        return 2;
    }
    if (o.lambda_const < 0) /* cd-mf's default */
        o.lambda_const = o.implicit ? 0 : 1;
    if (rt_plan_open(argv[1], &plan, &err) || load(&plan, &mf, &d, &err)) {
        fprintf(stderr, "cd_mf_ref: %s\n", err.msg);
        return err.code ? err.code : RT_EXIT_RUNTIME;
    }
    cd_ref_point *pts = calloc((size_t)o.outer, sizeof(*pts));
    float *H0 = cd_ref_initial_H(d.n_cols, o.k, mf.seed, mf.init_scale);
    if (!pts || !H0 || cd_ref_run(&d, &o, H0, pts, NULL, NULL)) {
        fprintf(stderr, "cd_mf_ref: out of memory\n");
        return 1;
    }
    for (int x = 0; x < o.outer; x++)
        printf("outer %d objective %.17g train_rmse %.17g test_rmse %.17g valid_rmse %.17g\n",
               x + 1, pts[x].objective, pts[x].train_rmse, pts[x].test_rmse, pts[x].valid_rmse);
    free(pts);
    free(H0);
    free(d.row), free(d.col), free(d.val), free(d.held), free(d.trow), free(d.tcol), free(d.tval);
    rt_plan_close(&plan);
    return 0;
}
