/* sim_shape.c - see sim_shape.h. */
#include "tools/sim_shape.h"

#include "partition/partition.h"

#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

const rt_opt sim_link_options[] = {
    RT_DOUBLE_OPT("gbps", 0, sim_link_args, gbps, "G", "10", 0, HUGE_VAL, 0,
                  "link bandwidth per node and direction (0 = infinite)"),
    RT_DOUBLE_OPT("latency-us", 0, sim_link_args, latency_us, "L", "20", 0, HUGE_VAL, 0,
                  "one-way latency of a message"),
    RT_DOUBLE_OPT("overhead-us", 0, sim_link_args, overhead_us, "O", "5", 0, HUGE_VAL, 0,
                  "software cost of sending one message"),
    RT_DOUBLE_OPT("send-buffer-kib", 0, sim_link_args, buffer_kib, "K", "0", 0, HUGE_VAL, 0,
                  "what the sender holds beyond the wire: a pass frees its slot once all but K "
                  "KiB are on the wire (TCP: the socket's send buffer, 8192 for rotor's 4 MiB "
                  "SO_SNDBUF, which Linux doubles; 0: RDMA, on the wire)"),
    RT_DOUBLE_OPT("burst-kib", 0, sim_link_args, burst_kib, "K", "0", 0, HUGE_VAL, 0,
                  "a shaped link's token bucket (tc tbf burst): after an idle time up to K KiB "
                  "go at once (0: a real link)"),
    RT_DOUBLE_OPT("rate", 0, sim_link_args, rate, "R", NULL, 0, HUGE_VAL, RT_OPT_MIN_OPEN,
                  "kernel rate: work units (ratings or tokens) per second per thread"),
    RT_DOUBLE_OPT("bytes-per-col", 0, sim_link_args, bytes_per_col, "B", NULL, 1, HUGE_VAL, 0,
                  "payload bytes a column adds to a travelling block (default: the app's)"),
    {0}};

rt_sim_link sim_link_of(const sim_link_args *a)
{
    return (rt_sim_link){.gbps = a->gbps,
                         .latency_s = a->latency_us * 1e-6,
                         .overhead_s = a->overhead_us * 1e-6,
                         .buffer_bytes = a->buffer_kib * 1024,
                         .burst_bytes = a->burst_kib * 1024};
}

void sim_shape_free(sim_shape_buf *s)
{
    free(s->cells);
    free(s->bytes);
    free(s->schedule);
    memset(s, 0, sizeof(*s));
}

int sim_shape_alloc(sim_shape_buf *s, const rt_sim_shape *knobs, uint32_t nodes, uint32_t threads,
                    uint32_t pipeline, rt_error *err)
{
    memset(s, 0, sizeof(*s));
    s->shape = *knobs;
    s->shape.nodes = nodes, s->shape.threads = threads, s->shape.pipeline = pipeline;
    uint64_t W = (uint64_t)nodes * threads, B = W * pipeline;
    s->cells = rt_calloc_array(W * B, sizeof(double), "simulate", "cells", err);
    s->bytes = s->cells ? rt_calloc_array(B, sizeof(double), "simulate", "blocks", err) : NULL;
    s->schedule =
        s->bytes ? rt_calloc_array(W * B, sizeof(uint32_t), "simulate", "schedule", err) : NULL;
    if (!s->schedule) {
        sim_shape_free(s);
        return -1;
    }
    s->shape.cell_work = s->cells, s->shape.block_bytes = s->bytes;
    s->shape.schedule = s->schedule;
    return 0;
}

void sim_reduce_sizes(const sim_sizes *z, uint32_t workers, rt_sim_shape *s)
{
    s->step_reduce_bytes = z->lda ? 8.0 * z->topics : 0;
    s->step_reduce_every = z->sync_every;
    s->epoch_reduce_bytes = z->lda ? 0 : 16.0 * workers;
}

int sim_shape_uniform(sim_shape_buf *s, const rt_sim_shape *knobs, const sim_sizes *z,
                      uint32_t pipeline, rt_error *err)
{
    if (sim_shape_alloc(s, knobs, z->nodes, z->threads, pipeline, err))
        return -1;
    uint32_t W = z->nodes * z->threads, B = W * pipeline;
    for (uint64_t i = 0; i < (uint64_t)W * B; i++)
        s->cells[i] = z->work / ((double)W * B);
    for (uint32_t b = 0; b < B; b++)
        s->bytes[b] = z->col_bytes * z->cols / B;
    rt_schedule_ring(W, pipeline, s->schedule);
    sim_reduce_sizes(z, W, &s->shape);
    return 0;
}

static int predict(const rt_sim_shape *knobs, const rt_sim_link *link, const sim_sizes *z,
                   uint32_t pipeline, double *epoch_s, rt_error *err)
{
    sim_shape_buf s;
    if (sim_shape_uniform(&s, knobs, z, pipeline, err))
        return -1;
    rt_sim_result r;
    int rc = rt_sim_rotation(&s.shape, link, &r, err);
    sim_shape_free(&s);
    *epoch_s = r.epoch_s;
    if (rc == 0)
        rt_info("pipeline auto: %u blocks per worker: predicted epoch %.4g s, stall %.1f%%, %s",
                pipeline, r.epoch_s, 100 * r.stall_max, r.critical);
    return rc;
}

int sim_pick_pipeline(const rt_sim_shape *knobs, const rt_sim_link *link, const sim_sizes *z,
                      sim_pipeline_pick *out, rt_error *err)
{
    static const uint32_t candidates[] = {1, 2, 3, 4, 6, 8, 12, 16};
    double workers = (double)z->nodes * z->threads;
    uint32_t best = 0;
    double best_s = 0, default_s = 0;
    for (size_t i = 0; i < sizeof(candidates) / sizeof(candidates[0]); i++) {
        uint32_t c = candidates[i];
        if (c != SIM_PIPELINE_DEFAULT && c * workers > z->cols)
            continue; /* a block needs a column */
        if (c != SIM_PIPELINE_DEFAULT &&
            workers * workers * workers * c * c > SIM_PIPELINE_MAX_COST) {
            rt_info("pipeline auto: %u blocks per worker: skipped (simulating %.0f workers "
                    "would take too long)",
                    c, workers);
            continue;
        }
        double t;
        if (predict(knobs, link, z, c, &t, err))
            return -1;
        if (c == SIM_PIPELINE_DEFAULT)
            default_s = t;
        if (best == 0 || t < best_s)
            best = c, best_s = t;
    }
    if (best_s >= default_s * (1 - SIM_PIPELINE_MIN_GAIN))
        best = SIM_PIPELINE_DEFAULT, best_s = default_s;
    *out = (sim_pipeline_pick){.pipeline = best, .epoch_s = best_s, .default_epoch_s = default_s};
    return 0;
}
