/* test_readers.c - MF ratings readers: formats, sniffing, id mapping, and
 * every bad-input case failing with "FILE:LINE: what" (exit code 2). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/common/opens.h"
#include "tests/common/scratch.h"

#include "partition/partition.h"

typedef struct parsed {
    rt_idmap rows, cols;
    rt_triplets t;
    rt_ratings_stats st;
    rt_error err;
    int rc;
} parsed;

static void parse(parsed *p, const char *path, rt_rating_format fmt)
{
    memset(p, 0, sizeof(*p));
    p->rc = rt_read_ratings(path, fmt, &p->rows, &p->cols, 1, &p->t, &p->st, &p->err);
}

static void parsed_free(parsed *p)
{
    rt_idmap_free(&p->rows), rt_idmap_free(&p->cols);
    rt_triplets_free(&p->t);
}

/* Parse text as the file NAME in format fmt; it must be accepted. */
static void parse_ok(parsed *p, const char *name, const char *text, rt_rating_format fmt)
{
    parse(p, scratch_file(name, text), fmt);
    if (p->rc)
        fail_msg("%s: %s", name, p->err.msg);
}

/* Entry i maps back to (user, item, rating). */
static void expect(const parsed *p, uint64_t i, const char *u, const char *it, float r)
{
    assert_true(i < p->t.n);
    assert_string_equal(rt_idmap_str(&p->rows, p->t.e[i].row), u);
    assert_string_equal(rt_idmap_str(&p->cols, p->t.e[i].col), it);
    assert_true(p->t.e[i].val == r);
}

static void test_formats(void **state)
{
    (void)state;
    static const struct {
        const char *name, *text;
        rt_rating_format sniffed;
        int header; /* the first line is a header, skipped */
    } cases[] = {
        {"u.data", "196\t242\t3\t881250949\n186\t302\t3.5\t891717742\n196\t302\t1\t1\n",
         RT_FMT_TRIPLETS, 0},
        {"ratings.csv",
         "userId,movieId,rating,timestamp\n196,242,3,1\n186,302,3.5,2\n"
         "196,302,1,3\n",
         RT_FMT_CSV, 1},
        {"ratings.dat", "196::242::3::881250949\n186::302::3.5::1\r\n196::302::1::0", RT_FMT_DAT,
         0},
        {"m.mtx",
         "%%MatrixMarket matrix coordinate real general\n% comment\n200 400 3\n"
         "196 242 3\n186 302 3.5\n196 302 1\n",
         RT_FMT_MM, 0},
        {"bom.txt",
         "\xef\xbb\xbf" /* a UTF-8 byte order mark: not part of the first id */
         "196 242 3\r\n186 302 3.5\r\n196 302 1\r\n",
         RT_FMT_TRIPLETS, 0},
        {"bom.csv",
         "\xef\xbb\xbf"
         "userId,movieId,rating\n196,242,3\n186,302,3.5\n196,302,1\n",
         RT_FMT_CSV, 1},
        /* old Mac line ends (a lone '\r'; Excel's "CSV (Macintosh)"): one line each */
        {"mac.txt", "196 242 3\r186 302 3.5\r196 302 1\r", RT_FMT_TRIPLETS, 0},
        {"mac.csv", "userId,movieId,rating\r196,242,3\r186,302,3.5\r\n196,302,1", RT_FMT_CSV, 1},
        {"spaces.txt", "# comment\n  196   242 3\n\n186 302   3.5e0\n196 302 +1.000\n",
         RT_FMT_TRIPLETS, 0},
        /* "//" starts a comment as '#' and '%' do, in the format guess too */
        {"slashes.csv", "// exported by hand\n196,242,3\n  // a note\n186,302,3.5\n196,302,1\n",
         RT_FMT_CSV, 0},
        {"slashes.dat", "196::242::3\n//186::302::4\n186::302::3.5\n% x\n196::302::1\n", RT_FMT_DAT,
         0},
        /* the fourth field is never read, in any reader: a date, a word */
        {"dates.txt", "196 242 3 2005-09-06\n186\t302\t3.5\tjunk\n196 302 1 x\n", RT_FMT_TRIPLETS,
         0},
        {"dates.csv", "user,item,rating,date\n196,242,3,2005-09-06\n186,302,3.5,junk\n196,302,1,\n",
         RT_FMT_CSV, 1},
        {"dates.dat", "196::242::3::2005-09-06\n186::302::3.5::junk\n196::302::1::x\n", RT_FMT_DAT,
         0},
        /* real-world shapes: a header on tab-separated data, Book-Crossing's quoted
         * semicolon-separated fields, decimal commas, pandas' quoted CSV */
        {"header.tsv",
         "user_id\titem_id\trating\ttimestamp\n196\t242\t3\t1\n186\t302\t3.5\t2\n196\t302\t1\t3\n",
         RT_FMT_TRIPLETS, 1},
        {"bx.csv",
         "\"User-ID\";\"ISBN\";\"Book-Rating\"\n\"196\";\"242\";\"3\"\n\"186\";\"302\";\"3,"
         "5\"\n196;302;1\n",
         RT_FMT_CSV, 1},
        {"quoted.csv",
         "\"user\",\"item\",\"rating\"\n\"196\",\"242\",3\n\"186\",\"302\",\"3.5\"\n196,302,1\n",
         RT_FMT_CSV, 1},
        /* the Netflix Prize's training files: "ITEM:" heads its "user,rating,date" lines */
        {"mv_0000242.txt", "242:\n196,3,2005-09-06\n302:\n186,3.5,2005-05-13\n196,1\n",
         RT_FMT_NETFLIX, 0},
        {"combined_data_1.txt",
         "# x\r\n\r\n242: \r\n196,3,2005-09-06\r\n302:\r\n186,3.5\r\n196,1,x\r\n", RT_FMT_NETFLIX,
         0},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const char *path = scratch_file(cases[k].name, cases[k].text);
        parsed p;
        parse(&p, path, RT_FMT_AUTO);
        if (p.rc)
            fail_msg("%s: %s", cases[k].name, p.err.msg);
        assert_int_equal(p.st.format, cases[k].sniffed);
        assert_int_equal(p.t.n, 3);
        assert_int_equal(p.rows.n, 2);
        assert_int_equal(p.cols.n, 2);
        expect(&p, 0, "196", "242", 3.0f);
        expect(&p, 1, "186", "302", 3.5f);
        expect(&p, 2, "196", "302", 1.0f);
        assert_int_equal(p.t.e[2].row, 0); /* first appearance order */
        assert_int_equal(p.t.e[2].col, 1);
        assert_int_equal(p.st.header, cases[k].header);
        assert_int_equal(p.st.pairs, 0);
        parsed_free(&p);
    }
}

