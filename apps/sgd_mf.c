/*
 * sgd_mf.c - the sgd-mf app: L2-regularised SGD matrix factorisation on the
 * rotation engine.  The model, the per-epoch metrics and the learning-rate
 * schedules are described in sgd_mf.h and computed by sgd_mf_core.c; this
 * file is the glue to `rotor train`: options, shards, the engine callbacks,
 * the per-epoch log and the saved model.
 */
#include "apps/app_common.h"
#include "apps/metrics.h"
#include "apps/sgd_mf.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct sgd_app {
    sgd_opts o;
    const rt_plan *plan;
    rt_shard *shards; /* the local workers' */
    uint32_t n_shards;
    rt_mf_held_out held; /* --validation-fraction: the shards cut by it */
    sgd_core core;
    rt_mf_rank_eval rank; /* --eval-top-k */
    double seconds;
    rt_metrics metrics;
} sgd_app;

/* ---------------------------------------------------------------- options */

static const rt_opt_choice sgd_schedules[] = {
    {"fixed", LR_FIXED}, {"bold", LR_BOLD}, {"decay", LR_DECAY}, {NULL, 0}};
static const rt_opt_choice sgd_step_rules[] = {{"adagrad", 1}, {"none", 0}, {NULL, 0}};

/* Defaults from sweeps on MovieLens 100K and FilmTrust folds, whole and
 * with a quarter or ~6 a user of their training ratings kept
 * (bench/quality.sh): AdaGrad, lr 0.2 decayed x0.9 an epoch, lambda 0.05
 * n + 5 on the factors, 0 n + 5 on the biases (a damped mean per row and
 * column: the per-rating lambda alone left the rows and columns of a few
 * ratings to fit them, and on the sparse data a damped mean-plus-biases
 * model beat the factorisation), 20 epochs; with --implicit by the ranking
 * quality on the same data (bench/ranking.sh). */
#define SGD_EPOCHS "20"
#define SGD_LR "0.2"
#define SGD_LAMBDA "0.05"
#define SGD_LAMBDA_BIAS "0"
#define SGD_LAMBDA_CONST "5"
#define SGD_SCHEDULE LR_DECAY
#define SGD_BPR_EPOCHS "40"
#define SGD_BPR_LR "0.1"
#define SGD_BPR_LAMBDA "0.02"
#define SGD_BPR_SCHEDULE LR_DECAY
#define SGD_BPR_NEGATIVES "8"

