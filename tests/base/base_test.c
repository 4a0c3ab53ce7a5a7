/* base_test.c - the shared utilities: RNG streams, number parsing, errors,
 * atomic output files, output directories, path splitting, .npy round
 * trips, the JSON reader, untouched and carved allocations. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "ground/ground.h"
#include "ground/json.h"
#include "verbs/wire.h"

static void test_rng_streams_are_reproducible_and_distinct(void **state)
{
    (void)state;
    rt_rng a, b, c;
    rt_rng_seed(&a, 7, 3);
    rt_rng_seed(&b, 7, 3);
    rt_rng_seed(&c, 7, 4);
    int same_as_c = 0;
    for (int i = 0; i < 1000; i++) {
        uint64_t x = rt_rng_next(&a);
        assert_true(x == rt_rng_next(&b));
        same_as_c += x == rt_rng_next(&c);
    }
    assert_true(same_as_c < 2);
}

static void test_rng_distributions(void **state)
{
    (void)state;
    rt_rng r;
    rt_rng_seed(&r, 1, 0);
    double sum = 0, sq = 0, gsum = 0;
    int n = 200000, below[10] = {0};
    for (int i = 0; i < n; i++) {
        double x = rt_rng_normal(&r);
        sum += x;
        sq += x * x;
        below[rt_rng_below(&r, 10)]++;
        gsum += rt_rng_gamma(&r, 0.5);
    }
    assert_true(fabs(sum / n) < 0.01);
    assert_true(fabs(sq / n - 1.0) < 0.02);
    assert_true(fabs(gsum / n - 0.5) < 0.01);
    for (int k = 0; k < 10; k++)
        assert_true(abs(below[k] - n / 10) < n / 100);
}

/* Gamma(k, 1) has mean k and variance k, for shapes below 1 (the boosted
 * path) and above.  With n = 200000 draws the sample variance is within 3%
 * of k by more than five standard errors; a sampler with the wrong spread
 * (e.g. a missing boost, or d*v without the cube) is off by far more. */
static void test_rng_gamma_moments(void **state)
{
    (void)state;
    static const double shapes[] = {0.3, 0.5, 1.0, 2.5, 10.0};
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        double k = shapes[i], sum = 0, sq = 0;
        int n = 200000;
        rt_rng r;
        rt_rng_seed(&r, 11, i);
        for (int j = 0; j < n; j++) {
            double x = rt_rng_gamma(&r, k);
            assert_true(x >= 0);
            sum += x;
            sq += x * x;
        }
        double mean = sum / n, var = sq / n - mean * mean;
        if (fabs(mean - k) > 0.02 * k || fabs(var - k) > 0.03 * k)
            fail_msg("Gamma(%g, 1): mean %g, variance %g; both should be %g", k, mean, var, k);
    }
}

static void test_parsers(void **state)
{
    (void)state;
    uint64_t u;
    double d;
    int i;
    assert_int_equal(rt_parse_u64("2M", &u), 0);
    assert_true(u == 2000000);
    assert_int_equal(rt_parse_u64("-1", &u), -1);
    assert_int_equal(rt_parse_u64("12x", &u), -1);
    assert_int_equal(rt_parse_double("0.25", &d), 0);
    assert_true(d == 0.25);
    assert_int_equal(rt_parse_double("nan", &d), -1);
    assert_int_equal(rt_parse_double("inf", &d), -1);
    assert_int_equal(rt_parse_double("", &d), -1);
    assert_int_equal(rt_parse_double("0x1p3", &d), -1); /* hex: decimal only */
    assert_int_equal(rt_parse_double(" 1", &d), -1);
    assert_int_equal(rt_parse_double("1e", &d), -1);
    assert_int_equal(rt_parse_double(".", &d), -1);
    assert_int_equal(rt_parse_double("-.5e-3", &d), 0);
    assert_true(d == -.5e-3);
    assert_int_equal(rt_parse_double("5.", &d), 0);
    assert_int_equal(rt_parse_u64(" 5", &u), -1);
    assert_int_equal(rt_parse_u64("+5", &u), -1);
    assert_int_equal(rt_parse_int(" 5", &i), -1);
    assert_int_equal(rt_parse_int("-", &i), -1);
    assert_int_equal(rt_parse_int("-5", &i), 0);
    assert_int_equal(i, -5);
    assert_int_equal(rt_parse_int("5.5", &i), -1);
}

