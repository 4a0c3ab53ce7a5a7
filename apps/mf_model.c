/*
 * mf_model.c - the saved MF model (sgd-mf and cd-mf), its one writer and its
 * one reader:
 *
 *   W.npy, H.npy          float32 n_rows x k, n_cols x k (row = dense id)
 *   row_bias.npy,         float32 n_rows x 1, n_cols x 1 (models with biases)
 *   col_bias.npy
 *   rows.ids, cols.ids    original ids, line i = dense id i (copied from the plan)
 *   model.json            app, mu, k, sizes, options and final metrics
 *
 * rt_mf_save gathers the rows to rank 0, which writes them; rt_mf_model_load
 * reads them back into rows padded to kp floats, so that rt_mf_model_predict
 * computes w . h with the kernels' fixed-order rt_mf_dot, as training does.
 */
#include "apps/app_common.h"
#include "apps/mf_common.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ the gather */

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

/* Row biases of the local workers (in order) or column biases of the home
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

/* Gather one packed part to rank 0 and scatter it there into dense order
 * (`*dense` stays NULL on the other ranks). */
static int gather_dense(rt_engine *eng, const float *local, size_t bytes, const uint32_t *ids,
                        uint64_t n, uint32_t k, float **dense, rt_error *err)
{
    size_t *lens = calloc((size_t)rt_engine_size(eng), sizeof(size_t));
    void *all = NULL;
    int rc = -1;
    *dense = NULL;
    if (!lens || !local)
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory while saving the model");
    else if (rt_engine_gatherv(eng, local, bytes, &all, lens, err) == 0)
        rc = 0;
    if (rc == 0 && rt_engine_rank(eng) == 0 && !(*dense = scatter_rows(all, ids, n, k)))
        rc = rt_fail(err, RT_EXIT_RUNTIME, "out of memory while saving the model");
    free(lens);
    free(all);
    return rc;
}

/* ------------------------------------------------------------ the files */

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

static int write_matrix(const char *dir, const char *name, const float *m, uint64_t rows,
                        uint32_t cols, rt_error *err)
{
    char path[4096];
    if (rt_path_join(path, sizeof(path), dir, name, err))
        return -1;
    return rt_npy_write_f32(path, m, rows, cols, cols, err);
}

int rt_mf_model_write(const char *dir, const rt_plan *plan, const rt_mf_common_opts *o,
                      const float *W, const float *H, const float *bu, const float *bi,
                      json_t *meta, rt_error *err)
{
    char path[4096], from[4096];
    int rc = -1;
    if (rt_mkdir_p(dir, err) || write_matrix(dir, "W.npy", W, plan->n_rows, o->k, err) ||
        write_matrix(dir, "H.npy", H, plan->n_cols, o->k, err))
        goto out;
    if (bu && (write_matrix(dir, "row_bias.npy", bu, plan->n_rows, 1, err) ||
               write_matrix(dir, "col_bias.npy", bi, plan->n_cols, 1, err)))
        goto out;
    static const char *const id_files[] = {"rows.ids", "cols.ids"};
    for (int i = 0; i < 2; i++)
        if (rt_path_join(from, sizeof(from), plan->dir, id_files[i], err) ||
            rt_path_join(path, sizeof(path), dir, id_files[i], err) || copy_file(from, path, err))
            goto out;
    json_object_set_new(meta, "k", json_integer(o->k));
    json_object_set_new(meta, "n_rows", json_integer((json_int_t)plan->n_rows));
    json_object_set_new(meta, "n_cols", json_integer((json_int_t)plan->n_cols));
    /* Absolute, so that recommend and eval find the training items from
     * any working directory. */
    char *plan_abs = realpath(plan->dir, NULL);
    json_object_set_new(meta, "plan", json_string(plan_abs ? plan_abs : plan->dir));
    free(plan_abs);
    char id[32];
    snprintf(id, sizeof(id), "%016llx", (unsigned long long)plan->plan_id);
    json_object_set_new(meta, "plan_id", json_string(id));
    json_object_set_new(meta, "seed", json_integer((json_int_t)o->seed));
    json_object_set_new(meta, "lambda", json_real(o->lambda));
    json_object_set_new(meta, "W", json_string("W.npy"));
    json_object_set_new(meta, "H", json_string("H.npy"));
    if (bu) {
        json_object_set_new(meta, "row_bias", json_string("row_bias.npy"));
        json_object_set_new(meta, "col_bias", json_string("col_bias.npy"));
    }
    if (rt_path_join(path, sizeof(path), dir, "model.json", err))
        goto out;
    rc = rt_app_write_json(path, meta, err);
out:
    json_decref(meta);
    return rc;
}

int rt_mf_save(rt_mf_local *m, rt_engine *eng, const rt_mf_common_opts *o, json_t *meta,
               rt_error *err)
{
    const rt_plan *plan = m->plan;
    size_t bytes[4] = {0};
    float *W = NULL, *H = NULL, *bu = NULL, *bi = NULL;
    float *w_local = pack_local_W(m, &bytes[0]), *h_local = pack_home_H(m, eng, &bytes[1]);
    float *bu_local = m->bu ? pack_biases(m, eng, 0, &bytes[2]) : NULL;
    float *bi_local = m->bu ? pack_biases(m, eng, 1, &bytes[3]) : NULL;
    int rc = -1;
    if (gather_dense(eng, w_local, bytes[0], plan->worker_row_ids, plan->n_rows, m->k, &W, err) ||
        gather_dense(eng, h_local, bytes[1], plan->block_col_ids, plan->n_cols, m->k, &H, err))
        goto out;
    if (m->bu &&
        (gather_dense(eng, bu_local, bytes[2], plan->worker_row_ids, plan->n_rows, 1, &bu, err) ||
         gather_dense(eng, bi_local, bytes[3], plan->block_col_ids, plan->n_cols, 1, &bi, err)))
        goto out;
    rc = 0;
    if (rt_engine_rank(eng) == 0) {
        rc = rt_mf_model_write(o->out, plan, o, W, H, bu, bi, meta, err);
        meta = NULL;
    }
    /* Nobody reports success before rank 0 has written the files. */
    if (rt_engine_barrier(eng, rc ? NULL : err))
        rc = -1;
out:
    json_decref(meta);
    free(w_local);
    free(h_local);
    free(bu_local);
    free(bi_local);
    free(W);
    free(H);
    free(bu);
    free(bi);
    return rc;
}