static const rt_opt sgd_options[] = {
    RT_MF_COMMON_OPTIONS(sgd_opts),
    RT_U32_OPT("epochs", 0, sgd_opts, epochs, "N", NULL, 1, 100000000, 0,
               "epochs (default " SGD_EPOCHS ", with --implicit " SGD_BPR_EPOCHS ")"),
    RT_DOUBLE_OPT("lr", 'r', sgd_opts, lr, "ETA", NULL, 0, HUGE_VAL, RT_OPT_MIN_OPEN,
                  "initial learning rate (default " SGD_LR ", with --implicit " SGD_BPR_LR ")"),
    RT_DOUBLE_OPT("lambda", 'l', sgd_opts, mf.lambda, "L", NULL, 0, HUGE_VAL, 0,
                  "L2 regularisation per rating (default " SGD_LAMBDA
                  ", with --implicit " SGD_BPR_LAMBDA ")"),
    RT_FLAG_OPT("implicit", 0, sgd_opts, implicit,
                "implicit feedback: BPR (every training pair ranked above a column drawn from the "
                "block in hand that the row lacks), plain SGD steps, column biases only, no mean"),
    RT_U32_OPT("negatives", 0, sgd_opts, negatives, "N", NULL, 1, 1000, 0,
               "with --implicit: negatives drawn per training pair, one BPR step each "
               "(default " SGD_BPR_NEGATIVES ")"),
    RT_U32_OPT("eval-top-k", 0, sgd_opts, eval_top_k, "K", NULL, 1, 100000, 0,
               "after every epoch, precision@K, recall@K, NDCG@K and MAP@K of the plan's test "
               "ratings (training items excluded), as rotor eval --top-k K gives them"),
    RT_ENUM_OPT("adaptive", 0, sgd_opts, adagrad, sgd_step_rules, "adagrad",
                "step sizes: adagrad (row-wise AdaGrad as in LIBMF: lr / sqrt(1 + accumulated "
                "mean squared gradients)) or none (one rate)"),
    RT_ENUM_OPT("schedule", 0, sgd_opts, schedule, sgd_schedules, NULL,
                "learning-rate schedule: fixed; bold (bold driver: x1.05 after an epoch whose loss "
                "fell, x0.5 otherwise); decay (x --decay every epoch) (default decay)"),
    RT_DOUBLE_OPT("decay", 0, sgd_opts, decay, "D", "0.9", 0, 1, RT_OPT_MIN_OPEN,
                  "factor per epoch for --schedule decay"),
    RT_DOUBLE_OPT("lambda-bias", 0, sgd_opts, lambda_bias, "L", NULL, 0, HUGE_VAL, 0,
                  "L2 regularisation of the biases per rating (default " SGD_LAMBDA_BIAS
                  ", with --implicit: --lambda)"),
    RT_DOUBLE_OPT("lambda-const", 0, sgd_opts, lambda_const, "L0", NULL, 0, HUGE_VAL, 0,
                  "L2 of every row and column on top of the per-rating one, shared out over its "
                  "ratings' updates (lambda n + L0 for n ratings, as cd-mf's): shrinks the rows "
                  "and columns of few ratings (default " SGD_LAMBDA_CONST ", with --implicit 0)"),
    RT_DOUBLE_OPT("target-rmse", 0, sgd_opts, target_rmse, "X", NULL, 0, HUGE_VAL, 0,
                  "stop once test RMSE <= X"),
    RT_DOUBLE_OPT("init-scale", 0, sgd_opts, mf.init_scale, "S", "0.3", 0, HUGE_VAL,
                  RT_OPT_MIN_OPEN, "initial factors ~ N(0, S/sqrt(K))"),
    RT_STRING_OPT("kernel", 0, sgd_opts, kernel_name, "auto|portable|avx2", "auto", 0,
                  "SGD inner loop: auto is avx2 where the CPU has it (both give the same bits)"),
    {0}};

/* --epochs, --lr, --lambda, --schedule, --lambda-bias and --lambda-const
 * depend on --implicit (their fields start at "not given": negative or 0);
 * with it --lambda-bias defaults to --lambda. */
static void sgd_opts_init(void *opts)
{
    sgd_opts *o = opts;
    o->lambda_bias = -1;
    o->lr = -1;
    o->mf.lambda = -1;
    o->epochs = 0;
    o->schedule = -1;
    o->negatives = 0;
    o->lambda_const = -1;
}

static int sgd_opts_done(void *opts, rt_error *err)
{
    sgd_opts *o = opts;
    if (rt_mf_kernel_pick(o->kernel_name, &o->kernel, err))
        return -1;
    if (o->negatives && !o->implicit)
        return rt_fail(err, RT_EXIT_INPUT,
                       "sgd-mf: --negatives samples the pairs a row lacks: only with --implicit");
    if (o->implicit && o->lambda_const > 0)
        return rt_fail(err, RT_EXIT_INPUT,
                       "sgd-mf: --lambda-const weighs the ratings' squared errors: not with "
                       "--implicit");
    if (o->lambda_const < 0)
        o->lambda_const = o->implicit ? 0 : atof(SGD_LAMBDA_CONST);
    if (o->negatives == 0)
        o->negatives = (uint32_t)atoi(SGD_BPR_NEGATIVES);
    if (o->epochs == 0)
        o->epochs = (uint32_t)atoi(o->implicit ? SGD_BPR_EPOCHS : SGD_EPOCHS);
    if (o->lr < 0)
        o->lr = atof(o->implicit ? SGD_BPR_LR : SGD_LR);
    if (o->mf.lambda < 0)
        o->mf.lambda = atof(o->implicit ? SGD_BPR_LAMBDA : SGD_LAMBDA);
    if (o->schedule < 0)
        o->schedule = o->implicit ? SGD_BPR_SCHEDULE : SGD_SCHEDULE;
    if (o->lambda_bias < 0)
        o->lambda_bias = o->implicit ? o->mf.lambda : atof(SGD_LAMBDA_BIAS);
    if (o->implicit) /* ranks, not ratings: no mean, no row biases' use, one rate */
        o->center = o->adagrad = 0;
    return 0;
}

