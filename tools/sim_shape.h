/* sim_shape.h - the schedule simulator's input (sim/sim.h) built from sizes
 * alone: uniform cells, equal column blocks and the default ring schedule.
 * `rotor simulate` uses it for a shape without a plan, and `rotor partition
 * --pipeline auto` to compare pipelining factors before any block is cut. */
#ifndef ROTOR_TOOLS_SIM_SHAPE_H
#define ROTOR_TOOLS_SIM_SHAPE_H

#include "sim/sim.h"

/* The fixed default of `rotor partition --pipeline` (partition/plan_write.c). */
#define SIM_PIPELINE_DEFAULT 2
/* --pipeline auto leaves the default only for a predicted gain above this:
 * the model is not exact, and ties go to the default. */
#define SIM_PIPELINE_MIN_GAIN 0.05
/* --pipeline auto skips a candidate whose simulation would cost more than
 * this, W^3 x pipeline^2 for W workers (measured on this 2-core VM at load
 * 8: W = 256 took 1.0 s at pipeline 8 and 4.4 s at 16, ~1 ns a unit, and
 * W = 128 a tenth of that), saying so; the default is always simulated.
 * Without it 1024 workers spent minutes on the largest factors. */
#define SIM_PIPELINE_MAX_COST 2e9

/* The link and kernel a prediction is for, as typed: the options of
 * `rotor simulate` and of `rotor partition --pipeline auto` (one table). */
typedef struct sim_link_args {
    double gbps, latency_us, overhead_us; /* --gbps (0 = infinite) --latency-us --overhead-us */
    double buffer_kib;                    /* --send-buffer-kib */
    double burst_kib;                     /* --burst-kib */
    double rate;                          /* --rate: work units per second per thread (0: none) */
    double bytes_per_col;                 /* --bytes-per-col (0: the command's default) */
} sim_link_args;

extern const rt_opt sim_link_options[]; /* for a group whose dest is a sim_link_args */

rt_sim_link sim_link_of(const sim_link_args *a);

/* The model's inputs, owned here. */
typedef struct sim_shape_buf {
    rt_sim_shape shape;
    double *cells, *bytes;
    uint32_t *schedule;
} sim_shape_buf;

/* What sizes alone say about a job. */
typedef struct sim_sizes {
    uint32_t nodes, threads;
    double cols;         /* columns (words for lda) */
    double work;         /* ratings, or tokens for lda */
    double col_bytes;    /* payload bytes per column */
    int lda;             /* the per-step topic totals are all-reduced */
    uint32_t topics;     /* lda: K */
    uint32_t sync_every; /* lda: every this many steps (0 = 1) */
} sim_sizes;

/* Room for nodes x threads workers and pipeline x workers blocks; the shape
 * starts as a copy of knobs (rate, step costs, host cores, collectives). */
int sim_shape_alloc(sim_shape_buf *s, const rt_sim_shape *knobs, uint32_t nodes, uint32_t threads,
                    uint32_t pipeline, rt_error *err);
void sim_shape_free(sim_shape_buf *s);

/* The bytes the apps all-reduce per step and per rotation (see their
 * step_end and rotation_end): lda's K topic totals every sync_every steps,
 * MF's per-worker error sums once per rotation. */
void sim_reduce_sizes(const sim_sizes *z, uint32_t workers, rt_sim_shape *s);

/* Uniform cells, equal blocks, rt_schedule_ring: the shape of z at this
 * pipelining factor. */
int sim_shape_uniform(sim_shape_buf *s, const rt_sim_shape *knobs, const sim_sizes *z,
                      uint32_t pipeline, rt_error *err);

/* --pipeline auto: the candidate factors (with at most one column per
 * block) simulated on z's uniform shape; the one with the least predicted
 * epoch time, unless it beats the default by no more than
 * SIM_PIPELINE_MIN_GAIN (then the default).  Each candidate's prediction
 * is logged at info level, as is each one skipped above SIM_PIPELINE_MAX_COST. */
typedef struct sim_pipeline_pick {
    uint32_t pipeline;      /* the choice */
    double epoch_s;         /* its predicted epoch time */
    double default_epoch_s; /* the default's */
} sim_pipeline_pick;

int sim_pick_pipeline(const rt_sim_shape *knobs, const rt_sim_link *link, const sim_sizes *z,
                      sim_pipeline_pick *out, rt_error *err);

#endif
