/* scratch.h - a scratch directory for one cmocka test group and small files
 * in it, for the unit tests that read files.  Include after <cmocka.h>;
 * use scratch_setup / scratch_teardown as the group's setup and teardown. */
#ifndef ROTOR_TESTS_SCRATCH_H
#define ROTOR_TESTS_SCRATCH_H

#include "ground/ground.h"

#include <stdio.h>
#include <stdlib.h>

/* The group's directory (set by scratch_setup). */
static char scratch_dir[256];

static inline int scratch_setup(void **state)
{
    (void)state;
    snprintf(scratch_dir, sizeof(scratch_dir), "/tmp/rotor-test-XXXXXX");
    return mkdtemp(scratch_dir) ? 0 : -1;
}

static inline int scratch_teardown(void **state)
{
    (void)state;
    rt_remove_tree(scratch_dir);
    return 0;
}

/* scratch_dir/name; valid until eight more calls (of this or scratch_file). */
static inline const char *scratch_path(const char *name)
{
    static char path[8][512];
    static int next;
    char *p = path[next++ % 8];
    snprintf(p, sizeof(path[0]), "%s/%s", scratch_dir, name);
    return p;
}

/* Write `text` to scratch_dir/name; returns the path (see scratch_path). */
static inline const char *scratch_file(const char *name, const char *text)
{
    const char *p = scratch_path(name);
    FILE *fp = fopen(p, "wb");
    assert_non_null(fp);
    assert_int_equal(fputs(text, fp) >= 0, 1);
    assert_int_equal(fclose(fp), 0);
    return p;
}

#endif
