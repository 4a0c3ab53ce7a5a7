/* corpus_uci.c - UCI bag-of-words docword files and vocabulary files.
 *
 *   docword.NAME.txt:  D \n W \n NNZ \n then NNZ lines "docID wordID count"
 *   vocab.NAME.txt:    W lines, line n = word n
 * Ids are 1-based.  The header must agree with the body: every doc id in
 * 1..D, every word id in 1..W, exactly NNZ triples; the vocabulary must have
 * exactly W words.  Documents with no triples are kept (empty).  Comment
 * lines ('#', '%', '//') may come anywhere in a docword file. */
#define _GNU_SOURCE
#include "partition/corpus.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* A decimal field as read: its value, and its text for the messages. */
typedef struct num_field {
    uint64_t v;       /* UINT64_MAX when over */
    int neg;          /* a minus sign came first */
    int over;         /* its digits do not fit 64 bits */
    const char *text; /* the field, sign included */
    int len;
} num_field;

/* Parse a decimal at *p (after blanks), an optional minus sign first; 1 on
 * success, *p then past it. */
static int next_u64(const char **p, num_field *f)
{
    const char *s = *p;
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    f->text = s;
    f->neg = 0;
    f->over = 0;
    if (*s == '-') {
        f->neg = 1;
        s++;
    }
    if (!isdigit((unsigned char)*s))
        return 0;
    uint64_t v = 0;
    for (; isdigit((unsigned char)*s); s++) {
        uint64_t digit = (uint64_t)(*s - '0');
        if (v > (UINT64_MAX - digit) / 10)
            f->over = 1; /* all digits still read: the field is a number, too large */
        else
            v = v * 10 + digit;
    }
    if (*s && *s != ' ' && *s != '\t' && *s != '\r' && *s != '\n')
        return 0;
    *p = s;
    f->v = f->over ? UINT64_MAX : v;
    f->len = (int)(s - f->text);
    return 1;
}

/* A field below zero ("-3"; "-0" is 0, checked as such), named with its
 * text and what the field wants; 0 when it is not. */
static int negative(const char *path, uint64_t line, const char *field, const num_field *f,
                    const char *want, rt_error *err)
{
    if (!f->neg || (f->v == 0 && !f->over))
        return 0;
    return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: %s %.*s is negative: want %s", path,
                   (unsigned long long)line, field, f->len, f->text, want);
}

/* A number field whose digits do not fit 64 bits: named with what the
 * field wants (the line is not malformed: the field is a number, only too
 * large for any count or id).  want may be "". */
static int beyond_u64(const char *path, uint64_t line, const char *field, const char *want,
                      rt_error *err)
{
    return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: %s is out of range (beyond 64 bits)%s%s", path,
                   (unsigned long long)line, field, *want ? ": want " : "", want);
}

/* A field that is negative or wider than 64 bits, named as such with what
 * it wants; 0 when it is neither (its range is the caller's to check). */
static int not_u64(const char *path, uint64_t line, const char *field, const num_field *f,
                   const char *want, rt_error *err)
{
    if (negative(path, line, field, f, want, err))
        return -1;
    if (f->over)
        return beyond_u64(path, line, field, want, err);
    return 0;
}

static int rest_blank(const char *s)
{
    while (*s == ' ' || *s == '\t' || *s == '\r')
        s++;
    return *s == '\n' || *s == '\0';
}

/* Nothing but blank lines from s to the end. */
static int only_blank_lines(const char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    return *s == '\0';
}

