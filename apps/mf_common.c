/* mf_common.c - shards, factor initialisation, metrics and model output
 * shared by the MF apps. */
#include "apps/mf_common.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Stream ids for the RNG: rows and columns never share a stream. */
#define COLUMN_STREAM_BASE (1ULL << 40)

size_t rt_mf_slot_bytes(const rt_plan *plan, uint32_t kp, int biases)
{
    kp += biases ? 1 : 0;
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

size_t rt_mf_init_block(const rt_plan *plan, uint32_t block, float *payload, uint32_t kp,
                        const rt_mf_common_opts *o)
{
    uint32_t n = rt_plan_block_cols(plan, block);
    const uint32_t *ids = plan->block_col_ids + plan->block_col_offset[block];
    for (uint32_t j = 0; j < n; j++)
        rt_mf_init_vector(payload + (size_t)j * kp, o->k, kp, o, 1, ids[j]);
    if (o->biases) {
        memset(rt_mf_payload_biases(payload, n, kp), 0, n * sizeof(float));
        return (size_t)n * (kp + 1) * sizeof(float);
    }
    return (size_t)n * kp * sizeof(float);
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

/* ------------------------------------------------------------ model output */

/* This node's W rows (local workers in order) or home H blocks (in block order),
 * as k floats per row, for the gather. */
static float *pack_local_W(const rt_mf_local *m, size_t *bytes)
{
    uint64_t rows = 0;
    for (uint32_t t = 0; t < m->n_workers; t++)
        rows += rt_plan_worker_rows(m->plan, m->first_worker + t);
    float *out = malloc(rows * m->k * sizeof(float) + 1);
    if (!out)
        return NULL;
    float *p = out;
    for (uint32_t t = 0; t < m->n_workers; t++) {
        uint32_t n = rt_plan_worker_rows(m->plan, m->first_worker + t);
        for (uint32_t i = 0; i < n; i++, p += m->k)
            memcpy(p, m->W[t] + (size_t)i * m->kp, m->k * sizeof(float));
    }
    *bytes = rows * m->k * sizeof(float);
    return out;
}

static float *pack_home_H(const rt_mf_local *m, rt_engine *eng, size_t *bytes)
{
    const rt_plan *plan = m->plan;
    uint32_t first, span;
    rt_engine_home_blocks(eng, &first, &span);
    uint64_t cols = plan->block_col_offset[first + span] - plan->block_col_offset[first];
    float *out = malloc(cols * m->k * sizeof(float) + 1);
    if (!out)
        return NULL;
    float *p = out;
    for (uint32_t b = first; b < first + span; b++) {
        const float *payload = rt_engine_home_payload(eng, b, NULL);
        uint32_t n = rt_plan_block_cols(plan, b);
        for (uint32_t j = 0; j < n; j++, p += m->k)
            memcpy(p, payload + (size_t)j * m->kp, m->k * sizeof(float));
    }
    *bytes = cols * m->k * sizeof(float);
    return out;
}

/* Row biases of the local workers (in order) and column biases of the home
 * blocks (in block order), one float each, for the gather. */
static float *pack_biases(const rt_mf_local *m, rt_engine *eng, int cols, size_t *bytes)
{
    const rt_plan *plan = m->plan;
    uint32_t first, span;
    rt_engine_home_blocks(eng, &first, &span);
    uint64_t n = 0;
    if (cols)
        n = plan->block_col_offset[first + span] - plan->block_col_offset[first];
    else
        for (uint32_t t = 0; t < m->n_workers; t++)
            n += rt_plan_worker_rows(plan, m->first_worker + t);
    float *out = malloc(n * sizeof(float) + 1), *p = out;
    if (!out)
        return NULL;
    if (cols) {
        for (uint32_t b = first; b < first + span; b++) {
            uint32_t nb = rt_plan_block_cols(plan, b);
            memcpy(p, rt_mf_payload_biases(rt_engine_home_payload(eng, b, NULL), nb, m->kp),
                   nb * sizeof(float));
            p += nb;
        }
    } else {
        for (uint32_t t = 0; t < m->n_workers; t++) {
            uint32_t nr = rt_plan_worker_rows(plan, m->first_worker + t);
            memcpy(p, m->bu[t], nr * sizeof(float));
            p += nr;
        }
    }
    *bytes = n * sizeof(float);
    return out;
}

/* Scatter gathered rows (in list order) to their global ids. */
static float *scatter_rows(const float *gathered, const uint32_t *ids, uint64_t n, uint32_t k)
{
    float *out = calloc(n * k + 1, sizeof(float));
    if (!out)
        return NULL;
    for (uint64_t i = 0; i < n; i++)
        memcpy(out + (size_t)ids[i] * k, gathered + i * k, k * sizeof(float));
    return out;
}

static int copy_file(const char *from, const char *to, rt_error *err)
{
    FILE *in = fopen(from, "rb");
    if (!in)
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: cannot open", from);
    rt_outfile of;
    if (rt_outfile_open(&of, to, err)) {
        fclose(in);
        return -1;
    }
    char buf[1 << 16];
    size_t n;
    int rc = 0;
    while (rc == 0 && (n = fread(buf, 1, sizeof(buf), in)) > 0)
        rc = rt_write_all(of.fp, buf, n, to, err);
    fclose(in);
    if (rc) {
        rt_outfile_abort(&of);
        return -1;
    }
    return rt_outfile_commit(&of, err);
}

static int write_json(const char *path, json_t *obj, rt_error *err)
{
    char *text = json_dumps(obj, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (!text)
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: cannot encode JSON", path);
    rt_outfile of;
    int rc = rt_outfile_open(&of, path, err);
    if (rc == 0 && (rt_write_all(of.fp, text, strlen(text), path, err) ||
                    rt_write_all(of.fp, "\n", 1, path, err))) {
        rt_outfile_abort(&of);
        rc = -1;
    } else if (rc == 0) {
        rc = rt_outfile_commit(&of, err);
    }
    free(text);
    return rc;
}

/* Gather one bias vector (rows or columns) and, on rank 0, write it. */
static int save_biases(rt_mf_local *m, rt_engine *eng, const rt_mf_common_opts *o, int cols,
                       rt_error *err)
{
    const rt_plan *plan = m->plan;
    size_t bytes = 0, *lens = calloc((size_t)rt_engine_size(eng), sizeof(size_t));
    float *local = pack_biases(m, eng, cols, &bytes), *all = NULL, *dense = NULL;
    int rc = -1;
    if (!lens || !local) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory while saving biases");
        goto out;
    }
    if (rt_engine_gatherv(eng, local, bytes, (void **)&all, lens, err))
        goto out;
    rc = 0;
    if (rt_engine_rank(eng) == 0) {
        uint64_t n = cols ? plan->n_cols : plan->n_rows;
        char path[4096];
        dense = scatter_rows(all, cols ? plan->block_col_ids : plan->worker_row_ids, n, 1);
        if (!dense)
            rc = rt_fail(err, RT_EXIT_RUNTIME, "out of memory while saving biases");
        else if (rt_mkdir_p(o->out, err) ||
                 rt_path_join(path, sizeof(path), o->out, cols ? "col_bias.npy" : "row_bias.npy",
                              err) ||
                 rt_npy_write_f32(path, dense, n, 1, 1, err))
            rc = -1;
    }
out:
    free(lens);
    free(local);
    free(all);
    free(dense);
    return rc;
}

static int write_outputs(const rt_mf_local *m, const rt_mf_common_opts *o, const float *W,
                         const float *H, json_t *meta, rt_error *err)
{
    const rt_plan *plan = m->plan;
    char path[4096], from[4096];
    if (rt_mkdir_p(o->out, err))
        return -1;
    if (rt_path_join(path, sizeof(path), o->out, "W.npy", err) ||
        rt_npy_write_f32(path, W, plan->n_rows, m->k, m->k, err))
        return -1;
    if (rt_path_join(path, sizeof(path), o->out, "H.npy", err) ||
        rt_npy_write_f32(path, H, plan->n_cols, m->k, m->k, err))
        return -1;
    static const char *const id_files[] = {"rows.ids", "cols.ids"};
    for (int i = 0; i < 2; i++)
        if (rt_path_join(from, sizeof(from), plan->dir, id_files[i], err) ||
            rt_path_join(path, sizeof(path), o->out, id_files[i], err) ||
            copy_file(from, path, err))
            return -1;
    json_object_set_new(meta, "k", json_integer(m->k));
    json_object_set_new(meta, "n_rows", json_integer((json_int_t)plan->n_rows));
    json_object_set_new(meta, "n_cols", json_integer((json_int_t)plan->n_cols));
    json_object_set_new(meta, "plan", json_string(plan->dir));
    char id[32];
    snprintf(id, sizeof(id), "%016llx", (unsigned long long)plan->plan_id);
    json_object_set_new(meta, "plan_id", json_string(id));
    json_object_set_new(meta, "seed", json_integer((json_int_t)o->seed));
    json_object_set_new(meta, "lambda", json_real(o->lambda));
    json_object_set_new(meta, "W", json_string("W.npy"));
    json_object_set_new(meta, "H", json_string("H.npy"));
    if (m->bu) {
        json_object_set_new(meta, "row_bias", json_string("row_bias.npy"));
        json_object_set_new(meta, "col_bias", json_string("col_bias.npy"));
    }
    if (rt_path_join(path, sizeof(path), o->out, "model.json", err))
        return -1;
    return write_json(path, meta, err);
}

int rt_mf_save(rt_mf_local *m, rt_engine *eng, const rt_mf_common_opts *o, json_t *meta,
               rt_error *err)
{
    const rt_plan *plan = m->plan;
    int size = rt_engine_size(eng), rc = -1;
    size_t w_bytes = 0, h_bytes = 0;
    size_t *lens = calloc((size_t)size, sizeof(size_t));
    float *w_local = pack_local_W(m, &w_bytes);
    float *h_local = pack_home_H(m, eng, &h_bytes);
    void *w_all = NULL, *h_all = NULL;
    float *W = NULL, *H = NULL;
    if (!lens || !w_local || !h_local) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory while saving the model");
        goto out;
    }
    if (rt_engine_gatherv(eng, w_local, w_bytes, &w_all, lens, err) ||
        rt_engine_gatherv(eng, h_local, h_bytes, &h_all, lens, err))
        goto out;
    if (m->bu && (save_biases(m, eng, o, 0, err) || save_biases(m, eng, o, 1, err)))
        goto out;
    rc = 0;
    if (rt_engine_rank(eng) == 0) {
        W = scatter_rows(w_all, plan->worker_row_ids, plan->n_rows, m->k);
        H = scatter_rows(h_all, plan->block_col_ids, plan->n_cols, m->k);
        if (!W || !H)
            rc = rt_fail(err, RT_EXIT_RUNTIME, "out of memory while saving the model");
        else
            rc = write_outputs(m, o, W, H, meta, err);
    }
    /* Nobody reports success before rank 0 has written the files. */
    if (rt_engine_barrier(eng, rc ? NULL : err))
        rc = -1;
out:
    json_decref(meta);
    free(lens);
    free(w_local);
    free(h_local);
    free(w_all);
    free(h_all);
    free(W);
    free(H);
    return rc;
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

int rt_mf_parse_common(rt_mf_common_opts *o, int argc, char **argv, int *i, rt_error *err)
{
    const char *arg = argv[*i], *v;
    double d;
    uint64_t u;
    if (rt_opt_is(arg, "--rank") || rt_opt_is(arg, "-k")) {
        if (!(v = rt_opt_value(argc, argv, i, err)))
            return -1;
        int k;
        if (rt_parse_int(v, &k) || k <= 0 || k > 4096)
            return rt_fail(err, RT_EXIT_INPUT, "--rank must be an integer in 1..4096, got '%s'", v);
        o->k = (uint32_t)k;
    } else if (rt_opt_is(arg, "--lambda")) {
        if (!(v = rt_opt_value(argc, argv, i, err)))
            return -1;
        if (rt_parse_double(v, &d) || d < 0)
            return rt_fail(err, RT_EXIT_INPUT, "--lambda must be a number >= 0, got '%s'", v);
        o->lambda = d;
    } else if (rt_opt_is(arg, "--seed")) {
        if (!(v = rt_opt_value(argc, argv, i, err)))
            return -1;
        if (rt_parse_u64(v, &u))
            return rt_fail(err, RT_EXIT_INPUT, "--seed must be a non-negative integer, got '%s'",
                           v);
        o->seed = u;
    } else if (rt_opt_is(arg, "--init-scale")) {
        if (!(v = rt_opt_value(argc, argv, i, err)))
            return -1;
        if (rt_parse_double(v, &d) || d <= 0)
            return rt_fail(err, RT_EXIT_INPUT, "--init-scale must be > 0, got '%s'", v);
        o->init_scale = d;
    } else if (rt_opt_is(arg, "--validation-fraction")) {
        if (!(v = rt_opt_value(argc, argv, i, err)))
            return -1;
        if (rt_parse_double(v, &d) || !(d > 0 && d <= 0.5))
            return rt_fail(err, RT_EXIT_INPUT,
                           "--validation-fraction must be a number in (0, 0.5], got '%s'", v);
        o->valid_fraction = d;
    } else if (rt_opt_is(arg, "--early-stop")) {
        if (!(v = rt_opt_value(argc, argv, i, err)))
            return -1;
        int n;
        if (rt_parse_int(v, &n) || n <= 0)
            return rt_fail(err, RT_EXIT_INPUT, "--early-stop must be a positive integer, got '%s'",
                           v);
        o->early_stop = (uint32_t)n;
    } else if (rt_opt_is(arg, "--out")) {
        if (!(v = rt_opt_value(argc, argv, i, err)))
            return -1;
        if (snprintf(o->out, sizeof(o->out), "%s", v) >= (int)sizeof(o->out))
            return rt_fail(err, RT_EXIT_INPUT, "--out path too long");
    } else if (rt_opt_is(arg, "--metrics")) {
        if (!(v = rt_opt_value(argc, argv, i, err)))
            return -1;
        if (snprintf(o->metrics, sizeof(o->metrics), "%s", v) >= (int)sizeof(o->metrics))
            return rt_fail(err, RT_EXIT_INPUT, "--metrics path too long");
    } else {
        return 0;
    }
    return 1;
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
    if (o->out[0] && rt_check_out_dir(o->out, err))
        return -1;
    return 0;
}
