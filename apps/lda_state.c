/* lda_state.c - a worker's tokens: expanded from its shard's (doc, word,
 * count) entries, stored twice over one topic array: doc-major (z, so a
 * document's topics are contiguous for the doc proposal and the counts) and
 * word-major per data block (tok_doc / tok_pos, cut into runs of one word,
 * so a word's counts stay hot while its tokens are sampled).  The list
 * sampler's training tokens above LDA_DOC_ORDER_MAX_K keep z word-major
 * instead, with no tok_pos: their sweeps read and write the topics in order
 * (a third of them word-major at K = 10000), and a document's counts are
 * its list; at or below it (lda_doc_layout) z is doc-major, with no tok_doc:
 * the document-major visits take a document's tokens in place.
 *
 * Held-out documents are split token by token, by a hash of (seed, global
 * document id, global word id, copy), into an observed half (sampled like
 * training tokens, but never counted in the word-topic counts) and a
 * completion half whose likelihood is the held-out metric. */
#include "apps/lda.h"

#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

#define PURPOSE_INIT 1u
#define PURPOSE_TEST_INIT 2u

uint64_t lda_stream(uint32_t worker, uint64_t rotation, uint32_t block, uint32_t purpose)
{
    return rt_hash64(
        rt_hash64(rt_hash64((uint64_t)worker * 0x100000001b3ULL + purpose) ^ rotation) ^ block);
}

static void *xcalloc(size_t n, size_t size, int *fail)
{
    void *p = calloc(n ? n : 1, size);
    if (!p)
        *fail = 1;
    return p;
}

/* The word phase reads the token records in word order, scattered over
 * the documents: with 4 KiB pages nearly every record costs a TLB miss (a
 * two-level page walk in a VM); so do the sparse sampler's topics and
 * document rows.  Ask for transparent huge pages on the
 * 2 MiB-aligned part of the array before its pages are first touched.
 * Advice only: where THP is off or the array is small nothing changes, so
 * the result is not checked. */
static void advise_huge(void *p, size_t bytes)
{
    const uintptr_t huge = (uintptr_t)2 << 20;
    uintptr_t lo = ((uintptr_t)p + huge - 1) & ~(huge - 1);
    uintptr_t hi = ((uintptr_t)p + bytes) & ~(huge - 1);
    if (p && hi > lo)
        (void)madvise((void *)lo, hi - lo, MADV_HUGEPAGE);
}

void lda_worker_free(lda_worker *w)
{
    lda_tokens *ts[2] = {&w->train, &w->test};
    for (int i = 0; i < 2; i++) {
        lda_tokens *t = ts[i];
        free(t->doc_off);
        free(t->z);
        free(t->ndk);
        free(t->aux);
        free(t->blk_run);
        free(t->run_word);
        free(t->run_end);
        free(t->blk_tok);
        free(t->tok_doc);
        free(t->tok_pos);
        free(t->dnz);
        free(t->dnz_off);
        free(t->dnz_n);
        free(t->dnc);
        free(t->dlist);
        free(t->doc_step);
        free(t->ord_run);
        free(t->ord_seg);
        free(t->ord_seg_off);
        free(t->blk_held);
        free(t->held_word);
        free(t->held_doc);
        free(t->held_cnt);
    }
    free(w->nk);
    memset(w, 0, sizeof(*w));
}

int lda_token_held(uint64_t seed, uint32_t gdoc, uint32_t gword, uint32_t i)
{
    return rt_hash64(rt_hash64(seed ^ 0x4e1dULL) ^ ((uint64_t)gdoc << 32 | gword) ^
                     ((uint64_t)i << 20)) &
           1;
}

