/*
 * mf_common.h - what SGD-MF and CD-MF share (internal to apps/).
 *
 * Factor rows are float32, padded from k to kp = round_up(k, 8) floats so
 * every row starts 32-byte aligned and SIMD loops need no remainder; the
 * padding stays exactly zero through every update.  W rows live with their
 * row block's worker; H rows travel in the column-block payloads
 * (block-local column j at payload + j * kp floats).
 *
 * Initial values depend only on (seed, global row/column id), never on the
 * plan's layout, so any nodes x threads split starts from the same model.
 */
#ifndef ROTOR_APPS_MF_COMMON_H
#define ROTOR_APPS_MF_COMMON_H

#include "apps/apps.h"

#include <jansson.h>

#define RT_MF_LANES 8 /* floats per SIMD chunk; kp is a multiple of this */

static inline uint32_t rt_mf_padded_rank(uint32_t k)
{
    return (uint32_t)rt_round_up(k, RT_MF_LANES);
}

/* Options both MF apps accept: --rank --lambda --seed --init-scale --out --metrics
 * --validation-fraction --early-stop. */
typedef struct rt_mf_common_opts {
    uint32_t k;
    double lambda;
    uint64_t seed;
    double init_scale;     /* initial entries ~ N(0, init_scale / sqrt(k)) */
    int init_uniform;      /* initial entries ~ U(0, init_scale) instead (CCD++/LIBPMF) */
    const char *out;       /* NULL = do not save */
    const char *metrics;   /* --metrics FILE: per-epoch JSON (apps/metrics.h), or NULL */
    int biases;            /* model row and column biases */
    double valid_fraction; /* --validation-fraction: held-out share of training, 0 = none */
    uint32_t early_stop;   /* --early-stop N: outer iterations without improvement, 0 = off */
    /* --rating-scale: training sees rating / rating_scale and the saved model
     * (biases, H, mu) is multiplied back, so the defaults (set on 1-5 stars)
     * fit ratings of any unit; 0 = auto, resolved by rt_mf_rating_scale
     * before training (1 in rt_mf_common_defaults: no scaling). */
    double rating_scale;
} rt_mf_common_opts;

/* 1 when the training rating (global row, global column) belongs to the
 * validation set: a hash of (seed, row, column) below the fraction, so the
 * set depends neither on the plan's layout nor on the order of the data. */
int rt_mf_is_validation(const rt_mf_common_opts *o, uint32_t global_row, uint32_t global_col);
/* That rule over a shard: held[e] = 1 for its training entry e held out
 * (all 0 without validation).  malloc'd; NULL (and err set) on OOM. */
uint8_t *rt_mf_validation_mask(const rt_plan *plan, const rt_shard *sh, const rt_mf_common_opts *o,
                               rt_error *err);

/* The local workers' shards cut by the validation rule (sgd-mf): fit[t] is
 * shard t with only the training ratings kept for fitting (it views the
 * arrays of worker[t]; everything else is the shard's), and worker[t] also
 * holds its validation and test ratings with global column ids (local
 * rows), in the shard's order, for scoring against the whole H
 * (rt_mf_cols). */
typedef struct rt_mf_held_worker {
    rt_entry *fit_train;    /* the training ratings kept for fitting, by block */
    uint64_t *fit_off;      /* blocks + 1 offsets into fit_train */
    rt_entry *valid, *test; /* global column ids */
    uint64_t n_valid, n_test;
    void *arrays; /* the one allocation fit_train .. test live in */
} rt_mf_held_worker;
typedef struct rt_mf_held_out {
    uint32_t n_workers;
    rt_shard *fit;             /* per local worker */
    rt_mf_held_worker *worker; /* per local worker */
    void *arrays;              /* the one allocation fit and worker live in */
} rt_mf_held_out;
int rt_mf_held_out_split(rt_mf_held_out *h, const rt_plan *plan, const rt_shard *shards,
                         uint32_t n_workers, const rt_mf_common_opts *o, rt_error *err);