/* Sizes are binary (K = 2^10 ... T = 2^40), one upper-case suffix (k too),
 * and nothing past 2^64 - 1. */
static void test_parse_bytes(void **state)
{
    (void)state;
    uint64_t u = 0;
    assert_int_equal(rt_parse_bytes("4K", &u), 0);
    assert_true(u == 4096);
    assert_int_equal(rt_parse_bytes("64k", &u), 0);
    assert_true(u == 65536);
    assert_int_equal(rt_parse_bytes("3M", &u), 0);
    assert_true(u == 3ull << 20);
    assert_int_equal(rt_parse_bytes("2G", &u), 0);
    assert_true(u == 2ull << 30);
    assert_int_equal(rt_parse_bytes("1T", &u), 0);
    assert_true(u == 1ull << 40);
    assert_int_equal(rt_parse_bytes("900", &u), 0);
    assert_true(u == 900);
    assert_int_equal(rt_parse_bytes("16777215T", &u), 0);
    assert_true(u == 16777215ull << 40);
    assert_int_equal(rt_parse_bytes("18446744073709551615", &u), 0);
    assert_true(u == UINT64_MAX);
    const char *bad[] = {
        "4g",  "4m",  "4t", "4KB", "4KiB",      "1.5G",         "-1",
        " 4G", "+4G", "",   "G",   "16777216T", "17179869184T", "18446744073709551616",
        "4G ", "4 G"};
    for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++)
        if (rt_parse_bytes(bad[k], &u) != -1)
            fail_msg("rt_parse_bytes(\"%s\") was taken as %llu", bad[k], (unsigned long long)u);
}

/* One decimal from 1 KiB on, and the unit is the one the rounded figure
 * fits: never "1024.0 KiB". */
static void test_format_bytes(void **state)
{
    (void)state;
    static const struct {
        uint64_t bytes;
        const char *text;
    } cases[] = {
        {0, "0 B"},
        {1023, "1023 B"},
        {1024, "1.0 KiB"},
        {1536, "1.5 KiB"},
        {1048524, "1023.9 KiB"}, /* 1023.949 KiB: still KiB */
        {1048525, "1.0 MiB"},    /* 1023.950 KiB would print 1024.0 */
        {1048575, "1.0 MiB"},
        {1048576, "1.0 MiB"},
        {(1ull << 30) - 1, "1.0 GiB"},
        {512ull << 20, "512.0 MiB"},
        {(1ull << 40) + (1ull << 39), "1.5 TiB"},
        {1ull << 50, "1024.0 TiB"}, /* TiB is the largest unit */
        {UINT64_MAX, "16777216.0 TiB"},
    };
    char buf[32];
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        rt_format_bytes(cases[k].bytes, buf, sizeof(buf));
        if (strcmp(buf, cases[k].text) != 0)
            fail_msg("rt_format_bytes(%llu) = \"%s\", want \"%s\"",
                     (unsigned long long)cases[k].bytes, buf, cases[k].text);
    }
}

static void test_error_prefix(void **state)
{
    (void)state;
    rt_error err;
    assert_int_equal(rt_fail(&err, RT_EXIT_INPUT, "line %d bad", 3), -1);
    rt_error_prefix(&err, "file.txt");
    assert_string_equal(err.msg, "file.txt: line 3 bad");
    assert_int_equal(err.code, RT_EXIT_INPUT);
}

/* Messages stay one line of well-formed text: control bytes and bytes that
 * are not UTF-8 (a Latin-1 file name, garbage in a hostfile) are escaped,
 * other scripts pass. */
static void test_one_line(void **state)
{
    (void)state;
    char out[128];
    rt_one_line(out, sizeof(out), "a\nb\tc\x1b[0m");
    assert_string_equal(out, "a\\nb\tc\\x1b[0m");
    rt_one_line(out, sizeof(out), "mod\xe9l \xff\xfe");
    assert_string_equal(out, "mod\\xe9l \\xff\\xfe");
    rt_one_line(out, sizeof(out), "\xd0\xbc\xd0\xbe \xf0\x9f\x98\x80"); /* мо, an emoji */
    assert_string_equal(out, "\xd0\xbc\xd0\xbe \xf0\x9f\x98\x80");
    rt_one_line(out, sizeof(out), "\xed\xa0\x80\xc0\xaf\xe2\x82"); /* surrogate, overlong, cut */
    assert_string_equal(out, "\\xed\\xa0\\x80\\xc0\\xaf\\xe2\\x82");
    /* C1's CSI (U+009B) and a right-to-left override (U+202E) are well-formed
     * UTF-8 that a terminal obeys rather than shows */
    rt_one_line(out, sizeof(out),
                "a\xc2\x9b"
                "31mb\xe2\x80\xae"
                "c");
    assert_string_equal(out, "a\\xc2\\x9b"
                             "31mb\\xe2\\x80\\xae"
                             "c");
}

