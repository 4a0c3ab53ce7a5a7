/* corpus_lines.c - one document per line: the Yahoo!LDA / WarpLDA / STRADS
 * token format, LibSVM-style "doc w:count" and Blei's lda-c "N w:count".
 *
 *   lines   "docid docid w1 w2 w1 ..."  (each token counts once)
 *   libsvm  "docid w:count w:count ..."
 *   ldac    "N w:count ..."  N = number of pairs; the doc id is the line number
 *
 * Words are strings (dense ids in order of first appearance) unless a
 * vocabulary is given, in which case libsvm and ldac words are 0-based
 * indices into it.  Blank lines and comment lines ('#', '%', '//') are
 * skipped; a line with only its ids is an empty document. */
#define _GNU_SOURCE
#include "partition/corpus.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

int rt_corpus_read_vocab(const char *path, rt_corpus *c, rt_error *err);

typedef struct cursor {
    const char *s, *end; /* current line [s, end) */
} cursor;

/* Next blank-separated field; returns its length (0 at end of line). */
static size_t field(cursor *cur, const char **start)
{
    const char *s = cur->s;
    while (s < cur->end && isspace((unsigned char)*s))
        s++;
    const char *b = s;
    while (s < cur->end && !isspace((unsigned char)*s))
        s++;
    cur->s = s;
    *start = b;
    return (size_t)(s - b);
}

/* Strict decimal in [b, b+n): 1 on success. */
static int parse_dec(const char *b, size_t n, int64_t *out)
{
    int neg = 0;
    size_t i = 0;
    if (n && (b[0] == '-' || b[0] == '+')) {
        neg = b[0] == '-';
        i = 1;
    }
    if (i == n)
        return 0;
    int64_t v = 0;
    for (; i < n; i++) {
        if (!isdigit((unsigned char)b[i]) || v > (INT64_MAX - 9) / 10)
            return 0;
        v = v * 10 + (b[i] - '0');
    }
    *out = neg ? -v : v;
    return 1;
}

typedef struct line_ctx {
    const char *path;
    unsigned long long line;
    rt_corpus *c;
    int have_vocab;
    uint64_t vocab_n;
    const char *vocab_path;
    uint32_t max_count; /* rt_corpus_options.max_count */
} line_ctx;

/* Resolve a word field to a dense id. */
static int64_t word_id(line_ctx *x, const char *b, size_t n, rt_error *err)
{
    if (!x->have_vocab) {
        int64_t id = rt_corpus_intern(&x->c->words, b, n, err);
        if (id < 0)
            rt_error_prefix(err, "%s:%llu", x->path, x->line);
        return id;
    }
    int64_t v;
    if (!parse_dec(b, n, &v))
        return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: word '%.*s' is not an integer index into %s",
                       x->path, x->line, (int)n, b, x->vocab_path);
    if (v < 0 || (uint64_t)v >= x->vocab_n)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s:%llu: word id %lld outside the vocabulary 0..%llu of %s", x->path,
                       x->line, (long long)v, (unsigned long long)x->vocab_n - 1, x->vocab_path);
    return v;
}

/* "w:count" pairs until the end of the line; returns the number of pairs. */
static int64_t read_pairs(line_ctx *x, cursor *cur, rt_error *err)
{
    const char *b;
    size_t n;
    int64_t pairs = 0;
    while ((n = field(cur, &b)) > 0) {
        const char *colon = memrchr(b, ':', n);
        int64_t k;
        if (!colon || colon == b)
            return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: expected word:count, found '%.*s'",
                           x->path, x->line, (int)n, b);
        if (!parse_dec(colon + 1, (size_t)(b + n - colon - 1), &k) || k <= 0 ||
            k > (int64_t)UINT32_MAX)
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s:%llu: count in '%.*s' must be an integer from 1 to 4294967295",
                           x->path, x->line, (int)n, b);
        if (x->max_count && k > x->max_count)
            return rt_corpus_count_beyond(x->path, x->line, (uint64_t)k, x->max_count, err);
        int64_t w = word_id(x, b, (size_t)(colon - b), err);
        if (w < 0)
            return -1;
        if (rt_corpus_add(x->c, (uint32_t)w, (uint32_t)k, err))
            return rt_error_prefix(err, "%s:%llu", x->path, x->line);
        pairs++;
    }
    return pairs;
}

static int read_line(line_ctx *x, rt_corpus_format f, cursor *cur, rt_error *err)
{
    const char *b, *b2;
    size_t n = field(cur, &b), n2;
    char name[32];
    switch (f) {
    case RT_CORPUS_LINES:
        n2 = field(cur, &b2);
        if (!n2)
            return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: expected 'docid docid word ...'", x->path,
                           x->line);
        if (rt_corpus_begin_doc(x->c, b, n, x->line, err))
            return -1;
        while ((n = field(cur, &b)) > 0) {
            int64_t w = word_id(x, b, n, err);
            if (w < 0)
                return -1;
            if (rt_corpus_add(x->c, (uint32_t)w, 1, err))
                return rt_error_prefix(err, "%s:%llu", x->path, x->line);
        }
        return 0;
    case RT_CORPUS_LIBSVM:
        if (memchr(b, ':', n))
            return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: expected 'docid word:count ...'", x->path,
                           x->line);
        if (rt_corpus_begin_doc(x->c, b, n, x->line, err))
            return -1;
        return read_pairs(x, cur, err) < 0 ? -1 : 0;
    default: { /* ldac */
        int64_t want;
        if (!parse_dec(b, n, &want) || want < 0)
            return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: expected 'N word:count ...'", x->path,
                           x->line);
        int len = snprintf(name, sizeof(name), "%llu", x->line);
        if (rt_corpus_begin_doc(x->c, name, (size_t)len, x->line, err))
            return -1;
        int64_t got = read_pairs(x, cur, err);
        if (got < 0)
            return -1;
        if (got != want)
            return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: line says %lld pairs but has %lld",
                           x->path, x->line, (long long)want, (long long)got);
        return 0;
    }
    }
}

int rt_corpus_read_lines(const char *path, const rt_corpus_options *opt, rt_corpus *c,
                         rt_error *err)
{
    line_ctx x = {.path = path, .c = c, .max_count = opt->max_count};
    if (opt->vocab && opt->format != RT_CORPUS_LINES) {
        if (rt_corpus_read_vocab(opt->vocab, c, err))
            return -1;
        x.have_vocab = 1;
        x.vocab_n = c->words.n;
        x.vocab_path = opt->vocab;
    }
    rt_text t;
    if (rt_corpus_load_input(c, path, &t, err))
        return -1;
    const char *s = t.data, *end = t.data + t.len;
    int rc = 0;
    while (s < end && rc == 0) {
        x.line++;
        const char *e = memchr(s, '\n', (size_t)(end - s));
        cursor cur = {s, e ? e : end};
        const char *b;
        cursor probe = cur;
        if (field(&probe, &b) > 0 && !rt_text_comment_line(b)) {
            if (!c->n_docs)
                rc = rt_corpus_refuse_json(path, x.line, b, (size_t)(cur.end - b), err);
            if (rc == 0)
                rc = read_line(&x, opt->format, &cur, err);
        }
        s = e ? e + 1 : end;
    }
    rt_text_free(&t);
    return rc;
}
