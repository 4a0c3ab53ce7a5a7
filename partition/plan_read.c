/* plan_read.c - rt_plan_open: plan.json + layout.bin, fully checked. */
#include "partition/secfile.h"
#include "ground/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char *rt_plan_app_name(rt_plan_app app)
{
    switch (app) {
    case RT_PLAN_MF:
        return "mf";
    case RT_PLAN_LDA:
        return "lda";
    }
    return "unknown";
}

/* Read a non-negative integer member of the manifest. */
static int get_u64(json_t *root, const char *key, uint64_t *out, const char *path, rt_error *err)
{
    json_t *v = json_object_get(root, key);
    if (!json_is_integer(v) || json_integer_value(v) < 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s: missing or invalid \"%s\"", path, key);
    *out = (uint64_t)json_integer_value(v);
    return 0;
}

static int get_u32(json_t *root, const char *key, uint32_t *out, const char *path, rt_error *err)
{
    uint64_t v = 0;
    if (get_u64(root, key, &v, path, err) < 0)
        return -1;
    if (v > UINT32_MAX)
        return rt_fail(err, RT_EXIT_INPUT, "%s: \"%s\" out of range", path, key);
    *out = (uint32_t)v;
    return 0;
}

/* The manifest's schedule: any table that follows the rules of partition.h. */
static int read_schedule(json_t *root, rt_plan *p, const char *path, rt_error *err)
{
    json_t *s = json_object_get(root, "schedule");
    if (!json_is_array(s) || json_array_size(s) != p->blocks)
        return rt_fail(err, RT_EXIT_INPUT, "%s: \"schedule\" must have %u steps", path, p->blocks);
    size_t cells;
    if (rt_size_mul(p->blocks, p->workers, &cells, path, "blocks x workers", err))
        return -1;
    p->schedule = rt_alloc_array(cells, sizeof(uint32_t), path, "schedule", err);
    if (!p->schedule)
        return -1;
    for (uint32_t step = 0; step < p->blocks; step++) {
        json_t *row = json_array_get(s, step);
        if (!json_is_array(row) || json_array_size(row) != p->workers)
            return rt_fail(err, RT_EXIT_INPUT, "%s: schedule step %u must list %u workers", path,
                           step, p->workers);
        for (uint32_t w = 0; w < p->workers; w++) {
            json_t *v = json_array_get(row, w);
            if (!json_is_integer(v) || json_integer_value(v) < 0 ||
                json_integer_value(v) >= (json_int_t)p->blocks)
                return rt_fail(err, RT_EXIT_INPUT, "%s: schedule[%u][%u] must be a block (< %u)",
                               path, step, w, p->blocks);
            p->schedule[(size_t)step * p->workers + w] = (uint32_t)json_integer_value(v);
        }
    }
    return rt_schedule_check(p->schedule, p->workers, p->pipeline, path, err);
}

/* The counts the runtime divides by and sizes arrays with must be possible:
 * a tampered plan.json fails here with the field named, not later as a
 * diverging or crashing run. */
static int check_values(const rt_plan *p, const char *path, rt_error *err)
{
    const char *why = NULL;
    uint64_t cells;
    if (p->n_rows == 0 || p->n_rows > UINT32_MAX)
        why = "dims.rows must be in 1..2^32-1";
    else if (p->n_cols == 0 || p->n_cols > UINT32_MAX)
        why = "dims.cols must be in 1..2^32-1";
    else if (p->nnz_train == 0)
        why = "nnz_train must be at least 1";
    else if (!rt_mul_overflows(p->n_rows, p->n_cols, &cells) && p->nnz_train > cells)
        why = "nnz_train exceeds dims.rows x dims.cols";
    else if (p->app == RT_PLAN_MF && p->tokens_train != p->nnz_train)
        why = "tokens_train must equal nnz_train in an mf plan";
    else if (p->app == RT_PLAN_LDA && p->tokens_train < p->nnz_train)
        why = "tokens_train must be at least nnz_train in an lda plan";
    if (why)
        return rt_fail(err, RT_EXIT_INPUT, "%s: %s (tampered or damaged?)", path, why);
    return 0;
}