static void test_libmf_and_string_ids(void **state)
{
    (void)state;
    parsed p;
    parse_ok(&p, "libmf.txt", "0 0 1.5\n007 3 2\n0 3 -0.25\n", RT_FMT_LIBMF);
    expect(&p, 1, "7", "3", 2.0f); /* canonical integer ids */
    expect(&p, 2, "0", "3", -0.25f);
    parsed_free(&p);
    parse_ok(&p, "str.txt", "alice  The-Matrix 5\nbob Alien 4\nalice Alien 3.25\n",
             RT_FMT_TRIPLETS);
    expect(&p, 2, "alice", "Alien", 3.25f);
    parsed_free(&p);
}

/* Ids in brackets or braces are ids, not JSON (634ceb2 refused a first line
 * starting with '[' as a JSON array); a JSON array or object line is still
 * refused. */
static void test_bracketed_ids_are_not_json(void **state)
{
    (void)state;
    parsed p;
    parse_ok(&p, "brackets.txt", "[u1] [i1] 5\n[u2] [i1] 3\n", RT_FMT_AUTO);
    expect(&p, 1, "[u2]", "[i1]", 3.0f);
    parsed_free(&p);
    parse_ok(&p, "brackets.csv", "[1],[2],4\n[3],[2],1.5\n", RT_FMT_AUTO);
    expect(&p, 0, "[1]", "[2]", 4.0f);
    parsed_free(&p);
    parse_ok(&p, "braces.txt", "{u1} {i1} 5\n", RT_FMT_AUTO);
    parsed_free(&p);
    static const char *const json[] = {"[[1, 10, 5], [2, 10, 3]]\n", "[1, 10, 5]\n[2, 10, 3]\n",
                                       "[\n  [1, 10, 5]\n]\n", "{\"u\": 1, \"i\": 2}\n"};
    for (size_t i = 0; i < sizeof(json) / sizeof(json[0]); i++) {
        parse(&p, scratch_file("j.txt", json[i]), RT_FMT_AUTO);
        assert_int_equal(p.rc, -1);
        assert_non_null(strstr(p.err.msg, "j.txt:1: JSON, not ratings text"));
        parsed_free(&p);
    }
}

/* Implicit feedback as user-item pairs without a rating: every pair counts
 * 1, with or without a header; a line with a rating among them is an error. */
