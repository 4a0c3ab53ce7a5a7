/* ids_read.c - rt_plan_read_ids: rows.ids / cols.ids / test_rows.ids. */
#include "partition/partition.h"
#include "ground/json.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

/* The file's XXH3 must be the one plan.json records under "files". */
static int check_manifest(const rt_plan *plan, const char *which, const char *text, size_t len,
                          const char *path, rt_error *err)
{
    char mpath[4200], name[64];
    snprintf(mpath, sizeof(mpath), "%s/plan.json", plan->dir);
    snprintf(name, sizeof(name), "%s.ids", which);
    json_t *root = rt_json_load(mpath, err);
    if (!root)
        return -1;
    const char *want = json_string_value(
        json_object_get(json_object_get(json_object_get(root, "files"), name), "xxh3"));
    char got[17];
    snprintf(got, sizeof(got), "%016" PRIx64, rt_checksum(text, len));
    int rc = 0;
    if (!want)
        rc = rt_fail(err, RT_EXIT_INPUT, "%s: no checksum for %s", mpath, name);
    else if (strcmp(want, got))
        rc = rt_fail(err, RT_EXIT_INPUT, "%s: checksum mismatch (corrupted)", path);
    json_decref(root);
    return rc;
}

/* The text of WHICH.ids, checked against plan.json (checksum, final newline,
 * and the plan's row or column count), and its line count. */
static int read_checked(const rt_plan *plan, const char *which, char **text_out, size_t *len_out,
                        uint64_t *lines_out, rt_error *err)
{
    uint64_t want = UINT64_MAX; /* test_rows: any count */
    if (!strcmp(which, "rows"))
        want = plan->n_rows;
    else if (!strcmp(which, "cols"))
        want = plan->n_cols;
    else if (strcmp(which, "test_rows"))
        return rt_fail(err, RT_EXIT_RUNTIME, "rt_plan_read_ids: unknown id list '%s'", which);
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s.ids", plan->dir, which);
    FILE *fp = rt_fopen_read(path, RT_READ_OWN, err);
    if (!fp)
        return -1;
    struct stat sb;
    if (fstat(fileno(fp), &sb) != 0) {
        fclose(fp);
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot stat", path);
    }
    size_t len = (size_t)sb.st_size;
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
    if (check_manifest(plan, which, text, len, path, err) < 0) {
        free(text);
        return -1;
    }
    uint64_t lines = 0;
    for (size_t i = 0; i < len; i++)
        lines += text[i] == '\n';
    if (want != UINT64_MAX && lines != want) {
        free(text);
        return rt_fail(err, RT_EXIT_INPUT, "%s: %" PRIu64 " ids, the plan has %" PRIu64, path,
                       lines, want);
    }
    *text_out = text;
    *len_out = len;
    *lines_out = lines;
    return 0;
}

int rt_plan_check_ids(const rt_plan *plan, const char *which, rt_error *err)
{
    char *text;
    size_t len;
    uint64_t lines;
    if (read_checked(plan, which, &text, &len, &lines, err))
        return -1;
    free(text);
    return 0;
}

int rt_plan_read_ids(const rt_plan *plan, const char *which, char ***ids, uint64_t *n,
                     rt_error *err)
{
    *ids = NULL;
    *n = 0;
    char *text;
    size_t len;
    uint64_t lines;
    if (read_checked(plan, which, &text, &len, &lines, err))
        return -1;
    /* the pointer array, then the text behind it */
    char **out = malloc(sizeof(char *) * lines + len + 1);
    if (!out) {
        free(text);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory reading %s/%s.ids", plan->dir, which);
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