static int sgd_check(const void *opts, const rt_plan *plan, rt_error *err)
{
    const sgd_opts *o = opts;
    if (o->mf.early_stop && !(o->mf.valid_fraction > 0))
        return rt_fail(err, RT_EXIT_INPUT, "sgd-mf: --early-stop needs --validation-fraction");
    if (o->implicit && o->mf.valid_fraction > 0)
        return rt_fail(err, RT_EXIT_INPUT,
                       "sgd-mf: --validation-fraction scores ratings, not rankings: not with "
                       "--implicit");
    if (o->eval_top_k && plan->nnz_test == 0)
        return rt_fail(err, RT_EXIT_INPUT,
                       "sgd-mf: --eval-top-k ranks the plan's test ratings, and %s has none "
                       "(partition --test FILE)",
                       plan->dir);
    if (o->implicit && o->target_rmse > 0)
        return rt_fail(err, RT_EXIT_INPUT,
                       "sgd-mf: --target-rmse scores ratings, not rankings: not with --implicit");
    if (o->implicit && o->mf.rating_scale > 0)
        return rt_fail(err, RT_EXIT_INPUT,
                       "sgd-mf: --rating-scale scales ratings to fit: not with --implicit");
    return rt_mf_check_common(&o->mf, plan, "sgd-mf", err);
}

static int sgd_slot_bytes(const void *opts, const rt_plan *plan, size_t *bytes, rt_error *err)
{
    (void)err;
    const sgd_opts *o = opts;
    *bytes = rt_mf_slot_bytes(plan, rt_mf_padded_rank(o->mf.k), sgd_payload_extra(o));
    return 0;
}

/* ------------------------------------------------------------ lifecycle */

/* --lambda-const: the column counts, one all-reduce before training. */
static int setup(sgd_app *a, rt_engine *eng, rt_error *err)
{
    size_t n = sgd_core_setup_len(&a->core);
    if (n == 0)
        return 0;
    double *v = calloc(n, sizeof(double));
    if (!v)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory for %zu column counts", n);
    sgd_core_setup_parts(&a->core, v);
    int rc = rt_engine_allreduce_f64(eng, v, n, err);
    if (rc == 0)
        sgd_core_setup(&a->core, v);
    free(v);
    return rc;
}

static void sgd_destroy(void *p)
{
    sgd_app *a = p;
    if (!a)
        return;
    sgd_core_free(&a->core);
    rt_mf_rank_eval_free(&a->rank);
    rt_app_shards_close(a->shards, a->n_shards);
    rt_mf_held_out_free(&a->held);
    rt_metrics_free(&a->metrics);
    free(a);
}

