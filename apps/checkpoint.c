/*
 * checkpoint.c - checkpoints of a training run and resuming from them.
 *
 * Layout under the checkpoint root:
 *
 *   ROOT/ckpt-NNNNNNNNNNNN/state-RRRRR.bin   each rank's part (app_state.c)
 *   ROOT/ckpt-NNNNNNNNNNNN/manifest.json     written last, by rank 0
 *
 * with N the rotation the run continues with.  A checkpoint is complete once
 * its manifest exists: every rank wrote (fsync, rename) its state file and
 * passed a barrier before rank 0 writes the manifest (again fsync, rename).
 * A crash at any point leaves the previous complete checkpoint alone; the
 * newest two complete ones are kept.  The root must be one directory every
 * rank sees (a shared filesystem, or one host under rotor launch).
 *
 * The checkpoint is taken inside rotation_end (every block home) by wrapping
 * the app's engine ops, so the engine needs to know nothing about it.
 */
#include "apps/app_common.h"
#include "ground/json.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define CKPT_PREFIX "ckpt-"
#define CKPT_KEEP 2

static int ckpt_dir(char *out, size_t cap, const char *root, uint64_t next, rt_error *err)
{
    char name[64];
    snprintf(name, sizeof(name), CKPT_PREFIX "%012" PRIu64, next);
    return rt_path_join(out, cap, root, name, err);
}

/* The rotation of a checkpoint directory name, or -1. */
static int64_t ckpt_rotation(const char *name)
{
    char *end;
    if (strncmp(name, CKPT_PREFIX, strlen(CKPT_PREFIX)) != 0)
        return -1;
    const char *digits = name + strlen(CKPT_PREFIX);
    if (*digits < '0' || *digits > '9')
        return -1;
    errno = 0;
    unsigned long long v = strtoull(digits, &end, 10);
    return *end || errno || v > INT64_MAX ? -1 : (int64_t)v;
}

static int manifest_path(char *out, size_t cap, const char *dir, rt_error *err)
{
    return rt_path_join(out, cap, dir, "manifest.json", err);
}

static int is_complete(const char *root, const char *name)
{
    char dir[4096], path[4096];
    if (ckpt_rotation(name) < 0 || rt_path_join(dir, sizeof(dir), root, name, NULL) ||
        manifest_path(path, sizeof(path), dir, NULL))
        return 0;
    /* O_NONBLOCK: a FIFO in its place counts (and is refused by name when
     * read) instead of holding open() until a writer comes. */
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd >= 0)
        close(fd);
    return fd >= 0;
}

/* Call visit(root, name, rotation, arg) for every ckpt-N entry under root.
 * -1 (with err, when given) when root cannot be read. */
typedef void ckpt_visit(const char *root, const char *name, int64_t rotation, void *arg);
static int each_ckpt(const char *root, ckpt_visit *visit, void *arg, rt_error *err)
{
    DIR *d = opendir(root);
    if (!d)
        return err ? rt_fail_errno(err, RT_EXIT_INPUT, errno,
                                   "%s: cannot open checkpoint directory", root)
                   : -1;
    struct dirent *de;
    while ((de = readdir(d)) != NULL) {
        int64_t r = ckpt_rotation(de->d_name);
        if (r >= 0)
            visit(root, de->d_name, r, arg);
    }
    closedir(d);
    return 0;
}

typedef struct newest_list {
    int64_t *rot;
    int cap, n;
} newest_list;

/* Keep the complete ones' rotations, sorted newest first, at most cap. */
static void collect_complete(const char *root, const char *name, int64_t r, void *arg)
{
    newest_list *l = arg;
    if (!is_complete(root, name) || (l->n == l->cap && r <= l->rot[l->cap - 1]))
        return;
    int i = l->n < l->cap ? l->n++ : l->cap - 1;
    for (; i > 0 && l->rot[i - 1] < r; i--)
        l->rot[i] = l->rot[i - 1];
    l->rot[i] = r;
}

/* The complete checkpoints' rotations under root, newest first (at most cap). */
static int list_complete(const char *root, int64_t *rot, int cap, int *n, rt_error *err)
{
    newest_list l = {.rot = rot, .cap = cap};
    int rc = each_ckpt(root, collect_complete, &l, err);
    *n = l.n;
    return rc;
}

/* Note the incomplete checkpoints newer than *(int64_t *)arg: a run
 * stopped while writing them, skipped by the resume. */