/* A failure message relayed from another rank is made one line by the
 * same owner: a file name in another script stays readable (it became
 * "donn??es.txt"), control and broken bytes are escaped, a NUL shows. */
static void test_relayed_text(void **state)
{
    (void)state;
    char out[256];
    const char fr[] = "donn\xc3\xa9"
                      "es.txt: cannot open";
    assert_int_equal(wire_fail_text(fr, sizeof(fr) - 1, out, sizeof(out)), 0);
    assert_string_equal(out, fr);
    const char bad[] = "a\x1b[0m\nb\xff\0c";
    assert_int_equal(wire_fail_text(bad, sizeof(bad) - 1, out, sizeof(out)), 0);
    assert_string_equal(out, "a\\x1b[0m\\nb\\xff?c");
    assert_int_equal(wire_fail_text("", 0, out, sizeof(out)), -1);
}

/* A message longer than rt_error holds (a path of thousands of bytes) keeps
 * its end, where the cause is, and says where it was cut. */
static void test_long_message_keeps_cause(void **state)
{
    (void)state;
    char path[5000];
    memset(path, 'a', sizeof(path) - 1);
    path[sizeof(path) - 1] = '\0';
    rt_error err;
    rt_fail_errno(&err, RT_EXIT_INPUT, ENAMETOOLONG, "%s: cannot open", path);
    size_t n = strlen(err.msg);
    assert_true(n < sizeof(err.msg));
    assert_non_null(strstr(err.msg, "aaa ... aaa"));
    assert_string_equal(err.msg + n - strlen(": cannot open: File name too long"),
                        ": cannot open: File name too long");
    rt_error_prefix(&err, "context");
    assert_int_equal(strncmp(err.msg, "context: aaa", 12), 0);
    assert_non_null(strstr(err.msg, "File name too long"));
}

static void test_outfile_abort_leaves_nothing(void **state)
{
    (void)state;
    char dir[] = "/tmp/rotor-base-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/out.bin", dir);
    rt_outfile of;
    rt_error err;
    assert_int_equal(rt_outfile_open(&of, path, &err), 0);
    fputs("partial", of.fp);
    rt_outfile_abort(&of);
    assert_int_equal(access(path, F_OK), -1);
    assert_int_equal(access(of.tmp, F_OK), -1);
    assert_int_equal(rt_outfile_open(&of, path, &err), 0);
    fputs("whole", of.fp);
    assert_int_equal(rt_outfile_commit(&of, &err), 0);
    assert_int_equal(access(path, F_OK), 0);
    rt_remove_tree(dir);
}

static void write_file(const char *path, const char *bytes, size_t len)
{
    FILE *fp = fopen(path, "wb");
    assert_non_null(fp);
    assert_int_equal(fwrite(bytes, 1, len, fp), len);
    assert_int_equal(fclose(fp), 0);
}

/* Checking an output directory creates nothing: a run killed after the
 * check (a rank of a long job, SIGKILL) must not leave an empty --out, nor
 * the missing directories on its way.  What cannot hold it is refused. */
