/*
 * cd_mf.c - the cd-mf app: CCD++ coordinate descent matrix factorisation on
 * the rotation engine.  The algorithm and its phase sequence are described
 * in cd_mf.h and run by cd_mf_core.c; this file is the glue to
 * `rotor train`: options, shards, the engine callbacks, the per-outer-
 * iteration log and the saved model.
 *
 * One log line on rank 0 per outer iteration:
 *   outer N  S.SSSs  objective X  train_rmse Y  [test_rmse Z]  [valid_rmse V]
 *   stall P%  moved M MB  (test_rmse only when the plan has test ratings)
 * with objective = squared training error + the (weighted) regulariser.
 */
#include "apps/app_common.h"
#include "apps/cd_mf.h"
#include "apps/metrics.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct cd_app {
    cd_opts o;
    const rt_plan *plan;
    rt_shard *shards; /* the local workers' */
    uint32_t n_shards;
    rt_mf_local m; /* its W rows receive the model at save time */
    cd_core core;
    double *sums;       /* cd_core_sums_len() */
    uint64_t rotations; /* run in the current outer iteration */
    cd_metrics last;
    double mark;       /* rt_now() at the start of the current outer iteration */
    double seconds;    /* total training time */
    double stall_frac; /* max over the outer iteration's rotations */
    uint64_t bytes;    /* moved during the outer iteration */
    rt_metrics metrics;
} cd_app;

/* ---------------------------------------------------------------- options */

/* Explicit defaults as CCD++/LIBPMF: weighted lambda 0.1, 20 outer x at most
 * 5 inner; plus --lambda-const 1, which LIBPMF lacks: the weighted lambda
 * alone barely shrinks a row or column with few ratings (lambda n is 0.1 for
 * one rating), so on sparse data its factors fit those few ratings and the
 * model scored worse than a damped mean-plus-biases baseline.  Test RMSE,
 * L0 = 0 -> 1: MovieLens 100K u1-u5 mean 0.9183 -> 0.9129 and FilmTrust's
 * 5 folds 0.7861 -> 0.7802 (better on all 10 folds); u1 with a quarter of
 * its training ratings 1.0108 -> 0.9972, with 1 + ~5 per user 1.1317 ->
 * 1.0872 (damped biases alone: 0.985, 1.055); planted power-law data
 * quantised to stars 0.5698 -> 0.5677.  It costs where the low-rank signal
 * is strong and noise-free (planted Gaussian rank 4, noise 0.1, 22 ratings
 * a row: 0.340 -> 0.412), which rating data is not.  With --implicit the
 * defaults were chosen by the ranking quality on MovieLens 100K and
 * FilmTrust (bench/ranking.sh), with L0 = 0. */
#define CD_LAMBDA "0.1"
#define CD_IMPLICIT_LAMBDA "0.1"
#define CD_LAMBDA_CONST "1"
#define CD_IMPLICIT_LAMBDA_CONST "0"

static const rt_opt_choice cd_confidences[] = {
    {"linear", CD_CONF_LINEAR}, {"log", CD_CONF_LOG}, {"binary", CD_CONF_BINARY}, {NULL, 0}};

