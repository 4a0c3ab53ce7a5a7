/* gen_lda.c - `rotor gen lda`: a corpus drawn from the LDA generative
 * process, with the true topics written beside it.
 *
 *   phi_k ~ Dirichlet(beta) over V words         (k = 1..K)
 *   theta_d ~ Dirichlet(alpha) over K topics     (d = 1..D)
 *   N_d = L (fixed) or ~ Poisson(L)
 *   each token: z ~ theta_d, w ~ phi_z
 *
 * Output: FILE in UCI docword format (rotor partition --app lda reads it),
 * FILE.topics.npy (float32 K x V: the true phi; column j = word id j + 1),
 * FILE.mixtures.npy (float32 D x K: the true theta; row d = document d + 1)
 * and FILE.vocab.txt (word names w1 .. wV).  Everything depends only on
 * the seed.  FILE "-" (standard output) or a device: the corpus alone. */
#include "apps/apps.h"
#include "ground/ground.h"
#include "ground/progress.h"
#include "tools/commands.h"
#include "tools/gen.h"
#include "tools/guard.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

int gen_lda_main(int argc, char **argv);

typedef struct gen_args {
    uint64_t docs, vocab, topics, len, seed;
    double alpha, beta;
    int fixed;
    const char *out;
    int companions; /* gen_companions(out): FILE.topics.npy ... beside it */
} gen_args;

static const rt_opt_choice len_dists[] = {{"poisson", 0}, {"fixed", 1}, {NULL, 0}};

static const rt_opt gen_lda_options[] = {
    RT_U64_OPT("docs", 0, gen_args, docs, "D", NULL, 1, UINT32_MAX - 1, RT_OPT_REQUIRED,
               "documents"),
    RT_U64_OPT("vocab", 0, gen_args, vocab, "V", NULL, 1, UINT32_MAX - 1, RT_OPT_REQUIRED,
               "vocabulary size"),
    RT_U64_OPT("topics", 'k', gen_args, topics, "K", NULL, 2, RT_LDA_MAX_TOPICS, RT_OPT_REQUIRED,
               "topics"),
    RT_U64_OPT("doc-len", 0, gen_args, len, "L", NULL, 1, 1e9, RT_OPT_REQUIRED,
               "tokens per document (the mean, for poisson lengths)"),
    /* Priors at most RT_LDA_MAX_PRIOR, as for train --app lda: at 1e308 the
     * Dirichlet draws overflowed and every document was one word, exit 0. */
    RT_DOUBLE_OPT("alpha", 0, gen_args, alpha, "A", "0.1", 0, RT_LDA_MAX_PRIOR, RT_OPT_MIN_OPEN,
                  "document-topic Dirichlet parameter"),
    RT_DOUBLE_OPT("beta", 0, gen_args, beta, "B", "0.01", 0, RT_LDA_MAX_PRIOR, RT_OPT_MIN_OPEN,
                  "topic-word Dirichlet parameter"),
    RT_ENUM_OPT("len-dist", 0, gen_args, fixed, len_dists, "poisson", "document lengths"),
    RT_U64_OPT("seed", 's', gen_args, seed, "S", "1", 0, 0, 0, "random seed"),
    RT_PATH_OPT("out", 'o', gen_args, out, "FILE", NULL, RT_OPT_REQUIRED, "corpus to write"),
    {0}};

/* 0, 1 (help printed) or -1. */
static int parse(int argc, char **argv, gen_args *g, rt_error *err)
{
    memset(g, 0, sizeof(*g));
    rt_opt_group group = {.opts = gen_lda_options, .dest = g};
    return rt_opts_parse(&rotor_doc_gen_lda, &group, 1, argc, argv, NULL, err);
}

/* Dirichlet(a) of dimension n into p (double), via normalised gammas. */
static void dirichlet(rt_rng *rng, double a, double *p, uint64_t n)
{
    double sum = 0;
    for (uint64_t i = 0; i < n; i++) {
        p[i] = rt_rng_gamma(rng, a);
        /* tiny shapes can underflow to 0 everywhere: keep a floor */
        if (p[i] < 1e-300)
            p[i] = 1e-300;
        sum += p[i];
    }
    for (uint64_t i = 0; i < n; i++)
        p[i] /= sum;
}

static uint64_t poisson(rt_rng *rng, double mean)
{
    if (mean > 60) { /* normal approximation, rounded */
        double x = mean + sqrt(mean) * rt_rng_normal(rng);
        return x < 0 ? 0 : (uint64_t)(x + 0.5);
    }
    double l = exp(-mean), p = 1;
    uint64_t k = 0;
    do {
        k++;
        p *= rt_rng_uniform(rng);
    } while (p > l);
    return k - 1;
}

