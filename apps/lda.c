/* lda.c - the lda app: the glue of the LDA core (lda_core.c) to `rotor
 * train`: options, shards, the engine callbacks with their all-reduces, the
 * log and metrics.  (Model layout and determinism: lda.h.  Saving the
 * model: lda_save.c.) */
#include "apps/app_common.h"
#include "apps/lda.h"
#include "apps/lda_app.h"
#include "apps/model_set.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---------------------------------------------------------------- options */

/* LDA_AUTO_EXACT_MAX_K and LDA_AUTO_WARP_MAX_K as text, so the help follows
 * the constants (a name, not a call, inside the string: clang-format keeps
 * the string whole). */
#define STR_(x) #x
#define STR(x) STR_(x)
#define LDA_AUTO_EXACT_MAX_K_TEXT STR(LDA_AUTO_EXACT_MAX_K)
#define LDA_AUTO_WARP_MAX_K_TEXT STR(LDA_AUTO_WARP_MAX_K)

static const rt_opt_choice lda_samplers[] = {
    {"auto", LDA_SAMPLER_AUTO}, {"sparse", LDA_SAMPLER_SPARSE}, {"mh", LDA_SAMPLER_MH},
    {"warp", LDA_SAMPLER_WARP}, {"cycle", LDA_SAMPLER_CYCLE},   {NULL, 0}};

static const rt_opt_choice lda_inits[] = {
    {"random", LDA_INIT_RANDOM}, {"progressive", LDA_INIT_PROGRESSIVE}, {NULL, 0}};

static const rt_opt lda_options[] = {
    RT_U32_OPT("topics", 'k', lda_opts, K, "K", "100", 2, RT_LDA_MAX_TOPICS, 0, "number of topics"),
    /* At most RT_LDA_MAX_PRIOR: alpha 1e39 sampled garbage with exit 0 (and
     * 1e308 then failed to save). */
    RT_DOUBLE_OPT("alpha", 0, lda_opts, alpha, "A", NULL, 0, RT_LDA_MAX_PRIOR, RT_OPT_MIN_OPEN,
                  "symmetric document-topic prior (default 50/K)"),
    RT_DOUBLE_OPT("beta", 0, lda_opts, beta, "B", "0.01", 0, RT_LDA_MAX_PRIOR, RT_OPT_MIN_OPEN,
                  "symmetric topic-word prior"),
    RT_U32_OPT("iters", 0, lda_opts, iters, "N", "100", 0, 100000000, 0,
               "Gibbs sweeps over the corpus"),
    RT_ENUM_OPT(
        "sampler", 0, lda_opts, sampler, lda_samplers, "auto",
        "auto (sparse at K <= " LDA_AUTO_EXACT_MAX_K_TEXT " and above " LDA_AUTO_WARP_MAX_K_TEXT
        ", warp between: the sooner to a given log-likelihood; the model records which), "
        "sparse (exact collapsed Gibbs: the full conditional at K <= " LDA_AUTO_WARP_MAX_K_TEXT
        ", document topic lists and an F+ tree above), mh (Metropolis-Hastings, document and word "
        "proposals judged against the current counts: the collapsed Gibbs posterior at a cost "
        "per token independent of K), warp (WarpLDA's word and document phases with delayed "
        "count updates: no document-topic matrix, the fastest per token) or cycle (warp's word "
        "phase alone, judging word and document proposals against the current counts: "
        "no delayed updates, so it samples the collapsed Gibbs posterior)"),
    RT_ENUM_OPT("init", 0, lda_opts, init, lda_inits, "random",
                "initial topics: random (uniform) or progressive (a first sweep that assigns "
                "every token from the collapsed conditional given the tokens assigned before it, "
                "in the schedule's order)"),
    RT_U32_OPT("mh-steps", 0, lda_opts, mh_steps, "M", "2", 1, 1000, 0,
               "MH proposals per token, alternating doc/word"),
    RT_U32_OPT("exact-sweeps", 0, lda_opts, exact_sweeps, "N", "0", 0, 100000000, 0,
               "mh, warp and cycle: N sweeps (the first, or those after --exact-after) are exact "
               "collapsed Gibbs (SparseLDA's buckets), which gain more per sweep"),
    RT_U32_OPT(
        "exact-after", 0, lda_opts, exact_after, "W", "0", 0, 100000000, 0,
        "the --exact-sweeps are sweeps W+1 .. W+N (0: the first N); for warp and cycle, their "
        "per-document topic lists raise the peak memory"),
    RT_U32_OPT("eval-every", 0, lda_opts, eval_every, "N", "10", 1, 100000000, 0,
               "log-likelihood and held-out perplexity every N sweeps"),
    RT_U32_OPT("sync-every", 0, lda_opts, sync_every, "N", "1", 1, 1000000, 0,
               "all-reduce the topic totals every N steps and at the end of each sweep: N times "
               "fewer collectives, totals up to N steps stale; the model depends on N but not on "
               "the split or timing"),
    RT_U64_OPT("seed", 's', lda_opts, seed, "S", "1", 0, 0, 0, "random seed"),
    RT_U32_OPT("top", 0, lda_opts, top, "N", "20", 1, 1000000, 0, "words per topic in topics.txt"),
    RT_PATH_OPT("out", 'o', lda_opts, out, "DIR", NULL, RT_OPT_DIR,
                "write topics.txt, word_topic.npy, topic_word.npy, doc_topic.npy, vocab.txt, "
                "docs.txt, model.json into DIR"),
    RT_PATH_OPT("metrics", 0, lda_opts, metrics, "FILE", NULL, 0,
                "per-sweep metrics as JSON, rewritten after every evaluation"),
    {0}};

