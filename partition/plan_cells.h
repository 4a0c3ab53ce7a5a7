/*
 * plan_cells.h - grouping rows/cols into blocks and sorting entries into the
 * W x B data blocks (internal to the partition module).
 */
#ifndef ROTOR_PLAN_CELLS_H
#define ROTOR_PLAN_CELLS_H

#include "partition/partition.h"

/* Items 0..n-1 grouped by bin: off[n_bins+1], ids[n] (bin-major, increasing
 * id inside a bin), local[i] = position of item i inside its bin. */
typedef struct rt_groups {
    uint64_t *off;
    uint32_t *ids;
    uint32_t *local;
} rt_groups;

int rt_groups_build(const uint32_t *bin, uint64_t n, uint32_t n_bins, rt_groups *g, rt_error *err);
void rt_groups_free(rt_groups *g);

/* Entries of `t` sorted into cells w * B + b (w = row_bin[row], b = col_bin[col]),
 * with local row / column ids, MF cells ordered by (row, col) and LDA cells by
 * (col, row).  cell_off has W * B + 1 entries.  *dups counts entries equal in
 * (row, col) to their predecessor. */
typedef struct rt_cells {
    rt_entry *e;
    uint64_t n;
    uint64_t *cell_off;
    uint64_t dups;
} rt_cells;

int rt_cells_build(const rt_triplets *t, rt_plan_app app, uint64_t n_rows, const uint32_t *row_bin,
                   const rt_groups *rows, uint64_t n_cols, const uint32_t *col_bin,
                   const rt_groups *cols, uint32_t W, uint32_t B, rt_cells *c, rt_error *err);
void rt_cells_free(rt_cells *c);

#endif
