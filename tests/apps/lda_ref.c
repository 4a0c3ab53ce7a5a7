/* lda_ref.c - test helpers for LDA, as one small program:
 *
 *   lda_ref gibbs --input FILE --topics K --alpha A --beta B --iters N
 *                 [--seed S] [--eval-every E]
 *       A plain serial collapsed Gibbs sampler (dense, document order, no
 *       tricks) over a corpus read with the same readers as rotor.  Prints
 *       "iter I ll_per_token X" lines, the Griffiths & Steyvers log p(w,z)
 *       per token computed here independently of apps/lda_eval.c.
 *
 *   lda_ref cosine TRUE.npy LEARNED.npy
 *       Both K x V float32 topic-word matrices; prints the mean over true
 *       topics of the best cosine similarity with any learned topic.
 *
 *   lda_ref mixtures TRUE_THETA.npy FIRST TRUE_TOPICS.npy LEARNED_TOPICS.npy
 *                    DOC_TOPIC.npy ALPHA
 *       Inferred mixtures against planted ones: DOC_TOPIC (int32 D x K
 *       counts, rotor infer's) row d is document FIRST + d of TRUE_THETA
 *       (float32, gen lda's); each learned topic is matched to the true
 *       topic of the best cosine.  Prints the mean total-variation distance
 *       between planted and inferred mixtures, then that of the uniform
 *       mixture, for scale.
 */
#include "partition/corpus.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

static double log_joint(const rt_corpus *c, const int32_t *ndk, const int32_t *nwk,
                        const int64_t *nk, uint32_t K, double alpha, double beta)
{
    double V = (double)c->n_words, ll = 0;
    ll += K * (lgamma(V * beta) - V * lgamma(beta));
    for (uint32_t k = 0; k < K; k++) {
        for (uint64_t w = 0; w < c->n_words; w++)
            ll += lgamma(nwk[w * K + k] + beta);
        ll -= lgamma((double)nk[k] + V * beta);
    }
    ll += (double)c->n_docs * (lgamma(K * alpha) - K * lgamma(alpha));
    for (uint64_t d = 0; d < c->n_docs; d++) {
        int64_t len = 0;
        for (uint32_t k = 0; k < K; k++) {
            ll += lgamma(ndk[d * K + k] + alpha);
            len += ndk[d * K + k];
        }
        ll -= lgamma((double)len + K * alpha);
    }
    return ll;
}

static int gibbs(int argc, char **argv)
{
    const char *input = NULL;
    int K = 20, iters = 50, every = 10;
    double alpha = 0.1, beta = 0.01;
    uint64_t seed = 1;
    for (int i = 2; i + 1 < argc; i += 2) {
        const char *o = argv[i], *v = argv[i + 1];
        if (!strcmp(o, "--input"))
            input = v;
        else if (!strcmp(o, "--topics"))
            K = atoi(v);
        else if (!strcmp(o, "--alpha"))
            alpha = atof(v);
        else if (!strcmp(o, "--beta"))
            beta = atof(v);
        else if (!strcmp(o, "--iters"))
            iters = atoi(v);
        else if (!strcmp(o, "--seed"))
            seed = strtoull(v, NULL, 10);
        else if (!strcmp(o, "--eval-every"))
            every = atoi(v);
    }
    rt_corpus c;
    rt_error err = {0};
    rt_corpus_options opt = {.format = RT_CORPUS_AUTO};
    if (!input || K < 2 || rt_corpus_read(input, &opt, &c, &err)) {
        fprintf(stderr, "lda_ref: %s\n", input ? err.msg : "--input required");
        return 2;
    }
    /* tokens in document order */
    uint32_t *tw = malloc(c.n_tokens * sizeof(uint32_t)), *tz = malloc(c.n_tokens * 4);
    uint64_t *td = malloc(c.n_tokens * sizeof(uint64_t));
    int32_t *ndk = calloc(c.n_docs * K, 4), *nwk = calloc(c.n_words * K, 4);
    int64_t *nk = calloc(K, 8);
    double *p = malloc(K * sizeof(double));
    rt_rng rng;
    rt_rng_seed(&rng, seed, 12345);
    uint64_t n = 0;
    for (uint64_t d = 0; d < c.n_docs; d++)
        for (uint64_t i = c.doc_off[d]; i < c.doc_off[d + 1]; i++)
            for (uint32_t x = 0; x < c.count[i]; x++, n++) {
                tw[n] = c.word[i];
                td[n] = d;
                tz[n] = (uint32_t)rt_rng_below(&rng, (uint64_t)K);
                ndk[d * K + tz[n]]++;
                nwk[(uint64_t)tw[n] * K + tz[n]]++;
                nk[tz[n]]++;
            }
    double vbeta = (double)c.n_words * beta;
    printf("iter 0 ll_per_token %.6f\n",
           log_joint(&c, ndk, nwk, nk, (uint32_t)K, alpha, beta) / (double)n);
    for (int it = 1; it <= iters; it++) {
        for (uint64_t t = 0; t < n; t++) {
            int32_t *nd = ndk + td[t] * K, *nw = nwk + (uint64_t)tw[t] * K;
            uint32_t k = tz[t];
            nd[k]--, nw[k]--, nk[k]--;
            double acc = 0;
            for (int j = 0; j < K; j++)
                p[j] = (acc += (nd[j] + alpha) * (nw[j] + beta) / ((double)nk[j] + vbeta));
            double u = rt_rng_uniform(&rng) * acc;
            for (k = 0; k + 1 < (uint32_t)K && p[k] <= u; k++)
                ;
            nd[k]++, nw[k]++, nk[k]++;
            tz[t] = k;
        }
        if (it % every == 0 || it == iters)
            printf("iter %d ll_per_token %.6f\n", it,
                   log_joint(&c, ndk, nwk, nk, (uint32_t)K, alpha, beta) / (double)n);
    }
    free(tw), free(tz), free(td), free(ndk), free(nwk), free(nk), free(p);
    rt_corpus_free(&c);
    return 0;
}