static void note_incomplete(const char *root, const char *name, int64_t r, void *arg)
{
    if (r > *(const int64_t *)arg && !is_complete(root, name))
        rt_info("resume: skipping %s/%s: incomplete (no manifest.json; a run stopped while "
                "writing it)",
                root, name);
}

/* Options that count the whole run: a resume may ask for more. */
static const char *const run_length[] = {"--epochs", "--iters", "--outer", NULL};

/* Why a checkpoint of another job is refused: a resume continues its job;
 * a --checkpoint directory's pruning keeps the newest two of any job. */
#define WHY_OTHER_JOB                                                                              \
    "--checkpoint holds another job's checkpoints, and only a directory's newest two are kept: "   \
    "this run would delete them, or its own; give a new or empty directory"
static const char *const why_same[2][2] = {
    {"a resume needs the same app", "a resume needs the same plan, split and options"},
    {WHY_OTHER_JOB, WHY_OTHER_JOB}};

/* The checkpoint in dir was written by --app `app` (`why`: why_same's row). */
static int check_app(const char *path, json_t *m, const char *app, int why, rt_error *err)
{
    const char *was = json_string_value(json_object_get(m, "app"));
    if (!was)
        return rt_fail(err, RT_EXIT_INPUT, "%s: no \"app\" string", path);
    if (strcmp(was, app) != 0)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: a checkpoint of --app %s, this run is --app %s (%s)", path, was, app,
                       why_same[why][0]);
    return 0;
}

/* The job that wrote the checkpoint in dir is --app `app` and (when `job`
 * is set) `job` but for its length (`why`: why_same's row). */
static int check_job(const char *dir, const char *app, const char *job, int why, rt_error *err)
{
    char path[4096];
    if (manifest_path(path, sizeof(path), dir, err))
        return -1;
    json_t *m = rt_json_load(path, err);
    if (!m)
        return -1;
    if (check_app(path, m, app, why, err)) {
        json_decref(m);
        return -1;
    }
    const char *was = json_string_value(json_object_get(m, "job"));
    int rc = 0;
    rt_field_diff d;
    char then[256], now[256];
    if (!job) {
        /* only the app asked for */
    } else if (!was) {
        rc = rt_fail(err, RT_EXIT_INPUT, "%s: no \"job\" string", path);
    } else if (rt_fields_diff(was, strlen(was), job, strlen(job), run_length, &d)) {
        rt_field_quote(then, sizeof(then), d.a, d.a_len);
        rt_field_quote(now, sizeof(now), d.b, d.b_len);
        rc = rt_fail(err, RT_EXIT_INPUT,
                     "%s: the checkpoint's job had %.*s %s, this run has %s (%s)", dir,
                     (int)d.name_len, d.name, then, now, why_same[why][1]);
    }
    json_decref(m);
    return rc;
}

int rt_checkpoint_latest(const char *root, const char *app, const char *job, char *dir, size_t cap,
                         uint64_t *next_rotation, rt_error *err)
{
    int64_t rot[1];
    int n;
    if (list_complete(root, rot, 1, &n, err))
        return -1;
    rt_dir_kind kind = n == 0 ? rt_dir_kind_of(root) : RT_DIR_CHECKPOINTS;
    if (kind != RT_DIR_CHECKPOINTS && rt_dir_kind_text(kind))
        return rt_fail(err, RT_EXIT_INPUT, "%s: not a checkpoint directory: it %s", root,
                       rt_dir_kind_text(kind));
    if (n == 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s: no complete checkpoint (ckpt-N/manifest.json)",
                       root);
    each_ckpt(root, note_incomplete, &rot[0], NULL);
    *next_rotation = (uint64_t)rot[0];
    if (ckpt_dir(dir, cap, root, *next_rotation, err))
        return -1;
    return check_job(dir, app, job, 0, err);
}

typedef struct foreign_scan {
    const char *app, *job;
    rt_error *err;
    int failed;
} foreign_scan;

static void check_one(const char *root, const char *name, int64_t r, void *arg)
{
    foreign_scan *f = arg;
    char dir[4096];
    (void)r;
    if (f->failed || !is_complete(root, name))
        return;
    f->failed = rt_path_join(dir, sizeof(dir), root, name, f->err) ||
                check_job(dir, f->app, f->job, 1, f->err);
}

