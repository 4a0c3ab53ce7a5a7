/*
 * cd_mf.h - CCD++ matrix factorisation (Yu, Hsieh, Si, Dhillon, ICDM'12) on
 * the rotation engine: the internals shared by the app glue (cd_mf.c), the
 * engine-independent solver core (cd_mf_core.c), its kernels
 * (cd_mf_kernels.c), the unit tests and the benchmark.
 *
 * Model: R ~ mu + b_i + c_j + w_i . h_j with mu the training mean
 * (--no-center: 0), row and column biases b, c (--no-biases: none) and
 * W (n_rows x k), H (n_cols x k), minimising, as CCD++ and LIBPMF do,
 *     sum_{(i,j) in train} (R_ij - mu - b_i - c_j - w_i . h_j)^2
 *       + sum_i lambda_i (|w_i|^2 + b_i^2) + sum_j lambda_j (|h_j|^2 + c_j^2)
 * with lambda_x = lambda n_x + L0, n_i and n_j the training ratings of row
 * i and column j (the frequency-weighted regulariser of CCD++; --unweighted
 * uses 1 instead of n) and L0 = --lambda-const, which keeps shrinking rows
 * and columns with few ratings (0 in CCD++ and LIBPMF).
 * CCD++ updates one rank-one term ("slot") at a time.  With u, v the slot's
 * factors and E = R - mu - b - c - W H^T on the training entries:
 *     E^ = E + u v^T                                   (add the term back)
 *     T times:  u_i = sum_j E^_ij v_j / (lambda_i + sum_j v_j^2)  (j in row i)
 *               v_j = sum_i E^_ij u_i / (lambda_j + sum_i u_i^2)  (i in col j)
 *     E  = E^ - u v^T                                  (take the new term out)
 * A bias is a rank-one term with a fixed unit factor: the row-bias slot has
 * u = b, v = 1 (only u is solved), the column-bias slot u = 1, v = c (only v
 * is solved); both run one alternation and come first in an outer
 * iteration, then the k factor ranks with T alternations each.  As in
 * LIBPMF, a rank stops alternating early once an alternation decreases the
 * objective by less than --inner-eps times the largest decrease of any
 * alternation so far in the outer iteration (the first alternation of the
 * run excluded); the decrease of a solve is sum (lambda_x + den_x) (old_x -
 * new_x)^2, all-reduced after every v-phase, so every node takes the same
 * decision.
 *
 * Placement.  Worker w owns row block w: its rows of W (stored rank-major,
 * so u_r is contiguous), its row biases, the residuals of its training,
 * validation and test entries (float arrays parallel to the shard's
 * entries, same order) and the row accumulators of the u-update.  Column
 * block b's slice of H and its column biases stay at the block's home node;
 * what travels with the block is only the state of the slot being updated:
 * the v slice (u-phase) or the v-update accumulators (v-phase).
 *
 * Phase sequence (one phase = one rotation; every block meets every worker
 * once per rotation).  For each slot s and alternation t:
 *
 *   U(s,t)  payload: v_s [, v_{s-1} final].  Visit of data block (w, b):
 *           if t = 0: E -= u_{s-1} v_{s-1}^T (the previous slot's final term;
 *           for s = 0 the last slot of the previous outer iteration) and
 *           E += u_s v_s^T (add-back; skipped in outer iteration 0 where the
 *           term is zero), on training, validation and test residuals alike;
 *           then num_i += E^_ij v_j, den_i += v_j^2 into the worker's row
 *           accumulators.  rotation_end: u_i = num_i / (lambda_i + den_i).
 *   V(s,t)  payload: num_j, den_j (zero at home).  Visit:
 *           num_j += E^_ij u_i, den_j += u_i^2.  rotation_end, at the home
 *           node: v_j = num_j / (lambda_j + den_j) into the home copy of H.
 *
 * The column-bias slot's U phase only adjusts residuals, the row-bias
 * slot's V phase does nothing.  The add-back and the subtraction ride on
 * the first u-phase of the next slot, and nothing else touches the data.
 * The subtraction of the last slot is applied at the start of the next outer
 * iteration (never after the final one: the model is complete without it).
 *
 * Objective without an extra pass: in every V phase of the last slot of an
 * outer iteration (any of them may turn out to be the last) the visit also
 * sums S = sum E^_ij^2 over the worker's training entries and the same
 * accumulators over its test and validation entries; then, per column,
 *     sum_i (E^_ij - u_i v_j)^2 = S_j - 2 v_j num_j + v_j^2 den_j,
 * so the loss after the final subtraction is known at the homes when v is
 * solved.  Partial sums are placed in per-worker and per-block slots of one
 * vector, all-reduced (adding zeros is exact) and summed in slot order, so
 * the reported numbers do not depend on how workers are spread over nodes.
 *
 * Validation (--validation-fraction F): a training rating is held out when
 * a hash of (seed, global row, global column) falls below F
 * (rt_mf_is_validation), so the set depends neither on the layout nor on
 * the test file.  Held-out ratings keep residuals like test ratings, are
 * scored every outer iteration, and the model of the best validation RMSE is
 * kept (--out writes it; --early-stop N ends the run after N outer
 * iterations without improvement).
 *
 * Determinism: every accumulator is summed in schedule order (a worker sees
 * blocks, a block sees workers, in an order fixed by the plan), so runs are
 * bit-identical for any split of the workers over nodes and threads.
 *
 * Initialisation: W = 0, biases 0 (so E = R - mu); H rows as sgd-mf draws
 * them (rt_mf_init_vector: N(0, init_scale / sqrt(k)) from a stream fixed by
 * the seed and the global column id), so the start never depends on the
 * layout.  One setup all-reduce (cd_core_setup_parts / cd_core_setup)
 * gives every node mu and the column counts n_j.
 *
 * Implicit feedback (--implicit; Hu, Koren and Volinsky, ICDM'08).  Every
 * (row, column) pair counts: an observed pair has preference 1 and
 * confidence c_ij = 1 + alpha f(rating), every other pair preference 0 and
 * the uniform weight w0 (--unobserved-weight); no mean, no biases:
 *     sum_{(i,j) observed} c_ij (1 - w_i . h_j)^2 + w0 sum_{unobserved} (w_i . h_j)^2
 *       + sum_i lambda_i |w_i|^2 + sum_j lambda_j |h_j|^2
 * (lambda_x as above).  The unobserved sum is never materialised:
 * it is w0 times the sum over all pairs minus the observed ones, and the sum
 * over all pairs only needs the Gram matrices G = H^T H and F = W^T W
 * (k x k).  With E = 1 - W H^T on the observed pairs, CCD++'s update of
 * rank s becomes
 *   u_i = (sum_j ((c_ij - w0) E^_ij + w0) v_j - w0 sum_{r != s} W_ir G_rs)
 *         / (lambda_i + w0 G_ss + sum_j (c_ij - w0) v_j^2)        (j in row i)
 * and the same for v_j with F; the accumulators travel as before, each
 * entry carries c_ij - w0 next to its residual.  Every node keeps G and F
 * whole: after a u (v) solve each worker (home block) puts its share of the
 * new column F[:, s] (G[:, s]) into its slot of the sums, one all-reduce of
 * k doubles per slot and rotation brings them together (in slot order, so
 * every split gets the same bits), and G starts from the initial H, whose
 * shares the home workers draw in the setup all-reduce (W, and so F, is 0).
 * The objective needs no pass over the unobserved pairs either: observed
 * terms as above (with c E^2 - w0 (1 - E)^2 per entry) plus
 * w0 sum_rs F_rs G_rs.
 *
 * Options, shards and the saved model (W.npy, H.npy, biases, ids,
 * model.json) are the MF conventions of mf_common.h, shared with sgd-mf.
 */
