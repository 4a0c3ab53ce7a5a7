/*
 * cmd_eval.c - `rotor eval`: score a saved MF model on a ratings file.
 *
 * Reads MODEL/model.json (mu, k), W.npy, H.npy, the biases row_bias.npy and
 * col_bias.npy when the model has them, and the id tables rows.ids /
 * cols.ids; maps the file's original user and item ids through them, and
 * prints RMSE and MAE of mu + b_u + b_i + w_u . h_i (dot products by BLAS).
 * Ratings whose user or item the model never saw are skipped and counted.
 */
#include "tools/commands.h"
#include "partition/partition.h"

#include <cblas.h>
#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct mf_model {
    double mu;
    float *W, *H;
    float *bu, *bi; /* NULL when the model has no biases */
    uint64_t n_rows, n_cols, k;
    rt_idmap rows, cols;
} mf_model;

static void usage(FILE *fp)
{
    fprintf(fp, "usage: rotor eval --model DIR --input FILE [--format F] [--json]\n\n"
                "Score an SGD-MF or CD-MF model written by `rotor train --out DIR` on a\n"
                "ratings file (any format `rotor partition` reads; ids are the original ones).\n\n"
                "  --model DIR   model directory (model.json, W.npy, H.npy, rows.ids, cols.ids)\n"
                "  --input FILE  ratings to score\n"
                "  --format F    auto (default), triplets, csv, movielens-dat, mm, libmf\n"
                "  --json        print the result as JSON\n");
}

static int read_ids(const char *dir, const char *name, rt_idmap *map, uint64_t want, rt_error *err)
{
    char path[4096];
    if (rt_path_join(path, sizeof(path), dir, name, err))
        return -1;
    rt_linereader lr;
    if (rt_linereader_open(&lr, path, err))
        return -1;
    char *line;
    size_t len;
    int rc;
    while ((rc = rt_linereader_next(&lr, &line, &len, err)) == 1) {
        uint32_t id;
        if (rt_idmap_intern(map, line, len, &id, err)) {
            rc = -1;
            break;
        }
    }
    rt_linereader_close(&lr);
    if (rc < 0)
        return -1;
    if (map->n != want)
        return rt_fail(err, RT_EXIT_INPUT, "%s: %llu ids, the model has %llu", path,
                       (unsigned long long)map->n, (unsigned long long)want);
    return 0;
}

static int load_model(const char *dir, mf_model *m, rt_error *err)
{
    char path[4096];
    json_error_t jerr;
    if (rt_path_join(path, sizeof(path), dir, "model.json", err))
        return -1;
    json_t *meta = json_load_file(path, 0, &jerr);
    if (!meta)
        return rt_fail_parse(err, path, jerr.line, jerr.text);
    json_t *mu = json_object_get(meta, "mu");
    m->mu = json_is_number(mu) ? json_number_value(mu) : 0.0;
    int biases = json_is_true(json_object_get(meta, "biases"));
    json_decref(meta);
    uint64_t hk;
    if (rt_path_join(path, sizeof(path), dir, "W.npy", err) ||
        rt_npy_read_f32(path, &m->W, &m->n_rows, &m->k, err) ||
        rt_path_join(path, sizeof(path), dir, "H.npy", err) ||
        rt_npy_read_f32(path, &m->H, &m->n_cols, &hk, err))
        return -1;
    if (hk != m->k)
        return rt_fail(err, RT_EXIT_INPUT, "%s: W has rank %llu but H has %llu", dir,
                       (unsigned long long)m->k, (unsigned long long)hk);
    if (biases) {
        uint64_t r, c;
        if (rt_path_join(path, sizeof(path), dir, "row_bias.npy", err) ||
            rt_npy_read_f32(path, &m->bu, &r, &c, err))
            return -1;
        if (r != m->n_rows || c != 1)
            return rt_fail(err, RT_EXIT_INPUT, "%s: expected %llu x 1", path,
                           (unsigned long long)m->n_rows);
        if (rt_path_join(path, sizeof(path), dir, "col_bias.npy", err) ||
            rt_npy_read_f32(path, &m->bi, &r, &c, err))
            return -1;
        if (r != m->n_cols || c != 1)
            return rt_fail(err, RT_EXIT_INPUT, "%s: expected %llu x 1", path,
                           (unsigned long long)m->n_cols);
    }
    rt_idmap_init(&m->rows);
    rt_idmap_init(&m->cols);
    return read_ids(dir, "rows.ids", &m->rows, m->n_rows, err) ||
                   read_ids(dir, "cols.ids", &m->cols, m->n_cols, err)
               ? -1
               : 0;
}