static const rt_opt cd_options[] = {
    RT_MF_COMMON_OPTIONS(cd_opts),
    RT_U32_OPT("outer", 0, cd_opts, outer, "N", "20", 1, 100000000, 0,
               "outer iterations: passes over all K ranks"),
    RT_U32_OPT("inner", 0, cd_opts, inner, "T", "5", 1, 1000000, 0,
               "most u/v alternations per rank and outer iteration"),
    RT_DOUBLE_OPT(
        "inner-eps", 0, cd_opts, inner_eps, "E", "0.001", 0, HUGE_VAL, 0,
        "stop a rank's alternations once one decreases the objective by less than E times "
        "the largest decrease so far, as LIBPMF (0 = always T)"),
    RT_DOUBLE_OPT("lambda", 'l', cd_opts, mf.lambda, "L", NULL, 0, HUGE_VAL, 0,
                  "L2 regularisation, weighted by each row's and column's number of ratings as in "
                  "CCD++/LIBPMF (default " CD_LAMBDA ", with --implicit " CD_IMPLICIT_LAMBDA ")"),
    RT_FLAG_OPT(
        "implicit", 0, cd_opts, implicit,
        "implicit feedback: every pair counts, observed ones as preference 1 with confidence "
        "1 + alpha f(rating), the others as 0 with weight --unobserved-weight (Hu, Koren "
        "and Volinsky); no mean, no biases"),
    RT_DOUBLE_OPT("alpha", 0, cd_opts, alpha, "A", NULL, 0, HUGE_VAL, 0,
                  "--implicit: confidence slope of an observed pair (default 0)"),
    RT_ENUM_OPT(
        "confidence", 0, cd_opts, confidence, cd_confidences, NULL,
        "--implicit: f(rating) in the confidence 1 + alpha f: linear (r), log (ln(1 + r)) or "
        "binary (1) (default linear)"),
    RT_DOUBLE_OPT("unobserved-weight", 0, cd_opts, unobserved, "W", NULL, 0, HUGE_VAL,
                  RT_OPT_MIN_OPEN,
                  "--implicit: weight of every unobserved pair (preference 0) (default 1)"),
    RT_DOUBLE_OPT("lambda-const", 0, cd_opts, lambda_const, "L0", NULL, 0, HUGE_VAL, 0,
                  "L2 regularisation added to every row's and column's lambda n, whatever its "
                  "count: shrinks rows and columns with few ratings (default " CD_LAMBDA_CONST
                  ", with --implicit " CD_IMPLICIT_LAMBDA_CONST ")"),
    RT_UNSET_OPT("unweighted", 0, cd_opts, weighted,
                 "plain lambda (|W|^2 + |H|^2 + |b|^2 + |c|^2) instead"),
    RT_DOUBLE_OPT("init-scale", 0, cd_opts, mf.init_scale, "S", "0.1", 0, HUGE_VAL, RT_OPT_MIN_OPEN,
                  "initial H ~ U(0, S), as LIBPMF; W and biases start at 0"),
    {0}};

/* Initial factors drawn uniformly, as LIBPMF (not an option); --lambda and
 * --lambda-const start negative: "not given" (their defaults depend on
 * --implicit), as do --alpha, --confidence and --unobserved-weight (given
 * without --implicit they would be ignored in silence). */
static void cd_opts_init(void *opts)
{
    cd_opts *o = opts;
    o->mf.init_uniform = 1;
    o->mf.lambda = -1;
    o->lambda_const = -1;
    o->alpha = -1;
    o->confidence = -1;
    o->unobserved = -1;
}

/* An option of the implicit loss given without --implicit changes nothing
 * in the explicit one: refuse it rather than train a model the user did
 * not ask for. */
static int cd_implicit_only(const cd_opts *o, rt_error *err)
{
    const char *given = o->alpha >= 0        ? "alpha"
                        : o->confidence >= 0 ? "confidence"
                        : o->unobserved >= 0 ? "unobserved-weight"
                                             : NULL;
    if (given && !o->implicit)
        return rt_fail(
            err, RT_EXIT_INPUT,
            "cd-mf: --%s is an option of the implicit-feedback loss: give --implicit too "
            "(without it, it would change nothing)",
            given);
    return 0;
}

static int cd_opts_done(void *opts, rt_error *err)
{
    cd_opts *o = opts;
    if (cd_implicit_only(o, err))
        return -1;
    if (o->alpha < 0)
        o->alpha = 0;
    if (o->confidence < 0)
        o->confidence = CD_CONF_LINEAR;
    if (o->unobserved < 0)
        o->unobserved = 1;
    if (o->mf.lambda < 0)
        o->mf.lambda = atof(o->implicit ? CD_IMPLICIT_LAMBDA : CD_LAMBDA);
    if (o->lambda_const < 0)
        o->lambda_const = atof(o->implicit ? CD_IMPLICIT_LAMBDA_CONST : CD_LAMBDA_CONST);
    if (o->implicit) /* preferences 0 and 1: nothing to centre, no biases */
        o->center = o->mf.biases = 0;
    return 0;
}

