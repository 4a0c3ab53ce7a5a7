/*
 * cmd_train.c - `rotor train`: follow a plan with one of the apps.
 *
 * The same command runs alone, under `rotor launch`, mpirun or srun: this
 * process's rank, the group size and the peers' addresses come from flags or
 * from the launcher's environment (engine/group.c).
 */
#include "apps/apps.h"
#include "tools/commands.h"
#include "tools/tuning_env.h"

#include <stdlib.h>
#include <string.h>

typedef struct train_opts {
    const char *plan_dir;
    const char *app;
    int threads; /* 0 = the plan's threads per node */
    int serial;
    rt_group_config group;
    rt_transport_config transport;
    rt_pin_mode pin;
    int help;
    int app_argc;
    char **app_argv; /* argv[0] = app name, then the options train did not know */
} train_opts;

static void usage(FILE *fp)
{
    fprintf(fp, "usage: rotor train --plan DIR [--app sgd-mf|cd-mf|lda] [OPTIONS] [APP OPTIONS]\n\n"
                "Train a model by following a plan made by `rotor partition`.  Run it under\n"
                "`rotor launch -n P -- rotor train ...`, mpirun or srun for P processes;\n"
                "the plan's worker count must equal processes x threads.\n\n"
                "options:\n"
                "  --plan DIR          plan directory (required)\n"
                "  --app NAME          sgd-mf (default), cd-mf or lda\n"
                "  --threads T         worker threads per process (default: the plan's)\n"
                "  --serial            replay all of the plan's workers on one thread, in\n"
                "                      schedule order (a reference run; one process only)\n"
                "  --node R --nodes P  this process's rank and the process count (default:\n"
                "                      from rotor launch, mpirun, PMI or Slurm, else 0 and 1)\n"
                "  --hostfile FILE     one line per rank: host[:port] (required for P > 1\n"
                "                      unless the launcher provides ROTOR_HOSTFILE)\n"
                "  --base-port N       port for hostfile lines without one: N + rank (18515)\n"
                "  --transport T       auto (default), tcp or ib\n"
                "  --ib-dev NAME       RDMA device (default: first with an active port)\n"
                "  --ib-port N         RDMA port (default: first active)\n"
                "  --gid-index N       RoCE GID index (default: auto-detect RoCE v2)\n"
                "  --event-mode        wait for RDMA completions on a channel, not busy-poll\n"
                "  --peer-timeout S    fail when a peer is silent for S seconds (default: off;\n"
                "                      a peer that dies is always detected)\n"
                "  --pin auto|yes|no   pin worker threads to cores (auto: when they fit)\n"
                "  -h, --help          this text\n");
    for (size_t i = 0; rt_apps[i]; i++)
        fprintf(fp, "\n%s options:\n%s", rt_apps[i]->name, rt_apps[i]->usage);
    fprintf(fp, "\nOne log line per epoch: epoch, seconds, updates/s, train RMSE, test RMSE,\n"
                "stall %% (share of the epoch spent waiting for blocks to arrive).\n");
}

static int int_opt(const char *v, const char *name, int min, int *out, rt_error *err)
{
    if (rt_parse_int(v, out) || *out < min)
        return rt_fail(err, RT_EXIT_INPUT, "%s must be an integer >= %d, got '%s'", name, min, v);
    return 0;
}

/* Options that belong to train itself; everything else goes to the app. */
static int parse_train_opt(train_opts *o, int argc, char **argv, int *i, int *consumed,
                           rt_error *err)
{
    const char *a = argv[*i], *v = NULL;
    *consumed = 1;
    if (!strcmp(a, "-h") || !strcmp(a, "--help")) {
        o->help = 1;
        return 0;
    }
    if (!strcmp(a, "--serial")) {
        o->serial = 1;
        return 0;
    }
    if (!strcmp(a, "--event-mode")) {
        o->transport.event_mode = 1;
        return 0;
    }
    static const char *const with_value[] = {
        "--plan",      "--app",          "--threads",   "--node",   "--nodes",
        "--hostfile",  "--base-port",    "--transport", "--ib-dev", "--ib-port",
        "--gid-index", "--peer-timeout", "--pin"};
    int known = 0;
    for (size_t n = 0; n < sizeof(with_value) / sizeof(with_value[0]); n++)
        known |= rt_opt_is(a, with_value[n]);
    if (!known) {
        *consumed = 0;
        return 0;
    }
    if (!(v = rt_opt_value(argc, argv, i, err)))
        return -1;
    if (rt_opt_is(a, "--plan"))
        o->plan_dir = v;
    else if (rt_opt_is(a, "--app"))
        o->app = v;
    else if (rt_opt_is(a, "--threads"))
        return int_opt(v, "--threads", 1, &o->threads, err);
    else if (rt_opt_is(a, "--node"))
        return int_opt(v, "--node", 0, &o->group.rank, err);
    else if (rt_opt_is(a, "--nodes"))
        return int_opt(v, "--nodes", 1, &o->group.size, err);
    else if (rt_opt_is(a, "--hostfile"))
        o->group.hostfile = v;
    else if (rt_opt_is(a, "--base-port"))
        return int_opt(v, "--base-port", 1, &o->group.base_port, err);
    else if (rt_opt_is(a, "--transport")) {
        if (rt_transport_kind_parse(v, &o->transport.kind))
            return rt_fail(err, RT_EXIT_INPUT, "--transport must be auto, tcp or ib, got '%s'", v);
    } else if (rt_opt_is(a, "--ib-dev"))
        o->transport.ib_dev = v;
    else if (rt_opt_is(a, "--ib-port"))
        return int_opt(v, "--ib-port", 1, &o->transport.ib_port, err);
    else if (rt_opt_is(a, "--gid-index"))
        return int_opt(v, "--gid-index", 0, &o->transport.gid_index, err);
    else if (rt_opt_is(a, "--peer-timeout")) {
        int s;
        if (int_opt(v, "--peer-timeout", 0, &s, err))
            return -1;
        o->transport.peer_timeout_ms = s * 1000;
    } else if (rt_opt_is(a, "--pin")) {
        if (!strcmp(v, "auto"))
            o->pin = RT_PIN_AUTO;
        else if (!strcmp(v, "yes"))
            o->pin = RT_PIN_YES;
        else if (!strcmp(v, "no"))
            o->pin = RT_PIN_NO;
        else
            return rt_fail(err, RT_EXIT_INPUT, "--pin must be auto, yes or no, got '%s'", v);
    }
    return 0;
}

