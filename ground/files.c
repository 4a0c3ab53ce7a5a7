/* files.c - atomic output files, directory helpers, aligned memory, checksums,
 * and the strict number parsers the command line uses. */
#define _GNU_SOURCE
#include "ground/ground.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <ftw.h>
#include <limits.h>
#include <math.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <xxhash.h>

void *rt_alloc(size_t bytes)
{
    void *p = NULL;
    size_t n = rt_round_up(bytes ? bytes : 1, RT_ALIGN);
    if (posix_memalign(&p, RT_ALIGN, n) != 0)
        return NULL;
    memset(p, 0, n);
    return p;
}

void rt_free(void *p)
{
    free(p);
}

/* An anonymous mapping: the kernel hands out zero pages on first touch,
 * where rt_alloc's memset would fault every page in at once. */
void *rt_alloc_untouched(size_t bytes)
{
    void *p =
        mmap(NULL, bytes ? bytes : 1, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    return p == MAP_FAILED ? NULL : p;
}

void rt_free_untouched(void *p, size_t bytes)
{
    if (p)
        munmap(p, bytes ? bytes : 1);
}

/* A part's bytes as rt_alloc rounds them; 0 when they cannot be had. */
static uint64_t part_bytes(const rt_part *p)
{
    uint64_t b;
    if (rt_mul_overflows(p->count, p->elem, &b) || b > RT_SIZE_LIMIT - RT_ALIGN)
        return 0;
    return rt_round_up(b ? b : 1, RT_ALIGN);
}

void *rt_alloc_parts(const rt_part *parts, size_t n_parts)
{
    uint64_t total = 0;
    for (size_t i = 0; i < n_parts; i++) {
        uint64_t b = part_bytes(&parts[i]);
        if (!b || rt_add_overflows(total, b, &total) || total > RT_SIZE_LIMIT)
            return NULL;
    }
    char *base = rt_alloc(total);
    if (!base)
        return NULL;
    for (size_t i = 0, off = 0; i < n_parts; off += part_bytes(&parts[i]), i++)
        *parts[i].at = base + off;
    return base;
}

uint64_t rt_checksum(const void *data, size_t len)
{
    return XXH3_64bits(data, len);
}

/* Read size for checksums: big enough that the syscalls cost nothing next
 * to the hash, small enough not to show in a saving rank's peak RSS (a
 * model part is checksummed while the rank still holds its whole share). */
#define CHECKSUM_CHUNK (64 << 10)

int rt_file_checksum(const char *path, uint64_t *bytes, uint64_t *check, rt_error *err)
{
    FILE *fp = rt_fopen_read(path, RT_READ_OWN, err);
    if (!fp)
        return -1;
    XXH3_state_t *st = XXH3_createState();
    char *buf = malloc(CHECKSUM_CHUNK);
    int rc = 0;
    if (!st || !buf || XXH3_64bits_reset(st) == XXH_ERROR) {
        rc = rt_fail(err, RT_EXIT_RUNTIME, "%s: out of memory", path);
        goto out;
    }
    size_t n;
    *bytes = 0;
    while ((n = fread(buf, 1, CHECKSUM_CHUNK, fp)) > 0) {
        XXH3_64bits_update(st, buf, n);
        *bytes += n;
    }
    if (ferror(fp))
        rc = rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: read failed", path);
    *check = XXH3_64bits_digest(st);
out:
    free(buf);
    XXH3_freeState(st);
    fclose(fp);
    return rc;
}

/* A node that gives bytes only while someone writes them, or never. */
static const char *not_a_file(mode_t mode)
{
    return S_ISFIFO(mode)   ? "a FIFO"
           : S_ISSOCK(mode) ? "a socket"
           : S_ISCHR(mode)  ? "a character device"
           : S_ISBLK(mode)  ? "a block device"
                            : NULL;
}

static int clear_nonblock(int fd)
{
    int flags = fcntl(fd, F_GETFL);
    return flags == -1 ? -1 : fcntl(fd, F_SETFL, flags & ~O_NONBLOCK);
}

/* A file rotor wrote is opened O_NONBLOCK, so that a FIFO standing in its
 * place does not hold open() until a writer comes; it is checked on the
 * descriptor (no window between a stat and the open), then made blocking. */
static int open_own(const char *path, rt_error *err)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot open", path);
    struct stat sb;
    const char *what = NULL;
    int e = 0;
    if (fstat(fd, &sb) != 0)
        e = errno;
    else if (!(what = not_a_file(sb.st_mode)) && clear_nonblock(fd) != 0)
        e = errno;
    if (!e && !what)
        return fd;
    close(fd);
    if (e)
        return rt_fail_errno(err, RT_EXIT_INPUT, e, "%s: cannot open", path);
    return rt_fail(err, RT_EXIT_INPUT,
                   "%s: %s, not a file: rotor reads what it wrote (plans, models, "
                   "checkpoints, metrics) from regular files",
                   path, what);
}

