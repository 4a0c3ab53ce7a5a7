/*
 * cmd_eval.c - `rotor eval`: score a saved rating model on a ratings file.
 *
 * The model is opened through the app that wrote it (rt_model_open); the
 * file's original user and item ids are mapped through the model's id
 * tables, and RMSE and MAE are those of the app's own prediction.  Ratings
 * whose user or item the model never saw are skipped and counted.
 */
#include "apps/apps.h"
#include "tools/commands.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

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
    rt_model m;
    rt_idmap *rows = NULL, *cols = NULL;
    rt_triplets t;
    rt_triplets_init(&t);
    rt_ratings_stats st = {0};
    if (rt_model_open(model_dir, &m, &err)) {
        rt_die(&err);
    }
    if (!m.app->model_predict) {
        rt_fail(&err, RT_EXIT_INPUT,
                "%s: the model is from --app %s; rotor eval scores rating models", model_dir,
                m.app->name);
        rt_model_close(&m);
        rt_die(&err);
    }
    m.app->model_ids(m.impl, &rows, &cols);
    if (rt_read_ratings(input, fmt, rows, cols, 0, &t, &st, &err)) {
        rt_model_close(&m);
        rt_triplets_free(&t);
        rt_die(&err);
    }
    double sse = 0, sae = 0;
    for (uint64_t i = 0; i < t.n; i++) {
        double e = (double)t.e[i].val - m.app->model_predict(m.impl, t.e[i].row, t.e[i].col);
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
    rt_model_close(&m);
    rt_triplets_free(&t);
    return RT_EXIT_OK;
}
