/*
 * cmd_partition.c - `rotor partition`: read ratings, balance, write a plan.
 *
 *   rotor partition --input FILE [--test FILE | --test-fraction F]
 *                   [--format auto|triplets|csv|movielens-dat|mm|libmf]
 *                   --nodes P --threads T [--pipeline C] [--seed S]
 *                   [--balance greedy|random] --out DIR [--force] [--app mf|lda]
 *   rotor partition --verify DIR
 *
 * --app lda hands the whole command to cmd_partition_lda (tools/cmd_partition_lda.c).
 */
#include "apps/apps.h"
#include "tools/commands.h"
#include "partition/partition.h"

#include <getopt.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

int cmd_partition_lda(int argc, char **argv); /* tools/cmd_partition_lda.c */

static void usage(FILE *fp)
{
    fprintf(
        fp,
        "usage: rotor partition --input FILE [--test FILE | --test-fraction F]\n"
        "                       [--format FMT] --nodes P --threads T [--pipeline C]\n"
        "                       [--seed S] [--balance greedy|random] --out DIR [--force]\n"
        "                       [--app mf|lda] [--quiet]\n"
        "       rotor partition --verify DIR\n\n"
        "Cut a ratings matrix into P*T row blocks and C*P*T column blocks, balance\n"
        "them and precompute the rotation schedule; write the plan directory DIR.\n\n"
        "  --input FILE        training ratings (user item rating [timestamp]); - = stdin\n"
        "  --test FILE         test ratings (users/items unseen in training are dropped)\n"
        "  --test-fraction F   hold out a seeded random fraction F of --input instead\n"
        "  --format FMT        auto (default), triplets, csv, movielens-dat, mm, libmf\n"
        "  --nodes P           nodes (processes)\n"
        "  --threads T         worker threads per node\n"
        "  --pipeline C        column blocks per worker (default 2; >= 2 hides transfers)\n"
        "  --seed S            seed for the split and tie-breaking (default 1)\n"
        "  --balance METHOD    greedy (default: LPT rows, grid-aware columns) or random\n"
        "  --out DIR           plan directory to create\n"
        "  --force             replace DIR if it already holds a plan\n"
        "  --quiet             no progress or notes on stderr (warnings and errors only)\n"
        "  --app mf|lda        lda: documents x words (see 'rotor partition --app lda --help')\n"
        "  --verify DIR        check an existing plan (manifest, layout, every shard)\n");
}

typedef struct opts {
    const char *input, *test, *out, *verify;
    double test_fraction;
    int have_fraction, force;
    rt_rating_format format;
    rt_balance balance;
    uint32_t nodes, threads, pipeline;
    uint64_t seed;
} opts;