int rt_checkpoint_check_root(const char *root, const char *app, const char *job, rt_error *err)
{
    foreign_scan f = {.app = app, .job = job, .err = err};
    struct stat sb;
    if (!root || stat(root, &sb) != 0 || !S_ISDIR(sb.st_mode))
        return 0; /* made by the run (a file in its place: named by mkdir) */
    if (each_ckpt(root, check_one, &f, err))
        return -1;
    return f.failed ? -1 : 0;
}

static int write_manifest(const char *dir, const rt_app_desc *app, const rt_plan *plan,
                          rt_engine *eng, uint64_t next, const char *job, rt_error *err)
{
    char path[4096], id[32];
    snprintf(id, sizeof(id), "%016llx", (unsigned long long)plan->plan_id);
    json_t *j = json_pack("{s:s, s:s, s:I, s:i, s:i, s:s}", "app", app->name, "plan_id", id,
                          "next_rotation", (json_int_t)next, "ranks", rt_engine_size(eng),
                          "threads", rt_engine_threads(eng), "job", job ? job : "");
    if (!j)
        return rt_fail(err, RT_EXIT_RUNTIME, "checkpoint: cannot encode the manifest");
    int rc = manifest_path(path, sizeof(path), dir, err);
    if (rc == 0)
        rc = rt_app_write_json(path, j, err);
    json_decref(j);
    return rc;
}

/* Remove a checkpoint that is neither newer than the newest nor one of the
 * kept ones. */
typedef struct prune_keep {
    uint64_t newest;
    int64_t keep[CKPT_KEEP];
    int n;
} prune_keep;

static void prune_one(const char *root, const char *name, int64_t r, void *arg)
{
    const prune_keep *k = arg;
    int kept = (uint64_t)r > k->newest;
    for (int i = 0; i < k->n; i++)
        kept |= r == k->keep[i];
    char path[4096];
    if (!kept && rt_path_join(path, sizeof(path), root, name, NULL) == 0)
        rt_remove_tree(path);
}

/* Rank 0, after a new manifest: remove all but the newest CKPT_KEEP
 * complete checkpoints, and incomplete ones older than the newest. */
static void prune(const char *root, uint64_t newest)
{
    prune_keep k = {.newest = newest};
    if (list_complete(root, k.keep, CKPT_KEEP, &k.n, NULL) == 0)
        each_ckpt(root, prune_one, &k, NULL);
}

/* This rank's state file in dir: the head, the job, the app's sections,
 * the home blocks.  The job is in every state file, not only in the
 * manifest: a state file copied in from another run with the same plan,
 * app and split (another seed or K) was resumed from silently. */
static int state_save(const rt_app_desc *app, void *state, const rt_plan *plan, rt_engine *eng,
                      const char *dir, const char *job, uint64_t next_rotation, rt_error *err)
{
    rt_state_head h;
    rt_state_writer w;
    rt_state_io io = {.w = &w};
    rt_state_head_of(&h, app->name, plan, eng, next_rotation);
    if (rt_state_create(&w, dir, &h, err))
        return -1;
    if (rt_state_put(&w, "job", job ? job : "", job ? strlen(job) : 0, err) ||
        app->state_io(state, &io, err) || rt_state_xfer_home_blocks(&io, eng, err)) {
        rt_state_abort(&w);
        return -1;
    }
    return rt_state_commit(&w, err);
}

/* The job a state file records (was, len bytes) is `job` but for the run's
 * length. */
static int check_state_job(const char *path, const char *was, size_t len, const char *job,
                           rt_error *err)
{
    rt_field_diff d;
    char then[256], now[256];
    if (!job || !rt_fields_diff(was, len, job, strlen(job), run_length, &d))
        return 0;
    rt_field_quote(then, sizeof(then), d.a, d.a_len);
    rt_field_quote(now, sizeof(now), d.b, d.b_len);
    return rt_fail(err, RT_EXIT_INPUT,
                   "%s: this state file's job had %.*s %s, this run has %s (a state file of "
                   "another run? a resume needs the same plan, split and options)",
                   path, (int)d.name_len, d.name, then, now);
}

