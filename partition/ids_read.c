/* ids_read.c - rt_plan_read_ids: rows.ids / cols.ids / test_rows.ids. */
#include "partition.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int rt_plan_read_ids(const rt_plan *plan, const char *which, char ***ids, uint64_t *n,
                     rt_error *err)
{
    *ids = NULL;
    *n = 0;
    uint64_t want = UINT64_MAX; /* test_rows: any count */
    if (!strcmp(which, "rows"))
        want = plan->n_rows;
    else if (!strcmp(which, "cols"))
        want = plan->n_cols;
    else if (strcmp(which, "test_rows"))
        return rt_fail(err, RT_EXIT_RUNTIME, "rt_plan_read_ids: unknown id list '%s'", which);
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s.ids", plan->dir, which);
    FILE *fp = fopen(path, "rb");
    if (!fp)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot open", path);
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0) {
        fclose(fp);
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot stat", path);
    }
    size_t len = (size_t)sb.st_size;
    /* Count lines first to size the pointer array, then copy the text behind it. */
    char *text = malloc(len + 1);
    if (!text) {
        fclose(fp);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory reading %s", path);
    }
    size_t got = fread(text, 1, len, fp);
    fclose(fp);
    if (got != len) {
        free(text);
        return rt_fail(err, RT_EXIT_INPUT, "%s: short read", path);
    }
    if (len && text[len - 1] != '\n') {
        free(text);
        return rt_fail(err, RT_EXIT_INPUT, "%s: truncated (no final newline)", path);
    }
    uint64_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    if (want != UINT64_MAX && lines != want) {
        free(text);
        return rt_fail(err, RT_EXIT_INPUT, "%s: %" PRIu64 " ids, the plan has %" PRIu64, path,
                       lines, want);
    }
    char **out = malloc(sizeof(char *) * lines + len + 1);
    if (!out) {
        free(text);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory reading %s", path);
    }
    char *chars = (char *)(out + lines);
    memcpy(chars, text, len);
    free(text);
    uint64_t k = 0;
    char *start = chars;
    for (size_t i = 0; i < len; i++)
        if (chars[i] == '\n') {
            chars[i] = '\0';
            out[k++] = start;
            start = chars + i + 1;
        }
    *ids = out;
    *n = lines;
    return 0;
}
