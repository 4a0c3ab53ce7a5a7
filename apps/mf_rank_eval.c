/*
 * mf_rank_eval.c - `rotor train --eval-top-k K`: the ranking metrics of the
 * model as it stands after an epoch, on the plan's test ratings, with each
 * user's training items excluded, as `rotor eval --top-k K` computes them on
 * the saved model (apps/ranking.c does both).
 *
 * A user needs every item's factors, but a rank holds only its home blocks'
 * H rows between rotations, so the whole H is gathered on every rank first
 * (rt_mf_cols_gather, exact).  Every rank then ranks the users of its
 * own workers, with the very operations of a saved model's scores
 * (rt_mf_scores_block), and the metric sums per global worker are
 * all-reduced and added in worker order: the same bits on any split.
 */
#include "apps/app_common.h"
#include "apps/mf_common.h"

#include <stdlib.h>
#include <string.h>

enum { SUMS = 6 }; /* per worker: precision, recall, ndcg, map, relevant, users */

/* A worker's training (or test) pairs as items per local row, by global
 * column ids. */
static int shard_items(const rt_plan *plan, const rt_shard *sh, int test, rt_user_items *out,
                       rt_error *err)
{
    const uint64_t *off = test ? sh->test_off : sh->train_off;
    const rt_entry *e = test ? sh->test : sh->train;
    rt_triplets t;
    rt_triplets_init(&t);
    int rc = rt_triplets_reserve(&t, off[plan->blocks] - off[0], err);
    for (uint32_t b = 0; rc == 0 && b < plan->blocks; b++) {
        const uint32_t *col_ids = plan->block_col_ids + plan->block_col_offset[b];
        for (uint64_t i = off[b]; rc == 0 && i < off[b + 1]; i++)
            rc = rt_triplets_push(&t, e[i].row, col_ids[e[i].col], e[i].val, err);
    }
    if (rc == 0)
        rc = rt_user_items_build(&t, sh->n_rows, plan->n_cols, out, err);
    rt_triplets_free(&t);
    return rc;
}

void rt_mf_rank_eval_free(rt_mf_rank_eval *e)
{
    for (uint32_t t = 0; e->arrays && t < e->n_workers; t++) {
        rt_user_items_free(&e->worker[t].relevant);
        rt_user_items_free(&e->worker[t].train);
        free(e->worker[t].users);
    }
    rt_free(e->arrays);
    rt_mf_cols_free(&e->cols);
    memset(e, 0, sizeof(*e));
}

int rt_mf_rank_eval_init(rt_mf_rank_eval *e, const rt_mf_local *m, uint32_t k, rt_error *err)
{
    const rt_plan *plan = m->plan;
    uint32_t n = m->n_workers;
    memset(e, 0, sizeof(*e));
    e->k = k;
    e->n_workers = n;
    rt_part part[] = {RT_PART(e->worker, n), RT_PART(e->sums, (uint64_t)plan->workers * SUMS)};
    if (!(e->arrays = rt_alloc_parts(part, 2)))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory for --eval-top-k");
    if (rt_mf_cols_init(&e->cols, plan, m->k, m->bu != NULL, err)) {
        rt_mf_rank_eval_free(e);
        return -1;
    }
    for (uint32_t t = 0; t < n; t++) {
        rt_mf_rank_worker *w = &e->worker[t];
        int rc = shard_items(plan, &m->shards[t], 1, &w->relevant, err) ||
                 shard_items(plan, &m->shards[t], 0, &w->train, err);
        if (rc == 0 && !(w->users = rt_rank_users(&w->relevant, &w->train, &w->n_users)))
            rc = rt_fail(err, RT_EXIT_RUNTIME, "out of memory for --eval-top-k");
        if (rc) {
            rt_mf_rank_eval_free(e);
            return -1;
        }
    }
    return 0;
}

typedef struct worker_scores {
    rt_mf_scores_args a;
    uint64_t n_rows, n_cols;
} worker_scores;

static void scores_of_worker(const void *ctx, const uint32_t *rows, uint32_t n_rows, uint32_t col0,
                             uint32_t n_cols, float *out)
{
    const worker_scores *w = ctx;
    rt_mf_scores_block(&w->a, rows, n_rows, col0, n_cols, out);
}

int rt_mf_rank_eval_epoch(rt_mf_rank_eval *e, const rt_mf_local *m, rt_engine *eng, float mu,
                          uint32_t threads, rt_rank_metrics *out, rt_error *err)
{
    const rt_plan *plan = m->plan;
    uint32_t W = plan->workers;
    if (rt_mf_cols_gather(&e->cols, plan, eng, err))
        return -1;
    float *panels = rt_mf_pack_panels(e->cols.H, plan->n_cols, m->kp);
    if (!panels)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory for --eval-top-k");
    memset(e->sums, 0, (size_t)W * SUMS * sizeof(double));
    int rc = 0;
    for (uint32_t t = 0; rc == 0 && t < m->n_workers; t++) {
        worker_scores ws = {.a = {.W = m->W[t],
                                  .panels = panels,
                                  .bu = m->bu ? m->bu[t] : NULL,
                                  .bi = e->cols.bi,
                                  .mu = mu,
                                  .kp = m->kp,
                                  .kernel = rt_mf_kernel_best()}};
        rt_scorer s = {.scores = scores_of_worker,
                       .ctx = &ws,
                       .n_rows = m->shards[t].n_rows,
                       .n_cols = plan->n_cols};
        const rt_mf_rank_worker *w = &e->worker[t];
        rt_topk_opts opt = {.k = e->k, .threads = threads, .exclude = &w->train};
        rt_rank_metrics r = {0};
        rc = rt_rank_metrics_sum(&s, &w->relevant, w->users, w->n_users, &opt, NULL, &r, err);
        double *v = e->sums + (size_t)(m->first_worker + t) * SUMS;
        v[0] = r.precision, v[1] = r.recall, v[2] = r.ndcg, v[3] = r.map;
        v[4] = (double)r.relevant, v[5] = (double)r.users;
    }
    rt_free(panels);
    if (rc || rt_engine_allreduce_f64(eng, e->sums, (size_t)W * SUMS, err))
        return -1;
    memset(out, 0, sizeof(*out));
    out->k = e->k;
    double users = 0;
    for (uint32_t w = 0; w < W; w++) { /* in worker order: the same bits on every split */
        const double *v = e->sums + (size_t)w * SUMS;
        out->precision += v[0], out->recall += v[1], out->ndcg += v[2], out->map += v[3];
        out->relevant += (uint64_t)v[4];
        users += v[5];
    }
    out->users = (uint64_t)users;
    double d = users > 0 ? users : 1.0;
    out->precision /= d, out->recall /= d, out->ndcg /= d, out->map /= d;
    return 0;
}