static void test_pairs_without_ratings(void **state)
{
    (void)state;
    static const struct {
        const char *name, *text;
        int header;
    } cases[] = {
        {"pairs.txt", "196 242\n186\t302\n196 302\n", 0},
        {"pairs.csv", "user,item\n196,242\n186,302\n196,302\n", 1},
        {"pairs.dat", "196::242\n186::302\n196::302\n", 0},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        parsed p;
        parse_ok(&p, cases[k].name, cases[k].text, RT_FMT_AUTO);
        assert_int_equal(p.t.n, 3);
        assert_int_equal(p.st.pairs, 1);
        assert_int_equal(p.st.header, cases[k].header);
        expect(&p, 0, "196", "242", 1.0f);
        expect(&p, 1, "186", "302", 1.0f);
        expect(&p, 2, "196", "302", 1.0f);
        parsed_free(&p);
    }
    parsed p;
    parse(&p, scratch_file("mixed.txt", "1 2\n1 3\n2 2 5\n"), RT_FMT_AUTO);
    assert_int_equal(p.rc, -1);
    assert_non_null(strstr(p.err.msg, "mixed.txt:3: expected 2 fields (user item"));
    parsed_free(&p);
}

/* Test files: unknown users/items are dropped and counted, ids never added. */
static void test_test_file_drops(void **state)
{
    (void)state;
    parsed p;
    parse_ok(&p, "train.txt", "1 10 5\n2 20 4\n", RT_FMT_AUTO);
    rt_triplets test;
    rt_triplets_init(&test);
    rt_ratings_stats st;
    assert_int_equal(rt_read_ratings(scratch_file("test.txt", "1 20 3\n3 10 1\n2 30 2\n2 10 1\n"),
                                     RT_FMT_AUTO, &p.rows, &p.cols, 0, &test, &st, &p.err),
                     0);
    assert_int_equal(test.n, 2);
    assert_int_equal(st.dropped, 2);
    assert_int_equal(p.rows.n, 2);
    assert_int_equal(p.cols.n, 2);
    rt_triplets_free(&test);
    parsed_free(&p);
}