static int state_load(const rt_app_desc *app, void *state, const rt_plan *plan, rt_engine *eng,
                      const char *dir, const char *job, uint64_t *next_rotation, rt_error *err)
{
    rt_state_head want;
    rt_state_reader r;
    rt_state_io io = {.r = &r};
    rt_state_head_of(&want, app->name, plan, eng, 0);
    int rc = rt_state_open(&r, dir, &want, next_rotation, err);
    const void *was = NULL;
    size_t was_len = 0;
    /* Files written before the job was recorded have no "job" section: the
     * manifest's job was checked for them, as it was then. */
    if (rc == 0) {
        int has = rt_state_get_optional(&r, "job", &was, &was_len, err);
        rc = has < 0 ? -1 : has ? check_state_job(r.path, was, was_len, job, err) : 0;
    }
    if (rc == 0)
        rc = app->state_io(state, &io, err) || rt_state_xfer_home_blocks(&io, eng, err) ? -1 : 0;
    rt_state_close(&r);
    return rc;
}

/* A checkpoint that failed (here or on another rank) leaves nothing half
 * made: this rank's state file goes, and the directory with the last one
 * out (rmdir removes it only once it is empty, so never another rank's
 * file).  `together`: every rank is here (they agreed that the checkpoint
 * failed), so the directory goes only after every rank's file, never while
 * a rank is still creating its own in it. */
static int checkpoint_failed(const char *dir, rt_engine *eng, uint64_t next, int together,
                             rt_error *err)
{
    char manifest[4096];
    if (rt_engine_rank(eng) == 0 && manifest_path(manifest, sizeof(manifest), dir, NULL) == 0)
        unlink(manifest); /* it may be in place when only the sync after it failed */
    rt_state_discard(dir, (uint32_t)rt_engine_rank(eng));
    if (together)
        rt_engine_barrier(eng, NULL); /* a lost peer ends it at once */
    rmdir(dir);
    return rt_error_prefix(err, "checkpoint at rotation %" PRIu64, next);
}

/* Every rank's file is in place before the manifest makes the set count:
 * the ranks agree on whether each wrote its own (an all-reduce of one flag
 * per rank, which is also the barrier).  A rank that could not keeps its
 * own message; the others name it.  0 when every rank wrote its file. */
static int agree_all_written(rt_engine *eng, int mine_failed, rt_error *err)
{
    int P = rt_engine_size(eng), me = rt_engine_rank(eng);
    rt_error scratch = {0}, *e = mine_failed ? &scratch : err; /* keep our own cause */
    int64_t *failed = calloc((size_t)P, sizeof(*failed));
    if (!failed)
        return mine_failed ? -1 : rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    failed[me] = mine_failed;
    int rc = rt_engine_allreduce_i64(eng, failed, (size_t)P, e);
    for (int r = 0; rc == 0 && r < P; r++)
        if (failed[r] && r != me)
            rc = rt_fail(e, RT_EXIT_RUNTIME, "rank %d could not write its state (see its message)",
                         r);
    free(failed);
    return mine_failed ? -1 : rc;
}

static int checkpoint_write(const rt_app_desc *app, void *state, rt_engine *eng,
                            const rt_plan *plan, const rt_checkpoint_config *cfg, uint64_t next,
                            rt_error *err)
{
    char dir[4096];
    double t0 = rt_now();
    if (ckpt_dir(dir, sizeof(dir), cfg->dir, next, err) || rt_mkdir_p(dir, err))
        return rt_error_prefix(err, "checkpoint at rotation %" PRIu64, next);
    int saved = state_save(app, state, plan, eng, dir, cfg->job, next, err);
    if (agree_all_written(eng, saved != 0, err))
        return checkpoint_failed(dir, eng, next, 1, err);
    if (rt_engine_rank(eng) == 0) {
        /* the manifest's sync covers the names in dir; this one, dir's own name */
        if (write_manifest(dir, app, plan, eng, next, cfg->job, err) || rt_sync_dir(cfg->dir, err))
            return checkpoint_failed(dir, eng, next, 0, err);
        prune(cfg->dir, next);
        rt_info("checkpoint: rotation %" PRIu64 " written to %s in %.3fs", next, dir,
                rt_now() - t0);
    }
    return 0;
}

/* ---- the run ---- */

typedef struct ckpt_run {
    const rt_app_desc *app;
    void *state;
    const rt_plan *plan;
    const rt_checkpoint_config *cfg;
    uint64_t last_epochs; /* epochs done at the last checkpoint (or the start) */
} ckpt_run;

static uint64_t epochs_done(const ckpt_run *r, uint64_t next_rotation)
{
    return r->app->epochs_done ? r->app->epochs_done(r->state) : next_rotation;
}

