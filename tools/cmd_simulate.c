/*
 * cmd_simulate.c - `rotor simulate`: predict the epoch time, stall and
 * traffic of a plan's schedule on N nodes x T threads over a given link,
 * with the model of sim/sim.h.
 *
 * The shape comes from a plan (cell sizes from the shards, block sizes from
 * the app, the schedule table from plan.json) or from sizes alone (--rows
 * --cols --nnz, uniform cells), which can sweep the node count.  The kernel
 * rate is given (--rate) or measured here (--calibrate: a short serial run of
 * the app's kernel on the plan).
 */
#include "apps/apps.h"
#include "sim/sim.h"
#include "tools/commands.h"

#include <stdlib.h>
#include <string.h>

#define MAX_SWEEP 32

typedef struct sim_opts {
    const char *plan_dir; /* NULL: shape from sizes */
    const char *app;
    uint64_t rows, cols, nnz; /* sizes (nnz = ratings, or tokens for lda) */
    uint32_t nodes[MAX_SWEEP];
    int n_nodes;
    uint32_t threads, pipeline;
    double rate, bytes_per_col;
    int calibrate;
    uint32_t topics; /* lda: K (read from the app options) */
    rt_sim_link link;
    rt_sim_shape knobs; /* host_cores, step_overhead_s, collectives */
    int json;
    int app_argc;
    char **app_argv;
} sim_opts;

static void usage(FILE *fp)
{
    fprintf(
        fp,
        "usage: rotor simulate --plan DIR --app APP [OPTIONS] [APP OPTIONS]\n"
        "       rotor simulate --app APP --rows R --cols C --nnz N --nodes N[,N...] [OPTIONS]\n\n"
        "Predict the epoch time, stall %% and bytes per link of a rotation schedule on\n"
        "N nodes x T threads, from a discrete-event model of the engine (sim/sim.h):\n"
        "per-cell compute, ring passes with slots and credits, per-step collectives.\n\n"
        "shape:\n"
        "  --plan DIR          a plan: its cells, blocks, nodes, threads and schedule\n"
        "  --app A             sgd-mf (default), cd-mf or lda; app options such as\n"
        "                      --rank K or --topics K follow as for rotor train\n"
        "  --rows R --cols C --nnz N   sizes instead of a plan (N = tokens for lda)\n"
        "  --nodes N[,N...]    nodes (sizes only; a list sweeps)\n"
        "  --threads T         threads per node (sizes only; default 16)\n"
        "  --pipeline C        column blocks per worker (sizes only; default 2)\n"
        "  --bytes-per-col B   payload bytes per column (sizes only; default from the app\n"
        "                      for MF, 4 K for lda)\n"
        "kernel:\n"
        "  --rate R            work units (ratings or tokens) per second per thread\n"
        "  --calibrate         measure the rate: a short serial run of the app on --plan\n"
        "  --host-cores N      all workers share N cores (one machine); default: own cores\n"
        "  --step-overhead-us U  fixed cost per step (default 20)\n"
        "link:\n"
        "  --gbps G            bandwidth per node and direction (default 10; 0 = infinite)\n"
        "  --latency-us L      one-way latency (default 20)\n"
        "  --overhead-us O     per-message overhead (default 5)\n"
        "  --collectives tree|star   all-reduce algorithm (default tree)\n"
        "output:\n"
        "  --json              one JSON object per configuration instead of the table\n");
}

static int parse_nodes(const char *v, sim_opts *o, rt_error *err)
{
    char buf[512];
    snprintf(buf, sizeof(buf), "%s", v);
    o->n_nodes = 0;
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok;
         tok = strtok_r(NULL, ",", &save)) {
        int n;
        if (o->n_nodes == MAX_SWEEP || rt_parse_int(tok, &n) || n < 1 || n > 65536)
            return rt_fail(err, RT_EXIT_INPUT,
                           "--nodes needs up to %d integers in 1..65536 separated by commas, "
                           "got '%s'",
                           MAX_SWEEP, v);
        o->nodes[o->n_nodes++] = (uint32_t)n;
    }
    return 0;
}

static int positive(const char *v, const char *name, double min, double *out, rt_error *err)
{
    if (rt_parse_double(v, out) || *out < min)
        return rt_fail(err, RT_EXIT_INPUT, "%s needs a number >= %g, got '%s'", name, min, v);
    return 0;
}

