/*
 * metrics.h - per-epoch metrics as a JSON document (internal to apps/).
 *
 * `--metrics FILE` makes rank 0 rewrite FILE atomically after every epoch:
 *   {"app": ..., "config": {...}, "epochs": [{..., "elapsed_s": S}, ...], "peak_rss_kib": N}
 * so a benchmark (bench/), `rotor plot` or a person can read progress mid-run.
 * "elapsed_s" is the wall time since the app started (set up included), the
 * x axis of `rotor plot --x seconds`.
 */
#ifndef ROTOR_APPS_METRICS_H
#define ROTOR_APPS_METRICS_H

#include "ground/ground.h"

#include <jansson.h>

typedef struct rt_metrics {
    char path[4096]; /* "" = disabled */
    json_t *doc;
    double t0; /* rt_metrics_init: each epoch record gets "elapsed_s", wall seconds since */
} rt_metrics;

/* `config` is taken (reference stolen).  path NULL or "" disables. */
void rt_metrics_init(rt_metrics *m, const char *path, const char *app, json_t *config);
/* Append one epoch record (reference stolen) and rewrite the file. */
int rt_metrics_epoch(rt_metrics *m, json_t *epoch, rt_error *err);
void rt_metrics_free(rt_metrics *m);

#endif