int rt_open_read(const char *path, rt_read_kind kind, rt_error *err)
{
    if (kind == RT_READ_OWN)
        return open_own(path, err);
    /* Data may come through a FIFO; open() waits there for the writer, so
     * say why nothing happens until it comes.  (A stat before the open:
     * only the message depends on it.) */
    struct stat sb;
    if (stat(path, &sb) == 0 && S_ISFIFO(sb.st_mode))
        rt_info("%s: a FIFO or pipe: reading it as a stream (once its writer opens it)", path);
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot open", path);
    return fd;
}

FILE *rt_fopen_read(const char *path, rt_read_kind kind, rt_error *err)
{
    int fd = rt_open_read(path, kind, err);
    if (fd < 0)
        return NULL;
    FILE *fp = fdopen(fd, "rb");
    if (!fp) {
        rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot open", path);
        close(fd);
    }
    return fp;
}

int rt_is_stdio(const char *path)
{
    return path && !strcmp(path, "-");
}

int rt_stdin_dup(rt_error *err)
{
    int flags = fcntl(STDIN_FILENO, F_GETFL);
    if (flags == -1 || (flags & O_ACCMODE) == O_WRONLY)
        return rt_fail(err, RT_EXIT_INPUT, "standard input: closed (nothing to read)");
    int fd = fcntl(STDIN_FILENO, F_DUPFD_CLOEXEC, 0);
    if (fd < 0)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "standard input: cannot open");
    return fd;
}

/* A device or FIFO: written as it is, never replaced. */
static int open_in_place(rt_outfile *of, rt_error *err)
{
    of->tmp[0] = '\0';
    of->fp = fopen(of->path, "wb");
    if (!of->fp)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot open for writing", of->path);
    of->in_place = 1;
    return 0;
}

/* path with its directory resolved (the file itself need not exist yet):
 * "./x.txt", "x.txt" and "x.txt/" compare equal.  0, or -1 when the directory is not there. */
static int resolved_name(const char *name, char *out, size_t cap)
{
    char real[PATH_MAX];
    rt_path_parts pp; /* "m/" names m, as "m" does */
    if (rt_split_parent(name, &pp) || !realpath(pp.dir, real))
        return -1;
    return snprintf(out, cap, "%s/%s", real, pp.base) < (int)cap ? 0 : -1;
}

int rt_same_file(const char *a, const char *b)
{
    struct stat sa, sb;
    char ra[PATH_MAX + 256], rb[PATH_MAX + 256];
    if (!strcmp(a, b))
        return 1;
    if (stat(a, &sa) == 0 && stat(b, &sb) == 0)
        return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
    return resolved_name(a, ra, sizeof(ra)) == 0 && resolved_name(b, rb, sizeof(rb)) == 0 &&
           !strcmp(ra, rb);
}

int rt_path_absolute(const char *path, char *out, size_t cap)
{
    char cwd[PATH_MAX], joined[PATH_MAX * 2];
    if (path[0] != '/' && !getcwd(cwd, sizeof(cwd)))
        return -1;
    if (snprintf(joined, sizeof(joined), "%s/%s", path[0] == '/' ? "" : cwd, path) >=
        (int)sizeof(joined))
        return -1;
    size_t n = 0; /* out[0..n): "" for the root, else "/a/b" */
    for (char *save = NULL, *c = strtok_r(joined, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
        if (!strcmp(c, "."))
            continue;
        if (!strcmp(c, "..")) {
            while (n > 0 && out[--n] != '/')
                ;
            continue;
        }
        size_t len = strlen(c);
        if (n + 1 + len + 1 > cap)
            return -1;
        out[n++] = '/';
        memcpy(out + n, c, len);
        n += len;
    }
    out[n] = '\0';
    return 0;
}

int rt_path_inside(const char *path, const char *dir)
{
    char p[PATH_MAX * 2], d[PATH_MAX * 2];
    if (rt_path_absolute(path, p, sizeof(p)) || rt_path_absolute(dir, d, sizeof(d)))
        return 0;
    struct stat sd, sa;
    int dir_exists = stat(dir, &sd) == 0;
    for (char *slash = strrchr(p, '/'); slash; slash = strrchr(p, '/')) {
        *slash = '\0'; /* p is now the next ancestor ("" for the root) */
        const char *ancestor = *p ? p : "/";
        if (!strcmp(ancestor, *d ? d : "/"))
            return 1;
        if (dir_exists && stat(ancestor, &sa) == 0 && sa.st_dev == sd.st_dev &&
            sa.st_ino == sd.st_ino)
            return 1;
        if (!*p)
            break;
    }
    return 0;
}

/* fsync a directory, so that the names in it survive a crash. */
int rt_sync_dir(const char *dir, rt_error *err)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot open", dir);
    int rc = fsync(fd);
    int e = errno;
    close(fd);
    if (rc != 0 && e != EINVAL) /* some filesystems cannot sync directories */
        return rt_fail_errno(err, RT_EXIT_RUNTIME, e, "%s: fsync", dir);
    return 0;
}

