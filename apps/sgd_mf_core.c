/* sgd_mf_core.c - the SGD-MF state and math of one node (see sgd_mf.h).
 * Nothing here knows about the engine or the network: sgd_mf.c forwards the
 * engine's callbacks here and does the all-reduce, and the unit tests drive
 * the same functions through an in-memory schedule. */
#include "apps/app_common.h"
#include "apps/sgd_mf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

uint32_t sgd_payload_extra(const sgd_opts *o)
{
    uint32_t biases = o->mf.biases ? 1 : 0;
    return biases + (o->adagrad ? 1 + biases : 0);
}

/* L0 / n for a row or column of n training ratings (none: never updated). */
static float const_share(double lambda_const, double n)
{
    return n > 0 ? (float)(lambda_const / n) : 0.0f;
}

/* reg[i] = L0 / n_i for the worker's rows (all their ratings are in its
 * shard), counted in reg itself first. */
static void row_regularisers(const sgd_core *c, const rt_shard *s, size_t rows, float *reg)
{
    memset(reg, 0, rows * sizeof(float));
    for (uint64_t i = 0; i < s->train_off[c->plan->blocks]; i++)
        reg[s->train[i].row] += 1.0f; /* exact up to 2^24 ratings a row */
    for (size_t i = 0; i < rows; i++)
        reg[i] = const_share(c->o.lambda_const, reg[i]);
}

/* Local worker t's rows: with AdaGrad the accumulators of its W rows and
 * row biases, all 1 (as LIBMF); with validation the room for the best
 * model's rows. */
static int rows_init(sgd_core *c, uint32_t t, rt_error *err)
{
    sgd_rows *r = &c->rows[t];
    size_t rows = rt_plan_worker_rows(c->plan, c->m.first_worker + t), n = 0;
    rt_part part[5];
    if (c->o.adagrad)
        part[n++] = RT_PART(r->gW, rows);
    if (c->o.adagrad && c->m.bu)
        part[n++] = RT_PART(r->gbu, rows);
    if (c->reg_col)
        part[n++] = RT_PART(r->reg, rows);
    if (c->held) {
        part[n++] = RT_PART(r->best_W, rows * c->m.kp);
        part[n++] = RT_PART(r->best_bu, rows);
    }
    if (!(r->arrays = rt_alloc_parts(part, n)))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory for %zu rows", rows);
    for (size_t i = 0; r->gW && i < rows; i++)
        r->gW[i] = 1.0f;
    for (size_t i = 0; r->gbu && i < rows; i++)
        r->gbu[i] = 1.0f;
    if (r->reg)
        row_regularisers(c, &c->m.shards[t], rows, r->reg);
    return 0;
}

/* With validation: the gathered H and the room for the best model's
 * columns. */
static int validation_init(sgd_core *c, rt_error *err)
{
    const rt_plan *plan = c->plan;
    rt_mf_early_stop_init(&c->es);
    c->valid_rmse = c->best_test_rmse = NAN;
    if (rt_mf_cols_init(&c->cols, plan, c->m.k, c->m.bu != NULL, err))
        return -1;
    rt_part part[] = {RT_PART(c->best_H, plan->n_cols * c->m.kp),
                      RT_PART(c->best_bi, plan->n_cols)};
    if (!(c->best_cols = rt_alloc_parts(part, 2)))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory for the best model");
    return 0;
}

int sgd_core_init(sgd_core *c, const sgd_opts *o, const rt_plan *plan, const rt_shard *shards,
                  uint32_t first_worker, uint32_t n_workers, double train_mean,
                  const rt_mf_held_out *held, rt_error *err)
{
    memset(c, 0, sizeof(*c));
    c->o = *o;
    c->plan = plan;
    c->lr = (float)o->lr;
    c->rating_scale = o->mf.rating_scale > 0 ? o->mf.rating_scale : 1.0;
    c->rating_inv = (float)(1.0 / c->rating_scale);
    c->mu = (o->center ? (float)train_mean : 0.0f) * c->rating_inv;
    c->prev_loss = INFINITY;
    c->held = held;
    int reg = o->lambda_const > 0 && !o->implicit;
    rt_part part[] = {RT_PART(c->rows, n_workers), RT_PART(c->sse, 4 * (uint64_t)plan->workers),
                      RT_PART(c->reg_col, plan->n_cols)};
    if (!(c->arrays = rt_alloc_parts(part, reg ? 3 : 2)))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    if (rt_mf_local_init(&c->m, plan, shards, first_worker, n_workers, &o->mf, err) ||
        (held && validation_init(c, err)))
        return -1;
    for (uint32_t t = 0; t < n_workers; t++)
        if (rows_init(c, t, err))
            return -1;
    return 0;
}