/* ------------------------------------------------------------ the reader */

typedef struct rt_mf_model {
    float mu;
    uint32_t k, kp;
    uint64_t n_rows, n_cols;
    float *W, *H;   /* rows padded to kp floats, RT_ALIGN aligned */
    float *bu, *bi; /* NULL when the model has no biases */
    rt_idmap rows, cols;
} rt_mf_model;

/* Read DIR/NAME (rows x cols floats, cols = want_cols unless 0) into rows
 * padded to `pad` floats. */
static int read_padded(const char *dir, const char *name, uint64_t want_rows, uint64_t want_cols,
                       uint32_t pad, float **out, uint64_t *rows, uint64_t *cols, rt_error *err)
{
    char path[4096];
    float *dense = NULL;
    if (rt_path_join(path, sizeof(path), dir, name, err) ||
        rt_npy_read_f32(path, &dense, rows, cols, err))
        return -1;
    if ((want_rows && *rows != want_rows) || (want_cols && *cols != want_cols) || *cols > pad ||
        *cols == 0) {
        free(dense);
        return rt_fail(err, RT_EXIT_INPUT, "%s: is %llu x %llu, expected %llu x %llu", path,
                       (unsigned long long)*rows, (unsigned long long)*cols,
                       (unsigned long long)(want_rows ? want_rows : *rows),
                       (unsigned long long)(want_cols ? want_cols : *cols));
    }
    *out = rt_alloc((size_t)*rows * pad * sizeof(float) + 1);
    if (!*out) {
        free(dense);
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: out of memory", path);
    }
    for (uint64_t i = 0; i < *rows; i++)
        memcpy(*out + i * pad, dense + i * *cols, *cols * sizeof(float));
    free(dense);
    return 0;
}

void rt_mf_model_free(void *p)
{
    rt_mf_model *m = p;
    if (!m)
        return;
    rt_free(m->W);
    rt_free(m->H);
    rt_free(m->bu);
    rt_free(m->bi);
    rt_idmap_free(&m->rows);
    rt_idmap_free(&m->cols);
    free(m);
}

static int load(const char *dir, rt_mf_model *m, rt_error *err)
{
    char path[4096];
    json_t *meta = rt_app_model_json(dir, path, err);
    if (!meta)
        return -1;
    json_t *mu = json_object_get(meta, "mu"), *k = json_object_get(meta, "k");
    m->mu = json_is_number(mu) ? (float)json_number_value(mu) : 0.0f;
    int biases = json_is_true(json_object_get(meta, "biases"));
    json_int_t kv = json_is_integer(k) ? json_integer_value(k) : 0;
    json_decref(meta);
    if (kv <= 0 || kv > 4096)
        return rt_fail(err, RT_EXIT_INPUT, "%s: \"k\" must be an integer in 1..4096", path);
    m->k = (uint32_t)kv;
    m->kp = rt_mf_padded_rank(m->k);
    uint64_t r, c;
    if (read_padded(dir, "W.npy", 0, m->k, m->kp, &m->W, &m->n_rows, &c, err) ||
        read_padded(dir, "H.npy", 0, m->k, m->kp, &m->H, &m->n_cols, &c, err))
        return -1;
    if (biases && (read_padded(dir, "row_bias.npy", m->n_rows, 1, 1, &m->bu, &r, &c, err) ||
                   read_padded(dir, "col_bias.npy", m->n_cols, 1, 1, &m->bi, &r, &c, err)))
        return -1;
    return rt_app_read_ids(dir, "rows.ids", &m->rows, m->n_rows, err) ||
                   rt_app_read_ids(dir, "cols.ids", &m->cols, m->n_cols, err)
               ? -1
               : 0;
}

int rt_mf_model_load(const char *dir, void **out, rt_error *err)
{
    rt_mf_model *m = calloc(1, sizeof(*m));
    if (!m)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    rt_idmap_init(&m->rows);
    rt_idmap_init(&m->cols);
    if (load(dir, m, err)) {
        rt_mf_model_free(m);
        return -1;
    }
    *out = m;
    return 0;
}

void rt_mf_model_ids(void *p, rt_idmap **rows, rt_idmap **cols)
{
    rt_mf_model *m = p;
    *rows = &m->rows;
    *cols = &m->cols;
}

float rt_mf_model_predict(const void *p, uint32_t row, uint32_t col)
{
    const rt_mf_model *m = p;
    return rt_mf_predict(m->W + (size_t)row * m->kp, m->H + (size_t)col * m->kp, m->kp, m->mu,
                         m->bu ? m->bu[row] : 0.0f, m->bi ? m->bi[col] : 0.0f);
}

void rt_mf_model_scores(const void *p, const uint32_t *rows, uint32_t n_rows, uint32_t col0,
                        uint32_t n_cols, float *out)
{
    for (uint32_t i = 0; i < n_rows; i++)
        for (uint32_t j = 0; j < n_cols; j++)
            out[(size_t)i * n_cols + j] = rt_mf_model_predict(p, rows[i], col0 + j);
}