int rt_corpus_read_vocab(const char *path, rt_corpus *c, rt_error *err)
{
    rt_text t;
    if (rt_corpus_load_side(c, path, &t, err))
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
        if (b == end && only_blank_lines(next))
            break; /* blank lines an editor left at the end: no words */
        if (b == end) {
            rt_text_free(&t);
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s:%llu: empty line in vocabulary (line N is word id N: a blank "
                           "line would shift the words after it)",
                           path, (unsigned long long)line);
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

typedef struct uci_header {
    uint64_t docs, words, nnz;                /* D, W, NNZ */
    uint64_t docs_line, words_line, nnz_line; /* where each was read */
} uci_header;

static int read_header(const char *path, char **s, uint64_t *line, const char *what, uint64_t *v,
                       rt_error *err)
{
    num_field f;
    while (rt_text_comment_line(*s)) { /* comments may come before the header */
        char *e = strchr(*s, '\n');
        (*line)++;
        *s = e ? e + 1 : *s + strlen(*s);
    }
    const char *p = *s;
    (*line)++;
    if (!*p || !next_u64(&p, &f) || !rest_blank(p))
        return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: expected the %s count of the docword header",
                       path, (unsigned long long)*line, what);
    char field[64];
    snprintf(field, sizeof(field), "the docword header's %s count", what);
    if (negative(path, *line, field, &f, "a whole number, 0 or more", err))
        return -1;
    if (f.over)
        return beyond_u64(path, *line, field, "", err);
    *v = f.v;
    char *e = strchr(*s, '\n');
    *s = e ? e + 1 : *s + strlen(*s);
    return 0;
}

/* The three header lines, checked against each other and against what a
 * file of `bytes` bytes can describe; *s moves past them. */
static int read_headers(const char *path, uint64_t bytes, int has_vocab, char **s, uint64_t *line,
                        uci_header *h, rt_error *err)
{
    if (read_header(path, s, line, "document", &h->docs, err) ||
        (h->docs_line = *line, read_header(path, s, line, "vocabulary", &h->words, err)) ||
        (h->words_line = *line, read_header(path, s, line, "nonzero", &h->nnz, err)))
        return -1;
    h->nnz_line = *line;
    uint64_t D = h->docs, W = h->words, NNZ = h->nnz;
    if (D >= UINT32_MAX || W >= UINT32_MAX || NNZ > D * W) /* D x W < 2^64 */
        return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: header D=%llu W=%llu NNZ=%llu is impossible",
                       path, (unsigned long long)h->nnz_line, (unsigned long long)D,
                       (unsigned long long)W, (unsigned long long)NNZ);
    /* Documents without triples are kept, and without --vocab every word id
     * 1..W gets a name: D and W cost memory whatever the body holds, so
     * they are bounded by the file's size (generously: real corpora stay
     * far below), not taken from a header that may lie. */
    uint64_t most = header_bound(bytes);
    if (D > most || (!has_vocab && W > most)) {
        int words = D <= most;
        return rt_fail(
            err, RT_EXIT_INPUT,
            "%s:%llu: header %s=%llu is more %s than a file of %llu bytes can describe (at "
            "most %llu%s)",
            path, (unsigned long long)(words ? h->words_line : h->docs_line), words ? "W" : "D",
            (unsigned long long)(words ? W : D), words ? "words" : "documents",
            (unsigned long long)bytes, (unsigned long long)most,
            words ? "; a vocabulary file (--vocab) may name more" : "");
    }
    return 0;
}

/* One body line "docID wordID count" at s, checked against the header;
 * the ids made 0-based. */
static int parse_triple(const char *path, const char *s, uint64_t line, const uci_header *h,
                        uint32_t max_count, triple *out, rt_error *err)
{
    const char *p = s;
    num_field d, w, k;
    if (!next_u64(&p, &d) || !next_u64(&p, &w) || !next_u64(&p, &k) || !rest_blank(p))
        return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: expected 'docID wordID count'", path,
                       (unsigned long long)line);
    /* Field by field, left to right; each range as the header gives it. */
    char want_d[64], want_w[64];
    snprintf(want_d, sizeof(want_d), "1..%llu (header D)", (unsigned long long)h->docs);
    snprintf(want_w, sizeof(want_w), "1..%llu (header W)", (unsigned long long)h->words);
    const char *want_k = "an integer from 1 to 4294967295";
    if (not_u64(path, line, "document id", &d, want_d, err))
        return -1;
    if (d.v < 1 || d.v > h->docs)
        return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: document id %.*s outside %s", path,
                       (unsigned long long)line, d.len, d.text, want_d);
    if (not_u64(path, line, "word id", &w, want_w, err))
        return -1;
    if (w.v < 1 || w.v > h->words)
        return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: word id %.*s outside the vocabulary %s", path,
                       (unsigned long long)line, w.len, w.text, want_w);
    if (not_u64(path, line, "count", &k, want_k, err))
        return -1;
    if (k.v == 0 || k.v > UINT32_MAX)
        return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: count %.*s must be %s", path,
                       (unsigned long long)line, k.len, k.text, want_k);
    if (max_count && k.v > max_count)
        return rt_corpus_count_beyond(path, line, k.v, max_count, err);
    *out =
        (triple){.doc = (uint32_t)(d.v - 1), .word = (uint32_t)(w.v - 1), .count = (uint32_t)k.v};
    return 0;
}

/* The body from s on: exactly NNZ triples (at most `room` fit in tr),
 * blank lines allowed; doc_count[d] counts document d's triples, and
 * first_line[d] is the line of its first (for messages about it). */
static int read_triples(const char *path, char *s, uint64_t line, const uci_header *h,
                        uint32_t max_count, uint64_t room, triple *tr, uint32_t *doc_count,
                        uint64_t *first_line, rt_error *err)
{
    uint64_t n = 0;
    while (*s) {
        line++;
        char *e = strchr(s, '\n');
        char *next = e ? e + 1 : s + strlen(s);
        if (rest_blank(s) || rt_text_comment_line(s)) { /* e.g. blank lines at the end */
            s = next;
            continue;
        }
        triple one;
        if (parse_triple(path, s, line, h, max_count, &one, err))
            return -1;
        if (n == h->nnz || n == room)
            return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: more triples than the header's NNZ=%llu",
                           path, (unsigned long long)line, (unsigned long long)h->nnz);
        tr[n++] = one;
        if (!doc_count[one.doc]++)
            first_line[one.doc] = line;
        s = next;
    }
    if (n != h->nnz)
        return rt_fail(err, RT_EXIT_INPUT, "%s:%llu: file ends after %llu triples, header NNZ=%llu",
                       path, (unsigned long long)line, (unsigned long long)n,
                       (unsigned long long)h->nnz);
    return 0;
}

