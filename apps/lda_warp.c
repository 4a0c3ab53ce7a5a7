/* lda_warp.c - the warp sampler: WarpLDA's split of each sweep into a word
 * phase and a document phase (Chen et al., VLDB'16), on the rotation.
 *
 * Each token has a record of 2 + M u16 (t->aux, doc-major; M = --mh-steps):
 * its topic, the topic its word's block currently counts for it, and M
 * pending Metropolis-Hastings proposals; one record is all the word phase
 * touches per token (one cache miss), and the document phase reads a
 * document's records in a row.
 *
 * Document phase, before a worker's first block visit of a sweep, document
 * by document with the document's counts in dense thread scratch: accept
 * or reject, one after the other, the token's pending word proposals, each was drawn from
 * q_w(k) ∝ n_wk + beta, so the word factor of the conditional cancels and
 *     ratio = (n_dt + alpha) (n_s + V beta) / ((n_ds + alpha) (n_t + V beta))
 * (counts without the token); then draw the next M proposals from the
 * document, q_d(k) ∝ n_dk + alpha: the topic of a random token of the
 * document, or a uniform topic.  No word counts are needed, so no block.
 *
 * Word phase, at each block visit, word by word with the word's counts
 * loaded from the block: first move the block's counts of all the word's
 * tokens to their current topics where the document phase changed them
 * (the delayed count updates, see word_settle), then, token by token,
 * accept or reject the pending document proposals, whose
 * document factor cancels:
 *     ratio = (n_wt + beta) (n_s + V beta) / ((n_ws + beta) (n_t + V beta))
 * and draw the next M word proposals from the word's counts after its
 * tokens moved (the topic of a random one of its tokens, from an urn with
 * n_wk copies of topic k, or a uniform topic).  No document counts are
 * needed, so there is no document-topic matrix at all: memory grows with
 * tokens, not with K x documents.
 *
 * As in WarpLDA, each proposal is drawn from counts that move on before it
 * is judged (delayed updates), which the acceptance ratios ignore; the
 * topic totals n_k are the worker's own (global snapshot + its changes).
 * So the chain settles below the collapsed Gibbs posterior, more so with
 * more workers (a block counts another worker's tokens where its last
 * visit left them): on e2e_lda_stationary's corpus 0.67% of the
 * log-likelihood per token with one worker, 1.45% with two.  The document
 * phase is where it comes from (drawing the word phase's document
 * proposals fresh changes nothing).  A document-phase step can be judged
 * exactly without the word's counts: if a pending word proposal is the
 * position of a random token of the word, not its topic, and the phase
 * reads that token's topic when it judges the proposal, the proposal is
 * drawn from the counts as they are then (the token itself counted where
 * it is), and the word factor cancels exactly.  Measured 2026-11-27 (one
 * worker: 0.06% below, the exact chains' spread; two: 1.09%, the other
 * worker's tokens still where its last visit left them; both phases so:
 * 0.09% / 0.92%, and exact by enumeration on a toy corpus), but the
 * proposal's 32-bit position and its read at a scattered record cost
 * 21-26% of warp's tokens/s at KOS and AP K = 1000 (both phases 29-36%,
 * for 0.2-0.3% more log-likelihood after 50 sweeps), so warp keeps
 * WarpLDA's delayed updates; the cycle sampler below is the exact chain.
 * Every random draw comes from a stream per (worker, sweep, block) or
 * (worker, sweep) for the document phase (a wyrand generator seeded with
 * the stream's first draw), so any split of the workers over nodes and
 * threads gives the same chain. */
#include "apps/lda.h"

#include <stdlib.h>
#include <string.h>

#define PREFETCH 16 /* tokens ahead (a few hundred ns of sampling) */
/* The settle pass does a few instructions per record, so it fetches
 * further ahead to cover a last-level cache hit. */
#define SETTLE_AHEAD 64

/* Metropolis-Hastings acceptance of topic t for a token now at s, when the
 * proposal cancels all but the factor (c_t + prior) / (n_t + V beta):
 * c and n are counts with the token, at s; u is 32 random bits.  No
 * branch: whether a proposal is taken is a coin flip the branch predictor
 * cannot learn.  (t == s is "accepted" as a move that changes nothing.) */