static int u32_opt(const char *v, const char *name, uint32_t *out, rt_error *err)
{
    int n;
    if (rt_parse_int(v, &n) || n < 1)
        return rt_fail(err, RT_EXIT_INPUT, "%s needs a positive integer, got '%s'", name, v);
    *out = (uint32_t)n;
    return 0;
}

/* One of simulate's own options with its value; 0 = handled, 1 = not ours. */
static int parse_own(sim_opts *o, const char *a, const char *v, rt_error *err)
{
    double x;
    if (rt_opt_is(a, "--plan"))
        o->plan_dir = v;
    else if (rt_opt_is(a, "--app"))
        o->app = v;
    else if (rt_opt_is(a, "--rows") || rt_opt_is(a, "--cols") || rt_opt_is(a, "--nnz")) {
        uint64_t *dst = rt_opt_is(a, "--rows")   ? &o->rows
                        : rt_opt_is(a, "--cols") ? &o->cols
                                                 : &o->nnz;
        if (rt_parse_u64(v, dst) || *dst == 0)
            return rt_fail(err, RT_EXIT_INPUT, "%s needs a positive count, got '%s'", a, v);
    } else if (rt_opt_is(a, "--nodes"))
        return parse_nodes(v, o, err);
    else if (rt_opt_is(a, "--threads"))
        return u32_opt(v, a, &o->threads, err);
    else if (rt_opt_is(a, "--pipeline"))
        return u32_opt(v, a, &o->pipeline, err);
    else if (rt_opt_is(a, "--bytes-per-col"))
        return positive(v, a, 1, &o->bytes_per_col, err);
    else if (rt_opt_is(a, "--rate"))
        return positive(v, a, 1e-9, &o->rate, err);
    else if (rt_opt_is(a, "--host-cores"))
        return positive(v, a, 0, &o->knobs.host_cores, err);
    else if (rt_opt_is(a, "--step-overhead-us")) {
        if (positive(v, a, 0, &x, err))
            return -1;
        o->knobs.step_overhead_s = x * 1e-6;
    } else if (rt_opt_is(a, "--gbps"))
        return positive(v, a, 0, &o->link.gbps, err);
    else if (rt_opt_is(a, "--latency-us") || rt_opt_is(a, "--overhead-us")) {
        if (positive(v, a, 0, &x, err))
            return -1;
        *(rt_opt_is(a, "--latency-us") ? &o->link.latency_s : &o->link.overhead_s) = x * 1e-6;
    } else if (rt_opt_is(a, "--collectives")) {
        if (strcmp(v, "tree") && strcmp(v, "star"))
            return rt_fail(err, RT_EXIT_INPUT, "--collectives must be tree or star");
        o->knobs.collectives = strcmp(v, "star") ? RT_SIM_TREE : RT_SIM_STAR;
    } else
        return 1;
    return 0;
}

static int parse_args(sim_opts *o, int argc, char **argv, rt_error *err)
{
    memset(o, 0, sizeof(*o));
    o->app = "sgd-mf";
    o->threads = 16;
    o->pipeline = 2;
    o->link = (rt_sim_link){.gbps = 10, .latency_s = 20e-6, .overhead_s = 5e-6};
    o->knobs.step_overhead_s = 20e-6;
    o->app_argv = calloc((size_t)argc + 8, sizeof(char *));
    if (!o->app_argv)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    o->app_argc = 1;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--json") || !strcmp(a, "--calibrate")) {
            *(!strcmp(a, "--json") ? &o->json : &o->calibrate) = 1;
            continue;
        }
        if (strncmp(a, "--", 2) != 0)
            return rt_fail(err, RT_EXIT_INPUT, "unexpected argument '%s' (see --help)", a);
        const char *v = i + 1 < argc && strncmp(argv[i + 1], "--", 2) ? argv[i + 1] : NULL;
        int rc = v ? parse_own(o, a, v, err) : 1;
        if (rc < 0)
            return -1;
        if (rc == 0) {
            i++;
            continue;
        }
        if (rt_opt_is(a, "--topics") && v && u32_opt(v, a, &o->topics, err))
            return -1;
        o->app_argv[o->app_argc++] = argv[i]; /* an app option, with its value */
        if (v && !strchr(a, '='))
            o->app_argv[o->app_argc++] = argv[++i];
    }
    o->app_argv[0] = (char *)o->app;
    if (!o->plan_dir && (!o->rows || !o->cols || !o->nnz || !o->n_nodes))
        return rt_fail(err, RT_EXIT_INPUT,
                       "give --plan DIR, or --rows, --cols, --nnz and --nodes (see --help)");
    if (o->plan_dir && o->n_nodes)
        return rt_fail(err, RT_EXIT_INPUT, "--nodes is for sizes; a plan has its own nodes");
    if (o->calibrate && !o->plan_dir)
        return rt_fail(err, RT_EXIT_INPUT, "--calibrate runs the app on a plan: give --plan");
    if (!o->calibrate && o->rate <= 0)
        return rt_fail(err, RT_EXIT_INPUT, "give --rate R or --calibrate (see --help)");
    if (!strcmp(o->app, "lda") && !o->topics)
        return rt_fail(err, RT_EXIT_INPUT, "lda: give --topics K (its all-reduce size)");
    return 0;
}

