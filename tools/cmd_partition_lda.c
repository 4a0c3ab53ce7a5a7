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
#include "tools/partition_cmd.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

/* What may have emptied a corpus that has documents (a text of one-letter
 * words and stop words read as nothing, with no word of why). */
static const char *no_tokens_why(const rt_corpus *c, const partition_opts *a)
{
    if (a->corpus.min_count > 1)
        return " (--min-count dropped every word)";
    if (c->format == RT_CORPUS_TEXT)
        return " (raw text drops words of one letter and stop words; --stopwords FILE replaces "
               "the English list)";
    return "";
}

/* A (document, word) pair given on several lines of a sparse format is
 * summed, as LDA's bag of words means; said once, since a file listing a
 * pair twice may be two files concatenated. Raw text and the token-line
 * format repeat words by nature and are not warned about. */
static void warn_summed(const rt_corpus *c, const char *input)
{
    if (c->n_summed == 0 || c->format == RT_CORPUS_TEXT || c->format == RT_CORPUS_LINES)
        return;
    rt_warn("%s: %llu repeated (document, word) pairs summed into one count (first in document "
            "%s)",
            input, (unsigned long long)c->n_summed,
            rt_strpool_get(&c->doc_names, c->first_summed_doc));
}

/* How a document's count of a word came past what one line of the input
 * holds (each line's own was checked at its file:line): by the format's
 * rule for a word given more than once. */
static const char *count_summed_how(rt_corpus_format f)
{
    switch (f) {
    case RT_CORPUS_UCI:
        return "its lines summed";
    case RT_CORPUS_LIBSVM:
    case RT_CORPUS_LDAC:
        return "its word:count pairs summed";
    default: /* text, lines: a word's every occurrence counts one */
        return "its occurrences counted";
    }
}

/* Split documents, build the document id maps and the triplets. */
static int build(lda_part *p, const partition_opts *a, rt_error *err)
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
            if (c->count[i] > RT_CORPUS_MAX_COUNT)
                return rt_fail(err, RT_EXIT_INPUT,
                               "%s: document %s: a word counted %u times (%s); at most "
                               "16777216 (2^24) per document and word",
                               a->input, name, c->count[i], count_summed_how(c->format));
            if (test)
                p->test_tokens += c->count[i];
            if (rt_triplets_push(test ? &p->test : &p->train, id, c->word[i], (float)c->count[i],
                                 err))
                return -1;
        }
    }
    if (p->rows.n == 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s: no training documents", a->input);
    if (p->train.n == 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s: the training documents hold no tokens%s", a->input,
                       no_tokens_why(c, a));
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
            rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "%s: write failed", path);
            rt_outfile_abort(&of);
            return -1;
        }
    return rt_outfile_commit(&of, err);
}

/* --max-memory as the room for the corpus's read (rt_corpus_options.max_read
 * and max_pairs; 0: no limit): what is held now comes off first.  The read
 * holds its input, loaded whole, and RT_CORPUS_ENTRY_BYTES an entry as read
 * beside it (the reader counts the text once it is in: a pipe's length is
 * not known first).  A (document, word) entry once merged costs at least 44
 * until the plan is written: its 8, 12 in the plan's list and 24 in the
 * plan writer (32 a training one, see rt_plan_write_memory); a pair as read
 * (uci, libsvm, ldac) is one, a token of the lines and text formats may
 * merge with others.  The rest (names, maps) is left to the check after the
 * read, so the reader refuses only what that check would refuse too.  A
 * file larger than all the room is refused here, before it is loaded. */
