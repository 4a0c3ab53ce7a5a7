/* cmd_partition_lda.c - `rotor partition --app lda`: read a corpus, hold out
 * a seeded fraction of documents for document completion, and write a plan
 * whose rows are documents and columns are words (value = count).
 *
 * The plan writer deals documents to workers and words to word blocks
 * balanced by tokens.  Into the plan we also write the side files of the
 * apps that train on it (rt_apps_plan_side_files: the LDA app's lda.words)
 * and vocab.txt (the vocabulary, one word per line = cols.ids).  They go into
 * the writer's temporary directory before it is renamed into place (see
 * rt_plan_options.before_commit), so they are covered by plan.json's "files"
 * and a failure leaves no plan behind. */
#include "apps/apps.h"
#include "partition/corpus.h"
#include "partition/partition.h"

#include <getopt.h>
#include <stdlib.h>
#include <string.h>

int cmd_partition_lda(int argc, char **argv);

static const char usage_text[] =
    "usage: rotor partition --app lda --input PATH --nodes P --threads T --out DIR\n"
    "                       [--pipeline C] [--test-fraction F] [--seed S] [--force]\n"
    "                       [--format auto|uci|lines|libsvm|ldac|text] [--vocab FILE]\n"
    "                       [--stopwords FILE] [--min-count N] [--balance greedy|random]\n"
    "                       [--quiet]\n"
    "\n"
    "formats: uci     docword.*.txt (D, W, NNZ header; 'doc word count', 1-based)\n"
    "         lines   'docid docid w1 w2 ...' (Yahoo!LDA / WarpLDA / STRADS)\n"
    "         libsvm  'docid w:count ...'\n"
    "         ldac    'N w:count ...' (Blei's lda-c; 0-based ids into --vocab)\n"
    "         text    raw text: one document per line, or a directory of files\n";

typedef struct lda_part_args {
    const char *input, *out;
    rt_corpus_options copt;
    uint32_t nodes, threads, pipeline;
    double test_fraction;
    uint64_t seed;
    rt_balance balance;
    int force;
} lda_part_args;

static int parse_u32(const char *name, const char *s, uint32_t lo, uint32_t *out, rt_error *err)
{
    uint64_t v;
    if (rt_parse_u64(s, &v) || v < lo || v > UINT32_MAX)
        return rt_fail(err, RT_EXIT_INPUT, "--%s: expected an integer >= %u, got '%s'", name, lo,
                       s);
    *out = (uint32_t)v;
    return 0;
}

