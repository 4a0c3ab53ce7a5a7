/* guard.c - interrupted or failed commands leave nothing behind; a mapped
 * plan file changed underneath a job stops it with a message, not SIGBUS.
 * See guard.h.  Process-wide state is fine here: tools/ is the program. */
#define _GNU_SOURCE
#include "tools/guard.h"
#include "tools/commands.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define MAX_OUTPUTS 8

typedef struct output {
    char path[4096];
    int existed; /* before this run */
} output;

static output outputs[MAX_OUTPUTS];
static int n_outputs;

void rt_guard_output(const char *path)
{
    if (!path || !*path || !strcmp(path, "-") || n_outputs == MAX_OUTPUTS)
        return;
    output *o = &outputs[n_outputs++];
    snprintf(o->path, sizeof(o->path), "%s", path);
    struct stat sb;
    o->existed = stat(path, &sb) == 0;
}

/* Outputs a run adds to and never removes (a checkpoint root: the
 * checkpoints of an interrupted run are what a resume needs).  Only
 * temporaries go, in the root and in its subdirectories (ckpt-N). */
#define MAX_KEPT 2
static char kept[MAX_KEPT][4096];
static int n_kept;

void rt_guard_kept_output(const char *root)
{
    if (root && *root && strcmp(root, "-") && n_kept < MAX_KEPT)
        snprintf(kept[n_kept++], sizeof(kept[0]), "%s", root);
}

/* visit(dir, arg) for each kept root and each directory one level under it. */
static void each_kept_dir(void (*visit)(const char *dir, const char *arg), const char *arg)
{
    for (int i = 0; i < n_kept; i++) {
        visit(kept[i], arg);
        DIR *d = opendir(kept[i]);
        struct dirent *de;
        while (d && (de = readdir(d))) {
            char sub[8192];
            struct stat sb;
            if (de->d_name[0] == '.' ||
                snprintf(sub, sizeof(sub), "%s/%s", kept[i], de->d_name) >= (int)sizeof(sub) ||
                lstat(sub, &sb) != 0 || !S_ISDIR(sb.st_mode))
                continue;
            visit(sub, arg);
        }
        if (d)
            closedir(d);
    }
}

/* The temporaries in dir that runs killed outright left (NAME.tmp.PID,
 * NAME.tmp-PID-*): each NAME's are removed when no live process holds them. */
static void remove_stale_in(const char *dir, const char *unused)
{
    (void)unused;
    DIR *d = opendir(dir);
    struct dirent *de;
    while (d && (de = readdir(d))) {
        const char *t = strstr(de->d_name, ".tmp");
        char base[8192];
        if (t && t > de->d_name &&
            snprintf(base, sizeof(base), "%s/%.*s", dir, (int)(t - de->d_name), de->d_name) <
                (int)sizeof(base))
            rt_remove_stale_temporaries(base);
    }
    if (d)
        closedir(d);
}

/* Does `name` belong to this process as a temporary of `base`?  Named as
 * rt_temporary_of knows them, so BASE.tmp-PID-old, which may be all that is
 * left of the previous output in the middle of a two-rename swap, stays. */
static int own_temporary(const char *name, const char *base)
{
    long pid = 0;
    return rt_temporary_of(name, base, &pid) && pid == (long)getpid();
}

/* Remove this process's temporaries in `dir` whose names start with `base`
 * ("" = any name: the temporaries of files written inside an output dir). */
static void remove_temporaries(const char *dir, const char *base, const char *pid)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    struct dirent *de;
    while ((de = readdir(d))) {
        int mine = *base ? own_temporary(de->d_name, base) : 0;
        if (!*base) { /* NAME.tmp.PID for any NAME */
            const char *t = strstr(de->d_name, ".tmp.");
            mine = t && !strcmp(t + 5, pid);
        }
        if (!mine)
            continue;
        char path[8192];
        snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
        rt_remove_tree(path);
    }
    closedir(d);
}

static void remove_own_temporaries_in(const char *dir, const char *pid)
{
    remove_temporaries(dir, "", pid);
}

static void remove_partial_outputs(void)
{
    char pid[32];
    snprintf(pid, sizeof(pid), "%d", (int)getpid());
    each_kept_dir(remove_own_temporaries_in, pid);
    for (int i = 0; i < n_outputs; i++) {
        output *o = &outputs[i];
        char dir[sizeof(o->path)];
        memcpy(dir, o->path, sizeof(dir)); /* same size, NUL-terminated */
        char *slash = strrchr(dir, '/');
        const char *base = slash ? slash + 1 : o->path;
        if (slash == dir)
            dir[1] = '\0';
        else if (slash)
            *slash = '\0';
        else
            snprintf(dir, sizeof(dir), ".");
        if (*base)
            remove_temporaries(dir, base, pid);
        struct stat sb;
        if (stat(o->path, &sb) != 0)
            continue;
        if (S_ISDIR(sb.st_mode))
            remove_temporaries(o->path, "", pid);
        /* Created by this run: removed.  One that existed stays: either
         * still the previous output, or (outputs are only ever swapped in
         * whole, by rename) this run's result, whose predecessor is gone:
         * the user keeps the new one rather than none, whatever failed
         * after (a parent's fsync, a peer lost in the last barrier, a
         * signal).  One that appeared meanwhile but that this process did
         * not put there stays too: another process's (a second job with
         * the same --out, a rank started twice, which fails long after the
         * job it doubled saved its model). */
        if (!o->existed && rt_put_in_place_here(o->path))
            rt_remove_tree(o->path);
    }
}

