/*
 * mf_model.c - the saved MF model (sgd-mf and cd-mf), its one writer and its
 * one reader.  `rotor train --out DIR` writes it as a set of per-rank parts
 * (apps/model_set.h) plus the whole-model files rank 0 writes:
 *
 *   W.part-RRRRR.npy       float32 rows x k: rank R's workers' W rows
 *   rows.part-RRRRR.npy    int32 rows x 1: their dense row ids
 *   H.part-RRRRR.npy       float32 cols x k: rank R's home blocks' H rows
 *   cols.part-RRRRR.npy    int32 cols x 1: their dense column ids
 *   row_bias.part-RRRRR.npy, col_bias.part-RRRRR.npy   float32 x 1 (biases)
 *   rows.ids, cols.ids     original ids, line i = dense id i (from the plan)
 *   model.json             app, mu, k, sizes, options, final metrics, and
 *                          the manifest of the parts
 *
 * `rotor export --format npy` merges the parts into the single-file model
 * (W.npy n_rows x k, H.npy n_cols x k, row_bias.npy, col_bias.npy in dense
 * order, ids, model.json naming them), which rt_mf_model_write also writes
 * and the reader accepts as well.  rt_mf_model_load reads either into rows
 * padded to kp floats, so that rt_mf_model_predict computes w . h with the
 * kernels' fixed-order rt_mf_dot, as training does.
 */
#include "apps/app_common.h"
#include "apps/mf_common.h"
#include "apps/model_set.h"
#include "ground/json.h"

#include <errno.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#define MF_READ_BUFFER (16u << 20) /* bytes of buffers when reading parts */

/* ------------------------------------------------------------ the parts */

/* Part NAME: the n dense ids of this rank's rows or columns, one run of the
 * plan's id table. */
static int save_ids(rt_model_saver *s, const char *name, const uint32_t *ids, uint64_t n,
                    rt_error *err)
{
    return rt_model_part_begin(s, name, "<i4", n, 1, err) ||
                   rt_model_part_write(s, ids, n * sizeof(uint32_t), err) ||
                   rt_model_part_end(s, err)
               ? -1
               : 0;
}

/* n floats of src times `scale` (the --rating-scale that training divided
 * the ratings by: exact, a power of two). */
static int write_scaled(rt_model_saver *s, const float *src, size_t n, double scale, rt_error *err)
{
    if (scale == 1)
        return rt_model_part_write(s, src, n * sizeof(float), err);
    float buf[1024];
    for (size_t i = 0; i < n; i += 1024) {
        size_t m = n - i < 1024 ? n - i : 1024;
        for (size_t j = 0; j < m; j++)
            buf[j] = (float)(src[i + j] * scale);
        if (rt_model_part_write(s, buf, m * sizeof(float), err))
            return -1;
    }
    return 0;
}

static double model_scale(const rt_mf_common_opts *o)
{
    return o->rating_scale > 0 ? o->rating_scale : 1.0;
}

/* This rank's workers' W rows (in worker order), their dense ids and biases
 * (W as trained: the rating scale goes into H and the biases). */
static int save_rows(rt_model_saver *s, const rt_mf_local *m, double scale, rt_error *err)
{
    const rt_plan *plan = m->plan;
    uint32_t w0 = m->first_worker, wn = m->first_worker + m->n_workers;
    uint64_t n = plan->worker_row_offset[wn] - plan->worker_row_offset[w0];
    if (rt_model_part_begin(s, "W", "<f4", n, m->k, err))
        return -1;
    for (uint32_t t = 0; t < m->n_workers; t++)
        for (uint32_t i = 0; i < rt_plan_worker_rows(plan, w0 + t); i++)
            if (rt_model_part_write(s, m->W[t] + (size_t)i * m->kp, m->k * sizeof(float), err))
                return -1;
    if (rt_model_part_end(s, err) ||
        save_ids(s, "rows", plan->worker_row_ids + plan->worker_row_offset[w0], n, err))
        return -1;
    if (!m->bu)
        return 0;
    if (rt_model_part_begin(s, "row_bias", "<f4", n, 1, err))
        return -1;
    for (uint32_t t = 0; t < m->n_workers; t++)
        if (write_scaled(s, m->bu[t], rt_plan_worker_rows(plan, w0 + t), scale, err))
            return -1;
    return rt_model_part_end(s, err);
}