static int sgd_create(const void *opts, const rt_plan *plan, rt_engine *eng, void **out,
                      rt_error *err)
{
    sgd_app *a = calloc(1, sizeof(*a));
    if (!a)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    a->o = *(const sgd_opts *)opts;
    a->plan = plan;
    a->n_shards = (uint32_t)rt_engine_threads(eng);
    uint32_t first = rt_engine_first_worker(eng);
    double mean = 0;
    int validation = a->o.mf.valid_fraction > 0;
    if (rt_app_shards_open(plan, first, a->n_shards, &a->shards, err) ||
        (validation &&
         rt_mf_held_out_split(&a->held, plan, a->shards, a->n_shards, &a->o.mf, err))) {
        sgd_destroy(a);
        return -1;
    }
    /* With validation, training and its mean see the kept ratings only. */
    const rt_shard *fit = validation ? a->held.fit : a->shards;
    if (rt_mf_resolve_rating_scale(&a->o.mf, plan, a->shards, first, a->n_shards, eng, a->o.center,
                                   a->o.implicit, "sgd-mf", err) ||
        rt_mf_train_mean(plan, fit, first, a->n_shards, eng, &mean, err) ||
        sgd_core_init(&a->core, &a->o, plan, fit, first, a->n_shards, mean,
                      validation ? &a->held : NULL, err) ||
        setup(a, eng, err)) {
        sgd_destroy(a);
        return -1;
    }
    /* --eval-top-k excludes every training item of the plan, held out or
     * not, as rotor eval --top-k of the saved model does. */
    rt_mf_local ranked = a->core.m;
    ranked.shards = a->shards;
    if (a->o.eval_top_k && rt_mf_rank_eval_init(&a->rank, &ranked, a->o.eval_top_k, err)) {
        sgd_destroy(a);
        return -1;
    }
    if (rt_engine_rank(eng) == 0)
        rt_metrics_init(
            &a->metrics, a->o.mf.metrics, "sgd-mf",
            json_pack("{s:i, s:f, s:f, s:f, s:i, s:i, s:i, s:s, s:I, s:I}", "k", (int)a->o.mf.k,
                      "lr", a->o.lr, "lambda", a->o.mf.lambda, "lambda_const", a->o.lambda_const,
                      "workers", (int)plan->workers, "blocks", (int)plan->blocks, "processes",
                      rt_engine_size(eng), "transport", rt_engine_transport_name(eng), "nnz_train",
                      (json_int_t)plan->nnz_train, "nnz_test", (json_int_t)plan->nnz_test));
    if (rt_engine_rank(eng) == 0)
        rt_info("sgd-mf: %llu x %llu, %llu train / %llu test ratings, k=%u, lambda %g n + %g, "
                "%u workers x %u blocks over %s, kernel %s, mean %.4f",
                (unsigned long long)plan->n_rows, (unsigned long long)plan->n_cols,
                (unsigned long long)plan->nnz_train, (unsigned long long)plan->nnz_test, a->o.mf.k,
                a->o.mf.lambda, a->o.lambda_const, plan->workers, plan->blocks,
                rt_engine_transport_name(eng), rt_mf_kernel_name(a->o.kernel), mean);
    *out = a;
    return 0;
}

/* ------------------------------------------------------------ engine ops */

static int sgd_block_home(void *p, uint32_t block, uint64_t rotation, void *payload, size_t *len,
                          rt_error *err)
{
    (void)err;
    sgd_app *a = p;
    sgd_core_block_home(&a->core, block, rotation, payload, len);
    return 0;
}

static int sgd_visit(void *p, const rt_visit *v, rt_error *err)
{
    (void)err;
    sgd_app *a = p;
    sgd_core_visit(&a->core, v->worker, v->block, v->payload);
    return 0;
}