int rt_split_parent(const char *path, rt_path_parts *pp)
{
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/') /* "out/": rename(2)'s name is "out" */
        n--;
    if (n == 0 || n >= sizeof(pp->path))
        return -1;
    memcpy(pp->path, path, n);
    pp->path[n] = '\0';
    const char *slash = strrchr(pp->path, '/');
    pp->base = slash ? slash + 1 : pp->path; /* "/": "" */
    if (!slash) {
        snprintf(pp->dir, sizeof(pp->dir), ".");
        return 0;
    }
    size_t d = (size_t)(slash - pp->path);
    while (d > 0 && pp->path[d - 1] == '/') /* "a//b": the parent is "a" */
        d--;
    snprintf(pp->dir, sizeof(pp->dir), "%.*s", (int)(d ? d : 1), pp->path);
    return 0;
}

int rt_sync_parent(const char *path, rt_error *err)
{
    rt_path_parts pp;
    if (rt_split_parent(path, &pp))
        return rt_fail(err, RT_EXIT_INPUT, "%s: bad path name", path);
    return rt_sync_dir(pp.dir, err);
}

/* ------------------------------------------------------------ temporaries */

static int is_digit(char c)
{
    return c >= '0' && c <= '9';
}

int rt_hold_temporary(int fd)
{
    return flock(fd, LOCK_EX | LOCK_NB);
}

int rt_hold_dir(const char *dir)
{
    int fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd >= 0)
        rt_hold_temporary(fd); /* where locks are unsupported: no proof, no cleaning */
    return fd;
}

void rt_release_dir(int fd)
{
    if (fd >= 0)
        close(fd);
}

int rt_temporary_of(const char *name, const char *base, long *pid)
{
    size_t b = strlen(base), i = 0;
    if (strncmp(name, base, b) || strncmp(name + b, ".tmp", 4))
        return 0;
    const char *rest = name + b + 4;
    char sep = rest[0];
    if (sep != '.' && sep != '-')
        return 0;
    for (i = 1; is_digit(rest[i]); i++)
        ;
    if (i == 1)
        return 0;
    *pid = i <= 10 ? strtol(rest + 1, NULL, 10) : 0;
    if (sep == '.')
        return rest[i] == '\0';
    if (rest[i] != '-' || !rest[i + 1] || !strcmp(rest + i + 1, "old"))
        return 0;
    for (const char *t = rest + i + 1; *t; t++)
        if (!is_digit(*t) && !((*t | 0x20) >= 'a' && (*t | 0x20) <= 'z'))
            return 0;
    return 1;
}

/* Is process `pid` alive on this host?  A run makes its temporary, then
 * locks it: in between, only its PID shows that it is not stale.  (On a
 * shared file system another host's PID proves nothing either way, so the
 * lock is still what decides.) */
static int pid_alive(long pid)
{
    return pid > 0 && pid <= INT_MAX && (kill((pid_t)pid, 0) == 0 || errno == EPERM);
}

/* Remove dir/name when no process holds it (the lock is ours, then). */
static int remove_if_unheld(const char *dir, const char *name)
{
    char path[8192];
    if (snprintf(path, sizeof(path), "%s/%s", dir, name) >= (int)sizeof(path))
        return 0;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return 0;
    int stale = flock(fd, LOCK_EX | LOCK_NB) == 0;
    if (stale) {
        rt_remove_tree(path);
        rt_info("%s: removed: the temporary of an earlier run that was killed", path);
    }
    close(fd);
    return stale;
}

/* Is `name` BASE.tmp-PID-old, the previous output moved aside while
 * rt_dir_replace swaps a directory in two renames?  (Parsed as the same
 * name with another tag, by the one parser of temporary names.) */
static int swap_leftover_of(const char *name, const char *base, long *pid)
{
    size_t n = strlen(name);
    char probe[NAME_MAX + 8];
    if (n < 4 || n > NAME_MAX || strcmp(name + n - 4, "-old"))
        return 0;
    snprintf(probe, sizeof(probe), "%.*s-x", (int)(n - 4), name);
    return rt_temporary_of(probe, base, pid);
}

/* A stale temporary of `base` in dir: its run is not alive here.  A swap's
 * BASE.tmp-PID-old counts only while BASE itself is in place (the run died
 * after the new output took its place); without BASE it is all that is left
 * of the previous output, and stays. */
