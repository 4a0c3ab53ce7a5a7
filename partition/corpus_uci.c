/* corpus_uci.c - UCI bag-of-words docword files and vocabulary files.
 *
 *   docword.NAME.txt:  D \n W \n NNZ \n then NNZ lines "docID wordID count"
 *   vocab.NAME.txt:    W lines, line n = word n
 * Ids are 1-based.  The header must agree with the body: every doc id in
 * 1..D, every word id in 1..W, exactly NNZ triples; the vocabulary must have
 * exactly W words.  Documents with no triples are kept (empty). */
#define _GNU_SOURCE
#include "partition/corpus.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* Parse an unsigned decimal at *p (after blanks); 1 on success. */
static int next_u64(const char **p, uint64_t *out, int *negative)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    *negative = 0;
    if (*s == '-') {
        *negative = 1;
        s++;
    }
    if (!isdigit((unsigned char)*s))
        return 0;
    uint64_t v = 0;
    while (isdigit((unsigned char)*s)) {
        if (v > (UINT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (uint64_t)(*s++ - '0');
    }
    if (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
        return 0;
    *p = s;
    *out = v;
    return 1;
}

static int rest_blank(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    return *s == '\n' || *s == '\0';
}

int rt_corpus_read_vocab(const char *path, rt_corpus *c, rt_error *err)
{
    rt_text t;
    if (rt_text_load(path, &t, err))
        return -1;
    uint64_t line = 0;
    char *s = t.data;
    while (*s) {
        line++;
        char *e = strchr(s, '\n');
        char *next = e ? e + 1 : s + strlen(s);
        char *end = e ? e : next;
        while (end > s && isspace((unsigned char)end[-1]))
            end--;
        char *b = s;
        while (b < end && isspace((unsigned char)*b))
            b++;
        if (b == end) {
            rt_text_free(&t);
            return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: empty line in vocabulary", path,
                           (unsigned long long)line);
        }
        uint64_t before = c->words.n;
        int64_t id = rt_corpus_intern(&c->words, b, (size_t)(end - b), err);
        if (id < 0) {
            rt_text_free(&t);
            return rt_error_prefix(err, "%s:%llu", path, (unsigned long long)line);
        }
        if (c->words.n == before) {
            /* The message quotes the word, which lives in t: format it first. */
            rt_fail(err, RT_EXIT_INPUT, "%s:%llu: duplicate word '%.*s' (also line %lld)", path,
                    (unsigned long long)line, (int)(end - b), b, (long long)id + 1);
            rt_text_free(&t);
            return -1;
        }
        s = next;
    }
    rt_text_free(&t);
    return 0;
}

/* The most documents, or words without a vocabulary file, a docword file
 * of `bytes` bytes may declare. */
static uint64_t header_bound(uint64_t bytes)
{
    return (1u << 20) + 16 * bytes;
}

typedef struct triple {
    uint32_t doc, word, count;
} triple;

static int read_header(const char *path, char **s, uint64_t *line, const char *what, uint64_t *v,
                       rt_error *err)
{
    int neg;
    const char *p = *s;
    (*line)++;
    if (!*p || !next_u64(&p, v, &neg) || neg || !rest_blank(p))
        return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: expected the %s count of the docword header",
                       path, (unsigned long long)*line, what);
    char *e = strchr(*s, '\n');
    *s = e ? e + 1 : *s + strlen(*s);
    return 0;
}