static int wrap_block_home(void *p, uint32_t block, uint64_t rotation, void *payload, size_t *len,
                           rt_error *err)
{
    ckpt_run *r = p;
    return r->app->ops->block_home(r->state, block, rotation, payload, len, err);
}

static int wrap_visit(void *p, const rt_visit *v, rt_error *err)
{
    ckpt_run *r = p;
    return r->app->ops->visit(r->state, v, err);
}

static int wrap_step_end(void *p, rt_engine *eng, uint64_t rotation, uint32_t step, rt_error *err)
{
    ckpt_run *r = p;
    return r->app->ops->step_end(r->state, eng, rotation, step, err);
}

static int wrap_rotation_end(void *p, rt_engine *eng, uint64_t rotation,
                             const rt_rotation_stats *st, int *stop, rt_error *err)
{
    ckpt_run *r = p;
    if (r->app->ops->rotation_end(r->state, eng, rotation, st, stop, err))
        return -1;
    uint64_t next = rotation + 1, done = epochs_done(r, next);
    /* Also at the end, so a finished run can be continued further. */
    if (!*stop && (done == r->last_epochs || done % r->cfg->every != 0))
        return 0;
    r->last_epochs = done;
    return checkpoint_write(r->app, r->state, eng, r->plan, r->cfg, next, err);
}

/* A run resumed from the checkpoint its end wrote has nothing left to
 * train: the engine would run a rotation before asking the app to stop. */
static int resumed_finished(const rt_app_desc *app, const void *state, rt_engine *eng)
{
    uint64_t start = rt_engine_first_rotation(eng);
    if (start == 0 || !app->finished || !app->finished(state, start))
        return 0;
    if (rt_engine_rank(eng) == 0)
        rt_info("resume: the checkpoint is at the end of the run (rotation %" PRIu64
                "): nothing left to train",
                start);
    return 1;
}

int rt_app_run(const rt_app_desc *app, void *state, rt_engine *eng, const rt_plan *plan,
               const rt_checkpoint_config *cfg, rt_error *err)
{
    if (resumed_finished(app, state, eng))
        return 0;
    if (!cfg || !cfg->dir)
        return rt_engine_run(eng, app->ops, state, err);
    if (!app->state_io)
        return rt_fail(err, RT_EXIT_INPUT, "--app %s cannot write checkpoints", app->name);
    if (cfg->every == 0)
        return rt_fail(err, RT_EXIT_INPUT, "--checkpoint-every must be at least 1");
    if (rt_mkdir_p(cfg->dir, err))
        return -1;
    uint64_t start = rt_engine_first_rotation(eng);
    ckpt_run r = {.app = app, .state = state, .plan = plan, .cfg = cfg};
    r.last_epochs = epochs_done(&r, start);
    rt_app_ops ops = *app->ops;
    ops.block_home = wrap_block_home;
    ops.visit = wrap_visit;
    ops.step_end = app->ops->step_end ? wrap_step_end : NULL;
    ops.rotation_end = wrap_rotation_end;
    return rt_engine_run(eng, &ops, &r, err);
}

int rt_resume_past_length(rt_error *err, const char *unit, uint64_t done, const char *option,
                          unsigned length)
{
    return rt_fail(err, RT_EXIT_INPUT,
                   "the checkpoint is after %s %" PRIu64 ", past this run's %s %u (a resume "
                   "continues a run: give at least its length, or start without --resume)",
                   unit, done, option, length);
}

int rt_app_resume(const rt_app_desc *app, void *state, rt_engine *eng, const rt_plan *plan,
                  const char *dir, const char *job, uint64_t next_rotation, rt_error *err)
{
    uint64_t got;
    if (!app->state_io)
        return rt_fail(err, RT_EXIT_INPUT, "--app %s cannot resume", app->name);
    if (state_load(app, state, plan, eng, dir, job, &got, err))
        return -1;
    if (got != next_rotation)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: state files continue at rotation %" PRIu64
                       ", the manifest says %" PRIu64,
                       dir, got, next_rotation);
    if (app->check_length && app->check_length(state, got, err))
        return rt_error_prefix(err, "%s", dir);
    if (rt_engine_rank(eng) == 0)
        rt_info("resume: %s from %s, continuing at rotation %" PRIu64, app->name, dir, got);
    return 0;
}
