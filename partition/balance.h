/*
 * balance.h - assigning rows to workers and columns to column blocks
 * (internal to the partition module).
 *
 * Loads are entry weights: 1 per rating (MF) or the count (LDA tokens).
 * Greedy rows: LPT, heaviest row first into the lightest worker.
 * Greedy columns: heaviest column first into the block where the largest of
 * the W x B grid cells it touches ends up smallest (ties: the lighter block),
 * falling back to LPT on block totals once a work budget is spent (for huge
 * cols x B x W).  Random: seeded shuffle cut into equal-count pieces.
 */
#ifndef ROTOR_BALANCE_H
#define ROTOR_BALANCE_H

#include "partition/partition.h"

/* Weight of an entry for balancing. */
static inline uint64_t rt_entry_weight(rt_plan_app app, const rt_entry *e)
{
    return app == RT_PLAN_LDA ? (uint64_t)e->val : 1;
}

/* bin[i] in [0, n_bins) for items 0..n-1 with weights w (LPT or random). */
int rt_balance_items(const uint64_t *w, uint64_t n, uint32_t n_bins, rt_balance method,
                     uint64_t seed, uint32_t *bin, rt_error *err);

/* col_block[c] for every column, given the rows' workers.  budget: cell
 * visits the grid-aware pass may spend (0 = the default, 10^9). */
int rt_balance_cols(const rt_triplets *train, rt_plan_app app, const uint32_t *row_worker,
                    uint32_t W, uint64_t n_cols, const uint64_t *col_w, uint32_t B,
                    rt_balance method, uint64_t seed, uint64_t budget, uint32_t *col_block,
                    rt_error *err);

/* max/mean loads of row blocks, column blocks and grid cells, and of the
 * number of rows per worker and columns per block. */
int rt_imbalance_of(const rt_triplets *train, rt_plan_app app, const uint32_t *row_worker,
                    uint64_t n_rows, const uint32_t *col_block, uint64_t n_cols, uint32_t W,
                    uint32_t B, rt_imbalance *out, rt_error *err);

#endif