void rt_mf_held_out_free(rt_mf_held_out *h);

/* Early stopping on a validation RMSE, one rule for the MF apps: the best
 * score so far, its epoch (outer iteration for cd-mf; 0 = none yet) and
 * the epochs scored since. */
typedef struct rt_mf_early_stop {
    double best_valid; /* INFINITY before the first score */
    uint64_t best_epoch, since_best;
    int stop; /* `patience` epochs went by without a better score */
} rt_mf_early_stop;
void rt_mf_early_stop_init(rt_mf_early_stop *s);
/* Epoch `epoch` (1-based) scored `valid_rmse`: returns 1 when that is the
 * best so far (the caller keeps that model); sets s->stop after `patience`
 * epochs in a row without (patience 0: never). */
int rt_mf_early_stop_update(rt_mf_early_stop *s, double valid_rmse, uint64_t epoch,
                            uint32_t patience);

/* Option table entries (ground/opts.h) of the options every MF app takes
 * with the same meaning and default, for an options struct T with an
 * rt_mf_common_opts member `mf` and an int `center`.  --lambda and
 * --init-scale differ between the apps and are in each app's own table. */
#define RT_MF_COMMON_OPTIONS(T)                                                                    \
    RT_U32_OPT("rank", 'k', T, mf.k, "K", "32", 1, 4096, 0, "factor rank"),                        \
        RT_U64_OPT("seed", 's', T, mf.seed, "S", "1", 0, 0, 0,                                     \
                   "random seed of the initial factors"),                                          \
        RT_UNSET_OPT("no-center", 0, T, center, "do not subtract the training mean from ratings"), \
        RT_UNSET_OPT("no-biases", 0, T, mf.biases, "no per-row and per-column bias terms"),        \
        RT_DOUBLE_OPT("validation-fraction", 0, T, mf.valid_fraction, "F", NULL, 0, 0.5,           \
                      RT_OPT_MIN_OPEN,                                                             \
                      "hold out a seeded share F of the training ratings, score it every epoch "   \
                      "(cd-mf: outer iteration) and keep the best model"),                         \
        RT_U32_OPT("early-stop", 0, T, mf.early_stop, "N", NULL, 1, 100000000, 0,                  \
                   "stop after N epochs (outer iterations) without a better validation RMSE"),     \
        RT_DOUBLE_OPT("rating-scale", 0, T, mf.rating_scale, "S", "0", 0, HUGE_VAL, 0,             \
                      "train on rating / S and scale the saved model back; 0 = auto: the power "   \
                      "of two nearest the training ratings' standard deviation (1 for 1-5 "        \
                      "stars, 16 or 32 for 0-100 scores)"),                                        \
        RT_PATH_OPT("out", 'o', T, mf.out, "DIR", NULL, RT_OPT_DIR,                                \
                    "write W.npy, H.npy, biases, rows.ids, cols.ids, model.json into DIR (the "    \
                    "best model by validation when there is a validation set)"),                   \
        RT_PATH_OPT("metrics", 0, T, mf.metrics, "FILE", NULL, 0,                                  \
                    "metrics as JSON, rewritten after every epoch")

/* This node's MF state: one shard and one W row block per local worker. */
typedef struct rt_mf_local {
    const rt_plan *plan;
    uint32_t first_worker, n_workers;
    uint32_t k, kp;
    const rt_shard *shards; /* n_workers, kept by the caller */
    float **W;              /* n_workers blocks of rows x kp */
    float **bu;             /* with biases: n_workers arrays of row biases (else NULL) */
} rt_mf_local;

/* The column-block payload size for rank kp: the largest block's H rows, and
 * `extra` more floats per column.  Payload layout: cols x kp floats of H
 * rows, then `extra` arrays of cols floats: the column biases first (with
 * biases), then what an app keeps per column (sgd-mf's AdaGrad
 * accumulators). */
