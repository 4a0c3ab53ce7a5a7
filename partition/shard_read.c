/* shard_read.c - rt_shard_open: map or read one worker's shard and check it all. */
#include "partition/secfile.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

/* Entries of data block b must index the worker's rows and the block's columns. */
static int check_entries(const rt_plan *p, const uint64_t *off, const rt_entry *e,
                         uint64_t n_entries, uint32_t n_rows, const char *path, const char *what,
                         rt_error *err)
{
    if (off[0] != 0 || off[p->blocks] != n_entries)
        return rt_fail(err, RT_EXIT_INPUT, "%s: %s offsets do not cover the entries", path, what);
    for (uint32_t b = 0; b < p->blocks; b++) {
        /* Checked block by block, so a later block's offset must not be
         * trusted to bound this one: off[b + 1] may lie past the entries. */
        if (off[b] > off[b + 1] || off[b + 1] > n_entries)
            return rt_fail(err, RT_EXIT_INPUT, "%s: %s offsets decrease or overrun at block %u",
                           path, what, b);
        uint32_t cols = rt_plan_block_cols(p, b);
        for (uint64_t i = off[b]; i < off[b + 1]; i++)
            if (e[i].row >= n_rows || e[i].col >= cols)
                return rt_fail(err, RT_EXIT_INPUT,
                               "%s: %s entry %" PRIu64 " of block %u is out of range", path, what,
                               i, b);
    }
    return 0;
}

/* Find section `id`; its size must be a multiple of `unit` (or exactly `exact`). */
static const void *get(const rt_secfile *f, uint32_t id, uint64_t unit, uint64_t exact,
                       uint64_t *count, const char *path, rt_error *err)
{
    uint64_t bytes;
    const void *p = rt_secfile_find(f, id, &bytes);
    if (!p) {
        rt_fail(err, RT_EXIT_INPUT, "%s: section %u is missing", path, id);
        return NULL;
    }
    if ((exact && bytes != exact) || bytes % unit) {
        rt_fail(err, RT_EXIT_INPUT, "%s: section %u has a bad size (%" PRIu64 " bytes)", path, id,
                bytes);
        return NULL;
    }
    *count = bytes / unit;
    return p;
}

static int shard_check(const rt_plan *plan, uint32_t worker, const rt_secfile *f, rt_shard *s,
                       const char *path, rt_error *err)
{
    const rt_file_header *h = f->hdr;
    if (h->plan_id != plan->plan_id || h->app != (uint32_t)plan->app ||
        h->workers != plan->workers || h->blocks != plan->blocks || h->n_rows != plan->n_rows ||
        h->n_cols != plan->n_cols)
        return rt_fail(err, RT_EXIT_INPUT, "%s: belongs to another plan (plan id or sizes differ)",
                       path);
    if (h->worker != worker)
        return rt_fail(err, RT_EXIT_INPUT, "%s: is the shard of worker %u, not %u", path, h->worker,
                       worker);
    uint64_t off_bytes = 8 * ((uint64_t)plan->blocks + 1), n_off = 0, n_train = 0, n_test = 0,
             n_ids = 0;
    s->train_off = get(f, RT_SEC_TRAIN_OFFSETS, 8, off_bytes, &n_off, path, err);
    s->train = get(f, RT_SEC_TRAIN_ENTRIES, sizeof(rt_entry), 0, &n_train, path, err);
    s->test_off = get(f, RT_SEC_TEST_OFFSETS, 8, off_bytes, &n_off, path, err);
    s->test = get(f, RT_SEC_TEST_ENTRIES, sizeof(rt_entry), 0, &n_test, path, err);
    if (!s->train_off || !s->train || !s->test_off || !s->test)
        return -1;
    uint64_t bytes;
    if (rt_secfile_find(f, RT_SEC_TEST_ROW_IDS, &bytes)) {
        s->test_row_ids = get(f, RT_SEC_TEST_ROW_IDS, 4, 0, &n_ids, path, err);
        if (!s->test_row_ids)
            return -1;
        s->n_test_rows = (uint32_t)n_ids;
    }
    s->worker = worker;
    s->n_rows = rt_plan_worker_rows(plan, worker);
    s->row_ids = plan->worker_row_ids + plan->worker_row_offset[worker];
    if (check_entries(plan, s->train_off, s->train, n_train, s->n_rows, path, "train", err) < 0)
        return -1;
    return check_entries(plan, s->test_off, s->test, n_test,
                         s->test_row_ids ? s->n_test_rows : s->n_rows, path, "test", err);
}

int rt_shard_open(const rt_plan *plan, uint32_t worker, rt_shard *shard, rt_error *err)
{
    memset(shard, 0, sizeof(*shard));
    if (worker >= plan->workers)
        return rt_fail(err, RT_EXIT_INPUT, "%s: no worker %u in a plan of %u workers", plan->dir,
                       worker, plan->workers);
    char path[4200];
    snprintf(path, sizeof(path), "%s/shard-%05u.bin", plan->dir, worker);
    rt_secfile f;
    if (rt_secfile_open(path, RT_FILE_SHARD, plan->mapped, &f, err) < 0)
        return -1;
    if (plan->shard_bytes && f.len != plan->shard_bytes[worker]) {
        rt_fail(err, RT_EXIT_INPUT,
                "%s: %zu bytes, plan.json records %llu (tampered, or from another plan)", path,
                f.len, (unsigned long long)plan->shard_bytes[worker]);
        rt_secfile_close(&f);
        return -1;
    }
    if (shard_check(plan, worker, &f, shard, path, err) < 0) {
        rt_secfile_close(&f);
        memset(shard, 0, sizeof(*shard));
        return -1;
    }
    shard->map = f.map;
    shard->map_len = f.len;
    shard->mapped = plan->mapped;
    return 0;
}

void rt_shard_close(rt_shard *shard)
{
    rt_secfile f = {.map = shard->map, .len = shard->map_len};
    if (f.map)
        rt_secfile_close(&f);
    memset(shard, 0, sizeof(*shard));
}

int rt_shard_release(const rt_shard *shard, const void *from, const void *to, rt_error *err)
{
    const uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
    const uintptr_t base = (uintptr_t)shard->map, end = base + shard->map_len;
    uintptr_t lo = (uintptr_t)from < base ? base : (uintptr_t)from;
    uintptr_t hi = (uintptr_t)to > end ? end : (uintptr_t)to;
    lo = (lo + page - 1) / page * page; /* whole pages inside [from, to) only */
    hi = hi == end ? (hi + page - 1) / page * page : hi / page * page;
    if (!shard->map || !shard->mapped || lo >= hi)
        return 0;
    if (madvise((void *)lo, hi - lo, MADV_DONTNEED) != 0)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "shard %u: cannot release its pages",
                             shard->worker);
    return 0;
}