static void test_out_check_creates_nothing(void **state)
{
    (void)state;
    char dir[] = "/tmp/rotor-base-XXXXXX", out[256], file[256];
    assert_non_null(mkdtemp(dir));
    rt_error err = {0};
    snprintf(out, sizeof(out), "%s/new/deeper/model", dir);
    assert_int_equal(rt_check_whole_out_dir(out, "model.json", "a rotor model", &err), 0);
    snprintf(out, sizeof(out), "%s/new", dir);
    assert_int_equal(access(out, F_OK), -1); /* no new/, no new/deeper/, no model/ */
    snprintf(out, sizeof(out), "%s/model/", dir);
    assert_int_equal(rt_check_whole_out_dir(out, "model.json", "a rotor model", &err), 0);
    assert_int_equal(access(out, F_OK), -1);
    snprintf(file, sizeof(file), "%s/file", dir);
    write_file(file, "x", 1);
    snprintf(out, sizeof(out), "%s/file/model", dir);
    assert_int_equal(rt_check_whole_out_dir(out, "model.json", "a rotor model", &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    assert_non_null(strstr(err.msg, "file exists and is not a directory"));
    assert_int_equal(rt_check_whole_out_dir(file, "model.json", "a rotor model", &err), -1);
    assert_non_null(strstr(err.msg, "file: exists and is not a directory"));
    DIR *d = opendir(dir); /* and no probe file is left */
    int entries = 0;
    for (struct dirent *de; (de = readdir(d));)
        entries += de->d_name[0] != '.';
    closedir(d);
    assert_int_equal(entries, 1);
    rt_remove_tree(dir);
}

/* The one JSON reader: a byte order mark is skipped, CR-only lines count as
 * lines, errors name FILE:LINE:COLUMN on one line, repeated keys and bare
 * values are refused. */
static void test_json_reader(void **state)
{
    (void)state;
    char dir[] = "/tmp/rotor-base-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/m.json", dir);
    rt_error err = {0};
    static const char marked[] = "\xef\xbb\xbf{\"app\": \"lda\"}\n";
    write_file(path, marked, sizeof(marked) - 1);
    json_t *doc = rt_json_load(path, &err);
    assert_non_null(doc);
    assert_string_equal(json_string_value(json_object_get(doc, "app")), "lda");
    json_decref(doc);
    FILE *fp = fopen(path, "rb");
    doc = rt_json_loadf(fp, path, &err);
    fclose(fp);
    assert_non_null(doc);
    json_decref(doc);

    static const struct {
        const char *text, *want;
    } bad[] = {
        {"{\"a\": 1,\r\"b\": }\r", "m.json:2:6: unexpected token"}, /* an old Mac file's lines */
        {"{\"a\": 1,\r\n \"b\": x}", "m.json:2:7: invalid token"},  /* CRLF */
        {"{\"a\": 1, \"a\": 2}", "m.json:1:12: duplicate object key"},
        {"7", "m.json:1:1: '[' or '{' expected"},
        {"", "m.json:1: '[' or '{' expected near end of file"},
        {"{\"a\": \"\xff\"}", "m.json:1:7: unable to decode byte 0xff"},
        {"{\"a\": 1}\n\x01", "m.json:2: binary data (byte 0x01)"},
    };
    for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
        write_file(path, bad[i].text, strlen(bad[i].text));
        assert_null(rt_json_load(path, &err));
        assert_int_equal(err.code, RT_EXIT_INPUT);
        if (!strstr(err.msg, bad[i].want))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, bad[i].want);
        assert_null(strpbrk(err.msg, "\r\n\xff"));
    }
    assert_null(rt_json_load(dir, &err));
    assert_non_null(strstr(err.msg, "Is a directory"));
    rt_remove_tree(dir);
}

/* rt_text_load_head's max_len: an input of max_len bytes loads, one byte
 * more is refused at the line of that byte (past the first 64 KiB read and
 * within it), and a max_len near 2^64 is no limit (max_len + 2 wrapped to a
 * buffer of 0 bytes, freed twice). */
static void test_text_load_max_len(void **state)
{
    (void)state;
    char dir[] = "/tmp/rotor-base-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/t.txt", dir);
    enum { LINE = 100, N = 2000 * LINE }; /* lines of 99 'a' and '\n' */
    char *body = malloc(N);
    assert_non_null(body);
    for (size_t i = 0; i < N; i++)
        body[i] = i % LINE == LINE - 1 ? '\n' : 'a';
    write_file(path, body, N);
    free(body);
    static const struct {
        uint64_t max_len;
        uint64_t line; /* 0: loads */
    } cases[] = {{0, 0},       {N, 0},  {UINT64_MAX - 1, 0}, {UINT64_MAX, 0}, {N - 1, N / LINE},
                 {70000, 701}, {100, 2}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        rt_text t;
        rt_error err = {0};
        int rc = rt_text_load_head(path, 0, NULL, NULL, cases[i].max_len, &t, &err);
        if (!cases[i].line) {
            assert_int_equal(rc, 0);
            assert_int_equal(t.len, N);
            rt_text_free(&t);
            continue;
        }
        assert_int_not_equal(rc, 0);
        assert_int_equal(err.code, RT_EXIT_INPUT);
        char want[320];
        snprintf(want, sizeof(want), "%s:%llu: the input passes %llu bytes", path,
                 (unsigned long long)cases[i].line, (unsigned long long)cases[i].max_len);
        if (!strstr(err.msg, want))
            fail_msg("max_len %llu: '%s' lacks '%s'", (unsigned long long)cases[i].max_len, err.msg,
                     want);
    }
    rt_remove_tree(dir);
}

