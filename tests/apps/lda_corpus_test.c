/* lda_corpus_test.c - the LDA corpus readers: every format, and every kind
 * of bad input failing with exit code 2 and "FILE:LINE: ..." in the message. */
#include "partition/corpus.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "tests/common/opens.h"
#include "tests/common/scratch.h"

static uint32_t count_of(const rt_corpus *c, uint64_t d, const char *word)
{
    int64_t w = rt_idmap_find(&c->words, word, strlen(word));
    if (w < 0)
        return 0;
    for (uint64_t i = c->doc_off[d]; i < c->doc_off[d + 1]; i++)
        if (c->word[i] == (uint32_t)w)
            return c->count[i];
    return 0;
}

/* Reading path with options o must succeed, in format `want`. */
static void read_ok(const char *path, const rt_corpus_options *o, rt_corpus_format want,
                    rt_corpus *c)
{
    rt_error err = {0};
    assert_int_equal(rt_corpus_read(path, o, c, &err), 0);
    assert_int_equal(c->format, want);
}

/* Reading must fail with exit 2 and a message containing `want`. */
static void expect_bad(const char *path, rt_corpus_format f, const char *vocab, const char *want)
{
    rt_corpus c;
    rt_error err = {0};
    rt_corpus_options o = {.format = f, .vocab = vocab};
    assert_int_equal(rt_corpus_read(path, &o, &c, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    if (!strstr(err.msg, want))
        fail_msg("message '%s' lacks '%s'", err.msg, want);
}

static void test_uci(void **state)
{
    (void)state;
    const char *dw = scratch_file("docword.t.txt", "3\n4\n4\n1 1 2\n1 3 1\n3 4 5\n3 1 1\n");
    /* blank lines and spaces an editor left at the end are no words */
    const char *vo = scratch_file("vocab.t.txt", "apple\nbanana\ncherry\ndate \n\n \r\n\n");
    rt_corpus c;
    rt_corpus_options o = {.vocab = vo};
    read_ok(dw, &o, RT_CORPUS_UCI, &c);
    assert_int_equal(c.n_docs, 3);
    assert_int_equal(c.n_words, 4);
    assert_int_equal(c.n_tokens, 9);
    assert_int_equal(c.doc_off[2] - c.doc_off[1], 0); /* doc 2 is empty, kept */
    assert_int_equal(count_of(&c, 0, "apple"), 2);
    assert_int_equal(count_of(&c, 2, "date"), 5);
    assert_string_equal(rt_strpool_get(&c.doc_names, 2), "3");
    assert_int_equal(c.n_summed, 0);
    /* each document's line, for messages: its first triple's; none for doc 2 */
    assert_int_equal(c.doc_line[0], 4);
    assert_int_equal(c.doc_line[1], 0);
    assert_int_equal(c.doc_line[2], 6);
    rt_corpus_free(&c);
}

/* The line where each document starts, in the line formats: comment and
 * blank lines between documents counted. */
static void test_doc_lines(void **state)
{
    (void)state;
    const char *f = scratch_file("lines.dl.txt", "# c\nd1 d1 a b\n\nd2 d2 b\n");
    rt_corpus c;
    rt_corpus_options o = {.format = RT_CORPUS_LINES};
    read_ok(f, &o, RT_CORPUS_LINES, &c);
    assert_int_equal(c.n_docs, 2);
    assert_int_equal(c.doc_line[0], 2);
    assert_int_equal(c.doc_line[1], 4);
    rt_corpus_free(&c);
    f = scratch_file("text.dl.txt", "\nthe cat sat\n\ndogs run\n");
    o.format = RT_CORPUS_TEXT;
    read_ok(f, &o, RT_CORPUS_TEXT, &c);
    assert_int_equal(c.n_docs, 2);
    assert_int_equal(c.doc_line[0], 2);
    assert_int_equal(c.doc_line[1], 4);
    rt_corpus_free(&c);
}

/* A (document, word) pair on several lines is summed into one entry and
 * counted once, with the first document that had one, for partition's
 * warning; in UCI and LibSVM alike. */
static void test_repeated_pairs_counted(void **state)
{
    (void)state;
    const char *dw =
        scratch_file("docword.rep.txt", "3\n2\n5\n1 1 2\n2 2 1\n2 2 3\n3 1 1\n3 1 4\n");
    rt_corpus c;
    rt_corpus_options o = {0};
    read_ok(dw, &o, RT_CORPUS_UCI, &c);
    assert_int_equal(c.n_entries, 3);
    assert_int_equal(c.n_summed, 2);
    assert_string_equal(rt_strpool_get(&c.doc_names, c.first_summed_doc), "2");
    assert_int_equal(count_of(&c, 1, "2"), 4);
    rt_corpus_free(&c);
    const char *sv = scratch_file("rep.svm", "d1 a:1 b:1\nd2 a:2 c:1 a:5\n");
    read_ok(sv, &o, RT_CORPUS_LIBSVM, &c);
    assert_int_equal(c.n_summed, 1);
    assert_string_equal(rt_strpool_get(&c.doc_names, c.first_summed_doc), "d2");
    assert_int_equal(count_of(&c, 1, "a"), 7);
    rt_corpus_free(&c);
    /* a pair on three lines is one repeated pair (it counted the two merges) */
    dw = scratch_file("docword.rep3.txt", "2\n2\n4\n1 1 2\n2 2 1\n2 2 3\n2 2 1\n");
    read_ok(dw, &o, RT_CORPUS_UCI, &c);
    assert_int_equal(c.n_summed, 1);
    assert_int_equal(count_of(&c, 1, "2"), 5);
    rt_corpus_free(&c);
}

/* Files an editor on Windows wrote: a UTF-8 byte order mark and CRLF line
 * ends.  The mark is not part of the first word or id, and the format guess
 * still sees the UCI header. */
static void test_byte_order_mark(void **state)
{
    (void)state;
    const char *dw = scratch_file("bom.docword", "\xef\xbb\xbf"
                                                 "2\r\n3\r\n2\r\n1 1 2\r\n2 3 1\r\n");
    const char *vo = scratch_file("bom.vocab", "\xef\xbb\xbf"
                                               "apple\r\nbanana\r\ncherry\r\n");
    rt_corpus c;
    rt_corpus_options o = {.format = RT_CORPUS_AUTO, .vocab = vo};
    read_ok(dw, &o, RT_CORPUS_UCI, &c);
    assert_int_equal(c.n_tokens, 3);
    assert_int_equal(count_of(&c, 0, "apple"), 2);
    assert_int_equal(count_of(&c, 1, "cherry"), 1);
    rt_corpus_free(&c);
    const char *tx = scratch_file("bom.text", "\xef\xbb\xbf"
                                              "Zebra stripes\r\n");
    rt_corpus_options t = {.format = RT_CORPUS_TEXT};
    read_ok(tx, &t, RT_CORPUS_TEXT, &c);
    assert_int_equal(count_of(&c, 0, "zebra"), 1);
    rt_corpus_free(&c);
}

/* Files with old Mac line ends (a lone '\r'): each ends a line, in the
 * format guess, the UCI header and body, the vocabulary and a text corpus. */
static void test_old_mac_line_ends(void **state)
{
    (void)state;
    const char *dw = scratch_file("mac.docword", "2\r3\r2\r1 1 2\r2 3 1\r");
    const char *vo = scratch_file("mac.vocab", "apple\rbanana\rcherry\r");
    rt_corpus c;
    rt_corpus_options o = {.format = RT_CORPUS_AUTO, .vocab = vo};
    read_ok(dw, &o, RT_CORPUS_UCI, &c);
    assert_int_equal(c.n_docs, 2);
    assert_int_equal(c.n_tokens, 3);
    assert_int_equal(count_of(&c, 0, "apple"), 2);
    assert_int_equal(count_of(&c, 1, "cherry"), 1);
    rt_corpus_free(&c);
    const char *tx = scratch_file("mac.text", "zebra stripes\rzebra crossing\r");
    rt_corpus_options t = {.format = RT_CORPUS_TEXT};
    read_ok(tx, &t, RT_CORPUS_TEXT, &c);
    assert_int_equal(c.n_docs, 2);
    assert_int_equal(count_of(&c, 1, "crossing"), 1);
    rt_corpus_free(&c);
}

/* Bad input, one case a row: the file's name and bytes, the format it is
 * read as, whether the UCI/LDA-C vocabulary (vocab.b.txt: a b c, or
 * ap.vocab: zero one two) is given, and what the message must contain. */
typedef struct bad_case {
    const char *name, *bytes;
    rt_corpus_format format;
    const char *vocab;
    const char *want;
} bad_case;

static const bad_case bad_cases[] = {
    {"docword.b1.txt", "2\n3\n2\n1 1 1\n2 4 1\n", RT_CORPUS_UCI, NULL,
     "docword.b1.txt:5: word id 4 outside"},
    {"docword.b2.txt", "2\n3\n2\n1 1 0\n2 2 1\n", RT_CORPUS_UCI, NULL, "docword.b2.txt:4: count 0"},
    {"docword.b3.txt", "2\n3\n2\n1 1 1\n2 2 -3\n", RT_CORPUS_UCI, NULL,
     "docword.b3.txt:5: count -3"},
    {"docword.b4.txt", "2\n3\n3\n1 1 1\n2 2 1\n", RT_CORPUS_UCI, NULL,
     "docword.b4.txt:5: file ends after 2 triples, header NNZ=3"},
    {"docword.b5.txt", "2\n3\n1\n1 1 1\n2 2 1\n", RT_CORPUS_UCI, NULL,
     "docword.b5.txt:5: more triples"},
    {"docword.b6.txt", "2\n3\n1\n3 1 1\n", RT_CORPUS_UCI, NULL,
     "docword.b6.txt:4: document id 3 outside"},
    {"docword.b7.txt", "2\n4\n1\n1 1 1\n", RT_CORPUS_UCI, "vocab.b.txt",
     "vocab.b.txt:4: vocabulary has 3 words"},
    {"docword.b8.txt", "2\nx\n1\n1 1 1\n", RT_CORPUS_UCI, NULL,
     "docword.b8.txt:2: expected the vocabulary count"},
    {"docword.b9.txt", "1\n3\n1\n1 1\n", RT_CORPUS_UCI, NULL,
     "docword.b9.txt:4: expected 'docID wordID count'"},
    /* numbers past 64 bits: named as too large, with what the field wants (they
     * said "expected 'docID wordID count'", as for a malformed line) */
    {"docword.b11.txt", "1\n3\n1\n1 1 18446744073709551616\n", RT_CORPUS_UCI, NULL,
     "docword.b11.txt:4: count is out of range (beyond 64 bits): want an integer from 1 to "
     "4294967295"},
    /* a negative field is named negative, however many its digits (rev28 F1:
     * the header's "-3" said "expected the vocabulary count") */
    {"docword.b12.txt", "1\n3\n1\n1 -99999999999999999999 1\n", RT_CORPUS_UCI, NULL,
     "docword.b12.txt:4: word id -99999999999999999999 is negative: want 1..3 (header W)"},
    {"docword.b16.txt", "1\n-3\n1\n1 1 1\n", RT_CORPUS_UCI, NULL,
     "docword.b16.txt:2: the docword header's vocabulary count -3 is negative: want a whole "
     "number, 0 or more"},
    {"docword.b17.txt", "2\n3\n1\n-3 1 -3\n", RT_CORPUS_UCI, NULL,
     "docword.b17.txt:4: document id -3 is negative: want 1..2 (header D)"},
    {"docword.b13.txt", "1\n3\n1\n99999999999999999999 1 1\n", RT_CORPUS_UCI, NULL,
     "docword.b13.txt:4: document id is out of range (beyond 64 bits): want 1..1 (header D)"},
    {"docword.b14.txt", "1\n3\n99999999999999999999\n1 1 1\n", RT_CORPUS_UCI, NULL,
     "docword.b14.txt:3: the docword header's nonzero count is out of range (beyond 64 bits)"},
    /* 2^64 - 1 itself fits: refused by the count's own range */
    {"docword.b15.txt", "1\n3\n1\n1 1 18446744073709551615\n", RT_CORPUS_UCI, NULL,
     "docword.b15.txt:4: count 18446744073709551615 must be an integer from 1 to 4294967295"},
    {"bad1.dat", "2 0:1 1:1\n2 0:1\n", RT_CORPUS_LDAC, "ap.vocab",
     "bad1.dat:2: line says 2 pairs but has 1"},
    {"bad2.dat", "1 0:1\n1 3:1\n", RT_CORPUS_LDAC, "ap.vocab",
     "bad2.dat:2: word id 3 outside the vocabulary"},
    {"bad3.svm", "a x:1\nb y:0\n", RT_CORPUS_LIBSVM, NULL,
     "bad3.svm:2: count in 'y:0' must be an integer from 1 to 4294967295"},
    {"bad4.svm", "a x:1\nb y:-2\n", RT_CORPUS_LIBSVM, NULL, "bad4.svm:2: count"},
    /* a blank line inside the vocabulary would shift the word ids after it */
    {"docword.b10.txt", "1\n3\n1\n1 1 1\n", RT_CORPUS_UCI, "vocab.gap.txt",
     "vocab.gap.txt:2: empty line in vocabulary"},
};

static void test_bad_input(void **state)
{
    (void)state;
    scratch_file("vocab.b.txt", "a\nb\nc\n");
    scratch_file("ap.vocab", "zero\none\ntwo\n");
    scratch_file("vocab.gap.txt", "a\n\nb\nc\n");
    for (size_t i = 0; i < sizeof(bad_cases) / sizeof(bad_cases[0]); i++) {
        const bad_case *k = &bad_cases[i];
        char vocab[512];
        if (k->vocab)
            snprintf(vocab, sizeof(vocab), "%s/%s", scratch_dir, k->vocab);
        expect_bad(scratch_file(k->name, k->bytes), k->format, k->vocab ? vocab : NULL, k->want);
    }
}

static void test_lines(void **state)
{
    (void)state;
    const char *p = scratch_file("lines.txt", "d1 d1 cat dog cat\n\nd2 d2\nd3 d3 7 dog\n");
    rt_corpus c;
    rt_corpus_options o = {.format = RT_CORPUS_AUTO};
    read_ok(p, &o, RT_CORPUS_LINES, &c);
    assert_int_equal(c.n_docs, 3);
    assert_int_equal(c.n_words, 3); /* cat dog 7 */
    assert_int_equal(count_of(&c, 0, "cat"), 2);
    assert_int_equal(count_of(&c, 2, "7"), 1);
    assert_int_equal(c.doc_off[2] - c.doc_off[1], 0);
    rt_corpus_free(&c);
}

static void test_libsvm_ldac(void **state)
{
    (void)state;
    const char *p = scratch_file("s.libsvm", "a x:2 y:1\nb y:3 x:1 y:1\n");
    rt_corpus c;
    rt_corpus_options o = {.format = RT_CORPUS_AUTO};
    read_ok(p, &o, RT_CORPUS_LIBSVM, &c);
    assert_int_equal(count_of(&c, 1, "y"), 4); /* duplicates merged */
    assert_int_equal(c.n_tokens, 8);
    rt_corpus_free(&c);

    const char *vo = scratch_file("ap.vocab", "zero\none\ntwo\n");
    p = scratch_file("ap.dat", "2 0:1 2:4 \n1 1:2 \n");
    o.vocab = vo;
    read_ok(p, &o, RT_CORPUS_LDAC, &c);
    assert_int_equal(count_of(&c, 0, "two"), 4);
    assert_int_equal(count_of(&c, 1, "one"), 2);
    rt_corpus_free(&c);
}

/* Comment lines ('#', '%', '//') in the formats whose lines hold ids are
 * skipped, as in ratings files: an lda-c file opening with one is still
 * guessed lda-c (it was read as raw text: the comment's words, one token),
 * a lines file's comment is no document, a docword file may hold them
 * before and inside its header and body.  Raw text has none: a line
 * starting with '#' is a document (a hashtag). */
static void test_comment_lines(void **state)
{
    (void)state;
    const char *p = scratch_file("c.dat", "# made by hand\n2 0:1 1:2\n// two\n1 2:3\n");
    rt_corpus c;
    rt_corpus_options o = {.format = RT_CORPUS_AUTO};
    read_ok(p, &o, RT_CORPUS_LDAC, &c);
    assert_int_equal(c.n_docs, 2);
    assert_int_equal(c.n_tokens, 6);
    rt_corpus_free(&c);
    p = scratch_file("c.lines", "d1 d1 cat dog\n# not a document\n% nor this\nd2 d2 dog\n");
    read_ok(p, &o, RT_CORPUS_LINES, &c);
    assert_int_equal(c.n_docs, 2);
    assert_int_equal(c.n_tokens, 3);
    rt_corpus_free(&c);
    p = scratch_file("docword.c.txt",
                     "% UCI corpus\n2\n# words\n3\n2\n// body\n1 1 2\n2 3 1\n# end\n");
    read_ok(p, &o, RT_CORPUS_UCI, &c);
    assert_int_equal(c.n_docs, 2);
    assert_int_equal(c.n_tokens, 3);
    rt_corpus_free(&c);
    expect_bad(scratch_file("docword.c2.txt", "# c\n2\n0\n1\n1 1 1\n"), RT_CORPUS_UCI, NULL,
               "docword.c2.txt:4: header D=2 W=0 NNZ=1 is impossible");
    p = scratch_file("hash.txt", "#rotor rocks\nplain words\n");
    rt_corpus_options t = {.format = RT_CORPUS_AUTO};
    read_ok(p, &t, RT_CORPUS_TEXT, &c);
    assert_int_equal(c.n_docs, 2);
    assert_int_equal(count_of(&c, 0, "rocks"), 1);
    rt_corpus_free(&c);
}

/* A JSON dump (JSON lines, a JSON array) is refused at its first line with a
 * way out, in the text and lines formats that would read its keys and quotes
 * as words; an id in brackets or braces is not JSON. */
static void test_json_refused(void **state)
{
    (void)state;
    const char *jl = "{\"id\": 1, \"text\": \"cats and dogs\"}\n{\"id\": 2, \"text\": \"dogs\"}\n";
    expect_bad(scratch_file("j.jsonl", jl), RT_CORPUS_AUTO, NULL, "j.jsonl:1: JSON, not a corpus");
    expect_bad(scratch_file("j2.jsonl", jl), RT_CORPUS_TEXT, NULL,
               "j2.jsonl:1: JSON, not a corpus");
    expect_bad(scratch_file("j3.jsonl", jl), RT_CORPUS_LINES, NULL, "j3.jsonl:1: JSON");
    expect_bad(scratch_file("ja.json", "\n[\n  {\"text\": \"a b\"}\n]\n"), RT_CORPUS_AUTO, NULL,
               "ja.json:2: JSON, not a corpus");
    rt_corpus c;
    rt_corpus_options o = {.format = RT_CORPUS_AUTO};
    read_ok(scratch_file("br.lines", "[d1] [d1] cat\n{d2} {d2} dog\n"), &o, RT_CORPUS_LINES, &c);
    assert_int_equal(c.n_docs, 2);
    rt_corpus_free(&c);
    read_ok(scratch_file("br.txt", "[Note] the cat\n"), &o, RT_CORPUS_TEXT, &c);
    assert_int_equal(count_of(&c, 0, "note"), 1);
    rt_corpus_free(&c);
}

static void test_text(void **state)
{
    (void)state;
    const char *p = scratch_file("raw.txt", "The Cat sat on the mat; the cat!\n"
                                            "\n"
                                            "A dog, a DOG and 3 cats.\n");
    rt_corpus c;
    rt_corpus_options o = {.format = RT_CORPUS_TEXT};
    read_ok(p, &o, RT_CORPUS_TEXT, &c);
    assert_int_equal(c.n_docs, 2); /* the blank line is no document */
    assert_int_equal(count_of(&c, 0, "cat"), 2);
    assert_int_equal(count_of(&c, 0, "the"), 0); /* stop word */
    assert_int_equal(count_of(&c, 1, "dog"), 2);
    assert_string_equal(rt_strpool_get(&c.doc_names, 1), "3");
    rt_corpus_free(&c);

    /* A blank line (white space only) is no document, as in the lines
     * formats (it was an empty one here, none there); the others keep their
     * line numbers.  A line of only stop words is an empty document. */
    const char *b = scratch_file("blank.txt", "zebra crossing\n \t\r\nthe and\nzebra\n\n");
    rt_corpus_options bo = {.format = RT_CORPUS_TEXT};
    read_ok(b, &bo, RT_CORPUS_TEXT, &c);
    assert_int_equal(c.n_docs, 3);
    assert_string_equal(rt_strpool_get(&c.doc_names, 1), "3");
    assert_int_equal(c.doc_off[2] - c.doc_off[1], 0);
    assert_string_equal(rt_strpool_get(&c.doc_names, 2), "4");
    assert_int_equal(count_of(&c, 2, "zebra"), 1);
    rt_corpus_free(&c);

    /* own stop words and a minimum count */
    o.stopwords = scratch_file("stop.txt", "cat\n");
    o.min_count = 2;
    read_ok(p, &o, RT_CORPUS_TEXT, &c);
    assert_int_equal(count_of(&c, 0, "cat"), 0);
    assert_int_equal(count_of(&c, 0, "the"), 3);
    assert_true(rt_idmap_find(&c.words, "mat", 3) < 0); /* once only: dropped */
    assert_int_equal(c.n_words, 2);                     /* the, dog */
    rt_corpus_free(&c);

    /* a directory: one document per file, in name order */
    const char *sub = scratch_path("docs");
    assert_int_equal(mkdir(sub, 0755), 0);
    scratch_file("docs/b.txt", "zebra zebra");
    scratch_file("docs/a.txt", "apple");
    o = (rt_corpus_options){.format = RT_CORPUS_AUTO};
    read_ok(sub, &o, RT_CORPUS_TEXT, &c);
    assert_int_equal(c.n_docs, 2);
    assert_string_equal(rt_strpool_get(&c.doc_names, 0), "a.txt");
    assert_int_equal(count_of(&c, 1, "zebra"), 2);
    rt_corpus_free(&c);
}

/* Five documents: accented Latin, Cyrillic and Greek, curly quotes, dashes
 * and guillemets, bytes of no character (Latin-1 0xE9, a cut 0xC3), and
 * Armenian capitals, a decomposed "café" (e + U+0301) and Devanagari's
 * vowel signs and virama (combining marks inside one word). */
static const char utf8_text[] =
    "Caf\xc3\xa9 CAF\xc3\x89 na\xc3\xafve \xc3\x9c"
    "ber\n"
    "\xd0\x9c\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0 "
    "\xce\x95\xce\xbb\xce\xbb\xce\xac\xce\xb4\xce\xb1\n"
    "don\xe2\x80\x99t \xe2\x80\x9cquoted\xe2\x80\x9d "
    "dash\xe2\x80\x94word \xc2\xabguillemets\xc2\xbb\n"
    "latin\xe9one \xc3 cut\n"
    "\xd4\xb1\xd4\xb2\xd4\xb3 cafe\xcc\x81 "
    "\xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\xa8\xe0\xa5\x8d\xe0\xa4\xa6\xe0\xa5\x80\n";

/* UTF-8 text: letters of any script make words (lower-cased without a
 * locale), Unicode punctuation splits them as ASCII punctuation does, and
 * bytes of no character are separators. */
static void test_text_utf8(void **state)
{
    (void)state;
    const char *p = scratch_file("utf8.txt", utf8_text);
    rt_corpus c;
    rt_corpus_options o = {.format = RT_CORPUS_TEXT};
    read_ok(p, &o, RT_CORPUS_TEXT, &c);
    assert_int_equal(c.n_docs, 5);
    static const struct {
        uint64_t doc;
        const char *word;
        uint32_t count;
    } want[] = {
        {0, "caf\xc3\xa9", 2},  /* café, CAFÉ */
        {0, "na\xc3\xafve", 1}, /* naïve */
        {0,
         "\xc3\xbc"
         "ber",
         1},                                                        /* Über */
        {1, "\xd0\xbc\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0", 1}, /* москва */
        {1, "\xce\xb5\xce\xbb\xce\xbb\xce\xac\xce\xb4\xce\xb1", 1}, /* ελλάδα */
        {2, "don", 0}, /* a stop word, split off by the curly quote */
        {2, "quoted", 1},
        {2, "dash", 1},
        {2, "word", 1},
        {2, "guillemets", 1},
        {3, "latin", 1}, /* a Latin-1 byte splits */
        {3, "one", 0},   /* stop word */
        {3, "cut", 1},
        {4, "\xd5\xa1\xd5\xa2\xd5\xa3", 1}, /* ԱԲԳ lower-cased */
        {4, "cafe\xcc\x81", 1},             /* the mark stays in its word */
        {4, "\xe0\xa4\xb9\xe0\xa4\xbf\xe0\xa4\xa8\xe0\xa5\x8d\xe0\xa4\xa6\xe0\xa5\x80", 1},
    };
    for (size_t i = 0; i < sizeof(want) / sizeof(want[0]); i++)
        if (count_of(&c, want[i].doc, want[i].word) != want[i].count)
            fail_msg("document %llu: '%s' counted %u, not %u", (unsigned long long)want[i].doc,
                     want[i].word, count_of(&c, want[i].doc, want[i].word), want[i].count);
    assert_int_equal(c.n_words, 14);
    rt_corpus_free(&c);

    /* stop words are lower-cased the same way */
    o.stopwords = scratch_file("stop-utf8.txt",
                               "CAF\xc3\x89\n\xd0\x9c\xd0\x9e\xd0\xa1\xd0\x9a\xd0\x92\xd0\x90\n");
    read_ok(p, &o, RT_CORPUS_TEXT, &c);
    assert_int_equal(count_of(&c, 0, "caf\xc3\xa9"), 0);
    assert_int_equal(count_of(&c, 1, "\xd0\xbc\xd0\xbe\xd1\x81\xd0\xba\xd0\xb2\xd0\xb0"), 0);
    rt_corpus_free(&c);
}

/* The corpus is opened once, in every format and with the format guessed:
 * the guess reads the head of the load (a FIFO or a pipe gives its bytes
 * once; a second open waited for another writer and read its data alone). */
static void test_input_opened_once(void **state)
{
    (void)state;
    static const struct {
        const char *name, *text;
        rt_corpus_format format, want;
    } cases[] = {
        {"once.txt", "apple banana cherry\ndate apple\n", RT_CORPUS_AUTO, RT_CORPUS_TEXT},
        {"once.lines", "apple apple banana\n", RT_CORPUS_AUTO, RT_CORPUS_LINES},
        {"docword.once.txt", "1\n2\n2\n1 1 2\n1 2 1\n", RT_CORPUS_AUTO, RT_CORPUS_UCI},
        {"once.ldac", "2 0:1 1:2\n", RT_CORPUS_AUTO, RT_CORPUS_LDAC},
        {"given.txt", "apple banana cherry\n", RT_CORPUS_TEXT, RT_CORPUS_TEXT},
    };
    for (size_t k = 0; k < sizeof(cases) / sizeof(cases[0]); k++) {
        const char *path = scratch_file(cases[k].name, cases[k].text);
        rt_corpus c;
        rt_corpus_options o = {.format = cases[k].format};
        int fd = opens_watch(path);
        read_ok(path, &o, cases[k].want, &c);
        int n = opens_count(fd);
        if (n != 1)
            fail_msg("%s: opened %d times", cases[k].name, n);
        rt_corpus_free(&c);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_uci),
        cmocka_unit_test(test_doc_lines),
        cmocka_unit_test(test_repeated_pairs_counted),
        cmocka_unit_test(test_bad_input),
        cmocka_unit_test(test_lines),
        cmocka_unit_test(test_libsvm_ldac),
        cmocka_unit_test(test_text),
        cmocka_unit_test(test_byte_order_mark),
        cmocka_unit_test(test_old_mac_line_ends),
        cmocka_unit_test(test_text_utf8),
        cmocka_unit_test(test_comment_lines),
        cmocka_unit_test(test_json_refused),
        cmocka_unit_test(test_input_opened_once),
    };
    return cmocka_run_group_tests(tests, scratch_setup, scratch_teardown);
}