/* Build one token set from the entries of the shard (train or test). */
static int tokens_build(lda_tokens *t, const rt_plan *plan, const rt_shard *sh, int test,
                        const lda_opts *o, rt_error *err)
{
    const uint64_t *off = test ? sh->test_off : sh->train_off;
    const rt_entry *e = test ? sh->test : sh->train;
    const uint32_t *test_ids = test ? sh->test_row_ids : NULL;
    const uint32_t n_docs = test ? sh->n_test_rows : sh->n_rows, worker = sh->worker;
    uint32_t B = plan->blocks, K = o->K;
    int fail = 0;
    t->n_docs = n_docs;
    t->doc_off = xcalloc(n_docs + 1, sizeof(uint64_t), &fail);
    t->blk_run = xcalloc(B + 1, sizeof(uint64_t), &fail);
    t->blk_tok = xcalloc(B + 1, sizeof(uint64_t), &fail);
    t->blk_held = xcalloc(B + 1, sizeof(uint64_t), &fail);
    uint64_t *cursor = xcalloc(n_docs + 1, sizeof(uint64_t), &fail);
    if (fail) {
        free(cursor);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA tokens)");
    }
    /* Pass 1: observed tokens per document, runs (and the most in a block), held-out entries. */
    uint64_t runs = 0, held_entries = 0, max_block_runs = 0;
    for (uint32_t b = 0; b < B; b++) {
        const uint64_t runs0 = runs, gbase = plan->block_col_offset[b];
        for (uint64_t i = off[b]; i < off[b + 1]; i++) {
            uint32_t cnt = (uint32_t)e[i].val, obs = cnt;
            if (i == off[b] || e[i].col != e[i - 1].col)
                runs++;
            if (test_ids) {
                uint32_t gword = plan->block_col_ids[gbase + e[i].col], h = 0;
                for (uint32_t c = 0; c < cnt; c++)
                    h += (uint32_t)lda_token_held(o->seed, test_ids[e[i].row], gword, c);
                obs = cnt - h;
                held_entries += h > 0;
            }
            t->doc_off[e[i].row + 1] += obs;
            t->n_tokens += obs;
        }
        max_block_runs = runs - runs0 > max_block_runs ? runs - runs0 : max_block_runs;
    }
    for (uint32_t d = 0; d < n_docs; d++)
        t->doc_off[d + 1] += t->doc_off[d];
    /* the entries are read once more, block by block, below: let go of
     * their pages meanwhile (memory is tokens + one block, not + the shard) */
    if (rt_shard_release(sh, e, e + off[B], err)) {
        free(cursor);
        return -1;
    }
    /* the warp sampler keeps the topics in its token records, and no
     * document-topic matrix for its training documents */
    int warp = lda_uses_records(o->sampler) && !test_ids;
    int progressive = o->init == LDA_INIT_PROGRESSIVE && !test_ids;
    /* (nor the list sampler, whose lists hold the counts: doc_nz_build) */
    int lists = lda_uses_lists(o->sampler, K) && !test_ids;
    /* (whose z is doc-major at K <= LDA_DOC_ORDER_MAX_K, with no tok_doc) */
    int doc_layout = lists && lda_doc_layout(o, t->n_tokens, max_block_runs);
    /* (the cycle sampler's record is the topic alone) */
    t->aux_stride = o->sampler == LDA_SAMPLER_CYCLE ? 1 : 2 + o->mh_steps;
    if (warp) {
        t->aux = xcalloc(t->n_tokens * t->aux_stride, sizeof(uint16_t), &fail);
        advise_huge(t->aux, t->n_tokens * t->aux_stride * sizeof(uint16_t));
    } else { /* the other samplers read z and n_d. at scattered documents alike */
        t->z = xcalloc(t->n_tokens, sizeof(uint16_t), &fail);
        advise_huge(t->z, t->n_tokens * sizeof(uint16_t));
    }
    if (!warp && !doc_layout) /* (the warp sampler's word phase needs no document) */
        t->tok_doc = xcalloc(t->n_tokens, sizeof(uint32_t), &fail);
    if (!lists || doc_layout) /* (else the list sampler's z is word-major: lda_tok_slot) */
        t->tok_pos = xcalloc(t->n_tokens, sizeof(uint32_t), &fail);
    t->run_word = xcalloc(runs, sizeof(uint32_t), &fail);
    t->run_end = xcalloc(runs, sizeof(uint64_t), &fail);
    if (!warp && !lists) {
        t->ndk = xcalloc((size_t)n_docs * K + LDA_DENSE_ROW_SLACK, sizeof(int32_t), &fail);
        advise_huge(t->ndk, (size_t)n_docs * K * sizeof(int32_t));
    }
    if (test_ids) {
        t->held_word = xcalloc(held_entries, sizeof(uint32_t), &fail);
        t->held_doc = xcalloc(held_entries, sizeof(uint32_t), &fail);
        t->held_cnt = xcalloc(held_entries, sizeof(uint32_t), &fail);
    }
    if (fail) {
        free(cursor);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA tokens: %llu)",
                       (unsigned long long)t->n_tokens);
    }
    memcpy(cursor, t->doc_off, (n_docs + 1) * sizeof(uint64_t));
    /* Pass 2: lay the tokens out word-major; draw the initial topics. */
    uint64_t tok = 0, run = 0, held = 0;
    for (uint32_t b = 0; b < B; b++) {
        rt_rng rng;
        rt_rng_seed(&rng, o->seed,
                    lda_stream(worker, 0, b, test_ids ? PURPOSE_TEST_INIT : PURPOSE_INIT));
        uint64_t gbase = plan->block_col_offset[b];
        t->blk_run[b] = run;
        t->blk_tok[b] = tok;
        t->blk_held[b] = held;
        for (uint64_t i = off[b]; i < off[b + 1]; i++) {
            uint32_t d = e[i].row, cnt = (uint32_t)e[i].val, h = 0;
            uint32_t gword = plan->block_col_ids[gbase + e[i].col];
            if (i == off[b] || e[i].col != e[i - 1].col) {
                t->run_word[run++] = e[i].col;
            }
            for (uint32_t c = 0; c < cnt; c++) {
                if (test_ids && lda_token_held(o->seed, test_ids[d], gword, c)) {
                    h++;
                    continue;
                }
                const uint64_t p = cursor[d]++, slot = t->tok_pos ? p : tok;
                if (t->tok_doc)
                    t->tok_doc[tok] = d;
                if (t->tok_pos)
                    t->tok_pos[tok] = (uint32_t)p;
                tok++;
                if (progressive) /* topics drawn in rotation 0 */
                    continue;
                uint16_t k = (uint16_t)lda_below(&rng, K);
                if (warp) { /* topic k, counted as k, no proposal yet */
                    for (uint32_t m = 0; m < t->aux_stride; m++)
                        t->aux[p * t->aux_stride + m] = k;
                } else {
                    t->z[slot] = k;
                    if (t->ndk)
                        t->ndk[(size_t)d * K + k]++;
                }
            }
            t->run_end[run - 1] = tok;
            if (h) {
                t->held_word[held] = e[i].col;
                t->held_doc[held] = d;
                t->held_cnt[held] = h;
                held++;
            }
        }
        if (rt_shard_release(sh, e + off[b], e + off[b + 1], err)) {
            free(cursor);
            return -1;
        }
    }
    t->blk_run[B] = run;
    t->blk_tok[B] = tok;
    t->blk_held[B] = held;
    t->n_held = 0;
    for (uint64_t i = 0; i < held; i++)
        t->n_held += t->held_cnt[i];
    free(cursor);
    return 0;
}

