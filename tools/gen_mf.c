/*
 * gen_mf.c - `rotor gen mf`: ratings with a planted low-rank structure.
 *
 * True factors w_u, h_i in R^K with entries N(0, 1/sqrt(K)) (variance), so
 * w_u . h_i has variance 1; rating = w_u . h_i + sigma * N(0, 1).  The
 * (u, i) pairs are distinct; a "cover" of max(R, C) pairs gives every row
 * and column a training rating, the rest are drawn from (optionally
 * power-law) row and column degree distributions.  Test ratings come only
 * from the non-cover pairs.  Output: text "u i r" with 1-based ids, shuffled,
 * plus FILE.truth.json with the generating parameters.  Deterministic given
 * the seed: independent RNG streams for each purpose.
 */
#include "ground/ground.h"
#include "ground/progress.h"
#include "ground/json.h"
#include "tools/commands.h"
#include "tools/gen.h"
#include "tools/guard.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

enum { S_PERM_R = 1, S_PERM_C, S_PAIRS, S_TEST, S_ORDER, S_W, S_H, S_NOISE };

typedef struct gen_opts {
    uint64_t rows, cols, nnz, rank, seed;
    double noise, powerlaw, test_fraction;
    const char *out, *test_out;
} gen_opts;

static const rt_opt gen_mf_options[] = {
    RT_U64_OPT("rows", 0, gen_opts, rows, "R", NULL, 1, UINT32_MAX, RT_OPT_REQUIRED,
               "rows (users)"),
    RT_U64_OPT("cols", 0, gen_opts, cols, "C", NULL, 1, UINT32_MAX, RT_OPT_REQUIRED,
               "columns (items)"),
    RT_U64_OPT("nnz", 0, gen_opts, nnz, "N", NULL, 1, 1e15, RT_OPT_REQUIRED,
               "ratings, training and test together"),
    RT_U64_OPT("rank", 'k', gen_opts, rank, "K", "8", 1, 4096, 0, "planted rank"),
    /* At most 1e30: a noise of 1e308 wrote "inf" ratings with exit 0 (and
     * ratings are float32 in a plan, whose largest is 3.4e38). */
    RT_DOUBLE_OPT("noise", 0, gen_opts, noise, "SIGMA", "0.1", 0, 1e30, 0,
                  "noise std: the best achievable test RMSE"),
    RT_DOUBLE_OPT("powerlaw", 0, gen_opts, powerlaw, "ALPHA", "0", 0, HUGE_VAL, 0,
                  "degree of the k-th heaviest row/column ~ k^-ALPHA"),
    RT_U64_OPT("seed", 's', gen_opts, seed, "S", "1", 0, 0, 0, "random seed"),
    RT_PATH_OPT("out", 'o', gen_opts, out, "FILE", NULL, RT_OPT_REQUIRED,
                "training ratings to write"),
    RT_PATH_OPT("test-out", 0, gen_opts, test_out, "FILE", NULL, 0,
                "test ratings to write (with --test-fraction)"),
    RT_DOUBLE_OPT("test-fraction", 0, gen_opts, test_fraction, "F", "0", 0, 1, RT_OPT_MAX_OPEN,
                  "fraction of all N ratings written to --test-out"),
    {0}};

/* A combination of options that cannot be generated: one line, exit 2. */
static int bad(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static int bad(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fprintf(stderr, "rotor: error: gen mf: ");
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, " (see 'rotor gen mf --help')\n");
    va_end(ap);
    return RT_EXIT_INPUT;
}

/* 0 = parsed, 1 = --help printed, else an exit status. */
static int parse(int argc, char **argv, gen_opts *o)
{
    memset(o, 0, sizeof(*o));
    if (rotor_parse_options(&rotor_doc_gen_mf, gen_mf_options, o, argc, argv))
        return 1;
    if (!!o->test_out != (o->test_fraction > 0))
        return bad("give both or neither of --test-out and --test-fraction");
    if (o->test_out && rt_is_stdio(o->out) && rt_is_stdio(o->test_out))
        return bad("only one of --out and --test-out can be standard output ('-')");
    if (o->test_out && !rt_is_stdio(o->out) && rt_same_file(o->out, o->test_out))
        return bad("--out and --test-out name the same file");
    uint64_t cover = o->rows > o->cols ? o->rows : o->cols;
    if (o->nnz < cover)
        return bad("--nnz must be at least max(rows, cols) = %" PRIu64
                   " so every row and column has a rating; got %" PRIu64,
                   cover, o->nnz);
    if ((double)o->nnz > 0.5 * (double)o->rows * (double)o->cols)
        return bad("--nnz must be at most half of rows x cols (%" PRIu64 " x %" PRIu64
                   "); got %" PRIu64,
                   o->rows, o->cols, o->nnz);
    uint64_t n_test = (uint64_t)llround(o->test_fraction * (double)o->nnz);
    if (n_test > o->nnz - cover)
        return bad("--test-fraction %g asks for %" PRIu64 " test ratings, but only %" PRIu64
                   " of --nnz %" PRIu64 " can be spared: every row and column keeps a "
                   "training rating",
                   o->test_fraction, n_test, o->nnz - cover, o->nnz);
    return 0;
}

