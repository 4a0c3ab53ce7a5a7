/* mf_toy.c - the planted MF problem of mf_toy.h. */
#include "tests/apps/mf_toy.h"

#include <stdlib.h>
#include <string.h>

/* Rows go to worker g % W (local index g / W), columns to block g % B. */
void toy_make(toy *t, uint32_t n_rows, uint32_t n_cols, uint32_t W, uint32_t c, uint32_t threads,
              double density, uint64_t seed)
{
    uint32_t B = W * c, planted = 3;
    memset(t, 0, sizeof(*t));
    rt_plan *p = &t->plan;
    p->app = RT_PLAN_MF;
    p->n_rows = n_rows;
    p->n_cols = n_cols;
    p->workers = W;
    p->blocks = B;
    p->pipeline = c;
    p->threads = threads;
    p->nodes = W / threads;
    p->worker_row_offset = calloc(W + 1, sizeof(uint64_t));
    p->worker_row_ids = calloc(n_rows, sizeof(uint32_t));
    p->block_col_offset = calloc(B + 1, sizeof(uint64_t));
    p->block_col_ids = calloc(n_cols, sizeof(uint32_t));
    p->schedule = calloc((size_t)B * W, sizeof(uint32_t));
    rt_schedule_ring(W, c, p->schedule);
    for (uint32_t w = 0, at = 0; w < W; w++) {
        p->worker_row_offset[w] = at;
        for (uint32_t g = w; g < n_rows; g += W)
            p->worker_row_ids[at++] = g;
        p->worker_row_offset[w + 1] = at;
    }
    for (uint32_t b = 0, at = 0; b < B; b++) {
        p->block_col_offset[b] = at;
        for (uint32_t g = b; g < n_cols; g += B)
            p->block_col_ids[at++] = g;
        p->block_col_offset[b + 1] = at;
    }

    /* Planted factors and the observed entries, in (row, col) order. */
    rt_rng rng;
    rt_rng_seed(&rng, seed, 0);
    double *A = malloc(sizeof(double) * n_rows * planted),
           *Bm = malloc(sizeof(double) * n_cols * planted);
    for (size_t x = 0; x < (size_t)n_rows * planted; x++)
        A[x] = rt_rng_normal(&rng);
    for (size_t x = 0; x < (size_t)n_cols * planted; x++)
        Bm[x] = rt_rng_normal(&rng);
    size_t cap = (size_t)n_rows * n_cols;
    cd_ref_data *d = &t->ref;
    d->n_rows = n_rows;
    d->n_cols = n_cols;
    d->row = malloc(cap * 4), d->col = malloc(cap * 4), d->val = malloc(cap * 4);
    d->trow = malloc(cap * 4), d->tcol = malloc(cap * 4), d->tval = malloc(cap * 4);
    int *is_test = malloc(cap * sizeof(int));
    float *val = malloc(cap * sizeof(float));
    for (uint32_t i = 0; i < n_rows; i++)
        for (uint32_t j = 0; j < n_cols; j++) {
            size_t x = (size_t)i * n_cols + j;
            is_test[x] = -1;
            if (rt_rng_uniform(&rng) >= density)
                continue;
            double v = 3 + 0.1 * rt_rng_normal(&rng);
            for (uint32_t r = 0; r < planted; r++)
                v += A[i * planted + r] * Bm[j * planted + r];
            val[x] = (float)v;
            is_test[x] = rt_rng_uniform(&rng) < 0.2;
            if (is_test[x]) {
                d->trow[d->nt] = i, d->tcol[d->nt] = j, d->tval[d->nt++] = val[x];
            } else {
                d->row[d->n] = i, d->col[d->n] = j, d->val[d->n++] = val[x];
            }
        }
    p->nnz_train = d->n;
    p->nnz_test = d->nt;

    /* Shards: entries of block (w, b), sorted by (local row, local col). */
    t->shards = calloc(W, sizeof(rt_shard));
    t->train = calloc(W, sizeof(rt_entry *));
    t->test = calloc(W, sizeof(rt_entry *));
    for (uint32_t w = 0; w < W; w++) {
        rt_shard *sh = &t->shards[w];
        uint64_t *toff = calloc(B + 1, sizeof(uint64_t)), *soff = calloc(B + 1, sizeof(uint64_t));
        t->train[w] = malloc(cap * sizeof(rt_entry));
        t->test[w] = malloc(cap * sizeof(rt_entry));
        size_t nt = 0, ns = 0;
        for (uint32_t b = 0; b < B; b++) {
            toff[b] = nt;
            soff[b] = ns;
            for (uint32_t i = w; i < n_rows; i += W)
                for (uint32_t j = b; j < n_cols; j += B) {
                    size_t x = (size_t)i * n_cols + j;
                    if (is_test[x] < 0)
                        continue;
                    rt_entry e = {i / W, j / B, val[x]};
                    if (is_test[x])
                        t->test[w][ns++] = e;
                    else
                        t->train[w][nt++] = e;
                }
        }
        toff[B] = nt;
        soff[B] = ns;
        sh->worker = w;
        sh->n_rows = rt_plan_worker_rows(p, w);
        sh->row_ids = p->worker_row_ids + p->worker_row_offset[w];
        sh->train_off = toff;
        sh->train = t->train[w];
        sh->test_off = soff;
        sh->test = t->test[w];
    }
    free(A);
    free(Bm);
    free(is_test);
    free(val);
}

void toy_free(toy *t)
{
    for (uint32_t w = 0; w < t->plan.workers; w++) {
        free((void *)t->shards[w].train_off);
        free((void *)t->shards[w].test_off);
        free(t->train[w]);
        free(t->test[w]);
    }
    free(t->shards);
    free(t->train);
    free(t->test);
    free(t->plan.worker_row_offset);
    free(t->plan.worker_row_ids);
    free(t->plan.block_col_offset);
    free(t->plan.block_col_ids);
    free(t->plan.schedule);
    cd_ref_data *d = &t->ref;
    free(d->row), free(d->col), free(d->val), free(d->trow), free(d->tcol), free(d->tval);
}

uint32_t toy_block(const toy *t, uint32_t step, uint32_t worker)
{
    return rt_plan_schedule_block(&t->plan, step, worker);
}
