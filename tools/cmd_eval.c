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

typedef struct eval_opts {
    const char *model, *input;
    int format; /* rt_rating_format */
    int json;
} eval_opts;

static const rt_command_doc eval_doc = {
    .name = "eval",
    .summary = "score a saved MF model on a ratings file",
    .usage = "--model DIR --input FILE [--format F] [--json]",
    .about = "Score an SGD-MF or CD-MF model written by `rotor train --out DIR` on a ratings file "
             "(any format `rotor partition` reads; ids are the original ones).  Ratings whose "
             "user or item the model never saw are skipped and counted.",
};

static const rt_opt eval_options[] = {{.name = "model",
                                       .short_name = 'm',
                                       .type = RT_OPT_PATH,
                                       .flags = RT_OPT_REQUIRED | RT_OPT_DIR,
                                       .offset = offsetof(eval_opts, model),
                                       .metavar = "DIR",
                                       .help = "model directory written by rotor train --out"},
                                      {.name = "input",
                                       .short_name = 'i',
                                       .type = RT_OPT_PATH,
                                       .flags = RT_OPT_REQUIRED,
                                       .offset = offsetof(eval_opts, input),
                                       .metavar = "FILE",
                                       .help = "ratings to score"},
                                      {.name = "format",
                                       .short_name = 'f',
                                       .type = RT_OPT_ENUM,
                                       .offset = offsetof(eval_opts, format),
                                       .def = "auto",
                                       .choices = rt_rating_formats,
                                       .help = "format of --input"},
                                      {.name = "json",
                                       .type = RT_OPT_FLAG,
                                       .offset = offsetof(eval_opts, json),
                                       .help = "print the result as JSON"},
                                      {NULL}};

int cmd_eval(int argc, char **argv)
{
    eval_opts o = {0};
    rt_error err = {0};
    rt_opt_group g = {.opts = eval_options, .dest = &o};
    int rc = rt_opts_parse(&eval_doc, &g, 1, argc, argv, NULL, &err);
    if (rc < 0)
        rt_die(&err);
    if (rc == 1)
        return RT_EXIT_OK;
    const char *model_dir = o.model, *input = o.input;
    rt_rating_format fmt = (rt_rating_format)o.format;
    int json = o.json;
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
    if (t.n == 0) { /* "rmse 0" over nothing would read as a perfect model */
        rt_fail(&err, RT_EXIT_INPUT,
                "%s: no rating to score (%llu lines, %llu ratings with ids the model never saw)",
                input, (unsigned long long)st.lines, (unsigned long long)st.dropped);
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