static int stale(const char *dir, const char *name, const char *base)
{
    long pid = 0;
    if (rt_temporary_of(name, base, &pid))
        return !pid_alive(pid);
    char path[8192];
    struct stat sb;
    return swap_leftover_of(name, base, &pid) && !pid_alive(pid) &&
           snprintf(path, sizeof(path), "%s/%s", dir, base) < (int)sizeof(path) &&
           lstat(path, &sb) == 0;
}

int rt_remove_stale_temporaries(const char *out)
{
    rt_path_parts pp;
    if (rt_split_parent(out, &pp))
        return 0;
    const char *dir = pp.dir, *base = pp.base;
    DIR *d = base[0] && strcmp(base, ".") && strcmp(base, "..") ? opendir(dir) : NULL;
    if (!d)
        return 0;
    int removed = 0;
    struct dirent *de;
    while ((de = readdir(d)))
        if (stale(dir, de->d_name, base))
            removed += remove_if_unheld(dir, de->d_name);
    closedir(d);
    return removed;
}

int rt_tmp_dir_name(const char *out, int pid, const char *tag, char *buf, size_t cap, rt_error *err)
{
    rt_path_parts pp;
    if (rt_split_parent(out, &pp))
        return rt_fail(err, RT_EXIT_INPUT, "%s: bad directory name", out);
    if ((size_t)snprintf(buf, cap, "%s.tmp-%d-%s", pp.path, pid, tag) >= cap)
        return rt_fail(err, RT_EXIT_INPUT, "%s: path too long", out);
    return 0;
}

/* ---- the commit gate (rt_commits_stop) ---- */

static pthread_mutex_t commit_mu = PTHREAD_MUTEX_INITIALIZER;
static int commits_stopped;

void rt_commits_stop(void)
{
    pthread_mutex_lock(&commit_mu);
    commits_stopped = 1;
    pthread_mutex_unlock(&commit_mu);
}

/* 0 with the gate held (gate_leave after the rename), or -1 with err. */
static int gate_enter(const char *path, rt_error *err)
{
    pthread_mutex_lock(&commit_mu);
    if (!commits_stopped)
        return 0;
    pthread_mutex_unlock(&commit_mu);
    return rt_fail(err, RT_EXIT_RUNTIME, "%s: not put in place: the command is interrupted", path);
}

static void gate_leave(void)
{
    pthread_mutex_unlock(&commit_mu);
}

/* What this process put in place: the identity of the last output it put
 * at each path (a metrics file rewritten every epoch is one entry), under
 * commit_mu.  Outputs are few; past PLACED_MAX the oldest entry goes. */
#define PLACED_MAX 32
typedef struct placed_output {
    char path[4096];
    dev_t dev;
    ino_t ino;
} placed_output;
static placed_output placed[PLACED_MAX];
static unsigned n_placed;

/* Called with the gate held, after the rename that put `id` at `path`
 * (NULL: its identity is unknown, nothing to note). */
static void placed_at(const char *path, const struct stat *id)
{
    if (!id)
        return;
    placed_output *p = NULL;
    for (unsigned i = 0; i < n_placed && i < PLACED_MAX && !p; i++)
        if (strcmp(placed[i].path, path) == 0)
            p = &placed[i];
    if (!p)
        p = &placed[n_placed++ % PLACED_MAX];
    snprintf(p->path, sizeof(p->path), "%s", path);
    p->dev = id->st_dev;
    p->ino = id->st_ino;
}

int rt_put_in_place_here(const char *path)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return 0;
    int here = 0;
    pthread_mutex_lock(&commit_mu);
    for (unsigned i = 0; i < n_placed && i < PLACED_MAX; i++)
        here |= placed[i].dev == sb.st_dev && placed[i].ino == sb.st_ino;
    pthread_mutex_unlock(&commit_mu);
    return here;
}

static int dir_replace(const char *tmp, const char *out, const struct stat *id, rt_error *err);

int rt_dir_replace(const char *tmp, const char *out, rt_error *err)
{
    struct stat id; /* (no tmp: the rename names it) */
    int known = stat(tmp, &id) == 0;
    if (gate_enter(out, err))
        return -1;
    int rc = dir_replace(tmp, out, known ? &id : NULL, err);
    gate_leave();
    return rc;
}

/* `id`: tmp's identity (or NULL), noted once tmp is at `out`, also when
 * the sync after the rename fails: the output is in place then. */
