/*
 * cd_mf.h - CCD++ matrix factorisation (Yu, Hsieh, Si, Dhillon, ICDM'12) on
 * the rotation engine: the internals shared by the app glue (cd_mf.c), the
 * engine-independent solver core (cd_mf_core.c), its kernels
 * (cd_mf_kernels.c), the unit tests and the benchmark.
 *
 * Model: R ~ W H^T with W (n_rows x k) and H (n_cols x k), minimising
 *     sum_{(i,j) in train} (R_ij - w_i . h_j)^2 + lambda (|W|_F^2 + |H|_F^2).
 * CCD++ updates one rank r at a time.  With u = W[:, r], v = H[:, r] and the
 * residual E = R - W H^T on the training entries:
 *     E^ = E + u v^T                                   (add the term back)
 *     T times:  u_i = sum_j E^_ij v_j / (lambda + sum_j v_j^2)   (j in row i)
 *               v_j = sum_i E^_ij u_i / (lambda + sum_i u_i^2)   (i in col j)
 *     E  = E^ - u v^T                                  (take the new term out)
 *
 * Placement.  Worker w owns row block w: its rows of W (stored rank-major,
 * so u_r is contiguous), the residuals of its training and test entries
 * (float arrays parallel to the shard's entries, same order) and the row
 * accumulators of the u-update.  Column block b's slice of H stays at the
 * block's home node; what travels with the block is only the state of the
 * rank being updated: the v_r slice (u-phase) or the v-update accumulators
 * (v-phase).
 *
 * Phase sequence (one phase = one rotation; every block meets every worker
 * once per rotation).  Per outer iteration, for r = 0..k-1, t = 0..T-1:
 *
 *   U(r,t)  payload: v_r [, v_{r-1} final].  Visit of data block (w, b):
 *           if t = 0: E -= u_{r-1} v_{r-1}^T (the previous rank's final term;
 *           for r = 0 the last rank of the previous outer iteration) and
 *           E += u_r v_r^T (add-back; skipped in outer iteration 0 where
 *           W = 0), on train and test residuals alike; then
 *           num_i += E^_ij v_j, den_i += v_j^2 into the worker's row
 *           accumulators.  rotation_end: u_i = num_i / (lambda + den_i).
 *   V(r,t)  payload: num_j, den_j (zero at home).  Visit:
 *           num_j += E^_ij u_i, den_j += u_i^2.  rotation_end, at the home
 *           node: v_j = num_j / (lambda + den_j) into the home copy of H.
 *
 * So an outer iteration is exactly 2 k T rotations: the add-back and the
 * subtraction ride on the first u-phase of the next rank, and nothing else
 * touches the data.  (Fewer is impossible while u and v alternate: each
 * half-step needs every (worker, block) pair to have met after the previous
 * half-step finished.)  The subtraction of the last rank is applied at the
 * start of the next outer iteration (never after the final one: the model
 * is complete without it).
 *
 * Objective without an extra pass: in the last V phase of an outer iteration
 * the visit also sums S = sum E^_ij^2 over the worker's training entries and
 * the same accumulators over its test entries; then, per column,
 *     sum_i (E^_ij - u_i v_j)^2 = S_j - 2 v_j num_j + v_j^2 den_j,
 * so the loss after the final subtraction is known at the homes when v is
 * solved.  Partial sums are placed in per-worker and per-block slots of one
 * vector, all-reduced (adding zeros is exact) and summed in slot order, so
 * the reported numbers do not depend on how workers are spread over nodes.
 *
 * Determinism: every accumulator is summed in schedule order (a worker sees
 * blocks, a block sees workers, in an order fixed by the plan), so runs are
 * bit-identical for any split of the workers over nodes and threads.
 *
 * Initialisation: W = 0 (so E = R); H rows as sgd-mf draws them
 * (rt_mf_init_vector: N(0, init_scale / sqrt(k)) from a stream fixed by the
 * seed and the global column id), so the start never depends on the layout.
 *
 * Options, shards and the saved model (W.npy, H.npy, ids, model.json) are
 * the MF conventions of mf_common.h, shared with sgd-mf.
 */
#ifndef ROTOR_APPS_CD_MF_H
#define ROTOR_APPS_CD_MF_H

#include "apps/mf_common.h"

#include <stdint.h>

/* ---- options ---- */
typedef struct cd_opts {
    rt_mf_common_opts mf; /* --rank --lambda --seed --init-scale --out --metrics */
    uint32_t outer;       /* --outer: outer iterations */
    uint32_t inner;       /* --inner: T, alternations per rank */
} cd_opts;

/* ---- the phase a rotation runs ---- */
enum { CD_PHASE_U = 0, CD_PHASE_V = 1 };

typedef struct cd_phase {
    uint64_t outer;    /* 0-based outer iteration */
    uint32_t rank;     /* r being updated */
    uint32_t inner;    /* t, 0-based */
    int kind;          /* CD_PHASE_U or CD_PHASE_V */
    int subtract;      /* U, t = 0: remove sub_rank's final term first */
    uint32_t sub_rank; /* (rank + k - 1) % k */
    int add_back;      /* U, t = 0: add rank's current term back */
    int eval;          /* V: last phase of the outer iteration: objective sums */
} cd_phase;

void cd_phase_of(uint64_t rotation, uint32_t k, uint32_t inner, cd_phase *ph);
static inline uint64_t cd_rotations_per_outer(uint32_t k, uint32_t inner)
{
    return 2ull * k * inner;
}