#ifndef ROTOR_APPS_CD_MF_H
#define ROTOR_APPS_CD_MF_H

#include "apps/mf_common.h"

#include <stdint.h>

/* ---- options ---- */
typedef struct cd_opts {
    rt_mf_common_opts mf; /* --rank --lambda --seed --init-scale --out --metrics
                             --validation-fraction --early-stop; biases */
    uint32_t outer;       /* --outer: outer iterations */
    uint32_t inner;       /* --inner: T, most alternations per rank */
    int center;           /* subtract the training mean (--no-center: 0) */
    int weighted;         /* lambda n_i, lambda n_j (--unweighted: 0) */
    double lambda_const;  /* --lambda-const L0: lambda_i = lambda n_i + L0 */
    double inner_eps;     /* --inner-eps: early exit of the alternations; 0 = never */
    int implicit;         /* --implicit: the weighted one-class loss (see below) */
    double alpha;         /* --alpha: confidence slope of an observed pair */
    int confidence;       /* --confidence: CD_CONF_* */
    double unobserved;    /* --unobserved-weight: w0, weight of every unobserved pair */
} cd_opts;

/* Confidence of an observed pair with rating r: c = 1 + alpha f(r), with
 * f(r) = r (linear), ln(1 + r) (log) or 1 (binary).  NAN when r is outside
 * f's domain (r < 0 for linear and log). */
