/*
 * ground.h - the ground layer: small utilities every rotor module stands on.
 * It includes nothing of rotor's own; partition/, verbs/, engine/, apps/ and
 * tools/ all build on it.
 *
 * Errors: functions that can fail take an `rt_error *` and return a negative
 * value after filling it with one human-readable line.  Callers either add
 * context and pass the error up, or print it and exit with `err->code`
 * (RT_EXIT_INPUT = 2 for bad input or usage, RT_EXIT_RUNTIME = 1 otherwise).
 *
 * Also here: logging, monotonic time, aligned allocation, a seeded RNG with
 * independent streams, checksums (xxHash), atomic file output and .npy output.
 * JSON documents are read through ground/json.h.
 */
#ifndef ROTOR_GROUND_H
#define ROTOR_GROUND_H

#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define RT_EXIT_OK 0
#define RT_EXIT_RUNTIME 1
#define RT_EXIT_INPUT 2

#define RT_ALIGN 64 /* cache line; also enough for any SIMD width we use */

typedef struct rt_error {
    int code;       /* RT_EXIT_INPUT or RT_EXIT_RUNTIME */
    char msg[1024]; /* one line, no trailing newline */
} rt_error;

/* Fill `err` (may be NULL) and return -1.  Usage: `return rt_fail(err, RT_EXIT_INPUT, ...)`. */
int rt_fail(rt_error *err, int code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Like rt_fail, appending ": strerror(errnum)". */
int rt_fail_errno(rt_error *err, int code, int errnum, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Prefix an existing message with more context: "context: old message". */
int rt_error_prefix(rt_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* s as one printable line in out (cap bytes): newline and carriage return
 * as \n and \r, other control bytes but tab, and bytes that are not
 * well-formed UTF-8, as \xNN, so that a file name holding them cannot break
 * the one-line rule of messages or a terminal's encoding.  Returns the
 * length. */
size_t rt_one_line(char *out, size_t cap, const char *s);

/* ---- logging (stderr, one line per call, prefixed with the log tag) ---- */
enum { RT_LOG_ERROR = 0, RT_LOG_WARN = 1, RT_LOG_INFO = 2, RT_LOG_DEBUG = 3 };
extern int rt_log_level; /* default RT_LOG_INFO (tools/ set it from ROTOR_LOG) */
/* "debug", "info", "warn" or "error" -> RT_LOG_*; -1 for anything else. */
int rt_log_level_parse(const char *s);
void rt_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
#define rt_info(...) rt_log(RT_LOG_INFO, __VA_ARGS__)
#define rt_warn(...) rt_log(RT_LOG_WARN, __VA_ARGS__)
#define rt_debug(...) rt_log(RT_LOG_DEBUG, __VA_ARGS__)

/* ---- time ---- */
double rt_now(void); /* monotonic seconds */
long rt_peak_rss_kib(void);

/* ---- memory ---- */
/* Zeroed, RT_ALIGN-aligned, size rounded up to RT_ALIGN.  NULL on failure. */
void *rt_alloc(size_t bytes);
void rt_free(void *p);
/* Zeroed, page-aligned memory that takes no resident pages until written:
 * a window that only fills as blocks arrive costs only what arrived.
 * rt_free_untouched needs the same byte count (NULL is a no-op). */
void *rt_alloc_untouched(size_t bytes);
void rt_free_untouched(void *p, size_t bytes);
static inline size_t rt_round_up(size_t n, size_t a)
{
    return (n + a - 1) / a * a;
}
/* 1 when p[0..n) are all zero bytes: the padding a file's writer leaves,
 * checked by its reader so that a flipped byte there is named as damage. */
static inline int rt_all_zero(const void *p, size_t n)
{
    const unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        if (b[i])
            return 0;
    return 1;
}
/* Arrays that are sized once and live and die together come from one
 * rt_alloc: one failure check, and one rt_free of the returned block
 * releases them all.  Each part is what rt_alloc would give it (zeroed,
 * RT_ALIGN-aligned, rounded up, an address even for 0 elements), written to
 * *at.  NULL, with nothing written, when memory runs out or the total
 * overflows. */
typedef struct rt_part {
    void **at;      /* where the part's address goes */
    uint64_t count; /* elements */
    size_t elem;    /* bytes per element */
} rt_part;
/* The part for array pointer `ptr` (an lvalue) of `count` elements. */
#define RT_PART(ptr, count) ((rt_part){(void **)&(ptr), (count), sizeof(*(ptr))})
void *rt_alloc_parts(const rt_part *parts, size_t n_parts);

/* ---- checked sizes ----
 * Every size derived from input (counts x element size, rows x cols, dims x
 * rank, (n + 1) x width) is computed with these, so it cannot wrap.  A size
 * above RT_SIZE_LIMIT (what malloc could ever return) is "impossible": the
 * rt_size_* helpers fail with "FILE: FIELD: A x B is too large" (exit 2)
 * before anything is allocated. */
#define RT_SIZE_LIMIT ((uint64_t)PTRDIFF_MAX)
static inline int rt_mul_overflows(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_mul_overflow(a, b, out);
}
static inline int rt_add_overflows(uint64_t a, uint64_t b, uint64_t *out)
{
    return __builtin_add_overflow(a, b, out);
}
int rt_size_mul(uint64_t a, uint64_t b, size_t *out, const char *file, const char *field,
                rt_error *err);
int rt_size_add(uint64_t a, uint64_t b, size_t *out, const char *file, const char *field,
                rt_error *err);
/* malloc / calloc of count x elem bytes, checked as above (exit 1 when the
 * size is possible but memory runs out).  Free with free(). */
void *rt_alloc_array(uint64_t count, size_t elem, const char *file, const char *field,
                     rt_error *err);
void *rt_calloc_array(uint64_t count, size_t elem, const char *file, const char *field,
                      rt_error *err);
/* Grow *p (realloc, *cap elements of elem bytes) to hold at least `need`
 * elements, doubling from 64; the old elements are kept.  -1 with err set
 * (exit 1) when memory runs out or the size wraps. */
int rt_grow_array(void **p, uint64_t *cap, uint64_t need, size_t elem, rt_error *err);

/* ---- deterministic random numbers ----
 * xoshiro256** seeded by splitmix64.  rt_rng_seed(rng, seed, stream) gives
 * independent streams for e.g. (seed, worker) or (seed, column id), so the
 * numbers a piece of the model sees never depend on thread or node layout. */
typedef struct rt_rng {
    uint64_t s[4];
} rt_rng;
void rt_rng_seed(rt_rng *rng, uint64_t seed, uint64_t stream);
/* inline: the samplers draw several numbers per token, and a call costs
 * as much as the generator itself */
static inline uint64_t rt_rng_next(rt_rng *rng)
{
    uint64_t *s = rng->s;
    uint64_t x = s[1] * 5, result = ((x << 7) | (x >> 57)) * 9;
    uint64_t t = s[1] << 17;
    s[2] ^= s[0];
    s[3] ^= s[1];
    s[1] ^= s[2];
    s[0] ^= s[3];
    s[2] ^= t;
    s[3] = (s[3] << 45) | (s[3] >> 19);
    return result;
}
static inline double rt_rng_uniform(rt_rng *rng) /* [0, 1) */
{
    return (double)(rt_rng_next(rng) >> 11) * 0x1.0p-53;
}
static inline float rt_rng_uniformf(rt_rng *rng) /* [0, 1) */
{
    return (float)(rt_rng_next(rng) >> 40) * 0x1.0p-24f;
}
uint64_t rt_rng_below(rt_rng *rng, uint64_t n); /* uniform in [0, n), unbiased */
/* wyrand (Wang Yi's generator: a Weyl sequence mixed by one 64x64->128-bit
 * multiply; passes BigCrush and PractRand): one 64-bit state and about 5
 * instructions a draw against xoshiro256**'s 13, for kernels that draw
 * several numbers per item.  Seed it with a draw of an rt_rng stream, so
 * the numbers still come from that stream. */
typedef struct rt_wyrand {
    uint64_t s;
} rt_wyrand;
static inline uint64_t rt_wyrand_next(rt_wyrand *r)
{
    r->s += 0xa0761d6478bd642full;
    __extension__ unsigned __int128 t = (unsigned __int128)r->s * (r->s ^ 0xe7037ed1a0b428dbull);
    return (uint64_t)(t >> 64) ^ (uint64_t)t;
}
static inline double rt_wyrand_uniform(rt_wyrand *r) /* [0, 1), as rt_rng_uniform */
{
    return (double)(rt_wyrand_next(r) >> 11) * 0x1.0p-53;
}
double rt_rng_normal(rt_rng *rng);              /* standard normal (Box-Muller) */
double rt_rng_gamma(rt_rng *rng, double shape); /* Gamma(shape, 1), Marsaglia-Tsang */
void rt_rng_shuffle_u32(rt_rng *rng, uint32_t *a, size_t n);
/* Index of the first cum[i] > u in a non-decreasing array of n >= 1 values
 * (n - 1 when none is): inverse-CDF sampling with u in [0, cum[n-1]). */
static inline uint64_t rt_search_cdf(const double *cum, uint64_t n, double u)
{
    uint64_t lo = 0, hi = n - 1;
    while (lo < hi) {
        uint64_t mid = lo + (hi - lo) / 2;
        if (cum[mid] > u)
            hi = mid;
        else
            lo = mid + 1;
    }
    return lo;
}
uint64_t rt_hash64(uint64_t x); /* splitmix64 finaliser: a good integer mix */

/* ---- checksums ---- */
uint64_t rt_checksum(const void *data, size_t len); /* XXH3-64 */
/* Size and XXH3-64 of a whole file, read in bounded memory (exit code 2
 * when it cannot be read). */
int rt_file_checksum(const char *path, uint64_t *bytes, uint64_t *check, rt_error *err);

/* ---- "name=value" lines (job descriptions, fingerprints) ---- */
typedef struct rt_field_diff {
    const char *name; /* not terminated: name_len bytes */
    size_t name_len;
    const char *a, *b; /* the two values (not terminated), NULL where missing */
    size_t a_len, b_len;
} rt_field_diff;
/* The first field, in a's order then b's, whose value differs between the
 * "name=value" line lists a (alen bytes) and b (blen bytes), skipping the
 * names listed in `skip` (NULL-terminated; may be NULL).  1 and *d filled
 * when they differ, 0 when they agree. */
int rt_fields_diff(const char *a, size_t alen, const char *b, size_t blen, const char *const *skip,
                   rt_field_diff *d);
/* A value of rt_field_diff for a message: "'value'", or "nothing" (v NULL);
 * a decimal fraction in its shortest form ("'0.2'" for 0.20000000000000001). */
void rt_field_quote(char *out, size_t cap, const char *v, size_t len);

/* ---- files ---- */
/* Create `path` via a temporary sibling and rename on commit, so a crash or
 * error never leaves a partial file under the final name.  The path "-" is
 * standard output: commit flushes it, abort cannot take back what was written.
 * A path that exists and is neither a regular file nor a directory (/dev/null,
 * a FIFO, /dev/stdout on a terminal) is written in place, as standard output
 * is: renaming over it would replace the device node (as root, /dev/null). */
typedef struct rt_outfile {
    FILE *fp;
    char path[4096];
    char tmp[4096]; /* "" for standard output or a device written in place */
    int in_place;   /* fp is the device itself: commit closes it */
} rt_outfile;
int rt_is_stdio(const char *path); /* true for "-" */
/* A new descriptor on standard input, for reading "-".  A closed standard
 * input (rotor fills it with /dev/null opened write-only, so that it is not
 * read as empty) or one open only for writing fails here with "standard
 * input: closed (nothing to read)", not with the errno of a later call. */
int rt_stdin_dup(rt_error *err);
/* What a path opened to read is, which decides what may stand there.
 * RT_READ_DATA: the user's data (ratings, a corpus, a word list, users, a
 *   hostfile, a token): a FIFO or a pipe (`--input <(zcat r.gz)`) is read
 *   as a stream, as "-" is; rotor says so first, then waits for the
 *   writer in open() as every reader of a FIFO does.
 * RT_READ_OWN: a file rotor wrote (plan, model, checkpoint, metrics): a
 *   FIFO, socket or device in its place is refused at once (exit 2) rather
 *   than waited on for a writer that will not come.  A directory or a
 *   regular file opens as before (reading a directory names EISDIR). */
typedef enum rt_read_kind { RT_READ_DATA, RT_READ_OWN } rt_read_kind;
/* The descriptor (blocking, close-on-exec) or -1 with "PATH: cannot
 * open: ..." in err (RT_EXIT_INPUT). */
int rt_open_read(const char *path, rt_read_kind kind, rt_error *err);
/* The same as a stdio stream ("rb"). */
FILE *rt_fopen_read(const char *path, rt_read_kind kind, rt_error *err);
/* True when a and b are the same path or name the same existing file or
 * directory: an output that would replace its own input is refused. */
int rt_same_file(const char *a, const char *b);
/* True when `path` lies under directory `dir` (at any depth; not dir
 * itself), by name (absolute, ".", ".." and repeated slashes resolved; they
 * need not exist) or, for the ancestors that exist, by identity (symbolic
 * links).  An output written inside a directory that is then replaced as a
 * whole is lost. */
int rt_path_inside(const char *path, const char *dir);
/* `path` made absolute (from the working directory) with ".", ".." and
 * repeated or trailing slashes resolved by name (symbolic links are not
 * followed; the path need not exist); -1 when it does not fit. */
int rt_path_absolute(const char *path, char *out, size_t cap);
int rt_outfile_open(rt_outfile *of, const char *path, rt_error *err);
int rt_outfile_commit(rt_outfile *of, rt_error *err); /* flush, fsync, rename, fsync the dir */
/* Flush and rename without the fsync: for a file rewritten again and again
 * while a run goes on (--metrics after every epoch), where readers need a
 * whole file at any moment but a crash may lose the last rewrite; an fsync
 * each time would put a disk flush (and, on a busy machine, the wait for a
 * core after it) into every epoch. */
int rt_outfile_commit_unsynced(rt_outfile *of, rt_error *err);
void rt_outfile_abort(rt_outfile *of); /* remove the temporary */
int rt_write_all(FILE *fp, const void *buf, size_t len, const char *path, rt_error *err);
/* Copy what is left of `in` (read as in_path) into of's file.  newlines
 * (NULL: not counted) is increased by the '\n' bytes copied; last (NULL:
 * not kept) gets the last byte copied, and stays as it was when none was. */
int rt_outfile_copy_from(rt_outfile *of, FILE *in, const char *in_path, uint64_t *newlines,
                         char *last, rt_error *err);
/* After writing fp with fprintf/fputc (which leave no reason): 0 when every
 * write so far succeeded, else -1 with "PATH: write failed: REASON" (the
 * reason found by flushing what is still buffered, when it fails again). */
int rt_write_check(FILE *fp, const char *path, rt_error *err);

/* fsync a directory (the directory holding `path`), so that names created
 * or renamed in it survive a crash; filesystems that cannot sync a
 * directory (EINVAL) are let be. */
int rt_sync_dir(const char *dir, rt_error *err);
int rt_sync_parent(const char *path, rt_error *err);

/* A path cut where rename(2) and a directory fsync see it.  Trailing
 * slashes go ("out/" names the directory "out"); `dir` is the directory
 * that holds the last name ("." for a bare name, "/" at the root; "a//b":
 * "a"); `base` is that name ("" for "/"), pointing into `path`.  -1 for ""
 * or a path that does not fit. */
typedef struct rt_path_parts {
    char path[4096]; /* without trailing slashes */
    char dir[4096];
    const char *base;
} rt_path_parts;
int rt_split_parent(const char *path, rt_path_parts *pp);

/* Put the finished directory `tmp` (a sibling of `out`) in the place of
 * `out` in one step (RENAME_EXCHANGE; two renames where the filesystem
 * cannot exchange: then for a moment there is no `out`, never a mix), remove
 * what was `out`, and fsync the parent.  Readers see the old set of files or
 * the new one. */
int rt_dir_replace(const char *tmp, const char *out, rt_error *err);
/* Close the commit gate for good: the renames that put an output in place
 * (rt_outfile_commit, rt_dir_replace) fail from now on, and a commit under
 * way finishes before this returns.  A signal watcher removing the partial
 * outputs on another thread (tools/guard.c) calls it first: a commit that
 * landed in the middle of that removal would swap in a set with some of its
 * files gone, in place of the previous one. */
void rt_commits_stop(void);
/* 1 when the file or directory at `path` is one this process put there
 * (rt_outfile_commit, rt_dir_replace: the last one it put at each of its
 * outputs), 0 otherwise.  A run that fails removes an output that did not
 * exist before it only when it made it: the same path may have been filled
 * meanwhile by another process (a second job with the same --out, a rank
 * started twice), whose output is not this run's to remove. */
int rt_put_in_place_here(const char *path);
/* The name of a temporary directory of `out`: OUT.tmp-PID-TAG (TAG letters
 * and digits, not "old"), its sibling ("out/" too), so that rt_dir_replace
 * swaps it in with one rename and rt_remove_stale_temporaries knows it. */
int rt_tmp_dir_name(const char *out, int pid, const char *tag, char *buf, size_t cap,
                    rt_error *err);
/* Is `name` a temporary of output `base`, exactly as rotor names them:
 * BASE.tmp.PID (rt_outfile) or BASE.tmp-PID-TAG (directories; TAG letters
 * and digits)?  BASE.tmp-PID-old is not: it holds the previous output while
 * a directory is swapped in two renames, and may be all that is left of it.
 * Its PID goes to *pid (0 when it does not fit one). */
int rt_temporary_of(const char *name, const char *base, long *pid);
/* Temporaries that outlive a killed process.  Every temporary a command
 * makes next to an output (NAME.tmp.PID files, NAME.tmp-PID-... directories)
 * is held under an exclusive flock(2) while its process lives; the kernel
 * drops the lock when the process dies, however it dies (SIGKILL, a power
 * cut: no lock survives a reboot).  rt_remove_stale_temporaries(OUT)
 * removes the temporaries of OUT that no process holds, which proves their
 * run is gone, on this host or, where flock reaches the file server (NFS),
 * on another; where locks are unsupported nothing is removed.  Also
 * OUT.tmp-PID-old, left by a run that died in rt_dir_replace's two renames,
 * when its PID is not alive and OUT is in place (without OUT it is all that
 * is left of the previous output, and stays).  It returns how many it
 * removed.  rt_hold_dir opens and holds a temporary directory
 * (the fd, or -1: held until rt_release_dir). */
int rt_hold_temporary(int fd);
int rt_hold_dir(const char *dir);
void rt_release_dir(int fd);
int rt_remove_stale_temporaries(const char *out);

/* Remove a directory tree (used to discard partial outputs). */
int rt_remove_tree(const char *path);
int rt_mkdir_p(const char *path, rt_error *err);
/* An output directory that is replaced as a whole (rt_dir_replace) must be
 * new, empty, or an earlier output of its kind (it holds `marker`): nothing
 * else of the user's goes with it.  It may not lie inside another such
 * directory (rt_check_out_not_inside_output), and it must be usable before
 * a long run starts (rt_check_out_usable).  Nothing is created: a run
 * killed before its output is written leaves no empty --out behind (the
 * output's temporary sibling and the directories on its way are made when
 * it is written). */
int rt_check_whole_out_dir(const char *out, const char *marker, const char *kind, rt_error *err);
/* An output file replaces only what is new, empty, or an earlier output of
 * its own kind (`ours`, given the file open at its start, says so; NULL:
 * none is), so that a mistyped --out never costs a file of the user's (the
 * ratings, a model's model.json).  Standard output, NULL, devices and FIFOs
 * (written in place) pass.  Else exit 2: "PATH: --OPTION would replace a
 * file that is not KIND; give a new path (or remove it first)"; a
 * directory: "PATH: --OPTION is a directory".  Nor may it lie inside a
 * directory replaced as a whole (rt_check_out_not_inside_output). */
int rt_check_own_kind(const char *path, const char *option, const char *kind, int (*ours)(FILE *fp),
                      rt_error *err);
/* An output directory that is replaced as a whole cannot be the working
 * directory or hold it: rename(2) refuses "." and "..", and under another
 * name the command would swap its own working directory away.  Exit code 2
 * naming it (rt_check_whole_out_dir checks it too). */
int rt_check_out_not_cwd(const char *out, rt_error *err);
/* The input `input` of option --`option` must not be `out` or lie inside
 * it when `out` is replaced as a whole: the previous output is deleted,
 * and the input with it.  NULL and "-" pass; exit code 2 naming both. */
int rt_check_input_outside(const char *input, const char *option, const char *out, rt_error *err);
/* An output `path` (of option --`option`) must not lie inside a directory
 * that rotor replaces as a whole when it writes it again (a plan, a model,
 * a checkpoint, an infer output): it would go with it.  rt_check_own_kind
 * and rt_check_whole_out_dir check it; NULL and "-" pass; exit code 2
 * naming the directory and what it holds. */
int rt_check_out_not_inside_output(const char *path, const char *option, rt_error *err);
/* An output directory to be made later: it, or the nearest directory above
 * it that exists, takes new files (exit code 2).  Nothing is created. */
int rt_check_out_usable(const char *out, rt_error *err);
/* What `path` is when a command is given the wrong kind of thing (a model
 * as --plan, a plan as --model, a file as a directory).  Callers decide on
 * the kind; rt_dir_kind_text gives it for "PATH: not a plan: it ...":
 * "holds a plan (rotor partition --out)", "holds a model (...)", "holds
 * checkpoints (...)", "is a file, not a directory", ..., or NULL when it
 * does not exist or is a directory of none of rotor's kinds.
 * rt_dir_holds(path) is rt_dir_kind_text(rt_dir_kind_of(path)). */
typedef enum rt_dir_kind {
    RT_DIR_MISSING,     /* nothing there (or it cannot be looked at) */
    RT_DIR_PLAIN,       /* a directory of none of the kinds below */
    RT_DIR_FILE,        /* not a directory */
    RT_DIR_PLAN,        /* plan.json */
    RT_DIR_MODEL,       /* model.json */
    RT_DIR_CHECKPOINT,  /* manifest.json: one ckpt-N */
    RT_DIR_INFER,       /* infer.json */
    RT_DIR_CHECKPOINTS, /* ckpt-* entries: a --checkpoint directory */
} rt_dir_kind;
rt_dir_kind rt_dir_kind_of(const char *path);
const char *rt_dir_kind_text(rt_dir_kind kind);
const char *rt_dir_holds(const char *path);
/* snprintf into a path buffer; fails cleanly when the result would not fit. */
int rt_path_join(char *out, size_t cap, const char *dir, const char *name, rt_error *err);

/* Write a C-order float32 (dtype '<f4') or int32 ('<i4') matrix as .npy. */
int rt_npy_write_f32(const char *path, const float *data, uint64_t rows, uint64_t cols,
                     size_t row_stride_floats, rt_error *err);
int rt_npy_write_i32(const char *path, const int32_t *data, uint64_t rows, uint64_t cols,
                     rt_error *err);
/* Read a C-order '<f4' (or '<i4') 2-D .npy written by rt_npy_write_f32
 * (rt_npy_write_i32): malloc'd, dense. */
int rt_npy_read_f32(const char *path, float **data, uint64_t *rows, uint64_t *cols, rt_error *err);
int rt_npy_read_i32(const char *path, int32_t **data, uint64_t *rows, uint64_t *cols,
                    rt_error *err);
/* Streaming: the header of a C-order 2-D .npy of `descr` ("<f4", "<i4"),
 * after which the caller writes rows x cols cells; and the reader's side,
 * which checks the header and that the file holds exactly rows x cols
 * cells, and leaves *fp at the first cell. */
int rt_npy_write_header(FILE *fp, const char *descr, uint64_t rows, uint64_t cols, const char *path,
                        rt_error *err);
int rt_npy_open(const char *path, const char *descr, FILE **fp, uint64_t *rows, uint64_t *cols,
                rt_error *err);

/* ---- text input ----
 * Index of the first byte of s[0..n) that cannot occur in a text file (NUL
 * and the control bytes other than tab, newline, vertical tab, form feed and
 * carriage return), or n when there is none.  Readers reject such input at
 * FILE:LINE rather than silently dropping what follows a NUL. */
size_t rt_text_find_binary(const char *s, size_t n);
/* Line ends (text.c): each lone '\r' of s[0..n) (an old Mac file's line end)
 * becomes '\n', so readers split lines at '\n' alone ("\r\n" stays: they
 * drop its '\r').  A '\r' at s[n-1] is left when `more` bytes follow, for
 * the next call to see with them; returns how many bytes are settled. */
size_t rt_text_unify_line_ends(char *s, size_t n, int more);
/* A whole text file ("-": standard input), checked for binary bytes as it
 * is read (FILE:LINE), with its line ends unified and without its byte
 * order mark. */
typedef struct rt_text {
    char *data; /* NUL-terminated copy of the file */
    size_t len;
    const char *path; /* "standard input" for "-" */
    int borrowed;     /* data belongs to another rt_text */
} rt_text;
int rt_text_load(const char *path, rt_text *t, rt_error *err);
/* The same for a file rotor wrote (RT_READ_OWN: never a FIFO). */
int rt_text_load_own(const char *path, rt_text *t, rt_error *err);
/* rt_text_load that shows fn its first `head` bytes (all, when fewer) once
 * they are in, before the rest is read: a guess from the head (a format)
 * needs no second open, which a FIFO or a pipe would not allow, and what
 * fn refuses (it returns nonzero) ends the load before a long read.  The
 * head is raw but for unified line ends: a byte order mark is still there.
 * max_len (0: none): an input longer than that is refused (exit 2, at the
 * line reached) as it arrives, the buffer never past it: a memory limit
 * for what has no size to check first (standard input, a pipe). */
typedef int (*rt_text_head_fn)(const char *head, size_t len, void *ctx, rt_error *err);
int rt_text_load_head(const char *path, size_t head, rt_text_head_fn fn, void *ctx,
                      uint64_t max_len, rt_text *t, rt_error *err);
void rt_text_free(rt_text *t);
/* 3 when s[0..n) starts with a UTF-8 byte order mark (an editor's; it is
 * not part of the first line's text), else 0. */
size_t rt_utf8_bom_len(const char *s, size_t n);
/* A whole text loaded into buf (n bytes and a NUL after them) without its
 * byte order mark, if it has one: moves the text down, returns its length. */
size_t rt_utf8_bom_strip(char *buf, size_t n);
/* A comment line of the line formats (ratings, and the corpora whose lines
 * hold ids: lda-c, LibSVM, lines, UCI): its first non-blank bytes are '#',
 * '%' or "//".  s is NUL-terminated at or after the line's end. */
int rt_text_comment_line(const char *s);
/* A JSON line (s[0..n), from its first non-blank byte): an object with keys,
 * or an array: JSON lines (Yelp, Amazon, Goodreads dumps), or a JSON file's
 * first line, is not text of the line formats.  An id in brackets ("[u1] [i1]
 * 5") or braces ("{GUID}") is neither. */
int rt_text_json_line(const char *s, size_t n);
/* The archiver or compressor whose magic number starts head[0..n) ("zip",
 * "gzip", "xz", "bzip2", "zstd"), or NULL: a reader meeting binary data says so. */
const char *rt_compressed_by(const char *head, size_t n);
/* rt_fail_binary for binary data on `line` of a file that starts with
 * head[0..n): a zip or compressed file, or UTF-16 text with its byte order
 * mark, is named as such, with the way out, whatever line its first binary
 * byte falls on (its bytes hold line ends). */
int rt_fail_binary_head(rt_error *err, const char *path, const char *head, size_t n, uint64_t line,
                        unsigned char byte);
/* Fill err with "FILE:LINE: binary data (byte 0xNN) in a text file" (exit 2). */
int rt_fail_binary(rt_error *err, const char *path, uint64_t line, unsigned char byte);
/* rt_fail_binary_head for the binary byte buf[at] of buf[0..len), its line
 * counted from the start of buf. */
int rt_fail_binary_at(rt_error *err, const char *path, const char *buf, size_t len, size_t at);

/* ---- parsing helpers for command lines (the option tables: opts.h) ---- */
/* Numbers are written in decimal, with no surrounding space: the C library's
 * parsers would also take hex ("0x1p3"), "nan", "inf" and leading blanks. */
int rt_parse_u64(const char *s, uint64_t *out); /* 0 on success; accepts 1k, 2M, 3G */
/* A size in bytes: digits and at most one of K (or k), M, G, T = KiB, MiB,
 * GiB, TiB (powers of 1024, as memory is counted).  0 on success; -1 on
 * anything else ("", "1.5G", "4GB", "-1", " 4G") or past 2^64 - 1. */
int rt_parse_bytes(const char *s, uint64_t *out);
/* bytes as "512.0 MiB", "3.2 GiB", "900 B" (one decimal above 1 KiB). */
void rt_format_bytes(uint64_t bytes, char *buf, size_t cap);
int rt_parse_double(const char *s, double *out); /* 0 on success; rejects nan/inf */
int rt_parse_int(const char *s, int *out);       /* 0 on success */
/* True when s[0..len) is a decimal number: [+-] digits [. digits] [e [+-] digits]
 * (digits on at least one side of the point). */
int rt_is_decimal(const char *s, size_t len);

#include "ground/opts.h"

#endif