/* ---- shape from a plan ---- */

/* The model's inputs, owned here. */
typedef struct shape_buf {
    rt_sim_shape shape;
    double *cells, *bytes;
    uint32_t *schedule;
} shape_buf;

static void shape_free(shape_buf *s)
{
    free(s->cells);
    free(s->bytes);
    free(s->schedule);
    memset(s, 0, sizeof(*s));
}

static int shape_alloc(shape_buf *s, const sim_opts *o, uint32_t nodes, uint32_t threads,
                       uint32_t pipeline, rt_error *err)
{
    memset(s, 0, sizeof(*s));
    s->shape = o->knobs;
    s->shape.nodes = nodes, s->shape.threads = threads, s->shape.pipeline = pipeline;
    s->shape.rate = o->rate;
    uint64_t W = (uint64_t)nodes * threads, B = W * pipeline;
    s->cells = rt_calloc_array(W * B, sizeof(double), "simulate", "cells", err);
    s->bytes = s->cells ? rt_calloc_array(B, sizeof(double), "simulate", "blocks", err) : NULL;
    s->schedule =
        s->bytes ? rt_calloc_array(W * B, sizeof(uint32_t), "simulate", "schedule", err) : NULL;
    if (!s->schedule) {
        shape_free(s);
        return -1;
    }
    s->shape.cell_work = s->cells, s->shape.block_bytes = s->bytes;
    s->shape.schedule = s->schedule;
    return 0;
}

/* Work of every cell (w, b): ratings, or tokens (sum of counts) for lda. */
static int plan_cells(const rt_plan *plan, double *cells, rt_error *err)
{
    for (uint32_t w = 0; w < plan->workers; w++) {
        rt_shard sh;
        if (rt_shard_open(plan, w, &sh, err))
            return -1;
        for (uint32_t b = 0; b < plan->blocks; b++) {
            double work = 0;
            if (plan->app == RT_PLAN_LDA)
                for (uint64_t e = sh.train_off[b]; e < sh.train_off[b + 1]; e++)
                    work += sh.train[e].val;
            else
                work = (double)(sh.train_off[b + 1] - sh.train_off[b]);
            cells[(size_t)w * plan->blocks + b] = work;
        }
        rt_shard_close(&sh);
    }
    return 0;
}

/* Bytes per step and per rotation the apps all-reduce (see their step_end
 * and rotation_end): lda's K topic totals every step; MF's per-worker error
 * sums once per rotation. */
static void reduce_sizes(const sim_opts *o, uint32_t workers, rt_sim_shape *s)
{
    int lda = !strcmp(o->app, "lda");
    s->step_reduce_bytes = lda ? 8.0 * o->topics : 0;
    s->epoch_reduce_bytes = lda ? 0 : 16.0 * workers;
}

