/* balance.c - LPT rows, grid-aware greedy columns, random baseline, imbalance. */
#include "partition/balance.h"

#include <stdlib.h>
#include <string.h>

/* Default work budget (cell visits) for the grid-aware column pass; past it
 * the remaining (light) columns go by LPT on block totals.  Callers may set
 * another (tests use a tiny budget to exercise the fallback). */
#define GRID_BUDGET 1000000000ULL

typedef struct item {
    uint64_t w;   /* weight */
    uint64_t tie; /* seeded hash: equal weights in a seed-dependent order */
    uint32_t id;
} item;

static int item_cmp(const void *a, const void *b)
{
    const item *x = a, *y = b;
    if (x->w != y->w)
        return x->w > y->w ? -1 : 1;
    if (x->tie != y->tie)
        return x->tie < y->tie ? -1 : 1;
    return x->id < y->id ? -1 : x->id > y->id;
}

/* Items sorted heaviest first (malloc'd). */
static item *sorted_items(const uint64_t *w, uint64_t n, uint64_t seed, rt_error *err)
{
    item *it = malloc(sizeof(item) * (n ? n : 1));
    if (!it) {
        rt_fail(err, RT_EXIT_RUNTIME, "out of memory (balancing)");
        return NULL;
    }
    for (uint64_t i = 0; i < n; i++) {
        it[i].w = w[i];
        it[i].tie = rt_hash64(seed ^ rt_hash64(i));
        it[i].id = (uint32_t)i;
    }
    qsort(it, n, sizeof(item), item_cmp);
    return it;
}

/* ---- a min-heap of bins keyed by (load, index) ---- */
typedef struct heap {
    uint64_t *load; /* per bin */
    uint32_t *h;    /* bin indexes, heap-ordered */
    uint32_t n;
} heap;

static int heap_less(const heap *hp, uint32_t a, uint32_t b)
{
    return hp->load[a] < hp->load[b] || (hp->load[a] == hp->load[b] && a < b);
}

static void heap_down(heap *hp, uint32_t i)
{
    for (;;) {
        uint32_t l = 2 * i + 1, r = l + 1, m = i;
        if (l < hp->n && heap_less(hp, hp->h[l], hp->h[m]))
            m = l;
        if (r < hp->n && heap_less(hp, hp->h[r], hp->h[m]))
            m = r;
        if (m == i)
            return;
        uint32_t t = hp->h[i];
        hp->h[i] = hp->h[m];
        hp->h[m] = t;
        i = m;
    }
}

static void heap_build(heap *hp)
{
    for (uint32_t i = hp->n / 2; i-- > 0;)
        heap_down(hp, i);
}

/* Add w to the lightest bin and return it. */
static uint32_t heap_take(heap *hp, uint64_t w)
{
    uint32_t b = hp->h[0];
    hp->load[b] += w;
    heap_down(hp, 0);
    return b;
}

static int random_cut(uint64_t n, uint32_t n_bins, uint64_t seed, uint32_t *bin, rt_error *err)
{
    uint32_t *perm = malloc(sizeof(uint32_t) * (n ? n : 1));
    if (!perm)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (balancing)");
    for (uint64_t i = 0; i < n; i++)
        perm[i] = (uint32_t)i;
    rt_rng rng;
    rt_rng_seed(&rng, seed, 0xba1a);
    rt_rng_shuffle_u32(&rng, perm, n);
    for (uint64_t i = 0; i < n; i++)
        bin[perm[i]] = (uint32_t)(i * n_bins / n);
    free(perm);
    return 0;
}

