/*
 * partition.h - plans: what the offline partitioner writes and the runtime reads.
 *
 * A *plan* is a directory:
 *
 *   plan.json      human-readable manifest (see below)
 *   layout.bin     which global rows each worker owns and which global
 *                  columns each column block holds (a sectioned file)
 *   shard-NNNNN.bin one per worker: its ratings/tokens grouped by column
 *                  block (a sectioned file), read back with mmap
 *   rows.ids       original id of dense row i on line i+1 (users / documents)
 *   cols.ids       original id of dense column j on line j+1 (items / words)
 *   test_rows.ids  LDA with held-out documents only: original id of held-out
 *                  document k on line k+1 (see RT_SEC_TEST_ROW_IDS)
 *
 * The matrix has n_rows x n_cols with dense 0-based ids.  W = workers =
 * nodes x threads.  Rows are cut into W row blocks (row block w belongs to
 * worker w); columns into B = pipeline x W column blocks.  Data block (w, b)
 * holds the entries whose row is in row block w and column in column block b.
 *
 * Schedule: the plan states it once, as a table in plan.json:
 * schedule[s][w] is the column block worker w works on at step s of every
 * epoch (B steps; worker w = node * threads + t).  The engine executes the
 * table: after a worker's visit a block goes to the node of its next visitor
 * (cyclically, into the next epoch).  rt_plan_open accepts a table only when
 *   (i)   no two workers share a block in a step,
 *   (ii)  each worker meets each block exactly once per epoch, and
 *   (iii) block b's first visit of an epoch is by worker b / c, so block b
 *         starts and ends every epoch on that worker's node, its *home*
 *         (node b / (c * threads) for any split of the workers).
 * The engine adds what its transport needs for the split it runs (a ring:
 * each node passes blocks to one node only; see engine.c).
 * The default generator, rt_schedule_ring, is a conveyor of B positions:
 * worker w covers positions [c*w, c*w + c) and works on the block at
 * position c*w + c - 1; every step each block advances one position, so
 *     schedule[s][w] = (c*w + c - 1 - s) mod B,
 * a block leaving a node goes to the next node, and with c >= 2 it has c-1
 * whole steps to travel before the next node needs it.
 *
 * Sectioned files (layout.bin and shards) share one container:
 *   rt_file_header, then n_sections x rt_section_entry, then the sections,
 *   each starting at an offset aligned to RT_ALIGN.  Every section carries an
 *   XXH3-64 checksum of its bytes; the header carries one of itself.
 * All integers are little-endian.
 */
#ifndef ROTOR_PARTITION_H
#define ROTOR_PARTITION_H

#include "ground/ground.h"
#include "ground/progress.h"

#include <stdint.h>

#define RT_PLAN_FORMAT_VERSION 1
#define RT_FILE_MAGIC "ROTORPL1" /* 8 bytes, no NUL stored */
#define RT_MAX_SECTIONS 16

typedef enum rt_plan_app {
    RT_PLAN_MF = 1,  /* ratings: sgd-mf and cd-mf */
    RT_PLAN_LDA = 2, /* documents x words, value = count */
} rt_plan_app;

typedef enum rt_file_kind {
    RT_FILE_LAYOUT = 1,
    RT_FILE_SHARD = 2,
} rt_file_kind;

/* Section ids. */
enum {
    /* layout.bin */
    RT_SEC_WORKER_ROW_OFFSETS = 1, /* u64[W+1] into WORKER_ROW_IDS */
    RT_SEC_WORKER_ROW_IDS = 2,     /* u32[n_rows]: global row ids, worker-major */
    RT_SEC_BLOCK_COL_OFFSETS = 3,  /* u64[B+1] into BLOCK_COL_IDS */
    RT_SEC_BLOCK_COL_IDS = 4,      /* u32[n_cols]: global col ids, block-major */
    /* shard-NNNNN.bin (worker w) */
    RT_SEC_TRAIN_OFFSETS = 10, /* u64[B+1]: entries of data block (w, b) */
    RT_SEC_TRAIN_ENTRIES = 11, /* rt_entry[] */
    RT_SEC_TEST_OFFSETS = 12,  /* u64[B+1] */
    RT_SEC_TEST_ENTRIES = 13,  /* rt_entry[] */
    RT_SEC_TEST_ROW_IDS = 14,  /* LDA only: u32[]: global ids of held-out docs */
};