/* "files": {"NAME": {"bytes": N, "xxh3": "HEX"}} as written by the partitioner. */
static int file_record(json_t *files, const char *name, uint64_t *bytes, uint64_t *check,
                       const char *path, rt_error *err)
{
    json_t *f = json_object_get(files, name);
    json_t *b = json_object_get(f, "bytes");
    const char *x = json_string_value(json_object_get(f, "xxh3"));
    char *end = NULL;
    if (x)
        *check = strtoull(x, &end, 16);
    if (!json_is_integer(b) || json_integer_value(b) < 0 || !x || strlen(x) != 16 || *end)
        return rt_fail(err, RT_EXIT_INPUT, "%s: \"files\" has no valid record of %s", path, name);
    *bytes = (uint64_t)json_integer_value(b);
    return 0;
}

/* The shards (whose sizes rt_shard_open holds to these records) must have
 * room for the nnz_train + nnz_test entries plan.json claims: readers size
 * arrays by those counts before they open a shard. */
static int check_entries_fit(const rt_plan *p, const char *path, rt_error *err)
{
    uint64_t shards = 0, entries = 0, need = 0;
    for (uint32_t w = 0; w < p->workers; w++)
        if (rt_add_overflows(shards, p->shard_bytes[w], &shards))
            return rt_fail(err, RT_EXIT_INPUT, "%s: \"files\": the shard sizes overflow", path);
    if (rt_add_overflows(p->nnz_train, p->nnz_test, &entries) ||
        rt_mul_overflows(entries, sizeof(rt_entry), &need) || need > shards)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: nnz_train + nnz_test (%" PRIu64 " + %" PRIu64
                       " entries) do not fit in the shards' %" PRIu64
                       " bytes (tampered or damaged?)",
                       path, p->nnz_train, p->nnz_test, shards);
    return 0;
}

static int read_files(json_t *root, rt_plan *p, const char *path, rt_error *err)
{
    json_t *files = json_object_get(root, "files");
    if (!json_is_object(files))
        return rt_fail(err, RT_EXIT_INPUT, "%s: missing or invalid \"files\"", path);
    if (file_record(files, "layout.bin", &p->layout_bytes, &p->layout_check, path, err) < 0)
        return -1;
    p->shard_bytes = rt_alloc_array(p->workers, sizeof(uint64_t), path, "workers", err);
    if (!p->shard_bytes)
        return -1;
    for (uint32_t w = 0; w < p->workers; w++) {
        char name[32];
        uint64_t check;
        snprintf(name, sizeof(name), "shard-%05u.bin", w);
        if (file_record(files, name, &p->shard_bytes[w], &check, path, err) < 0)
            return -1;
    }
    return check_entries_fit(p, path, err);
}

