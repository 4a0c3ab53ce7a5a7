/*
 * plan_write.h - state shared by the plan writer's files (internal).
 */
#ifndef ROTOR_PLAN_WRITE_H
#define ROTOR_PLAN_WRITE_H

#include "partition/plan_cells.h"

#include <jansson.h>

typedef struct rt_plan_builder {
    const rt_plan_input *in;
    const rt_plan_options *opt;
    uint32_t W, B, c;
    uint64_t n_rows, n_cols, n_test_rows;
    uint32_t *row_worker, *col_block, *test_row_worker;
    rt_groups rows, cols, test_rows;
    rt_cells train, test;
    char tmp[4096]; /* the temporary plan directory */
    int tmp_hold;   /* rt_hold_dir of it while it is ours */
    json_t *files;  /* name -> {bytes, xxh3}, filled as files are written */
    rt_plan_summary sum;
} rt_plan_builder;

/* Record a written file in the manifest's "files". */
int rt_plan_note_file(rt_plan_builder *pb, const char *name, uint64_t bytes, uint64_t check,
                      rt_error *err);
/* Write <tmp>/plan.json. */
int rt_plan_write_manifest(rt_plan_builder *pb, rt_error *err);

#endif