static int dir_replace(const char *tmp, const char *out, const struct stat *id, rt_error *err)
{
    char old[4200];
    rt_path_parts pp;
    if (rt_split_parent(out, &pp))
        return rt_fail(err, RT_EXIT_INPUT, "%s: bad directory name", out);
    const char *target = pp.path; /* "out/": the rename's target is "out" */
    if (renameat2(AT_FDCWD, tmp, AT_FDCWD, target, RENAME_EXCHANGE) == 0) {
        placed_at(target, id);
        rt_remove_tree(tmp); /* now the previous one */
        return rt_sync_dir(pp.dir, err);
    }
    if (errno == ENOENT) {
        if (rename(tmp, target) != 0)
            return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot rename to %s", tmp,
                                 target);
        placed_at(target, id);
        return rt_sync_dir(pp.dir, err);
    }
    if (errno != EINVAL && errno != ENOSYS && errno != EOPNOTSUPP)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot exchange with %s", tmp,
                             target);
    /* No exchange here: for a moment there is nothing at all, never a mix. */
    snprintf(old, sizeof(old), "%s.tmp-%d-old", target, (int)getpid());
    if (rename(target, old) != 0)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot rename to %s", target, old);
    if (rename(tmp, target) != 0) {
        int e = errno;
        if (rename(old, target) != 0)
            rt_warn("%s: could not put the previous one back from %s", target, old);
        return rt_fail_errno(err, RT_EXIT_RUNTIME, e, "%s: cannot rename to %s", tmp, target);
    }
    placed_at(target, id);
    rt_remove_tree(old);
    return rt_sync_dir(pp.dir, err);
}

int rt_outfile_open(rt_outfile *of, const char *path, rt_error *err)
{
    memset(of, 0, sizeof(*of));
    if (rt_is_stdio(path)) {
        snprintf(of->path, sizeof(of->path), "standard output");
        of->fp = stdout;
        return 0;
    }
    if (snprintf(of->path, sizeof(of->path), "%s", path) >= (int)sizeof(of->path) ||
        snprintf(of->tmp, sizeof(of->tmp), "%s.tmp.%d", path, (int)getpid()) >=
            (int)sizeof(of->tmp))
        return rt_fail(err, RT_EXIT_INPUT, "%s: path too long", path);
    struct stat sb;
    int exists = stat(path, &sb) == 0;
    if (exists && S_ISDIR(sb.st_mode)) /* else the rename fails after the work */
        return rt_fail(err, RT_EXIT_INPUT, "%s: is a directory", path);
    if (exists && !S_ISREG(sb.st_mode))
        return open_in_place(of, err);
    /* O_EXCL: never write through a link planted at the temporary's name. */
    unlink(of->tmp);
    int fd = open(of->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
    if (fd >= 0)
        rt_hold_temporary(fd); /* until the rename: a live run's temporary is never stale */
    of->fp = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (!of->fp) {
        int e = errno;
        if (fd >= 0) {
            close(fd);
            unlink(of->tmp);
        }
        return rt_fail_errno(err, RT_EXIT_INPUT, e, "%s: cannot create", path);
    }
    return 0;
}

/* Standard output is flushed, not synced or closed: it may be a pipe.  A
 * device written in place is flushed and closed. */
static int commit_stdout(rt_outfile *of, rt_error *err)
{
    FILE *fp = of->fp;
    of->fp = NULL;
    int bad = fflush(fp) != 0 || ferror(fp);
    int e = errno;
    if (of->in_place && fclose(fp) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    if (bad)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, e, "%s: write failed", of->path);
    return 0;
}

static int commit(rt_outfile *of, int sync, rt_error *err)
{
    int rc = 0;
    if (!of->tmp[0])
        return commit_stdout(of, err);
    if (fflush(of->fp) != 0 || (sync && fsync(fileno(of->fp)) != 0))
        rc = rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: write failed", of->path);
    /* renamed while still open, so still held (rt_hold_temporary) */
    if (rc == 0 && gate_enter(of->path, err) != 0) {
        rc = -1;
    } else if (rc == 0) {
        struct stat id;
        int known = fstat(fileno(of->fp), &id) == 0;
        if (rename(of->tmp, of->path) != 0)
            rc = rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: rename failed", of->path);
        else
            placed_at(of->path, known ? &id : NULL);
        gate_leave();
    }
    if (fclose(of->fp) != 0 && rc == 0)
        rc = rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: close failed", of->path);
    of->fp = NULL;
    if (rc != 0) {
        unlink(of->tmp);
        return rc;
    }
    /* the new name too must survive a power cut, not only the bytes */
    return sync ? rt_sync_parent(of->path, err) : 0;
}

int rt_outfile_commit(rt_outfile *of, rt_error *err)
{
    return commit(of, 1, err);
}

int rt_outfile_commit_unsynced(rt_outfile *of, rt_error *err)
{
    return commit(of, 0, err);
}

void rt_outfile_abort(rt_outfile *of)
{
    if (!of->tmp[0]) { /* standard output stays open; a device is closed */
        if (of->in_place && of->fp)
            fclose(of->fp);
        of->fp = NULL;
        return;
    }
    if (of->fp)
        fclose(of->fp);
    of->fp = NULL;
    if (of->tmp[0])
        unlink(of->tmp);
}

int rt_write_all(FILE *fp, const void *buf, size_t len, const char *path, rt_error *err)
{
    if (len && fwrite(buf, 1, len, fp) != len)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: write failed", path);
    return 0;
}

int rt_outfile_copy_from(rt_outfile *of, FILE *in, const char *in_path, uint64_t *newlines,
                         char *last, rt_error *err)
{
    char buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof(buf), in)) > 0) {
        if (newlines)
            for (size_t i = 0; i < n; i++)
                *newlines += buf[i] == '\n';
        if (last)
            *last = buf[n - 1];
        if (rt_write_all(of->fp, buf, n, of->path, err))
            return -1;
    }
    if (ferror(in))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: read failed", in_path);
    return 0;
}