int rt_balance_items(const uint64_t *w, uint64_t n, uint32_t n_bins, rt_balance method,
                     uint64_t seed, uint32_t *bin, rt_error *err)
{
    if (method == RT_BALANCE_RANDOM)
        return random_cut(n, n_bins, seed, bin, err);
    item *it = sorted_items(w, n, seed, err);
    uint64_t *load = calloc(n_bins, sizeof(uint64_t));
    uint32_t *h = malloc(sizeof(uint32_t) * n_bins);
    if (!it || !load || !h) {
        free(it), free(load), free(h);
        return it ? rt_fail(err, RT_EXIT_RUNTIME, "out of memory (balancing)") : -1;
    }
    heap hp = {load, h, n_bins};
    for (uint32_t b = 0; b < n_bins; b++)
        h[b] = b;
    heap_build(&hp);
    for (uint64_t i = 0; i < n; i++)
        bin[it[i].id] = heap_take(&hp, it[i].w);
    free(it), free(load), free(h);
    return 0;
}

/* Entries grouped by column: for each entry its row block and weight. */
typedef struct csc {
    uint64_t *off; /* n_cols + 1 */
    uint32_t *rb;  /* row block of each entry */
    uint32_t *wt;  /* weight of each entry */
} csc;

static void csc_free(csc *c)
{
    free(c->off), free(c->rb), free(c->wt);
}

static int csc_build(const rt_triplets *t, rt_plan_app app, const uint32_t *row_worker,
                     uint64_t n_cols, csc *c, rt_error *err)
{
    c->off = calloc(n_cols + 1, sizeof(uint64_t));
    c->rb = malloc(sizeof(uint32_t) * (t->n ? t->n : 1));
    c->wt = malloc(sizeof(uint32_t) * (t->n ? t->n : 1));
    if (!c->off || !c->rb || !c->wt) {
        csc_free(c);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (balancing)");
    }
    for (uint64_t i = 0; i < t->n; i++)
        c->off[t->e[i].col + 1]++;
    for (uint64_t j = 0; j < n_cols; j++)
        c->off[j + 1] += c->off[j];
    uint64_t *pos = malloc(sizeof(uint64_t) * (n_cols ? n_cols : 1));
    if (!pos) {
        csc_free(c);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (balancing)");
    }
    memcpy(pos, c->off, sizeof(uint64_t) * n_cols);
    for (uint64_t i = 0; i < t->n; i++) {
        uint64_t p = pos[t->e[i].col]++;
        c->rb[p] = row_worker[t->e[i].row];
        c->wt[p] = (uint32_t)rt_entry_weight(app, &t->e[i]);
    }
    free(pos);
    return 0;
}

/* Best block for a column touching row blocks tw[0..nt) with loads tl[]:
 * the smallest resulting max cell, then the lighter block, then the lower index. */
static uint32_t best_block(const uint64_t *cell, const uint64_t *total, uint32_t W, uint32_t B,
                           const uint32_t *tw, const uint64_t *tl, uint32_t nt)
{
    uint32_t best = 0;
    uint64_t best_max = UINT64_MAX, best_total = UINT64_MAX;
    for (uint32_t b = 0; b < B; b++) {
        const uint64_t *cb = cell + (uint64_t)b * W;
        uint64_t m = 0;
        for (uint32_t k = 0; k < nt; k++) {
            uint64_t v = cb[tw[k]] + tl[k];
            if (v > m)
                m = v;
        }
        if (m < best_max || (m == best_max && total[b] < best_total)) {
            best = b;
            best_max = m;
            best_total = total[b];
        }
    }
    return best;
}