enum { CD_CONF_LINEAR = 0, CD_CONF_LOG = 1, CD_CONF_BINARY = 2 };
double cd_confidence(const cd_opts *o, double rating);

/* ---- slots: the rank-one terms updated in turn ---- */
enum { CD_SLOT_FACTOR = 0, CD_SLOT_ROW_BIAS = 1, CD_SLOT_COL_BIAS = 2 };
uint32_t cd_slots(const cd_opts *o); /* k, plus 2 with biases */
/* What slot s is; *rank receives the factor rank of a CD_SLOT_FACTOR slot. */
int cd_slot_kind(const cd_opts *o, uint32_t slot, uint32_t *rank);

/* ---- the phase a rotation runs ---- */
enum { CD_PHASE_U = 0, CD_PHASE_V = 1 };

typedef struct cd_phase {
    uint64_t outer;    /* 0-based outer iteration */
    uint32_t slot;     /* slot being updated */
    uint32_t inner;    /* t, 0-based */
    int kind;          /* CD_PHASE_U or CD_PHASE_V */
    int subtract;      /* U, t = 0: remove sub_slot's final term first */
    uint32_t sub_slot; /* (slot + slots - 1) % slots */
    int add_back;      /* U, t = 0: add slot's current term back */
    int eval;          /* V of the last slot: objective sums (may close the outer) */
} cd_phase;

/* The first phase of a run, and the one after `ph`; `exit_inner` ends the
 * slot's alternations after a V phase. */
void cd_phase_first(const cd_opts *o, cd_phase *ph);
void cd_phase_next(const cd_opts *o, cd_phase *ph, int exit_inner);

/* ---- the block payload ----
 * A 64-byte header, then arrays each starting at a multiple of RT_ALIGN:
 *   U phase: float v[n], float v_sub[n] (only when subtracting)
 *   V phase: double acc[2n] (num, den pairs) [, test acc[2n], validation
 *            acc[2n] when eval] */
#define CD_PAYLOAD_MAGIC 0x43444d46u /* "CDMF" */
typedef struct cd_payload_hdr {
    uint32_t magic;
    uint32_t kind; /* CD_PHASE_U / CD_PHASE_V */
    uint64_t rotation;
    uint32_t block;
    uint32_t n_cols;
    uint32_t flags; /* CD_PF_* */
    uint32_t slot;
    uint32_t reserved[8];
} cd_payload_hdr;
enum { CD_PF_SUBTRACT = 1, CD_PF_ADD_BACK = 2, CD_PF_EVAL = 4 };

/* Largest payload for a block of `max_cols` columns. */
size_t cd_payload_max_bytes(uint32_t max_cols);

/* ---- a worker's ratings regrouped for the kernels (cd_mf_cells.c) ----
 * Entries keep the shard's order (without the ones a filter leaves out), but
 * the kernels read only 8 bytes per entry: the block-local column and the
 * residual.  The rows of MF data blocks are
 * sorted, so each block is a list of row runs (row, length). */
typedef struct cd_cells {
    uint32_t blocks;
    void *arrays;        /* the one allocation entry_off .. res live in */
    uint64_t *entry_off; /* blocks + 1: entries of block b */
    uint64_t *run_off;   /* blocks + 1: runs of block b */
    uint32_t *run_row;   /* worker-local row of each run */
    uint32_t *run_len;   /* entries in each run (>= 1) */
    uint32_t *col;       /* block-local column of each entry */
    float *res;          /* residual of each entry; starts as the rating */
    float *conf;         /* implicit training cells: c_ij - w0 of each entry, else NULL */
    double w0;           /* implicit: the weight of an unobserved pair */
} cd_cells;

/* One data block of a cd_cells, as the kernels take it. */
typedef struct cd_span {
    size_t n_runs;
    const uint32_t *run_row, *run_len;
    const uint32_t *col;
    float *res;
    const float *conf; /* NULL: squared loss; else the implicit loss with weight w0 */
    double w0;
} cd_span;

/* Build from a shard's entries (`off`: blocks + 1 offsets, each block sorted
 * by row).  With `held` (one flag per entry) only the entries whose flag
 * equals `keep` are taken.  Fails (exit code 2) on entries that are not
 * grouped by row. */
int cd_cells_build(cd_cells *c, const rt_entry *ent, const uint64_t *off, uint32_t blocks,
                   const uint8_t *held, int keep, rt_error *err);