/* Every bad input: exit code 2 and "FILE:LINE: what was wrong". */
static void test_bad_inputs(void **state)
{
    (void)state;
    static const struct {
        const char *name, *text;
        rt_rating_format fmt;
        const char *where, *what;
    } cases[] = {
        {"fields.txt", "1 2 3\n1 2\n", RT_FMT_AUTO, "fields.txt:2:", "fields"},
        /* a first line with an integer user id is data, not a header */
        {"notheader.txt", "1 2 x\n1 3 4\n", RT_FMT_AUTO, "notheader.txt:1:", "not a number"},
        {"notheader.csv", "1,2,x\n1,3,4\n", RT_FMT_AUTO, "notheader.csv:1:", "not a number"},
        {"header2.txt", "user item rating\nuser item rating\n", RT_FMT_AUTO,
         "header2.txt:2:", "not a number"},
        {"fields5.txt", "1 2 3 4 5\n", RT_FMT_AUTO, "fields5.txt:1:", "found 5"},
        {"rating.txt", "1 2 3\n4 5 6\n7 8 good\n", RT_FMT_AUTO, "rating.txt:3:", "not a number"},
        {"nan.txt", "1 2 nan\n", RT_FMT_AUTO, "nan.txt:1:", "NaN or infinite"},
        {"inf.csv", "u,i,r\n1,2,3\n1,3,-inf\n", RT_FMT_AUTO, "inf.csv:3:", "NaN or infinite"},
        {"huge.txt", "1 2 1e300\n", RT_FMT_AUTO, "huge.txt:1:", "beyond the float range"},
        {"mm-row.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 1 1\n4 1 2\n",
         RT_FMT_AUTO, "mm-row.mtx:4:", "row id 4"},
        {"mm-col.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 0 1\n", RT_FMT_AUTO,
         "mm-col.mtx:3:", "column id 0"},
        {"mm-count.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 3\n1 1 1\n2 2 2\n",
         RT_FMT_AUTO, "mm-count.mtx:2:", "declares 3"},
        {"mm-more.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 1 1\n2 2 2\n",
         RT_FMT_AUTO, "mm-more.mtx:4:", "more entries"},
        {"mm-sym.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 1\n1 1 1\n",
         RT_FMT_AUTO, "mm-sym.mtx:1:", "symmetric"},
        {"mm-nobanner.mtx", "3 3 1\n1 1 1\n", RT_FMT_MM, "mm-nobanner.mtx:1:", "banner"},
        {"mm-blank1.mtx", "\n3 3 1\n1 1 1\n", RT_FMT_MM, "mm-blank1.mtx:1:", "banner"},
        {"mm-empty.mtx", "%%MatrixMarket matrix coordinate real general\n", RT_FMT_AUTO,
         "mm-empty.mtx:1:", "no MatrixMarket size line"},
        {"mm-zero.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 0\n", RT_FMT_AUTO,
         "mm-zero.mtx:2:", "no ratings"},
        {"empty.txt", "", RT_FMT_AUTO, "empty.txt:1:", "no ratings"},
        {"comments.txt", "# nothing\n\n", RT_FMT_AUTO, "comments.txt:2:", "no ratings"},
        {"dat.dat", "1::2::3\n1::2\n", RT_FMT_AUTO, "dat.dat:2:", "fields"},
        {"libmf-bad.txt", "0 0 1.5\nu1 3 2\n", RT_FMT_LIBMF,
         "libmf-bad.txt:2:", "'u1' is not a non-negative integer"},
        {"nf-first.txt", "196,3,2005-09-06\n242:\n", RT_FMT_NETFLIX,
         "nf-first.txt:1:", "a rating before the first 'ITEM:' line"},
        {"nf-probe.txt", "242:\n196\n", RT_FMT_AUTO,
         "nf-probe.txt:2:", "the probe and qualifying files have no ratings"},
        {"nf-fields.txt", "242:\n196,3,2005-09-06,x\n", RT_FMT_AUTO,
         "nf-fields.txt:2:", "expected 'user,rating[,date]' in item 242's block, found 4 fields"},
        {"nf-rating.txt", "242:\n196,3,2005\n196,x,2005\n", RT_FMT_AUTO,
         "nf-rating.txt:3:", "rating 'x' is not a number"},
        {"nf-as-csv.txt", "242:\n196,3,2005-09-06\n", RT_FMT_CSV,
         "nf-as-csv.txt:1:", "--format netflix reads it"},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        parsed p;
        parse(&p, scratch_file(cases[k].name, cases[k].text), cases[k].fmt);
        if (p.rc != -1 || p.err.code != RT_EXIT_INPUT || !strstr(p.err.msg, cases[k].where) ||
            !strstr(p.err.msg, cases[k].what))
            fail_msg("%s: rc %d code %d msg '%s'", cases[k].name, p.rc, p.err.code, p.err.msg);
        assert_null(strchr(p.err.msg, '\n'));
        parsed_free(&p);
    }
}

/* Long inputs cross the reader's buffer boundaries intact. */
static void test_many_lines(void **state)
{
    (void)state;
    const char *path = scratch_path("many.txt");
    FILE *fp = fopen(path, "w");
    const int n = 300000;
    for (int i = 0; i < n; i++)
        fprintf(fp, "user%d\titem%d\t%d.%d\t%d\n", i % 977, i % 1013, i % 5, i % 10, i);
    fclose(fp);
    parsed p;
    parse(&p, path, RT_FMT_AUTO);
    assert_int_equal(p.rc, 0);
    assert_int_equal(p.t.n, (uint64_t)n);
    assert_int_equal(p.rows.n, 977);
    assert_int_equal(p.cols.n, 1013);
    for (int i = 0; i < n; i += 997) {
        char u[32], it[32];
        snprintf(u, sizeof(u), "user%d", i % 977);
        snprintf(it, sizeof(it), "item%d", i % 1013);
        expect(&p, (uint64_t)i, u, it, (float)((i % 5) + (i % 10) / 10.0));
    }
    parsed_free(&p);
}

/* The id map's three paths (small values, big values, strings) share one
 * dense id space in first-appearance order; "7" and "007" are different ids. */