static void free_model(mf_model *m)
{
    free(m->W);
    free(m->H);
    free(m->bu);
    free(m->bi);
    rt_idmap_free(&m->rows);
    rt_idmap_free(&m->cols);
}

int cmd_eval(int argc, char **argv)
{
    const char *model_dir = NULL, *input = NULL, *v;
    rt_rating_format fmt = RT_FMT_AUTO;
    int json = 0;
    rt_error err = {0};
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "-h") || !strcmp(argv[i], "--help")) {
            usage(stdout);
            return RT_EXIT_OK;
        } else if (!strcmp(argv[i], "--json")) {
            json = 1;
        } else if (rt_opt_is(argv[i], "--model") || rt_opt_is(argv[i], "--input") ||
                   rt_opt_is(argv[i], "--format")) {
            const char *name = argv[i];
            if (!(v = rt_opt_value(argc, argv, &i, &err)))
                rt_die(&err);
            if (rt_opt_is(name, "--model"))
                model_dir = v;
            else if (rt_opt_is(name, "--input"))
                input = v;
            else if (rt_rating_format_parse(v, &fmt)) {
                rt_fail(&err, RT_EXIT_INPUT, "--format: unknown format '%s'", v);
                rt_die(&err);
            }
        } else {
            rt_fail(&err, RT_EXIT_INPUT, "eval: unknown argument '%s' (see --help)", argv[i]);
            rt_die(&err);
        }
    }
    if (!model_dir || !input) {
        rt_fail(&err, RT_EXIT_INPUT, "eval needs --model DIR and --input FILE (see --help)");
        rt_die(&err);
    }
    mf_model m = {0};
    rt_triplets t;
    rt_triplets_init(&t);
    rt_ratings_stats st = {0};
    if (load_model(model_dir, &m, &err) ||
        rt_read_ratings(input, fmt, &m.rows, &m.cols, 0, &t, &st, &err)) {
        free_model(&m);
        rt_triplets_free(&t);
        rt_die(&err);
    }
    double sse = 0, sae = 0;
    for (uint64_t i = 0; i < t.n; i++) {
        uint32_t row = t.e[i].row, col = t.e[i].col;
        double pred =
            m.mu + cblas_sdot((int)m.k, m.W + (size_t)row * m.k, 1, m.H + (size_t)col * m.k, 1);
        if (m.bu)
            pred += (double)m.bu[row] + m.bi[col];
        double e = t.e[i].val - pred;
        sse += e * e;
        sae += fabs(e);
    }
    double n = t.n ? (double)t.n : 1.0;
    if (json)
        printf("{\"ratings\": %llu, \"skipped_unknown_ids\": %llu, \"rmse\": %.6f, \"mae\": "
               "%.6f}\n",
               (unsigned long long)t.n, (unsigned long long)st.dropped, sqrt(sse / n), sae / n);
    else
        printf("ratings %llu  skipped (unknown ids) %llu  rmse %.6f  mae %.6f\n",
               (unsigned long long)t.n, (unsigned long long)st.dropped, sqrt(sse / n), sae / n);
    free_model(&m);
    rt_triplets_free(&t);
    return RT_EXIT_OK;
}