static int parse_args(int argc, char **argv, lda_part_args *a, rt_error *err)
{
    static const struct option longopts[] = {{"app", required_argument, 0, 'a'},
                                             {"input", required_argument, 0, 'i'},
                                             {"nodes", required_argument, 0, 'P'},
                                             {"threads", required_argument, 0, 'T'},
                                             {"pipeline", required_argument, 0, 'c'},
                                             {"out", required_argument, 0, 'o'},
                                             {"test-fraction", required_argument, 0, 'f'},
                                             {"seed", required_argument, 0, 's'},
                                             {"format", required_argument, 0, 'F'},
                                             {"vocab", required_argument, 0, 'v'},
                                             {"stopwords", required_argument, 0, 'S'},
                                             {"min-count", required_argument, 0, 'm'},
                                             {"balance", required_argument, 0, 'b'},
                                             {"force", no_argument, 0, 'x'},
                                             {"quiet", no_argument, 0, 'q'},
                                             {"help", no_argument, 0, 'h'},
                                             {0, 0, 0, 0}};
    memset(a, 0, sizeof(*a));
    a->seed = 1;
    a->pipeline = 2;
    optind = 1;
    opterr = 0;
    int ch;
    while ((ch = getopt_long(argc, argv, "", longopts, NULL)) != -1) {
        switch (ch) {
        case 'a':
            if (strcmp(optarg, "lda"))
                return rt_fail(err, RT_EXIT_INPUT, "--app %s: this reader is for --app lda",
                               optarg);
            break;
        case 'i':
            a->input = optarg;
            break;
        case 'o':
            a->out = optarg;
            break;
        case 'P':
            if (parse_u32("nodes", optarg, 1, &a->nodes, err))
                return -1;
            break;
        case 'T':
            if (parse_u32("threads", optarg, 1, &a->threads, err))
                return -1;
            break;
        case 'c':
            if (parse_u32("pipeline", optarg, 1, &a->pipeline, err))
                return -1;
            break;
        case 'f':
            if (rt_parse_double(optarg, &a->test_fraction) || a->test_fraction < 0 ||
                a->test_fraction >= 1)
                return rt_fail(err, RT_EXIT_INPUT, "--test-fraction: expected [0, 1), got '%s'",
                               optarg);
            break;
        case 's':
            if (rt_parse_u64(optarg, &a->seed))
                return rt_fail(err, RT_EXIT_INPUT, "--seed: expected an integer, got '%s'", optarg);
            break;
        case 'F':
            a->copt.format = rt_corpus_format_parse(optarg);
            if ((int)a->copt.format < 0)
                return rt_fail(err, RT_EXIT_INPUT, "--format: unknown corpus format '%s'", optarg);
            break;
        case 'v':
            a->copt.vocab = optarg;
            break;
        case 'S':
            a->copt.stopwords = optarg;
            break;
        case 'm':
            if (rt_parse_u64(optarg, &a->copt.min_count))
                return rt_fail(err, RT_EXIT_INPUT, "--min-count: expected an integer, got '%s'",
                               optarg);
            break;
        case 'b':
            if (!strcmp(optarg, "greedy"))
                a->balance = RT_BALANCE_GREEDY;
            else if (!strcmp(optarg, "random"))
                a->balance = RT_BALANCE_RANDOM;
            else
                return rt_fail(err, RT_EXIT_INPUT, "--balance: expected greedy or random");
            break;
        case 'x':
            a->force = 1;
            break;
        case 'q': /* progress and notes off; warnings and errors stay */
            rt_log_level = RT_LOG_WARN;
            break;
        case 'h':
            fputs(usage_text, stdout);
            exit(RT_EXIT_OK);
        default:
            return rt_fail(err, RT_EXIT_INPUT, "unknown or incomplete option '%s' (see --help)",
                           argv[optind - 1]);
        }
    }
    if (optind < argc)
        return rt_fail(err, RT_EXIT_INPUT, "unexpected argument '%s'", argv[optind]);
    if (!a->input || !a->out || !a->nodes || !a->threads)
        return rt_fail(err, RT_EXIT_INPUT, "--input, --out, --nodes and --threads are required");
    return 0;
}

/* Is document d held out?  A seeded hash, so the split never depends on
 * anything but (seed, d). */
static int held_out(uint64_t seed, uint64_t d, double fraction)
{
    if (fraction <= 0)
        return 0;
    uint64_t h = rt_hash64(rt_hash64(seed ^ 0x1da7e57ULL) + d);
    return (double)(h >> 11) * 0x1.0p-53 < fraction;
}

typedef struct lda_part {
    rt_corpus c;
    rt_idmap rows, test_rows; /* columns: the corpus's word map */
    rt_triplets train, test;
    uint64_t empty_docs, test_tokens;
    const rt_plan_input *in; /* what the plan is written from */
} lda_part;

static int intern_doc(rt_idmap *m, const char *name, const char *input, uint32_t *id, rt_error *err)
{
    uint64_t before = m->n;
    if (rt_idmap_intern(m, name, strlen(name), id, err))
        return -1;
    if (m->n == before)
        return rt_fail(err, RT_EXIT_INPUT, "%s: document id '%s' occurs twice", input, name);
    return 0;
}