int rt_balance_cols(const rt_triplets *train, rt_plan_app app, const uint32_t *row_worker,
                    uint32_t W, uint64_t n_cols, const uint64_t *col_w, uint32_t B,
                    rt_balance method, uint64_t seed, uint64_t budget, uint32_t *col_block,
                    rt_error *err)
{
    if (method == RT_BALANCE_RANDOM)
        return random_cut(n_cols, B, seed ^ 0xc01, col_block, err);
    csc c;
    if (csc_build(train, app, row_worker, n_cols, &c, err) < 0)
        return -1;
    item *it = sorted_items(col_w, n_cols, seed ^ 0xc01, err);
    uint64_t *cell = calloc((uint64_t)W * B, sizeof(uint64_t)); /* [b][w] */
    uint64_t *total = calloc(B, sizeof(uint64_t));
    uint64_t *acc = calloc(W, sizeof(uint64_t));
    uint32_t *tw = malloc(sizeof(uint32_t) * W), *h = malloc(sizeof(uint32_t) * B);
    uint64_t *tl = malloc(sizeof(uint64_t) * W);
    int rc = 0;
    if (!it || !cell || !total || !acc || !tw || !tl || !h) {
        rc = it ? rt_fail(err, RT_EXIT_RUNTIME, "out of memory (balancing)") : -1;
        goto out;
    }
    uint64_t spent = 0, i = 0;
    if (budget == 0)
        budget = GRID_BUDGET;
    for (; i < n_cols && spent < budget; i++) {
        uint32_t j = it[i].id, nt = 0;
        for (uint64_t p = c.off[j]; p < c.off[j + 1]; p++) {
            if (!acc[c.rb[p]])
                tw[nt++] = c.rb[p];
            acc[c.rb[p]] += c.wt[p];
        }
        for (uint32_t k = 0; k < nt; k++) {
            tl[k] = acc[tw[k]];
            acc[tw[k]] = 0;
        }
        uint32_t b = best_block(cell, total, W, B, tw, tl, nt);
        for (uint32_t k = 0; k < nt; k++)
            cell[(uint64_t)b * W + tw[k]] += tl[k];
        total[b] += it[i].w;
        col_block[j] = b;
        spent += (uint64_t)B * (nt ? nt : 1);
    }
    if (i < n_cols) {
        rt_info("balance: grid-aware placement for the %llu heaviest columns, LPT for the "
                "other %llu",
                (unsigned long long)i, (unsigned long long)(n_cols - i));
        heap hp = {total, h, B};
        for (uint32_t b = 0; b < B; b++)
            h[b] = b;
        heap_build(&hp);
        for (; i < n_cols; i++)
            col_block[it[i].id] = heap_take(&hp, it[i].w);
    }
out:
    csc_free(&c);
    free(it), free(cell), free(total), free(acc), free(tw), free(tl), free(h);
    return rc;
}

static double ratio(const uint64_t *load, uint64_t n)
{
    uint64_t max = 0;
    double sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        sum += (double)load[i];
        if (load[i] > max)
            max = load[i];
    }
    return sum > 0 ? (double)max / (sum / (double)n) : 1.0;
}

int rt_imbalance_of(const rt_triplets *train, rt_plan_app app, const uint32_t *row_worker,
                    uint64_t n_rows, const uint32_t *col_block, uint64_t n_cols, uint32_t W,
                    uint32_t B, rt_imbalance *out, rt_error *err)
{
    uint64_t *cell = calloc((uint64_t)W * B, sizeof(uint64_t));
    uint64_t *rows = calloc(W, sizeof(uint64_t)), *cols = calloc(B, sizeof(uint64_t));
    if (!cell || !rows || !cols) {
        free(cell), free(rows), free(cols);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (imbalance)");
    }
    for (uint64_t i = 0; i < train->n; i++) {
        uint32_t w = row_worker[train->e[i].row], b = col_block[train->e[i].col];
        uint64_t x = rt_entry_weight(app, &train->e[i]);
        cell[(uint64_t)w * B + b] += x;
        rows[w] += x;
        cols[b] += x;
    }
    out->row_blocks = ratio(rows, W);
    out->col_blocks = ratio(cols, B);
    out->cells = ratio(cell, (uint64_t)W * B);
    memset(rows, 0, sizeof(uint64_t) * W);
    memset(cols, 0, sizeof(uint64_t) * B);
    for (uint64_t r = 0; r < n_rows; r++)
        rows[row_worker[r]]++;
    for (uint64_t c = 0; c < n_cols; c++)
        cols[col_block[c]]++;
    out->worker_rows = ratio(rows, W);
    out->block_cols = ratio(cols, B);
    free(cell), free(rows), free(cols);
    return 0;
}
