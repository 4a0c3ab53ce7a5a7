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

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct eval_opts {
    const char *model, *input;
    int format; /* rt_rating_format */
    int json;
    uint32_t top_k;      /* 0 = no ranking metrics */
    const char *exclude; /* training ratings; NULL = the model's plan */
    int no_exclude;      /* rank every item */
    double relevant_min; /* test ratings below this are not relevant */
    uint32_t threads;
} eval_opts;

static const rt_opt eval_options[] = {
    ROTOR_MODEL_OPT(eval_opts, model, "rotor train --out"),
    RT_PATH_OPT("input", 'i', eval_opts, input, "FILE", NULL, RT_OPT_REQUIRED, "ratings to score"),
    RT_ENUM_OPT("format", 'f', eval_opts, format, rt_rating_formats, "auto", "format of --input"),
    RT_FLAG_OPT("json", 0, eval_opts, json, "print the result as JSON"),
    RT_U32_OPT("top-k", 'k', eval_opts, top_k, "K", NULL, 1, 100000, 0,
               "also rank items: metrics at K (see README)"),
    RT_PATH_OPT("exclude", 0, eval_opts, exclude, "FILE", NULL, 0,
                "training ratings to exclude from the candidates "
                "(default: the model's plan)"),
    RT_FLAG_OPT("no-exclude", 0, eval_opts, no_exclude, "rank every item, training items included"),
    RT_DOUBLE_OPT("relevant-min", 0, eval_opts, relevant_min, "R", NULL, 0, 0, 0,
                  "test ratings below R are not relevant (default: "
                  "every test rating is)"),
    RT_U32_OPT("threads", 't', eval_opts, threads, "T", "2", 1, 64, 0, "threads ranking the items"),
    {0}};

static void print_metrics_text(const char *who, const rt_rank_metrics *r)
{
    printf("%-13s %12.6f %12.6f %12.6f %12.6f %12.6f\n", who, r->precision, r->recall, r->ndcg,
           r->map, r->coverage);
}

static json_t *metrics_json(const rt_rank_metrics *r)
{
    return json_pack("{s:f, s:f, s:f, s:f, s:f}", "precision", r->precision, "recall", r->recall,
                     "ndcg", r->ndcg, "map", r->map, "coverage", r->coverage);
}

/* The ranking part of an evaluation. */
typedef struct eval_ranking {
    rt_rank_metrics model, popular;
    const char *excluded; /* "plan", "none" or the --exclude file */
} eval_ranking;

/* Ranking metrics at K of the model and of the most-popular baseline, both
 * ranking the items each user did not have in training. */
static int rank_items(const eval_opts *o, const rt_model *m, eval_ranking *r, rt_error *err)
{
    rt_idmap *rows, *cols;
    m->app->model_ids(m->impl, &rows, &cols);
    rt_user_items seen, relevant = {0};
    uint64_t unknown;
    if (rt_user_items_exclusions(o->model, m, o->exclude, o->no_exclude, &seen, &r->excluded, err))
        return -1;
    float *pop = rt_item_popularity(&seen);
    int rc = -1;
    if (!pop) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
        goto out;
    }
    if (rt_user_items_read(o->input, (rt_rating_format)o->format, rows, cols,
                           (float)o->relevant_min, &relevant, &unknown, err))
        goto out;
    rt_topk_opts topt = {.k = o->top_k, .threads = o->threads, .exclude = &seen};
    rt_scorer model = rt_model_scorer(m), popular = rt_popularity_scorer(pop, rows->n, cols->n);
    if (rt_rank_evaluate(&model, &relevant, &topt, &r->model, err) ||
        rt_rank_evaluate(&popular, &relevant, &topt, &r->popular, err))
        goto out;
    if (r->model.users == 0) {
        rt_fail(err, RT_EXIT_INPUT, "%s: no user has a relevant test item that is not excluded",
                o->input);
        goto out;
    }
    rc = 0;
out:
    free(pop);
    rt_user_items_free(&seen);
    rt_user_items_free(&relevant);
    return rc;
}

static void print_ranking(const eval_ranking *r, json_t *doc)
{
    const rt_rank_metrics *mm = &r->model;
    if (doc) {
        json_object_set_new(doc, "ranking",
                            json_pack("{s:i, s:I, s:I, s:s, s:o, s:o}", "k", (int)mm->k, "users",
                                      (json_int_t)mm->users, "relevant", (json_int_t)mm->relevant,
                                      "excluded", r->excluded, "model", metrics_json(mm),
                                      "most_popular", metrics_json(&r->popular)));
        return;
    }
    printf("top-%u over %llu users with %llu relevant items; excluded: %s\n", mm->k,
           (unsigned long long)mm->users, (unsigned long long)mm->relevant,
           !strcmp(r->excluded, "plan") ? "training items (plan)" : r->excluded);
    char h[4][24];
    static const char *const names[] = {"precision", "recall", "ndcg", "map"};
    for (int i = 0; i < 4; i++)
        snprintf(h[i], sizeof(h[i]), "%s@%u", names[i], mm->k);
    printf("%-13s %12s %12s %12s %12s %12s\n", "", h[0], h[1], h[2], h[3], "coverage");
    print_metrics_text("model", mm);
    print_metrics_text("most-popular", &r->popular);
}

int cmd_eval(int argc, char **argv)
{
    eval_opts o = {.relevant_min = -HUGE_VAL};
    rt_error err = {0};
    if (rotor_parse_options(&rotor_doc_eval, eval_options, &o, argc, argv))
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
    rt_triplets_free(&t);
    eval_ranking rank;
    if (o.top_k && rank_items(&o, &m, &rank, &err)) { /* before any output */
        rt_model_close(&m);
        rt_die(&err);
    }
    json_t *doc =
        json ? json_pack("{s:I, s:I, s:f, s:f}", "ratings", (json_int_t)n, "skipped_unknown_ids",
                         (json_int_t)st.dropped, "rmse", sqrt(sse / n), "mae", sae / n)
             : NULL;
    if (!json)
        printf("ratings %llu  skipped (unknown ids) %llu  rmse %.6f  mae %.6f\n",
               (unsigned long long)n, (unsigned long long)st.dropped, sqrt(sse / n), sae / n);
    if (o.top_k)
        print_ranking(&rank, doc);
    if (doc) {
        json_dumpf(doc, stdout, JSON_REAL_PRECISION(9));
        putchar('\n');
        json_decref(doc);
    }
    rt_model_close(&m);
    return RT_EXIT_OK;
}
