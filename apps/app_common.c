/* app_common.c - shards of the local workers, for every app's glue. */
#include "apps/app_common.h"

#include <stdlib.h>

int rt_app_shards_open(const rt_plan *plan, uint32_t first, uint32_t n, rt_shard **shards,
                       rt_error *err)
{
    *shards = calloc(n ? n : 1, sizeof(rt_shard));
    if (!*shards)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    for (uint32_t t = 0; t < n; t++)
        if (rt_shard_open(plan, first + t, &(*shards)[t], err))
            return -1;
    return 0;
}

void rt_app_shards_close(rt_shard *shards, uint32_t n)
{
    for (uint32_t t = 0; shards && t < n; t++)
        if (shards[t].map)
            rt_shard_close(&shards[t]);
    free(shards);
}
