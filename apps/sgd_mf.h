/*
 * sgd_mf.h - SGD matrix factorisation: the internals shared by the engine
 * glue (sgd_mf.c), the engine-free core (sgd_mf_core.c) and the tests.
 *
 * Model: r_ui ~ mu + b_u + b_i + w_u . h_i (biased MF, Koren 2009), with mu
 * the training mean (--no-center: 0) and biases b (--no-biases: none).  Row
 * biases stay with their worker; column biases travel in the block payload
 * after the H rows (mf_common.h).
 * One epoch = one rotation: worker w runs SGD over data block (w, b) when
 * column block b visits it, ratings in (row, col) order.  Then it measures
 * the test ratings of that data block against the freshly updated rows.
 *
 * Reported per epoch (all-reduced, exact):
 *   train RMSE - over the errors measured just before each SGD update, as
 *                LIBMF and NOMAD report it (no extra pass over the data);
 *   test RMSE  - each test rating scored right after its data block's pass.
 *
 * Validation (--validation-fraction F): the training ratings held out by
 * rt_mf_is_validation (seed, row, column) are not trained on (nor in the
 * training mean); after every epoch the whole H is gathered on every rank
 * (rt_mf_cols, exact) and each worker scores its validation and test
 * ratings against the model as it stands then, so with validation the
 * epoch's valid_rmse and test_rmse are those of the end-of-epoch model,
 * which `rotor eval` of it reproduces (without validation, test RMSE is
 * measured during the epoch as above, at no extra cost).  The model of the
 * best validation RMSE is kept (rt_mf_early_stop; --out writes it) and
 * --early-stop N ends the run after N epochs without a better one.
 *
 * Step sizes: row-wise AdaGrad as in LIBMF (--adaptive adagrad, the
 * default): every W row, H row and bias has an accumulator G starting at 1
 * and steps by lr / sqrt(G) (mf_kernels.c); the accumulators of H rows and
 * column biases travel with them in the block payload, after the column
 * biases (rt_mf_payload_extra), those of W rows and row biases stay with
 * their worker, so every update happens on one thread in schedule order and
 * runs stay bit-identical.  --adaptive none: one global rate.
 *
 * Regularisation: every update of a row weighs its factors by lambda and
 * its bias by lambda_bias, so an epoch regularises a row of n ratings by
 * lambda n (the frequency-weighted L2 of ALS-WR and LIBMF), which leaves a
 * row or column of a few ratings nearly free to fit them.  --lambda-const L0
 * adds L0 / n to each of its updates' weights: lambda n + L0 per epoch, the
 * objective of cd-mf --lambda-const.  The row counts are the worker's own
 * (rows stay with their worker); the column counts take one all-reduce
 * before training (sgd_core_setup_parts / sgd_core_setup).
 *
 * Learning rate schedules: fixed (the default); decay (lr0 * decay^epoch);
 * bold driver (x1.05 after an epoch whose training loss fell, x0.5 after one
 * where it rose).  The schedule only reads all-reduced totals, so every rank
 * takes the same decision and the run stays deterministic.
 */
#ifndef ROTOR_APPS_SGD_MF_H
#define ROTOR_APPS_SGD_MF_H

#include "apps/mf_common.h"

enum { LR_FIXED, LR_DECAY, LR_BOLD };

typedef struct sgd_opts {
    rt_mf_common_opts mf;
    double lr, decay, lambda_bias;
    double lambda_const; /* --lambda-const L0: a row's or column's L2 is lambda n + L0 */
    int schedule;
    uint32_t epochs;
    int center;
    int adagrad;             /* row-wise AdaGrad steps (--adaptive adagrad|none) */
    const char *kernel_name; /* --kernel: auto, portable or avx2 */
    rt_mf_kernel kernel;     /* the SGD path, chosen once when the options are parsed */
    double target_rmse;      /* stop early once test RMSE <= this (0 = never) */
    int implicit;            /* --implicit: BPR with negatives from the block held */
    uint32_t negatives;      /* --negatives: BPR steps (negatives drawn) per training pair */
    uint32_t eval_top_k;     /* --eval-top-k: ranking metrics at K every epoch (0 = off) */
} sgd_opts;

/* ---- the core: state and math of one node, no engine ----
 * The glue (or a test) runs the rotation: block_home for the home blocks,
 * visit for every (worker, block) in schedule order, then all-reduces
 * sgd_core_sums() and calls sgd_core_epoch_end(). */
/* A local worker's rows beyond W and its biases, in one allocation. */
typedef struct sgd_rows {
    float *gW, *gbu;         /* AdaGrad: accumulators of the W rows and row biases */
    float *reg;              /* --lambda-const: each row's L0 / n (rt_sgd_params.reg_row) */
    float *best_W, *best_bu; /* validation: the best model's W rows and row biases */
    void *arrays;            /* the one allocation they live in */
} sgd_rows;

typedef struct sgd_core {
    sgd_opts o;
    const rt_plan *plan;
    rt_mf_local m;    /* the local workers' shards, W rows and row biases */
    sgd_rows *rows;   /* per local worker */
    float mu, lr;     /* mu in training's units: the training mean / rating_scale */
    float rating_inv; /* 1 / --rating-scale (a power of two, so exact) */
    double rating_scale;
    /* Per global worker (this node's entries only): squared errors of train
     * in [0, W), test in [W, 2W), with validation those of the validation
     * ratings in [2W, 3W) and their counts in [3W, 4W); one all-reduce. */
    double *sse;
    /* --lambda-const (else NULL): each column's L0 / n, in block order
     * (block_col_offset[b] + its local column), set by sgd_core_setup. */
    float *reg_col;
    void *arrays;     /* the one allocation rows, sse and reg_col live in */
    double prev_loss; /* training loss of the previous epoch (bold driver) */
    uint64_t epochs_run;
    double train_rmse, test_rmse;
    /* --validation-fraction: the held-out ratings (NULL: none), the whole H
     * after the epoch, the early-stopping memory and the best model (local
     * W rows and row biases in `rows`, every column's H row and bias). */
    const rt_mf_held_out *held;
    rt_mf_cols cols;
    rt_mf_early_stop es;
    double valid_rmse, best_test_rmse;
    float *best_H, *best_bi;
    void *best_cols; /* the one allocation best_H and best_bi live in */
} sgd_core;

