/*
 * corpus.h - bag-of-words corpora for LDA: readers and the in-memory form.
 *
 * Every reader produces the same thing: documents with dense ids 0..D-1 in
 * input order, each a list of (word, count) entries sorted by word with no
 * duplicates, words with dense ids 0..V-1, and the original id (name) of
 * every document and word.  Empty documents are kept.
 *
 * Formats (rt_corpus_format):
 *   uci     UCI bag of words: docword.*.txt (D, W, NNZ header lines, then
 *           "doc word count" 1-based), optional --vocab vocab.*.txt
 *   lines   Yahoo!LDA / WarpLDA / STRADS: "docid docid w1 w2 ..." with string
 *           or integer words, one document per line
 *   libsvm  "doc w:count w:count ..." (words are strings or integers; with a
 *           vocabulary, 0-based integer indices into it)
 *   ldac    Blei's lda-c: "N w:count ..." with N = number of pairs, 0-based
 *           word ids into --vocab
 *   text    raw text, one document per line, or one file per document when
 *           the input is a directory; lower-cased, split on non-letters,
 *           stop words removed
 *
 * Errors name the file and line: "FILE:LINE: what was wrong" (exit code 2).
 */
#ifndef ROTOR_CORPUS_H
#define ROTOR_CORPUS_H

#include "ground/ground.h"
#include "partition/partition.h" /* rt_idmap */

#include <stddef.h>
#include <stdint.h>

typedef enum rt_corpus_format {
    RT_CORPUS_AUTO = 0,
    RT_CORPUS_UCI,
    RT_CORPUS_LINES,
    RT_CORPUS_LIBSVM,
    RT_CORPUS_LDAC,
    RT_CORPUS_TEXT,
} rt_corpus_format;

/* A growable pool of NUL-terminated strings addressed by index. */
typedef struct rt_strpool {
    char *buf;
    size_t len, cap;
    uint64_t *off; /* start of string i */
    uint64_t n, ncap;
} rt_strpool;

typedef struct rt_corpus {
    uint64_t n_docs;
    uint64_t n_words;
    uint64_t n_entries; /* distinct (doc, word) pairs */
    uint64_t n_tokens;  /* sum of counts */
    uint64_t *doc_off;  /* n_docs + 1 offsets into word/count */
    uint64_t *doc_line; /* the input's line where each document starts, for messages (uci: its
                           first triple's; 0: none, a file of a directory, a uci document
                           without triples) */
    uint32_t *word;     /* dense word id of each entry */
    uint32_t *count;    /* >= 1 */
    rt_strpool doc_names;
    rt_idmap words;            /* word names; ids are dense word ids */
    rt_corpus_format format;   /* the format actually read (after auto) */
    uint64_t n_summed;         /* (document, word) pairs given more than once, each counted once */
    uint64_t first_summed_doc; /* the first document with such an entry (valid if n_summed) */
    /* builder state */
    uint64_t cap;
    uint64_t max_read, max_pairs; /* rt_corpus_options' */
    uint64_t max_entries;         /* 0, or the entries the read may hold beside the text
                                     loaded (entry_budget), for rt_corpus_add */
    uint64_t side_bytes; /* the --vocab and --stopwords files' bytes, held as words until the
                            read ends: counted in max_read as the input's text is */
    uint64_t doc_cap, line_cap;
    const struct rt_text *input; /* the input, loaded once by rt_corpus_read; NULL: a directory */
} rt_corpus;

/* What an entry as read holds in rt_corpus: its word and its count. */
#define RT_CORPUS_ENTRY_BYTES (2 * sizeof(uint32_t))

/* The largest count of one word in one document a plan or a model takes:
 * counts are kept as floats in the plan, exact up to 2^24. */
#define RT_CORPUS_MAX_COUNT (1u << 24)

