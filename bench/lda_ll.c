/*
 * lda_ll.c - one evaluator for the saved states of rotor and WarpLDA
 * (bench/lda.sh), so both tools' log-likelihoods stand on the same footing.
 *
 *   lda_ll --alpha A --beta B --topics K --warplda-z FILE
 *   lda_ll --alpha A --beta B --topics K --rotor-model DIR
 *
 * WarpLDA's --dumpz file has one line per document, "N w:k w:k ...", the
 * word and topic of each token.  rotor's --out directory has the parts
 * word_topic.part-*.npy (int32 n_wk, K columns) and doc_topic.part-*.npy
 * (n_dk), or after `rotor export` word_topic.npy and doc_topic.npy.
 * Either is reduced to the counts n_wk, n_dk, n_k and scored with the
 * Griffiths & Steyvers joint log-likelihood
 *
 *   log p(w, z) = K lgamma(V b) + sum_{w,k: n_wk > 0} [lgamma(n_wk + b) - lgamma(b)]
 *               - sum_k lgamma(n_k + V b)
 *               + D lgamma(K a) + sum_{d,k: n_dk > 0} [lgamma(n_dk + a) - lgamma(a)]
 *               - sum_d lgamma(n_d + K a)
 *
 * (the terms of zero counts cancel).  Prints one JSON object:
 * {"tokens", "words", "docs", "topics", "log_joint", "ll_per_token"}.
 * A benchmark helper, not part of rotor: plain C, exits on bad input.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <glob.h>
#include <unistd.h>

typedef struct sums {
    double word, doc, doc_len; /* the three data-dependent parts */
    double *nk;                /* K */
    uint64_t tokens, words, docs;
} sums;

static void die(const char *msg, const char *what)
{
    fprintf(stderr, "lda_ll: %s%s%s\n", msg, what ? ": " : "", what ? what : "");
    exit(2);
}

static int cmp_u32(const void *a, const void *b)
{
    uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;
    return (x > y) - (x < y);
}

static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return (x > y) - (x < y);
}

/* ---- WarpLDA z file ---- */
static void read_warplda(const char *path, uint32_t K, double alpha, double beta, sums *s)
{
    FILE *fp = fopen(path, "r");
    if (!fp)
        die("cannot open", path);
    size_t cap = 1 << 20, n = 0, dcap = 1 << 12;
    uint64_t *pairs = malloc(cap * sizeof(uint64_t)); /* word << 32 | topic */
    uint32_t *dz = malloc(dcap * sizeof(uint32_t));
    uint32_t maxw = 0;
    if (!pairs || !dz)
        die("out of memory", NULL);
    unsigned long long len;
    while (fscanf(fp, "%llu", &len) == 1) {
        if (len > dcap) {
            dcap = len;
            dz = realloc(dz, dcap * sizeof(uint32_t));
            if (!dz)
                die("out of memory", NULL);
        }
        for (unsigned long long i = 0; i < len; i++) {
            unsigned w, k;
            if (fscanf(fp, " %u:%u", &w, &k) != 2 || k >= K)
                die("bad token (want w:k with k < K)", path);
            if (n == cap) {
                cap *= 2;
                pairs = realloc(pairs, cap * sizeof(uint64_t));
                if (!pairs)
                    die("out of memory", NULL);
            }
            pairs[n++] = (uint64_t)w << 32 | k;
            dz[i] = k;
            if (w > maxw)
                maxw = w;
            s->nk[k] += 1;
        }
        /* the document's counts: runs of equal topics */
        qsort(dz, len, sizeof(uint32_t), cmp_u32);
        for (size_t i = 0, j; i < len; i = j) {
            for (j = i; j < len && dz[j] == dz[i]; j++)
                ;
            s->doc += lgamma((double)(j - i) + alpha) - lgamma(alpha);
        }
        s->doc_len += lgamma((double)len + K * alpha);
        s->docs++;
        s->tokens += len;
    }
    if (!feof(fp))
        die("unreadable line", path);
    fclose(fp);
    qsort(pairs, n, sizeof(uint64_t), cmp_u64);
    for (size_t i = 0, j; i < n; i = j) {
        for (j = i; j < n && pairs[j] == pairs[i]; j++)
            ;
        s->word += lgamma((double)(j - i) + beta) - lgamma(beta);
    }
    s->words = n ? (uint64_t)maxw + 1 : 0;
    free(pairs);
    free(dz);
}