static int shape_from_plan(const sim_opts *o, const rt_plan *plan, size_t slot_bytes, shape_buf *s,
                           rt_error *err)
{
    if (shape_alloc(s, o, plan->nodes, plan->threads, plan->pipeline, err))
        return -1;
    memcpy(s->schedule, plan->schedule, (size_t)plan->blocks * plan->workers * sizeof(uint32_t));
    uint32_t max_cols = 0;
    for (uint32_t b = 0; b < plan->blocks; b++)
        if (rt_plan_block_cols(plan, b) > max_cols)
            max_cols = rt_plan_block_cols(plan, b);
    /* Payloads grow with the block's columns up to the app's largest. */
    for (uint32_t b = 0; b < plan->blocks; b++)
        s->bytes[b] = max_cols ? (double)slot_bytes * rt_plan_block_cols(plan, b) / max_cols : 0;
    reduce_sizes(o, plan->workers, &s->shape);
    return plan_cells(plan, s->cells, err);
}

/* ---- shape from sizes ---- */

/* Payload bytes per column: the app's own slot size for a one-column
 * block (MF), or K dense 32-bit counts (lda; rare words' sparse slices are
 * smaller, so this is an upper bound). */
static int bytes_per_col(const sim_opts *o, const rt_app_desc *app, const void *app_opts,
                         double *out, rt_error *err)
{
    if (o->bytes_per_col > 0) {
        *out = o->bytes_per_col;
        return 0;
    }
    if (!strcmp(o->app, "lda")) {
        *out = 4.0 * o->topics;
        return 0;
    }
    uint64_t col_off[2] = {0, 1};
    rt_plan one = {.app = RT_PLAN_MF, .n_cols = 1, .blocks = 1, .block_col_offset = col_off};
    size_t bytes;
    if (app->slot_bytes(app_opts, &one, &bytes, err))
        return -1;
    *out = (double)bytes;
    return 0;
}

static int shape_from_sizes(const sim_opts *o, uint32_t nodes, double col_bytes, shape_buf *s,
                            rt_error *err)
{
    if (shape_alloc(s, o, nodes, o->threads, o->pipeline, err))
        return -1;
    uint32_t W = nodes * o->threads, B = W * o->pipeline;
    for (uint64_t i = 0; i < (uint64_t)W * B; i++)
        s->cells[i] = (double)o->nnz / ((double)W * B);
    for (uint32_t b = 0; b < B; b++)
        s->bytes[b] = col_bytes * (double)o->cols / B;
    for (uint32_t st = 0; st < B; st++)
        for (uint32_t w = 0; w < W; w++)
            s->schedule[(size_t)st * W + w] = rt_schedule_block(W, o->pipeline, st, w);
    reduce_sizes(o, W, &s->shape);
    return 0;
}

/* ---- calibration: the app's kernel, serially, on the plan ---- */

typedef struct calib {
    const rt_app_ops *inner;
    void *inner_app;
    double compute_s, other_s; /* over the rotations after the first */
    int rotations;
} calib;

static int calib_block_home(void *p, uint32_t block, uint64_t rot, void *payload, size_t *len,
                            rt_error *err)
{
    calib *c = p;
    return c->inner->block_home(c->inner_app, block, rot, payload, len, err);
}

static int calib_visit(void *p, const rt_visit *v, rt_error *err)
{
    calib *c = p;
    return c->inner->visit(c->inner_app, v, err);
}

static int calib_step_end(void *p, rt_engine *eng, uint64_t rot, uint32_t step, rt_error *err)
{
    calib *c = p;
    return c->inner->step_end ? c->inner->step_end(c->inner_app, eng, rot, step, err) : 0;
}

static int calib_rotation_end(void *p, rt_engine *eng, uint64_t rot, const rt_rotation_stats *st,
                              int *stop, rt_error *err)
{
    calib *c = p;
    if (rot > 0) { /* the first rotation warms caches and pages in the shards */
        c->compute_s += st->compute_s;
        c->other_s += st->seconds - st->compute_s;
        c->rotations++;
    }
    return c->inner->rotation_end(c->inner_app, eng, rot, st, stop, err);
}

static const rt_app_ops calib_ops = {
    .name = "calibrate",
    .block_home = calib_block_home,
    .visit = calib_visit,
    .step_end = calib_step_end,
    .rotation_end = calib_rotation_end,
};

/* Run the app serially for a few rotations; rate = work / compute time,
 * and the rest of the rotation time spread over its steps. */