static int bad_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad_usage(const char *fmt, ...)
{
    char what[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(what, sizeof(what), fmt, ap);
    va_end(ap);
    fprintf(stderr, "rotor: error: partition: %s (see 'rotor partition --help')\n", what);
    return RT_EXIT_INPUT;
}

static int parse_u32(const char *s, uint32_t *out)
{
    uint64_t v;
    if (rt_parse_u64(s, &v) < 0 || v > UINT32_MAX)
        return -1;
    *out = (uint32_t)v;
    return 0;
}

/* 0 = parsed, 1 = --help printed, else an exit status. */
static int parse(int argc, char **argv, opts *o)
{
    static const struct option longopts[] = {{"input", required_argument, 0, 'i'},
                                             {"test", required_argument, 0, 't'},
                                             {"test-fraction", required_argument, 0, 'F'},
                                             {"format", required_argument, 0, 'f'},
                                             {"nodes", required_argument, 0, 'P'},
                                             {"threads", required_argument, 0, 'T'},
                                             {"pipeline", required_argument, 0, 'c'},
                                             {"seed", required_argument, 0, 's'},
                                             {"out", required_argument, 0, 'o'},
                                             {"force", no_argument, 0, 'x'},
                                             {"app", required_argument, 0, 'a'},
                                             {"balance", required_argument, 0, 'b'},
                                             {"verify", required_argument, 0, 'v'},
                                             {"quiet", no_argument, 0, 'q'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    memset(o, 0, sizeof(*o));
    o->seed = 1;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'i':
            o->input = optarg;
            break;
        case 't':
            o->test = optarg;
            break;
        case 'o':
            o->out = optarg;
            break;
        case 'v':
            o->verify = optarg;
            break;
        case 'x':
            o->force = 1;
            break;
        case 'q': /* progress and notes off; warnings and errors stay */
            rt_log_level = RT_LOG_WARN;
            break;
        case 'h':
            usage(stdout);
            return 1;
        case 'F':
            if (rt_parse_double(optarg, &o->test_fraction) < 0 || o->test_fraction < 0 ||
                o->test_fraction >= 1)
                return bad_usage("--test-fraction '%s' must be in [0, 1)", optarg);
            o->have_fraction = 1;
            break;
        case 'f':
            if (rt_rating_format_parse(optarg, &o->format) < 0)
                return bad_usage("unknown --format '%s'", optarg);
            break;
        case 'P':
            if (parse_u32(optarg, &o->nodes) < 0 || !o->nodes)
                return bad_usage("--nodes '%s' must be a positive integer", optarg);
            break;
        case 'T':
            if (parse_u32(optarg, &o->threads) < 0 || !o->threads)
                return bad_usage("--threads '%s' must be a positive integer", optarg);
            break;
        case 'c':
            if (parse_u32(optarg, &o->pipeline) < 0 || !o->pipeline)
                return bad_usage("--pipeline '%s' must be a positive integer", optarg);
            break;
        case 's':
            if (rt_parse_u64(optarg, &o->seed) < 0)
                return bad_usage("--seed '%s' must be a non-negative integer", optarg);
            break;
        case 'a':
            if (strcmp(optarg, "mf"))
                return bad_usage("unknown --app '%s' (mf or lda)", optarg);
            break;
        case 'b':
            if (!strcmp(optarg, "greedy"))
                o->balance = RT_BALANCE_GREEDY;
            else if (!strcmp(optarg, "random"))
                o->balance = RT_BALANCE_RANDOM;
            else
                return bad_usage("unknown --balance '%s' (greedy or random)", optarg);
            break;
        default:
            return bad_usage("unknown or incomplete option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return bad_usage("unexpected argument '%s'", argv[optind]);
    if (o->verify)
        return 0;
    if (!o->input)
        return bad_usage("%s is required", "--input");
    if (!o->out)
        return bad_usage("%s is required", "--out");
    if (!o->nodes || !o->threads)
        return bad_usage("%s are required", "--nodes and --threads");
    if (o->test && o->have_fraction)
        return bad_usage("%s: give one of them", "--test and --test-fraction");
    if (o->test && rt_is_stdio(o->input) && rt_is_stdio(o->test))
        return bad_usage("%s: only one can be standard input ('-')", "--input and --test");
    return 0;
}

/* The command line as typed, quoted for a shell where needed. */
static char *command_line(int argc, char **argv)
{
    size_t cap = 32;
    for (int i = 0; i < argc; i++)
        cap += strlen(argv[i]) * 4 + 3;
    char *s = malloc(cap), *p = s;
    if (!s)
        return NULL;
    p += sprintf(p, "rotor");
    for (int i = 0; i < argc; i++) {
        const char *a = argv[i];
        int plain = *a && strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
                                    "0123456789-_./=:,+@%") == strlen(a);
        *p++ = ' ';
        if (plain) {
            p += sprintf(p, "%s", a);
            continue;
        }
        *p++ = '\'';
        for (; *a; a++)
            p += *a == '\'' ? sprintf(p, "'\\''") : sprintf(p, "%c", *a);
        *p++ = '\'';
        *p = '\0';
    }
    return s;
}

static int verify(const char *dir, rt_error *err)
{
    rt_plan plan;
    if (rt_plan_open(dir, &plan, err) < 0)
        return -1;
    uint64_t train = 0, test = 0, heldout = 0;
    int has_heldout = 0;
    for (uint32_t w = 0; w < plan.workers; w++) {
        rt_shard sh;
        if (rt_shard_open(&plan, w, &sh, err) < 0) {
            rt_plan_close(&plan);
            return -1;
        }
        train += sh.train_off[plan.blocks];
        test += sh.test_off[plan.blocks];
        heldout += sh.n_test_rows;
        has_heldout |= sh.test_row_ids != NULL;
        rt_shard_close(&sh);
    }
    int rc = 0;
    if (train != plan.nnz_train || test != plan.nnz_test)
        rc = rt_fail(err, RT_EXIT_INPUT,
                     "%s: shards hold %" PRIu64 " / %" PRIu64 " entries, plan.json says %" PRIu64
                     " / %" PRIu64,
                     dir, train, test, plan.nnz_train, plan.nnz_test);
    const char *which[] = {"rows", "cols", "test_rows"};
    for (int i = 0; rc == 0 && i < 2 + has_heldout; i++) {
        char **ids;
        uint64_t n;
        rc = rt_plan_read_ids(&plan, which[i], &ids, &n, err);
        if (rc == 0)
            free(ids);
        if (rc == 0 && i == 2 && n != heldout)
            rc = rt_fail(err, RT_EXIT_INPUT,
                         "%s/test_rows.ids: %" PRIu64 " ids, the shards hold %" PRIu64
                         " held-out rows",
                         dir, n, heldout);
    }
    if (rc == 0)
        printf("plan %016" PRIx64 " ok: app %s, %" PRIu64 " x %" PRIu64 ", %u workers "
               "(%u nodes x %u threads), %u blocks, %" PRIu64 " train / %" PRIu64 " test entries\n",
               plan.plan_id, rt_plan_app_name(plan.app), plan.n_rows, plan.n_cols, plan.workers,
               plan.nodes, plan.threads, plan.blocks, train, test);
    rt_plan_close(&plan);
    return rc;
}

typedef struct data {
    rt_idmap rows, cols;
    rt_triplets train, test;
    rt_ratings_stats st_train, st_test;
    uint64_t dropped_split;
} data;

static void data_free(data *d)
{
    rt_idmap_free(&d->rows), rt_idmap_free(&d->cols);
    rt_triplets_free(&d->train), rt_triplets_free(&d->test);
}

static int load(const opts *o, data *d, rt_error *err)
{
    if (rt_read_ratings(o->input, o->format, &d->rows, &d->cols, 1, &d->train, &d->st_train, err) <
        0)
        return -1;
    if (o->test) {
        if (rt_read_ratings(o->test, o->format, &d->rows, &d->cols, 0, &d->test, &d->st_test, err) <
            0)
            return -1;
        if (d->st_test.dropped)
            rt_warn("%s: dropped %" PRIu64 " test ratings whose user or item never occurs in "
                    "training",
                    o->test, d->st_test.dropped);
    } else if (o->have_fraction) {
        if (rt_triplets_split(&d->train, &d->rows, &d->cols, o->test_fraction, o->seed, &d->test,
                              &d->dropped_split, err) < 0)
            return -1;
        if (d->dropped_split)
            rt_warn("%s: dropped %" PRIu64 " held-out ratings whose user or item has no "
                    "training rating left",
                    o->input, d->dropped_split);
    }
    return 0;
}

/* rt_plan_options.before_commit: the side files of the apps that train on
 * the plan (ctx = the plan input). */
static int side_files(const char *dir, uint64_t plan_id, void *ctx, rt_error *err)
{
    return rt_apps_plan_side_files(dir, plan_id, ctx, err);
}

static int run(int argc, char **argv, const opts *o, rt_error *err)
{
    data d;
    memset(&d, 0, sizeof(d));
    int rc = load(o, &d, err);
    char *cmd = command_line(argc, argv);
    if (rc == 0) {
        rt_plan_source src[2] = {
            {"train", o->input, rt_rating_format_name(d.st_train.format), d.st_train.lines,
             d.train.n},
            {"test", o->test, rt_rating_format_name(d.st_test.format), d.st_test.lines, d.test.n},
        };
        rt_plan_count counts[] = {
            {"test_unknown_user_or_item", d.st_test.dropped + d.dropped_split},
        };
        rt_plan_input in = {.app = RT_PLAN_MF,
                            .train = &d.train,
                            .rows = &d.rows,
                            .cols = &d.cols,
                            .test = &d.test};
        rt_plan_options po = {.nodes = o->nodes,
                              .threads = o->threads,
                              .pipeline = o->pipeline,
                              .seed = o->seed,
                              .balance = o->balance,
                              .force = o->force,
                              .command_line = cmd,
                              .sources = src,
                              .n_sources = o->test ? 2 : 1,
                              .counts = counts,
                              .n_counts = 1,
                              .before_commit = side_files,
                              .before_commit_ctx = &in};
        rc = rt_plan_write(o->out, &in, &po, NULL, err);
    }
    free(cmd);
    data_free(&d);
    return rc;
}

int cmd_partition(int argc, char **argv)
{
    for (int i = 1; i < argc; i++)
        if ((!strcmp(argv[i], "--app") && i + 1 < argc && !strcmp(argv[i + 1], "lda")) ||
            !strcmp(argv[i], "--app=lda"))
            return cmd_partition_lda(argc, argv);
    opts o;
    int st = parse(argc, argv, &o);
    if (st)
        return st == 1 ? RT_EXIT_OK : st;
    rt_error err = {0};
    int rc = o.verify ? verify(o.verify, &err) : run(argc, argv, &o, &err);
    if (rc < 0) {
        fprintf(stderr, "rotor: error: %s\n", err.msg);
        return err.code ? err.code : RT_EXIT_RUNTIME;
    }
    return RT_EXIT_OK;
}
