/*
 * schedule.c - the rotation schedule: its default generator and the rules
 * every schedule a plan carries must follow (see partition.h).
 */
#include "partition/partition.h"

#include <stdlib.h>
#include <string.h>

void rt_schedule_ring(uint32_t workers, uint32_t pipeline, uint32_t *table)
{
    uint32_t B = workers * pipeline;
    for (uint32_t s = 0; s < B; s++)
        for (uint32_t w = 0; w < workers; w++)
            table[(size_t)s * workers + w] =
                (uint32_t)(((uint64_t)pipeline * w + pipeline - 1 + B - s) % B);
}

/* Rules (i) and (ii): blocks in range, no block twice in a step, no worker
 * meeting a block twice in an epoch (so, with B steps, exactly once). */
static int check_exclusive_and_complete(const uint32_t *table, uint32_t W, uint32_t B, uint8_t *met,
                                        uint8_t *used, const char *where, rt_error *err)
{
    for (uint32_t s = 0; s < B; s++) {
        memset(used, 0, B);
        for (uint32_t w = 0; w < W; w++) {
            uint32_t b = table[(size_t)s * W + w];
            if (b >= B)
                return rt_fail(err, RT_EXIT_INPUT,
                               "%s: schedule[%u][%u] = %u is not a block (< %u)", where, s, w, b,
                               B);
            if (used[b])
                return rt_fail(err, RT_EXIT_INPUT,
                               "%s: schedule step %u gives block %u to two workers", where, s, b);
            used[b] = 1;
            if (met[(size_t)w * B + b])
                return rt_fail(err, RT_EXIT_INPUT,
                               "%s: schedule gives worker %u block %u twice in an epoch", where, w,
                               b);
            met[(size_t)w * B + b] = 1;
        }
    }
    return 0;
}

/* Rule (iii): block b's first visit of an epoch is by worker b / c. */
static int check_homes(const uint32_t *table, uint32_t W, uint32_t B, uint32_t c, uint8_t *seen,
                       const char *where, rt_error *err)
{
    memset(seen, 0, B);
    for (uint32_t s = 0; s < B; s++)
        for (uint32_t w = 0; w < W; w++) {
            uint32_t b = table[(size_t)s * W + w];
            if (seen[b])
                continue;
            seen[b] = 1;
            if (w != b / c)
                return rt_fail(err, RT_EXIT_INPUT,
                               "%s: block %u is first visited by worker %u, not by its home "
                               "worker %u (blocks %u..%u start each epoch with worker %u)",
                               where, b, w, b / c, b / c * c, b / c * c + c - 1, b / c);
        }
    return 0;
}

int rt_schedule_check(const uint32_t *table, uint32_t workers, uint32_t pipeline, const char *where,
                      rt_error *err)
{
    uint32_t W = workers, B = workers * pipeline;
    uint8_t *met = calloc((size_t)W * B, 1), *used = malloc(B ? B : 1);
    if (!met || !used) {
        free(met);
        free(used);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (schedule check)");
    }
    int rc = check_exclusive_and_complete(table, W, B, met, used, where, err);
    if (rc == 0)
        rc = check_homes(table, W, B, pipeline, used, where, err);
    free(met);
    free(used);
    return rc;
}
