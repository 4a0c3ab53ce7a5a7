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

#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct sgd_app {
    sgd_opts o;
    const rt_plan *plan;
    rt_shard *shards; /* the local workers' */
    uint32_t n_shards;
    sgd_core core;
    double seconds;
    rt_metrics metrics;
} sgd_app;

static const char sgd_usage[] =
    "  --rank K          factor rank (default 32)\n"
    "  --epochs N        epochs (default 20)\n"
    "  --lr ETA          initial learning rate (default 0.01)\n"
    "  --lambda L        L2 regularisation per rating (default 0.1)\n"
    "  --schedule S      learning-rate schedule: fixed (default), bold (bold driver:\n"
    "                    x1.05 after an epoch whose loss fell, x0.5 otherwise), decay\n"
    "  --decay D         factor per epoch for --schedule decay (default 0.9)\n"
    "  --no-center       do not subtract the training mean from ratings\n"
    "  --no-biases       no per-row and per-column bias terms\n"
    "  --lambda-bias L   L2 regularisation of the biases (default: --lambda)\n"
    "  --target-rmse X   stop once test RMSE <= X\n"
    "  --init-scale S    initial factors ~ N(0, S/sqrt(K)) (default 0.3)\n"
    "  --seed S          random seed (default 1)\n"
    "  --kernel K        SGD inner loop: auto (default: avx2 where the CPU has it),\n"
    "                    portable or avx2 (both give the same bits)\n"
    "  --out DIR         write W.npy, H.npy, rows.ids, cols.ids, model.json\n"
    "  --metrics FILE    per-epoch metrics as JSON, rewritten after every epoch\n";

/* ---------------------------------------------------------------- options */

static int parse_one(sgd_opts *o, int argc, char **argv, int *i, rt_error *err)
{
    const char *arg = argv[*i], *v;
    double d;
    int rc = rt_mf_parse_common(&o->mf, argc, argv, i, err);
    if (rc)
        return rc < 0 ? -1 : 0;
    if (rt_opt_is(arg, "--no-center")) {
        o->center = 0;
        return 0;
    }
    if (rt_opt_is(arg, "--no-biases")) {
        o->mf.biases = 0;
        return 0;
    }
    static const char *const with_value[] = {
        "--epochs", "--lr", "--decay", "--target-rmse", "--schedule", "--lambda-bias", "--kernel"};
    int known = 0;
    for (size_t n = 0; n < sizeof(with_value) / sizeof(with_value[0]); n++)
        known |= rt_opt_is(arg, with_value[n]);
    if (!known)
        return rt_fail(err, RT_EXIT_INPUT, "sgd-mf: unknown option %s", arg);
    if (!(v = rt_opt_value(argc, argv, i, err)))
        return -1;
    if (rt_opt_is(arg, "--kernel")) {
        return rt_mf_kernel_pick(v, &o->kernel, err);
    } else if (rt_opt_is(arg, "--epochs")) {
        int n;
        if (rt_parse_int(v, &n) || n <= 0)
            return rt_fail(err, RT_EXIT_INPUT, "--epochs must be a positive integer, got '%s'", v);
        o->epochs = (uint32_t)n;
    } else if (rt_opt_is(arg, "--lr")) {
        if (rt_parse_double(v, &d) || d <= 0)
            return rt_fail(err, RT_EXIT_INPUT, "--lr must be a number > 0, got '%s'", v);
        o->lr = d;
    } else if (rt_opt_is(arg, "--decay")) {
        if (rt_parse_double(v, &d) || d <= 0 || d > 1)
            return rt_fail(err, RT_EXIT_INPUT, "--decay must be in (0, 1], got '%s'", v);
        o->decay = d;
    } else if (rt_opt_is(arg, "--lambda-bias")) {
        if (rt_parse_double(v, &d) || d < 0)
            return rt_fail(err, RT_EXIT_INPUT, "--lambda-bias must be a number >= 0, got '%s'", v);
        o->lambda_bias = d;
    } else if (rt_opt_is(arg, "--target-rmse")) {
        if (rt_parse_double(v, &d) || d < 0)
            return rt_fail(err, RT_EXIT_INPUT, "--target-rmse must be >= 0, got '%s'", v);
        o->target_rmse = d;
    } else if (rt_opt_is(arg, "--schedule")) {
        if (!strcmp(v, "bold"))
            o->schedule = LR_BOLD;
        else if (!strcmp(v, "decay"))
            o->schedule = LR_DECAY;
        else if (!strcmp(v, "fixed"))
            o->schedule = LR_FIXED;
        else
            return rt_fail(err, RT_EXIT_INPUT, "--schedule must be bold, decay or fixed, got '%s'",
                           v);
    }
    return 0;
}

static int sgd_parse(int argc, char **argv, void **out, rt_error *err)
{
    sgd_opts *o = calloc(1, sizeof(*o));
    if (!o)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    rt_mf_common_defaults(&o->mf);
    /* Defaults from a sweep on MovieLens 100K (README): fixed rate, lambda 0.1. */
    o->mf.lambda = 0.1;
    o->mf.init_scale = 0.3;
    o->lr = 0.01;
    o->decay = 0.9;
    o->schedule = LR_FIXED;
    o->epochs = 20;
    o->center = 1;
    o->mf.biases = 1;
    o->lambda_bias = -1;
    o->kernel = rt_mf_kernel_best();
    for (int i = 1; i < argc; i++)
        if (parse_one(o, argc, argv, &i, err)) {
            free(o);
            return -1;
        }
    if (o->lambda_bias < 0)
        o->lambda_bias = o->mf.lambda;
    *out = o;
    return 0;
}