static inline int accept(double ct, double cs, double prior, double nt, double ns, double vbeta,
                         uint32_t u)
{
    double num = (ct + prior) * (ns - 1 + vbeta);
    double den = (cs - 1 + prior) * (nt + vbeta);
    return (double)u * 0x1.0p-32 * den < num;
}

/* The token's topic after a step: prop if it was taken, else k.  A mask,
 * not a branch: the compiler made a branch of the conditional expression,
 * which mispredicted about one step in four (a coin flip), and each miss
 * cost more than the wait for the acceptance test that the mask adds to
 * the next step's count loads (measured: 20% of the serial sweep time at
 * KOS K = 1000, 24% on the synthetic corpus). */
static inline uint32_t moved_to(int take, uint32_t prop, uint32_t k)
{
    return k ^ ((k ^ prop) & (uint32_t)-take);
}

/* The random bits of a token's step m (2, 3, ...): the halves of one
 * 64-bit draw serve two steps (32 bits resolve an acceptance probability
 * finely enough; the draws are a large part of a step's instructions). */
static inline uint32_t step_bits(rt_wyrand *rng, uint64_t *x, uint32_t m)
{
    if (!(m & 1))
        *x = rt_wyrand_next(rng);
    return (uint32_t)(m & 1 ? *x >> 32 : *x);
}

/* The probability of drawing from the counts rather than uniformly, as a
 * threshold on 32 random bits (2^32: always the counts). */
static inline uint64_t counts_threshold(double counts, double prior_mass)
{
    return (uint64_t)(counts / (counts + prior_mass) * 4294967296.0);
}

/* One proposal from q(k) ∝ c_k + prior with one 64-bit draw: the high half
 * picks the counts (below thr) or a uniform topic, the low half the topic
 * of one of the n tokens of `topics` (stride apart), i.e. a topic in
 * proportion to its count, or the uniform topic. */
static inline uint16_t propose(rt_wyrand *rng, uint64_t thr, const uint16_t *topics, uint32_t n,
                               size_t stride, uint32_t K)
{
    uint64_t x = rt_wyrand_next(rng), lo = x & 0xffffffffu;
    uint16_t counted = topics[((lo * n) >> 32) * stride], uniform = (uint16_t)((lo * K) >> 32);
    /* (a mask, not a branch: the choice is a coin flip, and the compiler
     * made a branch of the conditional expression) */
    uint16_t from_counts = (uint16_t) - (uint16_t)((x >> 32) < thr);
    return (uint16_t)((counted & from_counts) | (uniform & ~from_counts));
}

/* The word phase keeps the loaded word's counts in the shared dense
 * scratch (lda_word.nwk) with IN_NZ set on every topic of its topic list,
 * instead of the list's position array: whether a topic coming back to 1
 * is listed already is then known from the count itself, one cache line
 * fewer per topic at large K.  Counts stay far below IN_NZ (a word's
 * tokens, below LDA_WARP_WORD_TOKENS_MAX). */
#define IN_NZ (1 << 30)
#define COUNT(v) ((v) & (IN_NZ - 1))

/* Both phases keep the worker's topic totals as doubles while they run
 * (integers, so exact, and the acceptance ratios come out bit for bit as
 * from the int64 totals): an integer's conversion sat on the chain from
 * one MH step's outcome to the next step's ratio, twice per step.  The
 * scratch is the sparse sampler's bucket array (K doubles, unused by the
 * warp phases). */
static double *totals_load(const lda_worker *w, lda_scratch *s, uint32_t K)
{
    double *nkd = s->buf;
    for (uint32_t k = 0; k < K; k++)
        nkd[k] = (double)w->nk[k];
    return nkd;
}

static void totals_store(lda_worker *w, const double *nkd, uint32_t K)
{
    for (uint32_t k = 0; k < K; k++)
        w->nk[k] = (int64_t)nkd[k];
}

static void word_load_flagged(lda_word *wd, uint32_t K, uint32_t *slice, uint32_t cap)
{
    int32_t *nwk = wd->nwk;
    uint32_t n = 0;
    wd->slice = slice;
    wd->cap = cap;
    if (!cap) { /* (no branch on which topics the word has: there is no pattern) */
        for (uint32_t k = 0; k < K; k++) {
            int32_t v = (int32_t)slice[k], has = v != 0;
            nwk[k] = v | (has * IN_NZ);
            wd->nz[n] = (uint16_t)k;
            n += (uint32_t)has;
        }
    } else {
        for (uint32_t x = 0; x < slice[0]; x++) {
            uint32_t e = slice[1 + x], k = e >> 16;
            nwk[k] = (int32_t)(e & 0xffff) | IN_NZ;
            wd->nz[n++] = (uint16_t)k;
        }
    }
    wd->n_nz = n;
}