/* The list sampler's lists with their counts, from the topics (none yet
 * before the progressive sweep), each in the order of its topics' first
 * tokens in the document: filled from z where it is doc-major, else from a
 * doc-major copy of the word-major z (token i of a document at the position
 * tokens_build dealt it, the same either way). */
static int doc_lists_build(lda_tokens *t, const lda_opts *o, rt_error *err)
{
    int32_t *row = calloc(o->K, sizeof(int32_t));
    uint16_t *doc_z = NULL;
    uint64_t *cursor = NULL;
    int fail = !row || lda_init_lists(t, o->K, lda_list_packs(t));
    if (!fail) { /* (not yet touched) the sweep reads a whole list per token, at random */
        const uint64_t entries = t->dnz_off[t->n_docs] + LDA_LIST_SLACK;
        advise_huge(t->dlist, t->dlist ? entries * sizeof(uint32_t) : 0);
        advise_huge(t->dnz, t->dnz ? entries * sizeof(uint16_t) : 0);
        advise_huge(t->dnc, t->dnc ? entries * sizeof(uint32_t) : 0);
    }
    if (!fail && o->init != LDA_INIT_PROGRESSIVE && t->tok_pos)
        lda_exact_lists_fill(t, row);
    if (!fail && o->init != LDA_INIT_PROGRESSIVE && !t->tok_pos) {
        doc_z = malloc((t->n_tokens ? t->n_tokens : 1) * sizeof(uint16_t));
        cursor = malloc((t->n_docs + 1) * sizeof(uint64_t));
        fail = !doc_z || !cursor;
    }
    if (!fail && doc_z) {
        memcpy(cursor, t->doc_off, (t->n_docs + 1) * sizeof(uint64_t));
        for (uint64_t i = 0; i < t->n_tokens; i++)
            doc_z[cursor[t->tok_doc[i]]++] = t->z[i];
        uint16_t *word_z = t->z;
        t->z = doc_z; /* (lda_exact_lists_fill reads the topics doc-major) */
        lda_exact_lists_fill(t, row);
        t->z = word_z;
    }
    free(row);
    free(doc_z);
    free(cursor);
    return fail ? rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA document topic lists)") : 0;
}

