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
#include "tools/app_options.h"
#include "tools/commands.h"
#include "tools/sim_shape.h"

#include <errno.h>
#include <math.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#define MAX_SWEEP 32

typedef struct sim_opts {
    const char *plan_dir; /* NULL: shape from sizes */
    int app;              /* index in rt_apps */
    const char *app_name;
    uint64_t rows, cols, nnz; /* sizes (nnz = ratings, or tokens for lda) */
    const char *nodes_list;   /* --nodes N[,N...] */
    uint32_t nodes[MAX_SWEEP];
    int n_nodes;
    uint32_t threads, pipeline;
    int calibrate;         /* 1: serial, one thread; 2: all workers as threads of this process */
    int calibrate_threads; /* --calibrate-threads given */
    uint32_t topics;       /* lda: K (read from the app options) */
    uint32_t sync_every;   /* lda: --sync-every (read from the app options) */
    double step_overhead_us;
    double net_cpu_ns_per_byte;
    double inline_below_us, inline_step_us;
    double calibrate_pause_us; /* --calibrate-pause-us: idle time after every step */
    sim_link_args args;        /* --gbps --latency-us --overhead-us --rate --bytes-per-col */
    int collectives;           /* rt_sim_collectives */
    rt_sim_link link;
    rt_sim_shape knobs; /* host_cores, step_overhead_s, collectives */
    int json;
    double busy_rate;       /* the calibration's work units per CPU second of a visit (0: none) */
    double cell_cv_cpu;     /* the calibration's cell spread in CPU seconds (0: none; the model gets
                               the wall one, --cell-cv) */
    double wake_rate_ratio; /* its paused visits' rate per CPU second over busy_rate (0: none) */
    double wake_after_us;   /* --wake-after-us */
    double tick_us;         /* --tick-us */
    double leave_tick_us;   /* --leave-tick-us */
} sim_opts;

static const rt_opt_choice sim_collectives[] = {
    {"tree", RT_SIM_TREE}, {"star", RT_SIM_STAR}, {NULL, 0}};