int rt_corpus_read_uci(const char *path, const rt_corpus_options *opt, rt_corpus *c, rt_error *err)
{
    rt_text t;
    if (rt_corpus_load_input(c, path, &t, err))
        return -1;
    triple *tr = NULL;
    uint32_t *doc_count = NULL;
    uint64_t D, W, NNZ, line = 0, n = 0;
    char *s = t.data;
    int rc = -1;
    if (read_header(path, &s, &line, "document", &D, err) ||
        read_header(path, &s, &line, "vocabulary", &W, err) ||
        read_header(path, &s, &line, "nonzero", &NNZ, err))
        goto out;
    if (D >= UINT32_MAX || W >= UINT32_MAX || NNZ > D * W) { /* D x W < 2^64 */
        rt_fail(err, RT_EXIT_INPUT, "%s:3: header D=%llu W=%llu NNZ=%llu is impossible", path,
                (unsigned long long)D, (unsigned long long)W, (unsigned long long)NNZ);
        goto out;
    }
    /* Documents without triples are kept, and without --vocab every word id
     * 1..W gets a name: D and W cost memory whatever the body holds, so
     * they are bounded by the file's size (generously: real corpora stay
     * far below), not taken from a header that may lie. */
    uint64_t most = header_bound(t.len);
    if (D > most || (!opt->vocab && W > most)) {
        int words = D <= most;
        rt_fail(err, RT_EXIT_INPUT,
                "%s:%d: header %s=%llu is more %s than a file of %llu bytes can describe (at "
                "most %llu%s)",
                path, words ? 2 : 1, words ? "W" : "D", (unsigned long long)(words ? W : D),
                words ? "words" : "documents", (unsigned long long)t.len, (unsigned long long)most,
                words ? "; a vocabulary file (--vocab) may name more" : "");
        goto out;
    }
    /* Each triple takes at least "1 1 1\n": room for the triples the rest of
     * the file can hold is enough, whatever the header claims. */
    uint64_t room = (t.len - (uint64_t)(s - t.data) + 1) / 6;
    tr = rt_alloc_array(NNZ < room ? NNZ : room, sizeof(triple), path, "header NNZ", err);
    doc_count = tr ? rt_calloc_array(D + 1, sizeof(uint32_t), path, "header D", err) : NULL;
    if (!tr || !doc_count)
        goto out;
    while (*s) {
        line++;
        char *e = strchr(s, '\n');
        char *next = e ? e + 1 : s + strlen(s);
        if (rest_blank(s)) { /* blank lines are allowed (e.g. at the end) */
            s = next;
            continue;
        }
        const char *p = s;
        uint64_t d, w, k;
        int nd, nw, nk;
        if (!next_u64(&p, &d, &nd) || !next_u64(&p, &w, &nw) || !next_u64(&p, &k, &nk) ||
            !rest_blank(p)) {
            rt_fail(err, RT_EXIT_INPUT, "%s:%llu: expected 'docID wordID count'", path,
                    (unsigned long long)line);
            goto out;
        }
        if (nk || k == 0 || k > UINT32_MAX) {
            rt_fail(err, RT_EXIT_INPUT, "%s:%llu: count %s%llu must be a positive integer", path,
                    (unsigned long long)line, nk ? "-" : "", (unsigned long long)k);
            goto out;
        }
        if (nd || d < 1 || d > D) {
            rt_fail(err, RT_EXIT_INPUT, "%s:%llu: document id %s%llu outside 1..%llu (header D)",
                    path, (unsigned long long)line, nd ? "-" : "", (unsigned long long)d,
                    (unsigned long long)D);
            goto out;
        }
        if (nw || w < 1 || w > W) {
            rt_fail(err, RT_EXIT_INPUT,
                    "%s:%llu: word id %s%llu outside the vocabulary 1..%llu (header W)", path,
                    (unsigned long long)line, nw ? "-" : "", (unsigned long long)w,
                    (unsigned long long)W);
            goto out;
        }
        if (n == NNZ || n == room) {
            rt_fail(err, RT_EXIT_INPUT, "%s:%llu: more triples than the header's NNZ=%llu", path,
                    (unsigned long long)line, (unsigned long long)NNZ);
            goto out;
        }
        tr[n].doc = (uint32_t)(d - 1);
        tr[n].word = (uint32_t)(w - 1);
        tr[n].count = (uint32_t)k;
        doc_count[d - 1]++;
        n++;
        s = next;
    }
    if (n != NNZ) {
        rt_fail(err, RT_EXIT_INPUT, "%s:%llu: file ends after %llu triples, header NNZ=%llu", path,
                (unsigned long long)line, (unsigned long long)n, (unsigned long long)NNZ);
        goto out;
    }
    /* Words: from the vocabulary file, or the numbers 1..W. */
    if (opt->vocab) {
        if (rt_corpus_read_vocab(opt->vocab, c, err))
            goto out;
        if (c->words.n != W) {
            rt_fail(err, RT_EXIT_INPUT, "%s:%llu: vocabulary has %llu words, %s header W=%llu",
                    opt->vocab, (unsigned long long)(c->words.n + 1),
                    (unsigned long long)c->words.n, path, (unsigned long long)W);
            goto out;
        }
    } else {
        for (uint64_t w = 1; w <= W; w++) {
            char buf[32];
            int len = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)w);
            if (rt_corpus_intern(&c->words, buf, (size_t)len, err) < 0)
                goto out;
        }
    }
    /* Bucket the triples by document (stable, so input order within a doc). */
    uint64_t *start = rt_calloc_array(D + 1, sizeof(uint64_t), path, "header D", err);
    triple *sorted = start ? rt_alloc_array(n, sizeof(triple), path, "header NNZ", err) : NULL;
    if (!start || !sorted) {
        free(start);
        goto out;
    }
    for (uint64_t d = 0; d < D; d++)
        start[d + 1] = start[d] + doc_count[d];
    for (uint64_t i = 0; i < n; i++)
        sorted[start[tr[i].doc]++] = tr[i];
    free(start);
    uint64_t i = 0;
    int failed = 0;
    for (uint64_t d = 0; d < D && !failed; d++) {
        char buf[32];
        int len = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)d + 1);
        failed = rt_corpus_begin_doc(c, buf, (size_t)len, err) != 0;
        for (uint32_t j = 0; j < doc_count[d] && !failed; j++, i++)
            failed = rt_corpus_add(c, sorted[i].word, sorted[i].count, err) != 0;
    }
    free(sorted);
    if (failed)
        goto out;
    rc = 0;
out:
    free(tr);
    free(doc_count);
    rt_text_free(&t);
    return rc;
}