static void test_idmap(void **state)
{
    (void)state;
    static const char *ids[] = {"7",       "007",     "5000000", "12345678901234567",
                                "x7",      "0",       "",        "99999999999999999999",
                                "4194303", "4194304", "user7",   "-3"};
    const size_t n = sizeof(ids) / sizeof(ids[0]);
    rt_idmap m;
    rt_idmap_init(&m);
    rt_error err;
    for (int round = 0; round < 2; round++)
        for (size_t i = 0; i < n; i++) {
            uint32_t id;
            assert_int_equal(rt_idmap_intern(&m, ids[i], strlen(ids[i]), &id, &err), 0);
            assert_int_equal(id, i);
            assert_int_equal(rt_idmap_find(&m, ids[i], strlen(ids[i])), (int64_t)i);
            assert_string_equal(rt_idmap_str(&m, i), ids[i]);
        }
    assert_int_equal(m.n, n);
    assert_int_equal(rt_idmap_find(&m, "8", 1), -1);
    assert_int_equal(rt_idmap_find(&m, "70", 2), -1);
    assert_int_equal(rt_idmap_find(&m, "5000001", 7), -1);
    assert_int_equal(rt_idmap_find(&m, "user", 4), -1);
    /* many ids: tables grow and keep every mapping */
    char s[32];
    for (uint32_t k = 0; k < 200000; k++) {
        uint32_t id;
        int len = snprintf(s, sizeof(s), k % 3 == 0 ? "%u" : k % 3 == 1 ? "%u000000" : "s%u", k);
        assert_int_equal(rt_idmap_intern(&m, s, (size_t)len, &id, &err), 0);
    }
    for (uint32_t k = 0; k < 200000; k += 7) {
        int len = snprintf(s, sizeof(s), k % 3 == 0 ? "%u" : k % 3 == 1 ? "%u000000" : "s%u", k);
        int64_t id = rt_idmap_find(&m, s, (size_t)len);
        assert_true(id >= 0);
        assert_string_equal(rt_idmap_str(&m, (uint64_t)id), s);
    }
    rt_idmap_free(&m);
}

static uint32_t intern_ok(rt_idmap *m, const char *s)
{
    rt_error err;
    uint32_t id;
    assert_int_equal(rt_idmap_intern(m, s, strlen(s), &id, &err), 0);
    assert_int_equal(rt_idmap_find(m, s, strlen(s)), (int64_t)id);
    return id;
}

/* A few ids with big values get no big direct table (fuzz_ratings_csv: one
 * id near 4M in a 146-byte file made a 16 MB table), and values first kept in
 * the integer table keep their dense ids once the direct table grows over
 * them. */
static void test_idmap_direct_bound(void **state)
{
    (void)state;
    rt_idmap m;
    rt_idmap_init(&m);
    assert_int_equal(intern_ok(&m, "4000000"), 0);
    assert_int_equal(intern_ok(&m, "100000"), 1);
    assert_int_equal(intern_ok(&m, "3"), 2);
    assert_true(m.n_direct <= 4096);
    char s[32];
    for (uint32_t k = 4; k < 20000; k++) {
        snprintf(s, sizeof(s), "%u", k);
        assert_int_equal(intern_ok(&m, s), k - 1);
    }
    /* 20k ids justify a direct table over 150000, which covers 100000 */
    assert_int_equal(intern_ok(&m, "150000"), 19999);
    assert_true(m.n_direct > 150000 && m.n_direct < 4000000);
    assert_int_equal(intern_ok(&m, "100000"), 1);
    assert_int_equal(intern_ok(&m, "4000000"), 0);
    assert_int_equal(intern_ok(&m, "3"), 2);
    assert_int_equal(m.n, 20000);
    assert_int_equal(rt_idmap_find(&m, "100001", 6), -1);
    assert_string_equal(rt_idmap_str(&m, 1), "100000");
    rt_idmap_free(&m);
}

/* The ratings are opened once with the format guessed: the guess reads the
 * head the reader then goes on from (a FIFO gives its bytes once). */
static void test_opened_once(void **state)
{
    (void)state;
    static const char *const texts[] = {"1 2 3\n2 1 4\n", "1,2,3\n2,1,4\n", "1::2::3\n"};
    for (size_t k = 0; k < sizeof(texts) / sizeof(texts[0]); k++) {
        const char *path = scratch_file("once.txt", texts[k]);
        int fd = opens_watch(path);
        parsed p;
        parse(&p, path, RT_FMT_AUTO);
        int n = opens_count(fd);
        if (p.rc || n != 1)
            fail_msg("%s: rc %d, opened %d times", texts[k], p.rc, n);
        parsed_free(&p);
    }
}

int main(void)
{
    rt_log_level = RT_LOG_ERROR;
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_formats),
        cmocka_unit_test(test_libmf_and_string_ids),
        cmocka_unit_test(test_bracketed_ids_are_not_json),
        cmocka_unit_test(test_pairs_without_ratings),
        cmocka_unit_test(test_test_file_drops),
        cmocka_unit_test(test_bad_inputs),
        cmocka_unit_test(test_many_lines),
        cmocka_unit_test(test_idmap),
        cmocka_unit_test(test_idmap_direct_bound),
        cmocka_unit_test(test_opened_once),
    };
    return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