static int cd_check(const void *opts, const rt_plan *plan, rt_error *err)
{
    const cd_opts *o = opts;
    if (o->mf.early_stop && !(o->mf.valid_fraction > 0))
        return rt_fail(err, RT_EXIT_INPUT, "cd-mf: --early-stop needs --validation-fraction");
    if (o->implicit && o->mf.valid_fraction > 0)
        return rt_fail(err, RT_EXIT_INPUT,
                       "cd-mf: --validation-fraction scores ratings, not rankings: not with "
                       "--implicit");
    if (o->implicit && o->mf.rating_scale > 0)
        return rt_fail(err, RT_EXIT_INPUT,
                       "cd-mf: --rating-scale scales ratings to fit: not with --implicit");
    return rt_mf_check_common(&o->mf, plan, "cd-mf", err);
}

/* The u-phase and v-phase payloads, and at the end the home blocks' H rows
 * in the MF layout rt_mf_save reads (see cd_save). */
static int cd_slot_bytes(const void *opts, const rt_plan *plan, size_t *bytes, rt_error *err)
{
    (void)err;
    const cd_opts *o = opts;
    uint32_t max_cols = 0;
    for (uint32_t b = 0; b < plan->blocks; b++)
        if (rt_plan_block_cols(plan, b) > max_cols)
            max_cols = rt_plan_block_cols(plan, b);
    size_t phases = cd_payload_max_bytes(max_cols);
    size_t model = rt_mf_slot_bytes(plan, rt_mf_padded_rank(o->mf.k), o->mf.biases ? 1 : 0);
    *bytes = phases > model ? phases : model;
    return 0;
}

/* ------------------------------------------------------------ lifecycle */

static void cd_destroy(void *p)
{
    cd_app *a = p;
    if (!a)
        return;
    cd_core_free(&a->core);
    rt_mf_local_free(&a->m);
    rt_app_shards_close(a->shards, a->n_shards);
    rt_metrics_free(&a->metrics);
    free(a->sums);
    free(a);
}

static void start_metrics(cd_app *a, rt_engine *eng)
{
    const rt_plan *plan = a->plan;
    rt_metrics_init(
        &a->metrics, a->o.mf.metrics, "cd-mf",
        json_pack("{s:i, s:i, s:i, s:f, s:f, s:f, s:b, s:b, s:f, s:b, s:f, s:f, s:i, s:i, s:i, "
                  "s:s, s:I, s:I}",
                  "k", (int)a->o.mf.k, "outer", (int)a->o.outer, "inner", (int)a->o.inner,
                  "inner_eps", a->o.inner_eps, "lambda", a->o.mf.lambda, "lambda_const",
                  a->o.lambda_const, "weighted", a->o.weighted, "biases", a->o.mf.biases,
                  "validation_fraction", a->o.mf.valid_fraction, "implicit", a->o.implicit, "alpha",
                  a->o.alpha, "unobserved_weight", a->o.unobserved, "workers", (int)plan->workers,
                  "blocks", (int)plan->blocks, "processes", rt_engine_size(eng), "transport",
                  rt_engine_transport_name(eng), "nnz_train", (json_int_t)plan->nnz_train,
                  "nnz_test", (json_int_t)plan->nnz_test));
}

/* The training mean and the column counts: one all-reduce before the first
 * rotation. */
static int setup(cd_app *a, rt_engine *eng, rt_error *err)
{
    size_t n = cd_core_setup_len(a->plan, &a->o);
    double *v = calloc(n, sizeof(double));
    if (!v)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    int rc = cd_core_setup_parts(&a->core, v, err);
    if (rc == 0)
        rc = rt_engine_allreduce_f64(eng, v, n, err);
    if (rc == 0)
        cd_core_setup(&a->core, v);
    free(v);
    return rc;
}

