/* cmd_infer.c - `rotor infer`: topic mixtures of new documents under a
 * trained LDA model.  The documents are read by the partitioner's corpus
 * readers (any format `rotor partition --app lda` takes); the model is
 * opened and sampled through the hooks of the app that wrote it
 * (rt_model_open, model_infer), which writes the results under --out. */
#include "apps/apps.h"
#include "tools/commands.h"
#include "tools/guard.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef struct infer_opts {
    const char *model, *input, *out;
    uint32_t iters, threads, top;
    uint64_t seed;
    int quiet;
    rt_corpus_options corpus;
} infer_opts;

static const rt_opt infer_options[] = {
    ROTOR_MODEL_OPT(infer_opts, model, "rotor train --app lda --out"),
    RT_PATH_OPT("input", 'i', infer_opts, input, "PATH", NULL, RT_OPT_REQUIRED,
                "the new documents (a file or, for text, a directory); '-' reads standard input"),
    RT_PATH_OPT("out", 'o', infer_opts, out, "DIR", NULL, RT_OPT_REQUIRED | RT_OPT_DIR,
                "directory for doc_topic.npy, docs.txt, doc_topics.txt and infer.json"),
    RT_U32_OPT("iters", 0, infer_opts, iters, "N", "100", 1, 1000000, 0,
               "Gibbs sweeps over each document"),
    RT_U32_OPT("threads", 't', infer_opts, threads, "T", "1", 1, 4096, 0,
               "sampling threads (the result does not depend on them)"),
    RT_U64_OPT("seed", 's', infer_opts, seed, "S", "1", 0, 0, 0,
               "random seed (also picks the document-completion halves)"),
    RT_U32_OPT("top", 'n', infer_opts, top, "N", "3", 1, 65535, 0,
               "topics listed per document in doc_topics.txt"),
    RT_FLAG_OPT("quiet", 'q', infer_opts, quiet,
                "no progress or notes on stderr (warnings and errors only)"),
    {0}};

static int parse(int argc, char **argv, infer_opts *o, rt_error *err)
{
    memset(o, 0, sizeof(*o));
    rt_opt_group g[] = {
        {.opts = infer_options, .dest = o},
        {.title = "corpus options", .opts = rt_corpus_option_table, .dest = &o->corpus}};
    int rc = rt_opts_parse(&rotor_doc_infer, g, 2, argc, argv, NULL, err);
    if (rc == 0 && o->quiet)
        rt_log_level = RT_LOG_WARN;
    return rc;
}

static void report(const infer_opts *o, const rt_infer_result *r)
{
    uint64_t all = r->tokens + r->unknown_tokens;
    printf("infer: %llu documents (%llu without a model word), %llu tokens; %llu words the "
           "model lacks (%llu tokens, %.2f%%) left out\n",
           (unsigned long long)r->docs, (unsigned long long)r->empty_docs,
           (unsigned long long)r->tokens, (unsigned long long)r->unknown_words,
           (unsigned long long)r->unknown_tokens,
           all ? 100.0 * (double)r->unknown_tokens / (double)all : 0.0);
    if (r->held_tokens)
        printf("infer: document-completion perplexity %.4f (%llu held-out tokens, %u sweeps)\n",
               r->perplexity, (unsigned long long)r->held_tokens, o->iters);
    else
        printf("infer: no held-out token, no perplexity\n");
    printf("infer: wrote %s/doc_topic.npy, docs.txt, doc_topics.txt, infer.json\n", o->out);
}

/* The four files are written into OUT.tmp-PID-infer and replace --out as
 * one directory, so a reader never sees new mixtures beside old document
 * names.  A directory swapped out as a whole must hold nothing else: it is
 * new, empty, or an earlier `rotor infer --out`. */
static int check_out(const infer_opts *o, rt_error *err)
{
    return rt_check_input_outside(o->model, "model", o->out, err) ||
           rt_check_input_outside(o->input, "input", o->out, err) ||
           rt_check_input_outside(o->corpus.vocab, "vocab", o->out, err) ||
           rt_check_input_outside(o->corpus.stopwords, "stopwords", o->out, err) ||
           rt_check_whole_out_dir(o->out, "infer.json", "an earlier rotor infer --out", err);
}

/* An empty file or directory is more likely a wrong path or a failed
 * download than a batch with nothing in it: an answer of no rows, exit 0,
 * would hide that (partition and eval refuse empty inputs too). */
static int check_some_documents(const infer_opts *o, const rt_corpus *c, rt_error *err)
{
    if (c->n_docs == 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s: no documents: nothing to infer", o->input);
    return 0;
}

static int run(const infer_opts *o, rt_error *err)
{
    char tmp[4200];
    rt_model m;
    rt_corpus c;
    rt_corpus_init(&c);
    if (rt_model_open(o->model, &m, err))
        return -1;
    int rc = -1;
    if (!m.app->model_infer) {
        rt_fail(err, RT_EXIT_INPUT,
                "%s: the model is from --app %s; rotor infer needs a topic model", o->model,
                m.app->name);
        goto out;
    }
    /* The counts partition accepts, refused at their line: a 14-byte line
     * "1 3:4294967295" asked for 4e9 tokens. */
    rt_corpus_options co = o->corpus;
    co.max_count = RT_CORPUS_MAX_COUNT;
    if (check_out(o, err) ||
        rt_tmp_dir_name(o->out, (int)getpid(), "infer", tmp, sizeof(tmp), err) ||
        rt_corpus_read(o->input, &co, &c, err) || check_some_documents(o, &c, err) ||
        rt_mkdir_p(tmp, err))
        goto out;
    rt_hold_dir(tmp); /* a one-shot command: released when the process ends */
    rt_progress progress;
    rt_progress_start(&progress, "sampling documents", "docs", 1, c.n_docs);
    rt_infer_opts io = {.iters = o->iters,
                        .threads = o->threads,
                        .seed = o->seed,
                        .top = o->top,
                        .out = tmp,
                        .input = o->input,
                        .progress = &progress};
    rt_infer_result res;
    double t0 = rt_now();
    rc = m.app->model_infer(m.impl, &c, &io, &res, err);
    rt_progress_end(&progress);
    if (rc == 0)
        rc = rt_dir_replace(tmp, o->out, err);
    if (rc != 0)
        rt_remove_tree(tmp);
    if (rc == 0) {
        rt_info("infer: %llu documents x %u sweeps in %.2fs on %u threads",
                (unsigned long long)res.docs, o->iters, rt_now() - t0, o->threads);
        report(o, &res);
    }
out:
    rt_corpus_free(&c);
    rt_model_close(&m);
    return rc;
}

int cmd_infer(int argc, char **argv)
{
    rt_error err = {0};
    infer_opts o;
    int rc = parse(argc, argv, &o, &err);
    if (rc < 0)
        rt_die(&err);
    if (rc == 1)
        return RT_EXIT_OK;
    rt_guard_output(o.out);
    if (rt_guard_start(&err) < 0 || run(&o, &err))
        rt_guard_die(&err);
    return RT_EXIT_OK;
}
