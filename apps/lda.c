/* lda.c - the LDA app: options, the engine callbacks and metrics.
 * (Model layout and determinism: lda.h.  Saving the model: lda_save.c.) */
#include "apps/lda.h"
#include "apps/lda_app.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char lda_usage[] =
    "  --topics K        number of topics, 2..65535 (default 100)\n"
    "  --alpha A         symmetric document-topic prior (default 50/K)\n"
    "  --beta B          symmetric topic-word prior (default 0.01)\n"
    "  --iters N         Gibbs sweeps over the corpus (default 100)\n"
    "  --sampler S       sparse (SparseLDA buckets, default) or mh (Metropolis-Hastings\n"
    "                    with alias tables: cost per token independent of K)\n"
    "  --mh-steps M      MH proposals per token, alternating doc/word (default 2)\n"
    "  --eval-every N    log-likelihood and held-out perplexity every N sweeps (default 10)\n"
    "  --seed S          random seed (default 1)\n"
    "  --top N           words per topic in topics.txt (default 20)\n"
    "  --out DIR         write topics.txt, word_topic.npy, topic_word.npy, doc_topic.npy,\n"
    "                    vocab.txt, docs.txt, model.json\n"
    "  --metrics FILE    per-sweep metrics as JSON, rewritten after every evaluation\n";

/* ---------------------------------------------------------------- options */

static int parse_u32_opt(const char *name, const char *v, uint32_t lo, uint32_t hi, uint32_t *out,
                         rt_error *err)
{
    uint64_t x;
    if (rt_parse_u64(v, &x) || x < lo || x > hi)
        return rt_fail(err, RT_EXIT_INPUT, "%s must be an integer in %u..%u, got '%s'", name, lo,
                       hi, v);
    *out = (uint32_t)x;
    return 0;
}

static int parse_one(lda_opts *o, int argc, char **argv, int *i, rt_error *err)
{
    const char *arg = argv[*i], *v;
    static const char *const known[] = {"--topics",  "--alpha",    "--beta",       "--iters",
                                        "--sampler", "--mh-steps", "--eval-every", "--seed",
                                        "--top",     "--out",      "--metrics"};
    size_t n;
    for (n = 0; n < sizeof(known) / sizeof(known[0]); n++)
        if (rt_opt_is(arg, known[n]))
            break;
    if (n == sizeof(known) / sizeof(known[0]))
        return rt_fail(err, RT_EXIT_INPUT, "lda: unknown option %s", arg);
    if (!(v = rt_opt_value(argc, argv, i, err)))
        return -1;
    double d;
    if (rt_opt_is(arg, "--topics"))
        return parse_u32_opt("--topics", v, 2, RT_LDA_MAX_TOPICS, &o->K, err);
    if (rt_opt_is(arg, "--alpha") || rt_opt_is(arg, "--beta")) {
        if (rt_parse_double(v, &d) || !(d > 0))
            return rt_fail(err, RT_EXIT_INPUT, "%.7s must be a number > 0, got '%s'", arg, v);
        *(rt_opt_is(arg, "--alpha") ? &o->alpha : &o->beta) = d;
        return 0;
    }
    if (rt_opt_is(arg, "--iters"))
        return parse_u32_opt("--iters", v, 0, 100000000, &o->iters, err);
    if (rt_opt_is(arg, "--mh-steps"))
        return parse_u32_opt("--mh-steps", v, 1, 1000, &o->mh_steps, err);
    if (rt_opt_is(arg, "--eval-every"))
        return parse_u32_opt("--eval-every", v, 1, 100000000, &o->eval_every, err);
    if (rt_opt_is(arg, "--top"))
        return parse_u32_opt("--top", v, 1, 1000000, &o->top, err);
    if (rt_opt_is(arg, "--seed")) {
        if (rt_parse_u64(v, &o->seed))
            return rt_fail(err, RT_EXIT_INPUT, "--seed must be an integer, got '%s'", v);
        return 0;
    }
    if (rt_opt_is(arg, "--sampler")) {
        if (!strcmp(v, "sparse"))
            o->sampler = LDA_SAMPLER_SPARSE;
        else if (!strcmp(v, "mh"))
            o->sampler = LDA_SAMPLER_MH;
        else
            return rt_fail(err, RT_EXIT_INPUT, "--sampler must be sparse or mh, got '%s'", v);
        return 0;
    }
    if (rt_opt_is(arg, "--out"))
        o->out = v;
    else
        o->metrics = v;
    return 0;
}