void sgd_core_free(sgd_core *c)
{
    for (uint32_t t = 0; c->arrays && t < c->m.n_workers; t++)
        rt_free(c->rows[t].arrays);
    rt_free(c->arrays);
    rt_free(c->best_cols);
    rt_mf_cols_free(&c->cols);
    rt_mf_local_free(&c->m);
    memset(c, 0, sizeof(*c));
}

size_t sgd_core_setup_len(const sgd_core *c)
{
    return c->reg_col ? c->plan->n_cols : 0;
}

void sgd_core_setup_parts(const sgd_core *c, double *v)
{
    const rt_plan *plan = c->plan;
    for (uint32_t t = 0; c->reg_col && t < c->m.n_workers; t++) {
        const rt_shard *s = &c->m.shards[t];
        for (uint32_t b = 0; b < plan->blocks; b++) {
            double *count = v + plan->block_col_offset[b];
            for (uint64_t i = s->train_off[b]; i < s->train_off[b + 1]; i++)
                count[s->train[i].col] += 1;
        }
    }
}

void sgd_core_setup(sgd_core *c, const double *v)
{
    for (uint64_t j = 0; j < sgd_core_setup_len(c); j++)
        c->reg_col[j] = const_share(c->o.lambda_const, v[j]);
}

void sgd_core_block_home(sgd_core *c, uint32_t block, uint64_t rotation, float *payload,
                         size_t *len)
{
    uint32_t n = rt_plan_block_cols(c->plan, block), first = c->o.mf.biases ? 1 : 0;
    if (rotation == 0) {
        rt_mf_init_block(c->plan, block, payload, c->m.kp, &c->o.mf);
        /* The AdaGrad accumulators of the H rows and column biases start at 1. */
        float *g = rt_mf_payload_extra(payload, n, c->m.kp, first);
        size_t count = (size_t)(sgd_payload_extra(&c->o) - first) * n;
        for (size_t i = 0; i < count; i++)
            g[i] = 1.0f;
    }
    *len = rt_mf_block_bytes(c->plan, block, c->m.kp, sgd_payload_extra(&c->o));
}

/* --implicit: BPR over the block's training pairs, then the sampled AUC of
 * its held-out pairs; one stream of draws each per (epoch, worker, block). */
static void visit_bpr(sgd_core *c, uint32_t worker, uint32_t block, float *H)
{
    uint32_t t = worker - c->m.first_worker, n = rt_plan_block_cols(c->plan, block);
    const rt_shard *s = &c->m.shards[t];
    sgd_bpr_block b = {.W = c->m.W[t],
                       .H = H,
                       .bias = c->m.bu ? rt_mf_payload_biases(H, n, c->m.kp) : NULL,
                       .n_cols = n,
                       .k = c->m.k,
                       .kp = c->m.kp,
                       .negatives = c->o.negatives,
                       .lr = c->lr,
                       .lambda = (float)c->o.mf.lambda,
                       .lambda_bias = (float)c->o.lambda_bias};
    uint64_t b0 = s->train_off[block], b1 = s->train_off[block + 1];
    rt_rng rng;
    b.e = s->train + b0;
    b.n = b1 - b0;
    rt_rng_seed(&rng, c->o.mf.seed, sgd_bpr_stream(c->epochs_run, worker, block, 0));
    c->sse[worker] += sgd_bpr_train(&b, &rng);
    b.e = s->test + s->test_off[block];
    b.n = s->test_off[block + 1] - s->test_off[block];
    rt_rng_seed(&rng, c->o.mf.seed, sgd_bpr_stream(c->epochs_run, worker, block, 1));
    c->sse[c->plan->workers + worker] += sgd_bpr_test(&b, s->train + b0, b1 - b0, &rng);
}

