/*
 * cmd_train.c - `rotor train`: follow a plan with one of the apps.
 *
 * The same command runs alone, under `rotor launch`, mpirun or srun: this
 * process's rank, the group size and the peers' addresses come from flags or
 * from the launcher's environment (tools/launch_env.c).  Before training,
 * every rank's fingerprint (plan, app, split, every app option that shapes
 * the computation) is compared at connect time (verbs/fingerprint.c).
 */
#include "apps/apps.h"
#include "tools/app_options.h"
#include "tools/commands.h"
#include "tools/link_opts.h"
#include "tools/guard.h"
#include "tools/tuning_env.h"

#include <dirent.h>
#include <fcntl.h>
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

enum { DEFAULT_CHECKPOINT_EVERY = 10 };

typedef struct train_opts {
    const char *plan_dir;
    int app;     /* index in rt_apps */
    int threads; /* 0 = the plan's threads per node */
    int serial;
    int node, nodes; /* -1 = from the environment */
    link_opts link;
    rt_pin_mode pin;
    rt_inline_mode inline_steps;
    const char *checkpoint; /* checkpoint root, or NULL */
    uint64_t checkpoint_every;
    const char *resume; /* checkpoint root to resume from, or NULL */
    uint32_t spare_slots;
    int quiet;
} train_opts;

static const rt_opt_choice pin_modes[] = {
    {"auto", RT_PIN_AUTO}, {"yes", RT_PIN_YES}, {"no", RT_PIN_NO}, {NULL, 0}};

static const rt_opt_choice inline_modes[] = {
    {"auto", RT_INLINE_AUTO}, {"yes", RT_INLINE_ALWAYS}, {"no", RT_INLINE_NEVER}, {NULL, 0}};

static const rt_opt train_options[] = {
    RT_PATH_OPT("plan", 'p', train_opts, plan_dir, "DIR", NULL, RT_OPT_REQUIRED | RT_OPT_DIR,
                "plan directory made by rotor partition"),
    RT_ENUM_OPT("app", 'a', train_opts, app, rt_app_choices, "sgd-mf", "the model to train"),
    RT_INT_OPT("threads", 't', train_opts, threads, "T", NULL, 1, 4096, 0,
               "worker threads per process (default: the plan's)"),
    RT_FLAG_OPT("serial", 0, train_opts, serial,
                "replay all of the plan's workers on one thread, in schedule order (a reference "
                "run; one process only)"),
    RT_U32_OPT("spare-slots", 0, train_opts, spare_slots, "S", "1", 1, 64, 0,
               "block slots each process keeps beyond its home blocks: each costs a block of "
               "memory; 2 hides a credit round trip per pass (bandwidth- or latency-bound "
               "links, see rotor simulate)"),
    RT_INT_OPT("node", 0, train_opts, node, "R", NULL, 0, 1048575, 0,
               "this process's rank (with --nodes)"),
    RT_INT_OPT("nodes", 0, train_opts, nodes, "P", NULL, 1, 1048576, 0,
               "the number of processes (with --node)"),
    RT_ENUM_OPT("pin", 0, train_opts, pin, pin_modes, "auto",
                "pin worker threads to cores (auto: when they fit)"),
    RT_ENUM_OPT("inline-steps", 0, train_opts, inline_steps, inline_modes, "auto",
                "run a step's cells one after another on the main thread instead of waking the "
                "worker threads (auto: when the previous step's cells took under 2 ms of CPU "
                "together, where the wake-ups cost more than the threads gain); the model is "
                "the same bits either way"),
    RT_PATH_OPT("checkpoint", 0, train_opts, checkpoint, "DIR", NULL, RT_OPT_DIR,
                "write every rank's training state to DIR/ckpt-N every --checkpoint-every "
                "epochs and at the end (the newest two kept; DIR must be seen by every rank)"),
    /* No table default: 0 tells "not given" apart, which is an error
     * without --checkpoint rather than a setting that silently does nothing. */
    RT_U64_OPT("checkpoint-every", 0, train_opts, checkpoint_every, "N", NULL, 1, 1e12, 0,
               "epochs (sgd-mf), sweeps (lda) or outer iterations (cd-mf) between checkpoints "
               "(with --checkpoint; default: 10)"),
    RT_PATH_OPT("resume", 0, train_opts, resume, "DIR", NULL, RT_OPT_DIR,
                "continue from the newest complete checkpoint under DIR (same plan, split and "
                "options; --epochs, --iters and --outer count the total); the model ends "
                "bit-identical to an uninterrupted run"),
    RT_FLAG_OPT("quiet", 'q', train_opts, quiet,
                "no per-epoch lines, progress or notes on stderr (warnings and errors only; the "
                "--metrics file still gets every epoch)"),
    {0}};