static int lda_parse(int argc, char **argv, void **out, rt_error *err)
{
    lda_opts *o = calloc(1, sizeof(*o));
    if (!o)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    o->K = 100;
    o->beta = 0.01;
    o->iters = 100;
    o->mh_steps = 2;
    o->eval_every = 10;
    o->seed = 1;
    o->top = 20;
    for (int i = 1; i < argc; i++)
        if (parse_one(o, argc, argv, &i, err)) {
            free(o);
            return -1;
        }
    if (o->alpha == 0)
        o->alpha = 50.0 / o->K;
    *out = o;
    return 0;
}

static int lda_check(const void *opts, const rt_plan *plan, rt_error *err)
{
    const lda_opts *o = opts;
    if (plan->app != RT_PLAN_LDA)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: is a %s plan; make one with rotor partition --app lda", plan->dir,
                       rt_plan_app_name(plan->app));
    if (o->out && rt_check_out_dir(o->out, err))
        return -1;
    return 0;
}

/* The largest block payload of the layout (built here only to measure it;
 * the app builds its own in create). */
static int lda_slot_bytes(const void *opts, const rt_plan *plan, size_t *bytes, rt_error *err)
{
    lda_layout l;
    if (lda_layout_build(&l, plan, ((const lda_opts *)opts)->K, err)) {
        lda_layout_free(&l);
        return -1;
    }
    *bytes = l.max_bytes;
    lda_layout_free(&l);
    return 0;
}

/* ---------------------------------------------------------------- create */

static void lda_destroy(void *p)
{
    lda_app *a = p;
    if (!a)
        return;
    for (uint32_t i = 0; i < a->n_local; i++) {
        lda_worker_free(&a->workers[i]);
        rt_shard_close(&a->shards[i]);
    }
    for (uint32_t t = 0; a->scratch && t < a->n_threads; t++)
        lda_scratch_free(&a->scratch[t]);
    free(a->workers);
    free(a->shards);
    free(a->scratch);
    free(a->nk);
    free(a->delta);
    free(a->parts);
    rt_metrics_free(&a->metrics);
    lda_layout_free(&a->layout);
    free(a);
}

static json_t *config_json(const lda_opts *o, const rt_plan *plan)
{
    return json_pack("{s:i, s:f, s:f, s:i, s:s, s:i, s:i, s:I, s:I, s:I, s:I}", "topics", (int)o->K,
                     "alpha", o->alpha, "beta", o->beta, "iters", (int)o->iters, "sampler",
                     o->sampler == LDA_SAMPLER_MH ? "mh" : "sparse", "mh_steps", (int)o->mh_steps,
                     "eval_every", (int)o->eval_every, "seed", (json_int_t)o->seed, "documents",
                     (json_int_t)plan->n_rows, "words", (json_int_t)plan->n_cols, "tokens",
                     (json_int_t)plan->tokens_train);
}

static int lda_create(const void *opts, const rt_plan *plan, rt_engine *eng, void **out,
                      rt_error *err)
{
    const lda_opts *o = opts;
    lda_app *a = calloc(1, sizeof(*a));
    if (!a)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    a->o = o;
    a->plan = plan;
    a->eng = eng;
    a->ctx.o = o;
    a->ctx.plan = plan;
    a->ctx.layout = &a->layout;
    a->ctx.vbeta = (double)plan->n_cols * o->beta;
    a->first = rt_engine_first_worker(eng);
    a->n_local = a->n_threads = (uint32_t)rt_engine_threads(eng);
    a->workers = calloc(a->n_local, sizeof(lda_worker));
    a->shards = calloc(a->n_local, sizeof(rt_shard));
    a->scratch = calloc(a->n_threads, sizeof(lda_scratch));
    a->nk = calloc(o->K, sizeof(int64_t));
    a->delta = calloc(o->K, sizeof(int64_t));
    a->parts = calloc((size_t)plan->blocks + 2u * plan->workers, sizeof(double));
    rt_metrics_init(&a->metrics, rt_engine_rank(eng) == 0 ? o->metrics : NULL, "lda",
                    config_json(o, plan));
    *out = a;
    if (!a->workers || !a->shards || !a->scratch || !a->nk || !a->delta || !a->parts)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    if (lda_layout_build(&a->layout, plan, o->K, err))
        return -1;
    for (uint32_t t = 0; t < a->n_threads; t++)
        if (lda_scratch_init(&a->scratch[t], o->K))
            return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA scratch)");
    for (uint32_t i = 0; i < a->n_local; i++) {
        if (rt_shard_open(plan, a->first + i, &a->shards[i], err) ||
            lda_worker_init(&a->workers[i], plan, &a->shards[i], o, err))
            return -1;
        a->local_tokens += a->workers[i].train.n_tokens;
    }
    return 0;
}