/* One cut for every path rotor renames into place: "out/" is "out". */
static void assert_split(const char *path, const char *want_path, const char *want_dir,
                         const char *want_base)
{
    rt_path_parts pp;
    assert_int_equal(rt_split_parent(path, &pp), 0);
    assert_string_equal(pp.path, want_path);
    assert_string_equal(pp.dir, want_dir);
    assert_string_equal(pp.base, want_base);
}

/* A loaded text loses its byte order mark, and only that: a text without
 * one, or with only part of one, is left as it is. */
static void test_bom_strip(void **state)
{
    (void)state;
    char a[] = "\xef\xbb\xbf"
               "ab";
    assert_int_equal(rt_utf8_bom_strip(a, 5), 2);
    assert_string_equal(a, "ab");
    char b[] = "ab";
    assert_int_equal(rt_utf8_bom_strip(b, 2), 2);
    assert_string_equal(b, "ab");
    char c[] = "\xef\xbb";
    assert_int_equal(rt_utf8_bom_strip(c, 2), 2);
    assert_string_equal(c, "\xef\xbb");
    char d[] = "\xef\xbb\xbf";
    assert_int_equal(rt_utf8_bom_strip(d, 3), 0);
    assert_string_equal(d, "");
}

/* Every line-end convention gives the same lines, however the bytes are cut
 * into the pieces a reader gets: "\n", "\r\n" and an old Mac file's lone
 * "\r" (which becomes "\n"; the '\r' of a "\r\n" stays for the reader to
 * drop).  A '\r' ending a piece waits for the next one. */
