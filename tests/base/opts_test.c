/* opts_test.c - the option tables (ground/opts.h): types, ranges, overflow,
 * suffixes, enums, missing values, repeated options, "--x=v", short forms,
 * "--", operands among the options, required options and the generated
 * --help. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ground/ground.h"

typedef struct t_opts {
    int flag, on;
    int i;
    uint32_t u;
    uint64_t big;
    double d, frac;
    const char *s, *path;
    int mode;
} t_opts;

static const rt_opt_choice t_modes[] = {{"fast", 1}, {"slow", 2}, {"alias", 1}, {NULL, 0}};

static const rt_opt t_table[] = {
    RT_FLAG_OPT("flag", 'f', t_opts, flag, "a flag"),
    RT_UNSET_OPT("no-on", 0, t_opts, on, "turn it off"),
    RT_INT_OPT("int", 0, t_opts, i, "N", "-3", -10, 10, 0, "a small int"),
    RT_U32_OPT("rank", 'k', t_opts, u, "K", "32", 1, 4096, 0, "factor rank"),
    RT_U64_OPT("size", 0, t_opts, big, "BYTES", NULL, 0, 0, 0, "any size"),
    RT_DOUBLE_OPT("lr", 0, t_opts, d, "ETA", "0.01", 0, HUGE_VAL, RT_OPT_MIN_OPEN, "learning rate"),
    RT_DOUBLE_OPT("fraction", 0, t_opts, frac, "F", NULL, 0, 1, RT_OPT_MAX_OPEN, "a fraction"),
    RT_STRING_OPT("name", 0, t_opts, s, "NAME", NULL, 0, "a name"),
    RT_PATH_OPT("out", 'o', t_opts, path, "DIR", NULL, RT_OPT_DIR, "output directory"),
    RT_ENUM_OPT("mode", 0, t_opts, mode, t_modes, "slow", "how"),
    {0}};

static const rt_command_doc t_doc = {
    .name = "test", .usage = "[OPTIONS] [ARGS]", .about = "A command for the tests."};

/* Parse a NULL-terminated list of arguments (argv[0] = "test"). */
static int parse_list(t_opts *o, rt_error *err, int *first_arg, const char *const *args)
{
    char *argv[32] = {"test"};
    int argc = 1;
    while (args[argc - 1] && argc < 31) {
        argv[argc] = (char *)args[argc - 1];
        argc++;
    }
    memset(o, 0, sizeof(*o));
    memset(err, 0, sizeof(*err));
    rt_opt_group g = {.opts = t_table, .dest = o};
    return rt_opts_parse(&t_doc, &g, 1, argc, argv, first_arg, err);
}
#define PARSE(o, err, ...) parse_list(o, err, NULL, (const char *const[]){__VA_ARGS__, NULL})