int rt_write_check(FILE *fp, const char *path, rt_error *err)
{
    errno = 0;
    int flush_failed = fflush(fp) != 0;
    int e = errno;
    if (!flush_failed && !ferror(fp))
        return 0;
    if (e)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, e, "%s: write failed", path);
    return rt_fail(err, RT_EXIT_RUNTIME, "%s: write failed", path);
}

static int remove_entry(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
    (void)st;
    (void)flag;
    (void)ftw;
    return remove(path);
}

int rt_remove_tree(const char *path)
{
    return nftw(path, remove_entry, 16, FTW_DEPTH | FTW_PHYS);
}

int rt_mkdir_p(const char *path, rt_error *err)
{
    char buf[4096];
    if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
        return rt_fail(err, RT_EXIT_INPUT, "%s: path too long", path);
    for (char *p = buf + 1; *p; p++) {
        if (*p != '/')
            continue;
        *p = '\0';
        if (mkdir(buf, 0755) != 0 && errno != EEXIST)
            return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot create directory", buf);
        *p = '/';
    }
    if (mkdir(buf, 0755) == 0)
        return 0;
    if (errno != EEXIST)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot create directory", buf);
    /* An existing file is no directory: say so now, not at the first file
     * written into it (for --checkpoint, after a whole training run). */
    struct stat sb;
    if (stat(buf, &sb) != 0)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot stat", buf);
    if (!S_ISDIR(sb.st_mode))
        return rt_fail(err, RT_EXIT_INPUT, "%s: exists and is not a directory", buf);
    return 0;
}

int rt_path_join(char *out, size_t cap, const char *dir, const char *name, rt_error *err)
{
    if (snprintf(out, cap, "%s/%s", dir, name) >= (int)cap)
        return rt_fail(err, RT_EXIT_INPUT, "%s/%s: path too long", dir, name);
    return 0;
}

/* Digits from s[*i]; how many. */
static size_t skip_digits(const char *s, size_t len, size_t *i)
{
    size_t start = *i;
    while (*i < len && is_digit(s[*i]))
        (*i)++;
    return *i - start;
}

int rt_is_decimal(const char *s, size_t len)
{
    size_t i = 0;
    if (i < len && (s[i] == '+' || s[i] == '-'))
        i++;
    size_t digits = skip_digits(s, len, &i);
    if (i < len && s[i] == '.') {
        i++;
        digits += skip_digits(s, len, &i);
    }
    if (digits == 0)
        return 0;
    if (i < len && (s[i] == 'e' || s[i] == 'E')) {
        i++;
        if (i < len && (s[i] == '+' || s[i] == '-'))
            i++;
        if (skip_digits(s, len, &i) == 0)
            return 0;
    }
    return i == len;
}

/* Digits, then at most one suffix of `suffixes` multiplying by the matching
 * entry of `muls`, then nothing: the one parser of a number with a unit. */
static int parse_scaled(const char *s, const char *suffixes, const uint64_t *muls, uint64_t *out)
{
    if (!s || !is_digit(*s)) /* strtoull would take " 5", "+5" */
        return -1;
    char *end;
    errno = 0;
    unsigned long long v = strtoull(s, &end, 10);
    if (errno || end == s)
        return -1;
    uint64_t mul = 1;
    const char *at = *end ? strchr(suffixes, *end) : NULL;
    if (at)
        mul = muls[at - suffixes], end++;
    if (*end)
        return -1;
    if (v > UINT64_MAX / mul)
        return -1;
    *out = (uint64_t)v * mul;
    return 0;
}

int rt_parse_u64(const char *s, uint64_t *out)
{
    static const uint64_t muls[] = {1000, 1000, 1000000, 1000000000};
    return parse_scaled(s, "kKMG", muls, out);
}

int rt_parse_bytes(const char *s, uint64_t *out)
{
    static const uint64_t muls[] = {1ull << 10, 1ull << 10, 1ull << 20, 1ull << 30, 1ull << 40};
    return parse_scaled(s, "kKMGT", muls, out);
}