/* Cumulative degree distribution: item of weight rank k+1 is perm[k]. */
static double *degree_cdf(uint64_t n, double alpha, const uint32_t *perm)
{
    double *cdf = malloc(sizeof(double) * n);
    if (!cdf)
        return NULL;
    double *w = malloc(sizeof(double) * n);
    if (!w) {
        free(cdf);
        return NULL;
    }
    for (uint64_t k = 0; k < n; k++)
        w[perm[k]] = pow((double)(k + 1), -alpha);
    double s = 0;
    for (uint64_t i = 0; i < n; i++)
        cdf[i] = s += w[i];
    for (uint64_t i = 0; i < n; i++)
        cdf[i] /= s;
    free(w);
    return cdf;
}

static uint32_t draw(const double *cdf, uint64_t n, rt_rng *rng)
{
    return (uint32_t)rt_search_cdf(cdf, n, rt_rng_uniform(rng));
}

/* ---- an open-addressing set of pair keys (key = u * cols + i + 1) ---- */
typedef struct pairset {
    uint64_t *slot;
    uint64_t mask;
} pairset;

static int pairset_add(pairset *s, uint64_t key) /* 1 = added, 0 = present */
{
    for (uint64_t i = rt_hash64(key) & s->mask;; i = (i + 1) & s->mask) {
        if (s->slot[i] == key)
            return 0;
        if (!s->slot[i]) {
            s->slot[i] = key;
            return 1;
        }
    }
}

static uint32_t *shuffled(uint64_t n, uint64_t seed, uint64_t stream)
{
    uint32_t *p = malloc(sizeof(uint32_t) * n);
    if (!p)
        return NULL;
    for (uint64_t i = 0; i < n; i++)
        p[i] = (uint32_t)i;
    rt_rng rng;
    rt_rng_seed(&rng, seed, stream);
    rt_rng_shuffle_u32(&rng, p, n);
    return p;
}

/* Draw all pairs: the cover first, then sampled ones.  keys[] gets u*C+i+1. */
static int draw_pairs(const gen_opts *o, uint64_t *keys, rt_error *err)
{
    uint64_t R = o->rows, C = o->cols, cover = R > C ? R : C;
    uint32_t *pr = shuffled(R, o->seed, S_PERM_R), *pc = shuffled(C, o->seed, S_PERM_C);
    double *cr = pr ? degree_cdf(R, o->powerlaw, pr) : NULL;
    double *cc = pc ? degree_cdf(C, o->powerlaw, pc) : NULL;
    uint64_t cap = 1;
    while (cap < 2 * o->nnz)
        cap *= 2;
    pairset set = {calloc(cap, sizeof(uint64_t)), cap - 1};
    int rc = 0;
    if (!pr || !pc || !cr || !cc || !set.slot) {
        rc = rt_fail(err, RT_EXIT_RUNTIME, "gen mf: out of memory");
        goto out;
    }
    for (uint64_t k = 0; k < cover; k++) {
        keys[k] = (uint64_t)pr[k % R] * C + pc[k % C] + 1;
        pairset_add(&set, keys[k]);
    }
    rt_rng rng;
    rt_rng_seed(&rng, o->seed, S_PAIRS);
    uint64_t n = cover, tries = 0, max_tries = 50 * o->nnz + 1000000;
    rt_progress progress;
    rt_progress_start(&progress, "drawing pairs", "M pairs", 1e6, o->nnz);
    while (n < o->nnz) {
        if ((tries & 0xffff) == 0)
            rt_progress_set(&progress, n);
        if (++tries > max_tries) {
            rt_progress_end(&progress);
            rc = rt_fail(err, RT_EXIT_INPUT,
                         "gen mf: could not find %" PRIu64 " distinct pairs (the power law is "
                         "too steep for this density)",
                         o->nnz);
            goto out;
        }
        uint64_t key = (uint64_t)draw(cr, R, &rng) * C + draw(cc, C, &rng) + 1;
        if (pairset_add(&set, key))
            keys[n++] = key;
    }
    rt_progress_end(&progress);
out:
    free(pr), free(pc), free(cr), free(cc), free(set.slot);
    return rc;
}

