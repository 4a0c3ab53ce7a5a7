/*
 * cmd_partition.c - `rotor partition`: read ratings, balance, write a plan.
 *
 *   rotor partition --input FILE [--test FILE | --test-fraction F]
 *                   [--format auto|triplets|csv|movielens-dat|mm|libmf]
 *                   --nodes P --threads T [--pipeline C] [--seed S]
 *                   [--balance greedy|random] --out DIR [--force] [--app mf|lda]
 *   rotor partition --verify DIR
 *
 * --app lda reads a corpus instead (tools/cmd_partition_lda.c).
 */
#include "apps/apps.h"
#include "ground/json.h"
#include "tools/commands.h"
#include "tools/partition_cmd.h"
#include "tools/sim_shape.h"
#include "tools/guard.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

static const rt_opt_choice partition_apps[] = {
    {"mf", PARTITION_MF}, {"lda", PARTITION_LDA}, {NULL, 0}};
static const rt_opt_choice balance_methods[] = {
    {"greedy", RT_BALANCE_GREEDY}, {"random", RT_BALANCE_RANDOM}, {NULL, 0}};

static const rt_opt partition_options[] = {
    RT_ENUM_OPT("app", 'a', partition_opts, app, partition_apps, "mf",
                "mf: a ratings matrix; lda: a corpus, documents x words"),
    RT_PATH_OPT("input", 'i', partition_opts, input, "FILE", NULL, 0,
                "training ratings, or the corpus (a file or, for text, a directory); '-' reads "
                "standard input"),
    RT_U32_OPT("nodes", 'n', partition_opts, nodes, "P", NULL, 1, 1048576, 0, "nodes (processes)"),
    RT_U32_OPT("threads", 't', partition_opts, threads, "T", NULL, 1, 4096, 0,
               "worker threads per node"),
    RT_STRING_OPT("pipeline", 'c', partition_opts, pipeline_arg, "C|auto", "2", 0,
                  "column blocks per worker, 1..1024 (>= 2 hides transfers behind compute); "
                  "auto: the factor `rotor simulate` predicts fastest for these sizes on the "
                  "link below (the default 2 unless another wins by more than 5%; without "
                  "--rate, 6.8e7 ratings/s (SGD-MF, k = 32) or 9e6 tokens/s per thread; without "
                  "--bytes-per-col, 132 (k = 32) or 400 (K = 100); every step costs 1 ms, "
                  "conservatively: a hand-off waiting for a busy core)"),
    RT_DOUBLE_OPT("test-fraction", 0, partition_opts, test_fraction, "F", NULL, 0, 1,
                  RT_OPT_MAX_OPEN,
                  "hold out a seeded random fraction F of the ratings (of the documents, for lda)"),
    RT_U64_OPT("seed", 's', partition_opts, seed, "S", "1", 0, 0, 0,
               "seed for the split and tie-breaking"),
    RT_ENUM_OPT("balance", 0, partition_opts, balance, balance_methods, "greedy",
                "greedy: heaviest rows first into the lightest block, columns grid-aware; random: "
                "a seeded shuffle cut into equal counts"),
    RT_PATH_OPT("out", 'o', partition_opts, out, "DIR", NULL, RT_OPT_DIR,
                "plan directory to create"),
    RT_FLAG_OPT("force", 0, partition_opts, force, "replace DIR if it already holds a plan"),
    RT_FLAG_OPT("quiet", 'q', partition_opts, quiet,
                "no progress or notes on stderr (warnings and errors only)"),
    RT_STRING_OPT("max-memory", 0, partition_opts, max_memory_arg, "SIZE", NULL, 0,
                  "refuse (exit 2, nothing written) when the peak memory estimate, printed once "
                  "the input is read, is above SIZE bytes (K, M, G, T: KiB, MiB, GiB, TiB; e.g. "
                  "512M, 4G); ratings are counted against it as they are read"),
    {0}};

static const rt_opt partition_mf_options[] = {
    RT_PATH_OPT("test", 0, partition_opts, test, "FILE", NULL, 0,
                "test ratings (users and items unseen in training are dropped)"),
    RT_ENUM_OPT("format", 'f', partition_opts, format, rt_rating_formats, "auto",
                "format of --input and --test"),
    RT_PATH_OPT("verify", 0, partition_opts, verify, "DIR", NULL, RT_OPT_DIR,
                "check an existing plan (manifest, layout, every shard) and do nothing else"),
    {0}};

