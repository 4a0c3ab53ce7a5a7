/*
 * metrics.h - per-epoch metrics as a JSON document (internal to apps/).
 *
 * `--metrics FILE` makes rank 0 rewrite FILE atomically (a temporary renamed
 * over it) as epochs finish:
 *   {"app": ..., "config": {...}, "epochs": [{..., "elapsed_s": S}, ...], "peak_rss_kib": N}
 * so a benchmark (bench/), `rotor plot` or a person can read progress mid-run.
 * At the first epoch and then at most once every RT_METRICS_EVERY_S seconds,
 * and whatever is left when the app is done (rt_metrics_flush, or
 * rt_metrics_free): each rewrite replaces a file, and on a busy machine the
 * freed file's blocks (ext4 with discard) and the wait for a core after
 * that I/O cost ~30 ms a time (MovieLens 100K, 20 epochs at load 12: 1.7 s
 * with --metrics rewritten every epoch against 1.0 s without, medians of 8).
 * "elapsed_s" is the wall time since the app started (set up included), the
 * x axis of `rotor plot --x seconds`.
 */
#ifndef ROTOR_APPS_METRICS_H
#define ROTOR_APPS_METRICS_H

#include "ground/ground.h"
#include "ground/json.h"

typedef struct rt_metrics {
    char path[4096]; /* "" = disabled */
    json_t *doc;
    double t0;         /* rt_metrics_init: each epoch record gets "elapsed_s", wall seconds since */
    double last_write; /* rt_now() of the last rewrite (0 = none yet) */
    int pending;       /* epochs appended since */
} rt_metrics;

#define RT_METRICS_EVERY_S 1.0

/* Before the run: `--metrics path` may name a new file, an empty one or the
 * metrics file of an earlier run, which it replaces; anything else (a plan's
 * plan.json, a ratings file, a directory) is refused, exit 2. */
int rt_metrics_check(const char *path, rt_error *err);
/* `config` is taken (reference stolen).  path NULL or "" disables. */
void rt_metrics_init(rt_metrics *m, const char *path, const char *app, json_t *config);
/* Append one epoch record (reference stolen); rewrite the file when it is
 * the first, the `last` of the run, or RT_METRICS_EVERY_S have passed since
 * the last rewrite.  A failed rewrite is the run's failure (the file asked
 * for could not be written): the last record is written inside the run, so
 * that every rank stops with the message, before any model is saved. */
int rt_metrics_epoch(rt_metrics *m, json_t *epoch, int last, rt_error *err);
/* Rewrite the file if records are waiting. */
int rt_metrics_flush(rt_metrics *m, rt_error *err);
/* Flush (records left by a run that failed; a failure to write them is a
 * warning beside the run's own error) and free. */
void rt_metrics_free(rt_metrics *m);

#endif