/* Factor matrix n x K with entries N(0, 1/sqrt(K)). */
static float *factors(uint64_t n, uint64_t K, uint64_t seed, uint64_t stream)
{
    float *f = malloc(sizeof(float) * n * K);
    if (!f)
        return NULL;
    rt_rng rng;
    rt_rng_seed(&rng, seed, stream);
    double sd = pow((double)K, -0.25);
    for (uint64_t i = 0; i < n * K; i++)
        f[i] = (float)(sd * rt_rng_normal(&rng));
    return f;
}

typedef struct moments {
    double sum, sum2;
    uint64_t n;
} moments;

static int write_files(const gen_opts *o, const uint64_t *keys, const uint8_t *is_test, moments *m,
                       rt_error *err)
{
    uint64_t K = o->rank, C = o->cols;
    float *W = factors(o->rows, K, o->seed, S_W), *H = factors(C, K, o->seed, S_H);
    if (!W || !H) {
        free(W), free(H);
        return rt_fail(err, RT_EXIT_RUNTIME, "gen mf: out of memory (factors)");
    }
    rt_outfile tr, te;
    memset(&te, 0, sizeof(te));
    int rc = rt_outfile_open(&tr, o->out, err);
    if (rc == 0 && o->test_out && (rc = rt_outfile_open(&te, o->test_out, err)) < 0)
        rt_outfile_abort(&tr);
    if (rc < 0) {
        free(W), free(H);
        return -1;
    }
    setvbuf(tr.fp, NULL, _IOFBF, 1 << 20);
    if (te.fp)
        setvbuf(te.fp, NULL, _IOFBF, 1 << 20);
    rt_rng noise;
    rt_rng_seed(&noise, o->seed, S_NOISE);
    rt_progress progress;
    rt_progress_start(&progress, "writing ratings", "M ratings", 1e6, o->nnz);
    for (uint64_t k = 0; k < o->nnz; k++) {
        if ((k & 0xffff) == 0)
            rt_progress_set(&progress, k);
        uint64_t u = (keys[k] - 1) / C, i = (keys[k] - 1) % C;
        double r = 0;
        for (uint64_t d = 0; d < K; d++)
            r += (double)W[u * K + d] * H[i * K + d];
        r += o->noise * rt_rng_normal(&noise);
        FILE *fp = is_test[k] ? te.fp : tr.fp;
        fprintf(fp, "%" PRIu64 " %" PRIu64 " %.7g\n", u + 1, i + 1, r);
        m[is_test[k]].sum += r;
        m[is_test[k]].sum2 += r * r;
        m[is_test[k]].n++;
    }
    rt_progress_end(&progress);
    free(W), free(H);
    if (ferror(tr.fp) || (te.fp && ferror(te.fp))) {
        int e = errno; /* of the failed write, before the aborts' calls */
        rt_fail_errno(err, RT_EXIT_RUNTIME, e, "%s: write failed",
                      ferror(tr.fp) ? tr.path : te.path);
        rt_outfile_abort(&tr);
        rt_outfile_abort(&te);
        return -1;
    }
    if (rt_outfile_commit(&tr, err) < 0) {
        rt_outfile_abort(&te);
        return -1;
    }
    return te.fp ? rt_outfile_commit(&te, err) : 0;
}

static int write_truth(const gen_opts *o, const moments *m, rt_error *err)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s.truth.json", o->out);
    rt_outfile of;
    if (rt_outfile_open(&of, path, err) < 0)
        return -1;
    double mean = m[0].n ? m[0].sum / (double)m[0].n : 0;
    double sd = m[0].n ? sqrt(fmax(0, m[0].sum2 / (double)m[0].n - mean * mean)) : 0;
    fprintf(of.fp,
            "{\n  \"generator\": \"rotor gen mf\",\n  \"rows\": %" PRIu64 ",\n  \"cols\": %" PRIu64
            ",\n  \"nnz\": %" PRIu64 ",\n  \"rank\": %" PRIu64 ",\n  \"noise\": %.10g,\n"
            "  \"powerlaw\": %.10g,\n  \"seed\": %" PRIu64 ",\n  \"test_fraction\": %.10g,\n"
            "  \"n_train\": %" PRIu64 ",\n  \"n_test\": %" PRIu64 ",\n"
            "  \"factor_entry_variance\": %.10g,\n  \"train_rating_mean\": %.6f,\n"
            "  \"train_rating_std\": %.6f,\n  \"best_test_rmse\": %.10g,\n"
            "  \"ids\": \"1-based: row u, column i\",\n  \"train_file\": \"%s\",\n"
            "  \"test_file\": \"%s\"\n}\n",
            o->rows, o->cols, o->nnz, o->rank, o->noise, o->powerlaw, o->seed, o->test_fraction,
            m[0].n, m[1].n, 1.0 / sqrt((double)o->rank), mean, sd, o->noise, o->out,
            o->test_out ? o->test_out : "");
    return rt_outfile_commit(&of, err);
}