/* 0, 1 (help printed) or -1. */
static int parse_args(train_opts *o, void **app_opts, int argc, char **argv, rt_error *err)
{
    memset(o, 0, sizeof(*o));
    o->node = o->nodes = -1;
    link_opts_init(&o->link, RT_PEER_TIMEOUT_MS / 1000);
    rt_opt_group own[] = {{.opts = train_options, .dest = o},
                          {.title = "transport options", .opts = link_options, .dest = &o->link}};
    int rc = parse_with_app(&rotor_doc_train, own, 2, &o->app, argc, argv, app_opts, err);
    if (rc)
        return rc;
    if (o->quiet) /* as partition's: progress and notes off; warnings and errors stay */
        rt_log_level = RT_LOG_WARN;
    link_opts_finish(&o->link);
    o->link.group.rank = o->node;
    o->link.group.size = o->nodes;
    if ((o->node >= 0) != (o->nodes >= 0))
        return rt_fail(err, RT_EXIT_INPUT, "--node and --nodes go together");
    if (o->checkpoint_every && !o->checkpoint)
        return rt_fail(err, RT_EXIT_INPUT,
                       "--checkpoint-every needs --checkpoint DIR (where the checkpoints go)");
    if (!o->checkpoint_every)
        o->checkpoint_every = DEFAULT_CHECKPOINT_EVERY;
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
    void *app_opts; /* parsed by parse_args */
    rt_engine *engine;
    void *app_state;
    char *fingerprint;      /* the job (checkpoints record it) */
    char *link_fingerprint; /* the job and where its files go (compared at connect) */
} train_run;

/* App options that only say where results go: ranks may differ in them. */
static int output_only(const rt_opt *opt)
{
    return !strcmp(opt->name, "out") || !strcmp(opt->name, "metrics");
}

/* The value of option `opt` in the struct `dest`, as text. */
static void option_text(const rt_opt *opt, const void *dest, char *buf, size_t cap)
{
    const char *at = (const char *)dest + opt->offset;
    int i;
    switch (opt->type) {
    case RT_OPT_U32:
        snprintf(buf, cap, "%u", *(const uint32_t *)at);
        break;
    case RT_OPT_U64:
        snprintf(buf, cap, "%llu", (unsigned long long)*(const uint64_t *)at);
        break;
    case RT_OPT_DOUBLE:
        snprintf(buf, cap, "%.17g", *(const double *)at);
        break;
    case RT_OPT_STRING:
    case RT_OPT_PATH:
        snprintf(buf, cap, "%s", *(const char *const *)at ? *(const char *const *)at : "");
        break;
    case RT_OPT_ENUM:
        memcpy(&i, at, sizeof(i));
        snprintf(buf, cap, "%d", i);
        for (const rt_opt_choice *c = opt->choices; c && c->name; c++)
            if (c->value == i)
                snprintf(buf, cap, "%s", c->name);
        break;
    default: /* flags and ints */
        memcpy(&i, at, sizeof(i));
        snprintf(buf, cap, "%d", i);
    }
}

/* Append "name=value\n" to the growing string *s (NULL on failure). */
static void add_field(char **s, size_t *len, const char *name, const char *value)
{
    if (!*s)
        return;
    size_t add = strlen(name) + strlen(value) + 2;
    char *grown = realloc(*s, *len + add + 1);
    if (!grown) {
        free(*s);
        *s = NULL;
        return;
    }
    *s = grown;
    *len += (size_t)snprintf(*s + *len, add + 1, "%s=%s\n", name, value);
}

/* What every rank of the job must agree on (compared at connect time, see
 * transport.h): the plan, the app, the split and the value of every app
 * option that shapes the computation (defaults included). */
