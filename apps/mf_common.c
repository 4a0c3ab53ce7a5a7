/* mf_common.c - factor initialisation, training mean and options shared by
 * the MF apps (the model files: mf_model.c). */
#include "apps/mf_common.h"
#include "apps/model_set.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Stream ids for the RNG: rows and columns never share a stream. */
#define COLUMN_STREAM_BASE (1ULL << 40)

size_t rt_mf_slot_bytes(const rt_plan *plan, uint32_t kp, uint32_t extra)
{
    kp += extra;
    uint32_t max_cols = 0;
    for (uint32_t b = 0; b < plan->blocks; b++)
        if (rt_plan_block_cols(plan, b) > max_cols)
            max_cols = rt_plan_block_cols(plan, b);
    return (size_t)max_cols * kp * sizeof(float);
}

void rt_mf_init_vector(float *v, uint32_t k, uint32_t kp, const rt_mf_common_opts *o, int is_col,
                       uint64_t global_id)
{
    rt_rng rng;
    rt_rng_seed(&rng, o->seed, is_col ? COLUMN_STREAM_BASE + global_id : global_id);
    if (o->init_uniform) {
        for (uint32_t d = 0; d < k; d++)
            v[d] = (float)(o->init_scale * rt_rng_uniform(&rng));
    } else {
        float scale = (float)(o->init_scale / sqrt((double)k));
        for (uint32_t d = 0; d < k; d++)
            v[d] = scale * (float)rt_rng_normal(&rng);
    }
    for (uint32_t d = k; d < kp; d++)
        v[d] = 0.0f;
}

size_t rt_mf_block_bytes(const rt_plan *plan, uint32_t block, uint32_t kp, uint32_t extra)
{
    return (size_t)rt_plan_block_cols(plan, block) * (kp + extra) * sizeof(float);
}

size_t rt_mf_init_block(const rt_plan *plan, uint32_t block, float *payload, uint32_t kp,
                        const rt_mf_common_opts *o)
{
    uint32_t n = rt_plan_block_cols(plan, block);
    const uint32_t *ids = plan->block_col_ids + plan->block_col_offset[block];
    for (uint32_t j = 0; j < n; j++)
        rt_mf_init_vector(payload + (size_t)j * kp, o->k, kp, o, 1, ids[j]);
    if (o->biases)
        memset(rt_mf_payload_biases(payload, n, kp), 0, n * sizeof(float));
    return rt_mf_block_bytes(plan, block, kp, o->biases ? 1 : 0);
}

int rt_mf_is_validation(const rt_mf_common_opts *o, uint32_t global_row, uint32_t global_col)
{
    if (o->valid_fraction <= 0)
        return 0;
    uint64_t h =
        rt_hash64(rt_hash64(o->seed ^ 0x76616c6964ULL) ^ ((uint64_t)global_row << 32 | global_col));
    return (double)(h >> 11) * 0x1.0p-53 < o->valid_fraction;
}

int rt_mf_local_init(rt_mf_local *m, const rt_plan *plan, const rt_shard *shards,
                     uint32_t first_worker, uint32_t n_workers, const rt_mf_common_opts *o,
                     rt_error *err)
{
    memset(m, 0, sizeof(*m));
    m->plan = plan;
    m->first_worker = first_worker;
    m->n_workers = n_workers;
    m->k = o->k;
    m->kp = rt_mf_padded_rank(o->k);
    m->shards = shards;
    m->W = calloc(m->n_workers, sizeof(float *));
    if (o->biases)
        m->bu = calloc(m->n_workers, sizeof(float *));
    if (!m->W || (o->biases && !m->bu))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    for (uint32_t t = 0; t < m->n_workers; t++) {
        uint32_t w = m->first_worker + t;
        uint32_t rows = rt_plan_worker_rows(plan, w);
        m->W[t] = rt_alloc((size_t)rows * m->kp * sizeof(float));
        if (m->bu && !(m->bu[t] = rt_alloc((size_t)rows * sizeof(float))))
            return rt_fail(err, RT_EXIT_RUNTIME, "out of memory for %u row biases", rows);
        if (!m->W[t])
            return rt_fail(err, RT_EXIT_RUNTIME, "out of memory for %u x %u factors", rows, m->kp);
        const uint32_t *ids = plan->worker_row_ids + plan->worker_row_offset[w];
        for (uint32_t i = 0; i < rows; i++)
            rt_mf_init_vector(m->W[t] + (size_t)i * m->kp, m->k, m->kp, o, 0, ids[i]);
    }
    return 0;
}

void rt_mf_local_free(rt_mf_local *m)
{
    for (uint32_t t = 0; t < m->n_workers; t++) {
        if (m->W)
            rt_free(m->W[t]);
        if (m->bu)
            rt_free(m->bu[t]);
    }
    free(m->W);
    free(m->bu);
    memset(m, 0, sizeof(*m));
}

int rt_mf_allreduce_workers(rt_engine *eng, double *v, uint32_t workers, double *total,
                            rt_error *err)
{
    if (rt_engine_allreduce_f64(eng, v, workers, err))
        return -1;
    double sum = 0;
    for (uint32_t w = 0; w < workers; w++)
        sum += v[w];
    if (total)
        *total = sum;
    return 0;
}

int rt_mf_train_mean(const rt_plan *plan, const rt_shard *shards, uint32_t first_worker,
                     uint32_t n_workers, rt_engine *eng, double *mean, rt_error *err)
{
    double *sums = calloc(plan->workers, sizeof(double));
    if (!sums)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    for (uint32_t t = 0; t < n_workers; t++) {
        const rt_shard *s = &shards[t];
        double sum = 0;
        for (uint64_t i = 0; i < s->train_off[plan->blocks]; i++)
            sum += s->train[i].val;
        sums[first_worker + t] = sum;
    }
    double total;
    int rc = rt_mf_allreduce_workers(eng, sums, plan->workers, &total, err);
    free(sums);
    if (rc)
        return -1;
    *mean = plan->nnz_train ? total / (double)plan->nnz_train : 0.0;
    return 0;
}

/* --------------------------------------------------------------- options */

void rt_mf_common_defaults(rt_mf_common_opts *o)
{
    memset(o, 0, sizeof(*o));
    o->k = 32;
    o->lambda = 0.05;
    o->seed = 1;
    o->init_scale = 0.1;
}

int rt_mf_check_common(const rt_mf_common_opts *o, const rt_plan *plan, const char *app,
                       rt_error *err)
{
    if (plan->app != RT_PLAN_MF)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: plan was made for '%s', but --app %s needs a plan made with "
                       "--app mf",
                       plan->dir, rt_plan_app_name(plan->app), app);
    /* An unusable output directory fails now, not after the whole run. */
    if (o->out && rt_model_out_check(o->out, err))
        return -1;
    return 0;
}
