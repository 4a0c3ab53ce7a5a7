/* triplets.c - the in-memory (row, col, val) list and the seeded train/test split. */
#include "partition/partition.h"

#include <stdlib.h>
#include <string.h>

void rt_triplets_init(rt_triplets *t)
{
    memset(t, 0, sizeof(*t));
}

void rt_triplets_free(rt_triplets *t)
{
    free(t->e);
    memset(t, 0, sizeof(*t));
}

int rt_triplets_reserve(rt_triplets *t, uint64_t n, rt_error *err)
{
    if (n <= t->cap)
        return 0;
    uint64_t bytes = 0;
    rt_entry *e = rt_mul_overflows(n, sizeof(rt_entry), &bytes) || bytes > RT_SIZE_LIMIT
                      ? NULL
                      : realloc(t->e, (size_t)bytes);
    if (!e)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (%llu entries)", (unsigned long long)n);
    t->e = e;
    t->cap = n;
    return 0;
}

int rt_triplets_grow_(rt_triplets *t, rt_error *err)
{
    /* + 1: cap + cap / 2 alone stays 1 at cap 1 (a reservation of one) */
    uint64_t want = t->cap ? t->cap + t->cap / 2 + 1 : 1 << 12;
    if (t->budget && t->cap < t->budget && want > t->budget) /* no room past the budget */
        want = t->budget;
    return rt_triplets_reserve(t, want, err);
}

/* Renumber one side (rows or cols) of train by first appearance, rebuilding
 * the map; newid[old] = new dense id or UINT32_MAX when unused in train. */
static int renumber(rt_triplets *train, int cols, rt_idmap *map, uint32_t **newid_out,
                    rt_error *err)
{
    uint32_t *newid = malloc(sizeof(uint32_t) * (map->n ? map->n : 1));
    if (!newid)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    memset(newid, 0xff, sizeof(uint32_t) * map->n);
    rt_idmap fresh;
    rt_idmap_init(&fresh);
    for (uint64_t i = 0; i < train->n; i++) {
        uint32_t *id = cols ? &train->e[i].col : &train->e[i].row;
        if (newid[*id] == UINT32_MAX) {
            const char *s = rt_idmap_str(map, *id);
            if (rt_idmap_intern(&fresh, s, strlen(s), &newid[*id], err) < 0) {
                rt_idmap_free(&fresh);
                free(newid);
                return -1;
            }
        }
        *id = newid[*id];
    }
    rt_idmap_free(map);
    *map = fresh;
    *newid_out = newid;
    return 0;
}

int rt_triplets_split(rt_triplets *all, rt_idmap *rows, rt_idmap *cols, double fraction,
                      uint64_t seed, rt_triplets *test, uint64_t *dropped, rt_error *err)
{
    *dropped = 0;
    if (test->n != 0)
        return rt_fail(err, RT_EXIT_RUNTIME, "rt_triplets_split: test must start empty");
    if (!(fraction >= 0.0 && fraction < 1.0))
        return rt_fail(err, RT_EXIT_INPUT, "test fraction must be in [0, 1)");
    rt_rng rng;
    rt_rng_seed(&rng, seed, 0x5e1172ULL); /* a stream used only for the split */
    uint64_t kept = 0;
    for (uint64_t i = 0; i < all->n; i++) {
        rt_entry e = all->e[i];
        if (rt_rng_uniform(&rng) < fraction) {
            if (rt_triplets_push(test, e.row, e.col, e.val, err) < 0)
                return -1;
        } else {
            all->e[kept++] = e;
        }
    }
    all->n = kept;
    uint32_t *rmap = NULL, *cmap = NULL;
    if (renumber(all, 0, rows, &rmap, err) < 0 || renumber(all, 1, cols, &cmap, err) < 0) {
        free(rmap);
        return -1;
    }
    uint64_t k = 0;
    for (uint64_t i = 0; i < test->n; i++) {
        rt_entry e = test->e[i];
        if (rmap[e.row] == UINT32_MAX || cmap[e.col] == UINT32_MAX) {
            (*dropped)++;
            continue;
        }
        e.row = rmap[e.row];
        e.col = cmap[e.col];
        test->e[k++] = e;
    }
    test->n = k;
    free(rmap);
    free(cmap);
    return 0;
}