static int calibrate(sim_opts *o, const rt_app_desc *app, const void *app_opts, const rt_plan *plan,
                     size_t slot_bytes, const double *cells, rt_error *err)
{
    rt_group_config gc = {.rank = 0, .size = 1, .local_rank = 0, .base_port = 18515};
    rt_group group;
    if (rt_group_resolve(&gc, &group, err))
        return -1;
    rt_engine_config ec = {.plan = plan, .group = &group, .threads = 1, .serial = 1};
    rt_transport_config_init(&ec.transport);
    ec.slot_bytes = slot_bytes;
    rt_engine *eng = NULL;
    calib c = {.inner = app->ops};
    int rc = rt_engine_create(&ec, &eng, err);
    if (rc == 0)
        rc = app->create(app_opts, plan, eng, &c.inner_app, err);
    if (rc == 0)
        rc = rt_engine_run(eng, &calib_ops, &c, err);
    if (c.inner_app)
        app->destroy(c.inner_app);
    rt_engine_destroy(eng);
    rt_group_free(&group);
    if (rc)
        return rt_error_prefix(err, "calibrate");
    if (c.rotations < 1 || c.compute_s <= 0)
        return rt_fail(err, RT_EXIT_INPUT, "calibrate: the app ran fewer than 2 rotations");
    double work = 0;
    for (uint64_t i = 0; i < (uint64_t)plan->workers * plan->blocks; i++)
        work += cells[i];
    o->rate = work * c.rotations / c.compute_s;
    double per_step = c.other_s / c.rotations / plan->blocks;
    if (per_step > o->knobs.step_overhead_s)
        o->knobs.step_overhead_s = per_step;
    rt_info("simulate: calibrated %s on %s: %.4g units/s per thread, %.1f us per step besides "
            "compute (%d rotations)",
            app->name, plan->dir, o->rate, per_step * 1e6, c.rotations);
    return 0;
}

/* The app runs 3 rotations when calibrating, whatever was asked. */
static void calibration_args(sim_opts *o)
{
    static char *const sgd[] = {"--epochs", "3"}, *const lda[] = {"--iters", "2"},
                       *const cd[] = {"--outer", "1", "--inner", "1"};
    char *const *extra = !strcmp(o->app, "lda") ? lda : !strcmp(o->app, "cd-mf") ? cd : sgd;
    int n = !strcmp(o->app, "cd-mf") ? 4 : 2;
    for (int i = 0; i < n; i++)
        o->app_argv[o->app_argc++] = extra[i];
}

/* ---- output ---- */

static void print_result(const sim_opts *o, const rt_sim_shape *s, const rt_sim_result *r,
                         int first)
{
    uint32_t W = s->nodes * s->threads, B = W * s->pipeline;
    if (o->json) {
        printf("{\"app\": \"%s\", \"nodes\": %u, \"threads\": %u, \"pipeline\": %u, "
               "\"gbps\": %g, \"latency_us\": %g, \"overhead_us\": %g, \"rate\": %.6g, "
               "\"predicted_epoch_s\": %.6g, \"predicted_stall\": %.4f, \"stall_mean\": %.4f, "
               "\"compute_s\": %.6g, \"collective_s\": %.6g, \"credit_wait_s\": %.6g, "
               "\"bytes_per_link\": %.0f, \"link_busy_s\": %.6g, \"critical\": \"%s\"}\n",
               o->app, s->nodes, s->threads, s->pipeline, o->link.gbps, o->link.latency_s * 1e6,
               o->link.overhead_s * 1e6, s->rate, r->epoch_s, r->stall_max, r->stall_mean,
               r->compute_max_s, r->collective_s, r->credit_wait_s, r->bytes_per_link,
               r->link_busy_s, r->critical);
        return;
    }
    if (first)
        printf("%-6s %-7s %-7s %-7s %-12s %-8s %-11s %-11s %-12s %s\n", "nodes", "threads",
               "blocks", "block", "epoch[s]", "stall", "compute[s]", "collect[s]", "MB/link",
               "critical");
    double mean_block = 0;
    for (uint32_t b = 0; b < B; b++)
        mean_block += s->block_bytes[b] / B;
    char block[32];
    snprintf(block, sizeof(block), mean_block >= 1e6 ? "%.1fM" : "%.0fk",
             mean_block >= 1e6 ? mean_block / 1e6 : mean_block / 1e3);
    printf("%-6u %-7u %-7u %-7s %-12.4g %5.1f%%   %-11.4g %-11.4g %-12.1f %s\n", s->nodes,
           s->threads, B, block, r->epoch_s, 100 * r->stall_max, r->compute_max_s, r->collective_s,
           r->bytes_per_link / 1e6, r->critical);
}

