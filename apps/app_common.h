/*
 * app_common.h - what every app shares (internal to apps/): the local
 * workers' shards, and the pieces of a saved model every app reads the same
 * way (model.json, id lists).
 */
#ifndef ROTOR_APPS_APP_COMMON_H
#define ROTOR_APPS_APP_COMMON_H

#include "apps/apps.h"

#include <jansson.h>

/* Open the shards of workers first..first+n-1 into a calloc'd array. */
int rt_app_shards_open(const rt_plan *plan, uint32_t first, uint32_t n, rt_shard **shards,
                       rt_error *err);
/* Close what rt_app_shards_open opened (also after it failed half-way). */
void rt_app_shards_close(rt_shard *shards, uint32_t n);

/* DIR/NAME, one id a line (line i = dense id i), interned into `map`;
 * exactly `want` distinct ids expected. */
int rt_app_read_ids(const char *dir, const char *name, rt_idmap *map, uint64_t want, rt_error *err);
/* DIR/model.json (NULL with err set when unreadable); `path` (4096 bytes)
 * receives its path, for messages. */
json_t *rt_app_model_json(const char *dir, char *path, rt_error *err);

#endif