/* What one run draws: the true topics, and the scratch of one document. */
typedef struct lda_draw {
    const gen_args *g;
    double *phi, *cum;       /* K x V: the topics and their running sums */
    float *phif, *thetaf;    /* K x V and D x K: what the .npy files hold */
    double *theta, *tcum;    /* K: a document's mixture and its running sums */
    uint32_t *counts, *seen; /* V: a document's word counts and the words it has */
} lda_draw;

static void draw_free(lda_draw *s)
{
    free(s->phi);
    free(s->cum);
    free(s->phif);
    free(s->thetaf);
    free(s->theta);
    free(s->tcum);
    free(s->counts);
    free(s->seen);
}

static int draw_alloc(lda_draw *s, const gen_args *g, rt_error *err)
{
    const uint64_t K = g->topics, V = g->vocab;
    memset(s, 0, sizeof(*s));
    s->g = g;
    /* the big ones named when they do not fit (--vocab 4e9 said only "out of memory") */
    if (!(s->thetaf = rt_alloc_array(g->docs * K, sizeof(float), g->out, "docs x topics", err)) ||
        !(s->phi = rt_alloc_array(K * V, sizeof(double), g->out, "topics x words", err)) ||
        !(s->cum = rt_alloc_array(K * V, sizeof(double), g->out, "topics x words", err)) ||
        !(s->phif = rt_alloc_array(K * V, sizeof(float), g->out, "topics x words", err)) ||
        !(s->counts = rt_calloc_array(V, sizeof(uint32_t), g->out, "words", err)) ||
        !(s->seen = rt_alloc_array(V, sizeof(uint32_t), g->out, "words", err)))
        return -1;
    s->theta = malloc(K * sizeof(double));
    s->tcum = malloc(K * sizeof(double));
    if (!s->theta || !s->tcum) /* K <= RT_LDA_MAX_TOPICS: the others are checked above */
        return rt_fail(err, RT_EXIT_RUNTIME, "gen lda: out of memory");
    return 0;
}

/* phi_k ~ Dirichlet(beta), from the run's own stream. */
static void draw_topics(lda_draw *s)
{
    const uint64_t K = s->g->topics, V = s->g->vocab;
    rt_rng rng;
    rt_rng_seed(&rng, s->g->seed, 0x70b1c5);
    for (uint64_t k = 0; k < K; k++) {
        dirichlet(&rng, s->g->beta, s->phi + k * V, V);
        double acc = 0;
        for (uint64_t w = 0; w < V; w++) {
            acc += s->phi[k * V + w];
            s->cum[k * V + w] = acc;
            s->phif[k * V + w] = (float)s->phi[k * V + w];
        }
        s->cum[k * V + V - 1] = 1.0;
    }
}

/* Words in increasing order (insertion sort: a document has few). */
static void sort_words(uint32_t *w, uint64_t n)
{
    for (uint64_t i = 1; i < n; i++)
        for (uint64_t j = i; j > 0 && w[j - 1] > w[j]; j--) {
            uint32_t t = w[j];
            w[j] = w[j - 1];
            w[j - 1] = t;
        }
}

/* Document d from its own stream (so each pass draws it alike): its mixture
 * into thetaf's row d, its distinct words into seen (returned: how many, in
 * increasing order) with their counts in counts, which the caller zeroes. */
static uint64_t draw_document(lda_draw *s, uint64_t d)
{
    const uint64_t K = s->g->topics, V = s->g->vocab;
    rt_rng rng;
    rt_rng_seed(&rng, s->g->seed, 0x1da0000000ULL + d);
    dirichlet(&rng, s->g->alpha, s->theta, K);
    double acc = 0;
    for (uint64_t k = 0; k < K; k++) {
        s->tcum[k] = (acc += s->theta[k]);
        s->thetaf[d * K + k] = (float)s->theta[k];
    }
    s->tcum[K - 1] = 1.0;
    uint64_t len = s->g->fixed ? s->g->len : poisson(&rng, (double)s->g->len), n = 0;
    for (uint64_t i = 0; i < len; i++) {
        uint64_t k = rt_search_cdf(s->tcum, K, rt_rng_uniform(&rng));
        uint64_t w = rt_search_cdf(s->cum + k * V, V, rt_rng_uniform(&rng));
        if (s->counts[w]++ == 0)
            s->seen[n++] = (uint32_t)w;
    }
    sort_words(s->seen, n);
    return n;
}

/* The corpus in UCI docword form.  Two passes over the same documents:
 * first the number of distinct (doc, word) pairs for the header, then the
 * triples. */
