/* plan_manifest.c - plan.json: the human-readable manifest. */
#include "partition/plan_write.h"
#include "ground/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SCHEDULE_MARK "@@SCHEDULE@@"

int rt_plan_note_file(rt_plan_builder *pb, const char *name, uint64_t bytes, uint64_t check,
                      rt_error *err)
{
    char hex[17];
    snprintf(hex, sizeof(hex), "%016" PRIx64, check);
    json_t *f = json_pack("{s:I,s:s}", "bytes", (json_int_t)bytes, "xxh3", hex);
    if (!f || json_object_set_new(pb->files, name, f) < 0)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (manifest)");
    return 0;
}

static json_t *imbalance_json(const rt_imbalance *im)
{
    return json_pack("{s:f,s:f,s:f,s:f,s:f}", "row_blocks", im->row_blocks, "col_blocks",
                     im->col_blocks, "cells", im->cells, "worker_rows", im->worker_rows,
                     "block_cols", im->block_cols);
}

static json_t *inputs_json(const rt_plan_options *opt)
{
    json_t *a = json_array();
    for (int i = 0; a && i < opt->n_sources; i++) {
        const rt_plan_source *s = &opt->sources[i];
        json_array_append_new(
            a, json_pack("{s:s,s:o,s:s,s:I,s:I}", "role", s->role ? s->role : "", "path",
                         rt_json_text(s->path ? s->path : ""), "format", s->format ? s->format : "",
                         "lines", (json_int_t)s->lines, "entries", (json_int_t)s->entries));
    }
    return a;
}

static json_t *counts_json(const rt_plan_options *opt)
{
    json_t *o = json_object();
    for (int i = 0; o && i < opt->n_counts; i++)
        json_object_set_new(o, opt->counts[i].name, json_integer((json_int_t)opt->counts[i].value));
    return o;
}

static json_t *manifest(rt_plan_builder *pb)
{
    const rt_plan_input *in = pb->in;
    const rt_plan_options *opt = pb->opt;
    char id[19];
    snprintf(id, sizeof(id), "%016" PRIx64, pb->sum.plan_id);
    json_t *root = json_object();
    json_t *dims =
        json_pack("{s:I,s:I}", "rows", (json_int_t)pb->n_rows, "cols", (json_int_t)pb->n_cols);
    if (!root || !dims)
        return NULL;
    if (in->test_rows)
        json_object_set_new(dims, "test_rows", json_integer((json_int_t)pb->n_test_rows));
    json_object_set_new(root, "format_version", json_integer(RT_PLAN_FORMAT_VERSION));
    json_object_set_new(root, "app", json_string(rt_plan_app_name(in->app)));
    json_object_set_new(root, "plan_id", json_string(id));
    json_object_set_new(root, "command_line",
                        rt_json_text(opt->command_line ? opt->command_line : ""));
    json_object_set_new(root, "dims", dims);
    json_object_set_new(root, "nnz_train", json_integer((json_int_t)pb->sum.nnz_train));
    json_object_set_new(root, "nnz_test", json_integer((json_int_t)pb->sum.nnz_test));
    json_object_set_new(root, "tokens_train", json_integer((json_int_t)pb->sum.tokens_train));
    json_object_set_new(root, "duplicates", json_integer((json_int_t)pb->sum.duplicates));
    json_object_set_new(root, "heldout_docs", json_boolean(in->test_rows != NULL));
    json_object_set_new(root, "nodes", json_integer(opt->nodes));
    json_object_set_new(root, "threads", json_integer(opt->threads));
    json_object_set_new(root, "workers", json_integer(pb->W));
    json_object_set_new(root, "blocks", json_integer(pb->B));
    json_object_set_new(root, "pipeline", json_integer(pb->c));
    json_object_set_new(root, "seed", json_integer((json_int_t)opt->seed));
    json_object_set_new(root, "balance",
                        json_string(opt->balance == RT_BALANCE_RANDOM ? "random" : "greedy"));
    json_object_set_new(root, "imbalance", imbalance_json(&pb->sum.imbalance));
    json_object_set_new(root, "imbalance_random_baseline",
                        imbalance_json(&pb->sum.random_imbalance));
    json_object_set_new(root, "inputs", inputs_json(opt));
    json_object_set_new(root, "dropped", counts_json(opt));
    json_object_set_new(root, "files", json_incref(pb->files));
    json_object_set_new(root, "schedule", json_string(SCHEDULE_MARK));
    return root;
}

/* The schedule table, one step per line: "[[w0, w1, ...], ...]" indented by 2. */
static int write_schedule(FILE *fp, const uint32_t *table, uint32_t W, uint32_t B)
{
    fputs("[\n", fp);
    for (uint32_t s = 0; s < B; s++) {
        fputs("    [", fp);
        for (uint32_t w = 0; w < W; w++)
            fprintf(fp, w ? ", %u" : "%u", table[(size_t)s * W + w]);
        fputs(s + 1 < B ? "],\n" : "]\n", fp);
    }
    return fputs("  ]", fp) < 0 ? -1 : 0;
}

int rt_plan_write_manifest(rt_plan_builder *pb, rt_error *err)
{
    json_t *root = manifest(pb);
    char *text = root ? json_dumps(root, JSON_INDENT(2) | JSON_REAL_PRECISION(6)) : NULL;
    json_decref(root);
    uint32_t *table = malloc(sizeof(uint32_t) * (size_t)pb->B * pb->W);
    if (!text || !table) {
        free(text);
        free(table);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (manifest)");
    }
    rt_schedule_ring(pb->W, pb->c, table);
    char path[4200];
    snprintf(path, sizeof(path), "%s/plan.json", pb->tmp);
    FILE *fp = fopen(path, "w");
    if (!fp) {
        free(text);
        free(table);
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: cannot create", path);
    }
    /* Splice the compact schedule where the placeholder string is. */
    char *mark = strstr(text, "\"" SCHEDULE_MARK "\"");
    int bad = 0;
    if (mark) {
        *mark = '\0';
        bad |= fputs(text, fp) < 0;
        bad |= write_schedule(fp, table, pb->W, pb->B) < 0;
        bad |= fputs(mark + strlen(SCHEDULE_MARK) + 2, fp) < 0;
    } else {
        bad |= fputs(text, fp) < 0;
    }
    bad |= fputc('\n', fp) < 0;
    /* The manifest is written last: synced, then the directory (every file's
     * name), before the plan is swapped in; EIO shows here, not after. */
    bad |= fflush(fp) != 0 || fsync(fileno(fp)) != 0;
    int e = errno;
    bad |= fclose(fp) != 0;
    free(text);
    free(table);
    if (bad)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, e ? e : errno, "%s: write failed", path);
    return rt_sync_dir(pb->tmp, err);
}