static const rt_opt sim_options[] = {
    RT_PATH_OPT("plan", 'p', sim_opts, plan_dir, "DIR", NULL, RT_OPT_DIR,
                "a plan: its cells, blocks, nodes, threads and schedule"),
    RT_ENUM_OPT("app", 'a', sim_opts, app, rt_app_choices, "sgd-mf",
                "the model whose schedule to simulate"),
    RT_U64_OPT("rows", 0, sim_opts, rows, "R", NULL, 1, UINT32_MAX, 0, "rows, instead of a plan"),
    RT_U64_OPT("cols", 0, sim_opts, cols, "C", NULL, 1, UINT32_MAX, 0,
               "columns, instead of a plan"),
    RT_U64_OPT("nnz", 0, sim_opts, nnz, "N", NULL, 1, 1e15, 0,
               "ratings (tokens for lda), instead of a plan"),
    RT_STRING_OPT("nodes", 'n', sim_opts, nodes_list, "N[,N...]", NULL, 0,
                  "nodes (sizes only; a list of up to 32 counts in 1..65536 sweeps)"),
    RT_U32_OPT("threads", 't', sim_opts, threads, "T", "16", 1, 4096, 0,
               "threads per node (sizes only)"),
    RT_U32_OPT("pipeline", 'c', sim_opts, pipeline, "C", "2", 1, 1024, 0,
               "column blocks per worker (sizes only)"),
    RT_FLAG_OPT("calibrate", 0, sim_opts, calibrate,
                "measure the rate: a short serial run of the app on --plan"),
    RT_FLAG_OPT("calibrate-threads", 0, sim_opts, calibrate_threads,
                "measure it with all the plan's workers as threads of one process (their "
                "contention for this machine's cores included)"),
    RT_DOUBLE_OPT("calibrate-pause-us", 0, sim_opts, calibrate_pause_us, "U", "0", 0, 10e6, 0,
                  "calibrating, every other rotation's steps each follow U us with no thread "
                  "computing, as on a rank waiting for its blocks: their speed over the others' "
                  "is --wake-speed"),
    RT_DOUBLE_OPT("wake-speed", 0, sim_opts, knobs.wake_speed, "F", NULL, 0.01, 1, 0,
                  "a step after an idle time of its node (--wake-after-us) computes at F x "
                  "the speed (cold caches, a vCPU the host gave away); default: 1, or what "
                  "--calibrate-pause-us measured"),
    RT_DOUBLE_OPT("wake-after-us", 0, sim_opts, wake_after_us, "U", "1000", 0, HUGE_VAL, 0,
                  "the idle time before a step that costs it --wake-speed"),
    RT_DOUBLE_OPT("host-cores", 0, sim_opts, knobs.host_cores, "N", NULL, 0, HUGE_VAL, 0,
                  "nodes share hosts of N cores among their busy workers (default: every node "
                  "has its own T cores)"),
    RT_U32_OPT("nodes-per-host", 0, sim_opts, knobs.nodes_per_host, "H", NULL, 1, 65536, 0,
               "with --host-cores: nodes 0..H-1 share the first host, and so on (default: all "
               "nodes on one host, as ranks on one machine)"),
    RT_DOUBLE_OPT(
        "tick-us", 0, sim_opts, tick_us, "U", "0", 0, 1e6, 0,
        "with --host-cores: a run queue per host, as Linux runs more workers than "
        "cores: a core runs one worker's cell at a time and gives it to a waiting one "
        "at the scheduler's tick, every U us (1 / CONFIG_HZ: 4000 at HZ=250; at least 100); "
        "0: the busy workers share the cores evenly"),
    RT_DOUBLE_OPT("leave-tick-us", 0, sim_opts, leave_tick_us, "U", "4000", 0, 1e6, 0,
                  "with --host-cores (and no --tick-us): on a host with more threads than cores "
                  "the threads a step's collective wakes (each node's orchestrator, then the "
                  "sender its pass wakes) take turns: one goes when a core frees, or at the "
                  "scheduler's tick, every U us (1 / CONFIG_HZ: 4000 at HZ=250; at least 100); "
                  "0: all at once"),
    RT_DOUBLE_OPT("busy-core-speed", 0, sim_opts, knobs.busy_core_speed, "F", "1", 0.01, 1, 0,
                  "while all of a host's cores compute at once each computes at F x the rate "
                  "(shared cache and memory bandwidth; --calibrate-threads measures it as "
                  "busy_rate / the serial rate); in between, in proportion"),
    RT_DOUBLE_OPT("net-cpu-ns-per-byte", 0, sim_opts, net_cpu_ns_per_byte, "X", "0", 0, 1e6, 0,
                  "moving a byte between two nodes takes X ns of CPU (kernel copies and packet "
                  "handling, both ends), taken from the cells' cores of the sender's and the "
                  "receiver's host"),
    RT_DOUBLE_OPT("step-overhead-us", 0, sim_opts, step_overhead_us, "U", "20", 0, HUGE_VAL, 0,
                  "fixed cost per step"),
    RT_DOUBLE_OPT(
        "cell-cv", 0, sim_opts, knobs.cell_cv, "V", "0", 0, 10, 0,
        "cell times vary with this coefficient of variation (a loaded machine's "
        "time slices): epoch and stall the median of 32 rotations; default: none, or what the "
        "calibration measured"),
    RT_DOUBLE_OPT("worker-cv", 0, sim_opts, knobs.worker_cv, "V", "0", 0, 10, 0,
                  "the part of the cells' spread that a worker's cells share within a rotation "
                  "(a thread slow for a while); default: none, or what --calibrate-threads "
                  "measured"),
    RT_DOUBLE_OPT("inline-below-us", 0, sim_opts, inline_below_us, "U", "0", 0, HUGE_VAL, 0,
                  "a node's step whose cells take less than U us of kernel time together runs "
                  "them on one thread, as rotor train --inline-steps auto does below 2000 "
                  "(default 0: never)"),
    RT_DOUBLE_OPT("inline-step-us", 0, sim_opts, inline_step_us, "U", "5", 0, HUGE_VAL, 0,
                  "the fixed cost of such a step"),
    RT_DOUBLE_OPT("step-cv", 0, sim_opts, knobs.step_cv, "V", "0", 0, 10, 0,
                  "the steps' fixed cost varies so (thread hand-offs waiting for a busy core); "
                  "default: none, or what --calibrate-threads measured"),
    RT_U32_OPT("spare-slots", 0, sim_opts, knobs.spare_slots, "S", "1", 1, 64, 0,
               "window slots beyond the home blocks, as rotor train --spare-slots"),
    RT_ENUM_OPT("collectives", 0, sim_opts, collectives, sim_collectives, "tree",
                "all-reduce algorithm"),
    RT_FLAG_OPT("json", 0, sim_opts, json,
                "one JSON object per configuration instead of the table"),
    {0}};

/* --nodes N[,N...]: every item a count in 1..65536 (an empty one, as in
 * "2,,4", is a typo, not a skipped item). */
static int parse_nodes(const char *v, sim_opts *o, rt_error *err)
{
    o->n_nodes = 0;
    for (const char *p = v;; p++) {
        size_t len = strcspn(p, ",");
        char item[16];
        int n;
        if (o->n_nodes == MAX_SWEEP || len == 0 || len >= sizeof(item))
            n = 0;
        else if (memcpy(item, p, len), item[len] = '\0', rt_parse_int(item, &n))
            n = 0;
        if (n < 1 || n > 65536)
            return rt_fail(err, RT_EXIT_INPUT,
                           "--nodes needs up to %d integers in 1..65536 separated by commas, "
                           "got '%s'",
                           MAX_SWEEP, v);
        o->nodes[o->n_nodes++] = (uint32_t)n;
        p += len;
        if (!*p)
            return 0;
    }
}

/* The app runs 6 rotations when calibrating (the first warms up; the mean
 * of five steadies a rate that moves from one rotation to the next on a
 * loaded machine), whatever was asked: these go after the user's options
 * (the last of a repeated option wins). */