static char *job_fingerprint(const train_run *r, int threads)
{
    size_t len = 0;
    char *s = calloc(1, 1), v[512];
    snprintf(v, sizeof(v), "%016llx", (unsigned long long)r->plan.plan_id);
    add_field(&s, &len, "plan", v);
    snprintf(v, sizeof(v), "%u workers x %u blocks, pipeline %u", r->plan.workers, r->plan.blocks,
             r->plan.pipeline);
    add_field(&s, &len, "plan shape", v);
    add_field(&s, &len, "app", r->app->name);
    snprintf(v, sizeof(v), "%d", r->group.size);
    add_field(&s, &len, "processes", v);
    snprintf(v, sizeof(v), "%d", threads);
    add_field(&s, &len, "threads per process", v);
    for (const rt_opt *opt = r->app->options; opt && opt->name; opt++) {
        if (output_only(opt))
            continue;
        char name[128];
        snprintf(name, sizeof(name), "--%s", opt->name);
        option_text(opt, r->app_opts, v, sizeof(v));
        add_field(&s, &len, name, v);
    }
    return s;
}

/* A directory option as the user meant it, the same text on every rank:
 * an absolute path (normalised), or a relative one as given, without "."
 * components and extra slashes.  Relative stays relative: ranks that a
 * launcher starts in $HOME on each host mean the directory of that name
 * there, whatever $HOME is called.  (Ranks of one host must still resolve
 * it to one directory: check_dirs_per_host.) */
static void dir_as_given(const char *dir, char *out, size_t cap)
{
    if (dir[0] == '/' && rt_path_absolute(dir, out, cap) == 0)
        return;
    size_t n = 0;
    out[0] = '\0';
    for (const char *c = dir; *c && n + 1 < cap;) {
        size_t len = strcspn(c, "/");
        if (len && !(len == 1 && c[0] == '.'))
            n += (size_t)snprintf(out + n, cap - n, "%s%.*s", n ? "/" : "", (int)len, c);
        c += len + (c[len] == '/');
    }
    if (n >= cap)
        out[cap - 1] = '\0';
    if (!out[0])
        snprintf(out, cap, ".");
}

/* Append field `name` with directory `dir` as given ("" for none). */
static void add_dir_field(char **s, size_t *len, const char *name, const char *dir)
{
    char given[8192] = "";
    if (dir)
        dir_as_given(dir, given, sizeof(given));
    add_field(s, len, name, given);
}

/* What the ranks compare at connect time: the job, and where its files go.
 * A model is one directory (each rank writes its parts, rank 0 the
 * manifest), and so is a checkpoint: ranks naming different directories
 * split them (rank 0's model "incomplete", exit 0).  Node-local disks work
 * by naming the same path on every node.  These are not part of the job a
 * checkpoint records, so a resumed run may write elsewhere. */
static char *link_fingerprint(const char *job, const char *out, const train_opts *o)
{
    size_t len = strlen(job);
    char *s = strdup(job);
    add_dir_field(&s, &len, "--out (the model directory: the same path on every rank)", out);
    add_dir_field(&s, &len, "--checkpoint (the same path on every rank)", o->checkpoint);
    add_dir_field(&s, &len, "--resume (the same path on every rank)", o->resume);
    return s;
}

/* Every rank's n values, rank r's at [r * n]: each rank adds its own into
 * a zeroed array, so the sum is the gather, and every rank holds the same
 * array (the same verdict everywhere: transport.h).  NULL on failure. */
static int64_t *gather_per_rank(rt_engine *e, const rt_group *g, const int64_t *mine, size_t n,
                                rt_error *err)
{
    int64_t *v = calloc((size_t)g->size * n, sizeof(int64_t));
    if (!v) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
        return NULL;
    }
    memcpy(v + (size_t)g->rank * n, mine, n * sizeof(int64_t));
    if (rt_engine_allreduce_i64(e, v, (size_t)g->size * n, err)) {
        free(v);
        return NULL;
    }
    return v;
}

/* The same relative --out from two working directories of one host is two
 * directories: the model split (exit 0, "incomplete").  Every rank adds a
 * hash of its host name and of each directory made absolute; ranks of one
 * host must agree on the directories.  Same verdict on every rank: one
 * that stops on it does so only after it has sent its part of the sums,
 * and the others' calls deliver those before its stop (transport.h). */
