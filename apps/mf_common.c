/* mf_common.c - factor initialisation, training mean and options shared by
 * the MF apps (the model files: mf_model.c). */
#include "apps/mf_common.h"
#include "apps/metrics.h"
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

/* Over the training ratings of the local workers' shards and every other
 * rank's: the sum of (r - center)^power (power 1 or 2) and their count,
 * all-reduced per worker and added in worker order (the same bits on every
 * rank and for every split). */
static int worker_sums(const rt_plan *plan, const rt_shard *shards, uint32_t first_worker,
                       uint32_t n_workers, rt_engine *eng, double center, int power, double *total,
                       double *count, rt_error *err)
{
    uint32_t W = plan->workers;
    double *sums = calloc(2 * (size_t)W, sizeof(double)); /* sums, then counts, per worker */
    if (!sums)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    for (uint32_t t = 0; t < n_workers; t++) {
        const rt_shard *s = &shards[t];
        double sum = 0;
        for (uint64_t i = 0; i < s->train_off[plan->blocks]; i++) {
            double d = s->train[i].val - center;
            sum += power == 2 ? d * d : d;
        }
        sums[first_worker + t] = sum;
        sums[W + first_worker + t] = (double)s->train_off[plan->blocks];
    }
    int rc = rt_engine_allreduce_f64(eng, sums, 2 * (size_t)W, err);
    *total = *count = 0;
    for (uint32_t w = 0; w < W; w++) {
        *total += sums[w];
        *count += sums[W + w];
    }
    free(sums);
    return rc ? -1 : 0;
}

int rt_mf_train_mean(const rt_plan *plan, const rt_shard *shards, uint32_t first_worker,
                     uint32_t n_workers, rt_engine *eng, double *mean, rt_error *err)
{
    double total = 0, count = 0;
    if (worker_sums(plan, shards, first_worker, n_workers, eng, 0, 1, &total, &count, err))
        return -1;
    *mean = count > 0 ? total / count : 0.0;
    return 0;
}

/* The standard deviation of the training ratings in the shards of the local
 * workers and every other rank's (around their mean; with center = 0 their
 * root mean square).  Collective; the same on every rank and split. */
static int ratings_spread(const rt_plan *plan, const rt_shard *shards, uint32_t first_worker,
                          uint32_t n_workers, rt_engine *eng, int center, double *sd, rt_error *err)
{
    double mean = 0, total = 0, count = 0;
    if ((center && rt_mf_train_mean(plan, shards, first_worker, n_workers, eng, &mean, err)) ||
        worker_sums(plan, shards, first_worker, n_workers, eng, mean, 2, &total, &count, err))
        return -1;
    *sd = count > 0 ? sqrt(total / count) : 0;
    return 0;
}

double rt_mf_rating_scale(double sd)
{
    if (!(sd > 0) || !isfinite(sd))
        return 1;
    long e = lround(log2(sd));
    return ldexp(1.0, (int)(e < -60 ? -60 : e > 60 ? 60 : e));
}

int rt_mf_resolve_rating_scale(rt_mf_common_opts *o, const rt_plan *plan, const rt_shard *shards,
                               uint32_t first_worker, uint32_t n_workers, rt_engine *eng,
                               int center, int implicit, const char *app, rt_error *err)
{
    if (implicit) /* confidences and ranks, not ratings to fit */
        o->rating_scale = 1;
    if (o->rating_scale > 0)
        return 0;
    double sd;
    if (ratings_spread(plan, shards, first_worker, n_workers, eng, center, &sd, err))
        return -1;
    o->rating_scale = rt_mf_rating_scale(sd);
    if (sd == 0 && rt_engine_rank(eng) == 0)
        rt_warn("%s: every training rating is the same: an explicit model has nothing to fit "
                "(user-item pairs without ratings? train with --implicit)",
                app);
    if (o->rating_scale != 1 && rt_engine_rank(eng) == 0)
        rt_info("%s: the training ratings' spread is far from 1: training on rating / %g "
                "(--rating-scale auto; the saved model is in the ratings' units)",
                app, o->rating_scale);
    return 0;
}

/* ------------------------------------------------------------ validation */