size_t rt_mf_slot_bytes(const rt_plan *plan, uint32_t kp, uint32_t extra);
static inline float *rt_mf_payload_extra(float *payload, uint32_t cols, uint32_t kp, uint32_t i)
{
    return payload + (size_t)cols * kp + (size_t)i * cols;
}
static inline float *rt_mf_payload_biases(float *payload, uint32_t cols, uint32_t kp)
{
    return rt_mf_payload_extra(payload, cols, kp, 0);
}

/* Allocate and initialise the W rows (and row biases) of workers
 * first..first+n-1, whose shards are shards[0..n-1]. */
int rt_mf_local_init(rt_mf_local *m, const rt_plan *plan, const rt_shard *shards,
                     uint32_t first_worker, uint32_t n_workers, const rt_mf_common_opts *o,
                     rt_error *err);
void rt_mf_local_free(rt_mf_local *m);

/* Deterministic initial factor row for a global row (is_col = 0) or column. */
void rt_mf_init_vector(float *v, uint32_t k, uint32_t kp, const rt_mf_common_opts *o, int is_col,
                       uint64_t global_id);
/* Bytes of block b's payload: its H rows and `extra` floats per column. */
size_t rt_mf_block_bytes(const rt_plan *plan, uint32_t block, uint32_t kp, uint32_t extra);
/* Fill a home block payload with initial H rows (and zero column biases when
 * o->biases); returns its length in bytes. */
size_t rt_mf_init_block(const rt_plan *plan, uint32_t block, float *payload, uint32_t kp,
                        const rt_mf_common_opts *o);

/* Mean of the training ratings in the shards of the local workers
 * first..first+n-1 and of every other rank's (all-reduced, identical on
 * every rank and for every split): the plan's training mean, or with
 * rt_mf_held_out's fit shards that of the ratings kept for fitting. */
int rt_mf_train_mean(const rt_plan *plan, const rt_shard *shards, uint32_t first_worker,
                     uint32_t n_workers, rt_engine *eng, double *mean, rt_error *err);

/* --rating-scale auto: the power of two nearest (in log2) the standard
 * deviation sd of the training ratings (their root mean square with
 * --no-center), 1 when that is 0.  A power of two, so that scaling the
 * ratings down and the model back up is exact: the saved model predicts
 * exactly rating_scale times what training predicted. */
double rt_mf_rating_scale(double sd);
/* Resolve o->rating_scale (0 = auto, as above, from the training ratings of
 * the local workers' shards and every other rank's; implicit feedback: 1)
 * and say on rank 0 which scale training uses when it is not 1, and warn
 * when every rating is the same.  Collective; the same on every rank and
 * split. */
int rt_mf_resolve_rating_scale(rt_mf_common_opts *o, const rt_plan *plan, const rt_shard *shards,
                               uint32_t first_worker, uint32_t n_workers, rt_engine *eng,
                               int center, int implicit, const char *app, rt_error *err);

/* The whole H (and column biases) on every rank, gathered from the home
 * blocks after a rotation: each rank writes its home columns into an
 * otherwise zero n_cols x (k + 1) array of doubles (factors, then the
 * bias), and one all-reduce of sums assembles it (each entry one value plus
 * zeros: exact).  H is n_cols x kp floats and bi n_cols floats (NULL
 * without biases), both by global column id. */
typedef struct rt_mf_cols {
    uint64_t n_cols;
    uint32_t k, kp;
    double *sum; /* the all-reduce buffer */
    float *H, *bi;
    void *arrays; /* the one allocation sum, H and bi live in */
} rt_mf_cols;
int rt_mf_cols_init(rt_mf_cols *c, const rt_plan *plan, uint32_t k, int biases, rt_error *err);
void rt_mf_cols_free(rt_mf_cols *c);
/* Without an engine (the tests): zero the buffer, put in block b's columns
 * from its payload, all-reduce c->sum, then take H and bi out of it. */