static int cd_create(const void *opts, const rt_plan *plan, rt_engine *eng, void **out,
                     rt_error *err)
{
    cd_app *a = calloc(1, sizeof(*a));
    if (!a)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    a->o = *(const cd_opts *)opts;
    a->plan = plan;
    a->sums = calloc(cd_core_sums_len(plan, &a->o), sizeof(double));
    if (!a->sums) {
        cd_destroy(a);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    }
    uint32_t first = rt_engine_first_worker(eng);
    a->n_shards = (uint32_t)rt_engine_threads(eng);
    if (rt_app_shards_open(plan, first, a->n_shards, &a->shards, err) ||
        rt_mf_resolve_rating_scale(&a->o.mf, plan, a->shards, first, a->n_shards, eng, a->o.center,
                                   a->o.implicit, "cd-mf", err) ||
        rt_mf_local_init(&a->m, plan, a->shards, first, a->n_shards, &a->o.mf, err) ||
        cd_core_init(&a->core, &a->o, plan, a->shards, first, a->n_shards, err) ||
        setup(a, eng, err)) {
        cd_destroy(a);
        return -1;
    }
    if (rt_engine_rank(eng) == 0) {
        start_metrics(a, eng);
        char imp[160] = "";
        if (a->o.implicit)
            snprintf(imp, sizeof(imp), ", implicit (confidence 1 + %g f(r), unobserved weight %g)",
                     a->o.alpha, a->o.unobserved);
        rt_info("cd-mf: %llu x %llu, %llu train / %llu validation / %llu test ratings, mean %g, "
                "k=%u%s%s, %u outer x %u inner (eps %g), lambda %g %s + %g, %u workers x %u blocks "
                "over %s",
                (unsigned long long)plan->n_rows, (unsigned long long)plan->n_cols,
                (unsigned long long)a->core.n_train, (unsigned long long)a->core.n_valid,
                (unsigned long long)plan->nnz_test, (double)a->core.mu, a->o.mf.k,
                a->o.mf.biases ? " + biases" : "", imp, a->o.outer, a->o.inner, a->o.inner_eps,
                a->o.mf.lambda, a->o.weighted ? "weighted" : "unweighted", a->o.lambda_const,
                plan->workers, plan->blocks, rt_engine_transport_name(eng));
    }
    a->mark = rt_now();
    *out = a;
    return 0;
}

/* ------------------------------------------------------------ engine ops */

static int cd_block_home(void *p, uint32_t block, uint64_t rotation, void *payload, size_t *len,
                         rt_error *err)
{
    cd_app *a = p;
    return cd_core_block_home(&a->core, block, rotation, payload, len, err);
}

static int cd_visit(void *p, const rt_visit *v, rt_error *err)
{
    cd_app *a = p;
    return cd_core_visit(&a->core, v->worker, v->block, v->rotation, v->payload, v->len, err);
}

/* An outer iteration finished: log it and record it (`last`: the run's). */
static int report(cd_app *a, rt_engine *eng, int last, rt_error *err)
{
    const cd_metrics *m = &a->last;
    double now = rt_now(), secs = now - a->mark;
    a->mark = now;
    a->seconds += secs;
    if (!isfinite(m->objective))
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "cd-mf: objective is not finite after outer iteration %llu; "
                       "raise --lambda",
                       (unsigned long long)m->outer);
    if (rt_engine_rank(eng) == 0) {
        char fit[160] = "", valid[64] = "", test[64] = "";
        if (isfinite(m->valid_rmse))
            snprintf(valid, sizeof(valid), "  valid_rmse %.6f", m->valid_rmse);
        if (isfinite(m->test_rmse)) /* a plan without test ratings has no test column */
            snprintf(test, sizeof(test), "  test_rmse %.6f", m->test_rmse);
        if (a->o.implicit) /* ratings are not predicted: the weighted loss instead */
            snprintf(fit, sizeof(fit), "loss %.9e", m->loss);
        else
            snprintf(fit, sizeof(fit), "train_rmse %.6f%s%s", m->train_rmse, test, valid);
        rt_info("outer %3llu  %7.3fs  objective %.9e  %s  stall %5.1f%%  moved %.1f MB  "
                "rotations %llu",
                (unsigned long long)m->outer, secs, m->objective, fit, 100.0 * a->stall_frac,
                (double)a->bytes / 1e6, (unsigned long long)a->rotations);
        json_t *rec = json_pack(
            "{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I, s:I}", "outer",
            (json_int_t)m->outer, "seconds", secs, "objective", m->objective, "loss", m->loss,
            "regulariser", m->reg, "train_rmse", isfinite(m->train_rmse) ? m->train_rmse : -1.0,
            "test_rmse", isfinite(m->test_rmse) ? m->test_rmse : -1.0, "valid_rmse",
            isfinite(m->valid_rmse) ? m->valid_rmse : -1.0, "stall_frac", a->stall_frac,
            "bytes_moved", (json_int_t)a->bytes, "rotations", (json_int_t)a->rotations);
        if (rt_metrics_epoch(&a->metrics, rec, last, err))
            return -1;
        if (a->core.es.stop)
            rt_info("cd-mf: early stop after outer %llu: no better validation RMSE in the last %u "
                    "outer iterations; the model kept is outer %llu's (valid_rmse %.6f)",
                    (unsigned long long)m->outer, a->o.mf.early_stop,
                    (unsigned long long)a->core.es.best_epoch, a->core.es.best_valid);
    }
    a->stall_frac = 0;
    a->bytes = 0;
    a->rotations = 0;
    return 0;
}