static int check_dirs_per_host(rt_engine *e, const rt_group *g, const char *const dirs[3],
                               rt_error *err)
{
    static const char *const names[3] = {"out", "checkpoint", "resume"};
    enum { PER_RANK = 4 };
    if (g->size < 2)
        return 0;
    char host[256] = "", abs[3][8192];
    gethostname(host, sizeof(host) - 1); /* (a failure leaves "": one host) */
    int64_t h[PER_RANK] = {(int64_t)rt_checksum(host, strlen(host))};
    for (int i = 0; i < 3; i++) {
        if (!dirs[i] || rt_path_absolute(dirs[i], abs[i], sizeof(abs[i])))
            snprintf(abs[i], sizeof(abs[i]), "%s", dirs[i] ? dirs[i] : "");
        h[1 + i] = (int64_t)rt_checksum(abs[i], strlen(abs[i]));
    }
    int64_t *v = gather_per_rank(e, g, h, PER_RANK, err);
    if (!v)
        return -1;
    int rc = 0;
    for (int a = 0; rc == 0 && a < g->size; a++)
        for (int b = a + 1; rc == 0 && b < g->size; b++)
            for (int i = 0; rc == 0 && i < 3; i++)
                if (v[a * PER_RANK] == v[b * PER_RANK] &&
                    v[a * PER_RANK + 1 + i] != v[b * PER_RANK + 1 + i])
                    rc = rt_fail(err, RT_EXIT_INPUT,
                                 "ranks %d and %d run on one host but their --%s '%s' is two "
                                 "directories there (their working directories differ; here it "
                                 "is %s): start them in one directory or give an absolute path",
                                 a, b, names[i], dirs[i], abs[i]);
    free(v);
    return rc;
}

/* Every rank resumes from the same checkpoint.  One path that shows ranks
 * different files (a disk per host, a network filesystem's cache that has
 * not seen the newest manifest yet) would start them at different
 * rotations, which the engine finds only at the first block ("expected
 * block 3 (rotation 4), got block 3 (rotation 2)", exit 1).  Every rank sees
 * every rank's rotation, so all give the same verdict. */
static int check_same_resume(rt_engine *e, const rt_group *g, const char *dir, uint64_t rotation,
                             rt_error *err)
{
    if (!dir || g->size < 2)
        return 0;
    const int64_t mine = (int64_t)rotation;
    int64_t *v = gather_per_rank(e, g, &mine, 1, err);
    if (!v)
        return -1;
    int rc = 0;
    for (int r = 1; rc == 0 && r < g->size; r++)
        if (v[r] != v[0])
            rc = rt_fail(err, RT_EXIT_INPUT,
                         "--resume %s: rank 0 sees the newest complete checkpoint at rotation "
                         "%" PRId64 ", rank %d at rotation %" PRId64
                         ": every rank must see the same files there (one shared directory, "
                         "not a disk per host)",
                         dir, v[0], r, v[r]);
    free(v);
    return rc;
}

/* The app's path option `name` (out, metrics) as parsed: what the app
 * writes, whether it was given as --out, -o or several times. */
static const char *app_path(const train_opts *o, const void *app_opts, const char *name)
{
    const char *const *path = app_option_value(rt_apps[o->app], app_opts, name);
    return path ? *path : NULL;
}

/* Whether entry `name` of the open directory d is the user's: . and .. are
 * not, nor the lost+found directory at the root of a new filesystem (one
 * made for the checkpoints holds nothing else). Hidden entries are. */
static int user_entry(DIR *d, const char *name)
{
    struct stat sb;
    if (!strcmp(name, ".") || !strcmp(name, ".."))
        return 0;
    return strcmp(name, "lost+found") || fstatat(dirfd(d), name, &sb, AT_SYMLINK_NOFOLLOW) != 0 ||
           !S_ISDIR(sb.st_mode);
}

/* The first of the user's entries of directory `dir` (see user_entry) into
 * name (empty when it has none); -1 when it cannot be read, readdir's
 * error included (it was taken for the end: a directory read as empty). */
static int first_entry(const char *dir, char *name, size_t size, rt_error *err)
{
    DIR *d = opendir(dir);
    if (!d)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: --checkpoint: cannot read", dir);
    struct dirent *de;
    name[0] = 0;
    errno = 0;
    while ((de = readdir(d)) && !user_entry(d, de->d_name))
        errno = 0;
    int e = de ? 0 : errno;
    if (de)
        snprintf(name, size, "%s", de->d_name);
    closedir(d);
    if (e)
        return rt_fail_errno(err, RT_EXIT_INPUT, e, "%s: --checkpoint: cannot read", dir);
    return 0;
}