static int write_corpus(lda_draw *s, uint64_t *nnz_out, rt_error *err)
{
    const gen_args *g = s->g;
    rt_outfile of = {0};
    uint64_t nnz = 0;
    /* both passes draw every document: one bar over the two */
    rt_progress progress;
    rt_progress_start(&progress, "drawing documents (two passes)", "docs", 1, 2 * g->docs);
    for (int pass = 0; pass < 2; pass++) {
        if (pass == 1) {
            if (rt_outfile_open(&of, g->out, err))
                return -1;
            fprintf(of.fp, "%llu\n%llu\n%llu\n", (unsigned long long)g->docs,
                    (unsigned long long)g->vocab, (unsigned long long)nnz);
        }
        for (uint64_t d = 0; d < g->docs; d++) {
            uint64_t n = draw_document(s, d);
            for (uint64_t i = 0; i < n; i++) {
                if (pass == 1)
                    fprintf(of.fp, "%llu %u %u\n", (unsigned long long)d + 1, s->seen[i] + 1,
                            s->counts[s->seen[i]]);
                s->counts[s->seen[i]] = 0;
            }
            nnz += pass == 0 ? n : 0;
            rt_progress_set(&progress, pass * g->docs + d + 1);
        }
    }
    rt_progress_end(&progress);
    if (rt_write_check(of.fp, of.path, err) || rt_outfile_commit(&of, err)) {
        rt_outfile_abort(&of);
        return -1;
    }
    *nnz_out = nnz;
    return 0;
}

/* FILE.topics.npy, FILE.mixtures.npy and FILE.vocab.txt beside the corpus. */
static int write_companions(const lda_draw *s, rt_error *err)
{
    const gen_args *g = s->g;
    char path[4200];
    rt_outfile of;
    snprintf(path, sizeof(path), "%s.topics.npy", g->out);
    if (rt_npy_write_f32(path, s->phif, g->topics, g->vocab, g->vocab, err))
        return -1;
    snprintf(path, sizeof(path), "%s.mixtures.npy", g->out);
    if (rt_npy_write_f32(path, s->thetaf, g->docs, g->topics, g->topics, err))
        return -1;
    snprintf(path, sizeof(path), "%s.vocab.txt", g->out);
    if (rt_outfile_open(&of, path, err))
        return -1;
    for (uint64_t w = 0; w < g->vocab; w++)
        fprintf(of.fp, "w%llu\n", (unsigned long long)w + 1);
    if (rt_write_check(of.fp, of.path, err) || rt_outfile_commit(&of, err)) {
        rt_outfile_abort(&of);
        return -1;
    }
    return 0;
}

static int generate(const gen_args *g, rt_error *err)
{
    lda_draw s;
    uint64_t nnz = 0;
    int rc = draw_alloc(&s, g, err);
    if (rc == 0) {
        draw_topics(&s);
        rc = write_corpus(&s, &nnz, err);
    }
    if (rc == 0 && g->companions)
        rc = write_companions(&s, err);
    draw_free(&s);
    if (rc == 0) /* on stderr, as gen mf's: with --out - standard output is the corpus */
        rt_info("gen lda: %llu documents, %llu words, %llu topics, %llu (doc, word) pairs -> %s",
                (unsigned long long)g->docs, (unsigned long long)g->vocab,
                (unsigned long long)g->topics, (unsigned long long)nnz, g->out);
    return rc;
}

/* An earlier `gen lda --out FILE` left FILE.topics.npy beside its corpus:
 * then a rerun may replace FILE and its three companions.  Without it,
 * anything at these paths (a real corpus) is refused, as every output's is. */
static int check_outputs(const char *const *paths, int n, rt_error *err)
{
    FILE *fp = NULL;
    uint64_t rows, cols;
    rt_error ignored = {0};
    if (n > 1 && rt_npy_open(paths[1], "<f4", &fp, &rows, &cols, &ignored) == 0) {
        fclose(fp);
        return 0;
    }
    for (int i = 0; i < n; i++)
        if (rt_check_own_kind(paths[i], "out",
                              "an earlier rotor gen lda output (with its FILE.topics.npy)", NULL,
                              err))
            return -1;
    return 0;
}

int gen_lda_main(int argc, char **argv)
{
    rt_error err = {0};
    gen_args g;
    int rc = parse(argc, argv, &g, &err);
    if (rc == 1)
        return RT_EXIT_OK;
    if (rc)
        rt_die(&err);
    char topics[4200], mixtures[4200], vocab[4200];
    snprintf(topics, sizeof(topics), "%s.topics.npy", g.out);
    snprintf(mixtures, sizeof(mixtures), "%s.mixtures.npy", g.out);
    snprintf(vocab, sizeof(vocab), "%s.vocab.txt", g.out);
    const char *const outputs[4] = {g.out, topics, mixtures, vocab};
    g.companions = gen_companions(g.out);
    int n = g.companions ? 4 : 1;
    if (check_outputs(outputs, n, &err))
        rt_die(&err);
    for (int i = 0; i < n; i++)
        rt_guard_output(outputs[i]);
    if (rt_guard_start(&err) < 0 || generate(&g, &err))
        rt_guard_die(&err);
    return RT_EXIT_OK;
}