static int corpus_budget(const partition_opts *a, rt_corpus_options *co, rt_error *err)
{
    co->max_read = co->max_pairs = 0;
    if (!a->max_memory)
        return 0;
    uint64_t held = partition_held_bytes(), bytes = 0;
    uint64_t room = a->max_memory > held ? a->max_memory - held : 0;
    struct stat st;
    if (!rt_is_stdio(a->input) && stat(a->input, &st) == 0 && S_ISREG(st.st_mode))
        bytes = (uint64_t)st.st_size;
    char room_s[32], held_s[32];
    rt_format_bytes(room, room_s, sizeof(room_s));
    rt_format_bytes(held, held_s, sizeof(held_s));
    if (bytes > room)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: %llu bytes, loaded whole to be read, are more than the %s that "
                       "--max-memory %s leaves room for beside the %s held; nothing written",
                       a->input, (unsigned long long)bytes, room_s, a->max_memory_arg, held_s);
    co->max_read = room ? room : 1; /* 0 is none */
    co->max_pairs = room / 44 + 1;  /* + 1: a floor, and never 0 (none) */
    rt_info("memory: %s held before reading; --max-memory %s leaves %s for the read (its text, "
            "loaded whole, and %zu bytes a word as read; at most %llu pairs of uci, libsvm and "
            "lda-c)",
            held_s, a->max_memory_arg, room_s, RT_CORPUS_ENTRY_BYTES,
            (unsigned long long)co->max_pairs);
    return 0;
}

static int run(lda_part *p, const partition_opts *a, const char *cmdline, rt_error *err)
{
    double t0 = rt_now();
    rt_corpus_options co = a->corpus;
    co.max_count = RT_CORPUS_MAX_COUNT; /* refused at the line */
    if (corpus_budget(a, &co, err) || rt_corpus_read(a->input, &co, &p->c, err))
        return -1;
    if (build(p, a, err))
        return -1;
    warn_summed(&p->c, a->input);
    rt_info("corpus: %llu documents (%llu empty, %llu held out with %llu tokens), "
            "%llu words, %llu training tokens in %.2fs",
            (unsigned long long)p->c.n_docs, (unsigned long long)p->empty_docs,
            (unsigned long long)p->test_rows.n, (unsigned long long)p->test_tokens,
            (unsigned long long)p->c.n_words, (unsigned long long)(p->c.n_tokens - p->test_tokens),
            rt_now() - t0);
    rt_plan_source src[2] = {{.role = "train",
                              .path = a->input,
                              .format = rt_corpus_format_name(p->c.format),
                              .entries = p->c.n_entries},
                             {.role = "vocab", .path = a->corpus.vocab, .format = "vocab"}};
    rt_plan_count counts[3] = {{"empty_documents", p->empty_docs},
                               {"held_out_documents", p->test_rows.n},
                               {"held_out_tokens", p->test_tokens}};
    rt_plan_input in = {.app = rt_app_lda.plan_app, /* the plans `rotor train --app lda` takes */
                        .train = &p->train,
                        .rows = &p->rows,
                        .cols = &p->c.words,
                        .test = p->test.n ? &p->test : NULL,
                        .test_rows = p->test.n ? &p->test_rows : NULL};
    rt_plan_options po;
    if (partition_plan_options(a, cmdline, (double)p->c.n_words,
                               (double)(p->c.n_tokens - p->test_tokens), &po, err))
        return -1;
    po.sources = src;
    po.n_sources = a->corpus.vocab ? 2 : 1;
    po.counts = counts;
    po.n_counts = 3;
    po.before_commit = write_side_files;
    po.before_commit_ctx = p;
    rt_plan_summary sum;
    p->in = &in;
    if (partition_memory_check(a, &in, po.pipeline, err) ||
        rt_plan_write(a->out, &in, &po, &sum, err))
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

int partition_lda(const partition_opts *a, int argc, char **argv, rt_error *err)
{
    lda_part p;
    memset(&p, 0, sizeof(p));
    rt_idmap_init(&p.rows);
    rt_idmap_init(&p.test_rows);
    rt_triplets_init(&p.train);
    rt_triplets_init(&p.test);
    char *cmdline = partition_command_line(argc, argv);
    int rc = run(&p, a, cmdline, err);
    free(cmdline);
    rt_corpus_free(&p.c);
    rt_idmap_free(&p.rows);
    rt_idmap_free(&p.test_rows);
    rt_triplets_free(&p.train);
    rt_triplets_free(&p.test);
    return rc;
}