void sgd_core_visit(sgd_core *c, uint32_t worker, uint32_t block, float *H)
{
    if (c->o.implicit) {
        visit_bpr(c, worker, block, H);
        return;
    }
    uint32_t t = worker - c->m.first_worker, W = c->plan->workers;
    const rt_shard *s = &c->m.shards[t];
    rt_sgd_params params = {.kernel = c->o.kernel,
                            .lr = c->lr,
                            .lambda = (float)c->o.mf.lambda,
                            .mu = c->mu,
                            .kp = c->m.kp,
                            .lambda_bias = (float)c->o.lambda_bias,
                            .grad_scale = 1.0f / (float)c->o.mf.k,
                            .rating_inv = c->rating_inv};
    uint32_t n = rt_plan_block_cols(c->plan, block), kp = c->m.kp;
    if (c->m.bu) {
        params.bu = c->m.bu[t];
        params.bi = rt_mf_payload_biases(H, n, kp);
    }
    if (c->reg_col) {
        params.reg_row = c->rows[t].reg;
        params.reg_col = c->reg_col + c->plan->block_col_offset[block];
    }
    if (c->o.adagrad) {
        uint32_t first = c->m.bu ? 1 : 0;
        params.gW = c->rows[t].gW;
        params.gH = rt_mf_payload_extra(H, n, kp, first);
        if (c->m.bu) {
            params.gbu = c->rows[t].gbu;
            params.gbi = rt_mf_payload_extra(H, n, kp, first + 1);
        }
    }
    uint64_t b0 = s->train_off[block], b1 = s->train_off[block + 1];
    c->sse[worker] += rt_sgd_block(s->train + b0, b1 - b0, c->m.W[t], H, &params);
    if (c->held) /* scored against the end-of-epoch model instead (sgd_core_score_held) */
        return;
    uint64_t t0 = s->test_off[block], t1 = s->test_off[block + 1];
    c->sse[W + worker] += rt_mf_block_sse(s->test + t0, t1 - t0, c->m.W[t], H, &params);
}

rt_mf_cols *sgd_core_cols(sgd_core *c)
{
    return c->held ? &c->cols : NULL;
}

void sgd_core_score_held(sgd_core *c)
{
    if (!c->held)
        return;
    uint32_t W = c->plan->workers;
    rt_sgd_params p = {.kernel = c->o.kernel,
                       .mu = c->mu,
                       .kp = c->m.kp,
                       .bi = c->cols.bi,
                       .rating_inv = c->rating_inv};
    for (uint32_t t = 0; t < c->m.n_workers; t++) {
        uint32_t w = c->m.first_worker + t;
        const rt_mf_held_worker *h = &c->held->worker[t];
        p.bu = c->m.bu ? c->m.bu[t] : NULL;
        c->sse[W + w] = rt_mf_block_sse(h->test, h->n_test, c->m.W[t], c->cols.H, &p);
        c->sse[2 * W + w] = rt_mf_block_sse(h->valid, h->n_valid, c->m.W[t], c->cols.H, &p);
        c->sse[3 * W + w] = (double)h->n_valid;
    }
}

double *sgd_core_sums(sgd_core *c)
{
    return c->sse;
}

size_t sgd_core_sums_len(const sgd_core *c)
{
    return (c->held ? 4 : 2) * (size_t)c->plan->workers;
}

/* The model now (after the epoch) becomes the best one. */
static void keep_best(sgd_core *c)
{
    const rt_plan *plan = c->plan;
    for (uint32_t t = 0; t < c->m.n_workers; t++) {
        size_t rows = rt_plan_worker_rows(plan, c->m.first_worker + t);
        memcpy(c->rows[t].best_W, c->m.W[t], rows * c->m.kp * sizeof(float));
        if (c->m.bu)
            memcpy(c->rows[t].best_bu, c->m.bu[t], rows * sizeof(float));
    }
    memcpy(c->best_H, c->cols.H, plan->n_cols * c->m.kp * sizeof(float));
    if (c->cols.bi)
        memcpy(c->best_bi, c->cols.bi, plan->n_cols * sizeof(float));
    c->best_test_rmse = c->test_rmse;
}

void sgd_core_use_best_rows(sgd_core *c)
{
    if (!c->held || !c->es.best_epoch)
        return;
    for (uint32_t t = 0; t < c->m.n_workers; t++) {
        size_t rows = rt_plan_worker_rows(c->plan, c->m.first_worker + t);
        memcpy(c->m.W[t], c->rows[t].best_W, rows * c->m.kp * sizeof(float));
        if (c->m.bu)
            memcpy(c->m.bu[t], c->rows[t].best_bu, rows * sizeof(float));
    }
}

void sgd_core_use_best_block(const sgd_core *c, uint32_t block, float *payload)
{
    if (!c->held || !c->es.best_epoch)
        return;
    const rt_plan *plan = c->plan;
    uint32_t n = rt_plan_block_cols(plan, block), kp = c->m.kp;
    const uint32_t *ids = plan->block_col_ids + plan->block_col_offset[block];
    for (uint32_t j = 0; j < n; j++) {
        memcpy(payload + (size_t)j * kp, c->best_H + (size_t)ids[j] * kp, kp * sizeof(float));
        if (c->m.bu)
            rt_mf_payload_biases(payload, n, kp)[j] = c->best_bi[ids[j]];
    }
}

