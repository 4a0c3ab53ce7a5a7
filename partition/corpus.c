/* corpus.c - the in-memory corpus: builder, string pool and map, file
 * loading, minimum counts and reader dispatch. */
#define _GNU_SOURCE
#include "partition/corpus.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Readers (corpus_uci.c, corpus_lines.c, corpus_text.c). */
int rt_corpus_read_uci(const char *path, const rt_corpus_options *opt, rt_corpus *c, rt_error *err);
int rt_corpus_read_lines(const char *path, const rt_corpus_options *opt, rt_corpus *c,
                         rt_error *err);
int rt_corpus_read_text(const char *path, const rt_corpus_options *opt, rt_corpus *c,
                        rt_error *err);

const rt_opt_choice rt_corpus_formats[] = {{"auto", RT_CORPUS_AUTO},
                                           {"uci", RT_CORPUS_UCI},
                                           {"lines", RT_CORPUS_LINES},
                                           {"libsvm", RT_CORPUS_LIBSVM},
                                           {"ldac", RT_CORPUS_LDAC},
                                           {"text", RT_CORPUS_TEXT},
                                           {NULL, 0}};

const rt_opt rt_corpus_option_table[] = {
    RT_ENUM_OPT("format", 'f', rt_corpus_options, format, rt_corpus_formats, "auto",
                "corpus format of --input"),
    RT_PATH_OPT("vocab", 0, rt_corpus_options, vocab, "FILE", NULL, 0,
                "vocabulary, one word per line (uci, libsvm, ldac)"),
    RT_PATH_OPT("stopwords", 0, rt_corpus_options, stopwords, "FILE", NULL, 0,
                "text: stop words replacing the built-in English list"),
    RT_U64_OPT("min-count", 0, rt_corpus_options, min_count, "N", "0", 0, 0, 0,
               "drop words with fewer than N tokens"),
    {0}};

rt_corpus_format rt_corpus_format_parse(const char *name)
{
    for (const rt_opt_choice *c = rt_corpus_formats; c->name; c++)
        if (!strcmp(name, c->name))
            return (rt_corpus_format)c->value;
    return (rt_corpus_format)-1;
}

const char *rt_corpus_format_name(rt_corpus_format f)
{
    for (const rt_opt_choice *c = rt_corpus_formats; c->name; c++)
        if (c->value == (int)f)
            return c->name;
    return "?";
}

/* ------------------------------------------------------------ strings */

void rt_strpool_free(rt_strpool *p)
{
    free(p->buf);
    free(p->off);
    memset(p, 0, sizeof(*p));
}

int rt_strpool_add(rt_strpool *p, const char *s, size_t len, rt_error *err)
{
    uint64_t cap = p->cap;
    if (rt_grow_array((void **)&p->buf, &cap, p->len + len + 1, 1, err) ||
        rt_grow_array((void **)&p->off, &p->ncap, p->n + 1, sizeof(uint64_t), err))
        return -1;
    p->cap = (size_t)cap;
    memcpy(p->buf + p->len, s, len);
    p->buf[p->len + len] = '\0';
    p->off[p->n++] = p->len;
    p->len += len + 1;
    return 0;
}

/* ------------------------------------------------------------ files */

int rt_corpus_load_input(const rt_corpus *c, const char *path, rt_text *t, rt_error *err)
{
    if (c->input) {
        *t = *c->input;
        t->borrowed = 1;
        return 0;
    }
    return rt_text_load(path, t, err);
}

/* The entries the read may hold (0: no bound): what max_read leaves beside
 * the text loaded, text_len bytes, counted here and not by the caller,
 * which knows no pipe's length; for the pair formats no more than
 * max_pairs.  + 1 each: a budget is a floor, and the reader refuses only
 * what the check after the read would refuse too. */
static uint64_t entry_budget(const rt_corpus *c, uint64_t text_len)
{
    uint64_t n = 0, held = text_len + c->side_bytes;
    if (c->max_read)
        n = (c->max_read > held ? c->max_read - held : 0) / RT_CORPUS_ENTRY_BYTES + 1;
    int pairs = c->format != RT_CORPUS_LINES && c->format != RT_CORPUS_TEXT;
    if (pairs && c->max_pairs && (!n || c->max_pairs < n))
        n = c->max_pairs;
    return n;
}