static char **with_calibration_args(const char *app, int paused, int argc, char **argv, int *n_out)
{
    /* with --calibrate-pause-us, 2 more: the odd rotations after the first are timed as
     * before, the even ones after idle times (calib_paused) */
    static char *const sgd[] = {"--epochs", "6"}, *const lda[] = {"--iters", "5"},
                       *const sgd_paused[] = {"--epochs", "8"},
                       *const lda_paused[] = {"--iters", "7"},
                       *const cd[] = {"--outer", "1", "--inner", "1"};
    char *const *extra = !strcmp(app, "lda")     ? (paused ? lda_paused : lda)
                         : !strcmp(app, "cd-mf") ? cd
                         : paused                ? sgd_paused
                                                 : sgd;
    int n = !strcmp(app, "cd-mf") ? 4 : 2;
    char **v = calloc((size_t)argc + (size_t)n + 1, sizeof(char *));
    if (!v)
        return NULL;
    memcpy(v, argv, (size_t)argc * sizeof(char *));
    memcpy(v + argc, extra, (size_t)n * sizeof(char *));
    *n_out = argc + n;
    return v;
}

/* 0, 1 (help printed) or -1; *app_opts is the chosen app's options. */
static int parse_args(sim_opts *o, void **app_opts, int argc, char **argv, rt_error *err)
{
    memset(o, 0, sizeof(*o));
    rt_opt_group own[] = {{.opts = sim_options, .dest = o},
                          {.title = "link and kernel", .opts = sim_link_options, .dest = &o->args}};
    int rc = parse_with_app(&rotor_doc_simulate, own, 2, &o->app, argc, argv, app_opts, err);
    if (rc == 0 && o->calibrate_threads)
        o->calibrate = 2;
    if (rc == 0 && o->calibrate) { /* again, with the calibration run's length */
        int n;
        char **v =
            with_calibration_args(rt_apps[o->app]->name, o->calibrate_pause_us > 0, argc, argv, &n);
        free(*app_opts);
        rc = v ? parse_with_app(&rotor_doc_simulate, own, 2, &o->app, n, v, app_opts, err)
               : rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
        free(v);
    }
    if (rc)
        return rc;
    const rt_app_desc *app = rt_apps[o->app];
    o->app_name = app->name;
    o->knobs.step_overhead_s = o->step_overhead_us * 1e-6;
    o->knobs.net_cpu_s_per_byte = o->net_cpu_ns_per_byte * 1e-9;
    o->knobs.inline_below_s = o->inline_below_us * 1e-6;
    o->knobs.inline_step_s = o->inline_step_us * 1e-6;
    o->knobs.wake_after_s = o->wake_after_us * 1e-6;
    o->knobs.tick_s = o->tick_us * 1e-6;
    o->knobs.leave_tick_s = o->leave_tick_us * 1e-6;
    o->link = sim_link_of(&o->args);
    o->knobs.collectives = (rt_sim_collectives)o->collectives;
    const uint32_t *topics = app_option_value(app, *app_opts, "topics");
    if (!strcmp(app->name, "lda") && topics)
        o->topics = *topics;
    const uint32_t *sync_every = app_option_value(app, *app_opts, "sync-every");
    if (!strcmp(app->name, "lda") && sync_every)
        o->sync_every = *sync_every;
    if (o->nodes_list && parse_nodes(o->nodes_list, o, err))
        return -1;
    if (!o->plan_dir && (!o->rows || !o->cols || !o->nnz || !o->n_nodes))
        return rt_fail(err, RT_EXIT_INPUT,
                       "give --plan DIR, or --rows, --cols, --nnz and --nodes (see --help)");
    if (o->plan_dir && o->n_nodes)
        return rt_fail(err, RT_EXIT_INPUT, "--nodes is for sizes; a plan has its own nodes");
    if (o->calibrate && !o->plan_dir)
        return rt_fail(err, RT_EXIT_INPUT, "--calibrate runs the app on a plan: give --plan");
    if (!o->calibrate && o->args.rate <= 0)
        return rt_fail(err, RT_EXIT_INPUT, "give --rate R or --calibrate (see --help)");
    return 0;
}

/* ---- shape from a plan ---- */

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

/* The sizes of this job that the model needs besides cells and blocks. */
static sim_sizes sizes_of(const sim_opts *o, uint32_t nodes, uint32_t threads, double col_bytes)
{
    return (sim_sizes){.nodes = nodes,
                       .threads = threads,
                       .cols = (double)o->cols,
                       .work = (double)o->nnz,
                       .col_bytes = col_bytes,
                       .lda = !strcmp(o->app_name, "lda"),
                       .topics = o->topics,
                       .sync_every = o->sync_every};
}

/* The payload of each block and the largest (the engine's slot): the
 * app's own figures (one layout built, for lda), or for apps without them
 * growing with the block's columns up to the app's slot_bytes. */
static int plan_block_bytes(const rt_app_desc *app, const void *app_opts, const rt_plan *plan,
                            double *bytes, size_t *slot_bytes, rt_error *err)
{
    if (app->block_bytes) {
        if (app->block_bytes(app_opts, plan, bytes, err))
            return -1;
        double largest = 0;
        for (uint32_t b = 0; b < plan->blocks; b++)
            largest = bytes[b] > largest ? bytes[b] : largest;
        *slot_bytes = (size_t)largest;
        return 0;
    }
    if (app->slot_bytes(app_opts, plan, slot_bytes, err))
        return -1;
    uint32_t max_cols = 0;
    for (uint32_t b = 0; b < plan->blocks; b++)
        if (rt_plan_block_cols(plan, b) > max_cols)
            max_cols = rt_plan_block_cols(plan, b);
    for (uint32_t b = 0; b < plan->blocks; b++)
        bytes[b] = max_cols ? (double)*slot_bytes * rt_plan_block_cols(plan, b) / max_cols : 0;
    return 0;
}

