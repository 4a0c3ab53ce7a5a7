/*
 * model_parts_test.c - a saved model's parts (apps/model_set.c) whose
 * checksums were made to match damaged cells: a NaN or an infinity in a
 * float part is refused at its part file, row and column by every reader of
 * the parts (rotor export in each format, the MF loader), and export leaves
 * no output behind; so is a negative count in an int32 part.  The model is written here by hand,
 * one rank: W (2 x 2) and H (3 x 2) floats with their int32 ids, and model.json recording each
 * file's size and XXH3 as rotor train does.
 */
#include "apps/apps.h"
#include "apps/mf_common.h"
#include "apps/model_set.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include <cmocka.h>

#include "tests/common/scratch.h"

/* Write a .npy part of rows x cols 4-byte cells; its size and checksum. */
static void write_part(const char *name, const char *descr, uint64_t rows, uint64_t cols,
                       const void *cells, uint64_t *bytes, uint64_t *check)
{
    rt_error err = {0};
    const char *path = scratch_path(name);
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(rt_npy_write_header(fp, descr, rows, cols, path, &err), 0);
    assert_int_equal(fwrite(cells, 4, rows * cols, fp), rows * cols);
    assert_int_equal(fclose(fp), 0);
    assert_int_equal(rt_file_checksum(path, bytes, check, &err), 0);
}

/* One manifest entry: part NAME in file m/NAME.part-00000.npy. */
static void entry(char *out, size_t cap, const char *name, const char *descr, uint64_t rows,
                  uint64_t cols, const void *cells)
{
    char file[64], path[80];
    uint64_t bytes, check;
    snprintf(file, sizeof(file), "%s.part-00000.npy", name);
    snprintf(path, sizeof(path), "m/%s", file);
    write_part(path, descr, rows, cols, cells, &bytes, &check);
    snprintf(out, cap,
             "{\"name\": \"%s\", \"file\": \"%s\", \"dtype\": \"%s\", \"rows\": %" PRIu64
             ", \"cols\": %" PRIu64 ", \"bytes\": %" PRIu64 ", \"xxh3\": \"%016" PRIx64 "\"}",
             name, file, descr, rows, cols, bytes, check);
}

/* The model in scratch_dir/m, with W and H as given (checksums to match). */
static const char *write_model(const float *W, const float *H)
{
    static const int32_t rows[2] = {1, 0}, cols[3] = {2, 0, 1};
    char e[4][512], json[4096];
    assert_int_equal(mkdir(scratch_path("m"), 0755) == 0 || errno == EEXIST, 1);
    entry(e[0], sizeof(e[0]), "W", "<f4", 2, 2, W);
    entry(e[1], sizeof(e[1]), "rows", "<i4", 2, 1, rows);
    entry(e[2], sizeof(e[2]), "H", "<f4", 3, 2, H);
    entry(e[3], sizeof(e[3]), "cols", "<i4", 3, 1, cols);
    snprintf(json, sizeof(json),
             "{\"app\": \"sgd-mf\", \"format_version\": %d, \"ranks\": 1, \"k\": 2, \"mu\": 0.5, "
             "\"biases\": false, \"n_rows\": 2, \"n_cols\": 3, \"parts\": [{\"rank\": 0, "
             "\"node_local\": false, \"files\": [%s, %s, %s, %s]}]}\n",
             RT_MODEL_FORMAT_VERSION, e[0], e[1], e[2], e[3]);
    scratch_file("m/model.json", json);
    scratch_file("m/rows.ids", "u0\nu1\n"); /* the original ids, for npy and text */
    scratch_file("m/cols.ids", "i0\ni1\ni2\n");
    return scratch_path("m");
}

/* Export the model in `format` to scratch_dir/out: the return code; err set. */
static int export_to(const char *model, int format, rt_error *err)
{
    rt_export_opts o = {
        .out = scratch_path("out"), .format = format, .memory = 1 << 20, .quiet = 1};
    rt_remove_tree(o.out);
    return rt_model_export(model, &o, err);
}

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static const float good_W[4] = {1, 2, 3, 4}, good_H[6] = {5, 6, 7, 8, 9, 10};