static int sgd_check(const void *opts, const rt_plan *plan, rt_error *err)
{
    const sgd_opts *o = opts;
    if (o->mf.valid_fraction > 0 || o->mf.early_stop)
        return rt_fail(err, RT_EXIT_INPUT,
                       "sgd-mf: --validation-fraction and --early-stop are cd-mf only for now");
    return rt_mf_check_common(&o->mf, plan, "sgd-mf", err);
}

static int sgd_slot_bytes(const void *opts, const rt_plan *plan, size_t *bytes, rt_error *err)
{
    (void)err;
    const sgd_opts *o = opts;
    *bytes = rt_mf_slot_bytes(plan, rt_mf_padded_rank(o->mf.k), o->mf.biases);
    return 0;
}

/* ------------------------------------------------------------ lifecycle */

static void sgd_destroy(void *p)
{
    sgd_app *a = p;
    if (!a)
        return;
    sgd_core_free(&a->core);
    rt_app_shards_close(a->shards, a->n_shards);
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
    if (rt_app_shards_open(plan, first, a->n_shards, &a->shards, err) ||
        rt_mf_train_mean(plan, a->shards, first, a->n_shards, eng, &mean, err) ||
        sgd_core_init(&a->core, &a->o, plan, a->shards, first, a->n_shards, mean, err)) {
        sgd_destroy(a);
        return -1;
    }
    if (rt_engine_rank(eng) == 0)
        rt_metrics_init(
            &a->metrics, a->o.mf.metrics, "sgd-mf",
            json_pack("{s:i, s:f, s:f, s:i, s:i, s:i, s:s, s:I, s:I}", "k", (int)a->o.mf.k, "lr",
                      a->o.lr, "lambda", a->o.mf.lambda, "workers", (int)plan->workers, "blocks",
                      (int)plan->blocks, "processes", rt_engine_size(eng), "transport",
                      rt_engine_transport_name(eng), "nnz_train", (json_int_t)plan->nnz_train,
                      "nnz_test", (json_int_t)plan->nnz_test));
    if (rt_engine_rank(eng) == 0)
        rt_info("sgd-mf: %llu x %llu, %llu train / %llu test ratings, k=%u, %u workers x %u "
                "blocks over %s, kernel %s, mean %.4f",
                (unsigned long long)plan->n_rows, (unsigned long long)plan->n_cols,
                (unsigned long long)plan->nnz_train, (unsigned long long)plan->nnz_test, a->o.mf.k,
                plan->workers, plan->blocks, rt_engine_transport_name(eng),
                rt_mf_kernel_name(a->o.kernel), mean);
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
    if (rt_engine_allreduce_f64(eng, sgd_core_sums(&a->core), sgd_core_sums_len(&a->core), err) ||
        sgd_core_epoch_end(&a->core, rot, &ep, stop, err))
        return -1;
    a->seconds += st->seconds;
    if (rt_engine_rank(eng) != 0)
        return 0;
    rt_info("epoch %3llu  %7.3fs  %7.2fM upd/s  train_rmse %.5f  test_rmse %.5f  "
            "stall %5.1f%%  lr %.4g  moved %.1f MB",
            (unsigned long long)rot + 1, st->seconds,
            (double)a->plan->nnz_train / st->seconds / 1e6, ep.train_rmse, ep.test_rmse,
            100.0 * st->stall_frac_max, (double)ep.lr, (double)st->bytes_moved / 1e6);
    return rt_metrics_epoch(&a->metrics,
                            json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:I}", "epoch",
                                      (json_int_t)rot + 1, "seconds", st->seconds, "updates_per_s",
                                      (double)a->plan->nnz_train / st->seconds, "train_rmse",
                                      ep.train_rmse, "test_rmse",
                                      isfinite(ep.test_rmse) ? ep.test_rmse : -1.0, "stall_frac",
                                      st->stall_frac_max, "compute_s", st->compute_s, "lr",
                                      (double)ep.lr, "bytes_moved", (json_int_t)st->bytes_moved),
                            err);
}

static int sgd_save(void *p, rt_engine *eng, rt_error *err)
{
    sgd_app *a = p;
    const sgd_core *c = &a->core;
    if (!a->o.mf.out[0])
        return 0;
    json_t *meta = json_object();
    json_object_set_new(meta, "app", json_string("sgd-mf"));
    json_object_set_new(meta, "mu", json_real(c->mu));
    json_object_set_new(meta, "biases", json_boolean(a->o.mf.biases));
    json_object_set_new(meta, "epochs", json_integer((json_int_t)c->epochs_run));
    json_object_set_new(meta, "lr", json_real(a->o.lr));
    json_object_set_new(meta, "train_rmse", json_real(c->train_rmse));
    if (isfinite(c->test_rmse))
        json_object_set_new(meta, "test_rmse", json_real(c->test_rmse));
    json_object_set_new(meta, "seconds", json_real(a->seconds));
    int rc = rt_mf_save(&a->core.m, eng, &a->o.mf, meta, err);
    if (rc == 0 && rt_engine_rank(eng) == 0)
        rt_info("sgd-mf: model written to %s", a->o.mf.out);
    return rc;
}

static const rt_app_ops sgd_ops = {
    .name = "sgd-mf",
    .block_home = sgd_block_home,
    .visit = sgd_visit,
    .step_end = NULL,
    .rotation_end = sgd_rotation_end,
};

const rt_app_desc rt_app_sgd_mf = {
    .name = "sgd-mf",
    .plan_app = RT_PLAN_MF,
    .usage = sgd_usage,
    .parse = sgd_parse,
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
};