static int lda_opts_done(void *opts, rt_error *err)
{
    (void)err;
    lda_opts *o = opts;
    if (o->alpha == 0) /* not given (0 is out of its range) */
        o->alpha = 50.0 / o->K;
    /* resolved here, once: everything after (the chain, the model's and the
     * metrics' "sampler", a resume) sees the concrete sampler */
    if (o->sampler == LDA_SAMPLER_AUTO)
        o->sampler = lda_sampler_auto(o->K);
    return 0;
}

static int lda_check(const void *opts, const rt_plan *plan, rt_error *err)
{
    const lda_opts *o = opts;
    if (plan->app != RT_PLAN_LDA)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: is a %s plan; make one with rotor partition --app lda", plan->dir,
                       rt_plan_app_name(plan->app));
    if (o->out && (rt_model_out_check(o->out, err) || rt_plan_check_ids(plan, "rows", err) ||
                   rt_plan_check_ids(plan, "cols", err)))
        return -1; /* now, not when the model is saved */
    return rt_metrics_check(o->metrics, err);
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

/* Each block's payload, from the same layout (for rotor simulate). */
static int lda_block_bytes(const void *opts, const rt_plan *plan, double *bytes, rt_error *err)
{
    lda_layout l;
    if (lda_layout_build(&l, plan, ((const lda_opts *)opts)->K, err)) {
        lda_layout_free(&l);
        return -1;
    }
    for (uint32_t b = 0; b < plan->blocks; b++)
        bytes[b] = 4.0 * (double)l.block_u32[b];
    lda_layout_free(&l);
    return 0;
}

/* ---------------------------------------------------------------- create */

static void lda_destroy(void *p)
{
    lda_app *a = p;
    if (!a)
        return;
    lda_core_free(&a->core);
    rt_app_shards_close(a->shards, a->n_shards);
    rt_metrics_free(&a->metrics);
    free(a);
}