/* The most bytes a file loaded now may take (0: no limit): what max_read
 * leaves beside `held`; 1, not 0 (none), when that took it all. */
static uint64_t load_room(const rt_corpus *c, uint64_t held)
{
    if (!c->max_read)
        return 0;
    return c->max_read > held ? c->max_read - held : 1;
}

int rt_corpus_load_side(rt_corpus *c, const char *path, rt_text *t, rt_error *err)
{
    uint64_t text_len = c->input ? c->input->len : 0;
    uint64_t held = text_len + c->side_bytes + c->n_entries * RT_CORPUS_ENTRY_BYTES;
    if (rt_text_load_head(path, 0, NULL, NULL, load_room(c, held), t, err))
        return -1;
    c->side_bytes += t->len;
    c->max_entries = entry_budget(c, text_len);
    return 0;
}

int rt_corpus_load_file(rt_corpus *c, const char *path, rt_text *t, rt_error *err)
{
    uint64_t held = c->side_bytes + c->n_entries * RT_CORPUS_ENTRY_BYTES;
    if (rt_text_load_head(path, 0, NULL, NULL, load_room(c, held), t, err))
        return -1;
    c->max_entries = entry_budget(c, t->len);
    return 0;
}

int rt_corpus_count_beyond(const char *path, uint64_t line, uint64_t k, uint32_t max_count,
                           rt_error *err)
{
    return rt_fail(err, RT_EXIT_INPUT,
                   "%s:%llu: a word counted %llu times; at most %lu per document and word", path,
                   (unsigned long long)line, (unsigned long long)k, (unsigned long)max_count);
}

int rt_corpus_refuse_json(const char *path, uint64_t line, const char *s, size_t n, rt_error *err)
{
    while (n && (*s == ' ' || *s == '\t')) {
        s++;
        n--;
    }
    if (!rt_text_json_line(s, n))
        return 0;
    return rt_fail(err, RT_EXIT_INPUT,
                   "%s:%llu: JSON, not a corpus: write one document per line first (e.g. "
                   "jq -r '.text | gsub(\"\\\\s+\"; \" \")' FILE > docs.txt, with the key "
                   "that holds the text, then --format text)",
                   path, (unsigned long long)line);
}

/* ------------------------------------------------------------ builder */

void rt_corpus_init(rt_corpus *c)
{
    memset(c, 0, sizeof(*c));
    rt_idmap_init(&c->words);
}

void rt_corpus_free(rt_corpus *c)
{
    free(c->doc_off);
    free(c->doc_line);
    free(c->word);
    free(c->count);
    rt_strpool_free(&c->doc_names);
    rt_idmap_free(&c->words);
    memset(c, 0, sizeof(*c));
}

int rt_corpus_begin_doc(rt_corpus *c, const char *name, size_t name_len, uint64_t line,
                        rt_error *err)
{
    if (rt_grow_array((void **)&c->doc_off, &c->doc_cap, c->n_docs + 2, sizeof(uint64_t), err) ||
        rt_grow_array((void **)&c->doc_line, &c->line_cap, c->n_docs + 1, sizeof(uint64_t), err))
        return -1;
    c->doc_line[c->n_docs] = line;
    if (rt_strpool_add(&c->doc_names, name, name_len, err))
        return -1;
    c->doc_off[c->n_docs] = c->n_entries;
    c->n_docs++;
    c->doc_off[c->n_docs] = c->n_entries;
    return 0;
}

/* Room for one more entry: the arrays double, but not past max_entries (all
 * the budget lets the read hold: doubling past it would take up to twice
 * that before the refusal). */