void rt_format_bytes(uint64_t bytes, char *buf, size_t cap)
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    /* The unit is picked after the rounding "%.1f" does: 1048575 B is
     * 1023.999 KiB, printed "1024.0 KiB" by a plain v >= 1024.  Below TiB,
     * v is a multiple of 2^-30, none of which lies between 1023.95 and the
     * double nearest it, so this test and printf's rounding agree. */
    while (u < 4 && v >= (u ? 1023.95 : 1024))
        v /= 1024, u++;
    snprintf(buf, cap, u ? "%.1f %s" : "%.0f %s", v, units[u]);
}

int rt_parse_double(const char *s, double *out)
{
    if (!s || !rt_is_decimal(s, strlen(s))) /* strtod would take " 1", "0x1p3", "nan" */
        return -1;
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v))
        return -1;
    *out = v;
    return 0;
}

int rt_parse_int(const char *s, int *out)
{
    if (!s || !(is_digit(*s) || (*s == '-' && is_digit(s[1])))) /* strtol would take " 5" */
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < -2147483647L || v > 2147483647L)
        return -1;
    *out = (int)v;
    return 0;
}

int rt_check_out_not_cwd(const char *out, rt_error *err)
{
    if (rt_same_file(out, ".") || rt_path_inside(".", out))
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: --out is the working directory or holds it; the output replaces the "
                       "whole directory: run from outside it or give another --out",
                       out);
    return 0;
}

int rt_check_input_outside(const char *input, const char *option, const char *out, rt_error *err)
{
    if (!input || !out || rt_is_stdio(input))
        return 0;
    if (rt_same_file(input, out) || rt_path_inside(input, out))
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: --%s is in --out %s, which the output replaces as a whole (the "
                       "input would be deleted with it); give another --out",
                       input, option, out);
    return 0;
}

/* Is dir one of the directories rotor replaces as a whole? */
static int whole_output(const char *dir, rt_dir_kind *kind)
{
    *kind = rt_dir_kind_of(dir);
    return *kind == RT_DIR_PLAN || *kind == RT_DIR_MODEL || *kind == RT_DIR_CHECKPOINT ||
           *kind == RT_DIR_INFER;
}

int rt_check_out_not_inside_output(const char *path, const char *option, rt_error *err)
{
    char up[PATH_MAX * 2];
    rt_dir_kind kind = RT_DIR_MISSING;
    if (!path || !path[0] || rt_is_stdio(path) ||
        snprintf(up, sizeof(up), "%s", path) >= (int)sizeof(up))
        return 0;
    /* the ancestors as the user wrote them ("m" of "m/x"), not the working
     * directory's: those are known by a marker file's name alone, which a
     * directory of the user's may hold too */
    int found = 0;
    for (char *slash = strrchr(up, '/'); !found && slash && slash != up; slash = strrchr(up, '/')) {
        *slash = '\0';
        found = whole_output(up, &kind);
    }
    if (!found)
        return 0;
    return rt_fail(err, RT_EXIT_INPUT,
                   "%s: --%s is inside %s, which %s and is replaced as a whole when it is written "
                   "again (the output would go with it); give a path outside it",
                   path, option, up, rt_dir_kind_text(kind));
}

/* The deepest directory that exists on the way to `path` (path itself
 * when it exists) into dir; -1 with err when something on the way is not a
 * directory or cannot be looked at. */
static int nearest_existing_dir(const char *path, char *dir, size_t cap, rt_error *err)
{
    struct stat sb;
    if (snprintf(dir, cap, "%s", path) >= (int)cap)
        return rt_fail(err, RT_EXIT_INPUT, "%s: --out: path too long", path);
    for (;;) {
        for (size_t n = strlen(dir); n > 1 && dir[n - 1] == '/'; n--)
            dir[n - 1] = '\0';
        if (stat(dir, &sb) == 0)
            break;
        if (errno != ENOENT && errno != ENOTDIR) /* ENOTDIR: a file on the way, found next */
            return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: --out: cannot stat %s", path, dir);
        char *slash = strrchr(dir, '/');
        if (!slash)
            snprintf(dir, cap, ".");
        else
            slash[slash == dir] = '\0'; /* "/x" -> "/" */
    }
    if (S_ISDIR(sb.st_mode))
        return 0;
    if (!strcmp(dir, path))
        return rt_fail(err, RT_EXIT_INPUT, "%s: exists and is not a directory", path);
    return rt_fail(err, RT_EXIT_INPUT, "%s: --out: %s exists and is not a directory", path, dir);
}

/* An output directory must be usable before a long run starts: it, or the
 * nearest directory above it that exists (where its temporary sibling and
 * the missing directories on the way will be made), takes new files.
 * Nothing is created here: a run killed before it writes its output must
 * not leave an empty --out behind. */
int rt_check_out_usable(const char *out, rt_error *err)
{
    char dir[4096];
    if (nearest_existing_dir(out, dir, sizeof(dir), err))
        return -1;
    if (access(dir, W_OK | X_OK) != 0)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: --out: cannot create files in %s", out,
                             dir);
    /* access() says yes to root even where nothing can be created. */
    char probe[4200];
    if (rt_path_join(probe, sizeof(probe), dir, ".rotor-probe-XXXXXX", err))
        return -1;
    int fd = mkstemp(probe);
    if (fd < 0)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: --out: cannot create files in %s", out,
                             dir);
    close(fd);
    unlink(probe);
    return 0;
}