void rt_mf_cols_clear(rt_mf_cols *c);
void rt_mf_cols_put(rt_mf_cols *c, const rt_plan *plan, uint32_t block, const float *payload);
void rt_mf_cols_take(rt_mf_cols *c);
/* Collective (every rank, all blocks home): all of the above. */
int rt_mf_cols_gather(rt_mf_cols *c, const rt_plan *plan, rt_engine *eng, rt_error *err);

/* ---- the saved model (mf_model.c) ---- */

/* Save the model under `o->out` as a set of per-rank parts (mf_model.c
 * lists the files): every rank writes its own workers' W rows and its home
 * blocks' H rows and biases, rank 0 the ids and model.json (`meta` plus
 * dimensions and the manifest; the function takes the reference).  Every
 * rank must call it. */
int rt_mf_save(rt_mf_local *m, rt_engine *eng, const rt_mf_common_opts *o, json_t *meta,
               rt_error *err);
/* The writer itself, without an engine: dense W (n_rows x k), H (n_cols x
 * k) and, when bu != NULL, the biases bu (n_rows) and bi (n_cols); ids are
 * copied from the plan directory.  Takes the reference to `meta`. */
int rt_mf_model_write(const char *dir, const rt_plan *plan, const rt_mf_common_opts *o,
                      const float *W, const float *H, const float *bu, const float *bi,
                      json_t *meta, rt_error *err);
/* The reader: the rt_app_desc model hooks of sgd-mf and cd-mf. */
int rt_mf_model_load(const char *dir, void **model, rt_error *err);
void rt_mf_model_free(void *model);
void rt_mf_model_ids(void *model, rt_idmap **rows, rt_idmap **cols);
float rt_mf_model_predict(const void *model, uint32_t row, uint32_t col);
void rt_mf_model_scores(const void *model, const uint32_t *rows, uint32_t n_rows, uint32_t col0,
                        uint32_t n_cols, float *out);
/* `rotor export`: the parts merged into W.npy, H.npy, ... (npy), W.txt, ...
 * (text) or LIBMF's model.txt (libmf). */
int rt_mf_model_export(const char *dir, const rt_export_opts *o, rt_error *err);

/* The defaults of the common options (for tests and the serial reference,
 * which build options without a command line). */
void rt_mf_common_defaults(rt_mf_common_opts *o);
int rt_mf_check_common(const rt_mf_common_opts *o, const rt_plan *plan, const char *app,
                       rt_error *err);

/* ---- kernels (apps/mf_kernels.c): exact same floating-point results on
 * every x86-64 (AVX2+FMA path or portable fmaf path). ---- */
typedef enum rt_mf_kernel {
    RT_MF_KERNEL_PORTABLE = 0, /* fmaf loops: any CPU */
    RT_MF_KERNEL_AVX2 = 1,     /* AVX2 + FMA: only where rt_mf_kernel_best says so */
} rt_mf_kernel;
/* The fastest path this CPU runs. */
rt_mf_kernel rt_mf_kernel_best(void);
/* "auto" (the best), "portable" or "avx2" (an error where the CPU lacks it). */
int rt_mf_kernel_pick(const char *name, rt_mf_kernel *out, rt_error *err);
const char *rt_mf_kernel_name(rt_mf_kernel k); /* "avx2-fma" or "portable" */

typedef struct rt_sgd_params {
    rt_mf_kernel kernel; /* the path, chosen once at start-up */
    float lr, lambda, mu;
    uint32_t kp;
    float *bu, *bi;    /* row / column biases indexed like W / H rows; NULL = none */
    float lambda_bias; /* L2 on the biases */
    /* Row-wise AdaGrad as in LIBMF (NULL gW = one global rate): one
     * accumulator per W row (gW), H row (gH), row bias (gbu) and column bias
     * (gbi), each starting at 1; an update steps by lr / sqrt(G) with the
     * accumulator before it, then adds the mean squared gradient of the row
     * (grad_scale = 1 / k) or the bias's squared gradient. */
    float *gW, *gH, *gbu, *gbi;
    float grad_scale;
    float rating_inv; /* 1 / --rating-scale: the rating a step sees is val * rating_inv */
    /* --lambda-const L0: each row's and column's share L0 / n of its constant
     * regulariser (n its training ratings), indexed like W rows and the
     * block's H rows; an update of the row weighs its factors by lambda +
     * reg_row and its bias by lambda_bias + reg_row (the column alike), so
     * an epoch regularises a row by lambda n + L0 as cd-mf does.  Both NULL
     * = none (lambda and lambda_bias alone). */
    const float *reg_row, *reg_col;
} rt_sgd_params;
/* One SGD pass over entries (row/col index W and H rows); returns the sum of
 * squared errors measured before each update. */
