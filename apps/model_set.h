/*
 * model_set.h - a saved model as a set of per-rank part files, committed
 * together (internal to apps/; mf_model.c and lda_model.c own what the parts
 * hold, this file owns how they are written, committed and found again).
 *
 * Saving.  Every rank writes its own share of the model (rows of its
 * workers, its home column blocks) as .npy part files NAME.part-RRRRR.npy
 * into its own temporary directory OUT.tmp-PID-rR, next to --out, and
 * fsyncs them.  A gather tells rank 0 what each rank wrote (or that it
 * failed).  Rank 0 then
 *   - moves the other ranks' part files into its own temporary directory
 *     where it can see them (a shared filesystem); a rank whose directory
 *     it cannot see has its own filesystem (node-local --out) and keeps its
 *     parts where they are;
 *   - writes the whole-model side files (ids) and, last, model.json: the
 *     manifest (format_version 2; every part's shape, size and XXH3, and
 *     which rank wrote it; "side_files": the size and XXH3 of every other
 *     file, the text ids, vocabulary and topics);
 *   - swaps its directory with --out in one rename (RENAME_EXCHANGE; two
 *     renames where the filesystem cannot exchange) and removes the old.
 * A one-int-per-rank verdict is broadcast; node-local ranks swap their own
 * directory into --out on their node, everyone else removes theirs.  So a
 * save that fails anywhere (a full disk, a rank that cannot write) leaves
 * --out as it was: the previous complete model, or no model at all.  With
 * node-local directories each node's --out holds that node's parts; copy
 * them into one directory (next to rank 0's model.json) to use the model.
 *
 * Reading.  rt_model_parts_open reads the manifest and checks that every
 * part file and side file is there with the size and checksum it records;
 * anything else is "incomplete model" or "damaged model" (exit 2), never a
 * mix of two saves.  A model.json
 * without format_version is a single-file model (W.npy, ...) as rotor wrote
 * before sharding and as `rotor export --format npy` writes.
 */
#ifndef ROTOR_APPS_MODEL_SET_H
#define ROTOR_APPS_MODEL_SET_H

#include "apps/apps.h"
#include "ground/progress.h"

#include <jansson.h>

#define RT_MODEL_FORMAT_VERSION 2
#define RT_MODEL_MAX_PART_FILES 8

/* One part file, as the manifest records it. */
typedef struct rt_part_file {
    char name[16]; /* what it holds: "W", "rows", "word_topic", ... */
    char file[48]; /* NAME.part-RRRRR.npy */
    char descr[4]; /* "<f4" or "<i4" (ids, or counts: never negative) */
    uint64_t rows, cols;
    uint64_t bytes, check; /* size and XXH3-64 of the whole file */
} rt_part_file;

/* One rank's parts. */
typedef struct rt_model_part {
    int32_t ok; /* the rank wrote all its files */
    int32_t pid;
    uint32_t n_files;
    uint32_t node_local; /* kept on the rank's own filesystem */
    rt_part_file files[RT_MODEL_MAX_PART_FILES];
} rt_model_part;

/* ---- writing (every rank) ---- */
typedef struct rt_model_saver {
    rt_engine *eng;
    const char *out;
    char tmp[4096]; /* this rank's OUT.tmp-PID-rR */
    int tmp_hold;   /* rt_hold_dir of it until the commit */
    rt_model_part mine;
    rt_outfile of; /* the part file being written */
    uint64_t left; /* bytes of cells still to come in it */
    int open;
} rt_model_saver;

/* Refuse an --out that is neither absent, empty, nor a rotor model (a save
 * replaces the directory as a whole), then check it can be written. */
int rt_model_out_check(const char *out, rt_error *err);

int rt_model_save_begin(rt_model_saver *s, rt_engine *eng, const char *out, rt_error *err);
/* Part file NAME of rows x cols cells of `descr`; then exactly that many
 * cells through rt_model_part_write (in any number of calls), then end. */
int rt_model_part_begin(rt_model_saver *s, const char *name, const char *descr, uint64_t rows,
                        uint64_t cols, rt_error *err);
int rt_model_part_write(rt_model_saver *s, const void *cells, size_t bytes, rt_error *err);
int rt_model_part_end(rt_model_saver *s, rt_error *err);
/* Where rank 0 writes whole-model side files (ids, topics.txt) before
 * commit; they are committed with the parts. */
const char *rt_model_save_dir(const rt_model_saver *s);
/* Every rank, in the same order: `rc` is this rank's result so far (its
 * error in err).  Rank 0 adds the format fields and the parts to `meta`
 * (taken over; NULL on the other ranks) and writes it as model.json.
 * Returns 0 when the model was committed on every rank. */
int rt_model_save_commit(rt_model_saver *s, int rc, json_t *meta, rt_error *err);