uint8_t *rt_mf_validation_mask(const rt_plan *plan, const rt_shard *sh, const rt_mf_common_opts *o,
                               rt_error *err)
{
    uint64_t n = sh->train_off[plan->blocks];
    uint8_t *held = malloc(n ? n : 1);
    if (!held) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory for the validation set");
        return NULL;
    }
    for (uint32_t b = 0; b < plan->blocks; b++) {
        const uint32_t *cols = plan->block_col_ids + plan->block_col_offset[b];
        for (uint64_t e = sh->train_off[b]; e < sh->train_off[b + 1]; e++)
            held[e] = (uint8_t)rt_mf_is_validation(o, sh->row_ids[sh->train[e].row],
                                                   cols[sh->train[e].col]);
    }
    return held;
}

/* The entries of a shard section whose mask is `want` (mask NULL: all),
 * with global column ids, into out; returns their count. */
static uint64_t global_cols(const rt_plan *plan, const rt_entry *e, const uint64_t *off,
                            const uint8_t *mask, uint8_t want, rt_entry *out)
{
    uint64_t n = 0;
    for (uint32_t b = 0; b < plan->blocks; b++) {
        const uint32_t *cols = plan->block_col_ids + plan->block_col_offset[b];
        for (uint64_t i = off[b]; i < off[b + 1]; i++)
            if (!mask || mask[i] == want)
                out[n++] = (rt_entry){.row = e[i].row, .col = cols[e[i].col], .val = e[i].val};
    }
    return n;
}

/* Worker t's fit shard (its training entries with mask 0, per block) and
 * held-out ratings, in arrays sized for all of its training and test
 * entries.  -1 when out of memory. */
static int held_worker(rt_mf_held_out *h, uint32_t t, const rt_plan *plan, const rt_shard *sh,
                       const uint8_t *mask)
{
    uint32_t B = plan->blocks;
    uint64_t train = sh->train_off[B] - sh->train_off[0];
    rt_mf_held_worker *w = &h->worker[t];
    rt_part part[] = {RT_PART(w->fit_train, train), RT_PART(w->fit_off, B + 1),
                      RT_PART(w->valid, train),
                      RT_PART(w->test, sh->test_off[B] - sh->test_off[0])};
    if (!(w->arrays = rt_alloc_parts(part, 4)))
        return -1;
    uint64_t n = 0;
    for (uint32_t b = 0; b < B; b++) {
        w->fit_off[b] = n;
        for (uint64_t i = sh->train_off[b]; i < sh->train_off[b + 1]; i++)
            if (!mask[i])
                w->fit_train[n++] = sh->train[i];
    }
    w->fit_off[B] = n;
    h->fit[t] = *sh;
    h->fit[t].map = NULL; /* the shard's mapping stays its owner's */
    h->fit[t].train = w->fit_train;
    h->fit[t].train_off = w->fit_off;
    w->n_valid = global_cols(plan, sh->train, sh->train_off, mask, 1, w->valid);
    w->n_test = global_cols(plan, sh->test, sh->test_off, NULL, 0, w->test);
    return 0;
}

int rt_mf_held_out_split(rt_mf_held_out *h, const rt_plan *plan, const rt_shard *shards,
                         uint32_t n_workers, const rt_mf_common_opts *o, rt_error *err)
{
    memset(h, 0, sizeof(*h));
    h->n_workers = n_workers;
    rt_part part[] = {RT_PART(h->fit, n_workers), RT_PART(h->worker, n_workers)};
    if (!(h->arrays = rt_alloc_parts(part, 2)))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory for the validation set");
    for (uint32_t t = 0; t < n_workers; t++) {
        uint8_t *mask = rt_mf_validation_mask(plan, &shards[t], o, err);
        int rc = !mask || held_worker(h, t, plan, &shards[t], mask);
        free(mask);
        if (rc) {
            rt_mf_held_out_free(h);
            return rt_fail(err, RT_EXIT_RUNTIME, "out of memory for the validation set");
        }
    }
    return 0;
}

void rt_mf_held_out_free(rt_mf_held_out *h)
{
    for (uint32_t t = 0; h->arrays && t < h->n_workers; t++)
        rt_free(h->worker[t].arrays);
    rt_free(h->arrays);
    memset(h, 0, sizeof(*h));
}

void rt_mf_early_stop_init(rt_mf_early_stop *s)
{
    memset(s, 0, sizeof(*s));
    s->best_valid = INFINITY;
}

int rt_mf_early_stop_update(rt_mf_early_stop *s, double valid_rmse, uint64_t epoch,
                            uint32_t patience)
{
    if (valid_rmse < s->best_valid) {
        s->best_valid = valid_rmse;
        s->best_epoch = epoch;
        s->since_best = 0;
        return 1;
    }
    if (++s->since_best >= patience && patience)
        s->stop = 1;
    return 0;
}