/* --pipeline C (1..1024) or auto (0). */
static int parse_pipeline(const char *v, uint32_t *pipeline, rt_error *err)
{
    int c;
    if (!strcmp(v, "auto")) {
        *pipeline = 0;
        return 0;
    }
    if (rt_parse_int(v, &c))
        return rt_fail(err, RT_EXIT_INPUT, "--pipeline: want 1..1024 or auto, got '%s'", v);
    if (c < 1 || c > 1024)
        return rt_fail(err, RT_EXIT_INPUT, "--pipeline: %s is out of range 1..1024 (or auto)", v);
    *pipeline = (uint32_t)c;
    return 0;
}

/* The plan replaces --out as a whole (with --force): checked before the
 * input is read, so that a long read does not end in a refusal. */
static int check_out_place(const partition_opts *o, rt_error *err)
{
    if (rt_check_out_not_cwd(o->out, err) ||
        rt_check_input_outside(o->input, "input", o->out, err) ||
        rt_check_input_outside(o->test, "test", o->out, err) ||
        rt_check_input_outside(o->corpus.vocab, "vocab", o->out, err) ||
        rt_check_input_outside(o->corpus.stopwords, "stopwords", o->out, err))
        return -1;
    return 0;
}

/* Two passes: the first learns --app (and prints --help with both kinds'
 * options), the second reads the options of that kind.  0, 1 (help) or -1. */
static int parse(int argc, char **argv, partition_opts *o, rt_error *err)
{
    memset(o, 0, sizeof(*o));
    rt_opt_group g[] = {
        {.opts = partition_options, .dest = o},
        {.title = "ratings options (--app mf)", .opts = partition_mf_options},
        {.title = "corpus options (--app lda)", .opts = rt_corpus_option_table},
        {.title = "--pipeline auto: the link and kernel", .opts = sim_link_options}};
    int rc = rt_opts_parse(&rotor_doc_partition, g, 4, argc, argv, NULL, err);
    if (rc)
        return rc;
    /* The chosen kind fills o; the other kind's options are refused (it
     * comes last, so a name both have, --format, is the chosen one's). */
    int lda = o->app == PARTITION_LDA;
    g[1] = (rt_opt_group){.opts = lda ? rt_corpus_option_table : partition_mf_options,
                          .dest = lda ? (void *)&o->corpus : (void *)o};
    g[2] = (rt_opt_group){.opts = lda ? partition_mf_options : rt_corpus_option_table,
                          .refuse =
                              lda ? "a ratings option (--app mf)" : "a corpus option (--app lda)"};
    g[3].dest = &o->link;
    if (rt_opts_parse(&rotor_doc_partition, g, 4, argc, argv, NULL, err) ||
        parse_pipeline(o->pipeline_arg, &o->pipeline, err))
        return -1;
    if (o->max_memory_arg &&
        (rt_parse_bytes(o->max_memory_arg, &o->max_memory) || o->max_memory == 0))
        return rt_fail(err, RT_EXIT_INPUT,
                       "--max-memory: want a size in bytes above 0, with at most one of K, M, G, "
                       "T (KiB, MiB, GiB, TiB) after the digits (e.g. 512M, 4G), got '%s'",
                       o->max_memory_arg);
    if (o->quiet) /* progress and notes off; warnings and errors stay */
        rt_log_level = RT_LOG_WARN;
    if (o->verify && o->max_memory_arg)
        return rt_fail(err, RT_EXIT_INPUT,
                       "partition: --verify and --max-memory: --verify reads a plan and "
                       "estimates no memory; give one of them");
    if (o->verify)
        return 0;
    if (!o->input || !o->out || !o->nodes || !o->threads)
        return rt_fail(err, RT_EXIT_INPUT,
                       "partition: --input, --out, --nodes and --threads are required (see "
                       "'rotor partition --help')");
    if (o->test && o->test_fraction > 0)
        return rt_fail(err, RT_EXIT_INPUT,
                       "partition: --test and --test-fraction: give one of them");
    if (o->test && rt_is_stdio(o->input) && rt_is_stdio(o->test))
        return rt_fail(err, RT_EXIT_INPUT,
                       "partition: --input and --test: only one can be standard input ('-')");
    return check_out_place(o, err);
}

char *partition_command_line(int argc, char **argv)
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

int partition_plan_options(const partition_opts *o, const char *command_line, double cols,
                           double work, rt_plan_options *po, rt_error *err)
{
    *po = (rt_plan_options){.nodes = o->nodes,
                            .threads = o->threads,
                            .pipeline = o->pipeline,
                            .seed = o->seed,
                            .balance = (rt_balance)o->balance,
                            .force = o->force,
                            .command_line = command_line};
    return po->pipeline ? 0 : partition_auto_pipeline(o, cols, work, &po->pipeline, err);
}