/* --checkpoint DIR holds ckpt-N directories and nothing else. Given a plan
 * or a model, the checkpoints went into a directory with another owner;
 * given --out itself, the model that replaces --out as a whole wiped them. */
static int check_checkpoint_root(const char *root, const char *out, rt_error *err)
{
    if (!root)
        return 0;
    if (out && rt_same_file(root, out))
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: --checkpoint is also --out, which the saved model replaces as a "
                       "whole (the checkpoints would be lost); give another directory",
                       root);
    if (out && rt_path_inside(root, out))
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: --checkpoint is inside --out %s, which the saved model replaces as a "
                       "whole (the checkpoints would be lost); give a directory outside it",
                       root, out);
    rt_dir_kind kind = rt_dir_kind_of(root); /* a file: left to mkdir, which names it */
    if (kind != RT_DIR_FILE && kind != RT_DIR_CHECKPOINTS && rt_dir_kind_text(kind))
        return rt_fail(err, RT_EXIT_INPUT, "%s: --checkpoint: not a checkpoint directory: it %s",
                       root, rt_dir_kind_text(kind));
    /* A directory of other files (a home or data directory given by mistake)
     * would get ckpt-N entries among them, and a later cleanup of "the
     * checkpoint directory" would take the user's files with it. */
    char name[256];
    if (kind == RT_DIR_PLAIN && first_entry(root, name, sizeof(name), err))
        return -1;
    if (kind == RT_DIR_PLAIN && name[0])
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: --checkpoint: a directory of other files (%s%s), not of checkpoints; "
                       "give a new or empty directory, or one rotor wrote checkpoints to",
                       root, name, name[0] == '.' ? ": hidden files count too" : "");
    return 0;
}

/* --metrics inside --out was wiped by the model saved over it (exit 0). */
static int check_metrics_path(const char *metrics, const char *out, rt_error *err)
{
    if (metrics && out && rt_path_inside(metrics, out))
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: --metrics is inside --out %s, which the saved model replaces as a "
                       "whole (the metrics would be lost); give a path outside it",
                       metrics, out);
    return 0;
}

/* The model replaces --out as a whole: no input may be in it, and it may
 * not be the working directory (checked again with the rest of --out by the
 * app, after the ranks have joined; here it comes before any waiting). */
static int check_inputs_outside(const train_opts *o, const char *out, rt_error *err)
{
    if (!out)
        return 0;
    return rt_check_out_not_cwd(out, err) ||
           rt_check_input_outside(o->plan_dir, "plan", out, err) ||
           rt_check_input_outside(o->resume, "resume", out, err) ||
           rt_check_input_outside(o->link.group.hostfile, "hostfile", out, err) ||
           rt_check_input_outside(o->link.token_file, "token-file", out, err);
}

/* The job's end: every rank learns whether every rank succeeded.  A rank
 * that failed after the last collective of the run (its last metrics
 * write, a part of the model) stops with rt_engine_abort and never comes
 * here, so this barrier fails on every other rank with that rank's own
 * message ("rank 0 stopped: m.json: write failed: File too large") instead
 * of leaving them at exit 0; a dead or frozen rank fails it through the
 * transport's liveness checks.  Past it nothing may fail: it is the last
 * call that can. */
static int agree_job_end(rt_engine *e, rt_error *err)
{
    /* Interrupted while saving, this rank's watcher is removing what it
     * wrote (tools/guard.c): it must not tell the others that the job
     * succeeded, or they exit 0 with the model gone.  (A signal that lands
     * inside the barrier itself can still do that.) */
    if (rt_guard_interrupted())
        return rt_fail(err, RT_EXIT_RUNTIME, "interrupted before the job's end");
    if (rt_engine_barrier(e, err))
        return rt_error_prefix(err, "at the job's end");
    return 0;
}