int rt_check_whole_out_dir(const char *out, const char *marker, const char *kind, rt_error *err)
{
    if (rt_check_out_not_cwd(out, err))
        return -1;
    DIR *d = opendir(out);
    if (d) {
        int marked = 0, other = 0;
        struct dirent *de;
        while ((de = readdir(d))) {
            /* (other ranks may probe the same directory right now) */
            if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, "..") ||
                !strncmp(de->d_name, ".rotor-probe-", 13))
                continue;
            if (!strcmp(de->d_name, marker))
                marked = 1;
            else
                other = 1;
        }
        closedir(d);
        if (other && !marked)
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s: --out holds files but no %s; the output replaces the whole "
                           "directory, so it must be new, empty or %s",
                           out, marker, kind);
    } else if (errno != ENOENT && errno != ENOTDIR) {
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: --out: cannot read", out);
    }
    return rt_check_out_not_inside_output(out, "out", err) || rt_check_out_usable(out, err) ? -1
                                                                                            : 0;
}

/* rt_check_own_kind but for where the file is. */
static int check_own_kind(const char *path, const char *option, const char *kind,
                          int (*ours)(FILE *fp), rt_error *err)
{
    struct stat sb;
    if (!path || !path[0] || rt_is_stdio(path))
        return 0;
    if (stat(path, &sb) != 0)
        return errno == ENOENT ? 0
                               : rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: --%s", path, option);
    if (S_ISDIR(sb.st_mode))
        return rt_fail(err, RT_EXIT_INPUT, "%s: --%s is a directory; give a file name", path,
                       option);
    if (!S_ISREG(sb.st_mode) || sb.st_size == 0)
        return 0; /* a device or a FIFO is written in place (rt_outfile_open) */
    int same = 0;
    if (ours) {
        FILE *fp = fopen(path, "rb");
        if (!fp)
            return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: --%s: cannot read", path, option);
        same = ours(fp);
        fclose(fp);
    }
    if (!same)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: --%s would replace a file that is not %s; give a new path (or "
                       "remove it first)",
                       path, option, kind);
    return 0;
}

int rt_check_own_kind(const char *path, const char *option, const char *kind, int (*ours)(FILE *fp),
                      rt_error *err)
{
    if (check_own_kind(path, option, kind, ours, err))
        return -1;
    return rt_check_out_not_inside_output(path, option, err);
}

rt_dir_kind rt_dir_kind_of(const char *path)
{
    static const struct {
        const char *file;
        rt_dir_kind kind;
    } marks[] = {{"plan.json", RT_DIR_PLAN},
                 {"model.json", RT_DIR_MODEL},
                 {"manifest.json", RT_DIR_CHECKPOINT},
                 {"infer.json", RT_DIR_INFER}};
    struct stat sb;
    char file[4200];
    if (stat(path, &sb) != 0)
        return RT_DIR_MISSING;
    if (!S_ISDIR(sb.st_mode))
        return RT_DIR_FILE;
    for (size_t i = 0; i < sizeof(marks) / sizeof(marks[0]); i++)
        if (snprintf(file, sizeof(file), "%s/%s", path, marks[i].file) < (int)sizeof(file) &&
            access(file, F_OK) == 0)
            return marks[i].kind;
    DIR *d = opendir(path);
    struct dirent *de;
    int ckpt = 0;
    while (d && !ckpt && (de = readdir(d)))
        ckpt = !strncmp(de->d_name, "ckpt-", 5);
    if (d)
        closedir(d);
    return ckpt ? RT_DIR_CHECKPOINTS : RT_DIR_PLAIN;
}

const char *rt_dir_kind_text(rt_dir_kind kind)
{
    switch (kind) {
    case RT_DIR_FILE:
        return "is a file, not a directory";
    case RT_DIR_PLAN:
        return "holds a plan (rotor partition --out)";
    case RT_DIR_MODEL:
        return "holds a model (rotor train --out)";
    case RT_DIR_CHECKPOINT:
        return "holds one checkpoint (give the directory above it)";
    case RT_DIR_INFER:
        return "holds rotor infer output";
    case RT_DIR_CHECKPOINTS:
        return "holds checkpoints (rotor train --checkpoint)";
    case RT_DIR_MISSING:
    case RT_DIR_PLAIN:
        break;
    }
    return NULL;
}

const char *rt_dir_holds(const char *path)
{
    return rt_dir_kind_text(rt_dir_kind_of(path));
}

/* --out must be usable before training starts, not after hours of it:
 * create it (mkdir -p) and make sure a file can be created in it. */