static int parse_args(train_opts *o, int argc, char **argv, rt_error *err)
{
    memset(o, 0, sizeof(*o));
    o->app = "sgd-mf";
    o->group.rank = -1;
    o->group.size = -1;
    o->group.local_rank = -1;
    o->group.base_port = 18515;
    rt_transport_config_init(&o->transport);
    o->app_argv = calloc((size_t)argc + 1, sizeof(char *));
    if (!o->app_argv)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    o->app_argc = 1;
    for (int i = 1; i < argc; i++) {
        int consumed;
        if (parse_train_opt(o, argc, argv, &i, &consumed, err))
            return -1;
        if (consumed)
            continue;
        if (strncmp(argv[i], "-", 1) != 0)
            return rt_fail(err, RT_EXIT_INPUT, "unexpected argument '%s' (see --help)", argv[i]);
        /* An app option, with its value when one follows ("--x v"). */
        o->app_argv[o->app_argc++] = argv[i];
        if (!strchr(argv[i], '=') && i + 1 < argc && strncmp(argv[i + 1], "--", 2) != 0)
            o->app_argv[o->app_argc++] = argv[++i];
    }
    o->app_argv[0] = (char *)o->app;
    if ((o->group.rank >= 0) != (o->group.size >= 0))
        return rt_fail(err, RT_EXIT_INPUT, "--node and --nodes go together");
    if (!o->help && !o->plan_dir)
        return rt_fail(err, RT_EXIT_INPUT, "--plan DIR is required (see rotor train --help)");
    return 0;
}

static int default_threads(const train_opts *o, const rt_plan *plan, int size)
{
    if (o->threads)
        return o->threads;
    if ((uint32_t)size * plan->threads == plan->workers)
        return (int)plan->threads;
    if (size > 0 && plan->workers % (uint32_t)size == 0)
        return (int)(plan->workers / (uint32_t)size);
    return (int)plan->threads; /* the engine reports the mismatch */
}

typedef struct train_run {
    rt_plan plan;
    int plan_open;
    rt_group group;
    int group_open;
    const rt_app_desc *app;
    void *app_opts;
    rt_engine *engine;
    void *app_state;
} train_run;

static int train(const train_opts *o, train_run *r, rt_error *err)
{
    r->app = rt_app_find(o->app);
    if (!r->app)
        return rt_fail(err, RT_EXIT_INPUT, "unknown --app '%s' (sgd-mf, cd-mf or lda)", o->app);
    if (rt_plan_open(o->plan_dir, &r->plan, err))
        return -1;
    r->plan_open = 1;
    if (r->app->parse(o->app_argc, o->app_argv, &r->app_opts, err) ||
        r->app->check(r->app_opts, &r->plan, err))
        return -1;
    if (rt_group_resolve(&o->group, &r->group, err))
        return -1;
    r->group_open = 1;

    rt_engine_config ec = {0};
    ec.plan = &r->plan;
    ec.group = &r->group;
    ec.threads = default_threads(o, &r->plan, r->group.size);
    ec.transport = o->transport;
    rt_env_tune_transport(&ec.transport);
    ec.pin = o->pin;
    ec.local_size = rt_env_local_size();
    ec.serial = o->serial;
    if (r->app->slot_bytes(r->app_opts, &r->plan, &ec.slot_bytes, err))
        return -1;
    if (rt_engine_create(&ec, &r->engine, err))
        return -1;
    if (r->group.rank == 0)
        rt_info("train: %s on %s: %d process%s (%s) x %d thread%s, plan %u workers x %u blocks",
                r->app->name, r->plan.dir, r->group.size, r->group.size == 1 ? "" : "es",
                r->group.source, o->serial ? 1 : ec.threads,
                (o->serial ? 1 : ec.threads) == 1 ? "" : "s", r->plan.workers, r->plan.blocks);
    if (r->app->create(r->app_opts, &r->plan, r->engine, &r->app_state, err))
        return -1;
    if (rt_engine_run(r->engine, r->app->ops, r->app_state, err))
        return -1;
    return r->app->save(r->app_state, r->engine, err);
}

static void train_cleanup(train_run *r)
{
    if (r->app_state)
        r->app->destroy(r->app_state);
    rt_engine_destroy(r->engine);
    free(r->app_opts);
    if (r->group_open)
        rt_group_free(&r->group);
    if (r->plan_open)
        rt_plan_close(&r->plan);
}

int cmd_train(int argc, char **argv)
{
    train_opts o;
    rt_error err = {0};
    if (parse_args(&o, argc, argv, &err)) {
        free(o.app_argv);
        rt_die(&err);
    }
    if (o.help) {
        usage(stdout);
        free(o.app_argv);
        return RT_EXIT_OK;
    }
    train_run r = {0};
    int rc = train(&o, &r, &err);
    train_cleanup(&r);
    free(o.app_argv);
    if (rc)
        rt_die(&err);
    return RT_EXIT_OK;
}