double rt_sgd_block(const rt_entry *e, size_t n, float *W, float *H, const rt_sgd_params *p);
/* Sum of squared errors (val - mu - b_u - b_i - w.h) over entries; no update
 * (lr and lambda unused). */
double rt_mf_block_sse(const rt_entry *e, size_t n, const float *W, const float *H,
                       const rt_sgd_params *p);
/* Dot product of two kp-float rows with the kernels' fixed summation order. */
float rt_mf_dot(const float *a, const float *b, uint32_t kp);
/* The prediction mu + b_u + b_i + w . h of a model, in one fixed order (the
 * saved model's scoring and the tests' training-time predictions). */
static inline float rt_mf_predict(const float *w, const float *h, uint32_t kp, float mu, float bu,
                                  float bi)
{
    return ((mu + bu) + bi) + rt_mf_dot(w, h, kp);
}

/* Block scoring (apps/mf_scores.c): H packed into panels of 8 items, each
 * user x panel scored with rt_mf_predict's operations in its order. */
typedef struct rt_mf_scores_args {
    const float *W;       /* rows padded to kp */
    const float *panels;  /* rt_mf_pack_panels(H) */
    const float *bu, *bi; /* NULL: no biases */
    float mu;
    uint32_t kp;
    rt_mf_kernel kernel;
} rt_mf_scores_args;
/* H (n_cols x kp) as panels: RT_ALIGN-aligned, free with rt_free; NULL on OOM. */
float *rt_mf_pack_panels(const float *H, uint64_t n_cols, uint32_t kp);
/* out[i * n_cols + j] = prediction for (rows[i], col0 + j). */
void rt_mf_scores_block(const rt_mf_scores_args *a, const uint32_t *rows, uint32_t n_rows,
                        uint32_t col0, uint32_t n_cols, float *out);

/* ---- `rotor train --eval-top-k K` (apps/mf_rank_eval.c): the ranking
 * metrics of the model after every epoch on the plan's test ratings (each
 * user's training items excluded), equal to `rotor eval --top-k K` on the
 * model saved then; the same bits on any split. */
typedef struct rt_mf_rank_worker {
    rt_user_items relevant; /* test items by local row */
    rt_user_items train;    /* training items (excluded) */
    uint32_t *users;        /* the local rows ranked */
    uint64_t n_users;
} rt_mf_rank_worker;
typedef struct rt_mf_rank_eval {
    uint32_t k, n_workers;     /* K; local workers */
    rt_mf_rank_worker *worker; /* per local worker */
    double *sums;              /* per global worker: the metric sums */
    void *arrays;              /* the one allocation worker and sums live in */
    rt_mf_cols cols;           /* every column's factors and bias */
} rt_mf_rank_eval;
int rt_mf_rank_eval_init(rt_mf_rank_eval *e, const rt_mf_local *m, uint32_t k, rt_error *err);
void rt_mf_rank_eval_free(rt_mf_rank_eval *e);
/* Collective (every rank, orchestrating thread, all blocks home): the
 * metrics of the model now (W rows of m, H in the home payloads, the
 * training mean mu), ranked on `threads` threads. */
int rt_mf_rank_eval_epoch(rt_mf_rank_eval *e, const rt_mf_local *m, rt_engine *eng, float mu,
                          uint32_t threads, rt_rank_metrics *out, rt_error *err);

#endif