static int train(const train_opts *o, const char *out, train_run *r, rt_error *err)
{
    r->app = rt_apps[o->app];
    if (check_inputs_outside(o, out, err) || check_checkpoint_root(o->checkpoint, out, err) ||
        check_metrics_path(app_path(o, r->app_opts, "metrics"), out, err) ||
        rt_plan_open_mapped(o->plan_dir, &r->plan, err))
        return -1;
    r->plan_open = 1;
    rt_guard_mapped_plan(&r->plan);
    /* Join first: a job that cannot start (no secret, no peers) must stop
     * before the app's check makes --out, which ranks sharing a node race
     * to make and to remove again. */
    link_opts link = o->link;
    if (link_opts_join(&link, &r->group, err))
        return -1;
    r->group_open = 1;
    if (r->app->check(r->app_opts, &r->plan, err))
        return -1;

    rt_engine_config ec = {0};
    ec.plan = &r->plan;
    ec.group = &r->group;
    ec.threads = default_threads(o, &r->plan, r->group.size);
    ec.transport = link.transport;
    rt_env_tune_transport(&ec.transport);
    r->fingerprint = job_fingerprint(r, ec.threads);
    r->link_fingerprint = r->fingerprint ? link_fingerprint(r->fingerprint, out, o) : NULL;
    if (!r->link_fingerprint)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    ec.transport.fingerprint = r->link_fingerprint;
    ec.pin = o->pin;
    ec.local_size = rt_env_local_size();
    ec.serial = o->serial;
    ec.inline_steps = o->inline_steps;
    ec.spare_slots = o->spare_slots;
    char resume_dir[4096];
    if ((o->resume && rt_checkpoint_latest(o->resume, r->app->name, r->fingerprint, resume_dir,
                                           sizeof(resume_dir), &ec.first_rotation, err)) ||
        rt_checkpoint_check_root(o->checkpoint, r->app->name, r->fingerprint, err))
        return -1;
    if (r->app->slot_bytes(r->app_opts, &r->plan, &ec.slot_bytes, err))
        return -1;
    const char *const dirs[3] = {out, o->checkpoint, o->resume};
    if (rt_engine_create(&ec, &r->engine, err) ||
        check_dirs_per_host(r->engine, &r->group, dirs, err) ||
        check_same_resume(r->engine, &r->group, o->resume, ec.first_rotation, err))
        return -1;
    if (r->group.rank == 0)
        rt_info("train: %s on %s: %d process%s (%s) x %d thread%s, plan %u workers x %u blocks",
                r->app->name, r->plan.dir, r->group.size, r->group.size == 1 ? "" : "es",
                r->group.source, o->serial ? 1 : ec.threads,
                (o->serial ? 1 : ec.threads) == 1 ? "" : "s", r->plan.workers, r->plan.blocks);
    if (r->group.rank == 0 && !out) /* said at the start, while there is time to stop */
        rt_info("train: no --out: the trained model will not be saved");
    if (r->app->create(r->app_opts, &r->plan, r->engine, &r->app_state, err))
        return -1;
    if (o->resume && rt_app_resume(r->app, r->app_state, r->engine, &r->plan, resume_dir,
                                   r->fingerprint, ec.first_rotation, err))
        return -1;
    rt_checkpoint_config cc = {
        .dir = o->checkpoint, .every = o->checkpoint_every, .job = r->fingerprint};
    if (rt_app_run(r->app, r->app_state, r->engine, &r->plan, &cc, err) ||
        r->app->save(r->app_state, r->engine, err))
        return -1;
    return agree_job_end(r->engine, err);
}

static void train_cleanup(train_run *r)
{
    if (r->app_state)
        r->app->destroy(r->app_state);
    rt_engine_destroy(r->engine);
    free(r->app_opts);
    free(r->fingerprint);
    free(r->link_fingerprint);
    if (r->group_open)
        rt_group_free(&r->group);
    if (r->plan_open)
        rt_plan_close(&r->plan);
}

int cmd_train(int argc, char **argv)
{
    train_opts o;
    train_run r = {0};
    rt_error err = {0};
    rt_env_skip_hwloc_plugins(); /* before any thread or topology */
    int rc = parse_args(&o, &r.app_opts, argc, argv, &err);
    /* The app's output options name what an interrupted or failed run removes. */
    const char *out = rc == 0 ? app_path(&o, r.app_opts, "out") : NULL;
    if (rc == 0) {
        rt_guard_output(out);
        rt_guard_output(app_path(&o, r.app_opts, "metrics"));
        rt_guard_kept_output(o.checkpoint);
        rc = rt_guard_start(&err);
    }
    if (rc == 0)
        rc = train(&o, out, &r, &err);
    if (rc < 0) /* the other ranks report this cause, not a lost connection */
        rt_engine_abort(r.engine, err.msg);
    train_cleanup(&r);
    if (rc < 0)
        rt_guard_die(&err);
    return RT_EXIT_OK;
}
