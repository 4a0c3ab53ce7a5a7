/*
 * app_common.h - what every app shares (internal to apps/): the local
 * workers' shards, the pieces of a saved model every app reads the same way
 * (model.json, id lists), and the training-state file of one rank.
 */
#ifndef ROTOR_APPS_APP_COMMON_H
#define ROTOR_APPS_APP_COMMON_H

#include "apps/apps.h"
#include "ground/json.h"

/* Open the shards of workers first..first+n-1 into a calloc'd array. */
int rt_app_shards_open(const rt_plan *plan, uint32_t first, uint32_t n, rt_shard **shards,
                       rt_error *err);
/* Close what rt_app_shards_open opened (also after it failed half-way). */
void rt_app_shards_close(rt_shard *shards, uint32_t n);

/* DIR/NAME, one id a line (line i = dense id i), interned into `map`;
 * exactly `want` distinct ids expected. */
int rt_app_read_ids(const char *dir, const char *name, rt_idmap *map, uint64_t want, rt_error *err);
/* Write `obj` as indented JSON with sorted keys to `path`, atomically. */
int rt_app_write_json(const char *path, const json_t *obj, rt_error *err);
/* DIR/model.json (NULL with err set when unreadable); `path` (4096 bytes)
 * receives its path, for messages. */
json_t *rt_app_model_json(const char *dir, char *path, rt_error *err);

/* ---- training state: one file per rank (app_state.c) ----
 * DIR/state-RRRRR.bin: "ROTORST1", then sections, each
 *   char tag[16], u64 length, u64 XXH3 of the bytes, the bytes,
 * the first ("head") naming the app, the plan id, the next rotation and the
 * rank's place (rank, size, first worker, workers), the last ("end") empty.
 * Written through rt_outfile (a crash leaves no partial file under the
 * name); read back strictly in the order written, every checksum checked. */
typedef struct rt_state_head {
    char app[16];
    uint64_t plan_id;
    uint64_t next_rotation;
    uint32_t rank, size, first_worker, n_workers;
} rt_state_head;

typedef struct rt_state_writer {
    rt_outfile of;
} rt_state_writer;

int rt_state_create(rt_state_writer *w, const char *dir, const rt_state_head *head, rt_error *err);
int rt_state_put(rt_state_writer *w, const char *tag, const void *data, size_t len, rt_error *err);
/* Write the end marker, fsync and rename into place; abort on any error. */
int rt_state_commit(rt_state_writer *w, rt_error *err);
void rt_state_abort(rt_state_writer *w);
/* Remove rank's committed state file from dir (a checkpoint that failed
 * elsewhere must not keep half a set). */
void rt_state_discard(const char *dir, uint32_t rank);

typedef struct rt_state_reader {
    char path[4096];
    unsigned char *buf;
    size_t len, pos;
} rt_state_reader;

/* Open DIR/state-RRRRR.bin of `want->rank`, check every checksum and that
 * its head matches `want` (app, plan id, rank, size, workers); the file's
 * next rotation goes to *next_rotation. */
int rt_state_open(rt_state_reader *r, const char *dir, const rt_state_head *want,
                  uint64_t *next_rotation, rt_error *err);
/* The next section: it must be `tag` with exactly `len` bytes. */
int rt_state_get(rt_state_reader *r, const char *tag, void *data, size_t len, rt_error *err);
/* When the next section is `tag`: 1, and *data (in the reader's buffer) and
 * *len are its bytes; 0 (nothing read) when it is another; -1 with err for
 * a corrupt file. */
int rt_state_get_optional(rt_state_reader *r, const char *tag, const void **data, size_t *len,
                          rt_error *err);
void rt_state_close(rt_state_reader *r);

/* One walk serves both directions: an app visits its state once, section
 * by section, and each section is written (w set) or read back (r set) in
 * the same order. */
typedef struct rt_state_io {
    rt_state_writer *w; /* saving, or NULL */
    rt_state_reader *r; /* loading, or NULL */
} rt_state_io;
/* Saving: write `len` bytes of data as section `tag`; loading: read that
 * section (exactly `len` bytes) into data. */
int rt_state_xfer(rt_state_io *io, const char *tag, void *data, size_t len, rt_error *err);

/* The state file's head for this rank of an engine run. */
void rt_state_head_of(rt_state_head *h, const char *app, const rt_plan *plan, rt_engine *eng,
                      uint64_t next_rotation);
/* The home blocks' payloads (between rotations), as sections; loading writes
 * them back into the engine's home slots before the run resumes. */
int rt_state_xfer_home_blocks(rt_state_io *io, rt_engine *eng, rt_error *err);

#endif