static int shape_from_plan(const sim_opts *o, const rt_app_desc *app, const void *app_opts,
                           const rt_plan *plan, size_t *slot_bytes, sim_shape_buf *s, rt_error *err)
{
    if (sim_shape_alloc(s, &o->knobs, plan->nodes, plan->threads, plan->pipeline, err))
        return -1;
    memcpy(s->schedule, plan->schedule, (size_t)plan->blocks * plan->workers * sizeof(uint32_t));
    if (plan_block_bytes(app, app_opts, plan, s->bytes, slot_bytes, err))
        return -1;
    sim_sizes z = sizes_of(o, plan->nodes, plan->threads, 0);
    sim_reduce_sizes(&z, plan->workers, &s->shape);
    return plan_cells(plan, s->cells, err);
}

/* ---- shape from sizes ---- */

/* Payload bytes per column: the app's own slot size for a one-column
 * block (MF), or K dense 32-bit counts (lda; rare words' sparse slices are
 * smaller, so this is an upper bound). */
static int bytes_per_col(const sim_opts *o, const rt_app_desc *app, const void *app_opts,
                         double *out, rt_error *err)
{
    if (o->args.bytes_per_col > 0) {
        *out = o->args.bytes_per_col;
        return 0;
    }
    if (!strcmp(o->app_name, "lda")) {
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

/* ---- calibration: the app's kernel, serially, on the plan ---- */

/* A count, sum and sum of squares, for a sample variance. */
typedef struct calib_moments {
    double n, sum, sumsq;
} calib_moments;

static void moments_add(calib_moments *m, double x)
{
    m->n++, m->sum += x, m->sumsq += x * x;
}

/* Per worker (each written by its own thread only): the seconds per work
 * unit of its visits after the first rotation, in wall seconds and in its
 * thread's CPU seconds. */
typedef struct calib_spread {
    calib_moments wall, cpu;
    double last_s;     /* its visit in the current step */
    double last_start; /* ... when it began (rt_now) */
    double last_end;   /* ... and when it ended */
} calib_spread;

typedef struct calib {
    const rt_app_ops *inner;
    void *inner_app;
    double compute_s, other_s; /* over the rotations after the first */
    int rotations;
    const double *cells; /* W x B work units */
    uint32_t blocks, workers;
    calib_spread *spread; /* W */
    /* With every worker a thread: the time of each step beyond its visits
     * (thread hand-offs and the app's step end: calib_step_rest), in the
     * rotations after the first. */
    double step_t0;
    double *handoff; /* room for CALIB_ROTATIONS_MAX x blocks */
    size_t n_handoff;
    /* The visits after the first rotation: their work, and the CPU time of
     * the threads that ran them (time slices waiting for a core left out,
     * so with every worker a thread: a busy core's rate). */
    double *visit_work, *visit_cpu_s; /* W: each written by its worker's thread only */
    /* Each worker's visits in the current rotation (CPU seconds, work
     * units), and over the rotations after the first the sum of the squared
     * coefficient of variation, across workers, of their CPU seconds per
     * unit.  CPU, not wall: with more workers than cores a worker's wall
     * seconds include its waits for a core, which the model makes itself by
     * sharing the cores; counted here as well, they would be counted twice
     * (8 ranks on 2 cores: a spread 2-5 times the CPU one). */
    double *rot_cpu_s, *rot_work;
    double worker_var_sum;
    int worker_var_n;
    double pause_s; /* > 0: every step of the even rotations after the first follows an idle
                       time this long (a rank waiting for its blocks) */
    double *paused_work, *paused_cpu_s; /* W: the visits of those rotations, as visit_* */
} calib;

/* The most threads --calibrate-threads runs (one per worker). */
#define CALIB_THREADS_MAX 256

/* The most rotations a calibration runs (with_calibration_args). */
#define CALIB_ROTATIONS_MAX 8

static int calib_block_home(void *p, uint32_t block, uint64_t rot, void *payload, size_t *len,
                            rt_error *err)
{
    calib *c = p;
    c->step_t0 = rt_now(); /* the rotation's first step starts after its home blocks */
    return c->inner->block_home(c->inner_app, block, rot, payload, len, err);
}

/* CPU time of the calling thread (NAN if the clock cannot be read). */
static double thread_cpu_s(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts))
        return NAN;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* Whether rotation rot's steps each follow an idle time (--calibrate-pause-us). */
static int calib_paused(const calib *c, uint64_t rot)
{
    return c->pause_s > 0 && rot > 0 && rot % 2 == 0;
}

static int calib_visit(void *p, const rt_visit *v, rt_error *err)
{
    calib *c = p;
    double t0 = rt_now(), cpu0 = thread_cpu_s();
    int rc = c->inner->visit(c->inner_app, v, err);
    double work = c->cells[(size_t)v->worker * c->blocks + v->block];
    calib_spread *sp = &c->spread[v->worker];
    sp->last_start = t0;
    sp->last_end = rt_now();
    sp->last_s = sp->last_end - t0;
    double cpu = thread_cpu_s() - cpu0;
    if (rc == 0 && calib_paused(c, v->rotation) && work > 0) {
        c->paused_work[v->worker] += work;
        c->paused_cpu_s[v->worker] += cpu;
    } else if (rc == 0 && v->rotation > 0 && work > 0) {
        double x = sp->last_s / work, y = cpu / work;
        moments_add(&sp->wall, x);
        if (isfinite(y))
            moments_add(&sp->cpu, y);
        c->visit_work[v->worker] += work;
        c->visit_cpu_s[v->worker] += cpu;
        c->rot_cpu_s[v->worker] += cpu;
        c->rot_work[v->worker] += work;
    }
    return rc;
}

/* The sample variance of n values from their sum and sum of squares (0
 * below two values), and their mean. */
static double sample_var(double n, double sum, double sumsq, double *mean)
{
    *mean = sum / n;
    return n > 1 ? (sumsq - n * *mean * *mean) / (n - 1) : 0;
}

/* After a rotation: how much the workers' CPU seconds per unit differed (each
 * worker over all its cells of the rotation), as a squared coefficient of
 * variation; then the next rotation starts from zero. */
static void calib_worker_spread(calib *c)
{
    double n = 0, sum = 0, sumsq = 0;
    for (uint32_t w = 0; w < c->workers; w++) {
        if (c->rot_work[w] > 0 && isfinite(c->rot_cpu_s[w])) {
            double x = c->rot_cpu_s[w] / c->rot_work[w];
            n++, sum += x, sumsq += x * x;
        }
        c->rot_cpu_s[w] = c->rot_work[w] = 0;
    }
    if (n < 2 || sum <= 0)
        return;
    double mean, var = sample_var(n, sum, sumsq, &mean);
    c->worker_var_sum += var > 0 ? var / (mean * mean) : 0;
    c->worker_var_n++;
}

/* The workers' work units per CPU second, from their sums of both (0: no
 * work timed, or no clock). */
static double work_per_cpu_s(const double *work, const double *cpu_s, uint32_t workers)
{
    double sum_work = 0, sum_cpu = 0;
    for (uint32_t w = 0; w < workers; w++)
        sum_work += work[w], sum_cpu += cpu_s[w];
    return sum_cpu > 0 && isfinite(sum_cpu) ? sum_work / sum_cpu : 0;
}

/* Work units per CPU second of the visits measured (0: none, or no clock). */
static double calib_busy_rate(const calib *c, uint32_t workers)
{
    return work_per_cpu_s(c->visit_work, c->visit_cpu_s, workers);
}

/* What the paused rotations' visits computed per CPU second, over the
 * others' (0: no pause, or no clock). */
static double calib_wake_speed(const calib *c, uint32_t workers, double busy_rate)
{
    return busy_rate > 0 ? work_per_cpu_s(c->paused_work, c->paused_cpu_s, workers) / busy_rate : 0;
}

/* The coefficient of variation of a cell's time per work unit over all
 * visits measured: wall seconds, or with cpu its thread's CPU seconds (with
 * more workers than cores the wall figure also holds the waits for a core,
 * which the model's sharing of the cores makes itself). */
static double calib_cell_cv(const calib *c, uint32_t workers, int cpu)
{
    double n = 0, sum = 0, sumsq = 0;
    for (uint32_t w = 0; w < workers; w++) {
        const calib_moments *m = cpu ? &c->spread[w].cpu : &c->spread[w].wall;
        n += m->n, sum += m->sum, sumsq += m->sumsq;
    }
    if (n < 2 || sum <= 0)
        return 0;
    double mean, var = sample_var(n, sum, sumsq, &mean);
    return var > 0 ? sqrt(var) / mean : 0;
}

/* Sleep this long: the workers wait at the engine's barrier meanwhile, so
 * the cores go idle (or to other processes) as a waiting rank's do. */
static void pause_for(double seconds)
{
    struct timespec ts = {.tv_sec = (time_t)seconds,
                          .tv_nsec = (long)((seconds - (double)(time_t)seconds) * 1e9)};
    while (nanosleep(&ts, &ts) != 0 && errno == EINTR)
        ;
}

/* What a step took beyond its visits (rt_sim_step_rest): the time the
 * model's step cost stands for, the waits for a core left to the model. */
static double calib_step_rest(const calib *c, const rt_engine *eng, double now)
{
    double start[CALIB_THREADS_MAX], end[CALIB_THREADS_MAX];
    uint32_t n = (uint32_t)rt_engine_threads(eng);
    n = n < CALIB_THREADS_MAX ? n : CALIB_THREADS_MAX;
    for (uint32_t t = 0; t < n; t++) {
        const calib_spread *sp = &c->spread[rt_engine_first_worker(eng) + t];
        start[t] = sp->last_start, end[t] = sp->last_end;
    }
    return rt_sim_step_rest(c->step_t0, now, start, end, n);
}

static int calib_step_end(void *p, rt_engine *eng, uint64_t rot, uint32_t step, rt_error *err)
{
    calib *c = p;
    int rc = c->inner->step_end ? c->inner->step_end(c->inner_app, eng, rot, step, err) : 0;
    double now = rt_now();
    if (rot > 0 && !calib_paused(c, rot) && c->n_handoff < (size_t)CALIB_ROTATIONS_MAX * c->blocks)
        c->handoff[c->n_handoff++] = calib_step_rest(c, eng, now);
    if (rc == 0 && calib_paused(c, rot) && step + 1 < c->blocks)
        pause_for(c->pause_s);
    c->step_t0 = rt_now();
    return rc;
}

static int calib_rotation_end(void *p, rt_engine *eng, uint64_t rot, const rt_rotation_stats *st,
                              int *stop, rt_error *err)
{
    calib *c = p;
    if (rot > 0 && !calib_paused(c, rot)) { /* the first rotation warms caches and pages in
                                               the shards */
        calib_worker_spread(c);
        c->compute_s += st->compute_s;
        c->other_s += st->seconds - st->compute_s;
        c->rotations++;
    }
    int rc = c->inner->rotation_end(c->inner_app, eng, rot, st, stop, err);
    if (rc == 0 && calib_paused(c, rot + 1) && !*stop) /* before its first step */
        pause_for(c->pause_s);
    return rc;
}

static const rt_app_ops calib_ops = {
    .block_home = calib_block_home,
    .visit = calib_visit,
    .step_end = calib_step_end,
    .rotation_end = calib_rotation_end,
};

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The mean of v[0..n) (sorted here) without its highest and lowest tenth,
 * and their coefficient of variation: robust to the few steps that a loaded
 * machine stretches by tens of milliseconds, which swung the plain mean of
 * some forty steps by a factor of four from one calibration to the next. */
static double trimmed_mean(double *v, size_t n, double *cv)
{
    *cv = 0;
    qsort(v, n, sizeof(double), cmp_double);
    size_t cut = n / 10, m = n - 2 * cut;
    double sum = 0, sumsq = 0;
    for (size_t i = cut; i < n - cut; i++)
        sum += v[i], sumsq += v[i] * v[i];
    if (m == 0 || sum <= 0)
        return 0;
    double mean, var = sample_var((double)m, sum, sumsq, &mean);
    *cv = var > 0 ? sqrt(var) / mean : 0;
    return mean;
}

static void calib_free(calib *c)
{
    free(c->spread);
    free(c->handoff);
    free(c->visit_work);
    free(c->visit_cpu_s);
    free(c->rot_cpu_s);
    free(c->rot_work);
    free(c->paused_work);
    free(c->paused_cpu_s);
}

/* Run the app for a few rotations, serially (rate = work / compute time,
 * and the rest of the rotation time spread over its steps) or with every
 * worker a thread (rate = one worker's work over the rotation's wall time). */
static int calibrate(sim_opts *o, const rt_app_desc *app, const void *app_opts, const rt_plan *plan,
                     size_t slot_bytes, const double *cells, rt_error *err)
{
    int parallel = o->calibrate == 2;
    if (parallel && plan->workers > CALIB_THREADS_MAX)
        return rt_fail(err, RT_EXIT_INPUT, "--calibrate-threads: %u workers is too many threads",
                       plan->workers);
    rt_group_config gc = {.rank = 0, .size = 1, .local_rank = 0, .base_port = 18515};
    rt_group group;
    if (rt_group_resolve(&gc, &group, err))
        return -1;
    rt_engine_config ec = {.plan = plan,
                           .group = &group,
                           .threads = parallel ? (int)plan->workers : 1,
                           .serial = !parallel,
                           /* unpinned: the rate the scheduler gives a thread, not the
                            * share of whichever core hwloc picks for local rank 0 */
                           .pin = RT_PIN_NO,
                           /* every step on the threads, as the parallel rate means */
                           .inline_steps = RT_INLINE_NEVER};
    rt_transport_config_init(&ec.transport);
    ec.slot_bytes = slot_bytes;
    rt_engine *eng = NULL;
    calib c = {.inner = app->ops,
               .cells = cells,
               .blocks = plan->blocks,
               .workers = plan->workers,
               .pause_s = o->calibrate_pause_us * 1e-6};
    c.spread = calloc(plan->workers, sizeof(calib_spread));
    c.handoff = calloc((size_t)CALIB_ROTATIONS_MAX * plan->blocks, sizeof(double));
    c.visit_work = calloc(plan->workers, sizeof(double));
    c.visit_cpu_s = calloc(plan->workers, sizeof(double));
    c.rot_cpu_s = calloc(plan->workers, sizeof(double));
    c.rot_work = calloc(plan->workers, sizeof(double));
    c.paused_work = calloc(plan->workers, sizeof(double));
    c.paused_cpu_s = calloc(plan->workers, sizeof(double));
    if (!c.spread || !c.handoff || !c.visit_work || !c.visit_cpu_s || !c.rot_cpu_s || !c.rot_work ||
        !c.paused_work || !c.paused_cpu_s) {
        calib_free(&c);
        rt_group_free(&group);
        return rt_fail(err, RT_EXIT_RUNTIME, "calibrate: out of memory");
    }
    int rc = rt_engine_create(&ec, &eng, err);
    if (rc == 0)
        rc = app->create(app_opts, plan, eng, &c.inner_app, err);
    if (rc == 0)
        rc = rt_engine_run(eng, &calib_ops, &c, err);
    if (c.inner_app)
        app->destroy(c.inner_app);
    rt_engine_destroy(eng);
    rt_group_free(&group);
    double cv = calib_cell_cv(&c, plan->workers, 0), step_cv = 0;
    o->cell_cv_cpu = calib_cell_cv(&c, plan->workers, 1);
    double per_step = !parallel ? 0 /* below, from the rotations' times */
                      : rc == 0 ? trimmed_mean(c.handoff, c.n_handoff, &step_cv)
                                : 0;
    o->busy_rate = calib_busy_rate(&c, plan->workers);
    o->wake_rate_ratio = calib_wake_speed(&c, plan->workers, o->busy_rate);
    /* with every worker a thread: how a thread's speed varies for a rotation */
    double worker_cv = parallel && c.worker_var_n ? sqrt(c.worker_var_sum / c.worker_var_n) : 0;
    calib_free(&c);
    if (rc)
        return rt_error_prefix(err, "calibrate");
    if (c.rotations < 1 || c.compute_s <= 0)
        return rt_fail(err, RT_EXIT_INPUT, "calibrate: the app ran fewer than 2 rotations");
    double work = 0;
    for (uint64_t i = 0; i < (uint64_t)plan->workers * plan->blocks; i++)
        work += cells[i];
    /* With every worker a thread on a shared machine, the threads' time
     * slices count: one worker's work over the rotation's wall time. */
    o->args.rate = parallel ? work * c.rotations / (c.compute_s + c.other_s) / plan->workers
                            : work * c.rotations / c.compute_s;
    /* serially: the rest of the rotation spread over its steps; with threads:
     * a step beyond its visits (calib_step_rest; trimmed mean) */
    if (!parallel)
        per_step = c.other_s / c.rotations / plan->blocks;
    if (per_step > o->knobs.step_overhead_s)
        o->knobs.step_overhead_s = per_step;
    if (o->knobs.cell_cv <= 0) /* unless given */
        o->knobs.cell_cv = cv;
    if (o->knobs.step_cv <= 0)
        o->knobs.step_cv = step_cv;
    if (o->knobs.worker_cv <= 0)
        o->knobs.worker_cv = worker_cv;
    if (o->knobs.wake_speed <= 0 && o->wake_rate_ratio > 0) /* unless given; not above 1 */
        o->knobs.wake_speed = o->wake_rate_ratio < 1 ? o->wake_rate_ratio : 1;
    rt_info("simulate: calibrated %s on %s (%s): %.4g units/s per thread, %.4g per CPU second "
            "of a visit, %.1f us per step besides %s (varying by %.1f%%), cell times vary by "
            "%.1f%% (%.1f%% in CPU seconds), of which a worker's rotation shares %.1f%% (%d "
            "rotations)",
            app->name, plan->dir, parallel ? "all workers as threads" : "serial", o->args.rate,
            o->busy_rate, per_step * 1e6, parallel ? "its cells" : "compute", 100 * step_cv,
            100 * cv, 100 * o->cell_cv_cpu, 100 * worker_cv, c.rotations);
    if (o->wake_rate_ratio > 0)
        rt_info("simulate: after %.0f us idle a step computed at %.3f x the speed per CPU "
                "second of the others",
                o->calibrate_pause_us, o->wake_rate_ratio);
    return 0;
}

/* ---- output ---- */

static void print_result(const sim_opts *o, const rt_sim_shape *s, const rt_sim_result *r,
                         int first)
{
    uint32_t W = s->nodes * s->threads, B = W * s->pipeline;
    if (o->json) {
        printf("{\"app\": \"%s\", \"nodes\": %u, \"threads\": %u, \"pipeline\": %u, "
               "\"gbps\": %g, \"latency_us\": %g, \"overhead_us\": %g, \"rate\": %.6g, "
               "\"busy_rate\": %.6g, \"busy_core_speed\": %.4g, \"net_cpu_ns_per_byte\": %.4g, "
               "\"step_overhead_us\": %.4g, \"step_cv\": %.4g, \"cell_cv\": %.4g, "
               "\"worker_cv\": %.4g, \"worker_factor_cv\": %.4g, \"wake_speed\": %.4g, "
               "\"wake_rate_ratio\": %.4g, "
               "\"cell_cv_cpu\": %.4g, "
               "\"predicted_epoch_s\": %.6g, \"predicted_stall\": %.4f, \"stall_mean\": %.4f, "
               "\"compute_s\": %.6g, \"compute_cpu_s\": %.6g, \"compute_gap_s\": %.6g, "
               "\"collective_s\": %.6g, "
               "\"credit_wait_s\": %.6g, "
               "\"bytes_per_link\": %.0f, \"link_busy_s\": %.6g, \"critical\": \"%s\"}\n",
               o->app_name, s->nodes, s->threads, s->pipeline, o->link.gbps,
               o->link.latency_s * 1e6, o->link.overhead_s * 1e6, s->rate, o->busy_rate,
               s->busy_core_speed > 0 ? s->busy_core_speed : 1, s->net_cpu_s_per_byte * 1e9,
               s->step_overhead_s * 1e6, s->step_cv, s->cell_cv, s->worker_cv, r->worker_factor_cv,
               s->wake_speed > 0 ? s->wake_speed : 1, o->wake_rate_ratio, o->cell_cv_cpu,
               r->epoch_s, r->stall_max, r->stall_mean, r->compute_max_s, r->compute_cpu_s,
               r->compute_gap_s, r->collective_s, r->credit_wait_s, r->bytes_per_link,
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

/* The model's time grows as nodes x workers x blocks per rotation (each
 * node steps through every block; each event looks at every node and the
 * finishing host's workers): 1.3-3 ns each on the 2-core test machine
 * (256 nodes x 16 threads, 8.6e9: 11 s), so 2e10 is under a minute or two.
 * Beyond it the answer would take hours (1024 nodes x 16 threads: 5.5e11),
 * so it is refused; above 1e9 (seconds) the wait is announced. */
#define SIM_MAX_MODEL_STEPS 2e10
#define SIM_SLOW_MODEL_STEPS 1e9

static int check_model_size(const sim_opts *o, uint32_t nodes, uint32_t threads, uint32_t pipeline,
                            rt_error *err)
{
    double W = (double)nodes * threads, B = W * pipeline;
    int jitter = o->knobs.cell_cv > 0 || o->knobs.step_cv > 0 || o->knobs.worker_cv > 0;
    double rotations = !jitter ? 1 : o->knobs.jitter_rotations ? o->knobs.jitter_rotations : 32;
    double steps = nodes * W * B * rotations;
    if (steps > SIM_MAX_MODEL_STEPS)
        return rt_fail(err, RT_EXIT_INPUT,
                       "simulate: %u nodes x %u threads x %u blocks per worker is a model of "
                       "%.2g steps (nodes x workers x blocks%s), which would take hours; at "
                       "most %.0e: use fewer nodes, --threads or --pipeline",
                       nodes, threads, pipeline, steps, jitter ? " x rotations" : "",
                       SIM_MAX_MODEL_STEPS);
    if (steps > SIM_SLOW_MODEL_STEPS)
        rt_info("simulate: %u nodes x %u threads: a model of %.2g steps, this takes a while", nodes,
                threads, steps);
    return 0;
}

static int run_shape(const sim_opts *o, sim_shape_buf *s, int first, rt_error *err)
{
    s->shape.rate = o->args.rate;
    s->shape.step_overhead_s = o->knobs.step_overhead_s;
    s->shape.cell_cv = o->knobs.cell_cv; /* these five may come from the calibration */
    s->shape.step_cv = o->knobs.step_cv;
    s->shape.worker_cv = o->knobs.worker_cv;
    s->shape.wake_speed = o->knobs.wake_speed;
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
    sim_shape_buf s = {0};
    int rc = check_model_size(o, plan.nodes, plan.threads, plan.pipeline, err) ||
             app->check(app_opts, &plan, err) ||
             shape_from_plan(o, app, app_opts, &plan, &slot_bytes, &s, err);
    if (rc == 0 && o->calibrate)
        rc = calibrate(o, app, app_opts, &plan, slot_bytes, s.cells, err);
    if (rc == 0) {
        if (!o->json)
            printf("%s: %s, %llu x %llu, %.0f work units; link %g Gb/s, %g us, %g us/msg; "
                   "rate %.4g/s per thread\n",
                   plan.dir, o->app_name, (unsigned long long)plan.n_rows,
                   (unsigned long long)plan.n_cols,
                   (double)(plan.app == RT_PLAN_LDA ? plan.tokens_train : plan.nnz_train),
                   o->link.gbps, o->link.latency_s * 1e6, o->link.overhead_s * 1e6, o->args.rate);
        rc = run_shape(o, &s, 1, err);
    }
    sim_shape_free(&s);
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
               o->app_name, (unsigned long long)o->rows, (unsigned long long)o->cols,
               (unsigned long long)o->nnz, strcmp(o->app_name, "lda") ? "ratings" : "tokens",
               col_bytes, o->link.gbps, o->link.latency_s * 1e6, o->link.overhead_s * 1e6,
               o->args.rate);
    for (int i = 0; i < o->n_nodes; i++) {
        uint64_t workers = (uint64_t)o->nodes[i] * o->threads;
        if (workers > o->rows) /* as rotor partition refuses it */
            return rt_fail(err, RT_EXIT_INPUT,
                           "simulate: --nodes %u x --threads %u is %" PRIu64 " workers for %" PRIu64
                           " rows: each worker needs one; use fewer",
                           o->nodes[i], o->threads, workers, o->rows);
        if (check_model_size(o, o->nodes[i], o->threads, o->pipeline, err))
            return -1;
    }
    for (int i = 0; i < o->n_nodes; i++) {
        sim_shape_buf s;
        sim_sizes z = sizes_of(o, o->nodes[i], o->threads, col_bytes);
        if (sim_shape_uniform(&s, &o->knobs, &z, o->pipeline, err))
            return -1;
        int rc = run_shape(o, &s, i == 0, err);
        sim_shape_free(&s);
        if (rc)
            return -1;
    }
    return 0;
}

int cmd_simulate(int argc, char **argv)
{
    sim_opts o;
    rt_error err = {0};
    void *app_opts = NULL;
    int rc = parse_args(&o, &app_opts, argc, argv, &err);
    if (rc == 0) {
        const rt_app_desc *app = rt_apps[o.app];
        rc = o.plan_dir ? simulate_plan(&o, app, app_opts, &err)
                        : simulate_sizes(&o, app, app_opts, &err);
    }
    free(app_opts);
    if (rc < 0)
        rt_die(&err);
    return RT_EXIT_OK;
}
