/*
 * app_common.h - what every app's glue shares (internal to apps/): the
 * local workers' shards.
 */
#ifndef ROTOR_APPS_APP_COMMON_H
#define ROTOR_APPS_APP_COMMON_H

#include "apps/apps.h"

/* Open the shards of workers first..first+n-1 into a calloc'd array. */
int rt_app_shards_open(const rt_plan *plan, uint32_t first, uint32_t n, rt_shard **shards,
                       rt_error *err);
/* Close what rt_app_shards_open opened (also after it failed half-way). */
void rt_app_shards_close(rt_shard *shards, uint32_t n);

#endif
