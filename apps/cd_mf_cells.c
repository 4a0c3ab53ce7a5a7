/* cd_mf_cells.c - a worker's ratings regrouped into row runs (see cd_mf.h).
 *
 * Built once at start-up from the mmap'ed shard; afterwards the kernels
 * stream 8 bytes per rating (column, residual) instead of the shard's 12 plus
 * a separate residual, which is what bounds CCD++ on large data. */
#include "apps/cd_mf.h"

#include <math.h>
#include <string.h>

void cd_cells_free(cd_cells *c)
{
    rt_free(c->arrays);
    rt_free(c->conf);
    memset(c, 0, sizeof(*c));
}

static int taken(const uint8_t *held, int keep, uint64_t e)
{
    return !held || held[e] == keep;
}

/* Runs and entries of the taken entries of one block. */
static void count_block(const rt_entry *ent, uint64_t from, uint64_t to, const uint8_t *held,
                        int keep, uint64_t *runs, uint64_t *n)
{
    int64_t last_row = -1;
    for (uint64_t e = from; e < to; e++) {
        if (!taken(held, keep, e))
            continue;
        *runs += (int64_t)ent[e].row != last_row;
        last_row = ent[e].row;
        (*n)++;
    }
}

int cd_cells_build(cd_cells *c, const rt_entry *ent, const uint64_t *off, uint32_t blocks,
                   const uint8_t *held, int keep, rt_error *err)
{
    memset(c, 0, sizeof(*c));
    c->blocks = blocks;
    uint64_t n = 0, runs = 0;
    for (uint32_t b = 0; b < blocks; b++) {
        for (uint64_t e = off[b] + 1; e < off[b + 1]; e++)
            if (ent[e].row < ent[e - 1].row)
                return rt_fail(err, RT_EXIT_INPUT,
                               "cd-mf: shard entries of block %u are not sorted by row", b);
        count_block(ent, off[b], off[b + 1], held, keep, &runs, &n);
    }
    rt_part part[] = {RT_PART(c->entry_off, blocks + 1),
                      RT_PART(c->run_off, blocks + 1),
                      RT_PART(c->run_row, runs),
                      RT_PART(c->run_len, runs),
                      RT_PART(c->col, n),
                      RT_PART(c->res, n)};
    c->arrays = rt_alloc_parts(part, sizeof(part) / sizeof(part[0]));
    if (!c->arrays)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: out of memory for %llu ratings",
                       (unsigned long long)n);
    uint64_t r = 0, x = 0;
    for (uint32_t b = 0; b < blocks; b++) {
        c->entry_off[b] = x;
        c->run_off[b] = r;
        for (uint64_t e = off[b]; e < off[b + 1]; e++) {
            if (!taken(held, keep, e))
                continue;
            if (x == c->entry_off[b] || ent[e].row != c->run_row[r - 1]) {
                c->run_row[r] = ent[e].row;
                c->run_len[r++] = 0;
            }
            c->run_len[r - 1]++;
            c->col[x] = ent[e].col;
            c->res[x++] = ent[e].val;
        }
    }
    c->entry_off[blocks] = n;
    c->run_off[blocks] = r;
    return 0;
}

uint64_t cd_cells_count(const cd_cells *c)
{
    return c->entry_off[c->blocks];
}

cd_span cd_cells_block(const cd_cells *c, uint32_t b)
{
    cd_span s;
    uint64_t e0 = c->entry_off[b], r0 = c->run_off[b];
    s.n_runs = c->run_off[b + 1] - r0;
    s.run_row = c->run_row + r0;
    s.run_len = c->run_len + r0;
    s.col = c->col + e0;
    s.res = c->res + e0;
    s.conf = c->conf ? c->conf + e0 : NULL;
    s.w0 = c->w0;
    return s;
}

double cd_confidence(const cd_opts *o, double r)
{
    switch (o->confidence) {
    case CD_CONF_LOG:
        return r >= 0 ? 1 + o->alpha * log1p(r) : NAN;
    case CD_CONF_BINARY:
        return 1 + o->alpha;
    default:
        return r >= 0 ? 1 + o->alpha * r : NAN;
    }
}

int cd_cells_implicit(cd_cells *c, const cd_opts *o, rt_error *err)
{
    uint64_t n = cd_cells_count(c);
    c->w0 = o->unobserved;
    c->conf = rt_alloc((n ? n : 1) * sizeof(float));
    if (!c->conf)
        return rt_fail(err, RT_EXIT_RUNTIME, "cd-mf: out of memory for %llu confidences",
                       (unsigned long long)n);
    for (uint64_t e = 0; e < n; e++) {
        double conf = cd_confidence(o, c->res[e]);
        if (!(conf > 0))
            return rt_fail(err, RT_EXIT_INPUT,
                           "cd-mf: --implicit: rating %g gives no positive confidence "
                           "(1 + alpha f(r) with --confidence %s needs r >= 0)",
                           (double)c->res[e], o->confidence == CD_CONF_LOG ? "log" : "linear");
        c->conf[e] = (float)(conf - o->unobserved);
        c->res[e] = 1.0f;
    }
    return 0;
}