static void test_unify_line_ends(void **state)
{
    (void)state;
    static const struct {
        const char *in, *out;
    } cases[] = {
        {"a\rb\rc", "a\nb\nc"},
        {"a\r\nb\r\n", "a\r\nb\r\n"},
        {"a\r\rb\r", "a\n\nb\n"},
        {"a\r\r\nb", "a\n\r\nb"},
        {"\r", "\n"},
        {"a\nb\n", "a\nb\n"},
        {"", ""},
        {"1 1 5\r2 2 4\r\n3 3 1", "1 1 5\n2 2 4\r\n3 3 1"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        size_t n = strlen(cases[k].in);
        for (size_t cut = 0; cut <= n; cut++) { /* two pieces, cut at every byte */
            char buf[64];
            memcpy(buf, cases[k].in, n + 1);
            size_t settled = rt_text_unify_line_ends(buf, cut, 1);
            assert_true(settled == cut || (settled == cut - 1 && buf[cut - 1] == '\r'));
            rt_text_unify_line_ends(buf + settled, n - settled, 0);
            assert_string_equal(buf, cases[k].out);
        }
    }
}

static void test_split_parent(void **state)
{
    (void)state;
    assert_split("a", "a", ".", "a");
    assert_split("a/", "a", ".", "a");
    assert_split("/a", "/a", "/", "a");
    assert_split("/", "/", "/", "");
    assert_split("//", "/", "/", "");
    assert_split("a//b/", "a//b", "a", "b");
    assert_split("//a", "//a", "/", "a");
    assert_split("x/y/z.npy", "x/y/z.npy", "x/y", "z.npy");
    assert_split("./out", "./out", ".", "out");
    rt_path_parts pp;
    assert_int_equal(rt_split_parent("", &pp), -1);
    char *huge = malloc(sizeof(pp.path) + 1);
    assert_non_null(huge);
    memset(huge, 'a', sizeof(pp.path));
    huge[sizeof(pp.path)] = '\0';
    assert_int_equal(rt_split_parent(huge, &pp), -1);
    huge[sizeof(pp.path) - 1] = '\0'; /* the longest that fits */
    assert_int_equal(rt_split_parent(huge, &pp), 0);
    free(huge);
    char tmp[64];
    rt_error err;
    assert_int_equal(rt_tmp_dir_name("m//", 42, "r3", tmp, sizeof(tmp), &err), 0);
    assert_string_equal(tmp, "m.tmp-42-r3");
    assert_int_equal(rt_tmp_dir_name("", 42, "r3", tmp, sizeof(tmp), &err), -1);
    assert_int_equal(rt_tmp_dir_name("m", 42, "r3", tmp, 8, &err), -1);
    /* rt_same_file cuts paths the same way when neither exists yet. */
    char d[] = "/tmp/rotor-split-XXXXXX", a[128], b[128];
    assert_non_null(mkdtemp(d));
    snprintf(a, sizeof(a), "%s/new/", d);
    snprintf(b, sizeof(b), "%s//new", d);
    assert_true(rt_same_file(a, b));
    snprintf(b, sizeof(b), "%s/other", d);
    assert_false(rt_same_file(a, b));
    /* rt_path_inside: by name, existing or not, and through a link. */
    assert_true(rt_path_inside("m/metrics.json", "m"));
    assert_true(rt_path_inside("./m//ck/", "m/"));
    assert_true(rt_path_inside("m/a/../b", "m"));
    assert_true(rt_path_inside("/x/y", "/"));
    assert_false(rt_path_inside("m", "m"));
    assert_false(rt_path_inside("m/..", "m"));
    assert_false(rt_path_inside("mm/x", "m"));
    assert_false(rt_path_inside("metrics.json", "m"));
    snprintf(a, sizeof(a), "%s/real", d);
    assert_int_equal(mkdir(a, 0755), 0);
    snprintf(b, sizeof(b), "%s/link", d);
    assert_int_equal(symlink(a, b), 0);
    snprintf(b, sizeof(b), "%s/link/metrics.json", d);
    assert_true(rt_path_inside(b, a));
    rt_remove_tree(d);
}

static void test_npy_round_trip(void **state)
{
    (void)state;
    char dir[] = "/tmp/rotor-npy-XXXXXX", path[256];
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof(path), "%s/m.npy", dir);
    float m[3 * 8];
    for (int i = 0; i < 24; i++)
        m[i] = (float)i * 0.5f - 3.0f;
    rt_error err;
    /* rows of 5 floats taken from a stride of 8 */
    assert_int_equal(rt_npy_write_f32(path, m, 3, 5, 8, &err), 0);
    float *back;
    uint64_t rows, cols;
    assert_int_equal(rt_npy_read_f32(path, &back, &rows, &cols, &err), 0);
    assert_true(rows == 3 && cols == 5);
    for (int r = 0; r < 3; r++)
        for (int c = 0; c < 5; c++)
            assert_true(back[r * 5 + c] == m[r * 8 + c]);
    free(back);
    FILE *fp = fopen(path, "rb");
    char head[128];
    assert_int_equal(fread(head, 1, 128, fp), 128);
    fclose(fp);
    assert_true(head[127] == '\n'); /* header padded to 64-byte alignment */
    rt_remove_tree(dir);
}

/* Resident pages of [p, p + bytes), by mincore. */
static size_t resident_pages(void *p, size_t bytes)
{
    size_t page = (size_t)sysconf(_SC_PAGESIZE), n = (bytes + page - 1) / page, in = 0;
    unsigned char *vec = malloc(n);
    assert_non_null(vec);
    assert_int_equal(mincore(p, bytes, vec), 0);
    for (size_t i = 0; i < n; i++)
        in += vec[i] & 1;
    free(vec);
    return in;
}

/* A window from rt_alloc_untouched costs nothing until written, reads as
 * zeros, and is aligned for slots. */
static void test_alloc_untouched_takes_pages_on_write(void **state)
{
    (void)state;
    size_t page = (size_t)sysconf(_SC_PAGESIZE), bytes = 64 * page;
    unsigned char *p = rt_alloc_untouched(bytes);
    assert_non_null(p);
    assert_true((uintptr_t)p % RT_ALIGN == 0);
    assert_int_equal(resident_pages(p, bytes), 0);
    p[5 * page] = 1;
    p[5 * page + 1] = 2;
    assert_int_equal(resident_pages(p, bytes), 1);
    assert_true(p[7 * page] == 0 && p[bytes - 1] == 0);
    rt_free_untouched(p, bytes);
    rt_free_untouched(NULL, bytes);
}