/* ---- rotor npy (int32, C order, 2-D) ---- */
static FILE *npy_open(const char *path, uint64_t *rows, uint64_t *cols)
{
    FILE *fp = fopen(path, "rb");
    if (!fp)
        die("cannot open", path);
    unsigned char pre[10];
    if (fread(pre, 1, 10, fp) != 10 || memcmp(pre, "\x93NUMPY", 6))
        die("not an npy file", path);
    size_t hlen = pre[6] == 1 ? (size_t)(pre[8] | pre[9] << 8) : 0;
    if (pre[6] != 1) {
        unsigned char x[2];
        if (fread(x, 1, 2, fp) != 2)
            die("bad npy header", path);
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)x[0] << 16 | (size_t)x[1] << 24;
    }
    char *h = calloc(hlen + 1, 1);
    if (!h || fread(h, 1, hlen, fp) != hlen)
        die("bad npy header", path);
    unsigned long long r, c;
    char *shape = strstr(h, "'shape': (");
    if (!strstr(h, "<i4") || strstr(h, "'fortran_order': True") || !shape ||
        sscanf(shape, "'shape': (%llu, %llu)", &r, &c) != 2)
        die("want a 2-D little-endian int32 C-order array", path);
    free(h);
    *rows = r;
    *cols = c;
    return fp;
}

/* Add the rows of one int32 npy of K columns: to the word part (and n_k),
 * or to the document part. */
static void add_rows(const char *path, uint32_t K, double prior, int words, sums *s)
{
    uint64_t rows, cols;
    int32_t *row = malloc((size_t)K * sizeof(int32_t));
    if (!row)
        die("out of memory", NULL);
    FILE *fp = npy_open(path, &rows, &cols);
    if (cols != K)
        die("columns differ from --topics", path);
    for (uint64_t i = 0; i < rows; i++) {
        if (fread(row, sizeof(int32_t), K, fp) != K)
            die("short file", path);
        uint64_t len = 0;
        for (uint32_t k = 0; k < K; k++)
            if (row[k] > 0) {
                double lg = lgamma(row[k] + prior) - lgamma(prior);
                if (words) {
                    s->word += lg;
                    s->nk[k] += row[k];
                } else {
                    s->doc += lg;
                    len += (uint64_t)row[k];
                }
            }
        if (!words) {
            s->doc_len += lgamma((double)len + K * prior);
            s->tokens += len;
        }
    }
    fclose(fp);
    free(row);
    if (words)
        s->words += rows;
    else
        s->docs += rows;
}

/* DIR/NAME.npy (an exported model) or every DIR/NAME.part-*.npy (as saved). */
static void add_matrix(const char *dir, const char *name, uint32_t K, double prior, int words,
                       sums *s)
{
    char pat[4096];
    glob_t g;
    snprintf(pat, sizeof(pat), "%s/%s.npy", dir, name);
    if (access(pat, R_OK) == 0) {
        add_rows(pat, K, prior, words, s);
        return;
    }
    snprintf(pat, sizeof(pat), "%s/%s.part-*.npy", dir, name);
    if (glob(pat, 0, NULL, &g) != 0)
        die("no such matrix", pat);
    for (size_t i = 0; i < g.gl_pathc; i++)
        add_rows(g.gl_pathv[i], K, prior, words, s);
    globfree(&g);
}

static void read_rotor(const char *dir, uint32_t K, double alpha, double beta, sums *s)
{
    add_matrix(dir, "word_topic", K, beta, 1, s);
    add_matrix(dir, "doc_topic", K, alpha, 0, s);
}

int main(int argc, char **argv)
{
    const char *z = NULL, *model = NULL;
    double alpha = 0, beta = 0;
    unsigned long K = 0;
    for (int i = 1; i + 1 < argc; i += 2) {
        if (!strcmp(argv[i], "--alpha"))
            alpha = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--beta"))
            beta = atof(argv[i + 1]);
        else if (!strcmp(argv[i], "--topics"))
            K = strtoul(argv[i + 1], NULL, 10);
        else if (!strcmp(argv[i], "--warplda-z"))
            z = argv[i + 1];
        else if (!strcmp(argv[i], "--rotor-model"))
            model = argv[i + 1];
        else
            die("unknown option", argv[i]);
    }
    if (alpha <= 0 || beta <= 0 || K < 1 || !z == !model)
        die("usage: lda_ll --alpha A --beta B --topics K (--warplda-z FILE | --rotor-model DIR)",
            NULL);
    sums s = {0};
    s.nk = calloc(K, sizeof(double));
    if (!s.nk)
        die("out of memory", NULL);
    if (z)
        read_warplda(z, (uint32_t)K, alpha, beta, &s);
    else
        read_rotor(model, (uint32_t)K, alpha, beta, &s);
    double V = (double)s.words, ll = K * lgamma(V * beta) + s.word +
                                     (double)s.docs * lgamma(K * alpha) + s.doc - s.doc_len;
    for (unsigned long k = 0; k < K; k++)
        ll -= lgamma(s.nk[k] + V * beta);
    printf("{\"tokens\": %llu, \"words\": %llu, \"docs\": %llu, \"topics\": %lu, "
           "\"log_joint\": %.10e, \"ll_per_token\": %.8f}\n",
           (unsigned long long)s.tokens, (unsigned long long)s.words, (unsigned long long)s.docs, K,
           ll, s.tokens ? ll / (double)s.tokens : 0.0);
    free(s.nk);
    return 0;
}