/* ---------------------------------------------------------------- engine */

static int lda_block_home(void *p, uint32_t block, uint64_t rotation, void *payload, size_t *len,
                          rt_error *err)
{
    lda_app *a = p;
    (void)err;
    if (rotation == 0)
        *len = lda_payload_init(a->ctx.layout, a->plan, block, payload);
    else
        *len = a->ctx.layout->block_u32[block] * 4;
    return 0;
}

static int is_eval(const lda_opts *o, uint64_t rotation)
{
    return rotation == 0 || rotation % o->eval_every == 0 || rotation == o->iters;
}

static int lda_visit(void *p, const rt_visit *v, rt_error *err)
{
    lda_app *a = p;
    lda_worker *w = &a->workers[v->worker - a->first];
    lda_scratch *s = &a->scratch[v->thread];
    uint32_t *payload = v->payload;
    if (lda_payload_check(a->ctx.layout, v->block, payload, v->len, err))
        return -1;
    if (v->rotation == 0)
        return lda_visit_init(&a->ctx, w, v->block, payload, s, err);
    rt_rng rng;
    rt_rng_seed(&rng, a->o->seed, lda_stream(v->worker, v->rotation, v->block, 0));
    int rc = a->o->sampler == LDA_SAMPLER_MH
                 ? lda_visit_mh(&a->ctx, w, v->block, payload, s, &rng, err)
                 : lda_visit_sparse(&a->ctx, w, v->block, payload, s, &rng, err);
    if (rc)
        return -1;
    return lda_visit_test(&a->ctx, w, v->block, payload, s, &rng, is_eval(a->o, v->rotation), err);
}

/* Topic totals: every local worker's changes this step, summed over all
 * ranks (integers: the order of addition cannot matter). */
static int lda_step_end(void *p, rt_engine *eng, uint64_t rotation, uint32_t step, rt_error *err)
{
    lda_app *a = p;
    const uint32_t K = a->o->K;
    (void)rotation;
    (void)step;
    memset(a->delta, 0, K * sizeof(int64_t));
    for (uint32_t i = 0; i < a->n_local; i++)
        for (uint32_t k = 0; k < K; k++)
            a->delta[k] += a->workers[i].nk[k] - a->nk[k];
    if (rt_engine_allreduce_i64(eng, a->delta, K, err))
        return -1;
    for (uint32_t k = 0; k < K; k++)
        a->nk[k] += a->delta[k];
    for (uint32_t i = 0; i < a->n_local; i++)
        memcpy(a->workers[i].nk, a->nk, K * sizeof(int64_t));
    return 0;
}

/* Log-likelihood parts, all-reduced, then added in block / worker order so
 * the value is the same for every split of the workers. */