static json_t *config_json(const lda_opts *o, const rt_plan *plan)
{
    return json_pack("{s:i, s:f, s:f, s:i, s:s, s:s, s:i, s:i, s:i, s:I, s:I, s:I, s:I}", "topics",
                     (int)o->K, "alpha", o->alpha, "beta", o->beta, "iters", (int)o->iters,
                     "sampler", lda_sampler_name(o->sampler), "init",
                     o->init == LDA_INIT_PROGRESSIVE ? "progressive" : "random", "mh_steps",
                     (int)o->mh_steps, "eval_every", (int)o->eval_every, "sync_every",
                     (int)o->sync_every, "seed", (json_int_t)o->seed, "documents",
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
    a->plan = plan;
    uint32_t first = rt_engine_first_worker(eng);
    a->n_shards = (uint32_t)rt_engine_threads(eng);
    rt_metrics_init(&a->metrics, rt_engine_rank(eng) == 0 ? o->metrics : NULL, "lda",
                    config_json(o, plan));
    *out = a;
    if (rt_engine_rank(eng) == 0) /* (which one --sampler auto picked) */
        rt_info("lda: %u topics, sampler %s", o->K, lda_sampler_name(o->sampler));
    int64_t tot[2];
    if (rt_app_shards_open(plan, first, a->n_shards, &a->shards, err) ||
        lda_core_init(&a->core, o, plan, a->shards, first, a->n_shards, a->n_shards, err))
        return -1;
    /* Token totals over the group, once. */
    lda_core_local_totals(&a->core, tot);
    if (rt_engine_allreduce_i64(eng, tot, 2, err))
        return -1;
    lda_core_set_totals(&a->core, tot);
    return 0;
}

/* ---------------------------------------------------------------- engine */

static int lda_block_home(void *p, uint32_t block, uint64_t rotation, void *payload, size_t *len,
                          rt_error *err)
{
    lda_app *a = p;
    (void)err;
    lda_core_block_home(&a->core, block, rotation, payload, len);
    return 0;
}

static int lda_visit(void *p, const rt_visit *v, rt_error *err)
{
    lda_app *a = p;
    return lda_core_visit(&a->core, v->worker, v->thread, v->block, v->rotation, v->payload, v->len,
                          err);
}

/* Topic totals: every --sync-every steps, and always after the last step
 * of a sweep, the workers' changes since the last exchange are summed over
 * all ranks (integers: exact in any order).  The serial replay takes the
 * same decision at the same steps, so it stays equal. */
static int lda_step_end(void *p, rt_engine *eng, uint64_t rotation, uint32_t step, rt_error *err)
{
    lda_app *a = p;
    (void)rotation;
    if ((step + 1) % a->core.o.sync_every != 0 && step + 1 != a->plan->blocks)
        return 0;
    if (rt_engine_allreduce_i64(eng, lda_core_step_delta(&a->core), a->core.o.K, err))
        return -1;
    lda_core_step_absorb(&a->core);
    return 0;
}

/* Log-likelihood parts of the local workers and the home blocks,
 * all-reduced, then added up by the core. */
static int evaluate(lda_app *a, rt_engine *eng, uint64_t rot, double *ll, double *held_ll,
                    rt_error *err)
{
    double *parts = lda_core_parts_begin(&a->core);
    for (uint32_t b = 0; b < a->plan->blocks; b++) {
        const uint32_t *payload = rt_engine_home_payload(eng, b, NULL);
        if (payload)
            lda_core_part_block(&a->core, b, payload);
    }
    if (rt_engine_allreduce_f64(eng, parts, lda_core_parts_len(&a->core), err))
        return -1;
    lda_core_evaluate(&a->core, rot, ll, held_ll);
    return 0;
}

/* Rotation 0 is the initial sweep, then one per iteration: the run is over
 * once rotation --iters has run. */
static int lda_done(const lda_core *c, uint64_t next_rotation)
{
    return next_rotation > c->o.iters;
}

static int lda_rotation_end(void *p, rt_engine *eng, uint64_t rot, const rt_rotation_stats *st,
                            int *stop, rt_error *err)
{
    lda_app *a = p;
    const lda_core *c = &a->core;
    /* rotation 0 counts: the progressive initial sweep samples */
    a->sample_seconds += st->seconds;
    if (rot > 0) {
        a->span_seconds += st->seconds;
        a->span_sweeps++;
        a->split.seconds += st->seconds;
        a->split.imbalance += st->imbalance_s;
        a->split.handover += st->handover_s;
        a->split.step_end += st->step_end_s;
    }
    *stop = lda_done(c, rot + 1);
    if (!lda_core_is_eval(c, rot))
        return 0;
    double ll, held;
    if (evaluate(a, eng, rot, &ll, &held, err))
        return -1;
    /* throughput: mean over the sweeps since the previous evaluation */
    double tps =
        a->span_seconds > 0 ? (double)c->tokens * (double)a->span_sweeps / a->span_seconds : 0;
    /* the same sweeps' wall beyond their cells: how much a run on threads
     * loses to uneven cells, hand-overs and the topic totals */
    const double sec = a->split.seconds > 0 ? a->split.seconds : 1;
    const double imbalance = a->split.imbalance / sec, handover = a->split.handover / sec,
                 step_end = a->split.step_end / sec;
    a->span_seconds = 0;
    a->span_sweeps = 0;
    memset(&a->split, 0, sizeof(a->split));
    if (rt_engine_rank(eng) != 0)
        return 0;
    char ppl[64] = "-";
    if (!isnan(c->perplexity))
        snprintf(ppl, sizeof(ppl), "%.2f", c->perplexity);
    rt_info("lda iter %llu: ll/token %.6f log p(w,z) %.6e held-out perplexity %s "
            "tokens/s %.3fM last sweep %.3fs stall %.1f%%",
            (unsigned long long)rot, c->ll_per_token, ll, ppl, tps / 1e6, st->seconds,
            100.0 * st->stall_frac_max);
    json_t *rec =
        json_pack("{s:I, s:f, s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "iter", (json_int_t)rot,
                  "ll_per_token", c->ll_per_token, "log_joint", ll, "tokens_per_s", tps, "seconds",
                  st->seconds, "stall_frac", st->stall_frac_max, "imbalance_frac", imbalance,
                  "handover_frac", handover, "step_end_frac", step_end);
    if (rec && !isnan(c->perplexity))
        json_object_set_new(rec, "perplexity", json_real(c->perplexity));
    return rec ? rt_metrics_epoch(&a->metrics, rec, *stop, err) : 0;
}

/* ---------------------------------------------------------------- state */

static int lda_state_io(void *p, rt_state_io *io, rt_error *err)
{
    lda_app *a = p;
    double t[3] = {a->sample_seconds, a->span_seconds, (double)a->span_sweeps};
    int rc = io->w ? lda_core_state_save(&a->core, io->w, err)
                   : lda_core_state_load(&a->core, io->r, err);
    if (rc || rt_state_xfer(io, "timing", t, sizeof(t), err))
        return -1;
    a->sample_seconds = t[0];
    a->span_seconds = t[1];
    a->span_sweeps = (uint64_t)t[2];
    return 0;
}

static int lda_finished(const void *p, uint64_t next_rotation)
{
    return lda_done(&((const lda_app *)p)->core, next_rotation);
}

/* Rotation 0 is the initial sweep: a checkpoint continuing at rotation n
 * comes after sweep n - 1 (the run's end writes one at iters + 1). */
static int lda_check_length(const void *p, uint64_t next_rotation, rt_error *err)
{
    const lda_core *c = &((const lda_app *)p)->core;
    if (next_rotation <= (uint64_t)c->o.iters + 1)
        return 0;
    return rt_resume_past_length(err, "sweep", next_rotation - 1, "--iters", c->o.iters);
}

static const rt_app_ops lda_ops = {
    .block_home = lda_block_home,
    .visit = lda_visit,
    .step_end = lda_step_end,
    .rotation_end = lda_rotation_end,
};

const rt_app_desc rt_app_lda = {
    .name = "lda",
    .plan_app = RT_PLAN_LDA,
    .options = lda_options,
    .opts_size = sizeof(lda_opts),
    .opts_done = lda_opts_done,
    .check = lda_check,
    .slot_bytes = lda_slot_bytes,
    .block_bytes = lda_block_bytes,
    .create = lda_create,
    .ops = &lda_ops,
    .save = lda_save,
    .destroy = lda_destroy,
    .plan_side_files = rt_lda_plan_side_files,
    .model_load = lda_model_load,
    .model_free = lda_model_free,
    .model_topics = lda_model_topics,
    .model_export = lda_model_export,
    .model_infer = lda_model_infer,
    .state_io = lda_state_io,
    .finished = lda_finished,
    .check_length = lda_check_length,
};