typedef struct rt_file_header {
    char magic[8];         /* RT_FILE_MAGIC */
    uint32_t version;      /* RT_PLAN_FORMAT_VERSION */
    uint32_t kind;         /* rt_file_kind */
    uint32_t app;          /* rt_plan_app */
    uint32_t worker;       /* shard: its worker; layout: 0 */
    uint32_t workers;      /* W */
    uint32_t blocks;       /* B */
    uint64_t n_rows;       /* global dense rows */
    uint64_t n_cols;       /* global dense columns */
    uint64_t plan_id;      /* random id shared by all files of one plan */
    uint32_t n_sections;   /* <= RT_MAX_SECTIONS */
    uint32_t reserved;     /* 0 */
    uint64_t header_check; /* rt_checksum of this header with header_check = 0 and
                              of the section table that follows */
} rt_file_header;

typedef struct rt_section_entry {
    uint32_t id;       /* RT_SEC_* */
    uint32_t reserved; /* 0 */
    uint64_t offset;   /* from file start, multiple of RT_ALIGN */
    uint64_t bytes;
    uint64_t checksum; /* rt_checksum of the section's bytes */
} rt_section_entry;

/* One rating or one (doc, word, count).  Inside data block (w, b):
 *   row = worker-local row index (position in the worker's row list),
 *   col = block-local column index (position in the block's column list),
 *   val = rating (MF) or count >= 1 (LDA).
 * MF entries are sorted by (row, col) inside a block; LDA entries by
 * (col, row), so a word's tokens are contiguous ("word-major"). */
typedef struct rt_entry {
    uint32_t row;
    uint32_t col;
    float val;
} rt_entry;

/* The manifest plus layout.bin, in memory. */
typedef struct rt_plan {
    char dir[4096];
    rt_plan_app app;
    uint64_t plan_id;
    uint64_t n_rows, n_cols;
    uint64_t nnz_train, nnz_test; /* MF: ratings; LDA: (doc, word) pairs */
    uint64_t tokens_train;        /* LDA: sum of counts; MF: = nnz_train */
    uint32_t nodes, threads, workers, blocks, pipeline;
    uint64_t seed;
    uint32_t *schedule;          /* blocks x workers: [s * workers + w], see the header comment */
    uint64_t *worker_row_offset; /* W+1 */
    uint32_t *worker_row_ids;    /* n_rows */
    uint64_t *block_col_offset;  /* B+1 */
    uint32_t *block_col_ids;     /* n_cols */
    void *layout_map;            /* internal: layout.bin, mapped or read (see `mapped`) */
    size_t layout_len;
    /* rt_plan_open_mapped: layout.bin and the shards are mapped, their pages
     * shared with the page cache, and a file truncated under the mapping
     * raises SIGBUS, which the caller must turn into a message (rotor train:
     * tools/guard.c).  rt_plan_open: they are read into memory, so a file cut
     * or rewritten while it is read is an error (exit 2), never a signal. */
    int mapped;
    /* plan.json's "files" records: layout.bin's size and XXH3, and each
     * shard's size (checked when it is opened). */
    uint64_t layout_bytes, layout_check;
    uint64_t *shard_bytes; /* W */
} rt_plan;

/* One worker's shard, read-only: mapped or read as its plan's `mapped` says. */
typedef struct rt_shard {
    uint32_t worker;
    uint32_t n_rows;           /* rows this worker owns */
    const uint32_t *row_ids;   /* = plan->worker_row_ids + plan->worker_row_offset[w] */
    const uint64_t *train_off; /* B+1 */
    const rt_entry *train;
    const uint64_t *test_off; /* B+1 */
    const rt_entry *test;
    uint32_t n_test_rows;         /* LDA: held-out docs owned by this worker */
    const uint32_t *test_row_ids; /* LDA: their global ids (NULL for MF) */
    void *map;
    size_t map_len;
    int mapped; /* its plan's `mapped`: map is the file's mapping, not a copy */
} rt_shard;