void cd_cells_free(cd_cells *c);
/* Implicit feedback: confidences c - w0 from the ratings, residuals 1 (the
 * preference, W being 0).  Fails (exit code 2) on a rating outside the
 * confidence function's domain or one giving c <= 0. */
int cd_cells_implicit(cd_cells *c, const cd_opts *o, rt_error *err);
cd_span cd_cells_block(const cd_cells *c, uint32_t block);
uint64_t cd_cells_count(const cd_cells *c);

/* ---- kernels (cd_mf_kernels.c): one data block ---- */

/* Optional change of the residuals before use: E -= u_sub v_sub^T (when
 * u_sub != NULL) then E += u_add v_add^T (when u_add != NULL).  u indexed by
 * worker-local row, v by block-local column. */
typedef struct cd_adjust {
    const float *u_sub, *v_sub;
    const float *u_add, *v_add;
} cd_adjust;

/* Accumulators are interleaved pairs, acc[2x] = numerator and acc[2x + 1] =
 * denominator of x's update, so one cache line serves both. */

/* U phase: adjust (when adj != NULL) and store the residuals, then
 * acc[2 row] += E^ v[col], acc[2 row + 1] += v[col]^2. */
void cd_kernel_u(const cd_span *s, const cd_adjust *adj, const float *v, double *acc);
/* Residual adjustment only (the test entries in a U phase). */
void cd_kernel_adjust(const cd_span *s, const cd_adjust *adj);
/* V phase: acc[2 col] += E^ u[row], acc[2 col + 1] += u[row]^2; returns
 * sum E^^2 when want_ssq (else 0). */
double cd_kernel_v(const cd_span *s, const float *u, double *acc, int want_ssq);
/* out[i] = num_i / (lambda_i + den_i) (0 when the denominator is 0), with
 * lambda_i = lambda count[i] + lambda0, or lambda + lambda0 when count is
 * NULL.  Returns the
 * decrease of the objective, sum (lambda_i + den_i) (old_i - new_i)^2. */
double cd_solve(const double *acc, size_t n, double lambda, const double *count, double lambda0,
                float *out);
/* Implicit feedback: the same solve for rank s of rank-major factors F
 * (k x n; out = F + s n) with the unobserved pairs' terms from gram_col, the
 * other side's Gram column s: out[i] = (num_i - w0 sum_{r != s} F[r][i]
 * gram_col[r]) / (lambda_i + w0 gram_col[s] + den_i). */
double cd_solve_gram(const double *acc, size_t n, double lambda, const double *count,
                     double lambda0, const float *F, uint32_t k, uint32_t s, const double *gram_col,
                     double w0, float *out);
/* sum over i of v[i]^2 den_i - 2 v[i] num_i: the change of the squared loss
 * of the columns when the new rank-one term is subtracted. */
double cd_loss_delta(const float *v, const double *acc, size_t n);

/* ---- the solver core (cd_mf_core.c), independent of the engine ---- */

/* Per worker and per block: train, test, validation, the regulariser,
 * decrease, and with implicit feedback k more: its share of the Gram column
 * of the slot just solved. */
enum { CD_SUMS_PER_SLOT = 5 };

typedef struct cd_worker { /* one row block; only its thread touches it in a visit */
    uint32_t id;           /* global worker id */
    uint32_t n_rows;
    const rt_shard *shard;
    cd_cells train;            /* training ratings and their residuals */
    cd_cells valid;            /* held-out training ratings (validation) */
    cd_cells test;             /* test ratings and their residuals */
    float *U;                  /* k x n_rows, rank-major */
    float *bias;               /* n_rows row biases (all 0 without biases) */
    float *ones;               /* n_rows ones: the fixed factor of the column-bias slot */
    double *count;             /* n_rows training ratings per row */
    double *acc;               /* u-update accumulators, 2 n_rows (num, den pairs) */
    double ssq, tssq, vssq;    /* eval phase: sums of squared residuals seen */
    double decrease;           /* objective decrease of the last u solve */
    float *best_U, *best_bias; /* the model of the best validation RMSE */
    void *factors;             /* the one allocation U .. ones and best_* live in */
    void *solve_arrays;        /* the one allocation count and acc live in */
} cd_worker;

typedef struct cd_block { /* a column block whose home is this node */
    uint32_t n_cols;
    float *V;            /* k x n_cols, rank-major; NULL when the block lives elsewhere */
    float *bias;         /* n_cols column biases */
    float *ones;         /* n_cols ones: the fixed factor of the row-bias slot */
    const double *count; /* n_cols training ratings per column (into cd_core) */
    double part[3];      /* eval phase: cd_loss_delta of train, test, validation */
    double decrease;     /* objective decrease of the last v solve */
    float *best_V, *best_bias;
    void *factors; /* the one allocation V, bias, ones and best_* live in */
} cd_block;