/* Split documents, build the document id maps and the triplets. */
static int build(lda_part *p, const lda_part_args *a, rt_error *err)
{
    rt_corpus *c = &p->c;
    for (uint64_t d = 0; d < c->n_docs; d++) {
        const char *name = rt_strpool_get(&c->doc_names, d);
        int test = held_out(a->seed, d, a->test_fraction);
        uint32_t id;
        if (intern_doc(test ? &p->test_rows : &p->rows, name, a->input, &id, err))
            return -1;
        if (c->doc_off[d] == c->doc_off[d + 1])
            p->empty_docs++;
        for (uint64_t i = c->doc_off[d]; i < c->doc_off[d + 1]; i++) {
            if (c->count[i] > (1u << 24))
                return rt_fail(err, RT_EXIT_INPUT, "%s: document %s: count %u too large", a->input,
                               name, c->count[i]);
            if (test)
                p->test_tokens += c->count[i];
            if (rt_triplets_push(test ? &p->test : &p->train, id, c->word[i], (float)c->count[i],
                                 err))
                return -1;
        }
    }
    if (p->rows.n == 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s: no training documents", a->input);
    return 0;
}

/* rt_plan_options.before_commit: the apps' side files (lda.words) and
 * vocab.txt into the plan's temporary directory. */
static int write_side_files(const char *dir, uint64_t plan_id, void *ctx, rt_error *err)
{
    const lda_part *p = ctx;
    char path[4200];
    if (rt_apps_plan_side_files(dir, plan_id, p->in, err))
        return -1;
    rt_outfile of;
    if (rt_path_join(path, sizeof(path), dir, "vocab.txt", err) || rt_outfile_open(&of, path, err))
        return -1;
    for (uint64_t w = 0; w < p->c.n_words; w++)
        if (fprintf(of.fp, "%s\n", rt_idmap_str(&p->c.words, w)) < 0) {
            rt_outfile_abort(&of);
            return rt_fail(err, RT_EXIT_RUNTIME, "%s: write failed", path);
        }
    return rt_outfile_commit(&of, err);
}

static int run(lda_part *p, const lda_part_args *a, int argc, char **argv, rt_error *err)
{
    double t0 = rt_now();
    if (rt_corpus_read(a->input, &a->copt, &p->c, err))
        return -1;
    if (build(p, a, err))
        return -1;
    rt_info("corpus: %llu documents (%llu empty, %llu held out with %llu tokens), "
            "%llu words, %llu training tokens in %.2fs",
            (unsigned long long)p->c.n_docs, (unsigned long long)p->empty_docs,
            (unsigned long long)p->test_rows.n, (unsigned long long)p->test_tokens,
            (unsigned long long)p->c.n_words, (unsigned long long)(p->c.n_tokens - p->test_tokens),
            rt_now() - t0);
    char cmdline[4096];
    size_t len = 0;
    cmdline[0] = '\0';
    for (int i = 0; i < argc && len + 1 < sizeof(cmdline); i++)
        len +=
            (size_t)snprintf(cmdline + len, sizeof(cmdline) - len, "%s%s", i ? " " : "", argv[i]);
    rt_plan_source src[2] = {{.role = "train",
                              .path = a->input,
                              .format = rt_corpus_format_name(p->c.format),
                              .entries = p->c.n_entries},
                             {.role = "vocab", .path = a->copt.vocab, .format = "vocab"}};
    rt_plan_count counts[3] = {{"empty_documents", p->empty_docs},
                               {"held_out_documents", p->test_rows.n},
                               {"held_out_tokens", p->test_tokens}};
    rt_plan_input in = {.app = rt_app_lda.plan_app, /* the plans `rotor train --app lda` takes */
                        .train = &p->train,
                        .rows = &p->rows,
                        .cols = &p->c.words,
                        .test = p->test.n ? &p->test : NULL,
                        .test_rows = p->test.n ? &p->test_rows : NULL};
    rt_plan_options po = {.nodes = a->nodes,
                          .threads = a->threads,
                          .pipeline = a->pipeline,
                          .seed = a->seed,
                          .balance = a->balance,
                          .force = a->force,
                          .command_line = cmdline,
                          .sources = src,
                          .n_sources = a->copt.vocab ? 2 : 1,
                          .counts = counts,
                          .n_counts = 3,
                          .before_commit = write_side_files,
                          .before_commit_ctx = p};
    rt_plan_summary sum;
    p->in = &in;
    if (rt_plan_write(a->out, &in, &po, &sum, err))
        return -1;
    printf("plan %s: %u workers, %u blocks, %llu documents, %llu words, %llu tokens; "
           "token imbalance (max/mean) docs %.3f words %.3f cells %.3f "
           "(random would give %.3f %.3f %.3f)\n",
           a->out, sum.workers, sum.blocks, (unsigned long long)p->rows.n,
           (unsigned long long)p->c.n_words, (unsigned long long)sum.tokens_train,
           sum.imbalance.row_blocks, sum.imbalance.col_blocks, sum.imbalance.cells,
           sum.random_imbalance.row_blocks, sum.random_imbalance.col_blocks,
           sum.random_imbalance.cells);
    return 0;
}

int cmd_partition_lda(int argc, char **argv)
{
    rt_error err = {0};
    lda_part_args a;
    if (parse_args(argc, argv, &a, &err))
        rt_die(&err);
    lda_part p;
    memset(&p, 0, sizeof(p));
    rt_idmap_init(&p.rows);
    rt_idmap_init(&p.test_rows);
    rt_triplets_init(&p.train);
    rt_triplets_init(&p.test);
    int rc = run(&p, &a, argc, argv, &err);
    rt_corpus_free(&p.c);
    rt_idmap_free(&p.rows);
    rt_idmap_free(&p.test_rows);
    rt_triplets_free(&p.train);
    rt_triplets_free(&p.test);
    if (rc)
        rt_die(&err);
    return RT_EXIT_OK;
}