static int sgd_rotation_end(void *p, rt_engine *eng, uint64_t rot, const rt_rotation_stats *st,
                            int *stop, rt_error *err)
{
    sgd_app *a = p;
    sgd_epoch ep;
    rt_rank_metrics rk = {0};
    rt_mf_cols *cols = sgd_core_cols(&a->core);
    if (cols && rt_mf_cols_gather(cols, a->plan, eng, err))
        return -1;
    sgd_core_score_held(&a->core);
    if (rt_engine_allreduce_f64(eng, sgd_core_sums(&a->core), sgd_core_sums_len(&a->core), err) ||
        sgd_core_epoch_end(&a->core, rot, &ep, stop, err) ||
        (a->o.eval_top_k && rt_mf_rank_eval_epoch(&a->rank, &a->core.m, eng, a->core.mu,
                                                  (uint32_t)rt_engine_threads(eng), &rk, err)))
        return -1;
    a->seconds += st->seconds;
    if (rt_engine_rank(eng) != 0)
        return 0;
    char ranking[96] = "", valid[32] = "", test[32] = "";
    if (a->plan->nnz_test) /* a plan without test ratings has no test column ("nan") */
        snprintf(test, sizeof(test), "  %s %.5f", a->o.implicit ? "test_auc" : "test_rmse",
                 ep.test_rmse);
    if (a->o.eval_top_k)
        snprintf(ranking, sizeof(ranking), "  p@%u %.4f  ndcg@%u %.4f", rk.k, rk.precision, rk.k,
                 rk.ndcg);
    if (cols)
        snprintf(valid, sizeof(valid), "  valid_rmse %.5f", ep.valid_rmse);
    rt_info("epoch %3llu  %7.3fs  %7.2fM upd/s  %s %.5f%s%s%s  "
            "stall %5.1f%%  lr %.4g  moved %.1f MB",
            (unsigned long long)rot + 1, st->seconds,
            (double)a->plan->nnz_train / st->seconds / 1e6,
            a->o.implicit ? "bpr_loss" : "train_rmse", ep.train_rmse, test, valid, ranking,
            100.0 * st->stall_frac_max, (double)ep.lr, (double)st->bytes_moved / 1e6);
    if (a->core.es.stop)
        rt_info("sgd-mf: early stop after epoch %llu: no better validation RMSE in the last %u "
                "epochs; the model kept is epoch %llu's (valid_rmse %.6f)",
                (unsigned long long)rot + 1, a->o.mf.early_stop,
                (unsigned long long)a->core.es.best_epoch, a->core.es.best_valid);
    json_t *rec = json_pack(
        "{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I}", "epoch", (json_int_t)rot + 1, "seconds",
        st->seconds, "updates_per_s", (double)a->plan->nnz_train / st->seconds,
        a->o.implicit ? "bpr_loss" : "train_rmse", ep.train_rmse,
        a->o.implicit ? "test_auc" : "test_rmse", isfinite(ep.test_rmse) ? ep.test_rmse : -1.0,
        "stall_frac", st->stall_frac_max, "compute_s", st->compute_s, "lr", (double)ep.lr,
        "bytes_moved", (json_int_t)st->bytes_moved);
    if (rec && cols)
        json_object_update_missing_new(rec,
                                       json_pack("{s:f, s:I}", "valid_rmse",
                                                 isfinite(ep.valid_rmse) ? ep.valid_rmse : -1.0,
                                                 "best_epoch", (json_int_t)ep.best_epoch));
    if (rec && a->o.eval_top_k)
        json_object_update_missing_new(
            rec, json_pack("{s:i, s:f, s:f, s:f, s:f, s:I}", "top_k", (int)rk.k, "precision_at_k",
                           rk.precision, "recall_at_k", rk.recall, "ndcg_at_k", rk.ndcg, "map_at_k",
                           rk.map, "ranked_users", (json_int_t)rk.users));
    return rt_metrics_epoch(&a->metrics, rec, *stop, err);
}

/* With validation, what --out writes is the best model by it: in place of
 * the last iterate (the run is over, the local state is not needed again). */
static void use_best_model(sgd_app *a, rt_engine *eng)
{
    uint32_t first, count;
    sgd_core_use_best_rows(&a->core);
    rt_engine_home_blocks(eng, &first, &count);
    for (uint32_t b = first; b < first + count; b++) {
        float *payload = rt_engine_home_payload(eng, b, NULL);
        if (payload)
            sgd_core_use_best_block(&a->core, b, payload);
    }
}