static int cd_rotation_end(void *p, rt_engine *eng, uint64_t rot, const rt_rotation_stats *st,
                           int *stop, rt_error *err)
{
    cd_app *a = p;
    uint32_t first, count;
    rt_engine_home_blocks(eng, &first, &count);
    for (uint32_t b = first; b < first + count; b++) {
        size_t len = 0;
        const void *payload = rt_engine_home_payload(eng, b, &len);
        if (!payload)
            return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: block %u is not home after rotation %llu",
                           b, (unsigned long long)rot);
        if (cd_core_block_end(&a->core, b, rot, payload, len, err))
            return -1;
    }
    if (st->stall_frac_max > a->stall_frac)
        a->stall_frac = st->stall_frac_max;
    a->bytes += st->bytes_moved;
    a->rotations++;
    int reduced = cd_core_rotation_end(&a->core, rot, a->sums);
    if (reduced && rt_engine_allreduce_f64(eng, a->sums, cd_core_sums_len(a->plan, &a->o), err))
        return -1;
    int advanced = cd_core_advance(&a->core, rot, reduced ? a->sums : NULL, &a->last);
    *stop = cd_core_done(&a->core);
    return advanced ? report(a, eng, *stop, err) : 0;
}

/* ------------------------------------------------------------ model */

/* rt_mf_save gathers W from the local W rows (row-major, kp floats a row)
 * and H from the home payloads in the same layout, so the rank-major factors
 * of the core are copied there first.  The slots are large enough for that
 * (cd_slot_bytes), and the payloads are no longer needed after the run. */
static int export_model(cd_app *a, rt_engine *eng, rt_error *err)
{
    uint32_t k = a->o.mf.k, kp = a->m.kp, first, count;
    for (uint32_t t = 0; t < a->m.n_workers; t++) {
        uint32_t n = a->core.workers[t].n_rows;
        const float *U = cd_core_saved_U(&a->core, t);
        for (uint32_t i = 0; i < n; i++)
            for (uint32_t r = 0; r < kp; r++)
                a->m.W[t][(size_t)i * kp + r] = r < k ? U[(size_t)r * n + i] : 0.0f;
        if (a->m.bu)
            memcpy(a->m.bu[t], cd_core_saved_row_bias(&a->core, t), n * sizeof(float));
    }
    rt_engine_home_blocks(eng, &first, &count);
    for (uint32_t b = first; b < first + count; b++) {
        const cd_block *bl = &a->core.blocks[b];
        float *H = rt_engine_home_payload(eng, b, NULL);
        if (!H || !bl->V)
            return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: block %u is not home at the end", b);
        uint32_t n = bl->n_cols;
        const float *V = cd_core_saved_V(&a->core, b);
        for (uint32_t j = 0; j < n; j++)
            for (uint32_t r = 0; r < kp; r++)
                H[(size_t)j * kp + r] = r < k ? V[(size_t)r * n + j] : 0.0f;
        if (a->o.mf.biases)
            memcpy(rt_mf_payload_biases(H, n, kp), cd_core_saved_col_bias(&a->core, b),
                   n * sizeof(float));
    }
    return 0;
}