/* ---- the block payload ----
 * A 64-byte header, then arrays each starting at a multiple of RT_ALIGN:
 *   U phase: float v[n], float v_sub[n] (only when subtracting)
 *   V phase: double acc[2n] (num, den pairs) [, test acc[2n] when eval] */
#define CD_PAYLOAD_MAGIC 0x43444d46u /* "CDMF" */
typedef struct cd_payload_hdr {
    uint32_t magic;
    uint32_t kind; /* CD_PHASE_U / CD_PHASE_V */
    uint64_t rotation;
    uint32_t block;
    uint32_t n_cols;
    uint32_t flags; /* CD_PF_* */
    uint32_t reserved[9];
} cd_payload_hdr;
enum { CD_PF_SUBTRACT = 1, CD_PF_ADD_BACK = 2, CD_PF_EVAL = 4 };

/* Largest payload for a block of `max_cols` columns. */
size_t cd_payload_max_bytes(uint32_t max_cols);

/* ---- a worker's ratings regrouped for the kernels (cd_mf_cells.c) ----
 * Entry e keeps its index in the shard (so `res` is parallel to the shard's
 * entries, same order), but the kernels read only 8 bytes per entry: the
 * block-local column and the residual.  The rows of MF data blocks are
 * sorted, so each block is a list of row runs (row, length). */
typedef struct cd_cells {
    uint32_t blocks;
    uint64_t *entry_off; /* blocks + 1: entries of block b */
    uint64_t *run_off;   /* blocks + 1: runs of block b */
    uint32_t *run_row;   /* worker-local row of each run */
    uint32_t *run_len;   /* entries in each run (>= 1) */
    uint32_t *col;       /* block-local column of each entry */
    float *res;          /* residual of each entry; starts as the rating */
} cd_cells;

/* One data block of a cd_cells, as the kernels take it. */
typedef struct cd_span {
    size_t n_runs;
    const uint32_t *run_row, *run_len;
    const uint32_t *col;
    float *res;
} cd_span;

/* Build from a shard's entries (`off`: blocks + 1 offsets, each block sorted
 * by row).  Fails (exit code 2) on entries that are not grouped by row. */
int cd_cells_build(cd_cells *c, const rt_entry *ent, const uint64_t *off, uint32_t blocks,
                   rt_error *err);
void cd_cells_free(cd_cells *c);
cd_span cd_cells_block(const cd_cells *c, uint32_t block);

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
/* out[i] = num_i / (lambda + den_i) (0 when the denominator is 0). */
void cd_solve(const double *acc, size_t n, double lambda, float *out);
/* sum over i of v[i]^2 den_i - 2 v[i] num_i: the change of the squared loss
 * of the columns when the new rank-one term is subtracted. */
double cd_loss_delta(const float *v, const double *acc, size_t n);

/* ---- the solver core (cd_mf_core.c), independent of the engine ---- */

typedef struct cd_worker { /* one row block; only its thread touches it in a visit */
    uint32_t id;           /* global worker id */
    uint32_t n_rows;
    const rt_shard *shard;
    cd_cells train;   /* training ratings and their residuals */
    cd_cells test;    /* test ratings and their residuals */
    float *U;         /* k x n_rows, rank-major */
    double *acc;      /* u-update accumulators, 2 n_rows (num, den pairs) */
    double ssq, tssq; /* eval phase: sum of squared residuals seen */
} cd_worker;

typedef struct cd_block { /* a column block whose home is this node */
    uint32_t n_cols;
    float *V;       /* k x n_cols, rank-major; NULL when the block lives elsewhere */
    double part[2]; /* eval phase: cd_loss_delta of train and test accumulators */
} cd_block;

typedef struct cd_metrics {
    uint64_t outer; /* 1-based: outer iterations completed */
    double loss;    /* squared training error */
    double reg;     /* lambda (|W|^2 + |H|^2) */
    double objective, train_rmse, test_rmse;
} cd_metrics;

typedef struct cd_core {
    cd_opts opt;
    const rt_plan *plan;
    uint32_t first_worker, n_workers; /* the workers this node runs */
    cd_worker *workers;               /* n_workers */
    cd_block *blocks;                 /* plan->blocks entries */
} cd_core;

/* Allocate the state of workers first..first+n-1 over their shards
 * (shards[0..n-1]).  Block state is created on the first cd_core_block_home. */
int cd_core_init(cd_core *c, const cd_opts *opt, const rt_plan *plan, const rt_shard *shards,
                 uint32_t first_worker, uint32_t n_workers, rt_error *err);
void cd_core_free(cd_core *c);

int cd_core_block_home(cd_core *c, uint32_t block, uint64_t rotation, void *payload, size_t *len,
                       rt_error *err);
int cd_core_visit(cd_core *c, uint32_t worker, uint32_t block, uint64_t rotation, void *payload,
                  size_t len, rt_error *err);
/* All blocks home: absorb home block b's payload (V phase: solve v_r). */
int cd_core_block_end(cd_core *c, uint32_t block, uint64_t rotation, const void *payload,
                      size_t len, rt_error *err);
/* Then, once per rotation: solve u_r (U phase).  Returns 1 when this rotation
 * closes an outer iteration: `sums` (cd_core_sums_len() doubles) then holds
 * this node's partial sums, to be all-reduced and given to cd_core_metrics. */
int cd_core_rotation_end(cd_core *c, uint64_t rotation, double *sums);
size_t cd_core_sums_len(const rt_plan *plan);
void cd_core_metrics(const cd_core *c, uint64_t rotation, const double *sums, cd_metrics *m);
/* 1 when `rotation` is the last one of the run. */
int cd_core_done(const cd_core *c, uint64_t rotation);

#endif
