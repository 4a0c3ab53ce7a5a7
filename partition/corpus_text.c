/* corpus_text.c - raw text: one document per line of a file, or one file per
 * document under a directory (files taken in name order).  Text is split on
 * anything that is not a letter (UTF-8: letters of any script, by
 * libunistring's character classes; see is_letter) and lower-cased; words of
 * one letter and stop words are dropped.  The stop-word list is the built-in
 * English one (rt_english_stopwords) or, with --stopwords FILE, the words of
 * that file (blank-separated, so one per line works). */
#define _GNU_SOURCE
#include "partition/corpus.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unicase.h>
#include <unictype.h>
#include <unistr.h>

const char *const rt_english_stopwords[] = {
    "a",       "about",   "above",      "after",   "again",     "against", "all",      "also",
    "am",      "an",      "and",        "any",     "are",       "aren",    "as",       "at",
    "be",      "because", "been",       "before",  "being",     "below",   "between",  "both",
    "but",     "by",      "can",        "cannot",  "could",     "couldn",  "did",      "didn",
    "do",      "does",    "doesn",      "doing",   "don",       "down",    "during",   "each",
    "few",     "for",     "from",       "further", "had",       "hadn",    "has",      "hasn",
    "have",    "haven",   "having",     "he",      "her",       "here",    "hers",     "herself",
    "him",     "himself", "his",        "how",     "however",   "i",       "if",       "in",
    "into",    "is",      "isn",        "it",      "its",       "itself",  "just",     "ll",
    "me",      "more",    "most",       "mustn",   "my",        "myself",  "no",       "nor",
    "not",     "now",     "of",         "off",     "on",        "once",    "only",     "or",
    "other",   "ought",   "our",        "ours",    "ourselves", "out",     "over",     "own",
    "re",      "same",    "say",        "said",    "says",      "shan",    "she",      "should",
    "shouldn", "so",      "some",       "such",    "than",      "that",    "the",      "their",
    "theirs",  "them",    "themselves", "then",    "there",     "these",   "they",     "this",
    "those",   "through", "to",         "too",     "under",     "until",   "up",       "ve",
    "very",    "was",     "wasn",       "we",      "were",      "weren",   "what",     "when",
    "where",   "which",   "while",      "who",     "whom",      "why",     "will",     "with",
    "won",     "would",   "wouldn",     "you",     "your",      "yours",   "yourself", "yourselves",
    "one",     "two",     "may",        "might",   "must",      "shall",   "us",       "many",
    "much",    "every",   "even",       "yet",     "still",     "upon",    "get",      "got",
    NULL};

/* One UTF-8 character at [s, end): its code point and length in bytes;
 * length 1 and code point 0xFFFD for a byte that starts no well-formed
 * character (a stray byte of Latin-1 text, a cut sequence). */
static ucs4_t utf8_next(const unsigned char *s, const unsigned char *end, size_t *len)
{
    *len = 1;
    if (s[0] < 0x80) /* most text: no call into the library per byte */
        return s[0];
    ucs4_t cp;
    int n = u8_mbtoucr(&cp, s, (size_t)(end - s));
    *len = n > 0 ? (size_t)n : 1;
    return n > 0 ? cp : 0xFFFD;
}

/* Letters make words: Unicode's alphabetic characters of every script, and
 * the combining marks that spell them ("cafe" + U+0301, Devanagari's vowel
 * signs).  Digits, punctuation, symbols (emoji) and spaces are not letters,
 * so "don't" and "don’t" split alike. */
static int is_letter(ucs4_t cp)
{
    if (cp < 0x80)
        return (cp | 0x20) >= 'a' && (cp | 0x20) <= 'z';
    return cp != 0xFFFD &&
           (uc_is_property_alphabetic(cp) || uc_is_general_category(cp, UC_CATEGORY_M));
}

/* The lower-cased word [b, end) into out (room for end - b bytes; out may
 * be b); its length.  Unicode's simple lower case, the same words on every
 * machine whatever the locale; a letter whose lower case would need more
 * bytes than it has (a few Latin Extended ones) stays as it is, so the word
 * never grows. */