/* Load plan.json and layout.bin from `dir`, checking format, checksums and
 * consistency.  Errors name the file and what was wrong (exit code 2). */
int rt_plan_open(const char *dir, rt_plan *plan, rt_error *err);
/* The same, mapping layout.bin and the shards (see rt_plan.mapped). */
int rt_plan_open_mapped(const char *dir, rt_plan *plan, rt_error *err);
void rt_plan_close(rt_plan *plan);
const char *rt_plan_app_name(rt_plan_app app); /* "mf" or "lda" */

/* Block b's columns and worker w's rows. */
static inline uint32_t rt_plan_block_cols(const rt_plan *p, uint32_t b)
{
    return (uint32_t)(p->block_col_offset[b + 1] - p->block_col_offset[b]);
}
static inline uint32_t rt_plan_worker_rows(const rt_plan *p, uint32_t w)
{
    return (uint32_t)(p->worker_row_offset[w + 1] - p->worker_row_offset[w]);
}
/* Node that holds block b at the start of every epoch, for a run with the
 * plan's own nodes x threads split (a run that re-splits the workers, e.g.
 * --serial or --threads, asks the engine: rt_engine_home_blocks). */
static inline uint32_t rt_plan_block_home(const rt_plan *p, uint32_t b)
{
    return b / (p->pipeline * p->threads);
}

/* Map or read shard-NNNNN.bin of worker w (as plan->mapped says) and verify
 * header and section checksums (a truncated or corrupted shard fails with
 * exit code 2). */
int rt_shard_open(const rt_plan *plan, uint32_t worker, rt_shard *shard, rt_error *err);
void rt_shard_close(rt_shard *shard);
/* Let go of the resident pages of the shard's mapping between from and to
 * (the whole pages inside; the mapping's last page when `to` is its end):
 * for an app that has copied the entries into its own structures.  The
 * bytes stay readable (read again from the file), so this is only a hint
 * that keeps the peak resident memory down.  A shard read into memory
 * (rt_plan_open) keeps its pages: dropping an anonymous page zeroes it. */
int rt_shard_release(const rt_shard *shard, const void *from, const void *to, rt_error *err);

/* Check rows.ids / cols.ids as rt_plan_read_ids does, keeping nothing: a run
 * that will copy them into its model checks them before it trains. */
int rt_plan_check_ids(const rt_plan *plan, const char *which, rt_error *err);
/* Read rows.ids / cols.ids: ids[i] = original id string of dense id i.
 * Returns a malloc'd array of n strings (one allocation; free with free()).
 * The file's checksum is checked against plan.json. */
int rt_plan_read_ids(const rt_plan *plan, const char *which /* "rows", "cols", "test_rows" */,
                     char ***ids, uint64_t *n, rt_error *err);

/* The block worker w works on at step s of any epoch (the plan's table). */
static inline uint32_t rt_plan_schedule_block(const rt_plan *p, uint32_t step, uint32_t worker)
{
    return p->schedule[(size_t)(step % p->blocks) * p->workers + worker];
}

/* The default schedule (the conveyor above) into table[B * workers]. */
void rt_schedule_ring(uint32_t workers, uint32_t pipeline, uint32_t *table);
/* Rules (i)-(iii) above for table[B * workers]; errors name `where` (exit 2). */
int rt_schedule_check(const uint32_t *table, uint32_t workers, uint32_t pipeline, const char *where,
                      rt_error *err);

/* ---- the writer side (rotor partition, rotor gen) ----
 * (declared by the partition module's implementation below this line) */

/* Original ids.  An rt_idmap interns id strings and hands out dense ids
 * 0, 1, 2, ... in order of first appearance; rows.ids / cols.ids are written
 * from it (string of dense id i on line i+1).  Ids must not contain '\n'. */