static void next_learning_rate(sgd_core *c, double loss, uint64_t epoch)
{
    switch (c->o.schedule) {
    case LR_DECAY:
        c->lr = (float)(c->o.lr * pow(c->o.decay, (double)(epoch + 1)));
        break;
    case LR_BOLD:
        c->lr *= loss < c->prev_loss ? 1.05f : 0.5f;
        break;
    default:
        break;
    }
    c->prev_loss = loss;
}

/* The training error is not finite: name the likely cause.  Each step
 * scales a factor by 1 - lr x (lambda + L0/n) for a row of n ratings, so a
 * one-rating row's factor flips sign and grows once lr x (lambda + L0)
 * passes 2, whatever lr alone is; so do huge initial factors. */
static int diverged(const sgd_core *c, uint64_t rot, rt_error *err)
{
    double lr = c->lr, lambda = c->o.mf.lambda, scale = c->o.mf.init_scale;
    double l0 = c->reg_col ? c->o.lambda_const : 0;
    /* A bias shrinks by 1 - lr x (lambda-bias + L0/n) per step the same way
     * (--lambda-bias 1e20 was told "lower --lr" alone). */
    double lambda_bias = c->o.mf.biases ? c->o.lambda_bias : 0;
    const char *hint = lr * (lambda + l0) >= 2 ? "lower --lr, --lambda or --lambda-const (lr x "
                                                 "(lambda + L0) must stay below 2)"
                       : lr * (lambda_bias + l0) >= 2
                           ? "lower --lr or --lambda-bias (lr x (lambda-bias + L0) must stay "
                             "below 2)"
                       : scale > 10 ? "lower --init-scale"
                                    : "lower --lr";
    return rt_fail(err, RT_EXIT_RUNTIME,
                   "sgd-mf: training diverged at epoch %llu (lr %.4g, lambda %.4g, lambda-const "
                   "%.4g, init-scale %.4g); %s",
                   (unsigned long long)rot + 1, lr, lambda, l0, scale, hint);
}

int sgd_core_epoch_end(sgd_core *c, uint64_t rot, sgd_epoch *ep, int *stop, rt_error *err)
{
    const rt_plan *plan = c->plan;
    uint32_t W = plan->workers;
    /* added in worker order: the same bits on every rank */
    double train_sse = 0, test_sse = 0, valid_sse = 0, n_valid = 0;
    for (uint32_t w = 0; w < W; w++) {
        train_sse += c->sse[w];
        test_sse += c->sse[W + w];
        if (c->held) {
            valid_sse += c->sse[2 * W + w];
            n_valid += c->sse[3 * W + w];
        }
    }
    memset(c->sse, 0, sgd_core_sums_len(c) * sizeof(double));
    double n_train = (double)plan->nnz_train - n_valid; /* the ratings fitted */
    if (n_train < 1)
        n_train = 1;
    if (c->o.implicit) { /* mean BPR loss per step and sampled AUC instead (sgd_mf_bpr.c) */
        c->train_rmse = train_sse / (n_train * c->o.negatives);
        c->test_rmse = plan->nnz_test ? test_sse / (double)plan->nnz_test : NAN;
    } else {
        /* in the ratings' units (exact: the scale is a power of two) */
        c->train_rmse = sqrt(train_sse / n_train) * c->rating_scale;
        c->test_rmse =
            plan->nnz_test ? sqrt(test_sse / (double)plan->nnz_test) * c->rating_scale : NAN;
    }
    c->epochs_run = rot + 1;
    ep->train_sse = train_sse;
    ep->train_rmse = c->train_rmse;
    ep->test_rmse = c->test_rmse;
    ep->lr = c->lr;
    if (!isfinite(c->train_rmse))
        return diverged(c, rot, err);
    next_learning_rate(c, train_sse, rot);
    ep->valid_rmse = NAN;
    if (c->held && n_valid > 0) {
        ep->valid_rmse = c->valid_rmse = sqrt(valid_sse / n_valid) * c->rating_scale;
        if (rt_mf_early_stop_update(&c->es, c->valid_rmse, c->epochs_run, c->o.mf.early_stop))
            keep_best(c);
    }
    ep->best_epoch = c->es.best_epoch;
    *stop = sgd_core_done(c);
    return 0;
}

