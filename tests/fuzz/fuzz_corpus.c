/* fuzz_corpus.c - the LDA corpus readers (one target per format:
 * FUZZ_CORPUS is an rt_corpus_format; RT_CORPUS_AUTO also fuzzes the
 * sniffer).  Input "MAIN\n====\nSIDE": SIDE, when present, is the
 * vocabulary (uci, libsvm, ldac) or the stop-word list (text). */
#include "partition/corpus.h"
#include "tests/fuzz/fuzz.h"

#include <stdio.h>
#include <string.h>

/* Every document's entries must be sorted, distinct, in range and positive. */
static void check(const rt_corpus *c)
{
    if (c->doc_off[0] != 0 || c->doc_off[c->n_docs] != c->n_entries)
        __builtin_trap();
    for (uint64_t d = 0; d < c->n_docs; d++)
        for (uint64_t i = c->doc_off[d]; i < c->doc_off[d + 1]; i++)
            if (c->word[i] >= c->n_words || c->count[i] == 0 ||
                (i > c->doc_off[d] && c->word[i - 1] >= c->word[i]))
                __builtin_trap();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    fuzz_quiet();
    size_t main_len, side_len;
    const uint8_t *side;
    fuzz_split(data, size, &main_len, &side, &side_len);
    rt_corpus_options opt = {.format = FUZZ_CORPUS};
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
    if (rt_corpus_read(path, &opt, &c, &err) == 0) {
        check(&c);
        if (rt_corpus_min_count(&c, 2, &err) == 0)
            check(&c);
        rt_corpus_free(&c);
    }
    return 0;
}
