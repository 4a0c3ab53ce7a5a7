/* lda_app.h - the LDA app's state on one node (internal to apps/lda*.c). */
#ifndef ROTOR_APPS_LDA_APP_H
#define ROTOR_APPS_LDA_APP_H

#include "apps/lda.h"
#include "apps/metrics.h"

typedef struct lda_app {
    const lda_opts *o;
    const rt_plan *plan;
    rt_engine *eng;
    lda_layout layout;
    lda_ctx ctx;
    uint32_t first, n_local, n_threads; /* local workers first .. first + n_local - 1 */
    rt_shard *shards;                   /* n_local */
    lda_worker *workers;                /* n_local */
    lda_scratch *scratch;               /* per thread */
    int64_t *nk;                        /* K: global topic totals (as of the last step) */
    int64_t *delta;                     /* K: step_end scratch */
    double *parts;                      /* B + 2W: evaluation parts */
    uint64_t local_tokens, tokens, held_tokens;
    double sample_seconds;
    double span_seconds; /* sweeps since the last evaluation */
    uint64_t span_sweeps;
    double ll_per_token, perplexity;
    uint64_t iters_done;
    rt_metrics metrics;
} lda_app;

/* lda_save.c: gather the model to rank 0 and write it under o->out. */
int lda_save(void *app, rt_engine *eng, rt_error *err);

#endif
