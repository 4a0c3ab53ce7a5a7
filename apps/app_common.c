/* app_common.c - shards of the local workers, and what every saved model
 * is read with. */
#include "apps/app_common.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <string.h>
#include <unistd.h>

int rt_app_shards_open(const rt_plan *plan, uint32_t first, uint32_t n, rt_shard **shards,
                       rt_error *err)
{
    *shards = calloc(n ? n : 1, sizeof(rt_shard));
    if (!*shards)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    /* Opening checks every section's checksum, so it reads all the bytes:
     * the long part of a big job's start-up. */
    uint64_t total = 0, done = 0;
    for (uint32_t t = 0; t < n; t++)
        total += plan->shard_bytes[first + t];
    rt_progress progress;
    rt_progress_start(&progress, "opening shards", "MB", 1e6, total);
    int rc = 0;
    for (uint32_t t = 0; t < n && rc == 0; t++) {
        rc = rt_shard_open(plan, first + t, &(*shards)[t], err);
        rt_progress_set(&progress, done += plan->shard_bytes[first + t]);
    }
    rt_progress_end(&progress);
    return rc;
}

void rt_app_shards_close(rt_shard *shards, uint32_t n)
{
    for (uint32_t t = 0; shards && t < n; t++)
        if (shards[t].map)
            rt_shard_close(&shards[t]);
    free(shards);
}

int rt_app_read_ids(const char *dir, const char *name, rt_idmap *map, uint64_t want, rt_error *err)
{
    char path[4096];
    if (rt_path_join(path, sizeof(path), dir, name, err))
        return -1;
    rt_linereader lr;
    if (rt_linereader_open_own(&lr, path, err))
        return -1;
    char *line;
    size_t len;
    int rc;
    while ((rc = rt_linereader_next(&lr, &line, &len, err)) == 1) {
        uint32_t id;
        uint64_t before = map->n;
        if (rt_idmap_intern(map, line, len, &id, err)) {
            rc = -1;
            break;
        }
        if (map->n == before) { /* line i names dense id i: a repeat shifts every id after it */
            rc = rt_fail(err, RT_EXIT_INPUT, "%s:%llu: duplicate id '%.*s' (also line %llu)", path,
                         (unsigned long long)lr.line_no, (int)(len < 200 ? len : 200), line,
                         (unsigned long long)id + 1);
            break;
        }
    }
    rt_linereader_close(&lr);
    if (rc < 0)
        return -1;
    if (map->n != want)
        return rt_fail(err, RT_EXIT_INPUT, "%s: %llu distinct ids, the model has %llu", path,
                       (unsigned long long)map->n, (unsigned long long)want);
    return 0;
}

int rt_app_write_json(const char *path, const json_t *obj, rt_error *err)
{
    char *text = json_dumps(obj, JSON_INDENT(2) | JSON_SORT_KEYS);
    if (!text)
        return rt_fail(err, RT_EXIT_RUNTIME, "%s: cannot encode JSON", path);
    rt_outfile of;
    int rc = rt_outfile_open(&of, path, err);
    if (rc == 0 && (rt_write_all(of.fp, text, strlen(text), path, err) ||
                    rt_write_all(of.fp, "\n", 1, path, err))) {
        rt_outfile_abort(&of);
        rc = -1;
    } else if (rc == 0) {
        rc = rt_outfile_commit(&of, err);
    }
    free(text);
    return rc;
}

json_t *rt_app_model_json(const char *dir, char *path, rt_error *err)
{
    struct stat sb;
    if (rt_path_join(path, 4096, dir, "model.json", err))
        return NULL;
    if (stat(path, &sb) != 0) {
        int missing = errno == ENOENT;
        rt_dir_kind kind = rt_dir_kind_of(dir);
        if (rt_dir_kind_text(kind)) {
            rt_fail(err, RT_EXIT_INPUT, "%s: not a model: it %s", dir, rt_dir_kind_text(kind));
            return NULL;
        }
        /* A save writes model.json last: a directory without one is a save
         * that never finished (or one node's parts of a node-local save). */
        if (missing && kind == RT_DIR_PLAIN) {
            rt_fail(err, RT_EXIT_INPUT,
                    "%s: incomplete model: no model.json (a save that did not finish, or one "
                    "node's parts of a node-local save)",
                    dir);
            return NULL;
        }
    }
    return rt_json_load(path, err);
}