/* The handler only passes the signal number down a pipe; the watcher
 * thread does the removal in normal context.  (Blocking the signals and
 * sigwait() would not do: libraries such as OpenBLAS start threads before
 * main() whose masks we do not control.) */
static int signal_pipe[2] = {-1, -1};
static volatile sig_atomic_t interrupted;

static void on_interrupt(int sig)
{
    unsigned char b = (unsigned char)sig;
    int saved = errno;
    interrupted = 1;
    if (write(signal_pipe[1], &b, 1) < 0) {
        /* nothing more a handler can do */
    }
    errno = saved;
}

static void *watch_signals(void *arg)
{
    (void)arg;
    unsigned char b;
    ssize_t n;
    do
        n = read(signal_pipe[0], &b, 1);
    while (n < 0 && errno == EINTR);
    if (n != 1)
        return NULL;
    int sig = b;
    /* The command may still be running: nothing it finishes from now on is
     * put in place (a model swapped in while we remove its parts would be
     * torn), and a directory it refills while we empty it survives one
     * pass, not the next few (its writes then fail). */
    rt_commits_stop();
    for (int pass = 0; pass < 50; pass++)
        remove_partial_outputs();
    fprintf(stderr, "rotor: interrupted (%s); partial output removed\n", strsignal(sig));
    signal(sig, SIG_DFL);
    raise(sig); /* end the process the way the signal would have */
    _exit(128 + sig);
}

/* Once interrupted, the process ends by the signal, after the watcher has
 * cleaned up: a command that finishes or fails meanwhile waits for it. */
static void wait_if_interrupted(void)
{
    while (interrupted)
        pause();
}

int rt_guard_start(rt_error *err)
{
    /* What killed runs (SIGKILL: no watcher) left next to our outputs. */
    for (int i = 0; i < n_outputs; i++)
        rt_remove_stale_temporaries(outputs[i].path);
    each_kept_dir(remove_stale_in, NULL);
    if (atexit(wait_if_interrupted) != 0)
        return rt_fail(err, RT_EXIT_RUNTIME, "cannot register the exit hook");
    if (pipe2(signal_pipe, O_CLOEXEC) != 0)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "cannot start the signal watcher");
    pthread_t t;
    int e = pthread_create(&t, NULL, watch_signals, NULL);
    if (e == 0)
        e = pthread_detach(t);
    if (e != 0)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, e, "cannot start the signal watcher");
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++) {
        struct sigaction sa;
        memset(&sa, 0, sizeof(sa));
        sa.sa_handler = on_interrupt;
        sa.sa_flags = SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(sigs[i], &sa, NULL) != 0)
            return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "cannot install a signal handler");
    }
    return 0;
}

int rt_guard_interrupted(void)
{
    return interrupted != 0;
}

void rt_guard_die(const rt_error *err)
{
    if (interrupted)
        wait_if_interrupted(); /* the watcher reports and removes */
    remove_partial_outputs();
    rt_die(err);
}

/* ---- mapped plan files ---- */

typedef struct mapped {
    char path[4200];
    dev_t dev;
    ino_t ino;
    off_t size;
} mapped;

static mapped *maps;
static size_t n_maps;

static void say(const char *s)
{
    size_t n = strlen(s);
    while (n > 0) {
        ssize_t w = write(2, s, n);
        if (w <= 0)
            return;
        s += w;
        n -= (size_t)w;
    }
}

/* Only async-signal-safe calls: stat, write, _exit. */
static void on_sigbus(int sig, siginfo_t *si, void *ctx)
{
    (void)si;
    (void)ctx;
    for (size_t i = 0; i < n_maps; i++) {
        struct stat sb;
        if (stat(maps[i].path, &sb) == 0 && sb.st_dev == maps[i].dev && sb.st_ino == maps[i].ino &&
            sb.st_size == maps[i].size)
            continue;
        say("rotor: error: ");
        say(maps[i].path);
        say(": changed while the job was reading it (truncated or rewritten in place); "
            "stopping\n");
        _exit(RT_EXIT_INPUT);
    }
    /* No plan file changed: a genuine fault; let it end the process as such. */
    signal(sig, SIG_DFL);
}

static void remember(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return;
    mapped *m = &maps[n_maps++];
    snprintf(m->path, sizeof(m->path), "%s", path);
    m->dev = sb.st_dev;
    m->ino = sb.st_ino;
    m->size = sb.st_size;
}

void rt_guard_mapped_plan(const rt_plan *plan)
{
    free(maps);
    n_maps = 0;
    maps = calloc((size_t)plan->workers + 1, sizeof(*maps));
    if (!maps)
        return; /* no names then, but nothing worse than before */
    char path[4200];
    snprintf(path, sizeof(path), "%s/layout.bin", plan->dir);
    remember(path);
    for (uint32_t w = 0; w < plan->workers; w++) {
        snprintf(path, sizeof(path), "%s/shard-%05u.bin", plan->dir, w);
        remember(path);
    }
    struct sigaction sa;
    memset(&sa, 0, sizeof(sa));
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGBUS, &sa, NULL);
}