/* Words: from the vocabulary file, or the numbers 1..W. */
static int name_words(const char *path, const char *vocab, uint64_t W, rt_corpus *c, rt_error *err)
{
    if (vocab) {
        if (rt_corpus_read_vocab(vocab, c, err))
            return -1;
        if (c->words.n != W)
            return rt_fail(err, RT_EXIT_INPUT,
                           "%s:%llu: vocabulary has %llu words, %s header W=%llu", vocab,
                           (unsigned long long)(c->words.n + 1), (unsigned long long)c->words.n,
                           path, (unsigned long long)W);
        return 0;
    }
    for (uint64_t w = 1; w <= W; w++) {
        char buf[32];
        int len = snprintf(buf, sizeof(buf), "%llu", (unsigned long long)w);
        if (rt_corpus_intern(&c->words, buf, (size_t)len, err) < 0)
            return -1;
    }
    return 0;
}

/* Documents 1..D in order, named by their number, each with its triples
 * in input order (a stable bucketing by document). */
static int add_documents(const char *path, const triple *tr, uint64_t n, const uint32_t *doc_count,
                         const uint64_t *first_line, uint64_t D, rt_corpus *c, rt_error *err)
{
    uint64_t *start = rt_calloc_array(D + 1, sizeof(uint64_t), path, "header D", err);
    triple *sorted = start ? rt_alloc_array(n, sizeof(triple), path, "header NNZ", err) : NULL;
    if (!start || !sorted) {
        free(start);
        return -1;
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
        failed = rt_corpus_begin_doc(c, buf, (size_t)len, first_line[d], err) != 0;
        for (uint32_t j = 0; j < doc_count[d] && !failed; j++, i++)
            failed = rt_corpus_add(c, sorted[i].word, sorted[i].count, err) != 0;
    }
    free(sorted);
    return failed ? -1 : 0;
}

int rt_corpus_read_uci(const char *path, const rt_corpus_options *opt, rt_corpus *c, rt_error *err)
{
    rt_text t;
    if (rt_corpus_load_input(c, path, &t, err))
        return -1;
    triple *tr = NULL;
    uint32_t *doc_count = NULL;
    uint64_t *first_line = NULL;
    uci_header h;
    uint64_t line = 0;
    char *s = t.data;
    int rc = -1;
    /* The vocabulary is read before the triples: the budget of their
     * entries then counts its bytes (rt_corpus_load_side). */
    if (read_headers(path, t.len, opt->vocab != NULL, &s, &line, &h, err) ||
        name_words(path, opt->vocab, h.words, c, err))
        goto out;
    /* The file holds exactly NNZ triples (more or fewer is an error), each
     * an entry as read (12 bytes here, 12 more sorted, 4 + 4 in the
     * corpus): a header NNZ past the budget is refused at its line, before
     * the triples are allocated, and the body cannot pass it. */
    if (c->max_entries && h.nnz > c->max_entries) {
        rt_fail(err, RT_EXIT_INPUT,
                "%s:%llu: header NNZ=%llu: more entries than the %llu that --max-memory leaves "
                "room for; nothing written",
                path, (unsigned long long)h.nnz_line, (unsigned long long)h.nnz,
                (unsigned long long)c->max_entries);
        goto out;
    }
    /* Each triple takes at least "1 1 1\n": room for the triples the rest of
     * the file can hold is enough, whatever the header claims. */
    uint64_t room = (t.len - (uint64_t)(s - t.data) + 1) / 6;
    tr = rt_alloc_array(h.nnz < room ? h.nnz : room, sizeof(triple), path, "header NNZ", err);
    doc_count = tr ? rt_calloc_array(h.docs + 1, sizeof(uint32_t), path, "header D", err) : NULL;
    first_line =
        doc_count ? rt_calloc_array(h.docs + 1, sizeof(uint64_t), path, "header D", err) : NULL;
    if (!first_line)
        goto out;
    if (read_triples(path, s, line, &h, opt->max_count, room, tr, doc_count, first_line, err) ||
        add_documents(path, tr, h.nnz, doc_count, first_line, h.docs, c, err))
        goto out;
    rc = 0;
out:
    free(tr);
    free(doc_count);
    free(first_line);
    rt_text_free(&t);
    return rc;
}