static int grow_entries(rt_corpus *c, rt_error *err)
{
    uint64_t n = c->cap ? 2 * c->cap : 64, bytes;
    if (c->max_entries && n > c->max_entries) /* > cap: rt_corpus_add refuses at max_entries */
        n = c->max_entries;
    uint32_t **arrays[2] = {&c->word, &c->count};
    for (int i = 0; i < 2; i++) {
        void *q = rt_mul_overflows(n, sizeof(uint32_t), &bytes) || bytes > RT_SIZE_LIMIT
                      ? NULL
                      : realloc(*arrays[i], (size_t)bytes);
        if (!q) /* the arrays stay as they were, each with room for at least cap */
            return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (%llu entries)",
                           (unsigned long long)n);
        *arrays[i] = q;
    }
    c->cap = n;
    return 0;
}

int rt_corpus_add(rt_corpus *c, uint32_t word, uint32_t count, rt_error *err)
{
    if (c->max_entries && c->n_entries >= c->max_entries)
        return rt_fail(err, RT_EXIT_INPUT,
                       "entry %llu (a document's word, as read) is more than the %llu that "
                       "--max-memory leaves room for; nothing written",
                       (unsigned long long)c->n_entries + 1, (unsigned long long)c->max_entries);
    if (c->n_entries == c->cap && grow_entries(c, err))
        return -1;
    c->word[c->n_entries] = word;
    c->count[c->n_entries] = count;
    c->n_entries++;
    c->doc_off[c->n_docs] = c->n_entries;
    return 0;
}

/* Insertion sort is fine for short documents; long ones use a radix-free
 * merge via qsort on packed (word << 32 | count) keys. */
static int cmp_u64(const void *a, const void *b)
{
    uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
    return x < y ? -1 : x > y;
}

int rt_corpus_finish(rt_corpus *c, rt_error *err)
{
    if (!c->doc_off) {
        c->doc_off = calloc(1, sizeof(uint64_t));
        if (!c->doc_off)
            return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    }
    uint64_t *tmp = NULL, tcap = 0, out = 0, tokens = 0;
    uint64_t last_merged = UINT64_MAX; /* the entry merged into last: a pair counts once */
    for (uint64_t d = 0; d < c->n_docs; d++) {
        uint64_t a = c->doc_off[d], b = c->doc_off[d + 1], n = b - a;
        if (rt_grow_array((void **)&tmp, &tcap, n + 1, sizeof(uint64_t), err)) {
            free(tmp);
            return -1;
        }
        for (uint64_t i = 0; i < n; i++)
            tmp[i] = (uint64_t)c->word[a + i] << 32 | c->count[a + i];
        qsort(tmp, n, sizeof(uint64_t), cmp_u64);
        c->doc_off[d] = out;
        for (uint64_t i = 0; i < n; i++) {
            uint32_t w = (uint32_t)(tmp[i] >> 32), k = (uint32_t)tmp[i];
            if (out > c->doc_off[d] && c->word[out - 1] == w) {
                if ((uint64_t)c->count[out - 1] + k > UINT32_MAX) {
                    free(tmp);
                    return rt_fail(err, RT_EXIT_INPUT, "document %s: count overflow",
                                   rt_strpool_get(&c->doc_names, d));
                }
                c->count[out - 1] += k;
                if (last_merged != out - 1 && c->n_summed++ == 0)
                    c->first_summed_doc = d;
                last_merged = out - 1;
            } else {
                c->word[out] = w;
                c->count[out] = k;
                out++;
            }
            tokens += k;
        }
    }
    free(tmp);
    c->doc_off[c->n_docs] = out;
    c->n_entries = out;
    c->n_tokens = tokens;
    c->n_words = c->words.n;
    return 0;
}