static int read_manifest(rt_plan *p, rt_error *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/plan.json", p->dir);
    json_t *root = rt_json_load(path, err);
    const char *holds = root || access(path, F_OK) == 0 ? NULL : rt_dir_holds(p->dir);
    if (holds)
        return rt_fail(err, RT_EXIT_INPUT, "%s: not a plan: it %s", p->dir, holds);
    if (!root)
        return -1;
    int rc = -1;
    uint64_t version = 0, dims_r = 0, dims_c = 0;
    json_t *dims = json_object_get(root, "dims");
    const char *app = json_string_value(json_object_get(root, "app"));
    const char *id = json_string_value(json_object_get(root, "plan_id"));
    json_t *seed = json_object_get(root, "seed");
    char *end = NULL;
    if (get_u64(root, "format_version", &version, path, err) < 0)
        goto out;
    if (version != RT_PLAN_FORMAT_VERSION) {
        rt_fail(err, RT_EXIT_INPUT, "%s: format_version %" PRIu64 " is not supported (want %d)",
                path, version, RT_PLAN_FORMAT_VERSION);
        goto out;
    }
    if (!app || (strcmp(app, "mf") && strcmp(app, "lda"))) {
        rt_fail(err, RT_EXIT_INPUT, "%s: \"app\" must be \"mf\" or \"lda\"", path);
        goto out;
    }
    p->app = !strcmp(app, "mf") ? RT_PLAN_MF : RT_PLAN_LDA;
    if (id)
        p->plan_id = strtoull(id, &end, 16);
    if (!id || !*id || *end) {
        rt_fail(err, RT_EXIT_INPUT, "%s: missing or invalid \"plan_id\"", path);
        goto out;
    }
    if (!json_is_integer(seed)) {
        rt_fail(err, RT_EXIT_INPUT, "%s: missing or invalid \"seed\"", path);
        goto out;
    }
    p->seed = (uint64_t)json_integer_value(seed);
    if (!json_is_object(dims) || get_u64(dims, "rows", &dims_r, path, err) < 0 ||
        get_u64(dims, "cols", &dims_c, path, err) < 0)
        goto out;
    p->n_rows = dims_r;
    p->n_cols = dims_c;
    if (get_u64(root, "nnz_train", &p->nnz_train, path, err) < 0 ||
        get_u64(root, "nnz_test", &p->nnz_test, path, err) < 0 ||
        get_u64(root, "tokens_train", &p->tokens_train, path, err) < 0 ||
        get_u32(root, "nodes", &p->nodes, path, err) < 0 ||
        get_u32(root, "threads", &p->threads, path, err) < 0 ||
        get_u32(root, "workers", &p->workers, path, err) < 0 ||
        get_u32(root, "blocks", &p->blocks, path, err) < 0 ||
        get_u32(root, "pipeline", &p->pipeline, path, err) < 0)
        goto out;
    if (p->nodes == 0 || p->threads == 0 || p->pipeline == 0 ||
        (uint64_t)p->nodes * p->threads != p->workers ||
        (uint64_t)p->pipeline * p->workers != p->blocks) {
        rt_fail(err, RT_EXIT_INPUT,
                "%s: inconsistent sizes (nodes x threads must be workers, pipeline x workers "
                "must be blocks)",
                path);
        goto out;
    }
    if (check_values(p, path, err) < 0 || read_files(root, p, path, err) < 0)
        goto out;
    rc = read_schedule(root, p, path, err);
out:
    json_decref(root);
    return rc;
}

/* Offsets must start at 0, never decrease and end at `total`. */
static int check_offsets(const uint64_t *off, uint64_t n, uint64_t total)
{
    if (off[0] != 0 || off[n] != total)
        return -1;
    for (uint64_t i = 0; i < n; i++)
        if (off[i] > off[i + 1])
            return -1;
    return 0;
}

/* ids must be a permutation of 0..n-1. */
static int check_permutation(const uint32_t *ids, uint64_t n)
{
    uint8_t *seen = calloc(n ? n : 1, 1);
    if (!seen)
        return -2;
    int rc = 0;
    for (uint64_t i = 0; i < n && rc == 0; i++) {
        if (ids[i] >= n || seen[ids[i]])
            rc = -1;
        else
            seen[ids[i]] = 1;
    }
    free(seen);
    return rc;
}

/* Fetch a section of exactly `want` bytes. */
static const void *section(const rt_secfile *f, uint32_t id, uint64_t want, const char *path,
                           rt_error *err)
{
    uint64_t bytes;
    const void *p = rt_secfile_find(f, id, &bytes);
    if (!p) {
        rt_fail(err, RT_EXIT_INPUT, "%s: section %u is missing", path, id);
        return NULL;
    }
    if (bytes != want) {
        rt_fail(err, RT_EXIT_INPUT, "%s: section %u has %" PRIu64 " bytes, expected %" PRIu64, path,
                id, bytes, want);
        return NULL;
    }
    return p;
}