/* Count `add` (0 or 1) more tokens of the loaded word at topic k, listing
 * k if it was neither counted nor listed.  No branch: add is a coin flip
 * for an accepted proposal, and whether k is new to the word one for a
 * uniform proposal.  k is written past the list every time and kept only
 * when new (the list has room for K + 1: an unlisted topic means fewer
 * than K listed, and a full list still has the spare entry). */
static inline void word_count_add(lda_word *wd, uint32_t k, int32_t add)
{
    int32_t v = wd->nwk[k], fresh = (v == 0) & add;
    wd->nwk[k] = v + add + fresh * IN_NZ;
    wd->nz[wd->n_nz] = (uint16_t)k;
    wd->n_nz += (uint32_t)fresh;
}

/* c copies of topic k at urn (which has LDA_URN_SLACK spare entries past
 * the most tokens of any word): most counts are a few, so whole groups of
 * 8 are written, past c (even for c = 0), rather than one copy per turn of
 * a loop whose exit the branch predictor misses for nearly every topic. */
static inline void urn_fill(uint16_t *urn, uint16_t k, uint32_t c)
{
    const uint64_t four = k * 0x0001000100010001ull; /* 4 copies */
    memcpy(urn, &four, sizeof four);
    memcpy(urn + 4, &four, sizeof four);
    for (uint32_t y = 8; y < c; y += 8) {
        memcpy(urn + y, &four, sizeof four);
        memcpy(urn + y + 4, &four, sizeof four);
    }
}

/* Write the word back into its slice (topics in list order, the ones down
 * to 0 left out), its urn unless urn is NULL (*n_urn topics, one copy per
 * count) and reset the scratch, in one pass over the list; -1 if a sparse
 * slice would overflow. */
static int word_store_flagged(lda_word *wd, uint16_t *urn, uint32_t *n_urn)
{
    /* (local copies: the stores through urn and slice could alias *wd) */
    int32_t *nwk = wd->nwk;
    uint32_t *slice = wd->slice;
    const uint16_t *nz = wd->nz;
    const uint32_t n_nz = wd->n_nz, cap = wd->cap;
    uint32_t n = 0, u = 0, seen = 0;
    for (uint32_t x = 0; x < n_nz; x++) {
        uint32_t k = nz[x];
        int32_t c = COUNT(nwk[k]);
        nwk[k] = 0;
        if (urn) /* (NULL for the cycle sampler: the branch is predicted) */
            urn_fill(urn + u, (uint16_t)k, (uint32_t)c);
        u += (uint32_t)c;
        if (!cap) {
            slice[k] = (uint32_t)c; /* (a dense topic not listed was and is 0) */
            continue;
        }
        /* (no branch on c > 0: topics listed and down to 0 come in no
         * pattern; the entry past the kept ones is written anyway.  A
         * sparse slice has room for as many topics as the word has tokens
         * and its counts fit in 16 bits, so only a block that came in
         * wrong fails the tests, which are made once, after the loop.) */
        if (n + 1 < cap)
            slice[1 + n] = k << 16 | (uint32_t)c;
        n += (uint32_t)(c > 0);
        seen |= (uint32_t)c;
    }
    wd->n_nz = 0;
    *n_urn = u;
    if (!cap)
        return 0;
    if (n + 1 > cap || seen > 0xffff)
        return -1;
    slice[0] = n;
    return 0;
}

/* Load the word of run r of block b into the scratch; returns the word
 * (block-local). */
static inline uint32_t word_run_load(const lda_ctx *c, const lda_tokens *t, uint32_t b, uint64_t r,
                                     uint32_t *payload, lda_word *wd)
{
    uint32_t cap, j = t->run_word[r];
    uint32_t *slice = lda_word_slice(c, b, j, payload, &cap);
    word_load_flagged(wd, c->o->K, slice, cap);
    return j;
}

