/*
 * plan_reschedule.c - test tool: give a plan another valid schedule.
 *
 *   plan_reschedule PLAN_DIR reverse|shuffle [SEED]
 *
 * Replaces the "schedule" table of PLAN_DIR/plan.json with one of the
 * variants of schedule_variants.h (plan.json carries no checksum of itself;
 * the rest of the plan is untouched), writing a temporary file and renaming
 * it into place.  The result must still pass rt_plan_open.
 */
#include "partition/partition.h"
#include "tests/partition/schedule_variants.h"

#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>

static int die(const char *what)
{
    fprintf(stderr, "plan_reschedule: %s\n", what);
    return 2;
}

static json_t *table_json(const uint32_t *t, uint32_t W, uint32_t B)
{
    json_t *steps = json_array();
    for (uint32_t s = 0; s < B; s++) {
        json_t *row = json_array();
        for (uint32_t w = 0; w < W; w++)
            json_array_append_new(row, json_integer(t[(size_t)s * W + w]));
        json_array_append_new(steps, row);
    }
    return steps;
}

int main(int argc, char **argv)
{
    if (argc < 3)
        return die("usage: plan_reschedule PLAN_DIR reverse|shuffle [SEED]");
    uint64_t seed = argc > 3 ? strtoull(argv[3], NULL, 10) : 1;
    char path[4200], tmp[4300];
    snprintf(path, sizeof(path), "%s/plan.json", argv[1]);
    snprintf(tmp, sizeof(tmp), "%s.tmp", path);
    json_error_t je;
    json_t *root = json_load_file(path, JSON_PRESERVE_ORDER, &je);
    if (!root)
        return die(je.text);
    json_int_t W = json_integer_value(json_object_get(root, "workers"));
    json_int_t c = json_integer_value(json_object_get(root, "pipeline"));
    if (W <= 0 || c <= 0)
        return die("plan.json has no workers or pipeline");
    uint32_t *t = malloc(sizeof(uint32_t) * (size_t)(W * W * c));
    if (!t || schedule_variant(argv[2], (uint32_t)W, (uint32_t)c, seed, t))
        return die("unknown schedule variant (reverse or shuffle)");
    json_object_set_new(root, "schedule", table_json(t, (uint32_t)W, (uint32_t)(W * c)));
    if (json_dump_file(root, tmp, JSON_INDENT(2) | JSON_PRESERVE_ORDER) || rename(tmp, path))
        return die("cannot write plan.json");
    json_decref(root);
    free(t);
    return 0;
}
