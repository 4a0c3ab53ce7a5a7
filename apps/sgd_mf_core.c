/* sgd_mf_core.c - the SGD-MF state and math of one node (see sgd_mf.h).
 * Nothing here knows about the engine or the network: sgd_mf.c forwards the
 * engine's callbacks here and does the all-reduce, and the unit tests drive
 * the same functions through an in-memory schedule. */
#include "apps/sgd_mf.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int sgd_core_init(sgd_core *c, const sgd_opts *o, const rt_plan *plan, const rt_shard *shards,
                  uint32_t first_worker, uint32_t n_workers, double train_mean, rt_error *err)
{
    memset(c, 0, sizeof(*c));
    c->o = *o;
    c->plan = plan;
    c->lr = (float)o->lr;
    c->mu = o->center ? (float)train_mean : 0.0f;
    c->prev_loss = INFINITY;
    c->sse = calloc(2 * (size_t)plan->workers, sizeof(double));
    if (!c->sse)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    return rt_mf_local_init(&c->m, plan, shards, first_worker, n_workers, &o->mf, err);
}

void sgd_core_free(sgd_core *c)
{
    rt_mf_local_free(&c->m);
    free(c->sse);
    memset(c, 0, sizeof(*c));
}

void sgd_core_block_home(sgd_core *c, uint32_t block, uint64_t rotation, float *payload,
                         size_t *len)
{
    if (rotation == 0)
        rt_mf_init_block(c->plan, block, payload, c->m.kp, &c->o.mf);
    *len = rt_mf_block_bytes(c->plan, block, c->m.kp, c->o.mf.biases);
}

void sgd_core_visit(sgd_core *c, uint32_t worker, uint32_t block, float *H)
{
    uint32_t t = worker - c->m.first_worker, W = c->plan->workers;
    const rt_shard *s = &c->m.shards[t];
    rt_sgd_params params = {.kernel = c->o.kernel,
                            .lr = c->lr,
                            .lambda = (float)c->o.mf.lambda,
                            .mu = c->mu,
                            .kp = c->m.kp,
                            .lambda_bias = (float)c->o.lambda_bias};
    if (c->m.bu) {
        params.bu = c->m.bu[t];
        params.bi = rt_mf_payload_biases(H, rt_plan_block_cols(c->plan, block), c->m.kp);
    }
    uint64_t b0 = s->train_off[block], b1 = s->train_off[block + 1];
    c->sse[worker] += rt_sgd_block(s->train + b0, b1 - b0, c->m.W[t], H, &params);
    uint64_t t0 = s->test_off[block], t1 = s->test_off[block + 1];
    c->sse[W + worker] += rt_mf_block_sse(s->test + t0, t1 - t0, c->m.W[t], H, &params);
}

double *sgd_core_sums(sgd_core *c)
{
    return c->sse;
}

size_t sgd_core_sums_len(const sgd_core *c)
{
    return 2 * (size_t)c->plan->workers;
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

int sgd_core_epoch_end(sgd_core *c, uint64_t rot, sgd_epoch *ep, int *stop, rt_error *err)
{
    const rt_plan *plan = c->plan;
    uint32_t W = plan->workers;
    double train_sse = 0, test_sse = 0; /* added in worker order: the same bits on every rank */
    for (uint32_t w = 0; w < W; w++) {
        train_sse += c->sse[w];
        test_sse += c->sse[W + w];
    }
    memset(c->sse, 0, 2 * (size_t)W * sizeof(double));
    c->train_rmse = sqrt(train_sse / (double)(plan->nnz_train ? plan->nnz_train : 1));
    c->test_rmse = plan->nnz_test ? sqrt(test_sse / (double)plan->nnz_test) : NAN;
    c->epochs_run = rot + 1;
    ep->train_sse = train_sse;
    ep->train_rmse = c->train_rmse;
    ep->test_rmse = c->test_rmse;
    ep->lr = c->lr;
    if (!isfinite(c->train_rmse))
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "sgd-mf: training diverged at epoch %llu (lr %.4g); lower --lr",
                       (unsigned long long)rot + 1, (double)c->lr);
    next_learning_rate(c, train_sse, rot);
    *stop =
        c->epochs_run >= c->o.epochs || (c->o.target_rmse > 0 && c->test_rmse <= c->o.target_rmse);
    return 0;
}