/* One process writing a whole model directory (`rotor export`): into
 * OUT.tmp-PID-r0, held (rt_hold_dir) until the process ends, then swapped
 * into place as a save is.  Every file in it is written through
 * rt_outfile_commit, which fsyncs the file and then the directory: the
 * commit itself syncs only the parent of OUT. */
int rt_model_dir_begin(const char *out, char *tmp, size_t cap, rt_error *err);
int rt_model_dir_commit(const char *tmp, const char *out,
                        rt_error *err); /* removes tmp on failure */

/* ---- reading ---- */
typedef struct rt_model_parts {
    char dir[4096];
    json_t *meta; /* model.json */
    uint32_t n;   /* parts; 0 for a single-file model */
    rt_model_part *parts;
} rt_model_parts;

/* Read DIR/model.json; for a sharded model check every part file's
 * presence, size and checksum (exit 2: "incomplete model"). */
int rt_model_parts_open(const char *dir, rt_model_parts *mp, rt_error *err);
void rt_model_parts_close(rt_model_parts *mp);
/* A copy of model.json without the manifest's own keys (parts, ranks,
 * format_version, save_id, side_files): the single-file model's model.json. */
json_t *rt_model_single_meta(const rt_model_parts *mp);
/* Part file NAME of part i (NULL when that part has none). */
const rt_part_file *rt_model_part_find(const rt_model_parts *mp, uint32_t i, const char *name);
/* Open part file `pf` for streaming (rt_npy_open), checking its shape and
 * cell type against the manifest. */
int rt_model_part_open(const rt_model_parts *mp, const rt_part_file *pf, FILE **fp, rt_error *err);
/* Read `rows` rows of `cols` 4-byte cells of an open part file. */
int rt_model_part_read(FILE *fp, const rt_part_file *pf, void *buf, uint64_t rows, rt_error *err);

/* The first cell of rows x cols floats (rows `pad` apart) that is NaN or
 * infinite, refused (exit 2) as "WHAT: row ROW0 + r, column c": rotor
 * saves only finite numbers (training stops on a diverged model), so such
 * a cell is damage or a hand-made file, which would score NaN or be
 * copied on by export without a word. */
int rt_model_check_finite(const float *a, uint64_t rows, uint64_t cols, uint64_t pad, uint64_t row0,
                          const char *what, rt_error *err);

/* Every row of matrix part NAME of every part, with its dense id from the
 * ids part IDS_NAME (int32, one column): visit(ctx, ids, rows, m) gets
 * them a block at a time (rows of `cols` 4-byte cells), reading with about
 * `memory` bytes of buffers.  Every id must lie in 0..n-1 and appear
 * exactly once over all parts, a float part's cells must be finite
 * (rt_model_check_finite) and an int32 part's, counts, 0 or more, each
 * refused at the part file's row and column: exit 2 otherwise. */
typedef int (*rt_rows_visit)(void *ctx, const int32_t *ids, const void *rows, uint64_t m,
                             rt_error *err);
int rt_model_scan(const rt_model_parts *mp, const char *name, const char *ids_name, uint64_t n,
                  uint64_t cols, uint64_t memory, rt_rows_visit visit, void *ctx, rt_error *err);
/* The same rows in dense order, in chunks of rows lo..lo+m-1 that fit in
 * about `memory` bytes (one pass over the parts per chunk): for writers
 * that stream a merged file.  `progress` (may be NULL) advances by the
 * bytes emitted. */
typedef int (*rt_dense_emit)(void *ctx, const void *rows, uint64_t lo, uint64_t m, rt_error *err);
int rt_model_dense_rows(const rt_model_parts *mp, const char *name, const char *ids_name,
                        uint64_t n, uint64_t cols, uint64_t memory, rt_dense_emit emit, void *ctx,
                        rt_progress *progress, rt_error *err);

/* Merge matrix part NAME (ids IDS, n rows of `cols` cells) into PATH: one
 * .npy in dense order, or with `ids_file` (the model's id list, e.g.
 * "rows.ids") text lines "ORIGINAL-ID v v ...". */
int rt_model_merge(const rt_model_parts *mp, const char *name, const char *ids, uint64_t n,
                   uint64_t cols, const char *path, const char *ids_file, uint64_t memory,
                   rt_progress *progress, rt_error *err);

/* Copy FROM_DIR/NAME to TO_DIR/NAME (atomically); a text file of one line
 * per row must have `lines` lines (exit 2 otherwise: an id list cut short
 * or grown is not copied into an export or a model), RT_ANY_LINES for any. */
#define RT_ANY_LINES UINT64_MAX
int rt_model_copy_file(const char *from_dir, const char *to_dir, const char *name, uint64_t lines,
                       rt_error *err);

/* A JSON object's integer member in lo..hi (exit 2 naming `path` otherwise). */
int rt_json_u64(json_t *obj, const char *key, uint64_t lo, uint64_t hi, uint64_t *out,
                const char *path, rt_error *err);

#endif