static size_t lower_word(const unsigned char *b, const unsigned char *end, char *out)
{
    size_t n = 0, len;
    while (b < end) {
        ucs4_t cp = utf8_next(b, end, &len);
        if (cp < 0x80) {
            out[n++] = (char)(cp >= 'A' && cp <= 'Z' ? cp | 0x20 : cp);
            b++;
            continue;
        }
        uint8_t low[6];
        int m = cp == 0xFFFD && len == 1 ? -1 : u8_uctomb(low, uc_tolower(cp), sizeof(low));
        if (m > 0 && (size_t)m <= len) {
            memcpy(out + n, low, (size_t)m);
            n += (size_t)m;
        } else { /* a byte of no character (a stop-word file's), or a longer lower case */
            memmove(out + n, b, len);
            n += len;
        }
        b += len;
    }
    return n;
}

typedef struct text_ctx {
    rt_corpus *c;
    rt_idmap stop;
    char *word; /* lower-cased scratch */
    size_t word_cap;
    uint64_t bad_bytes; /* bytes that start no UTF-8 character (words split there) */
    uint64_t bad_doc;   /* 1 + the document where the first was, 0: none */
} text_ctx;

static int load_stopwords(text_ctx *x, const char *path, rt_error *err)
{
    if (!path) {
        for (size_t i = 0; rt_english_stopwords[i]; i++)
            if (rt_corpus_intern(&x->stop, rt_english_stopwords[i], strlen(rt_english_stopwords[i]),
                                 err) < 0)
                return -1;
        return 0;
    }
    rt_text t;
    if (rt_corpus_load_side(x->c, path, &t, err))
        return -1;
    char *save = NULL;
    for (char *w = strtok_r(t.data, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
        size_t len = strlen(w); /* lower-cased in place, as the text's words are */
        len = lower_word((const unsigned char *)w, (const unsigned char *)w + len, w);
        if (rt_corpus_intern(&x->stop, w, len, err) < 0) {
            rt_text_free(&t);
            return -1;
        }
    }
    rt_text_free(&t);
    return 0;
}

/* The next word at or after *s: its bytes [*b, *s) and its letters; *bad
 * counts the bytes of no UTF-8 character skipped on the way. */
static size_t next_word(const unsigned char **s, const unsigned char *end, const unsigned char **b,
                        uint64_t *bad)
{
    size_t len, letters = 0;
    while (*s < end) {
        const ucs4_t cp = utf8_next(*s, end, &len);
        if (is_letter(cp))
            break;
        *bad += cp == 0xFFFD && len == 1;
        *s += len;
    }
    *b = *s;
    while (*s < end && is_letter(utf8_next(*s, end, &len))) {
        *s += len;
        letters++;
    }
    return letters;
}

/* Tokenise [s, end) into the current document. */
static int add_text(text_ctx *x, const char *text, const char *text_end, rt_error *err)
{
    const unsigned char *s = (const unsigned char *)text, *end = (const unsigned char *)text_end;
    while (s < end) {
        const unsigned char *b;
        const uint64_t bad = x->bad_bytes;
        const size_t letters = next_word(&s, end, &b, &x->bad_bytes);
        if (x->bad_bytes > bad && !x->bad_doc)
            x->bad_doc = x->c->n_docs;
        if (letters < 2)
            continue;
        size_t bytes = (size_t)(s - b);
        if (bytes > x->word_cap) {
            char *nw = realloc(x->word, bytes);
            if (!nw)
                return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
            x->word = nw;
            x->word_cap = bytes;
        }
        size_t n = lower_word(b, s, x->word);
        if (rt_idmap_find(&x->stop, x->word, n) >= 0)
            continue;
        int64_t id = rt_corpus_intern(&x->c->words, x->word, n, err);
        if (id < 0 || rt_corpus_add(x->c, (uint32_t)id, 1, err))
            return -1;
    }
    return 0;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

static int read_dir(text_ctx *x, const char *path, rt_error *err)
{
    DIR *dir = opendir(path);
    if (!dir)
        return rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot open directory", path);
    char **names = NULL;
    size_t n = 0, cap = 0;
    int rc = 0;
    struct dirent *de;
    while ((de = readdir(dir)) != NULL) {
        if (de->d_name[0] == '.')
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 256;
            char **nn = realloc(names, cap * sizeof(char *));
            if (!nn) {
                rc = rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
                break;
            }
            names = nn;
        }
        if (!(names[n] = strdup(de->d_name))) {
            rc = rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
            break;
        }
        n++;
    }
    closedir(dir);
    if (rc == 0 && n > 1) /* an empty directory has no list (qsort wants one) */
        qsort(names, n, sizeof(char *), cmp_str);
    for (size_t i = 0; i < n && rc == 0; i++) {
        char full[4096];
        struct stat st;
        if (rt_path_join(full, sizeof(full), path, names[i], err)) {
            rc = -1;
            break;
        }
        if (stat(full, &st) != 0 || !S_ISREG(st.st_mode))
            continue;
        rt_text t;
        if (rt_corpus_load_file(x->c, full, &t, err) ||
            rt_corpus_begin_doc(x->c, names[i], strlen(names[i]), 0, err))
            rc = -1;
        else if (add_text(x, t.data, t.data + t.len, err))
            rc = rt_error_prefix(err, "%s", full); /* one document: the file is its place */
        rt_text_free(&t);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
}

/* Only ASCII white space (a "\r" of a CRLF line included)? */
static int blank_line(const char *s, const char *end)
{
    while (s < end && isspace((unsigned char)*s))
        s++;
    return s == end;
}

static int read_file_lines(text_ctx *x, const char *path, rt_error *err)
{
    rt_text t;
    if (rt_corpus_load_input(x->c, path, &t, err))
        return -1;
    const char *s = t.data, *end = t.data + t.len;
    unsigned long long line = 0;
    int rc = 0;
    while (s < end && rc == 0) {
        line++;
        const char *e = memchr(s, '\n', (size_t)(end - s));
        const char *le = e ? e : end;
        char name[32];
        int len = snprintf(name, sizeof(name), "%llu", line);
        /* A line is a document named by its number, even when no word of
         * it is kept (only stop words: an empty document, counted); a
         * blank line is none, as in the lines formats. */
        if (!blank_line(s, le)) {
            if ((!x->c->n_docs && rt_corpus_refuse_json(path, line, s, (size_t)(le - s), err)) ||
                rt_corpus_begin_doc(x->c, name, (size_t)len, line, err))
                rc = -1;
            else if (add_text(x, s, le, err))
                rc = rt_error_prefix(err, "%s:%llu", path, line);
        }
        s = e ? e + 1 : end;
    }
    rt_text_free(&t);
    return rc;
}

int rt_corpus_read_text(const char *path, const rt_corpus_options *opt, rt_corpus *c, rt_error *err)
{
    text_ctx x = {.c = c};
    rt_idmap_init(&x.stop);
    struct stat st;
    int rc;
    if (load_stopwords(&x, opt->stopwords, err))
        rc = -1;
    else if (c->input)
        rc = read_file_lines(&x, path, err);
    else if (stat(path, &st) != 0)
        rc = rt_fail_errno(err, RT_EXIT_INPUT, errno, "%s: cannot open", path);
    else if (S_ISDIR(st.st_mode))
        rc = read_dir(&x, path, err);
    else
        rc = read_file_lines(&x, path, err);
    /* A Latin-1 corpus read as UTF-8 loses its accented letters ("café"
     * became "caf") without an error: say so once. */
    if (rc == 0 && x.bad_bytes)
        rt_warn("%s: %llu bytes that are not UTF-8 (the first in document %s): raw text is read "
                "as UTF-8, and its words were split there; a Latin-1 file? convert it first "
                "('iconv -f latin1 -t utf-8')",
                path, (unsigned long long)x.bad_bytes,
                x.bad_doc ? rt_strpool_get(&c->doc_names, x.bad_doc - 1) : "?");
    rt_idmap_free(&x.stop);
    free(x.word);
    return rc;
}