static int cd_save(void *p, rt_engine *eng, rt_error *err)
{
    cd_app *a = p;
    if (!a->o.mf.out)
        return 0;
    if (export_model(a, eng, err))
        return -1;
    json_t *meta = json_object();
    json_object_set_new(meta, "app", json_string("cd-mf"));
    json_object_set_new(meta, "mu", json_real(a->core.mu * a->o.mf.rating_scale));
    json_object_set_new(meta, "outer", json_integer((json_int_t)a->last.outer));
    if (a->core.es.best_epoch)
        json_object_set_new(meta, "best_outer", json_integer((json_int_t)a->core.es.best_epoch));
    json_object_set_new(meta, "weighted", json_boolean(a->o.weighted));
    json_object_set_new(meta, "lambda_const", json_real(a->o.lambda_const));
    json_object_set_new(meta, "biases", json_boolean(a->o.mf.biases));
    json_object_set_new(meta, "inner", json_integer((json_int_t)a->o.inner));
    if (a->o.implicit) {
        static const char *const conf[] = {"linear", "log", "binary"};
        json_object_set_new(meta, "implicit", json_true());
        json_object_set_new(meta, "alpha", json_real(a->o.alpha));
        json_object_set_new(meta, "confidence", json_string(conf[a->o.confidence]));
        json_object_set_new(meta, "unobserved_weight", json_real(a->o.unobserved));
    }
    if (a->core.es.best_epoch)
        json_object_set_new(meta, "valid_rmse", json_real(a->core.es.best_valid));
    /* The last outer iteration's scores describe the model saved only when
     * that is the last iterate (not an earlier best by validation). */
    if (!a->core.es.best_epoch || a->core.es.best_epoch == a->last.outer) {
        json_object_set_new(meta, "objective", json_real(a->last.objective));
        if (isfinite(a->last.train_rmse))
            json_object_set_new(meta, "train_rmse", json_real(a->last.train_rmse));
        if (isfinite(a->last.test_rmse))
            json_object_set_new(meta, "test_rmse", json_real(a->last.test_rmse));
    }
    json_object_set_new(meta, "seconds", json_real(a->seconds));
    int rc = rt_mf_save(&a->m, eng, &a->o.mf, meta, err);
    if (rc == 0 && rt_engine_rank(eng) == 0)
        rt_info("cd-mf: model written to %s", a->o.mf.out);
    return rc;
}

/* ------------------------------------------------------------ state */

typedef struct cd_glue_state {
    cd_metrics last;
    double seconds, stall_frac;
    uint64_t rotations, bytes;
} cd_glue_state;

static int cd_state_io(void *p, rt_state_io *io, rt_error *err)
{
    cd_app *a = p;
    cd_glue_state g = {.last = a->last,
                       .seconds = a->seconds,
                       .stall_frac = a->stall_frac,
                       .rotations = a->rotations,
                       .bytes = a->bytes};
    if (cd_core_state_io(&a->core, io, err) || rt_state_xfer(io, "glue", &g, sizeof(g), err))
        return -1;
    a->last = g.last;
    a->seconds = g.seconds;
    a->stall_frac = g.stall_frac;
    a->rotations = g.rotations;
    a->bytes = g.bytes;
    return 0;
}

static uint64_t cd_outer_done(const void *p)
{
    const cd_app *a = p;
    return a->core.outer_done;
}

static int cd_finished(const void *p, uint64_t next_rotation)
{
    (void)next_rotation;
    return cd_core_done(&((const cd_app *)p)->core);
}

static int cd_check_length(const void *p, uint64_t next_rotation, rt_error *err)
{
    const cd_core *c = &((const cd_app *)p)->core;
    (void)next_rotation;
    if (c->outer_done <= c->opt.outer)
        return 0;
    return rt_resume_past_length(err, "outer iteration", c->outer_done, "--outer",
                                 (unsigned)c->opt.outer);
}

static const rt_app_ops cd_ops = {
    .block_home = cd_block_home,
    .visit = cd_visit,
    .step_end = NULL,
    .rotation_end = cd_rotation_end,
};

const rt_app_desc rt_app_cd_mf = {
    .name = "cd-mf",
    .plan_app = RT_PLAN_MF,
    .options = cd_options,
    .opts_size = sizeof(cd_opts),
    .opts_init = cd_opts_init,
    .opts_done = cd_opts_done,
    .check = cd_check,
    .slot_bytes = cd_slot_bytes,
    .create = cd_create,
    .ops = &cd_ops,
    .save = cd_save,
    .destroy = cd_destroy,
    .model_load = rt_mf_model_load,
    .model_free = rt_mf_model_free,
    .model_ids = rt_mf_model_ids,
    .model_predict = rt_mf_model_predict,
    .state_io = cd_state_io,
    .model_scores = rt_mf_model_scores,
    .model_export = rt_mf_model_export,
    .epochs_done = cd_outer_done,
    .finished = cd_finished,
    .check_length = cd_check_length,
};