static int generate(const gen_opts *o, rt_error *err)
{
    uint64_t cover = o->rows > o->cols ? o->rows : o->cols;
    uint64_t n_test = (uint64_t)llround(o->test_fraction * (double)o->nnz);
    uint64_t *keys = malloc(sizeof(uint64_t) * o->nnz);
    uint8_t *is_test = calloc(o->nnz, 1);
    int rc = -1;
    if (!keys || !is_test) {
        rt_fail(err, RT_EXIT_RUNTIME, "gen mf: out of memory");
        goto out;
    }
    if (draw_pairs(o, keys, err) < 0)
        goto out;
    /* Test pairs: a uniform sample of the non-cover pairs (partial Fisher-Yates). */
    rt_rng rng;
    rt_rng_seed(&rng, o->seed, S_TEST);
    uint64_t extra = o->nnz - cover;
    for (uint64_t t = 0; t < n_test; t++) {
        uint64_t j = cover + t + rt_rng_below(&rng, extra - t);
        uint64_t k = keys[cover + t];
        keys[cover + t] = keys[j];
        keys[j] = k;
        is_test[cover + t] = 1;
    }
    /* Shuffle the output order (keys and flags together). */
    rt_rng_seed(&rng, o->seed, S_ORDER);
    for (uint64_t k = o->nnz; k > 1; k--) {
        uint64_t j = rt_rng_below(&rng, k);
        uint64_t t = keys[k - 1];
        keys[k - 1] = keys[j];
        keys[j] = t;
        uint8_t f = is_test[k - 1];
        is_test[k - 1] = is_test[j];
        is_test[j] = f;
    }
    moments m[2];
    memset(m, 0, sizeof(m));
    if (write_files(o, keys, is_test, m, err) < 0 ||
        (gen_companions(o->out) && write_truth(o, m, err) < 0))
        goto out;
    rt_info("gen mf: %" PRIu64 " x %" PRIu64 ", %" PRIu64 " train + %" PRIu64
            " test ratings, rank %" PRIu64 ", noise %g -> %s",
            o->rows, o->cols, m[0].n, m[1].n, o->rank, o->noise, o->out);
    rc = 0;
out:
    free(keys), free(is_test);
    return rc;
}

/* The files an earlier `gen mf --out FILE` wrote are those its
 * FILE.truth.json names: a rerun may replace them.  Anything else at these
 * paths (a real ratings file) is refused, as every output's is. */
static int check_outputs(const gen_opts *o, const char *truth /* or NULL */, rt_error *err)
{
    static const char kind[] = "an earlier rotor gen mf output (one FILE.truth.json names)";
    json_t *doc = truth ? rt_json_load(truth, NULL) : NULL;
    const char *generator = json_string_value(json_object_get(doc, "generator"));
    const char *test_file = json_string_value(json_object_get(doc, "test_file"));
    int earlier = generator && !strcmp(generator, "rotor gen mf");
    int test_earlier = earlier && test_file && o->test_out && rt_same_file(test_file, o->test_out);
    int rc = 0;
    if (!earlier)
        rc = rt_check_own_kind(o->out, "out", kind, NULL, err) ||
             rt_check_own_kind(truth, "out", kind, NULL, err);
    if (rc == 0 && !test_earlier)
        rc = rt_check_own_kind(o->test_out, "test-out", kind, NULL, err);
    json_decref(doc);
    return rc ? -1 : 0;
}

int gen_mf_main(int argc, char **argv)
{
    gen_opts o;
    int st = parse(argc, argv, &o);
    if (st)
        return st == 1 ? RT_EXIT_OK : st;
    rt_error err = {0};
    char path[4200];
    snprintf(path, sizeof(path), "%s.truth.json", o.out);
    const char *truth = gen_companions(o.out) ? path : NULL;
    if (check_outputs(&o, truth, &err))
        rt_die(&err);
    rt_guard_output(o.out);
    rt_guard_output(o.test_out);
    rt_guard_output(truth);
    if (rt_guard_start(&err) < 0 || generate(&o, &err) < 0)
        rt_guard_die(&err);
    return RT_EXIT_OK;
}