typedef struct rt_idmap {
    char *chars; /* all strings, each NUL-terminated */
    uint64_t chars_len, chars_cap;
    uint64_t *off;   /* off[i]: start of dense id i's string in chars */
    uint64_t n, cap; /* ids so far */
    /* Open-addressing hash of the strings: (hash >> 32) << 32 | (dense id + 1),
     * 0 = empty.  Canonical decimal ids ("0", "17", not "017") live in a
     * second table keyed by their value: no string compares on the hot path. */
    uint64_t *slots;
    uint64_t n_slots, n_str; /* power of two; strings in it */
    uint64_t *ikeys;         /* integer table: value + 1 (0 = empty) */
    uint32_t *ivals;         /* dense id */
    uint64_t n_islots, n_int;
    uint32_t *direct; /* values < n_direct (<= 2^22): direct[value] = dense id + 1 */
    uint64_t n_direct;
} rt_idmap;

void rt_idmap_init(rt_idmap *m);
void rt_idmap_free(rt_idmap *m);
/* Dense id of the string s[0..len), adding it when new.  Fails (exit code 1)
 * only when out of memory or past 2^32-1 ids. */
int rt_idmap_intern(rt_idmap *m, const char *s, size_t len, uint32_t *id, rt_error *err);
/* Dense id of s[0..len), or -1 when it was never interned. */
int64_t rt_idmap_find(const rt_idmap *m, const char *s, size_t len);
static inline const char *rt_idmap_str(const rt_idmap *m, uint64_t id)
{
    return m->chars + m->off[id];
}

/* A growable list of (row, col, val) with dense ids: MF ratings or LDA
 * (doc, word, count).  Stored as rt_entry (here row/col are *global* dense ids). */
typedef struct rt_triplets {
    rt_entry *e;
    uint64_t n, cap;
    /* 0, or the most entries the caller's memory budget has room for
     * (`rotor partition --max-memory`): the array never grows past it, and
     * rt_read_ratings refuses (exit 2, at the file's line) the rating that
     * would pass it. */
    uint64_t budget;
} rt_triplets;

void rt_triplets_init(rt_triplets *t);
void rt_triplets_free(rt_triplets *t);
int rt_triplets_reserve(rt_triplets *t, uint64_t n, rt_error *err);
int rt_triplets_grow_(rt_triplets *t, rt_error *err); /* internal */
static inline int rt_triplets_push(rt_triplets *t, uint32_t row, uint32_t col, float val,
                                   rt_error *err)
{
    if (t->n == t->cap && rt_triplets_grow_(t, err) < 0)
        return -1;
    t->e[t->n].row = row;
    t->e[t->n].col = col;
    t->e[t->n].val = val;
    t->n++;
    return 0;
}

/* Move a seeded random fraction of `all` into `test` (all keeps the rest, in
 * file order), then renumber rows and columns densely by first appearance in
 * what is left for training; rows/cols maps are rebuilt to match.  Test
 * entries whose row or column no longer occurs in training are dropped and
 * counted in *dropped.  Deterministic given seed. */
int rt_triplets_split(rt_triplets *all, rt_idmap *rows, rt_idmap *cols, double fraction,
                      uint64_t seed, rt_triplets *test, uint64_t *dropped, rt_error *err);

/* ---- building a plan ---- */

typedef enum rt_balance {
    RT_BALANCE_GREEDY = 0, /* LPT rows, grid-aware greedy columns (default) */
    RT_BALANCE_RANDOM = 1, /* seeded shuffle, equal-count cuts (the STRADS/DSGD way) */
} rt_balance;

/* An input file as recorded in plan.json ("inputs"). */
typedef struct rt_plan_source {
    const char *role; /* "train", "test", "vocab", ... */
    const char *path;
    const char *format; /* the format actually used (after --format auto) */
    uint64_t lines;     /* lines read (0 = unknown) */
    uint64_t entries;   /* entries kept from it */
} rt_plan_source;

/* A named counter recorded in plan.json ("dropped"), e.g. test ratings
 * whose user never occurs in training. */