static void expect_error(const char *want, const char *const *args)
{
    t_opts o;
    rt_error err;
    assert_int_equal(parse_list(&o, &err, NULL, args), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    if (!strstr(err.msg, want) || strchr(err.msg, '\n'))
        fail_msg("message '%s' should be one line containing '%s'", err.msg, want);
}
#define EXPECT_ERROR(want, ...) expect_error(want, (const char *const[]){__VA_ARGS__, NULL})

static void test_defaults(void **state)
{
    (void)state;
    t_opts o;
    rt_error err;
    char *argv[] = {"test"};
    rt_opt_group g = {.opts = t_table, .dest = &o};
    memset(&o, 0, sizeof(o));
    assert_int_equal(rt_opts_parse(&t_doc, &g, 1, 1, argv, NULL, &err), 0);
    assert_int_equal(o.flag, 0);
    assert_int_equal(o.on, 1);
    assert_int_equal(o.i, -3);
    assert_int_equal(o.u, 32);
    assert_true(o.d == 0.01);
    assert_int_equal(o.mode, 2);
    assert_null(o.s);
}

static void test_values_and_syntax(void **state)
{
    (void)state;
    t_opts o;
    rt_error err;
    assert_int_equal(PARSE(&o, &err, "--flag", "--no-on", "--int", "-10", "--rank=4096", "--lr",
                           "1e-3", "--name", "x y", "-o", "dir", "--mode=alias"),
                     0);
    assert_int_equal(o.flag, 1);
    assert_int_equal(o.on, 0);
    assert_int_equal(o.i, -10);
    assert_int_equal(o.u, 4096);
    assert_true(o.d == 1e-3);
    assert_string_equal(o.s, "x y");
    assert_string_equal(o.path, "dir");
    assert_int_equal(o.mode, 1);
    /* short forms: "-k 7", "-k7", flags "-f" */
    assert_int_equal(PARSE(&o, &err, "-k", "7", "-f"), 0);
    assert_int_equal(o.u, 7);
    assert_int_equal(o.flag, 1);
    assert_int_equal(PARSE(&o, &err, "-k7", "-odir2"), 0);
    assert_int_equal(o.u, 7);
    assert_string_equal(o.path, "dir2");
    /* a value may itself start with '-' */
    assert_int_equal(PARSE(&o, &err, "--name", "-x"), 0);
    assert_string_equal(o.s, "-x");
}

static void test_repeated_option_last_wins(void **state)
{
    (void)state;
    t_opts o;
    rt_error err;
    assert_int_equal(PARSE(&o, &err, "--rank", "3", "-k", "5", "--rank=9"), 0);
    assert_int_equal(o.u, 9);
}

static void test_ranges_name_the_option(void **state)
{
    (void)state;
    EXPECT_ERROR("--rank: 0 is out of range 1..4096", "--rank", "0");
    EXPECT_ERROR("--rank: 4097 is out of range 1..4096", "--rank=4097");
    EXPECT_ERROR("--rank: -1 is out of range 1..4096", "-k", "-1");
    EXPECT_ERROR("--int: 11 is out of range -10..10", "--int", "11");
    EXPECT_ERROR("--lr: 0 is out of range > 0", "--lr", "0");
    EXPECT_ERROR("--fraction: 1 is out of range [0, 1)", "--fraction", "1");
    EXPECT_ERROR("--fraction: -0.5 is out of range [0, 1)", "--fraction", "-0.5");
}

static void test_overflow_and_garbage(void **state)
{
    (void)state;
    EXPECT_ERROR("--rank: 99999999999999999999 is out of range", "--rank", "99999999999999999999");
    EXPECT_ERROR("--int: 2147483648 is out of range", "--int", "2147483648");
    EXPECT_ERROR("--size: 18446744073709551616 is out of range", "--size", "18446744073709551616");
    EXPECT_ERROR("--size: 20000000000G is out of range", "--size", "20000000000G");
    EXPECT_ERROR("--rank: '12x' is not an integer", "--rank", "12x");
    EXPECT_ERROR("--rank: '' is not an integer", "--rank", "");
    EXPECT_ERROR("--rank: ' 5' is not an integer", "--rank", " 5");
    EXPECT_ERROR("--rank: '5k' is not an integer", "--rank", "5k"); /* suffixes: u64 only */
    /* strtod would take all of these but the first three */
    static const char *const not_decimal[] = {"nan", "1e999", "0.1x", "0x1p-3", " 0.1", "infinity"};
    for (size_t i = 0; i < sizeof(not_decimal) / sizeof(not_decimal[0]); i++) {
        char want[80];
        snprintf(want, sizeof(want), "--lr: '%s' is not a finite decimal number", not_decimal[i]);
        EXPECT_ERROR(want, "--lr", not_decimal[i]);
    }
}

static void test_u64_suffixes(void **state)
{
    (void)state;
    t_opts o;
    rt_error err;
    assert_int_equal(PARSE(&o, &err, "--size", "4k"), 0);
    assert_int_equal(o.big, 4000);
    assert_int_equal(PARSE(&o, &err, "--size", "3M"), 0);
    assert_int_equal(o.big, 3000000);
    assert_int_equal(PARSE(&o, &err, "--size", "2G"), 0);
    assert_int_equal(o.big, 2000000000ull);
    assert_int_equal(PARSE(&o, &err, "--size", "18446744073709551615"), 0);
    assert_true(o.big == UINT64_MAX);
    EXPECT_ERROR("--size: '1T' is not an integer", "--size", "1T");
}

static void test_enums(void **state)
{
    (void)state;
    /* "alias" is accepted (test_values_and_syntax) but not listed */
    EXPECT_ERROR("--mode: 'medium' is not one of fast, slow (see", "--mode", "medium");
    EXPECT_ERROR("--mode: 'FAST' is not one of", "--mode=FAST");
}

static void test_missing_and_unknown(void **state)
{
    (void)state;
    EXPECT_ERROR("--rank needs a value (K)", "--rank");
    EXPECT_ERROR("--rank needs a value (K)", "--flag", "-k");
    EXPECT_ERROR("--flag takes no value", "--flag=1");
    EXPECT_ERROR("--name: the value is empty", "--name=");
    EXPECT_ERROR("unknown option --rnak: did you mean --rank?", "--rnak", "3");
    EXPECT_ERROR("unknown option --mod: did you mean --mode?", "--mod=fast");
    EXPECT_ERROR("unknown option --zzzzzz (see 'rotor test --help')", "--zzzzzz");
    EXPECT_ERROR("unknown option -q", "-q");
    EXPECT_ERROR("-f (--flag) takes no value", "-fx");
    EXPECT_ERROR("unexpected argument 'stray'", "--flag", "stray");
    EXPECT_ERROR("unexpected argument 'after'", "--", "after");
}

static void test_first_arg_and_double_dash(void **state)
{
    (void)state;
    t_opts o;
    rt_error err;
    int first;
    assert_int_equal(
        parse_list(&o, &err, &first, (const char *const[]){"-k", "2", "--", "-k", "x", NULL}), 0);
    assert_int_equal(first, 4); /* argv[4] = "-k": after "--" nothing is an option */
    assert_int_equal(o.u, 2);
    assert_int_equal(parse_list(&o, &err, &first, (const char *const[]){"-f", "cmd", "-k", NULL}),
                     0);
    assert_int_equal(first, 2);
    assert_int_equal(o.u, 32);
    assert_int_equal(parse_list(&o, &err, &first, (const char *const[]){"-f", NULL}), 0);
    assert_int_equal(first, 2); /* argc: no argument */
}

/* Operands (a command's files) anywhere among the options, in order; a
 * value that looks like a file stays the option's; "-" is an operand;
 * after "--" everything is. */
static void test_operands_anywhere(void **state)
{
    (void)state;
    char *argv[] = {"test", "a.json", "-o", "pic.svg", "b.json", "--name=x", "-",
                    "-k",   "3",      "-f", "--",      "-k",     "c.json"};
    int argc = (int)(sizeof(argv) / sizeof(argv[0]));
    const char *operands[sizeof(argv) / sizeof(argv[0])];
    int n = -1;
    t_opts o;
    memset(&o, 0, sizeof(o));
    rt_error err = {0};
    rt_opt_group g = {.opts = t_table, .dest = &o};
    assert_int_equal(rt_opts_parse_operands(&t_doc, &g, 1, argc, argv, operands, &n, &err), 0);
    assert_int_equal(n, 5);
    const char *want[] = {"a.json", "b.json", "-", "-k", "c.json"};
    for (int i = 0; i < n; i++)
        assert_string_equal(operands[i], want[i]);
    assert_string_equal(o.path, "pic.svg");
    assert_string_equal(o.s, "x");
    assert_int_equal(o.u, 3);
    assert_int_equal(o.flag, 1);
    /* options are checked as rt_opts_parse checks them */
    char *bad[] = {"test", "a.json", "--rank", "0"};
    assert_int_equal(rt_opts_parse_operands(&t_doc, &g, 1, 4, bad, operands, &n, &err), -1);
    assert_non_null(strstr(err.msg, "--rank"));
    char *missing[] = {"test", "a.json", "-o"};
    assert_int_equal(rt_opts_parse_operands(&t_doc, &g, 1, 3, missing, operands, &n, &err), -1);
    assert_non_null(strstr(err.msg, "--out needs a value"));
}

static const rt_opt t_required[] = {
    RT_PATH_OPT("plan", 0, t_opts, path, "DIR", NULL, RT_OPT_REQUIRED, "plan"), {0}};

static void test_required_and_groups(void **state)
{
    (void)state;
    t_opts a, b;
    rt_error err = {0};
    memset(&a, 0, sizeof(a));
    memset(&b, 0, sizeof(b));
    rt_opt_group g[] = {{.opts = t_required, .dest = &a},
                        {.title = "more", .opts = t_table, .dest = &b}};
    char *none[] = {"test", "-k", "3"};
    assert_int_equal(rt_opts_parse(&t_doc, g, 2, 3, none, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "--plan DIR is required"));
    char *both[] = {"test", "-k", "3", "--plan", "p"};
    assert_int_equal(rt_opts_parse(&t_doc, g, 2, 5, both, NULL, &err), 0);
    assert_string_equal(a.path, "p");
    assert_int_equal(b.u, 3);
    /* a group without dest: recognised, value skipped unchecked */
    g[1].dest = NULL;
    char *skipped[] = {"test", "--plan", "p", "--rank", "0"};
    assert_int_equal(rt_opts_parse(&t_doc, g, 2, 5, skipped, NULL, &err), 0);
    /* a refused group: its options are errors with the group's message */
    g[1].refuse = "an option of another app";
    assert_int_equal(rt_opts_parse(&t_doc, g, 2, 5, skipped, NULL, &err), -1);
    assert_non_null(strstr(err.msg, "--rank is an option of another app"));
}

/* What a print function writes, from a temporary file. */
static char *captured(FILE *fp)
{
    long len = ftell(fp);
    rewind(fp);
    char *buf = calloc((size_t)len + 1, 1);
    assert_int_equal(fread(buf, 1, (size_t)len, fp), (size_t)len);
    fclose(fp);
    return buf;
}

/* The help text. */
static char *help_text(const rt_opt_group *g, size_t n)
{
    FILE *fp = tmpfile();
    assert_non_null(fp);
    rt_opts_help(fp, &t_doc, g, n);
    return captured(fp);
}

static void test_help_generation(void **state)
{
    (void)state;
    rt_opt_group g = {.opts = t_table};
    char *h = help_text(&g, 1);
    assert_non_null(strstr(h, "usage: rotor test [OPTIONS] [ARGS]"));
    assert_non_null(strstr(h, "A command for the tests."));
    assert_non_null(strstr(h, "  -k, --rank K"));
    assert_non_null(strstr(h, "factor rank (1..4096; default 32)"));
    assert_non_null(strstr(h, "learning rate (> 0; default 0.01)"));
    assert_non_null(strstr(h, "--mode fast|slow "));
    assert_non_null(strstr(h, "  -h, --help"));
    assert_non_null(strstr(h, "      --no-on "));
    for (const char *line = h; *line; line = strchr(line, '\n') + 1) {
        size_t len = strcspn(line, "\n");
        if (len > 80)
            fail_msg("help line longer than 80 columns: %.*s", (int)len, line);
        if (!line[len])
            break;
    }
    free(h);
}

/* A table shared by commands with different defaults has no def: each
 * command sets the field before parsing, and --help (and the man page) show
 * that value, but not a sentinel outside the range, nor a value given before
 * --help.  (Before, `train --peer-timeout`'s default of 8 s showed nowhere.) */
typedef struct shared_opts {
    int timeout, port;
    double floor;
    const char *dir;
} shared_opts;

static const rt_opt shared_table[] = {
    RT_INT_OPT("timeout", 0, shared_opts, timeout, "S", NULL, 0, 100, 0, "seconds (0: never)"),
    RT_INT_OPT("port", 0, shared_opts, port, "N", NULL, 1, 255, 0, "a port"),
    RT_DOUBLE_OPT("floor", 0, shared_opts, floor, "X", NULL, 0, 0, 0, "a floor"),
    RT_PATH_OPT("dir", 0, shared_opts, dir, "DIR", NULL, 0, "a directory"),
    {0}};

static void test_help_shows_defaults_set_by_the_command(void **state)
{
    (void)state;
    shared_opts o = {.timeout = 8, .port = 0, .floor = -HUGE_VAL, .dir = NULL};
    rt_opt_group g = {.opts = shared_table, .dest = &o};
    char *h = help_text(&g, 1);
    assert_non_null(strstr(h, "seconds (0: never; 0..100; default 8)"));
    assert_non_null(strstr(h, "a port (1..255)\n"));
    assert_non_null(strstr(h, "a floor\n"));
    assert_non_null(strstr(h, "a directory\n"));
    free(h);
    FILE *fp = tmpfile();
    rt_opts_man(fp, &t_doc, &g, 1);
    char *man = captured(fp);
    assert_non_null(strstr(man, "seconds (0: never; 0..100; default 8)"));
    free(man);
    /* Another command's default, and a value given before --help. */
    o.timeout = 60;
    rt_error err;
    char *argv[] = {"test", "--timeout", "5", "--floor", "2.5", "--help"};
    FILE *saved = stdout;
    stdout = tmpfile();
    FILE *out = stdout;
    int rc = rt_opts_parse(&t_doc, &g, 1, 6, argv, NULL, &err);
    stdout = saved;
    h = captured(out);
    assert_int_equal(rc, 1);
    assert_non_null(strstr(h, "seconds (0: never; 0..100; default 60)"));
    assert_non_null(strstr(h, "a floor\n"));
    free(h);
}

/* A path option longer than RT_OPT_PATH_MAX is refused (DIR/model.json and
 * the like were built in 4096-byte buffers, cut unchecked); one at the
 * limit is taken. */
static void test_path_length(void **state)
{
    (void)state;
    static char path[RT_OPT_PATH_MAX + 2];
    memset(path, 'd', RT_OPT_PATH_MAX);
    t_opts o;
    rt_error err;
    assert_int_equal(PARSE(&o, &err, "--out", path), 0);
    assert_int_equal(strlen(o.path), RT_OPT_PATH_MAX);
    path[RT_OPT_PATH_MAX] = 'd';
    EXPECT_ERROR("--out: the path is 3840 bytes, longer than the 3839", "--out", path);
}

static void test_man_and_completion(void **state)
{
    (void)state;
    rt_opt_group g = {.opts = t_table};
    FILE *fp = tmpfile();
    rt_opts_man(fp, &t_doc, &g, 1);
    char *man = captured(fp);
    assert_non_null(strstr(man, ".TH \"ROTOR-TEST\" \"1\""));
    assert_non_null(strstr(man, ".SH OPTIONS"));
    assert_non_null(strstr(man, "\\fB\\-k\\fR, \\fB\\-\\-rank\\fR \\fIK\\fR\n"));
    assert_non_null(strstr(man, "factor rank (1..4096; default 32)"));
    free(man);
    fp = tmpfile();
    rt_opts_completion(fp, &g, 1);
    char *bash = captured(fp);
    assert_non_null(strstr(bash, "--mode) COMPREPLY=($(compgen -W \"fast slow\""));
    assert_non_null(strstr(bash, "--out | -o) COMPREPLY=($(compgen -d"));
    assert_non_null(strstr(bash, "--rank | -k) return ;;"));
    assert_non_null(strstr(bash, "compgen -W \"--help --flag --no-on --int --rank"));
    free(bash);
}

static void test_help_option_returns_1(void **state)
{
    (void)state;
    t_opts o;
    rt_error err;
    FILE *saved = stdout;
    stdout = tmpfile(); /* keep the test log clean */
    int rc1 = PARSE(&o, &err, "--rank", "3", "--help");
    int rc2 = PARSE(&o, &err, "-h");
    int rc3 = PARSE(&o, &err, "--rank", "0", "-h"); /* the bad value comes first */
    int rc4 = PARSE(&o, &err, "--help=man");
    int rc5 = PARSE(&o, &err, "--help=bash");
    int rc6 = PARSE(&o, &err, "--help=pdf");
    fclose(stdout);
    stdout = saved;
    assert_int_equal(rc1, 1);
    assert_int_equal(rc2, 1);
    assert_int_equal(rc3, -1);
    assert_int_equal(rc4, 1);
    assert_int_equal(rc5, 1);
    assert_int_equal(rc6, -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_values_and_syntax),
        cmocka_unit_test(test_repeated_option_last_wins),
        cmocka_unit_test(test_ranges_name_the_option),
        cmocka_unit_test(test_overflow_and_garbage),
        cmocka_unit_test(test_u64_suffixes),
        cmocka_unit_test(test_enums),
        cmocka_unit_test(test_missing_and_unknown),
        cmocka_unit_test(test_first_arg_and_double_dash),
        cmocka_unit_test(test_operands_anywhere),
        cmocka_unit_test(test_required_and_groups),
        cmocka_unit_test(test_help_generation),
        cmocka_unit_test(test_help_option_returns_1),
        cmocka_unit_test(test_man_and_completion),
        cmocka_unit_test(test_path_length),
        cmocka_unit_test(test_help_shows_defaults_set_by_the_command),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