/* Move the loaded word's counts of the run's tokens (records first .. end
 * in tok_pos) to their current topics: the document phase's delayed
 * updates, all of them before any token of the run is judged.  The
 * target of a token's acceptance is its conditional given every other
 * token where it is now; applied one token at a time, each token was
 * judged against the later tokens' old topics, a lag that held the chain
 * below the Gibbs posterior (from a Gibbs state at KOS K = 1000 it lost
 * 0.09 nat/token of log-likelihood within 10 sweeps with the lag, 0.055
 * without).  The records are scattered over the documents: fetch the one
 * SETTLE_AHEAD tokens ahead (to the block's end, ahead_end). */
static inline void word_settle(lda_word *wd, uint16_t *aux, const uint32_t *tok_pos, uint64_t first,
                               uint64_t end, uint64_t ahead_end, uint32_t S)
{
    for (uint64_t i = first; i < end; i++) {
        uint16_t *a = aux + (size_t)tok_pos[i] * S;
        if (i < ahead_end)
            __builtin_prefetch(aux + (size_t)tok_pos[i + SETTLE_AHEAD] * S, 1);
        wd->nwk[a[1]]--;
        word_count_add(wd, a[0], 1);
        a[1] = a[0];
    }
}

/* The word phase of one block visit with M proposals per token; M is a
 * constant in the callers below, so the proposal loops unroll.  The
 * generator is local: through a pointer, every store to the counts could
 * alias its state, which then made a round trip through memory for each
 * draw. */
static inline __attribute__((always_inline)) int word_phase(const lda_ctx *c, lda_worker *w,
                                                            uint32_t b, uint32_t *payload,
                                                            lda_scratch *s, rt_rng *rng_io,
                                                            uint32_t M, rt_error *err)
{
    lda_tokens *t = &w->train;
    const uint32_t K = c->o->K, S = M + 2; /* = t->aux_stride */
    const double beta = c->o->beta, vbeta = c->vbeta, Kbeta = K * beta;
    double *nk = totals_load(w, s, K);
    lda_word *wd = &s->word;
    uint16_t *aux = t->aux, *urn = s->urn;
    const uint32_t *tok_pos = t->tok_pos;
    rt_wyrand rng = {rt_rng_next(rng_io)};
    uint64_t i = t->blk_tok[b];
    /* the records are visited in word order, scattered over the documents:
     * each pass fetches the one some tokens ahead while this one is worked
     * on (the settle pass across the runs, to the block's end) */
    const uint64_t settle_end =
        t->blk_tok[b + 1] > SETTLE_AHEAD ? t->blk_tok[b + 1] - SETTLE_AHEAD : 0;
    for (uint64_t r = t->blk_run[b]; r < t->blk_run[b + 1]; r++) {
        const uint32_t j = word_run_load(c, t, b, r, payload, wd);
        int32_t *nwk = wd->nwk;
        const uint64_t first = i, end = t->run_end[r];
        word_settle(wd, aux, tok_pos, first, end, settle_end, S);
        /* (a long run's first records left the cache while it was
         * settled: fetch ahead again, here and in the proposal pass) */
        const uint64_t run_ahead = end > PREFETCH ? end - PREFETCH : 0;
        for (; i < end; i++) {
            uint16_t *a = aux + (size_t)tok_pos[i] * S;
            if (i < run_ahead)
                __builtin_prefetch(aux + (size_t)tok_pos[i + PREFETCH] * S, 1);
            uint32_t k = a[0];
            uint64_t x = 0;
            for (uint32_t m = 2; m < M + 2; m++) {
                uint32_t prop = a[m];
                int take = accept(COUNT(nwk[prop]), COUNT(nwk[k]), beta, nk[prop], nk[k], vbeta,
                                  step_bits(&rng, &x, m));
                nwk[k] -= take;
                nk[k] -= take;
                nk[prop] += take;
                word_count_add(wd, prop, take);
                k = moved_to(take, prop, k);
            }
            a[0] = a[1] = (uint16_t)k;
        }
        /* the next word proposals, q_w(k) ∝ n_wk + beta with the counts as
         * they are now: the topic of a random one of the word's tokens over
         * all workers (an urn with n_wk copies of topic k, written by the
         * pass that stores the counts back: cheaper than an alias table's
         * build for all but the longest words, and one draw per
         * proposal), or a uniform topic */
        uint32_t n;
        if (word_store_flagged(wd, urn, &n)) {
            totals_store(w, nk, K);
            return lda_overflow(b, j, err);
        }
        const uint64_t thr = counts_threshold(n, Kbeta);
        for (uint64_t x = first; x < i; x++) {
            uint16_t *a = aux + (size_t)tok_pos[x] * S;
            if (x < run_ahead)
                __builtin_prefetch(aux + (size_t)tok_pos[x + PREFETCH] * S, 1);
            for (uint32_t m = 2; m < M + 2; m++)
                a[m] = propose(&rng, thr, urn, n, 1, K);
        }
    }
    totals_store(w, nk, K);
    return 0;
}

