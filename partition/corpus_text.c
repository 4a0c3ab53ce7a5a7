/* corpus_text.c - raw text: one document per line of a file, or one file per
 * document under a directory (files taken in name order).  Text is
 * lower-cased (ASCII) and split on anything that is not a letter; words of
 * one letter and stop words are dropped.  The stop-word list is the built-in
 * English one (rt_english_stopwords) or, with --stopwords FILE, the words of
 * that file (blank-separated, so one per line works). */
#define _GNU_SOURCE
#include "partition/corpus.h"

#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

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

static int is_letter(unsigned char ch)
{
    return (ch | 0x20) >= 'a' && (ch | 0x20) <= 'z';
}

typedef struct text_ctx {
    rt_corpus *c;
    rt_idmap stop;
    char *word; /* lower-cased scratch */
    size_t word_cap;
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
    if (rt_text_load(path, &t, err))
        return -1;
    char *save = NULL;
    for (char *w = strtok_r(t.data, " \t\r\n", &save); w; w = strtok_r(NULL, " \t\r\n", &save)) {
        for (char *p = w; *p; p++)
            if (*p >= 'A' && *p <= 'Z')
                *p = (char)(*p | 0x20);
        if (rt_corpus_intern(&x->stop, w, strlen(w), err) < 0) {
            rt_text_free(&t);
            return -1;
        }
    }
    rt_text_free(&t);
    return 0;
}

/* Tokenise [s, end) into the current document. */
static int add_text(text_ctx *x, const char *s, const char *end, rt_error *err)
{
    while (s < end) {
        while (s < end && !is_letter((unsigned char)*s))
            s++;
        const char *b = s;
        while (s < end && is_letter((unsigned char)*s))
            s++;
        size_t n = (size_t)(s - b);
        if (n < 2)
            continue;
        if (n > x->word_cap) {
            char *nw = realloc(x->word, n);
            if (!nw)
                return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
            x->word = nw;
            x->word_cap = n;
        }
        for (size_t i = 0; i < n; i++)
            x->word[i] = (char)(b[i] | 0x20);
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
    if (rc == 0)
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
        if (rt_text_load(full, &t, err) ||
            rt_corpus_begin_doc(x->c, names[i], strlen(names[i]), err) ||
            add_text(x, t.data, t.data + t.len, err))
            rc = -1;
        rt_text_free(&t);
    }
    for (size_t i = 0; i < n; i++)
        free(names[i]);
    free(names);
    return rc;
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
        /* Every line is a document, an empty one included (it is counted). */
        if (!(le == s && !e)) {
            if (rt_corpus_begin_doc(x->c, name, (size_t)len, err) || add_text(x, s, le, err))
                rc = -1;
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
    rt_idmap_free(&x.stop);
    free(x.word);
    return rc;
}