static int run_shape(const sim_opts *o, shape_buf *s, int first, rt_error *err)
{
    s->shape.rate = o->rate;
    s->shape.step_overhead_s = o->knobs.step_overhead_s;
    rt_sim_result r;
    if (rt_sim_rotation(&s->shape, &o->link, &r, err))
        return -1;
    print_result(o, &s->shape, &r, first);
    return 0;
}

static int simulate_plan(sim_opts *o, const rt_app_desc *app, const void *app_opts, rt_error *err)
{
    rt_plan plan;
    if (rt_plan_open(o->plan_dir, &plan, err))
        return -1;
    size_t slot_bytes = 0;
    shape_buf s = {0};
    int rc = app->check(app_opts, &plan, err) ||
             app->slot_bytes(app_opts, &plan, &slot_bytes, err) ||
             shape_from_plan(o, &plan, slot_bytes, &s, err);
    if (rc == 0 && o->calibrate)
        rc = calibrate(o, app, app_opts, &plan, slot_bytes, s.cells, err);
    if (rc == 0) {
        if (!o->json)
            printf("%s: %s, %llu x %llu, %.0f work units; link %g Gb/s, %g us, %g us/msg; "
                   "rate %.4g/s per thread\n",
                   plan.dir, o->app, (unsigned long long)plan.n_rows,
                   (unsigned long long)plan.n_cols,
                   (double)(plan.app == RT_PLAN_LDA ? plan.tokens_train : plan.nnz_train),
                   o->link.gbps, o->link.latency_s * 1e6, o->link.overhead_s * 1e6, o->rate);
        rc = run_shape(o, &s, 1, err);
    }
    shape_free(&s);
    rt_plan_close(&plan);
    return rc ? -1 : 0;
}

static int simulate_sizes(const sim_opts *o, const rt_app_desc *app, const void *app_opts,
                          rt_error *err)
{
    double col_bytes;
    if (bytes_per_col(o, app, app_opts, &col_bytes, err))
        return -1;
    if (!o->json)
        printf("%s: %llu x %llu, %llu %s; %g B per column; link %g Gb/s, %g us, %g us/msg; "
               "rate %.4g/s per thread\n",
               o->app, (unsigned long long)o->rows, (unsigned long long)o->cols,
               (unsigned long long)o->nnz, strcmp(o->app, "lda") ? "ratings" : "tokens", col_bytes,
               o->link.gbps, o->link.latency_s * 1e6, o->link.overhead_s * 1e6, o->rate);
    for (int i = 0; i < o->n_nodes; i++) {
        shape_buf s;
        if (shape_from_sizes(o, o->nodes[i], col_bytes, &s, err))
            return -1;
        int rc = run_shape(o, &s, i == 0, err);
        shape_free(&s);
        if (rc)
            return -1;
    }
    return 0;
}

int cmd_simulate(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
            usage(stdout);
            return RT_EXIT_OK;
        }
    sim_opts o;
    rt_error err = {0};
    void *app_opts = NULL;
    const rt_app_desc *app = NULL;
    int rc = parse_args(&o, argc, argv, &err);
    if (rc == 0 && !(app = rt_app_find(o.app)))
        rc = rt_fail(&err, RT_EXIT_INPUT, "unknown --app '%s' (sgd-mf, cd-mf or lda)", o.app);
    if (rc == 0 && o.calibrate)
        calibration_args(&o);
    if (rc == 0)
        rc = app->parse(o.app_argc, o.app_argv, &app_opts, &err);
    if (rc == 0)
        rc = o.plan_dir ? simulate_plan(&o, app, app_opts, &err)
                        : simulate_sizes(&o, app, app_opts, &err);
    free(app_opts);
    free(o.app_argv);
    if (rc) {
        fprintf(stderr, "rotor simulate: %s\n", err.msg);
        return err.code ? err.code : RT_EXIT_RUNTIME;
    }
    return RT_EXIT_OK;
}