typedef struct rt_corpus_options {
    rt_corpus_format format;
    const char *vocab;     /* vocabulary file (uci, libsvm, ldac), or NULL */
    const char *stopwords; /* text: replaces the built-in list, or NULL */
    uint64_t min_count;    /* drop words with fewer tokens (0 = keep all) */
    uint32_t max_count;    /* refuse a line's count above this, at its file:line (0 = 2^32 - 1);
                              not an option: set by a command whose model holds counts as floats */
    /* Not options: set from `rotor partition --max-memory` (0: no limit).
     * max_read: the bytes the read may hold, the input's text (loaded whole;
     * past max_read it is refused as it arrives, at the line reached:
     * rt_text_load_head's max_len) and RT_CORPUS_ENTRY_BYTES an entry as
     * read beside it (a token of the lines and text formats, a pair or
     * triple of the others; merged into (document, word) entries once read).
     * Once the text is in, the arrays never grow past the entries the rest
     * leaves room for and the entry past them is refused, exit 2, at its
     * FILE:LINE (uci: at the header when its NNZ is more); the text's length
     * is known then, from standard input or a pipe too.  A directory's
     * files are loaded one by one, each beside the entries before it.
     * max_pairs bounds uci, libsvm and ldac further: their entries as read
     * are distinct pairs unless the file repeats one (then summed, with a
     * warning), each costing what a merged entry does until the plan is
     * written, while a token of the others may merge into one. */
    uint64_t max_read, max_pairs;
} rt_corpus_options;

/* The options of rt_corpus_options (ground/opts.h): --format, --vocab,
 * --stopwords, --min-count; offsets into rt_corpus_options. */
extern const rt_opt rt_corpus_option_table[];

/* Read `path` (a file, a directory of text files, or "-" for standard
 * input) into `c`. */
int rt_corpus_read(const char *path, const rt_corpus_options *opt, rt_corpus *c, rt_error *err);
void rt_corpus_free(rt_corpus *c);
/* Names of the formats (option choices, ground/opts.h). */
extern const rt_opt_choice rt_corpus_formats[];
rt_corpus_format rt_corpus_format_parse(const char *name); /* -1 when unknown */
const char *rt_corpus_format_name(rt_corpus_format f);

/* ---- builder, used by the readers (and by tests and the generator) ---- */
void rt_corpus_init(rt_corpus *c);
/* A new document, named `name`, starting at line `line` of the input (0: none). */
int rt_corpus_begin_doc(rt_corpus *c, const char *name, size_t name_len, uint64_t line,
                        rt_error *err);
/* One entry of the current document; past c->max_entries an error (exit 2)
 * the caller prefixes with its FILE:LINE (rt_error_prefix). */
int rt_corpus_add(rt_corpus *c, uint32_t word, uint32_t count, rt_error *err);
/* Sort and merge each document's entries, count tokens. */
int rt_corpus_finish(rt_corpus *c, rt_error *err);
/* Drop words with fewer than min_count tokens, renumbering the rest in order. */
int rt_corpus_min_count(rt_corpus *c, uint64_t min_count, rt_error *err);

/* ---- strings ---- */
void rt_strpool_free(rt_strpool *p);
int rt_strpool_add(rt_strpool *p, const char *s, size_t len, rt_error *err);
static inline const char *rt_strpool_get(const rt_strpool *p, uint64_t i)
{
    return p->buf + p->off[i];
}
/* Dense id of a word, adding it when new; -1 (err set) on failure. */
static inline int64_t rt_corpus_intern(rt_idmap *m, const char *s, size_t len, rt_error *err)
{
    uint32_t id;
    return rt_idmap_intern(m, s, len, &id, err) ? -1 : (int64_t)id;
}

/* The corpus input itself: c->input when it was read already (standard
 * input; path is then "standard input", for messages), else the file at path. */
int rt_corpus_load_input(const rt_corpus *c, const char *path, rt_text *t, rt_error *err);
/* A file of a directory of text (one document), loaded whole within the
 * room c->max_read leaves beside the entries read so far; the entry bound
 * then counts its text. */
int rt_corpus_load_file(rt_corpus *c, const char *path, rt_text *t, rt_error *err);

/* A file read beside the corpus (--vocab, --stopwords), loaded whole within
 * the room c->max_read leaves beside the input's text, the entries and the
 * side files read so far (refused past it at the line reached, exit 2); its
 * bytes then count as held until the read ends, as its words are, and the
 * entry bound shrinks by them. */
int rt_corpus_load_side(rt_corpus *c, const char *path, rt_text *t, rt_error *err);

/* Refuse the first data line [s, s + n) of a line-format corpus (line
 * `line` of path) when it is JSON (rt_text_json_line): a JSON dump read as
 * text would train on its keys and quotes.  0 when it is not. */
int rt_corpus_refuse_json(const char *path, uint64_t line, const char *s, size_t n, rt_error *err);

/* The error of a line whose count k exceeds rt_corpus_options.max_count. */
int rt_corpus_count_beyond(const char *path, uint64_t line, uint64_t k, uint32_t max_count,
                           rt_error *err);

/* Built-in English stop words (NULL-terminated). */
extern const char *const rt_english_stopwords[];

#endif