typedef struct rt_plan_count {
    const char *name;
    uint64_t value;
} rt_plan_count;

typedef struct rt_plan_input {
    rt_plan_app app;
    /* Training entries, global dense ids: row < rows->n, col < cols->n.
     * MF: val = rating (finite).  LDA: val = count, an integer >= 1. */
    const rt_triplets *train;
    const rt_idmap *rows, *cols; /* original ids; n_rows = rows->n, n_cols = cols->n */
    /* Optional test entries (NULL = none), same column ids.  Without
     * test_rows their rows are training rows (MF held-out ratings, LDA
     * document completion).  With test_rows (LDA held-out documents) a test
     * entry's row is a held-out document id < test_rows->n: held-out documents
     * are dealt to workers balanced by tokens, listed in each shard's
     * RT_SEC_TEST_ROW_IDS, and written to test_rows.ids. */
    const rt_triplets *test;
    const rt_idmap *test_rows;
} rt_plan_input;

typedef struct rt_plan_options {
    uint32_t nodes, threads; /* W = nodes x threads */
    uint32_t pipeline;       /* c (0 = 2); B = c x W */
    uint64_t seed;
    rt_balance balance;
    uint64_t balance_budget;  /* work budget of the grid-aware column pass (0 = default) */
    int force;                /* replace an existing output directory */
    const char *command_line; /* recorded in plan.json (NULL = none) */
    const rt_plan_source *sources;
    int n_sources;
    const rt_plan_count *counts; /* recorded under "dropped" */
    int n_counts;
    /* Optional (NULL = none): called once every data file of the plan is in
     * the temporary directory `tmp_dir`, before plan.json is written and the
     * directory is renamed into place.  It may add files of its own directly
     * under tmp_dir (e.g. the LDA app's lda.words); every regular file it
     * adds is recorded in plan.json's "files" with its size and XXH3, like
     * the plan's own files.  Returning -1 (err set) aborts rt_plan_write:
     * the temporary directory is removed and nothing is left at `dir`. */
    int (*before_commit)(const char *tmp_dir, uint64_t plan_id, void *ctx, rt_error *err);
    void *before_commit_ctx;
} rt_plan_options;

/* Imbalance = max / mean load (MF: ratings; LDA: tokens); 1.0 is perfect. */
typedef struct rt_imbalance {
    double row_blocks, col_blocks, cells;
    /* Sizes rather than loads: rows per worker and columns per block
     * (model memory and the bytes a block carries). */
    double worker_rows, block_cols;
} rt_imbalance;

typedef struct rt_plan_summary {
    uint64_t plan_id;
    uint32_t workers, blocks;
    uint64_t nnz_train, nnz_test, tokens_train, duplicates;
    rt_imbalance imbalance;        /* of the plan */
    rt_imbalance random_imbalance; /* what a seeded random assignment would give */
    double seconds;                /* time spent in rt_plan_write */
} rt_plan_summary;

/* Balance rows and columns, build every shard and write the plan directory
 * `dir` atomically (a temporary sibling directory renamed at the end; on
 * error, including a failing opt->before_commit, nothing is left behind).
 * Refuses an existing `dir` unless opt->force.  Logs progress and imbalance
 * on stderr.  `sum` may be NULL. */
int rt_plan_write(const char *dir, const rt_plan_input *in, const rt_plan_options *opt,
                  rt_plan_summary *sum, rt_error *err);

/* Bytes rt_plan_write allocates at most on top of its input (the entries and
 * id maps, which the caller holds): an upper bound summed over its phases
 * (balance, sort into blocks, shards and side files), for W workers and B
 * column blocks.  For a peak estimate printed before the work and for
 * `rotor partition --max-memory`. */
uint64_t rt_plan_write_memory(const rt_plan_input *in, uint64_t W, uint64_t B);

/* ---- reading MF ratings files ---- */

