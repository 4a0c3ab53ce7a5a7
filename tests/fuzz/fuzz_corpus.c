/* fuzz_corpus.c - the LDA corpus readers (one target per format:
 * FUZZ_CORPUS is an rt_corpus_format; RT_CORPUS_AUTO also fuzzes the
 * sniffer).  Input "MAIN\n====\nSIDE": SIDE, when present, is the
 * vocabulary (uci, libsvm, ldac) or the stop-word list (text).
 *
 * A file and standard input are two ways in (each opened once and loaded
 * into memory, the format guessed from the head of that load; only a file's
 * name can hint, "docword"): both must give the same corpus, or both refuse
 * it. */
#include "partition/corpus.h"
#include "tests/fuzz/fuzz.h"

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Every document's entries must be sorted, distinct, in range and positive,
 * each within the count bound unless summed from repeated pairs. */
static void check(const rt_corpus *c, uint32_t max_count)
{
    if (c->doc_off[0] != 0 || c->doc_off[c->n_docs] != c->n_entries)
        __builtin_trap();
    for (uint64_t d = 0; d < c->n_docs; d++)
        for (uint64_t i = c->doc_off[d]; i < c->doc_off[d + 1]; i++)
            if (c->word[i] >= c->n_words || c->count[i] == 0 ||
                (max_count && c->count[i] > max_count && c->format != RT_CORPUS_TEXT &&
                 c->format != RT_CORPUS_LINES && c->n_summed == 0) ||
                (i > c->doc_off[d] && c->word[i - 1] >= c->word[i]))
                __builtin_trap();
}

/* a and b hold the same documents, words and names. */
static void check_same(const rt_corpus *a, const rt_corpus *b)
{
    if (a->n_docs != b->n_docs || a->n_words != b->n_words || a->n_entries != b->n_entries ||
        a->n_tokens != b->n_tokens || a->format != b->format || a->n_summed != b->n_summed ||
        a->doc_names.len != b->doc_names.len ||
        memcmp(a->doc_off, b->doc_off, (a->n_docs + 1) * sizeof(*a->doc_off)) ||
        (a->n_entries && (memcmp(a->word, b->word, a->n_entries * sizeof(*a->word)) ||
                          memcmp(a->count, b->count, a->n_entries * sizeof(*a->count)))) ||
        (a->doc_names.len && memcmp(a->doc_names.buf, b->doc_names.buf, a->doc_names.len)))
        __builtin_trap();
    for (uint64_t w = 0; w < a->n_words; w++)
        if (strcmp(rt_idmap_str(&a->words, w), rt_idmap_str(&b->words, w)))
            __builtin_trap();
}

/* The corpus at path read again as standard input ("-"); -1 when refused. */
static int read_as_stdin(const char *path, const rt_corpus_options *opt, rt_corpus *c)
{
    int fd = open(path, O_RDONLY), saved = dup(0);
    if (fd < 0 || saved < 0 || dup2(fd, 0) < 0)
        abort();
    close(fd);
    rt_error err = {0};
    int rc = rt_corpus_read("-", opt, c, &err);
    if (dup2(saved, 0) < 0)
        abort();
    close(saved);
    return rc;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    size_t main_len, side_len;
    const uint8_t *side;
    fuzz_split(data, size, &main_len, &side, &side_len);
    /* partition's count bound (2^24, a float's exact integers) on odd sizes,
     * infer's (none: 2^32-1) on even ones */
    rt_corpus_options opt = {.format = FUZZ_CORPUS, .max_count = size & 1 ? 1u << 24 : 0};
    const char *path = fuzz_write(FUZZ_CORPUS == RT_CORPUS_UCI ? "docword.fuzz.txt" : "corpus.txt",
                                  data, main_len);
    if (side) {
        const char *side_path = fuzz_write("side.txt", side, side_len);
        if (FUZZ_CORPUS == RT_CORPUS_TEXT)
            opt.stopwords = side_path;
        else
            opt.vocab = side_path;
    }
    /* Keep the fuzzer on parsing: a header asking for billions of empty
     * documents or words is valid input that is merely slow. */
    if (FUZZ_CORPUS == RT_CORPUS_UCI || FUZZ_CORPUS == RT_CORPUS_AUTO) {
        unsigned long long d = 0, w = 0;
        char head[64] = {0};
        memcpy(head, data, main_len < 63 ? main_len : 63);
        if (sscanf(head, "%llu %llu", &d, &w) == 2 && (d > 100000 || w > 100000))
            return 0;
    }
    rt_corpus c;
    rt_error err = {0};
    int rc = rt_corpus_read(path, &opt, &c, &err);
    rt_corpus piped;
    int piped_rc = read_as_stdin(path, &opt, &piped);
    if ((rc == 0) != (piped_rc == 0))
        __builtin_trap();
    if (piped_rc == 0) {
        check_same(&c, &piped);
        rt_corpus_free(&piped);
    }
    if (rc == 0) {
        /* each repeated pair is one entry, counted once (before min-count drops any) */
        if (c.n_summed > c.n_entries || (c.n_summed && c.first_summed_doc >= c.n_docs))
            __builtin_trap();
        check(&c, opt.max_count);
        if (rt_corpus_min_count(&c, 2, &err) == 0)
            check(&c, opt.max_count);
        rt_corpus_free(&c);
    }
    return 0;
}