typedef struct cd_metrics {
    uint64_t outer;                                      /* 1-based: outer iterations completed */
    double loss;                                         /* squared training error */
    double reg;                                          /* the regulariser */
    double objective, train_rmse, test_rmse, valid_rmse; /* NAN when there is no such set */
    uint64_t best_outer; /* outer iteration of the best validation RMSE so far */
} cd_metrics;

typedef struct cd_core {
    cd_opts opt;
    const rt_plan *plan;
    uint32_t first_worker, n_workers; /* the workers this node runs */
    cd_worker *workers;               /* n_workers */
    cd_block *blocks;                 /* plan->blocks entries */
    double *col_count;                /* n_cols, in block order (after cd_core_setup) */
    double *gram_w, *gram_h;          /* implicit: F = W^T W and G = H^T H, k x k */
    void *arrays;                     /* the one allocation workers .. gram_h live in */
    float mu;                         /* the training mean (0 with --no-center) */
    uint64_t n_train, n_valid;        /* global counts (after cd_core_setup) */
    cd_phase ph;                      /* the phase of rotation `rotation` */
    uint64_t rotation;
    double decrease_max; /* largest alternation decrease in this outer */
    uint64_t outer_done;
    rt_mf_early_stop es; /* the best validation RMSE, its outer iteration; stop */
} cd_core;

/* Allocate the state of workers first..first+n-1 over their shards
 * (shards[0..n-1]).  Block state is created on the first cd_core_block_home. */
int cd_core_init(cd_core *c, const cd_opts *opt, const rt_plan *plan, const rt_shard *shards,
                 uint32_t first_worker, uint32_t n_workers, rt_error *err);
void cd_core_free(cd_core *c);

/* Before the first rotation: this node's part of the setup vector
 * (cd_core_setup_len doubles: per worker the sum and count of its training
 * ratings and its validation count, then per column its training count, then
 * with implicit feedback per block its share of H^T H (k x k) drawn by the
 * block's home worker, zero where not ours); after the all-reduce,
 * cd_core_setup takes the totals. */
size_t cd_core_setup_len(const rt_plan *plan, const cd_opts *o);
int cd_core_setup_parts(const cd_core *c, double *v, rt_error *err);
void cd_core_setup(cd_core *c, const double *v);

int cd_core_block_home(cd_core *c, uint32_t block, uint64_t rotation, void *payload, size_t *len,
                       rt_error *err);
int cd_core_visit(cd_core *c, uint32_t worker, uint32_t block, uint64_t rotation, void *payload,
                  size_t len, rt_error *err);
/* All blocks home: absorb home block b's payload (V phase: solve v). */
int cd_core_block_end(cd_core *c, uint32_t block, uint64_t rotation, const void *payload,
                      size_t len, rt_error *err);
/* Then, once per rotation: solve u (U phase).  Returns 1 when `sums`
 * (cd_core_sums_len() doubles) holds this node's partial sums, which must be
 * all-reduced (the same answer on every node). */
int cd_core_rotation_end(cd_core *c, uint64_t rotation, double *sums);
size_t cd_core_sums_len(const rt_plan *plan, const cd_opts *o);
/* Then, with the all-reduced sums (NULL when rotation_end returned 0): take
 * the early-exit decision and move to the next phase.  Returns 1 when
 * `rotation` closed an outer iteration; *m then holds its numbers. */
int cd_core_advance(cd_core *c, uint64_t rotation, const double *sums, cd_metrics *m);
/* 1 when the run is over (all outer iterations, or early stopping). */
int cd_core_done(const cd_core *c);
/* The node's training state between rotations (factors, biases, residuals,
 * the phase and the early-exit / early-stopping memory, the home blocks'
 * factors), into / out of a state file (app_common.h).  Load after
 * cd_core_setup. */
struct rt_state_io;
int cd_core_state_io(cd_core *c, struct rt_state_io *io, rt_error *err);
/* The model to save: the best by validation when there is a validation set. */
const float *cd_core_saved_U(const cd_core *c, uint32_t local_worker);
const float *cd_core_saved_row_bias(const cd_core *c, uint32_t local_worker);
const float *cd_core_saved_V(const cd_core *c, uint32_t block);
const float *cd_core_saved_col_bias(const cd_core *c, uint32_t block);

#endif
