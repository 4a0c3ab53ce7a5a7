/* partition_auto.c - `rotor partition --pipeline auto`: the pipelining
 * factor chosen by simulating this job's sizes (tools/sim_shape.h). */
#include "tools/partition_cmd.h"

/* Defaults when --rate / --bytes-per-col are not given (see --help). */
#define AUTO_MF_RATE 6.8e7     /* SGD-MF, k = 32, per thread (README, Benchmarks) */
#define AUTO_LDA_RATE 9e6      /* LDA, tokens per second per thread */
#define AUTO_MF_COL_BYTES 132  /* k = 32 floats and a bias */
#define AUTO_LDA_COL_BYTES 400 /* K = 100 dense 32-bit counts */
/* A step's fixed cost (the hand-off between steps, the block's send and
 * receive), conservative: where cores are shared a woken thread waits for
 * one, up to a scheduler tick (4 ms at HZ=250 without kernel preemption);
 * `rotor simulate --calibrate-threads` measured 0.9-2 ms here, and the
 * 16-block plan auto once chose ran 0.85 ms per added step slower.  A
 * quiet node pays tens of microseconds, so this only errs toward fewer
 * steps: a factor with more steps must win more than a millisecond each. */
#define AUTO_STEP_OVERHEAD_S 1e-3

int partition_auto_pipeline(const partition_opts *o, double cols, double work, uint32_t *pipeline,
                            rt_error *err)
{
    int lda = o->app == PARTITION_LDA;
    sim_sizes z = {.nodes = o->nodes,
                   .threads = o->threads,
                   .cols = cols,
                   .work = work,
                   .col_bytes = o->link.bytes_per_col > 0 ? o->link.bytes_per_col
                                : lda                     ? AUTO_LDA_COL_BYTES
                                                          : AUTO_MF_COL_BYTES,
                   .lda = lda};
    z.topics = lda ? (uint32_t)(z.col_bytes / 4) : 0;
    rt_sim_shape knobs = {.rate = o->link.rate > 0 ? o->link.rate
                                  : lda            ? AUTO_LDA_RATE
                                                   : AUTO_MF_RATE,
                          .step_overhead_s = AUTO_STEP_OVERHEAD_S};
    rt_sim_link link = sim_link_of(&o->link);
    sim_pipeline_pick pick;
    if (sim_pick_pipeline(&knobs, &link, &z, &pick, err))
        return rt_error_prefix(err, "partition --pipeline auto");
    rt_info("pipeline auto: %u blocks per worker (predicted epoch %.4g s; the default %d: %.4g s) "
            "on %g Gb/s, %g us, %g us per message, %g us per step, %.3g %s/s per thread",
            pick.pipeline, pick.epoch_s, SIM_PIPELINE_DEFAULT, pick.default_epoch_s, link.gbps,
            o->link.latency_us, o->link.overhead_us, AUTO_STEP_OVERHEAD_S * 1e6, knobs.rate,
            lda ? "tokens" : "ratings");
    *pipeline = pick.pipeline;
    return 0;
}