typedef enum rt_rating_format {
    RT_FMT_AUTO = 0,
    RT_FMT_TRIPLETS, /* "user item rating [timestamp]", spaces or tabs (u.data) */
    RT_FMT_CSV,      /* comma-separated, optional header line (ratings.csv) */
    RT_FMT_DAT,      /* "user::item::rating[::timestamp]" (MovieLens ratings.dat) */
    RT_FMT_MM,       /* MatrixMarket coordinate, 1-based, header sizes enforced */
    RT_FMT_LIBMF,    /* "u v r", 0-based integer ids */
    RT_FMT_NETFLIX,  /* "ITEM:" heading its "user,rating[,date]" lines (Netflix Prize) */
} rt_rating_format;

/* Names of the formats (option choices, ground/opts.h), with aliases. */
extern const rt_opt_choice rt_rating_formats[];
const char *rt_rating_format_name(rt_rating_format f);          /* "triplets", "csv", ... */
int rt_rating_format_parse(const char *s, rt_rating_format *f); /* 0 ok, -1 unknown */
/* Is s[0..len) "123:", the head of an item's block in the Netflix Prize's
 * training files (mv_*.txt, combined_data_*.txt)? */
int rt_netflix_block_head(const char *s, size_t len);

typedef struct rt_ratings_stats {
    rt_rating_format format; /* as used */
    uint64_t lines;          /* lines read, including headers and comments */
    uint64_t ratings;        /* ratings appended */
    uint64_t dropped;        /* add_ids == 0: ratings with an unknown user or item */
    int header;              /* a header line was skipped */
    int pairs;               /* user-item pairs without a rating field: each counts 1 */
} rt_ratings_stats;

/* Read a ratings file and append its ratings to `out`.  add_ids = 1 (the
 * training file): new users / items get dense ids in order of first
 * appearance.  add_ids = 0 (a test file): ratings whose user or item is not
 * in the maps are dropped and counted.  Bad input fails with exit code 2 and
 * "FILE:LINE: what was wrong". */
int rt_read_ratings(const char *path, rt_rating_format fmt, rt_idmap *rows, rt_idmap *cols,
                    int add_ids, rt_triplets *out, rt_ratings_stats *st, rt_error *err);

/* Buffered reading of big text files line by line (used by the readers;
 * handy for corpus readers too).  Lines are returned NUL-terminated without
 * their '\n' (and '\r'); the pointer is valid until the next call. */
typedef struct rt_linereader {
    int fd;
    char *buf;
    size_t cap, start, end; /* unread bytes are buf[start..end) */
    int eof;
    int bom_checked;  /* a leading UTF-8 byte order mark has been looked for */
    uint64_t line_no; /* 1-based number of the line last returned */
    const char *path;
    uint64_t bytes_read;
    rt_progress progress; /* bytes read, of the file's size when it has one */
    char head[8];         /* the file's first bytes: a compressor's magic number */
    size_t head_len;
} rt_linereader;

/* path "-" reads standard input.  A UTF-8 byte order mark at the start of
 * the file is skipped (editors on Windows write one; it would otherwise
 * become part of the first id or word). */
int rt_linereader_open(rt_linereader *lr, const char *path, rt_error *err);
/* The same for a file rotor wrote (a model's id list): RT_READ_OWN. */
int rt_linereader_open_own(rt_linereader *lr, const char *path, rt_error *err);
/* Read ahead (up to about 64 KiB, less at end of file) without consuming, so
 * a format can be guessed from the first lines even of a pipe: *text points
 * at the unread bytes, valid until the next call. */
int rt_linereader_peek(rt_linereader *lr, const char **text, size_t *len, rt_error *err);
/* 1 = a line, 0 = end of file, -1 = read error (err set). */
int rt_linereader_next(rt_linereader *lr, char **line, size_t *len, rt_error *err);
void rt_linereader_close(rt_linereader *lr);
/* Guess a file's format from its first lines (MatrixMarket banner, "::",
 * a Netflix "ITEM:" line, commas, whitespace) on an open reader, consuming
 * nothing (works on a pipe); *why is a short explanation for the log. */
int rt_rating_format_sniff_reader(rt_linereader *lr, rt_rating_format *f, const char **why,
                                  rt_error *err);

#endif