static int evaluate(lda_app *a, rt_engine *eng, double *ll, double *held_ll, rt_error *err)
{
    const rt_plan *plan = a->plan;
    const uint32_t B = plan->blocks, W = plan->workers;
    double *parts = a->parts;
    memset(parts, 0, ((size_t)B + 2u * W) * sizeof(double));
    for (uint32_t b = 0; b < B; b++) {
        size_t len;
        const uint32_t *payload = rt_engine_home_payload(eng, b, &len);
        if (payload)
            parts[b] = lda_block_word_lgamma(a->ctx.layout, plan, b, payload, a->o->beta);
    }
    for (uint32_t i = 0; i < a->n_local; i++) {
        parts[B + a->first + i] = lda_worker_doc_lgamma(&a->workers[i].train, a->o->K, a->o->alpha);
        parts[B + W + a->first + i] = a->workers[i].held_ll;
    }
    if (rt_engine_allreduce_f64(eng, parts, (size_t)B + 2u * W, err))
        return -1;
    double word_part = 0, doc_part = 0, held = 0;
    for (uint32_t b = 0; b < B; b++)
        word_part += parts[b];
    for (uint32_t w = 0; w < W; w++) {
        doc_part += parts[B + w];
        held += parts[B + W + w];
    }
    *ll = lda_log_joint(a->o->K, plan->n_cols, plan->n_rows, a->o->alpha, a->o->beta, a->nk,
                        word_part, doc_part);
    *held_ll = held;
    return 0;
}

static int lda_rotation_end(void *p, rt_engine *eng, uint64_t rot, const rt_rotation_stats *st,
                            int *stop, rt_error *err)
{
    lda_app *a = p;
    const lda_opts *o = a->o;
    if (rot == 0) { /* totals over the group, once */
        int64_t tot[2] = {0, 0};
        for (uint32_t i = 0; i < a->n_local; i++) {
            tot[0] += (int64_t)a->workers[i].train.n_tokens;
            tot[1] += (int64_t)a->workers[i].test.n_held;
        }
        if (rt_engine_allreduce_i64(eng, tot, 2, err))
            return -1;
        a->tokens = (uint64_t)tot[0];
        a->held_tokens = (uint64_t)tot[1];
    } else {
        a->sample_seconds += st->seconds;
        a->span_seconds += st->seconds;
        a->span_sweeps++;
    }
    *stop = rot >= o->iters;
    if (!is_eval(o, rot))
        return 0;
    double ll, held;
    if (evaluate(a, eng, &ll, &held, err))
        return -1;
    for (uint32_t i = 0; i < a->n_local; i++)
        a->workers[i].held_ll = 0;
    /* throughput: mean over the sweeps since the previous evaluation */
    double tps =
        a->span_seconds > 0 ? (double)a->tokens * (double)a->span_sweeps / a->span_seconds : 0;
    a->span_seconds = 0;
    a->span_sweeps = 0;
    double perplexity = a->held_tokens && rot ? exp(-held / (double)a->held_tokens) : NAN;
    a->ll_per_token = ll / (double)(a->tokens ? a->tokens : 1);
    a->perplexity = perplexity;
    a->iters_done = rot;
    if (rt_engine_rank(eng) != 0)
        return 0;
    char ppl[64] = "-";
    if (!isnan(perplexity))
        snprintf(ppl, sizeof(ppl), "%.2f", perplexity);
    rt_info("lda iter %llu: ll/token %.6f log p(w,z) %.6e held-out perplexity %s "
            "tokens/s %.3fM last sweep %.3fs stall %.1f%%",
            (unsigned long long)rot, a->ll_per_token, ll, ppl, tps / 1e6, st->seconds,
            100.0 * st->stall_frac_max);
    json_t *rec = json_pack("{s:I, s:f, s:f, s:f, s:f, s:f}", "iter", (json_int_t)rot,
                            "ll_per_token", a->ll_per_token, "log_joint", ll, "tokens_per_s", tps,
                            "seconds", st->seconds, "stall_frac", st->stall_frac_max);
    if (rec && !isnan(perplexity))
        json_object_set_new(rec, "perplexity", json_real(perplexity));
    return rec ? rt_metrics_epoch(&a->metrics, rec, err) : 0;
}

static const rt_app_ops lda_ops = {
    .name = "lda",
    .block_home = lda_block_home,
    .visit = lda_visit,
    .step_end = lda_step_end,
    .rotation_end = lda_rotation_end,
};

const rt_app_desc rt_app_lda = {
    .name = "lda",
    .plan_app = RT_PLAN_LDA,
    .usage = lda_usage,
    .parse = lda_parse,
    .check = lda_check,
    .slot_bytes = lda_slot_bytes,
    .create = lda_create,
    .ops = &lda_ops,
    .save = lda_save,
    .destroy = lda_destroy,
};