/* Nonzero topics per document, for the sparse sampler's and the fold-in's
 * document bucket. */
static int doc_nz_build(lda_tokens *t, uint32_t K, rt_error *err)
{
    int fail = 0;
    if (!t->ndk)
        return 0;
    t->dnz_off = xcalloc(t->n_docs + 1, sizeof(uint64_t), &fail);
    t->dnz_n = xcalloc(t->n_docs, sizeof(uint32_t), &fail);
    if (fail)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA doc topics)");
    for (uint32_t d = 0; d < t->n_docs; d++) {
        uint64_t len = t->doc_off[d + 1] - t->doc_off[d];
        t->dnz_off[d + 1] = t->dnz_off[d] + (len < K ? len : K);
    }
    t->dnz = xcalloc(t->dnz_off[t->n_docs], sizeof(uint16_t), &fail);
    if (fail)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA doc topics)");
    for (uint32_t d = 0; d < t->n_docs; d++) {
        const int32_t *row = t->ndk + (size_t)d * K;
        for (uint32_t k = 0; k < K; k++)
            if (row[k])
                t->dnz[t->dnz_off[d] + t->dnz_n[d]++] = (uint16_t)k;
    }
    return 0;
}

int lda_worker_init(lda_worker *w, const rt_plan *plan, const rt_shard *sh, const lda_opts *o,
                    rt_error *err)
{
    memset(w, 0, sizeof(*w));
    w->id = sh->worker;
    w->nk = calloc(o->K, sizeof(int64_t));
    if (!w->nk)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    if (tokens_build(&w->train, plan, sh, 0, o, err) || doc_nz_build(&w->train, o->K, err) ||
        (lda_uses_lists(o->sampler, o->K) && doc_lists_build(&w->train, o, err)))
        return -1;
    /* z doc-major: the word-major paths' documents (lda_doc_of), and the document-major
     * visit's order, which stays the same from sweep to sweep */
    if (lda_uses_lists(o->sampler, o->K) && w->train.tok_pos &&
        (lda_doc_step_build(&w->train) ||
         (w->train.dlist && lda_doc_order_build(&w->train, plan->blocks))))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA document order)");
    if (o->sampler == LDA_SAMPLER_CYCLE && lda_doc_step_build(&w->train))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA document index)");
    if (o->init == LDA_INIT_PROGRESSIVE && lda_init_lists(&w->train, o->K, 0))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA initial topic lists)");
    if (sh->test_row_ids &&
        (tokens_build(&w->test, plan, sh, 1, o, err) || doc_nz_build(&w->test, o->K, err)))
        return -1;
    /* nothing reads the shard again: none of it stays resident */
    return rt_shard_release(sh, sh->map, (const char *)sh->map + sh->map_len, err);
}