/* What one epoch measured (after the all-reduce). */
typedef struct sgd_epoch {
    double train_sse, train_rmse, test_rmse;
    double valid_rmse;   /* NAN without validation */
    uint64_t best_epoch; /* the best validation RMSE's epoch so far (0: none) */
    float lr;            /* the learning rate the epoch ran with */
} sgd_epoch;

/* State of workers first..first+n-1 over their shards (shards[0..n-1], kept
 * by the caller; with validation the fit shards of `held`, also kept by the
 * caller, else NULL); `train_mean` is the mean of the ratings fitted (used
 * when centring). */
int sgd_core_init(sgd_core *c, const sgd_opts *o, const rt_plan *plan, const rt_shard *shards,
                  uint32_t first_worker, uint32_t n_workers, double train_mean,
                  const rt_mf_held_out *held, rt_error *err);
void sgd_core_free(sgd_core *c);
/* Before the first rotation, with --lambda-const: every node adds its
 * workers' training ratings per column into v (sgd_core_setup_len doubles,
 * zeroed by the caller; block order), the vector is all-reduced (sums of
 * counts: exact), and sgd_core_setup takes the totals.  Length 0 (nothing
 * to do) without --lambda-const. */
size_t sgd_core_setup_len(const sgd_core *c);
void sgd_core_setup_parts(const sgd_core *c, double *v);
void sgd_core_setup(sgd_core *c, const double *v);

/* Block b is home at the start of `rotation`: at rotation 0 write its initial
 * H rows (and zero column biases); later the payload is kept.  Sets *len. */
void sgd_core_block_home(sgd_core *c, uint32_t block, uint64_t rotation, float *payload,
                         size_t *len);
/* SGD over data block (worker, block), then score its test ratings. */
void sgd_core_visit(sgd_core *c, uint32_t worker, uint32_t block, float *payload);
/* With validation, after the rotation (all blocks home): the buffer to
 * gather the whole H into (rt_mf_cols_gather), else NULL; then score the
 * held-out ratings against it. */
rt_mf_cols *sgd_core_cols(sgd_core *c);
void sgd_core_score_held(sgd_core *c);
/* The per-worker errors to all-reduce in place before sgd_core_epoch_end. */
double *sgd_core_sums(sgd_core *c);
size_t sgd_core_sums_len(const sgd_core *c);
/* After the all-reduce: the epoch's metrics, the next learning rate.  Sets
 * *stop when training is over; -1 when it diverged. */
int sgd_core_epoch_end(sgd_core *c, uint64_t rotation, sgd_epoch *ep, int *stop, rt_error *err);
/* The run is over: --epochs reached, --target-rmse met or stopped early. */
int sgd_core_done(const sgd_core *c);

/* The model to save is the best by validation (an epoch before the last
 * one's may be): put its W rows and row biases in place of the local ones,
 * and its H rows and column biases into block b's payload.  After the run
 * only; no-ops when there is no such model. */
void sgd_core_use_best_rows(sgd_core *c);
void sgd_core_use_best_block(const sgd_core *c, uint32_t block, float *payload);

/* ---- --implicit: BPR over one data block (sgd_mf_bpr.c) ---- */
typedef struct sgd_bpr_block {
    const rt_entry *e; /* the block's pairs, sorted by (row, col) */
    size_t n;
    float *W, *H; /* worker-local W rows, block-local H rows, kp floats each */
    float *bias;  /* the block's column biases, or NULL */
    uint32_t n_cols, k, kp;
    uint32_t negatives; /* draws (and steps) per training pair */
    float lr, lambda, lambda_bias;
} sgd_bpr_block;
/* The stream of negative draws of (epoch, worker, block): test = 1 for the
 * held-out pairs' draws. */
uint64_t sgd_bpr_stream(uint64_t epoch, uint32_t worker, uint32_t block, int test);
/* One BPR pass, b->negatives steps per pair (each against its own draw, in
 * draw order); returns the sum of -ln sigmoid(x_ui - x_uj) before each step. */
double sgd_bpr_train(const sgd_bpr_block *b, rt_rng *rng);
/* The held-out pairs b->e against one negative each (drawn as in training,
 * avoiding the row's training pairs train[0..n_train) of the block): the
 * number ranked above their negative (ties count 1/2), for a sampled AUC. */
double sgd_bpr_test(const sgd_bpr_block *b, const rt_entry *train, size_t n_train, rt_rng *rng);

/* Floats per column after the H rows in a payload: the column biases, then
 * with AdaGrad the accumulators of the H rows and of the column biases. */
uint32_t sgd_payload_extra(const sgd_opts *o);

/* The node's training state between rotations (the local W rows and row
 * biases, with AdaGrad their accumulators, the learning rate and the
 * schedule's memory, with validation the early-stopping memory and the best
 * model), into or out of a state file (rt_state_io,
 * app_common.h); the home blocks' payloads (H rows, column biases and their
 * accumulators) are the caller's. */
struct rt_state_io;
int sgd_core_state_io(sgd_core *c, struct rt_state_io *io, rt_error *err);

#endif