static double cos_sim(const float *x, const float *y, uint64_t n)
{
    double dot = 0, nx = 0, ny = 0;
    for (uint64_t i = 0; i < n; i++)
        dot += (double)x[i] * y[i], nx += (double)x[i] * x[i], ny += (double)y[i] * y[i];
    return dot / (sqrt(nx * ny) + 1e-300);
}

static int mixtures(int argc, char **argv)
{
    float *theta, *tt, *lt;
    int32_t *dt;
    uint64_t D, K, first, kt, vt, kl, vl, dd, kd;
    rt_error err = {0};
    if (argc != 8 || rt_npy_read_f32(argv[2], &theta, &D, &K, &err) ||
        rt_npy_read_f32(argv[4], &tt, &kt, &vt, &err) ||
        rt_npy_read_f32(argv[5], &lt, &kl, &vl, &err) ||
        rt_npy_read_i32(argv[6], &dt, &dd, &kd, &err) || kt != K || kl != K || kd != K ||
        vt != vl || (first = strtoull(argv[3], NULL, 10)) + dd > D) {
        fprintf(stderr,
                "lda_ref mixtures TRUE_THETA.npy FIRST TRUE_TOPICS.npy LEARNED.npy "
                "DOC_TOPIC.npy ALPHA: %s\n",
                err.msg[0] ? err.msg : "bad arguments or shapes");
        return 2;
    }
    double alpha = atof(argv[7]), tv = 0, tv_uniform = 0;
    uint64_t *match = malloc(K * sizeof(uint64_t));
    double *est = malloc(K * sizeof(double));
    for (uint64_t j = 0; j < K; j++) {
        double best = -2;
        for (uint64_t i = 0; i < K; i++) {
            double c = cos_sim(tt + i * vt, lt + j * vt, vt);
            if (c > best)
                best = c, match[j] = i;
        }
    }
    for (uint64_t d = 0; d < dd; d++) {
        const float *truth = theta + (first + d) * K;
        double len = 0;
        for (uint64_t k = 0; k < K; k++)
            len += dt[d * K + k], est[k] = 0;
        for (uint64_t j = 0; j < K; j++)
            est[match[j]] += (dt[d * K + j] + alpha) / (len + (double)K * alpha);
        for (uint64_t k = 0; k < K; k++)
            tv += 0.5 * fabs(est[k] - truth[k]), tv_uniform += 0.5 * fabs(1.0 / K - truth[k]);
    }
    printf("%.6f %.6f\n", tv / (double)dd, tv_uniform / (double)dd);
    free(theta), free(tt), free(lt), free(dt), free(match), free(est);
    return 0;
}

static int cosine(int argc, char **argv)
{
    float *a, *b;
    uint64_t ka, va, kb, vb;
    rt_error err = {0};
    if (argc != 4 || rt_npy_read_f32(argv[2], &a, &ka, &va, &err) ||
        rt_npy_read_f32(argv[3], &b, &kb, &vb, &err) || va != vb) {
        fprintf(stderr, "lda_ref cosine TRUE.npy LEARNED.npy: %s\n",
                err.msg[0] ? err.msg : "bad arguments or shapes");
        return 2;
    }
    double sum = 0;
    for (uint64_t i = 0; i < ka; i++) {
        double best = -1;
        for (uint64_t j = 0; j < kb; j++) {
            double dot = 0, na = 0, nb = 0;
            for (uint64_t w = 0; w < va; w++) {
                double x = a[i * va + w], y = b[j * va + w];
                dot += x * y, na += x * x, nb += y * y;
            }
            double cs = dot / (sqrt(na * nb) + 1e-300);
            if (cs > best)
                best = cs;
        }
        sum += best;
    }
    printf("%.6f\n", sum / (double)ka);
    free(a);
    free(b);
    return 0;
}

int main(int argc, char **argv)
{
    if (argc >= 2 && !strcmp(argv[1], "gibbs"))
        return gibbs(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "cosine"))
        return cosine(argc, argv);
    if (argc >= 2 && !strcmp(argv[1], "mixtures"))
        return mixtures(argc, argv);
    fprintf(stderr, "usage: lda_ref gibbs --input FILE ... | lda_ref cosine TRUE.npy LEARNED.npy | "
                    "lda_ref mixtures ...\n");
    return 2;
}