/* ------------------------------------------------------- the whole of H */

int rt_mf_cols_init(rt_mf_cols *c, const rt_plan *plan, uint32_t k, int biases, rt_error *err)
{
    memset(c, 0, sizeof(*c));
    c->n_cols = plan->n_cols;
    c->k = k;
    c->kp = rt_mf_padded_rank(k);
    /* zeroed: the padding of H stays 0 */
    rt_part part[] = {RT_PART(c->sum, c->n_cols * (k + 1)), RT_PART(c->H, c->n_cols * c->kp),
                      RT_PART(c->bi, c->n_cols)};
    if (!(c->arrays = rt_alloc_parts(part, biases ? 3 : 2)))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory for %llu columns",
                       (unsigned long long)plan->n_cols);
    return 0;
}

void rt_mf_cols_free(rt_mf_cols *c)
{
    rt_free(c->arrays);
    memset(c, 0, sizeof(*c));
}

void rt_mf_cols_clear(rt_mf_cols *c)
{
    memset(c->sum, 0, c->n_cols * (c->k + 1) * sizeof(double));
}

void rt_mf_cols_put(rt_mf_cols *c, const rt_plan *plan, uint32_t block, const float *payload)
{
    uint32_t k = c->k, nb = rt_plan_block_cols(plan, block);
    const uint32_t *ids = plan->block_col_ids + plan->block_col_offset[block];
    const float *bias = c->bi ? payload + (size_t)nb * c->kp : NULL; /* rt_mf_payload_biases */
    for (uint32_t j = 0; j < nb; j++) {
        for (uint32_t d = 0; d < k; d++)
            c->sum[(size_t)ids[j] * k + d] = payload[(size_t)j * c->kp + d];
        if (bias)
            c->sum[c->n_cols * k + ids[j]] = bias[j];
    }
}

void rt_mf_cols_take(rt_mf_cols *c)
{
    uint32_t k = c->k;
    for (uint64_t j = 0; j < c->n_cols; j++) {
        for (uint32_t d = 0; d < k; d++)
            c->H[j * c->kp + d] = (float)c->sum[j * k + d];
        if (c->bi)
            c->bi[j] = (float)c->sum[c->n_cols * k + j];
    }
}

int rt_mf_cols_gather(rt_mf_cols *c, const rt_plan *plan, rt_engine *eng, rt_error *err)
{
    uint32_t first, span;
    rt_mf_cols_clear(c);
    rt_engine_home_blocks(eng, &first, &span);
    for (uint32_t b = first; b < first + span; b++) {
        const float *payload = rt_engine_home_payload(eng, b, NULL);
        if (!payload)
            return rt_fail(err, RT_EXIT_RUNTIME, "block %u is not home after the rotation", b);
        rt_mf_cols_put(c, plan, b, payload);
    }
    if (rt_engine_allreduce_f64(eng, c->sum, c->n_cols * (c->k + 1), err))
        return -1;
    rt_mf_cols_take(c);
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
    o->rating_scale = 1;
}

int rt_mf_check_common(const rt_mf_common_opts *o, const rt_plan *plan, const char *app,
                       rt_error *err)
{
    if (plan->app != RT_PLAN_MF)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: plan was made for '%s', but --app %s needs a plan made with "
                       "--app mf",
                       plan->dir, rt_plan_app_name(plan->app), app);
    /* The range auto picks from: training divides by S in float and the
     * saved model multiplies back, so --rating-scale 1e308 saved a model
     * that predicts NaN (exit 0), and 1e-300 diverged at once. */
    if (o->rating_scale > 0 && (o->rating_scale < 0x1p-60 || o->rating_scale > 0x1p60))
        return rt_fail(err, RT_EXIT_INPUT,
                       "--rating-scale: %g is out of range: 0 (auto) or 2^-60 .. 2^60 (%.3g .. "
                       "%.3g)",
                       o->rating_scale, 0x1p-60, 0x1p60);
    /* An unusable output directory, or plan ids the model could not be
     * saved with (tampered or damaged), fail now, not after the whole run. */
    if (o->out && (rt_model_out_check(o->out, err) || rt_plan_check_ids(plan, "rows", err) ||
                   rt_plan_check_ids(plan, "cols", err)))
        return -1;
    if (rt_metrics_check(o->metrics, err))
        return -1;
    return 0;
}