/* This rank's home blocks' H rows (in block order), their ids and biases. */
static int save_cols(rt_model_saver *s, const rt_mf_local *m, rt_engine *eng, double scale,
                     rt_error *err)
{
    const rt_plan *plan = m->plan;
    uint32_t first, span;
    rt_engine_home_blocks(eng, &first, &span);
    uint64_t n = plan->block_col_offset[first + span] - plan->block_col_offset[first];
    if (rt_model_part_begin(s, "H", "<f4", n, m->k, err))
        return -1;
    for (uint32_t b = first; b < first + span; b++) {
        const float *payload = rt_engine_home_payload(eng, b, NULL);
        for (uint32_t j = 0; j < rt_plan_block_cols(plan, b); j++)
            if (write_scaled(s, payload + (size_t)j * m->kp, m->k, scale, err))
                return -1;
    }
    if (rt_model_part_end(s, err) ||
        save_ids(s, "cols", plan->block_col_ids + plan->block_col_offset[first], n, err))
        return -1;
    if (!m->bu)
        return 0;
    if (rt_model_part_begin(s, "col_bias", "<f4", n, 1, err))
        return -1;
    for (uint32_t b = first; b < first + span; b++) {
        uint32_t nb = rt_plan_block_cols(plan, b);
        float *payload = rt_engine_home_payload(eng, b, NULL);
        if (write_scaled(s, rt_mf_payload_biases(payload, nb, m->kp), nb, scale, err))
            return -1;
    }
    return rt_model_part_end(s, err);
}

/* ------------------------------------------------------------ the files */

static int write_matrix(const char *dir, const char *name, const float *m, uint64_t rows,
                        uint32_t cols, rt_error *err)
{
    char path[4096];
    if (rt_path_join(path, sizeof(path), dir, name, err))
        return -1;
    return rt_npy_write_f32(path, m, rows, cols, cols, err);
}

/* What model.json says about every MF model, sharded or not. */
static void meta_common(json_t *meta, const rt_plan *plan, const rt_mf_common_opts *o)
{
    json_object_set_new(meta, "k", json_integer(o->k));
    json_object_set_new(meta, "n_rows", json_integer((json_int_t)plan->n_rows));
    json_object_set_new(meta, "n_cols", json_integer((json_int_t)plan->n_cols));
    /* Absolute, so that recommend and eval find the training items from
     * any working directory. */
    char *plan_abs = realpath(plan->dir, NULL);
    json_object_set_new(meta, "plan", rt_json_text(plan_abs ? plan_abs : plan->dir));
    free(plan_abs);
    char id[32];
    snprintf(id, sizeof(id), "%016llx", (unsigned long long)plan->plan_id);
    json_object_set_new(meta, "plan_id", json_string(id));
    json_object_set_new(meta, "seed", json_integer((json_int_t)o->seed));
    json_object_set_new(meta, "lambda", json_real(o->lambda));
    if (model_scale(o) != 1) /* informative: the files hold the model in the ratings' units */
        json_object_set_new(meta, "rating_scale", json_real(model_scale(o)));
}

/* The names model.json gives the files of a single-file model. */
static void meta_single_files(json_t *meta, int biases)
{
    json_object_set_new(meta, "W", json_string("W.npy"));
    json_object_set_new(meta, "H", json_string("H.npy"));
    if (biases) {
        json_object_set_new(meta, "row_bias", json_string("row_bias.npy"));
        json_object_set_new(meta, "col_bias", json_string("col_bias.npy"));
    }
}

static int copy_ids(const char *from_dir, const char *to_dir, uint64_t rows, uint64_t cols,
                    rt_error *err)
{
    return rt_model_copy_file(from_dir, to_dir, "rows.ids", rows, err) ||
                   rt_model_copy_file(from_dir, to_dir, "cols.ids", cols, err)
               ? -1
               : 0;
}

