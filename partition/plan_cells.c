/* plan_cells.c - block membership lists and the counting sort into data blocks. */
#include "partition/plan_cells.h"

#include <stdlib.h>
#include <string.h>

int rt_groups_build(const uint32_t *bin, uint64_t n, uint32_t n_bins, rt_groups *g, rt_error *err)
{
    g->off = calloc((uint64_t)n_bins + 1, sizeof(uint64_t));
    g->ids = malloc(sizeof(uint32_t) * (n ? n : 1));
    g->local = malloc(sizeof(uint32_t) * (n ? n : 1));
    if (!g->off || !g->ids || !g->local) {
        rt_groups_free(g);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (layout)");
    }
    for (uint64_t i = 0; i < n; i++)
        g->off[bin[i] + 1]++;
    for (uint32_t b = 0; b < n_bins; b++)
        g->off[b + 1] += g->off[b];
    uint64_t *pos = malloc(sizeof(uint64_t) * ((uint64_t)n_bins + 1));
    if (!pos) {
        rt_groups_free(g);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (layout)");
    }
    memcpy(pos, g->off, sizeof(uint64_t) * n_bins);
    for (uint64_t i = 0; i < n; i++) {
        uint64_t p = pos[bin[i]]++;
        g->ids[p] = (uint32_t)i;
        g->local[i] = (uint32_t)(p - g->off[bin[i]]);
    }
    free(pos);
    return 0;
}

void rt_groups_free(rt_groups *g)
{
    free(g->off), free(g->ids), free(g->local);
    memset(g, 0, sizeof(*g));
}

/* Prefix sums turning bucket counts cnt[0..n) into start positions. */
static void starts(uint64_t *cnt, uint64_t n)
{
    uint64_t sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        uint64_t c = cnt[i];
        cnt[i] = sum;
        sum += c;
    }
}

/* One stable counting-sort pass on global row (by_col = 0) or column ids. */
static int pass_ids(const rt_entry *src, rt_entry *dst, uint64_t n, int by_col, uint64_t n_keys,
                    rt_error *err)
{
    uint64_t *pos = calloc(n_keys ? n_keys : 1, sizeof(uint64_t));
    if (!pos)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (sorting entries)");
    for (uint64_t i = 0; i < n; i++)
        pos[by_col ? src[i].col : src[i].row]++;
    starts(pos, n_keys);
    for (uint64_t i = 0; i < n; i++)
        dst[pos[by_col ? src[i].col : src[i].row]++] = src[i];
    free(pos);
    return 0;
}

/* How sorted the entries already are: 2 = by (major, minor), 1 = by minor
 * only, 0 = neither.  minor_is_col: minor key = column (MF), else row (LDA). */
static int sorted_by(const rt_entry *e, uint64_t n, int minor_is_col)
{
    int by_both = 1, by_minor = 1;
    for (uint64_t i = 1; i < n && (by_both || by_minor); i++) {
        uint32_t mi0 = minor_is_col ? e[i - 1].col : e[i - 1].row;
        uint32_t mi1 = minor_is_col ? e[i].col : e[i].row;
        uint32_t ma0 = minor_is_col ? e[i - 1].row : e[i - 1].col;
        uint32_t ma1 = minor_is_col ? e[i].row : e[i].col;
        by_minor &= mi0 <= mi1;
        by_both &= ma0 < ma1 || (ma0 == ma1 && mi0 <= mi1);
    }
    return by_both ? 2 : by_minor ? 1 : 0;
}

int rt_cells_build(const rt_triplets *t, rt_plan_app app, uint64_t n_rows, const uint32_t *row_bin,
                   const rt_groups *rows, uint64_t n_cols, const uint32_t *col_bin,
                   const rt_groups *cols, uint32_t W, uint32_t B, rt_cells *c, rt_error *err)
{
    memset(c, 0, sizeof(*c));
    uint64_t n = t->n, n_cells = (uint64_t)W * B;
    int minor_is_col = app == RT_PLAN_MF;
    int order = sorted_by(t->e, n, minor_is_col);
    rt_entry *a = malloc(sizeof(rt_entry) * (n ? n : 1));
    rt_entry *b = order < 2 ? malloc(sizeof(rt_entry) * (n ? n : 1)) : NULL;
    uint64_t *off = calloc(n_cells + 1, sizeof(uint64_t));
    int rc = -1;
    if (!a || (order < 2 && !b) || !off) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory (sorting entries)");
        goto fail;
    }
    /* LSD: least significant key first.  Inside a worker (block) local ids
     * follow global ids, so sorting on global ids orders the local ones.
     * Passes that would not change the order are skipped: inputs sorted by
     * user or by document (u1.base, UCI docword) are common. */
    const rt_entry *src = t->e;
    if (order < 2) {
        if (order == 0 &&
            pass_ids(t->e, a, n, minor_is_col, minor_is_col ? n_cols : n_rows, err) < 0)
            goto fail;
        if (pass_ids(order == 0 ? a : t->e, b, n, !minor_is_col, minor_is_col ? n_rows : n_cols,
                     err) < 0)
            goto fail;
        src = b;
    }
    for (uint64_t i = 0; i < n; i++)
        off[(uint64_t)row_bin[src[i].row] * B + col_bin[src[i].col] + 1]++;
    for (uint64_t k = 0; k < n_cells; k++)
        off[k + 1] += off[k];
    uint64_t *pos = malloc(sizeof(uint64_t) * (n_cells ? n_cells : 1));
    if (!pos) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory (sorting entries)");
        goto fail;
    }
    memcpy(pos, off, sizeof(uint64_t) * n_cells);
    for (uint64_t i = 0; i < n; i++) {
        rt_entry e = src[i];
        uint64_t k = (uint64_t)row_bin[e.row] * B + col_bin[e.col];
        a[pos[k]++] = (rt_entry){rows->local[e.row], cols->local[e.col], e.val};
    }
    free(pos);
    for (uint64_t k = 0; k < n_cells; k++)
        for (uint64_t i = off[k] + 1; i < off[k + 1]; i++)
            c->dups += a[i].row == a[i - 1].row && a[i].col == a[i - 1].col;
    free(b);
    c->e = a;
    c->n = n;
    c->cell_off = off;
    return 0;
fail:
    free(a), free(b), free(off);
    return rc;
}

void rt_cells_free(rt_cells *c)
{
    free(c->e);
    free(c->cell_off);
    memset(c, 0, sizeof(*c));
}
