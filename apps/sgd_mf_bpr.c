/* sgd_mf_bpr.c - sgd-mf --implicit: Bayesian personalised ranking (Rendle et
 * al., UAI'09) over one data block (see sgd_mf.h).
 *
 * Every training pair (u, i) of the block is one positive, stepped against
 * --negatives draws in turn; each negative j is drawn uniformly from the
 * columns of the same column block, which the worker holds alone in this
 * step, redrawn (a few times at most) while u has j in its training pairs of
 * the block.  So a step still touches only
 * the worker's W rows and the block's H rows, and the schedule's guarantees
 * and determinism hold unchanged.  The draws come from a stream fixed by
 * (seed, epoch, worker, block): the same on any split, in --serial replay
 * and after --resume, with no generator state to carry. */
#include "apps/sgd_mf.h"

#include <math.h>

enum { BPR_REDRAWS = 8, BPR_TRAIN = 1, BPR_TEST = 2 };

uint64_t sgd_bpr_stream(uint64_t epoch, uint32_t worker, uint32_t block, int test)
{
    uint64_t x = rt_hash64(0x6270722d6e6567ULL + (uint64_t)worker * 2 + (uint64_t)test);
    return rt_hash64(rt_hash64(x ^ epoch) ^ block);
}

/* 1 when column j is among the sorted columns cols[0..n). */
static int has_col(const rt_entry *run, size_t n, uint32_t j)
{
    size_t lo = 0, hi = n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (run[mid].col < j)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n && run[lo].col == j;
}

/* A negative column for a row whose training pairs in the block are
 * run[0..n): uniform over the block's columns, redrawn while it is one of
 * them (after BPR_REDRAWS tries the last draw stands). */
static uint32_t draw_negative(rt_rng *rng, uint32_t n_cols, const rt_entry *run, size_t n)
{
    uint32_t j = (uint32_t)rt_rng_below(rng, n_cols);
    for (int t = 0; t < BPR_REDRAWS && has_col(run, n, j); t++)
        j = (uint32_t)rt_rng_below(rng, n_cols);
    return j;
}

/* x_ui - x_uj = (b_i - b_j) + w . (h_i - h_j), in one fixed order. */
static double score_gap(const float *w, const float *hi, const float *hj, const float *bias,
                        uint32_t i, uint32_t j, uint32_t k)
{
    double x = bias ? (double)bias[i] - bias[j] : 0.0;
    for (uint32_t r = 0; r < k; r++)
        x += (double)w[r] * ((double)hi[r] - hj[r]);
    return x;
}

/* One ascent step on ln sigmoid(x_ui - x_uj) - lambda/2 |params|^2. */
static void bpr_step(const sgd_bpr_block *b, float *w, float *hi, float *hj, uint32_t i, uint32_t j,
                     double gap)
{
    float g = (float)(1.0 / (1.0 + exp(gap))), lr = b->lr, l = b->lambda;
    for (uint32_t r = 0; r < b->k; r++) {
        float wr = w[r], d = hi[r] - hj[r];
        w[r] += lr * (g * d - l * wr);
        hi[r] += lr * (g * wr - l * hi[r]);
        hj[r] += lr * (-g * wr - l * hj[r]);
    }
    if (b->bias) {
        float *c = b->bias, lb = b->lambda_bias;
        c[i] += lr * (g - lb * c[i]);
        c[j] += lr * (-g - lb * c[j]);
    }
}

/* Rows of a block's entries, sorted by (row, col), one run at a time. */
static size_t run_end(const rt_entry *e, size_t n, size_t at)
{
    size_t end = at + 1;
    while (end < n && e[end].row == e[at].row)
        end++;
    return end;
}

double sgd_bpr_train(const sgd_bpr_block *b, rt_rng *rng)
{
    double loss = 0;
    if (b->n_cols < 2)
        return 0;
    for (size_t at = 0; at < b->n;) {
        size_t end = run_end(b->e, b->n, at);
        float *w = b->W + (size_t)b->e[at].row * b->kp;
        for (size_t x = at; x < end; x++)
            for (uint32_t s = 0; s < b->negatives; s++) {
                uint32_t i = b->e[x].col, j = draw_negative(rng, b->n_cols, b->e + at, end - at);
                if (j == i)
                    continue;
                float *hi = b->H + (size_t)i * b->kp, *hj = b->H + (size_t)j * b->kp;
                double gap = score_gap(w, hi, hj, b->bias, i, j, b->k);
                loss += gap > 0 ? log1p(exp(-gap)) : log1p(exp(gap)) - gap;
                bpr_step(b, w, hi, hj, i, j, gap);
            }
        at = end;
    }
    return loss;
}

double sgd_bpr_test(const sgd_bpr_block *b, const rt_entry *train, size_t n_train, rt_rng *rng)
{
    double right = 0;
    size_t t = 0; /* the row's training run, for the redraws */
    for (size_t at = 0; at < b->n;) {
        size_t end = run_end(b->e, b->n, at);
        uint32_t u = b->e[at].row;
        while (t < n_train && train[t].row < u)
            t++;
        size_t t_end = t < n_train && train[t].row == u ? run_end(train, n_train, t) : t;
        const float *w = b->W + (size_t)u * b->kp;
        for (size_t x = at; x < end; x++) {
            uint32_t i = b->e[x].col, j = draw_negative(rng, b->n_cols, train + t, t_end - t);
            double gap = score_gap(w, b->H + (size_t)i * b->kp, b->H + (size_t)j * b->kp, b->bias,
                                   i, j, b->k);
            right += gap > 0 ? 1.0 : gap == 0 ? 0.5 : 0.0;
        }
        at = end;
    }
    return right;
}