int sgd_core_done(const sgd_core *c)
{
    return c->epochs_run >= c->o.epochs ||
           (c->o.target_rmse > 0 && c->test_rmse <= c->o.target_rmse) || c->es.stop;
}

/* ---- training state ---- */

typedef struct sgd_scalars {
    float mu, lr;
    uint32_t k, biases, adagrad, pad;
    double prev_loss, train_rmse, test_rmse;
    uint64_t epochs_run;
} sgd_scalars;

typedef struct sgd_valid_scalars {
    double best_valid, valid_rmse, best_test_rmse;
    uint64_t best_epoch, since_best, stop;
} sgd_valid_scalars;

/* The early-stopping memory and the best model: a resumed run stops at the
 * same epoch and saves the same model as a straight one. */
static int validation_state_io(sgd_core *c, rt_state_io *io, rt_error *err)
{
    const rt_plan *plan = c->plan;
    sgd_valid_scalars sc;
    memset(&sc, 0, sizeof(sc));
    sc.best_valid = c->es.best_valid;
    sc.valid_rmse = c->valid_rmse;
    sc.best_test_rmse = c->best_test_rmse;
    sc.best_epoch = c->es.best_epoch;
    sc.since_best = c->es.since_best;
    sc.stop = (uint64_t)c->es.stop;
    if (rt_state_xfer(io, "sgd_valid", &sc, sizeof(sc), err))
        return -1;
    c->es.best_valid = sc.best_valid;
    c->valid_rmse = sc.valid_rmse;
    c->best_test_rmse = sc.best_test_rmse;
    c->es.best_epoch = sc.best_epoch;
    c->es.since_best = sc.since_best;
    c->es.stop = (int)sc.stop;
    for (uint32_t t = 0; t < c->m.n_workers; t++) {
        size_t rows = rt_plan_worker_rows(plan, c->m.first_worker + t);
        const sgd_rows *r = &c->rows[t];
        if (rt_state_xfer(io, "best_W", r->best_W, rows * c->m.kp * sizeof(float), err) ||
            rt_state_xfer(io, "best_row_bias", r->best_bu, rows * sizeof(float), err))
            return -1;
    }
    return rt_state_xfer(io, "best_H", c->best_H, plan->n_cols * c->m.kp * sizeof(float), err) ||
                   rt_state_xfer(io, "best_col_bias", c->best_bi, plan->n_cols * sizeof(float), err)
               ? -1
               : 0;
}

int sgd_core_state_io(sgd_core *c, rt_state_io *io, rt_error *err)
{
    sgd_scalars sc = {.mu = c->mu,
                      .lr = c->lr,
                      .k = c->m.k,
                      .biases = c->m.bu != NULL,
                      .adagrad = c->o.adagrad != 0,
                      .prev_loss = c->prev_loss,
                      .train_rmse = c->train_rmse,
                      .test_rmse = c->test_rmse,
                      .epochs_run = c->epochs_run};
    if (rt_state_xfer(io, "sgd", &sc, sizeof(sc), err))
        return -1;
    /* Only a state read back can differ from this run. */
    if (sc.k != c->m.k || sc.biases != (c->m.bu != NULL) || sc.adagrad != (c->o.adagrad != 0))
        return rt_fail(err, RT_EXIT_INPUT, "%s: state of rank %u%s%s, this run has rank %u%s%s",
                       io->r->path, sc.k, sc.biases ? " with biases" : "",
                       sc.adagrad ? " with AdaGrad" : "", c->m.k, c->m.bu ? " with biases" : "",
                       c->o.adagrad ? " with AdaGrad" : "");
    c->mu = sc.mu;
    c->lr = sc.lr;
    c->prev_loss = sc.prev_loss;
    c->train_rmse = sc.train_rmse;
    c->test_rmse = sc.test_rmse;
    c->epochs_run = sc.epochs_run;
    for (uint32_t t = 0; t < c->m.n_workers; t++) {
        size_t rows = rt_plan_worker_rows(c->plan, c->m.first_worker + t);
        const sgd_rows *r = &c->rows[t];
        if (rt_state_xfer(io, "W", c->m.W[t], rows * c->m.kp * sizeof(float), err) ||
            (c->m.bu && rt_state_xfer(io, "row_bias", c->m.bu[t], rows * sizeof(float), err)) ||
            (r->gW && rt_state_xfer(io, "W_adagrad", r->gW, rows * sizeof(float), err)) ||
            (r->gbu && rt_state_xfer(io, "bias_adagrad", r->gbu, rows * sizeof(float), err)))
            return -1;
    }
    return c->held ? validation_state_io(c, io, err) : 0;
}