/* A line of /proc/self/status in bytes: "VmRSS" (resident now) or "VmHWM"
 * (the peak so far, which starts afresh at exec: getrusage's ru_maxrss
 * keeps the peak of whatever ran in the process before exec, a shell, a
 * python wrapper).  ru_maxrss, an upper bound of both, where /proc is not
 * mounted; 0 when neither answers. */
static uint64_t status_bytes(const char *key)
{
    FILE *f = fopen("/proc/self/status", "r");
    char line[256];
    size_t n = strlen(key);
    unsigned long long kib = 0;
    int found = 0;
    while (f && !found && fgets(line, sizeof(line), f))
        found = !strncmp(line, key, n) && line[n] == ':' && sscanf(line + n + 1, "%llu", &kib) == 1;
    if (f)
        fclose(f);
    if (!found) {
        long k = rt_peak_rss_kib();
        kib = k > 0 ? (unsigned long long)k : 0;
    }
    return (uint64_t)kib * 1024;
}

uint64_t partition_held_bytes(void)
{
    return status_bytes("VmRSS");
}

int partition_memory_check(const partition_opts *o, const rt_plan_input *in, uint32_t pipeline,
                           rt_error *err)
{
    uint64_t W = (uint64_t)o->nodes * o->threads, B = pipeline * W;
    /* What is held now, not the peak so far: a corpus's text, loaded whole
     * to be read, is freed by now, and counting it again beside the plan
     * writer's share overstated the peak (rev28 F7).  The read's own peak
     * still bounds the estimate from below. */
    uint64_t held = partition_held_bytes(), read_peak = status_bytes("VmHWM");
    uint64_t more = rt_plan_write_memory(in, W, B);
    uint64_t peak = held + more < held ? UINT64_MAX : held + more;
    peak = peak > read_peak ? peak : read_peak;
    char peak_s[32], held_s[32], more_s[32], max_s[32], read_s[32];
    rt_format_bytes(peak, peak_s, sizeof(peak_s));
    rt_format_bytes(held, held_s, sizeof(held_s));
    rt_format_bytes(more, more_s, sizeof(more_s));
    rt_format_bytes(read_peak, read_s, sizeof(read_s));
    const char *what = in->app == RT_PLAN_LDA ? "(document, word) entries" : "ratings";
    uint64_t n = in->train->n + (in->test ? in->test->n : 0);
    if (o->max_memory && peak > o->max_memory) {
        rt_format_bytes(o->max_memory, max_s, sizeof(max_s));
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: the plan needs about %s of memory at its peak (%s held after reading "
                       "%" PRIu64 " %s, %s more to balance, sort and write %" PRIu64
                       " workers x %" PRIu64 " blocks; the read peaked at %s), more than "
                       "--max-memory %s (%s); nothing written",
                       rt_is_stdio(o->input) ? "standard input" : o->input, peak_s, held_s, n, what,
                       more_s, W, B, read_s, o->max_memory_arg, max_s);
    }
    rt_info("memory: peak estimate %s (%s held after reading %" PRIu64 " %s, %s more to balance, "
            "sort and write %" PRIu64 " workers x %" PRIu64 " blocks; the read peaked at %s)%s",
            peak_s, held_s, n, what, more_s, W, B, read_s,
            o->max_memory ? "; within --max-memory" : "");
    return 0;
}

/* One file plan.json records besides the layout, the shards and the ids
 * (which have checks of their own): whole, by size and XXH3.  Names are
 * plain file names in the plan directory. */
static int check_recorded_file(const char *dir, const char *name, json_t *rec, rt_error *err)
{
    char path[4200], hex[17];
    uint64_t bytes = 0, check = 0;
    json_t *want_bytes = json_object_get(rec, "bytes");
    const char *want_check = json_string_value(json_object_get(rec, "xxh3"));
    if (!*name || name[0] == '.' || strchr(name, '/') || !json_is_integer(want_bytes) ||
        !want_check)
        return rt_fail(err, RT_EXIT_INPUT, "%s/plan.json: \"files\": bad record of '%s'", dir,
                       name);
    if (rt_path_join(path, sizeof(path), dir, name, err) ||
        rt_file_checksum(path, &bytes, &check, err))
        return -1;
    snprintf(hex, sizeof(hex), "%016" PRIx64, check);
    if ((json_int_t)bytes != json_integer_value(want_bytes) || strcmp(hex, want_check))
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: size or checksum differs from plan.json's \"files\" record (tampered, "
                       "truncated or from another plan)",
                       path);
    return 0;
}