/* ---- the cycle sampler ----
 *
 * The warp sampler's chain sits below the collapsed Gibbs posterior (0.75%
 * of the log-likelihood per token at KOS K = 1000 from a Gibbs state, 1.3%
 * at K = 100): its document phase judges word proposals drawn at the
 * word's last block visit as if the word's counts had not moved since.
 * The cycle sampler has no document phase.  Its word phase, word by word
 * with the word's counts loaded from the block as in warp, takes each
 * token through M cycles of two Metropolis-Hastings steps (LightLDA's
 * cycle proposals, Yuan et al., WWW'15), each drawn from and judged
 * against the counts as they are at that moment:
 *   - a word proposal from q_w(k) ∝ n_wk + beta: a uniform topic or the
 *     topic of a random token of the word, from an urn of the other
 *     workers' tokens (which do not move while this worker holds the
 *     block) or the run's own tokens where they are now; its word factor
 *     cancels, leaving
 *         (n_dt + alpha)(n_s + V beta) / ((n_ds + alpha)(n_t + V beta));
 *   - a document proposal from q_d(k) ∝ n_dk + alpha (a uniform topic or
 *     the topic of a random token of the document), whose document factor
 *     cancels:
 *         (n_wt + beta)(n_s + V beta) / ((n_ws + beta)(n_t + V beta))
 * (counts without the token; both proposals count it where it is, which
 * the acceptance test allows for).  n_dt and n_ds are counted from the
 * document's topics, so there is no document-topic structure at all: the
 * memory is the topics, 2 bytes per token.  The chain is exact but for the
 * topic totals, at most one step stale as in every sampler here.  (A first
 * version drew the word proposals from an urn of the word's counts as
 * loaded, with those counts in the ratio, as LightLDA's stale alias tables
 * do: its stationary log-likelihood came out 0.3% above collapsed Gibbs on
 * the tiny corpus of e2e_lda_reference.) */

/* How many of the document's tokens are at topics a and b: a scan of its
 * topics (a few cache lines for most documents, compared a vector at a
 * time in 16-bit lanes), so there is no document-topic structure to keep
 * up to date.  Written once for 8 lanes (SSE2, every x86-64) and 16 (AVX2,
 * picked at run time: the scan is most of the sampler's instructions);
 * the counts are the same either way.  (GCC's vector extension: the
 * compiler widened a plain loop's comparisons to 32-bit lanes.)  The lane
 * sums: of each 64-bit group's 4 lanes by one multiplication, which adds
 * them into the top 16 bits (each lane stays at most 8192). */