static int sgd_save(void *p, rt_engine *eng, rt_error *err)
{
    sgd_app *a = p;
    sgd_core *c = &a->core;
    if (!a->o.mf.out)
        return 0;
    use_best_model(a, eng);
    uint64_t best = c->es.best_epoch;
    json_t *meta = json_object();
    json_object_set_new(meta, "app", json_string("sgd-mf"));
    json_object_set_new(meta, "mu", json_real(c->mu * c->rating_scale));
    json_object_set_new(meta, "biases", json_boolean(a->o.mf.biases));
    json_object_set_new(meta, "epochs", json_integer((json_int_t)c->epochs_run));
    json_object_set_new(meta, "lr", json_real(a->o.lr));
    json_object_set_new(meta, "lambda_const", json_real(a->o.lambda_const));
    if (a->o.implicit)
        json_object_set_new(meta, "implicit", json_string("bpr"));
    if (best) { /* the model saved is that epoch's, scored at its end */
        json_object_set_new(meta, "best_epoch", json_integer((json_int_t)best));
        json_object_set_new(meta, "valid_rmse", json_real(c->es.best_valid));
        if (isfinite(c->best_test_rmse))
            json_object_set_new(meta, "test_rmse", json_real(c->best_test_rmse));
        if (best == c->epochs_run)
            json_object_set_new(meta, "train_rmse", json_real(c->train_rmse));
    } else {
        json_object_set_new(meta, a->o.implicit ? "bpr_loss" : "train_rmse",
                            json_real(c->train_rmse));
        if (isfinite(c->test_rmse))
            json_object_set_new(meta, a->o.implicit ? "test_auc" : "test_rmse",
                                json_real(c->test_rmse));
    }
    json_object_set_new(meta, "seconds", json_real(a->seconds));
    int rc = rt_mf_save(&a->core.m, eng, &a->o.mf, meta, err);
    if (rc == 0 && rt_engine_rank(eng) == 0)
        rt_info("sgd-mf: model written to %s", a->o.mf.out);
    return rc;
}

/* ------------------------------------------------------------ state */

static int sgd_state_io(void *p, rt_state_io *io, rt_error *err)
{
    sgd_app *a = p;
    return sgd_core_state_io(&a->core, io, err) ||
                   rt_state_xfer(io, "seconds", &a->seconds, sizeof(a->seconds), err)
               ? -1
               : 0;
}

static int sgd_finished(const void *p, uint64_t next_rotation)
{
    (void)next_rotation;
    return sgd_core_done(&((const sgd_app *)p)->core);
}

static int sgd_check_length(const void *p, uint64_t next_rotation, rt_error *err)
{
    const sgd_core *c = &((const sgd_app *)p)->core;
    (void)next_rotation;
    if (c->epochs_run <= c->o.epochs)
        return 0;
    return rt_resume_past_length(err, "epoch", (uint64_t)c->epochs_run, "--epochs", c->o.epochs);
}

static const rt_app_ops sgd_ops = {
    .block_home = sgd_block_home,
    .visit = sgd_visit,
    .step_end = NULL,
    .rotation_end = sgd_rotation_end,
};

const rt_app_desc rt_app_sgd_mf = {
    .name = "sgd-mf",
    .plan_app = RT_PLAN_MF,
    .options = sgd_options,
    .opts_size = sizeof(sgd_opts),
    .opts_init = sgd_opts_init,
    .opts_done = sgd_opts_done,
    .check = sgd_check,
    .slot_bytes = sgd_slot_bytes,
    .create = sgd_create,
    .ops = &sgd_ops,
    .save = sgd_save,
    .destroy = sgd_destroy,
    .model_load = rt_mf_model_load,
    .model_free = rt_mf_model_free,
    .model_ids = rt_mf_model_ids,
    .model_predict = rt_mf_model_predict,
    .state_io = sgd_state_io,
    .finished = sgd_finished,
    .check_length = sgd_check_length,
    .model_scores = rt_mf_model_scores,
    .model_export = rt_mf_model_export,
};
