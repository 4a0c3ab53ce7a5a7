/* lda_app.h - the lda app's glue state on one node (internal to apps/lda*.c). */
#ifndef ROTOR_APPS_LDA_APP_H
#define ROTOR_APPS_LDA_APP_H

#include "apps/lda.h"
#include "apps/metrics.h"

typedef struct lda_app {
    const rt_plan *plan;
    rt_shard *shards; /* the local workers' */
    uint32_t n_shards;
    lda_core core;
    double sample_seconds;
    double span_seconds; /* sweeps since the last evaluation */
    uint64_t span_sweeps;
    /* Where those sweeps' wall went besides the cells (rt_rotation_stats),
     * summed over the same sweeps; not in the checkpoint, so after a resume
     * over the sweeps since it (their own seconds beside them). */
    struct {
        double seconds, imbalance, handover, step_end;
    } split;
    rt_metrics metrics;
} lda_app;

/* lda_save.c: every rank writes its part of the model under the core's o.out. */
int lda_save(void *app, rt_engine *eng, rt_error *err);

#endif