/* Every other file plan.json records (lda.words, vocab.txt, ...). */
static int check_recorded_files(const char *dir, rt_error *err)
{
    char mpath[4200];
    if (rt_path_join(mpath, sizeof(mpath), dir, "plan.json", err))
        return -1;
    json_t *root = rt_json_load(mpath, err);
    if (!root)
        return -1;
    const char *name;
    json_t *rec;
    int rc = 0;
    json_object_foreach(json_object_get(root, "files"), name, rec)
    {
        size_t n = strlen(name);
        int own_check = !strcmp(name, "layout.bin") || !strncmp(name, "shard-", 6) ||
                        (n > 4 && !strcmp(name + n - 4, ".ids"));
        if (!own_check && (rc = check_recorded_file(dir, name, rec, err)) != 0)
            break;
    }
    json_decref(root);
    return rc;
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
        rc = check_recorded_files(dir, err);
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

/* --max-memory as a count of ratings, for the reader's check as it reads
 * (rt_triplets.budget; 0: no limit).  Each training rating costs 12 bytes as
 * read and 32 more in the plan writer (8 n + 24 n of rt_plan_write_memory);
 * a test rating 12 and 24.  What is held already (VmRSS, the training
 * ratings' cost for a test file) comes off first; the id maps and the rest
 * are left to the exact check after the read, so a file is refused here only
 * when that check would refuse it too (at least 1: a budget of 0 is none). */
static uint64_t ratings_budget(const partition_opts *o, uint64_t n_train)
{
    if (!o->max_memory)
        return 0;
    uint64_t held = partition_held_bytes(), per = n_train ? 36 : 44;
    uint64_t train_more = 32 * n_train;
    if (o->max_memory <= held || o->max_memory - held <= train_more)
        return 1;
    return (o->max_memory - held - train_more) / per + 1;
}

static int load(const partition_opts *o, data *d, rt_error *err)
{
    d->train.budget = ratings_budget(o, 0);
    if (rt_read_ratings(o->input, (rt_rating_format)o->format, &d->rows, &d->cols, 1, &d->train,
                        &d->st_train, err) < 0)
        return -1;
    if (d->st_train.pairs)
        rt_info("%s: no rating field: every user-item pair counts 1 (implicit feedback: train "
                "with --implicit)",
                o->input);
    if (o->test) {
        d->test.budget = ratings_budget(o, d->train.n);
        if (rt_read_ratings(o->test, (rt_rating_format)o->format, &d->rows, &d->cols, 0, &d->test,
                            &d->st_test, err) < 0)
            return -1;
        if (d->st_test.ratings + d->st_test.dropped == 0) /* as an empty --input is */
            return rt_fail(err, RT_EXIT_INPUT, "%s: empty input: no test ratings (--test)",
                           o->test);
        if (d->st_test.dropped)
            rt_warn("%s: dropped %" PRIu64 " test ratings whose user or item never occurs in "
                    "training",
                    o->test, d->st_test.dropped);
    } else if (o->test_fraction > 0) {
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

static int run(int argc, char **argv, const partition_opts *o, rt_error *err)
{
    data d;
    memset(&d, 0, sizeof(d));
    int rc = load(o, &d, err);
    char *cmd = partition_command_line(argc, argv);
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
        rt_plan_options po;
        rc = partition_plan_options(o, cmd, (double)d.cols.n, (double)d.train.n, &po, err);
        po.sources = src;
        po.n_sources = o->test ? 2 : 1;
        po.counts = counts;
        po.n_counts = 1;
        po.before_commit = side_files;
        po.before_commit_ctx = &in;
        if (rc == 0)
            rc = partition_memory_check(o, &in, po.pipeline, err);
        if (rc == 0)
            rc = rt_plan_write(o->out, &in, &po, NULL, err);
    }
    free(cmd);
    data_free(&d);
    return rc;
}

int cmd_partition(int argc, char **argv)
{
    partition_opts o;
    rt_error err = {0};
    int rc = parse(argc, argv, &o, &err);
    if (rc == 1)
        return RT_EXIT_OK;
    if (rc == 0 && !o.verify) {
        rt_guard_output(o.out);
        rc = rt_guard_start(&err);
    }
    if (rc == 0) {
        if (o.app == PARTITION_LDA)
            rc = partition_lda(&o, argc, argv, &err);
        else
            rc = o.verify ? verify(o.verify, &err) : run(argc, argv, &o, &err);
    }
    if (rc < 0)
        rt_guard_die(&err);
    return RT_EXIT_OK;
}