int rt_mf_model_write(const char *dir, const rt_plan *plan, const rt_mf_common_opts *o,
                      const float *W, const float *H, const float *bu, const float *bi,
                      json_t *meta, rt_error *err)
{
    char path[4096];
    int rc = -1;
    if (rt_mkdir_p(dir, err) || write_matrix(dir, "W.npy", W, plan->n_rows, o->k, err) ||
        write_matrix(dir, "H.npy", H, plan->n_cols, o->k, err))
        goto out;
    if (bu && (write_matrix(dir, "row_bias.npy", bu, plan->n_rows, 1, err) ||
               write_matrix(dir, "col_bias.npy", bi, plan->n_cols, 1, err)))
        goto out;
    if (copy_ids(plan->dir, dir, plan->n_rows, plan->n_cols, err))
        goto out;
    meta_common(meta, plan, o);
    meta_single_files(meta, bu != NULL);
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
    rt_model_saver s;
    int rc = rt_model_save_begin(&s, eng, o->out, err);
    if (rc == 0 && (plan->n_rows > INT32_MAX || plan->n_cols > INT32_MAX))
        rc = rt_fail(err, RT_EXIT_RUNTIME, "%s: more than 2^31 rows or columns", o->out);
    double scale = model_scale(o);
    if (rc == 0 && (save_rows(&s, m, scale, err) || save_cols(&s, m, eng, scale, err)))
        rc = -1;
    if (rt_engine_rank(eng) == 0) {
        meta_common(meta, plan, o);
        if (rc == 0)
            rc = copy_ids(plan->dir, rt_model_save_dir(&s), plan->n_rows, plan->n_cols, err);
    } else {
        json_decref(meta);
        meta = NULL;
    }
    return rt_model_save_commit(&s, rc, meta, err);
}

/* ------------------------------------------------------------ the reader */

typedef struct rt_mf_model {
    float mu;
    uint32_t k, kp;
    uint64_t n_rows, n_cols;
    float *W, *H;   /* rows padded to kp floats, RT_ALIGN aligned */
    float *bu, *bi; /* NULL when the model has no biases */
    rt_idmap rows, cols;
    float *panels;       /* H packed for block scoring (mf_scores.c) */
    rt_mf_kernel kernel; /* its path on this CPU */
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
    return rt_model_check_finite(*out, *rows, *cols, pad, 0, path, err);
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
    rt_free(m->panels);
    rt_idmap_free(&m->rows);
    rt_idmap_free(&m->cols);
    free(m);
}

/* A single-file model: W.npy, H.npy and the bias vectors. */
static int load_single(const char *dir, rt_mf_model *m, int biases, rt_error *err)
{
    uint64_t r, c;
    if (read_padded(dir, "W.npy", 0, m->k, m->kp, &m->W, &m->n_rows, &c, err) ||
        read_padded(dir, "H.npy", 0, m->k, m->kp, &m->H, &m->n_cols, &c, err))
        return -1;
    if (biases && (read_padded(dir, "row_bias.npy", m->n_rows, 1, 1, &m->bu, &r, &c, err) ||
                   read_padded(dir, "col_bias.npy", m->n_cols, 1, 1, &m->bi, &r, &c, err)))
        return -1;
    return 0;
}

/* Scatter rows read from the parts (finite: rt_model_scan checked them) to
 * their dense ids, padded. */
typedef struct scatter {
    float *dst;
    uint32_t cols, pad;
} scatter;

static int scatter_rows(void *ctx, const int32_t *ids, const void *rows, uint64_t n, rt_error *err)
{
    const scatter *sc = ctx;
    (void)err;
    for (uint64_t i = 0; i < n; i++)
        memcpy(sc->dst + (size_t)ids[i] * sc->pad, (const float *)rows + i * sc->cols,
               sc->cols * sizeof(float));
    return 0;
}