int rt_corpus_min_count(rt_corpus *c, uint64_t min_count, rt_error *err)
{
    if (min_count <= 1)
        return 0;
    uint64_t *tot = calloc(c->n_words + 1, sizeof(uint64_t));
    uint32_t *remap = malloc((c->n_words + 1) * sizeof(uint32_t));
    rt_idmap kept;
    rt_idmap_init(&kept);
    if (!tot || !remap) {
        free(tot);
        free(remap);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    }
    for (uint64_t i = 0; i < c->n_entries; i++)
        tot[c->word[i]] += c->count[i];
    for (uint64_t w = 0; w < c->n_words; w++) {
        remap[w] = UINT32_MAX;
        if (tot[w] >= min_count) {
            const char *s = rt_idmap_str(&c->words, w);
            int64_t id = rt_corpus_intern(&kept, s, strlen(s), err);
            if (id < 0) {
                free(tot);
                free(remap);
                rt_idmap_free(&kept);
                return -1;
            }
            remap[w] = (uint32_t)id;
        }
    }
    uint64_t out = 0, tokens = 0;
    for (uint64_t d = 0; d < c->n_docs; d++) {
        uint64_t a = c->doc_off[d], b = c->doc_off[d + 1];
        c->doc_off[d] = out;
        for (uint64_t i = a; i < b; i++) {
            if (remap[c->word[i]] == UINT32_MAX)
                continue;
            c->word[out] = remap[c->word[i]];
            c->count[out] = c->count[i];
            tokens += c->count[i];
            out++;
        }
    }
    c->doc_off[c->n_docs] = out;
    c->n_entries = out;
    c->n_tokens = tokens;
    rt_idmap_free(&c->words);
    c->words = kept;
    c->n_words = kept.n;
    free(tot);
    free(remap);
    return 0;
}

/* ------------------------------------------------------------ dispatch */

/* A bounded look (64 KiB, 64 lines): an endless device must not hang the guess. */
#define SNIFF_HEAD (64u << 10)

/* Where the line starting at s ends: its '\n', or a lone '\r' (an old Mac
 * file's lines are lines here too), or NULL at the end of the head. */
static const char *head_line_end(const char *s, const char *end)
{
    for (; s < end; s++)
        if (*s == '\n' || (*s == '\r' && (s + 1 == end || s[1] != '\n')))
            return s;
    return NULL;
}

/* The format the first lines of a corpus (head[0..len)) suggest.  The head
 * is only read: from standard input it is the loaded corpus itself, which
 * the reader parses next (turning a '\r' cut from its '\n' at the end of
 * the head into a line end added a line there: later lines' numbers, and
 * an lda-c document's name, differed from the same file's). */
static rt_corpus_format guess_from_head(const char *head, size_t len)
{
    const char *s = head + rt_utf8_bom_len(head, len), *end = head + len;
    int single_ints = 0; /* leading lines holding one integer: a UCI header */
    for (int looked = 0; looked < 64 && s < end; looked++) {
        const char *e = head_line_end(s, end);
        char line[4096], a[256], b[256];
        size_t n = (size_t)((e ? e : end) - s);
        n = n < sizeof(line) - 1 ? n : sizeof(line) - 1;
        memcpy(line, s, n);
        line[n] = '\0';
        s = e ? e + 1 : end;
        int got = sscanf(line, "%255s %255s", a, b);
        if (got <= 0 || rt_text_comment_line(line))
            continue;
        if (got == 1 && strspn(a, "0123456789") == strlen(a)) {
            if (++single_ints == 3)
                return RT_CORPUS_UCI;
            continue;
        }
        if (single_ints)
            break;
        if (got == 2 && strchr(b, ':'))
            return strspn(a, "0123456789") == strlen(a) ? RT_CORPUS_LDAC : RT_CORPUS_LIBSVM;
        if (got == 2 && !strcmp(a, b))
            return RT_CORPUS_LINES;
        break;
    }
    return RT_CORPUS_TEXT;
}

/* The format guessed from the corpus's name (`name`: "standard input" for
 * "-") and its first bytes. */
static rt_corpus_format sniff(const char *name, const char *head, size_t len)
{
    const char *base = strrchr(name, '/');
    base = base ? base + 1 : name;
    if (!strncmp(base, "docword", 7)) /* a pipe or FIFO keeps its name too */
        return RT_CORPUS_UCI;
    return guess_from_head(head, len);
}

static int options_fit_format(const char *name, const rt_corpus_options *opt, rt_corpus_format f,
                              rt_error *err);
static int read_format(const char *name, const rt_corpus_options *opt, rt_corpus_format f,
                       rt_corpus *c, rt_error *err);

/* The corpus's format, settled from its head while it loads. */
typedef struct {
    const char *name;
    const rt_corpus_options *opt;
    rt_corpus_format f;
} head_guess;