/* The hand-made model is a model: it exports in every format. */
static void test_finite_exports(void **state)
{
    (void)state;
    const char *m = write_model(good_W, good_H);
    rt_error err = {0};
    if (export_to(m, RT_EXPORT_LIBMF, &err))
        fail_msg("%s", err.msg);
    assert_true(exists(scratch_path("out/model.txt")));
    if (export_to(m, RT_EXPORT_NPY, &err))
        fail_msg("%s", err.msg);
    assert_true(exists(scratch_path("out/W.npy")));
}

/* A NaN in W's part file row 1, column 1 and an infinity in H's row 2,
 * column 0: refused there by every format and by the loader. */
static void test_nonfinite_refused(void **state)
{
    (void)state;
    float W[4] = {1, 2, 3, NAN}, H[6] = {5, 6, 7, 8, -INFINITY, 10};
    const int formats[3] = {RT_EXPORT_NPY, RT_EXPORT_LIBMF, RT_EXPORT_TEXT};
    const char *m = write_model(W, good_H);
    for (int f = 0; f < 3; f++) {
        rt_error err = {0};
        assert_int_equal(export_to(m, formats[f], &err), -1);
        assert_int_equal(err.code, RT_EXIT_INPUT);
        if (!strstr(err.msg, "m/W.part-00000.npy: row 1, column 1 is NaN"))
            fail_msg("format %d: %s", formats[f], err.msg);
        assert_false(exists(scratch_path("out")));
    }
    rt_model model;
    rt_error err = {0};
    if (rt_model_open(m, &model, &err) == 0) {
        rt_model_close(&model);
        fail_msg("the loader took a NaN");
    }
    assert_non_null(strstr(err.msg, "m/W.part-00000.npy: row 1, column 1 is NaN"));

    m = write_model(good_W, H);
    for (int f = 0; f < 3; f++) {
        rt_error e2 = {0};
        assert_int_equal(export_to(m, formats[f], &e2), -1);
        assert_non_null(strstr(e2.msg, "m/H.part-00000.npy: row 2, column 0 is infinite"));
        assert_false(exists(scratch_path("out")));
    }
}

static int visit_none(void *ctx, const int32_t *ids, const void *rows, uint64_t m, rt_error *err)
{
    (void)ctx, (void)ids, (void)rows, (void)m, (void)err;
    return 0;
}

/* An int32 part holds counts (LDA's word_topic, doc_topic): one forged
 * negative is refused by the scan every reader and export use, at its part
 * file's row and column; the same part of counts 0 or more passes. */
static void test_negative_count_refused(void **state)
{
    (void)state;
    static const int32_t ids[3] = {2, 0, 1};
    int32_t counts[6] = {0, 3, 1, 4, 7, 0};
    for (int bad = 0; bad < 2; bad++) {
        char e[2][512], json[2048];
        if (bad)
            counts[5] = -2;
        assert_int_equal(mkdir(scratch_path("m"), 0755) == 0 || errno == EEXIST, 1);
        entry(e[0], sizeof(e[0]), "counts", "<i4", 3, 2, counts);
        entry(e[1], sizeof(e[1]), "ids", "<i4", 3, 1, ids);
        snprintf(json, sizeof(json),
                 "{\"app\": \"lda\", \"format_version\": %d, \"ranks\": 1, \"parts\": "
                 "[{\"rank\": 0, \"node_local\": false, \"files\": [%s, %s]}]}\n",
                 RT_MODEL_FORMAT_VERSION, e[0], e[1]);
        scratch_file("m/model.json", json);
        rt_model_parts mp;
        rt_error err = {0};
        if (rt_model_parts_open(scratch_path("m"), &mp, &err))
            fail_msg("%s", err.msg);
        int rc = rt_model_scan(&mp, "counts", "ids", 3, 2, 1 << 20, visit_none, NULL, &err);
        rt_model_parts_close(&mp);
        if (!bad) {
            assert_int_equal(rc, 0);
            continue;
        }
        assert_int_equal(rc, -1);
        assert_int_equal(err.code, RT_EXIT_INPUT);
        if (!strstr(err.msg, "m/counts.part-00000.npy: row 2, column 1 is a negative count (-2"))
            fail_msg("%s", err.msg);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_finite_exports),
        cmocka_unit_test(test_nonfinite_refused),
        cmocka_unit_test(test_negative_count_refused),
    };
    rt_log_level = RT_LOG_WARN;
    return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
