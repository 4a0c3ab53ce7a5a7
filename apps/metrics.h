/*
 * metrics.h - per-epoch metrics as a JSON document (internal to apps/).
 *
 * `--metrics FILE` makes rank 0 rewrite FILE atomically after every epoch:
 *   {"app": ..., "config": {...}, "epochs": [{...}, ...], "peak_rss_kib": N}
 * so a benchmark (bench/) or a person can read progress mid-run.
 */
#ifndef ROTOR_APPS_METRICS_H
#define ROTOR_APPS_METRICS_H

#include "ground/ground.h"

#include <jansson.h>

typedef struct rt_metrics {
    char path[4096]; /* "" = disabled */
    json_t *doc;
} rt_metrics;

/* `config` is taken (reference stolen).  path NULL or "" disables. */
void rt_metrics_init(rt_metrics *m, const char *path, const char *app, json_t *config);
/* Append one epoch record (reference stolen) and rewrite the file. */
int rt_metrics_epoch(rt_metrics *m, json_t *epoch, rt_error *err);
void rt_metrics_free(rt_metrics *m);

#endif