static int guess_at_head(const char *head, size_t len, void *ctx, rt_error *err)
{
    head_guess *g = ctx;
    if (g->opt->format == RT_CORPUS_AUTO)
        g->f = sniff(g->name, head, len);
    return options_fit_format(g->name, g->opt, g->f, err);
}

/* A directory of text files (one document each) is read file by file. */
static int read_dir_corpus(const char *path, const rt_corpus_options *opt, rt_corpus *c,
                           rt_error *err)
{
    rt_corpus_format f = opt->format == RT_CORPUS_AUTO ? RT_CORPUS_TEXT : opt->format;
    return options_fit_format(path, opt, f, err) ? -1 : read_format(path, opt, f, c, err);
}

/* The input is opened once and loaded into memory, the format guessed from
 * its head on the way: standard input, a pipe (`--input <(xzcat
 * docword.txt.xz)`), a FIFO or a device gives its bytes once, and a file
 * opened twice (once for the guess) could be another file the second time. */
int rt_corpus_read(const char *path, const rt_corpus_options *opt, rt_corpus *c, rt_error *err)
{
    rt_corpus_init(c);
    struct stat st;
    if (!rt_is_stdio(path) && stat(path, &st) == 0 && S_ISDIR(st.st_mode))
        return read_dir_corpus(path, opt, c, err);
    head_guess g = {
        .name = rt_is_stdio(path) ? "standard input" : path, .opt = opt, .f = opt->format};
    rt_text in;
    if (rt_text_load_head(path, SNIFF_HEAD, guess_at_head, &g, opt->max_read, &in, err))
        return -1;
    c->input = &in;
    int rc = read_format(g.name, opt, g.f, c, err);
    c->input = NULL;
    rt_text_free(&in);
    return rc;
}

/* An option the format has no use for is refused, not ignored: the user
 * asked for stop words to be removed, or for ids to be read as indices. */
static int options_fit_format(const char *name, const rt_corpus_options *opt, rt_corpus_format f,
                              rt_error *err)
{
    const char *how = opt->format == RT_CORPUS_AUTO ? "guessed" : "given";
    if (opt->stopwords && f != RT_CORPUS_TEXT)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: --stopwords applies to raw text only, and this corpus is in format %s "
                       "(%s); its words are already chosen, so no stop words would be removed",
                       name, rt_corpus_format_name(f), how);
    if (opt->vocab && (f == RT_CORPUS_TEXT || f == RT_CORPUS_LINES))
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: --vocab applies to uci, libsvm and ldac only, and this corpus is in "
                       "format %s (%s), whose words are written out",
                       name, rt_corpus_format_name(f), how);
    return 0;
}

/* Read the corpus in format f (settled: guessed or given, and fit to the
 * options), then merge, count and drop rare words. */
static int read_format(const char *name, const rt_corpus_options *opt, rt_corpus_format f,
                       rt_corpus *c, rt_error *err)
{
    int rc;
    c->format = f;
    c->max_read = opt->max_read;
    c->max_pairs = opt->max_pairs;
    c->max_entries = entry_budget(c, c->input ? c->input->len : 0);
    switch (f) {
    case RT_CORPUS_UCI:
        rc = rt_corpus_read_uci(name, opt, c, err);
        break;
    case RT_CORPUS_LINES:
    case RT_CORPUS_LIBSVM:
    case RT_CORPUS_LDAC: {
        rt_corpus_options o = *opt;
        o.format = f;
        rc = rt_corpus_read_lines(name, &o, c, err);
        break;
    }
    case RT_CORPUS_TEXT:
        rc = rt_corpus_read_text(name, opt, c, err);
        break;
    default:
        rc = rt_fail(err, RT_EXIT_INPUT, "unknown corpus format");
    }
    if (rc == 0)
        rc = rt_corpus_finish(c, err);
    if (rc == 0)
        rc = rt_corpus_min_count(c, opt->min_count, err);
    if (rc != 0)
        rt_corpus_free(c);
    else {
        c->format = f;
        if (opt->format == RT_CORPUS_AUTO)
            rt_info("corpus %s: format %s (guessed; --format overrides)", name,
                    rt_corpus_format_name(f));
    }
    return rc;
}