static int read_layout(rt_plan *p, rt_error *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/layout.bin", p->dir);
    rt_secfile f;
    if (rt_secfile_open(path, RT_FILE_LAYOUT, p->mapped, &f, err) < 0)
        return -1;
    p->layout_map = f.map;
    p->layout_len = f.len;
    if (f.len != p->layout_bytes || rt_checksum(f.map, f.len) != p->layout_check)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: size or checksum differs from plan.json's \"files\" record (tampered, "
                       "or from another plan)",
                       path);
    const rt_file_header *h = f.hdr;
    if (h->app != (uint32_t)p->app || h->workers != p->workers || h->blocks != p->blocks ||
        h->n_rows != p->n_rows || h->n_cols != p->n_cols || h->plan_id != p->plan_id)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: does not belong to this plan.json (plan id, app or sizes differ)",
                       path);
    p->worker_row_offset = (uint64_t *)section(&f, RT_SEC_WORKER_ROW_OFFSETS,
                                               8 * ((uint64_t)p->workers + 1), path, err);
    /* n_rows, n_cols < 2^32 (check_values): 4 x n cannot wrap. */
    p->worker_row_ids = (uint32_t *)section(&f, RT_SEC_WORKER_ROW_IDS, 4 * p->n_rows, path, err);
    p->block_col_offset =
        (uint64_t *)section(&f, RT_SEC_BLOCK_COL_OFFSETS, 8 * ((uint64_t)p->blocks + 1), path, err);
    p->block_col_ids = (uint32_t *)section(&f, RT_SEC_BLOCK_COL_IDS, 4 * p->n_cols, path, err);
    if (!p->worker_row_offset || !p->worker_row_ids || !p->block_col_offset || !p->block_col_ids)
        return -1;
    if (check_offsets(p->worker_row_offset, p->workers, p->n_rows) < 0 ||
        check_offsets(p->block_col_offset, p->blocks, p->n_cols) < 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s: inconsistent row or column block offsets", path);
    int r = check_permutation(p->worker_row_ids, p->n_rows);
    int c = r ? r : check_permutation(p->block_col_ids, p->n_cols);
    if (r == -2 || c == -2)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    if (r || c)
        return rt_fail(err, RT_EXIT_INPUT, "%s: %s ids are not a permutation", path,
                       r ? "row" : "column");
    return 0;
}

static int plan_open(const char *dir, int mapped, rt_plan *plan, rt_error *err)
{
    memset(plan, 0, sizeof(*plan));
    plan->mapped = mapped;
    if (snprintf(plan->dir, sizeof(plan->dir), "%s", dir) >= (int)sizeof(plan->dir))
        return rt_fail(err, RT_EXIT_INPUT, "%s: path too long", dir);
    if (read_manifest(plan, err) < 0 || read_layout(plan, err) < 0) {
        rt_plan_close(plan);
        return -1;
    }
    return 0;
}

int rt_plan_open(const char *dir, rt_plan *plan, rt_error *err)
{
    return plan_open(dir, 0, plan, err);
}

int rt_plan_open_mapped(const char *dir, rt_plan *plan, rt_error *err)
{
    return plan_open(dir, 1, plan, err);
}

void rt_plan_close(rt_plan *plan)
{
    rt_secfile layout = {.map = plan->layout_map, .len = plan->layout_len}; /* read_layout's */
    rt_secfile_close(&layout);
    free(plan->schedule);
    free(plan->shard_bytes);
    char dir[sizeof(plan->dir)];
    memcpy(dir, plan->dir, sizeof(dir));
    memset(plan, 0, sizeof(*plan));
    memcpy(plan->dir, dir, sizeof(dir));
}