#define DOC_COUNT2(NAME, ATTR, LANES)                                                              \
    typedef uint16_t NAME##_v __attribute__((vector_size(2 * LANES)));                             \
    static ATTR uint32_t NAME##_sum(NAME##_v v)                                                    \
    {                                                                                              \
        uint64_t h[LANES / 4], sum = 0;                                                            \
        memcpy(h, &v, sizeof h);                                                                   \
        for (int g = 0; g < LANES / 4; g++)                                                        \
            sum += h[g]; /* (16-bit fields of at most 4 x 8192: no carry) */                       \
        return (uint32_t)((sum * 0x0001000100010001ull) >> 48);                                    \
    }                                                                                              \
    static ATTR void NAME(const uint16_t *z, uint32_t len, uint32_t a, uint32_t b, uint32_t *ca,   \
                          uint32_t *cb)                                                            \
    {                                                                                              \
        uint32_t x = 0, y = 0, j = 0;                                                              \
        if (len < LANES) { /* (a short document: one by one) */                                    \
            for (; j < len; j++) {                                                                 \
                x += z[j] == a;                                                                    \
                y += z[j] == b;                                                                    \
            }                                                                                      \
            *ca = x;                                                                               \
            *cb = y;                                                                               \
            return;                                                                                \
        }                                                                                          \
        NAME##_v va, vb, lane, v;                                                                  \
        for (int l = 0; l < LANES; l++) {                                                          \
            va[l] = (uint16_t)a;                                                                   \
            vb[l] = (uint16_t)b;                                                                   \
            lane[l] = (uint16_t)l;                                                                 \
        }                                                                                          \
        for (;;) {                                                                                 \
            /* (at most 8191 turns, and the rest, per lane sum) */                                 \
            const uint32_t stop = len - j > LANES * 8191u ? j + LANES * 8191u : len;               \
            NAME##_v sa = {0}, sb = {0};                                                           \
            for (; j + LANES <= stop; j += LANES) {                                                \
                memcpy(&v, z + j, sizeof v);                                                       \
                sa -= (NAME##_v)(v == va); /* (a match is -1 in its lane) */                       \
                sb -= (NAME##_v)(v == vb);                                                         \
            }                                                                                      \
            const int last = stop == len;                                                          \
            if (last) { /* the last LANES topics, but the lanes counted above */                   \
                const NAME##_v rest = (NAME##_v)(lane >= (uint16_t)(LANES - (len - j)));           \
                memcpy(&v, z + len - LANES, sizeof v);                                             \
                sa -= (NAME##_v)(v == va) & rest;                                                  \
                sb -= (NAME##_v)(v == vb) & rest;                                                  \
            }                                                                                      \
            x += NAME##_sum(sa);                                                                   \
            y += NAME##_sum(sb);                                                                   \
            if (last)                                                                              \
                break;                                                                             \
        }                                                                                          \
        *ca = x;                                                                                   \
        *cb = y;                                                                                   \
    }
DOC_COUNT2(doc_count2_sse2, inline, 8)
DOC_COUNT2(doc_count2_avx2, __attribute__((target("avx2"))), 16)

static inline void doc_count2(int avx2, const uint16_t *z, uint32_t len, uint32_t a, uint32_t b,
                              uint32_t *ca, uint32_t *cb)
{
    if (avx2)
        doc_count2_avx2(z, len, a, b, ca, cb);
    else
        doc_count2_sse2(z, len, a, b, ca, cb);
}

/* (lda.h; the counts may carry IN_NZ: COUNT reads plain counts as they are) */
uint32_t lda_word_urn_live(const lda_word *wd, const uint16_t *z, const uint32_t *tok_pos,
                           uint64_t first, uint64_t end, uint16_t *urn, int32_t *own)
{
    for (uint64_t i = first; i < end; i++)
        own[z[tok_pos[i]]]++;
    uint32_t n = 0;
    for (uint32_t x = 0; x < wd->n_nz; x++) {
        const uint32_t k = wd->nz[x], c = (uint32_t)(COUNT(wd->nwk[k]) - own[k]);
        own[k] = 0;
        urn_fill(urn + n, (uint16_t)k, c);
        n += c;
    }
    for (uint64_t i = first; i < end; i++)
        urn[n + (i - first)] = z[tok_pos[i]];
    return n;
}

/* The document of a token being sampled: its topics. */
typedef struct cycle_doc_view {
    const uint16_t *z;
    uint32_t len;
} cycle_doc_view;

static inline cycle_doc_view cycle_doc_view_of(const lda_tokens *t, uint64_t p)
{
    const uint32_t d = lda_doc_of(t, p);
    return (cycle_doc_view){t->aux + t->doc_off[d], (uint32_t)(t->doc_off[d + 1] - t->doc_off[d])};
}

/* Fetch the topics of the document of token position p: the lines a
 * token's counts scan (the first DOC_PREFETCH_LINES; the hardware
 * follows a longer document). */
#define DOC_PREFETCH_LINES 8
static inline void doc_prefetch(const lda_tokens *t, uint64_t p)
{
    const uint32_t d = lda_doc_of(t, p);
    const char *beg = (const char *)(t->aux + t->doc_off[d]);
    const char *end = (const char *)(t->aux + t->doc_off[d + 1]);
    if (end > beg + DOC_PREFETCH_LINES * 64)
        end = beg + DOC_PREFETCH_LINES * 64;
    for (const char *x = beg; x < end; x += 64)
        __builtin_prefetch(x, 1);
}

/* The token moves from k to t if take (a mask, not a branch: acceptance is
 * a coin flip): the word's counts, the totals, its topic in the document
 * and in the urn; returns its topic. */
static inline uint32_t cycle_step(lda_word *wd, double *nk, uint16_t *zp, uint16_t *urn_own,
                                  uint32_t k, uint32_t t, int take)
{
    wd->nwk[k] -= take;
    word_count_add(wd, t, take);
    nk[k] -= take;
    nk[t] += take;
    k = moved_to(take, t, k);
    *zp = *urn_own = (uint16_t)k;
    return k;
}

/* The word phase of one block visit with M cycles per token (see above). */
static inline __attribute__((always_inline)) int cycle_phase(const lda_ctx *c, lda_worker *w,
                                                             uint32_t b, uint32_t *payload,
                                                             lda_scratch *s, rt_rng *rng_io,
                                                             uint32_t M, rt_error *err)
{
    lda_tokens *t = &w->train;
    const uint32_t K = c->o->K;
    const double alpha = c->o->alpha, beta = c->o->beta, vbeta = c->vbeta;
    const double Kbeta = K * beta, Kalpha = K * alpha;
    double *nk = totals_load(w, s, K);
    lda_word *wd = &s->word;
    uint16_t *z = t->aux, *urn = s->urn;
    const uint32_t *tok_pos = t->tok_pos;
    rt_wyrand rng = {rt_rng_next(rng_io)};
    uint64_t i = t->blk_tok[b];
    const uint64_t ahead_end = t->blk_tok[b + 1] > PREFETCH ? t->blk_tok[b + 1] - PREFETCH : 0;
    for (uint64_t r = t->blk_run[b]; r < t->blk_run[b + 1]; r++) {
        const uint32_t j = word_run_load(c, t, b, r, payload, wd);
        int32_t *nwk = wd->nwk;
        const uint64_t first = i, end = t->run_end[r];
        const uint32_t n_urn = lda_word_urn_live(wd, z, tok_pos, first, end, urn, s->urn_own);
        const uint32_t n_word = n_urn + (uint32_t)(end - first);
        const uint64_t thr_w = counts_threshold(n_word, Kbeta);
        for (; i < end; i++) {
            const uint64_t p = tok_pos[i];
            if (i < ahead_end)
                doc_prefetch(t, tok_pos[i + PREFETCH]);
            const cycle_doc_view dv = cycle_doc_view_of(t, p);
            uint16_t *urn_own = urn + n_urn + (i - first);
            uint32_t k = z[p];
            const uint64_t thr_d = counts_threshold(dv.len, Kalpha);
            for (uint32_t m = 0; m < M; m++) {
                /* the word proposal: its word factor cancels (a proposal of
                 * the token's own topic is a move that changes nothing) */
                uint32_t prop = propose(&rng, thr_w, urn, n_word, 1, K), ct, cs;
                uint64_t x = rt_wyrand_next(&rng);
                doc_count2(s->avx2, dv.z, dv.len, prop, k, &ct, &cs);
                int take = accept(ct, cs, alpha, nk[prop], nk[k], vbeta, (uint32_t)x);
                k = cycle_step(wd, nk, z + p, urn_own, k, prop, take);
                /* the document proposal: its document factor cancels */
                prop = propose(&rng, thr_d, dv.z, dv.len, 1, K);
                take = accept(COUNT(nwk[prop]), COUNT(nwk[k]), beta, nk[prop], nk[k], vbeta,
                              (uint32_t)(x >> 32));
                k = cycle_step(wd, nk, z + p, urn_own, k, prop, take);
            }
        }
        uint32_t n;
        if (word_store_flagged(wd, NULL, &n)) {
            totals_store(w, nk, K);
            return lda_overflow(b, j, err);
        }
    }
    totals_store(w, nk, K);
    return 0;
}

/* A block visit by PHASE with M a constant in its loops for the common
 * values. */
#define VISIT_BY_STEPS(PHASE)                                                                      \
    switch (c->o->mh_steps) {                                                                      \
    case 1:                                                                                        \
        return PHASE(c, w, b, payload, s, rng, 1, err);                                            \
    case 2:                                                                                        \
        return PHASE(c, w, b, payload, s, rng, 2, err);                                            \
    default:                                                                                       \
        return PHASE(c, w, b, payload, s, rng, c->o->mh_steps, err);                               \
    }

/* (a function of its own: inlined into lda_visit_warp, it cost the warp
 * word phase 3% more instructions) */
static __attribute__((noinline)) int cycle_visit(const lda_ctx *c, lda_worker *w, uint32_t b,
                                                 uint32_t *payload, lda_scratch *s, rt_rng *rng,
                                                 rt_error *err)
{
    VISIT_BY_STEPS(cycle_phase)
}

int lda_visit_warp(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                   rt_rng *rng, rt_error *err)
{
    if (c->o->sampler == LDA_SAMPLER_CYCLE)
        return cycle_visit(c, w, b, payload, s, rng, err);
    VISIT_BY_STEPS(word_phase)
}

/* The document phase with M proposals per token (see word_phase). */
static inline __attribute__((always_inline)) void
doc_phase(const lda_ctx *c, lda_worker *w, lda_scratch *s, rt_rng *rng_io, uint32_t M)
{
    lda_tokens *t = &w->train;
    const uint32_t K = c->o->K, S = M + 2; /* = t->aux_stride */
    const double alpha = c->o->alpha, vbeta = c->vbeta, Kalpha = K * alpha;
    double *nk = totals_load(w, s, K);
    /* the document's counts as doubles too (exact), in the sparse
     * sampler's K-double coefficient array: zeroed here, as the exact
     * sweeps leave it filled, and zero again after each document */
    double *cnt = s->coef;
    memset(cnt, 0, K * sizeof(double));
    rt_wyrand rng = {rt_rng_next(rng_io)};
    for (uint32_t d = 0; d < t->n_docs; d++) {
        uint16_t *beg = t->aux + t->doc_off[d] * S, *end = t->aux + t->doc_off[d + 1] * S;
        const uint32_t len = (uint32_t)(t->doc_off[d + 1] - t->doc_off[d]);
        if (!len)
            continue;
        for (uint16_t *a = beg; a < end; a += S)
            cnt[a[0]]++;
        for (uint16_t *a = beg; a < end; a += S) {
            uint32_t k = a[0];
            uint64_t x = 0;
            for (uint32_t m = 2; m < M + 2; m++) {
                uint32_t prop = a[m];
                int take = accept(cnt[prop], cnt[k], alpha, nk[prop], nk[k], vbeta,
                                  step_bits(&rng, &x, m));
                cnt[k] -= take;
                cnt[prop] += take;
                nk[k] -= take;
                nk[prop] += take;
                k = moved_to(take, prop, k);
            }
            a[0] = (uint16_t)k;
        }
        /* the next document proposals, q_d(k) ∝ n_dk + alpha from the
         * topics as they are now */
        const uint64_t thr = counts_threshold(len, Kalpha);
        for (uint16_t *a = beg; a < end; a += S) {
            for (uint32_t m = 2; m < M + 2; m++)
                a[m] = propose(&rng, thr, beg, len, S, K);
            cnt[a[0]] = 0;
        }
    }
    totals_store(w, nk, K);
}

void lda_doc_phase(const lda_ctx *c, lda_worker *w, lda_scratch *s, rt_rng *rng)
{
    switch (c->o->mh_steps) {
    case 1:
        doc_phase(c, w, s, rng, 1);
        break;
    case 2:
        doc_phase(c, w, s, rng, 2);
        break;
    default:
        doc_phase(c, w, s, rng, c->o->mh_steps);
    }
}

void lda_doc_counts(const lda_tokens *t, uint32_t K, uint32_t d, int32_t *row)
{
    if (t->ndk) {
        memcpy(row, t->ndk + (size_t)d * K, K * sizeof(int32_t));
        return;
    }
    if (lda_counts_in_lists(t)) { /* the list sampler: its list */
        for (uint64_t at = t->dnz_off[d]; at < t->dnz_off[d] + t->dnz_n[d]; at++)
            row[lda_list_topic_at(t, at)] = (int32_t)lda_list_count_at(t, at);
        return;
    }
    for (uint64_t p = t->doc_off[d]; p < t->doc_off[d + 1]; p++)
        row[lda_topic(t, p)]++;
}