/* Matrix part NAME (ids IDS) of every rank into n rows padded to `pad`. */
static int read_parts_padded(const rt_model_parts *mp, const char *name, const char *ids,
                             uint64_t n, uint32_t cols, uint32_t pad, float **out, rt_error *err)
{
    size_t bytes;
    if (rt_size_mul(n, (uint64_t)pad * sizeof(float), &bytes, mp->dir, name, err))
        return -1;
    if (!(*out = rt_alloc(bytes + 1)))
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: out of memory (%s)", mp->dir, name);
    scatter sc = {.dst = *out, .cols = cols, .pad = pad};
    return rt_model_scan(mp, name, ids, n, cols, MF_READ_BUFFER, scatter_rows, &sc, err);
}

static int load_parts(const rt_model_parts *mp, rt_mf_model *m, int biases, const char *path,
                      rt_error *err)
{
    if (rt_json_u64(mp->meta, "n_rows", 0, INT32_MAX, &m->n_rows, path, err) ||
        rt_json_u64(mp->meta, "n_cols", 0, INT32_MAX, &m->n_cols, path, err) ||
        read_parts_padded(mp, "W", "rows", m->n_rows, m->k, m->kp, &m->W, err) ||
        read_parts_padded(mp, "H", "cols", m->n_cols, m->k, m->kp, &m->H, err))
        return -1;
    if (biases && (read_parts_padded(mp, "row_bias", "rows", m->n_rows, 1, 1, &m->bu, err) ||
                   read_parts_padded(mp, "col_bias", "cols", m->n_cols, 1, 1, &m->bi, err)))
        return -1;
    return 0;
}

/* k, mu and biases of model.json. */
static int read_meta(json_t *meta, const char *path, uint32_t *k, float *mu, int *biases,
                     rt_error *err)
{
    uint64_t kv;
    /* Every prediction adds mu, and the biases only when "biases" says so: a
     * key missing, of another type, or a mu no float holds would score with
     * the wrong model, so each is refused rather than read as 0 or false.
     * The range is checked on the double: converting one beyond FLT_MAX to
     * float is undefined in C11 (6.3.1.5), and x86 rounds 3.4028235e38 to a
     * finite FLT_MAX, so testing the converted value let such a mu through. */
    json_t *m = json_object_get(meta, "mu"), *b = json_object_get(meta, "biases");
    double mv = json_is_number(m) ? json_number_value(m) : NAN;
    if (!isfinite(mv) || fabs(mv) > FLT_MAX)
        return rt_fail(err, RT_EXIT_INPUT, "%s: \"mu\" must be a number within float range", path);
    if (!json_is_boolean(b))
        return rt_fail(err, RT_EXIT_INPUT, "%s: \"biases\" must be true or false", path);
    *mu = (float)mv;
    *biases = json_is_true(b);
    if (rt_json_u64(meta, "k", 1, 4096, &kv, path, err))
        return -1;
    *k = (uint32_t)kv;
    return 0;
}

static int load(const char *dir, rt_mf_model *m, rt_error *err)
{
    char path[4200];
    rt_model_parts mp;
    int biases, rc = -1;
    if (rt_model_parts_open(dir, &mp, err) ||
        rt_path_join(path, sizeof(path), dir, "model.json", err) ||
        read_meta(mp.meta, path, &m->k, &m->mu, &biases, err))
        goto out;
    m->kp = rt_mf_padded_rank(m->k);
    if (mp.n ? load_parts(&mp, m, biases, path, err) : load_single(dir, m, biases, err))
        goto out;
    m->kernel = rt_mf_kernel_best();
    if (!(m->panels = rt_mf_pack_panels(m->H, m->n_cols, m->kp))) {
        rt_fail(err, RT_EXIT_RUNTIME, "%s: out of memory", dir);
        goto out;
    }
    rc = rt_app_read_ids(dir, "rows.ids", &m->rows, m->n_rows, err) ||
                 rt_app_read_ids(dir, "cols.ids", &m->cols, m->n_cols, err)
             ? -1
             : 0;
out:
    rt_model_parts_close(&mp);
    return rc;
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
    const rt_mf_model *m = p;
    rt_mf_scores_args a = {.W = m->W,
                           .panels = m->panels,
                           .bu = m->bu,
                           .bi = m->bi,
                           .mu = m->mu,
                           .kp = m->kp,
                           .kernel = m->kernel};
    rt_mf_scores_block(&a, rows, n_rows, col0, n_cols, out);
}