/* rt_alloc_parts: every part aligned, zeroed, inside the one block and apart
 * from the others (a 0-element part still has an address); an impossible
 * size gives NULL and leaves the pointers alone. */
static void test_alloc_parts_carves_one_block(void **state)
{
    (void)state;
    uint64_t *offs = NULL;
    float *vals = NULL;
    uint32_t *none = NULL;
    char *tail = NULL;
    rt_part part[] = {RT_PART(offs, 3), RT_PART(vals, 17), RT_PART(none, 0), RT_PART(tail, 1)};
    char *base = rt_alloc_parts(part, 4);
    assert_non_null(base);
    char *at[] = {(char *)offs, (char *)vals, (char *)none, tail};
    size_t bytes[] = {3 * sizeof(uint64_t), 17 * sizeof(float), 0, 1};
    for (int i = 0; i < 4; i++) {
        assert_non_null(at[i]);
        assert_true((uintptr_t)at[i] % RT_ALIGN == 0);
        for (size_t b = 0; b < bytes[i]; b++)
            assert_int_equal(at[i][b], 0);
        if (i > 0)
            assert_true(at[i] >= at[i - 1] + bytes[i - 1] && at[i] > at[i - 1]);
    }
    assert_ptr_equal(base, offs);
    offs[2] = UINT64_MAX; /* each part's last element is in the block (ASan) */
    vals[16] = 1.0f;
    tail[0] = 'x';
    rt_free(base);

    float *huge = NULL;
    rt_part too_big[] = {RT_PART(vals, 1), RT_PART(huge, UINT64_MAX / 2)};
    vals = NULL;
    assert_null(rt_alloc_parts(too_big, 2));
    assert_null(vals);
    assert_null(huge);
}

/* A differing field's value as a message shows it: a decimal fraction the
 * job recorded with %.17g in its shortest form, anything else as it is
 * (a hex plan id that reads as a number too: only text with a '.'). */
static void quote_is(const char *v, const char *want)
{
    char out[128];
    rt_field_quote(out, sizeof(out), v, v ? strlen(v) : 0);
    assert_string_equal(out, want);
}

static void test_field_quote_shortest_decimal(void **state)
{
    (void)state;
    quote_is("0.20000000000000001", "'0.2'");
    quote_is("1.0000000000000001e-05", "'1e-05'");
    quote_is("0.20000000000000004", "'0.20000000000000004'");
    quote_is("5e7cc22684037758", "'5e7cc22684037758'");
    quote_is("00000000000001e5", "'00000000000001e5'");
    quote_is("1000", "'1000'");
    quote_is("0.5", "'0.5'");
    quote_is("1.5.2", "'1.5.2'");
    quote_is("1.0", "'1.0'"); /* not %.17g's text: a name (a directory "1.0"), kept */
    quote_is("1.00", "'1.00'");
    quote_is("0.50000000000000000", "'0.50000000000000000'");
    quote_is("sgd-mf", "'sgd-mf'");
    quote_is(NULL, "nothing");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_rng_streams_are_reproducible_and_distinct),
        cmocka_unit_test(test_rng_distributions),
        cmocka_unit_test(test_rng_gamma_moments),
        cmocka_unit_test(test_parsers),
        cmocka_unit_test(test_parse_bytes),
        cmocka_unit_test(test_format_bytes),
        cmocka_unit_test(test_error_prefix),
        cmocka_unit_test(test_one_line),
        cmocka_unit_test(test_relayed_text),
        cmocka_unit_test(test_long_message_keeps_cause),
        cmocka_unit_test(test_outfile_abort_leaves_nothing),
        cmocka_unit_test(test_out_check_creates_nothing),
        cmocka_unit_test(test_json_reader),
        cmocka_unit_test(test_text_load_max_len),
        cmocka_unit_test(test_split_parent),
        cmocka_unit_test(test_bom_strip),
        cmocka_unit_test(test_unify_line_ends),
        cmocka_unit_test(test_npy_round_trip),
        cmocka_unit_test(test_alloc_untouched_takes_pages_on_write),
        cmocka_unit_test(test_alloc_parts_carves_one_block),
        cmocka_unit_test(test_field_quote_shortest_decimal),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