/* ------------------------------------------------------------ export */

/* `rotor export` of an MF model: one merged output file at a time, written
 * in dense order chunk by chunk (rt_model_dense_rows). */
typedef struct mf_export {
    const rt_model_parts *mp;
    const rt_export_opts *o;
    rt_progress progress; /* bytes of rows merged */
    uint32_t k;
    float mu;
    int biases;
    uint64_t n_rows, n_cols;
    FILE *fp; /* libmf: the file being written */
    const char *path;
    char prefix;       /* libmf: 'p' (W) or 'q' (H) */
    const float *bias; /* libmf with biases: the folded bias of each row */
    int bias_last;     /* libmf: W rows end "b_u 1", H rows "1 b_i" */
} mf_export;

/* LIBMF's model text: "pI T v v ... " per W row, "qJ T ..." per H row.
 * LIBMF has no per-row biases: a model with biases gets two more factor
 * columns, (b_u, 1) on W rows and (1, b_i) on H rows, so that p . q is
 * b_u + b_i + w . h, and b (LIBMF's global bias) is mu. */
static int emit_libmf(void *ctx, const void *rows, uint64_t lo, uint64_t n, rt_error *err)
{
    mf_export *x = ctx;
    for (uint64_t i = 0; i < n; i++) {
        fprintf(x->fp, "%c%llu T ", x->prefix, (unsigned long long)(lo + i));
        for (uint32_t c = 0; c < x->k; c++)
            fprintf(x->fp, "%.9g ", ((const float *)rows)[i * x->k + c]);
        if (x->bias && x->bias_last)
            fprintf(x->fp, "%.9g 1 ", x->bias[lo + i]);
        else if (x->bias)
            fprintf(x->fp, "1 %.9g ", x->bias[lo + i]);
        fputc('\n', x->fp);
    }
    return rt_write_check(x->fp, x->path, err);
}

/* Merge matrix part NAME into DIR/FILE (text lines headed by the ids of
 * IDS_FILE with --format text). */
static int export_matrix(mf_export *x, const char *dir, const char *file, const char *name,
                         const char *ids, const char *ids_file, uint64_t n, uint32_t cols,
                         rt_error *err)
{
    char path[4200];
    if (rt_path_join(path, sizeof(path), dir, file, err))
        return -1;
    return rt_model_merge(x->mp, name, ids, n, cols, path,
                          x->o->format == RT_EXPORT_TEXT ? ids_file : NULL, x->o->memory,
                          &x->progress, err);
}

/* DIR/model.txt in LIBMF's format (f 0 = real-valued MF with squared loss). */
static int export_libmf(mf_export *x, const char *dir, rt_error *err)
{
    char path[4200];
    rt_outfile of;
    float *bu = NULL, *bi = NULL;
    int rc = -1;
    if (x->biases && (read_parts_padded(x->mp, "row_bias", "rows", x->n_rows, 1, 1, &bu, err) ||
                      read_parts_padded(x->mp, "col_bias", "cols", x->n_cols, 1, 1, &bi, err)))
        goto out;
    if (rt_path_join(path, sizeof(path), dir, "model.txt", err) || rt_outfile_open(&of, path, err))
        goto out;
    x->fp = of.fp;
    x->path = path;
    fprintf(of.fp, "f 0\nm %llu\nn %llu\nk %u\nb %.9g\n", (unsigned long long)x->n_rows,
            (unsigned long long)x->n_cols, x->k + (x->biases ? 2 : 0), x->mu);
    x->prefix = 'p';
    x->bias = bu;
    x->bias_last = 1;
    rc = rt_model_dense_rows(x->mp, "W", "rows", x->n_rows, x->k, x->o->memory, emit_libmf, x,
                             &x->progress, err);
    x->prefix = 'q';
    x->bias = bi;
    x->bias_last = 0;
    if (rc == 0)
        rc = rt_model_dense_rows(x->mp, "H", "cols", x->n_cols, x->k, x->o->memory, emit_libmf, x,
                                 &x->progress, err);
    if (rc == 0)
        rc = rt_write_check(of.fp, path, err);
    if (rc)
        rt_outfile_abort(&of);
    else
        rc = rt_outfile_commit(&of, err);
out:
    rt_free(bu);
    rt_free(bi);
    return rc;
}

/* The single-file model's model.json: the manifest without the parts. */
static int export_meta(mf_export *x, const char *dir, rt_error *err)
{
    char path[4200];
    json_t *meta = rt_model_single_meta(x->mp);
    if (!meta)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    meta_single_files(meta, x->biases);
    int rc = rt_path_join(path, sizeof(path), dir, "model.json", err)
                 ? -1
                 : rt_app_write_json(path, meta, err);
    json_decref(meta);
    return rc;
}

static int export_files(mf_export *x, const char *dir, rt_error *err)
{
    int npy = x->o->format == RT_EXPORT_NPY;
    const char *ext = npy ? ".npy" : ".txt";
    char W[16], H[16], rb[16], cb[16];
    snprintf(W, sizeof(W), "W%s", ext);
    snprintf(H, sizeof(H), "H%s", ext);
    snprintf(rb, sizeof(rb), "row_bias%s", ext);
    snprintf(cb, sizeof(cb), "col_bias%s", ext);
    if (x->o->format == RT_EXPORT_LIBMF)
        return export_libmf(x, dir, err);
    if (export_matrix(x, dir, W, "W", "rows", "rows.ids", x->n_rows, x->k, err) ||
        export_matrix(x, dir, H, "H", "cols", "cols.ids", x->n_cols, x->k, err))
        return -1;
    if (x->biases &&
        (export_matrix(x, dir, rb, "row_bias", "rows", "rows.ids", x->n_rows, 1, err) ||
         export_matrix(x, dir, cb, "col_bias", "cols", "cols.ids", x->n_cols, 1, err)))
        return -1;
    return npy ? copy_ids(x->mp->dir, dir, x->n_rows, x->n_cols, err) || export_meta(x, dir, err)
               : 0;
}

int rt_mf_model_export(const char *dir, const rt_export_opts *o, rt_error *err)
{
    char path[4200], tmp[4096];
    rt_model_parts mp;
    mf_export x = {.mp = &mp, .o = o};
    int rc = -1;
    if (rt_model_parts_open(dir, &mp, err) ||
        rt_path_join(path, sizeof(path), dir, "model.json", err) ||
        read_meta(mp.meta, path, &x.k, &x.mu, &x.biases, err))
        goto out;
    if (!mp.n) {
        rt_fail(err, RT_EXIT_INPUT, "%s: a single-file model already (W.npy, H.npy)", dir);
        goto out;
    }
    if (rt_json_u64(mp.meta, "n_rows", 0, INT32_MAX, &x.n_rows, path, err) ||
        rt_json_u64(mp.meta, "n_cols", 0, INT32_MAX, &x.n_cols, path, err))
        goto out;
    uint64_t total = (x.n_rows + x.n_cols) * (x.k + (x.biases ? 1 : 0)) * sizeof(float);
    if (o->quiet)
        rt_progress_start_on(&x.progress, NULL, 0, "merging", "MB", 1e6, total);
    else
        rt_progress_start(&x.progress, "merging the model's parts", "MB", 1e6, total);
    if (rt_model_dir_begin(o->out, tmp, sizeof(tmp), err))
        goto out;
    if (export_files(&x, tmp, err)) {
        rt_remove_tree(tmp);
        goto out;
    }
    rc = rt_model_dir_commit(tmp, o->out, err);
    rt_progress_end(&x.progress);
out:
    rt_model_parts_close(&mp);
    return rc;
}
