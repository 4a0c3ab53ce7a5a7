/*
 * lda.h - collapsed Gibbs sampling LDA on the rotation engine (internal).
 *
 * Model: documents are plan rows, words are plan columns.  Word-topic counts
 * n_wk live in the parameter blocks that rotate around the ring; doc-topic
 * counts n_dk and the topic assignments z stay with the worker that owns the
 * documents; topic totals n_k are kept per worker as (global snapshot + own
 * changes) and all-reduced as deltas after every step, so a worker samples
 * with totals at most one step stale.
 *
 * Randomness is drawn from a stream per (seed, worker, rotation, block), so
 * any split of the plan's W workers over nodes and threads samples the same
 * chain, bit for bit.
 *
 * Block payload (lda_layout.c): a 16-byte header, then one slice per word
 * of the block in block order.  A word with fewer than K/2 training tokens
 * gets a *sparse* slice: u32 nnz, then capacity = its token count entries
 * (topic << 16 | count).  A more frequent word gets a *dense* slice of K
 * int32 counts.  Slices never overflow: a word's counts always sum to its
 * token count.
 *
 * Rotation 0 only adds every token's initial topic to its block (the
 * initial assignment is drawn at create from per-(worker, block) streams);
 * rotation r >= 1 is sampling iteration r.
 */
#ifndef ROTOR_APPS_LDA_H
#define ROTOR_APPS_LDA_H

#include "apps/apps.h"

#include <stdint.h>

#define RT_LDA_WORDS_FILE "lda.words"    /* training tokens per word, in the plan directory */
#define RT_LDA_PAYLOAD_MAGIC 0x4c444131u /* "LDA1" */
#define RT_LDA_HEADER_U32 4

/* lda.words: "ROTORLW1", u64 plan_id, u64 n, u64 checksum of the counts, u64 counts[n].
 * rt_lda_plan_side_files (the plan_side_files hook) writes it from the
 * plan's training entries. */
int rt_lda_plan_side_files(const char *tmp_dir, uint64_t plan_id, const rt_plan_input *in,
                           rt_error *err);
int rt_lda_words_read(const char *path, uint64_t plan_id, uint64_t n, uint64_t **tokens,
                      rt_error *err);

/* ---- the saved model (lda_save.c writes, lda_model.c reads) ---- */
/* The `top` most frequent words of every topic, ties by word id, gathered
 * word by word (so a saving rank needs only its own words, and rank 0
 * merges every rank's candidates), then printed as
 * "topic k (share): words..." lines. */
typedef struct lda_word_count {
    int32_t count; /* -1: an unused entry */
    uint32_t word;
} lda_word_count;
typedef struct lda_top {
    uint32_t K, top;
    lda_word_count *best; /* K x top, each topic's list best first */
} lda_top;
int lda_top_init(lda_top *t, uint32_t K, uint32_t top, rt_error *err);
void lda_top_free(lda_top *t);
/* Offer word `word` with its K counts to every topic's list. */
void lda_top_add_word(lda_top *t, uint32_t word, const int32_t *counts);
/* The lists as bytes (for a gather), and another rank's lists merged in
 * (words must be below V; exit 1 otherwise). */
size_t lda_top_bytes(const lda_top *t);
int lda_top_merge(lda_top *t, const void *other, uint64_t V, rt_error *err);
int lda_top_write(FILE *fp, const lda_top *t, const int64_t *nk, const char *const *vocab,
                  rt_error *err);
/* A saved model read back (lda_model.c): the trained counts and the
 * hyperparameters they were trained with. */
typedef struct lda_model {
    uint32_t K;
    uint64_t V;
    int32_t *wt; /* V x K: n_wk */
    int64_t *nk; /* K */
    double alpha, beta;
    rt_idmap vocab;
    const char **words; /* V: the vocabulary strings */
} lda_model;
int lda_model_load(const char *dir, void **model, rt_error *err);
void lda_model_free(void *model);
int lda_model_topics(const void *model, uint32_t top, FILE *out, rt_error *err);
/* New documents' topic mixtures (lda_infer.c; the model_infer hook). */
int lda_model_infer(const void *model, const rt_corpus *docs, const rt_infer_opts *o,
                    rt_infer_result *res, rt_error *err);
int lda_model_export(const char *dir, const rt_export_opts *o, rt_error *err);

typedef enum lda_sampler {
    LDA_SAMPLER_SPARSE = 0,
    LDA_SAMPLER_MH = 1,
    LDA_SAMPLER_WARP = 2,
    LDA_SAMPLER_AUTO = 3, /* only until the options are parsed: lda_sampler_auto */
    LDA_SAMPLER_CYCLE = 4
} lda_sampler;

/* The samplers that keep each training token's topic in a record (t->aux)
 * and no document-topic matrix. */
static inline int lda_uses_records(lda_sampler s)
{
    return s == LDA_SAMPLER_WARP || s == LDA_SAMPLER_CYCLE;
}

/* The samplers whose word proposal draws from the word's live urn
 * (lda_word_urn_live): at most LDA_WARP_WORD_TOKENS_MAX tokens a word. */
static inline int lda_uses_urn(lda_sampler s)
{
    return lda_uses_records(s) || s == LDA_SAMPLER_MH;
}

/* --sampler auto: the sparse (exact) sampler up to LDA_AUTO_EXACT_MAX_K and
 * above LDA_AUTO_WARP_MAX_K (= LDA_DENSE_K: there it runs on document lists),
 * warp between: the one that reaches a given log-likelihood sooner (README,
 * LDA).  At K = 384 the dense kernel got to WarpLDA's 50-iteration
 * log-likelihood in 10 sweeps on KOS and AP and 8 on the synthetic corpus,
 * warp in 31-33: 0.29 / 0.42 / 0.48 of WarpLDA's time against warp's 0.40 /
 * 0.53 / 0.74 (bench/lda.sh, one round, 2026-11-27); at 512 the synthetic
 * corpus is a tie and AP leans to warp. */
#define LDA_AUTO_EXACT_MAX_K 384
#define LDA_AUTO_WARP_MAX_K 512
static inline lda_sampler lda_sampler_auto(uint32_t K)
{
    return K <= LDA_AUTO_EXACT_MAX_K || K > LDA_AUTO_WARP_MAX_K ? LDA_SAMPLER_SPARSE
                                                                : LDA_SAMPLER_WARP;
}

static inline const char *lda_sampler_name(lda_sampler s)
{
    return s == LDA_SAMPLER_MH      ? "mh"
           : s == LDA_SAMPLER_WARP  ? "warp"
           : s == LDA_SAMPLER_CYCLE ? "cycle"
                                    : "sparse";
}

/* The initial topics: uniformly random, or the progressive sweep
 * (lda_init.c). */
typedef enum lda_init { LDA_INIT_RANDOM = 0, LDA_INIT_PROGRESSIVE = 1 } lda_init;

typedef struct lda_layout lda_layout;

typedef struct lda_opts {
    uint32_t K;
    double alpha, beta;
    uint32_t iters;
    lda_sampler sampler;
    lda_init init;
    uint32_t mh_steps;     /* MH: proposals per token (alternating doc / word) */
    uint32_t exact_sweeps; /* mh, warp: N sweeps are exact (SparseLDA buckets): */
    uint32_t exact_after;  /* those after sweep W (0: the first N) */
    uint32_t eval_every;
    uint32_t sync_every; /* all-reduce the topic totals every N steps (and at sweep end) */
    uint64_t seed;
    uint32_t top;        /* words per topic in topics.txt */
    const char *out;     /* NULL = do not save */
    const char *metrics; /* --metrics FILE or NULL */
} lda_opts;

/* ---- payload layout (lda_layout.c) ---- */
struct lda_layout {
    uint32_t K, blocks;
    uint64_t *tokens;    /* per global word: training tokens */
    uint64_t *slice_off; /* per block-order position (as plan->block_col_ids): u32 offset */
    uint32_t *slice_cap; /* 0 = dense, else sparse capacity */
    uint64_t *block_u32; /* per block: payload size in u32 */
    size_t max_bytes;
};

int lda_layout_build(lda_layout *l, const rt_plan *plan, uint32_t K, rt_error *err);
void lda_layout_free(lda_layout *l);
/* Write an empty (all-zero counts) payload for block b; returns its bytes. */
size_t lda_payload_init(const lda_layout *l, const rt_plan *plan, uint32_t b, uint32_t *payload);
int lda_payload_check(const lda_layout *l, uint32_t b, const uint32_t *payload, size_t len,
                      rt_error *err);

/* The current word's counts, expanded into thread scratch. */
typedef struct lda_word {
    int32_t *nwk;  /* K: dense counts of the loaded word (all zero when idle) */
    uint16_t *nz;  /* topics with (possibly once) nonzero counts (room for K + 1) */
    uint32_t *pos; /* K: index in nz, UINT32_MAX = absent */
    uint32_t n_nz;
    uint32_t *slice; /* where the word lives in the payload */
    uint32_t cap;    /* 0 = dense */
} lda_word;

void lda_word_load(lda_word *w, uint32_t K, uint32_t *slice, uint32_t cap);
/* Write back and reset the scratch; -1 if a sparse slice would overflow. */
int lda_word_store(lda_word *w, uint32_t K);
/* Reset the scratch without writing back (the counts were only read). */
void lda_word_drop(lda_word *w);

static inline void lda_word_nz_add(lda_word *w, uint32_t k)
{
    if (w->pos[k] == UINT32_MAX) {
        w->pos[k] = w->n_nz;
        w->nz[w->n_nz++] = (uint16_t)k;
    }
}
static inline void lda_word_nz_remove(lda_word *w, uint32_t k)
{
    uint32_t i = w->pos[k], last = w->nz[--w->n_nz];
    w->nz[i] = (uint16_t)last;
    w->pos[last] = i;
    w->pos[k] = UINT32_MAX;
}

/* A token of topic k joins (dn = +1) or leaves (-1) the loaded word and
 * the topic totals nk, with the word's topic list in step. */
static inline void lda_word_token_move(lda_word *w, int64_t *nk, uint32_t k, int dn)
{
    nk[k] += dn;
    if (dn > 0 && w->nwk[k] == 0)
        lda_word_nz_add(w, k);
    w->nwk[k] += dn;
    if (w->nwk[k] == 0)
        lda_word_nz_remove(w, k);
}

/* ---- per-worker token state (lda_state.c) ---- */
typedef struct lda_tokens {
    uint32_t n_docs;
    uint64_t n_tokens;
    uint64_t *doc_off; /* n_docs + 1: each document's tokens (doc-major) */
    /* topic of every token, doc-major, or word-major where tok_pos is NULL (the list sampler
     * outside lda_doc_layout; NULL when aux holds them) */
    uint16_t *z;
    int32_t *ndk; /* n_docs x K, then LDA_DENSE_ROW_SLACK zeroes (NULL for warp's training) */
    /* warp: per token (doc-major) one record of aux_stride = 2 + mh_steps
     * u16: its topic, the topic its block counts, its pending proposals */
    uint16_t *aux;
    uint32_t aux_stride;
    /* the same tokens word-major, per data block, cut into runs of one word */
    uint64_t *blk_run;  /* B + 1 into run_word / run_end */
    uint32_t *run_word; /* block-local word of the run */
    uint64_t *run_end;  /* one past the run's last token */
    uint64_t *blk_tok;  /* B + 1 into tok_doc / tok_pos */
    /* document (worker-local; NULL for the warp sampler's training tokens and
     * in lda_doc_layout: there lda_doc_of) */
    uint32_t *tok_doc;
    /* index into z (doc-major); NULL for the list sampler's training tokens
     * outside lda_doc_layout, whose z is word-major (lda_tok_slot): the sweep
     * streams it, and the lists hold the documents' counts */
    uint32_t *tok_pos;
    /* training docs: nonzero topics per document (capacity min(K, length)) */
    uint16_t *dnz;
    uint64_t *dnz_off; /* n_docs + 1 */
    uint32_t *dnz_n;
    uint32_t *dnc; /* exact and progressive sweeps only: counts parallel to dnz (any sampler) */
    /* the list sampler's lists, when every training document fits (lda_list_packs): each entry
     * topic << 16 | count in one u32 (as the payload's sparse slices), at dnz_off, dnz_n; dnz
     * and dnc NULL.  A token's list then takes 4 bytes an entry in one place, not 2 + 4 in two. */
    uint32_t *dlist;
    /* the list sampler's training tokens in document order, where z is doc-major
     * (lda_doc_layout; NULL elsewhere): ord_run parallel to z, each token's run
     * less blk_run[b] of its block b (then LDA_DOC_ORDER_SLACK zeroes); per block b from
     * ord_seg_off[b] (document, first, end) z positions of the documents with tokens in b,
     * in document order (a document's tokens of block b are contiguous in z: tokens_build
     * deals them block by block) */
    uint16_t *ord_run;
    uint32_t *ord_seg;
    uint64_t *ord_seg_off;
    /* without tok_doc, for the exact sweeps' lists and the cycle sampler:
     * the document of every 2^LDA_DOC_STEP-th token (lda_doc_of) */
    uint32_t *doc_step;
    /* held-out docs: the completion half, per block, word-major */
    uint64_t *blk_held; /* B + 1 into held_* */
    uint32_t *held_word, *held_doc, *held_cnt;
    uint64_t n_held;
} lda_tokens;

typedef struct lda_worker {
    uint32_t id;
    lda_tokens train, test;
    int64_t *nk;                 /* K: global snapshot + this worker's changes this step */
    uint64_t doc_phase_rotation; /* warp: the last rotation whose document phase ran */
    double held_ll;              /* this rotation's held-out log-likelihood (eval rotations) */
} lda_worker;

int lda_worker_init(lda_worker *w, const rt_plan *plan, const rt_shard *sh, const lda_opts *o,
                    rt_error *err);
void lda_worker_free(lda_worker *w);

/* ---- the F+ tree (lda_ftree.c) ---- */
/* n weights (leaves, all > 0 for the draw's promise) and their subtree sums,
 * LDA_FTREE_FAN children a node; one weight changes in O(log n), a draw
 * descends in O(log n). */
#define LDA_FTREE_FAN 8u
#define LDA_FTREE_SHIFT 3u /* log2(LDA_FTREE_FAN) */
#define LDA_FTREE_LEVELS 8 /* enough for n <= 2^21 (K < 65536 needs 7) */
typedef struct lda_ftree {
    uint32_t n, levels;
    uint32_t len[LDA_FTREE_LEVELS]; /* nodes at each level: level 0 the leaves, the last the root */
    double *level[LDA_FTREE_LEVELS];
    double *node; /* all levels, one allocation */
} lda_ftree;
int lda_ftree_init(lda_ftree *t, uint32_t n); /* all weights +0; -1: out of memory */
void lda_ftree_free(lda_ftree *t);
/* Every inner node summed afresh from the leaves (after lda_ftree_leaf writes,
 * and to clear the rounding lda_ftree_set leaves in the sums). */
void lda_ftree_build(lda_ftree *t);
static inline double *lda_ftree_leaf(lda_ftree *t, uint32_t k)
{
    return &t->level[0][k];
}
static inline double lda_ftree_total(const lda_ftree *t)
{
    return t->level[t->levels - 1][0];
}
/* Weight k becomes v: the difference is added to every sum above it.
 * Unrolled from the root down (a loop over the levels cost the list
 * sampler 52 instructions a change, two changes a token; the same adds). */
#define LDA_FTREE_ADD(j) t->level[j][k >> (LDA_FTREE_SHIFT * (j))] += d
static inline void lda_ftree_set(lda_ftree *t, uint32_t k, double v)
{
    _Static_assert(LDA_FTREE_LEVELS == 8, "lda_ftree_set unrolls 8 levels");
    const double d = v - t->level[0][k];
    t->level[0][k] = v;
    switch (t->levels) { /* at least 2 */
    case 8:
        LDA_FTREE_ADD(7);
        __attribute__((fallthrough));
    case 7:
        LDA_FTREE_ADD(6);
        __attribute__((fallthrough));
    case 6:
        LDA_FTREE_ADD(5);
        __attribute__((fallthrough));
    case 5:
        LDA_FTREE_ADD(4);
        __attribute__((fallthrough));
    case 4:
        LDA_FTREE_ADD(3);
        __attribute__((fallthrough));
    case 3:
        LDA_FTREE_ADD(2);
        __attribute__((fallthrough));
    default:
        LDA_FTREE_ADD(1);
    }
}
#undef LDA_FTREE_ADD
/* The leaf (below n) where u falls, 0 <= u < the total: the first whose
 * running sum passes u, as the descent sees the sums. */
uint32_t lda_ftree_find(const lda_ftree *t, double u);
/* The same draw as after lda_ftree_set(t, k, v), the tree left as it is
 * (its total then lda_ftree_total(t) + v - *lda_ftree_leaf(t, k)). */
uint32_t lda_ftree_find_with(const lda_ftree *t, double u, uint32_t k, double v);

/* ---- kernels (lda_sample.c) ---- */
typedef struct lda_scratch {
    lda_word word;
    double *inv; /* K: 1 / (n_k + V beta) (sparse sampler) */
    double *buf; /* K: bucket terms */
    /* the sparse sampler at K <= LDA_DENSE_K: the loaded word's coef in float
     * (lda_dense_totals_len(K) chunks, +0 past K) and two sets (one token's, the next's) of the
     * chunks' running totals (lda_dense_totals_len(K) each) */
    float *dense_coef, *dense_total;
    int avx2;         /* the dense weights' vector path (same bits either way) */
    double *coef;     /* K: (n_wk + beta) / (n_k + V beta) for the loaded word */
    int32_t *urn_own; /* K: lda_word_urn_live's counts of the run's tokens (zero when idle) */
    int32_t *dcnt;    /* K: the current document's counts (warp document phase; zero when idle) */
    uint16_t *urn;    /* warp, cycle, mh: the word's topics, one a token (lda_scratch_urn) */
    /* the list sampler (lda_bucket.c): alpha coef[k] over all K (the tree),
     * coef[k] in float, and a document's weights and lane sums (K + 8 each) */
    lda_ftree word_tree;
    float *list_coef, *list_w, *list_acc;
    /* the document-major visit (lda_doc.c) */
    int32_t *doc_ndk;
    uint32_t *doc_pos;
    double *doc_inv, *doc_invm, *doc_rw;
    uint32_t **doc_views, *doc_room, *doc_dense, *doc_ord, *doc_cnt;
    uint8_t *doc_wordmajor;
    size_t doc_views_n, doc_room_n, doc_dense_n, doc_ord_n, doc_cnt_n, doc_wordmajor_n;
} lda_scratch;

/* The parts of the thread scratch (beside the word's: always) that a run's
 * sweeps use: allocated by lda_scratch_init, NULL otherwise (at K = 10000
 * the parts the list sampler never reads are 0.6 MB a thread). */
#define LDA_SCRATCH_DENSE 1u   /* dense_*: the dense kernel (K <= LDA_DENSE_K) */
#define LDA_SCRATCH_BUCKETS 2u /* inv, buf, coef: the K-wide sweeps, the fold-in, warp */
#define LDA_SCRATCH_MH 4u      /* urn_own, dcnt: mh, warp and their exact sweeps */
#define LDA_SCRATCH_LISTS 8u   /* the list sampler's (lda_list_scratch_init) */
#define LDA_SCRATCH_ALL 15u
/* The parts for options o, with or without held-out documents. */
unsigned lda_scratch_parts(const lda_opts *o, int held_out);
int lda_scratch_init(lda_scratch *s, uint32_t K, unsigned parts);
/* Room for the warp sampler's urn: the most tokens of any word (at most
 * LDA_WARP_WORD_TOKENS_MAX: the word phase flags counts with bit 30). */
#define LDA_WARP_WORD_TOKENS_MAX ((1u << 30) - 1)
/* Spare urn entries past the most tokens of any word (the fill writes 8 at a time). */
#define LDA_URN_SLACK 8
int lda_scratch_urn(lda_scratch *s, const lda_layout *l, uint64_t n_words);
/* The loaded word's live urn for a run (lda_warp.c), so that one draw from it
 * is the topic of a random one of the word's tokens as they are now: one copy
 * of each topic per token of the word that is not one of the run's (the other
 * workers' tokens, which do not move while this worker holds the block), then
 * the run's own tokens' topics in run order (tokens first .. end of tok_pos
 * into z; the sampler keeps them up to date as they move).  urn: room for the
 * word's tokens + LDA_URN_SLACK; own: K zeroed scratch, zeroed again.
 * Returns where the run's part starts.  The word proposal of the cycle and
 * MH samplers. */
uint32_t lda_word_urn_live(const lda_word *wd, const uint16_t *z, const uint32_t *tok_pos,
                           uint64_t first, uint64_t end, uint16_t *urn, int32_t *own);
void lda_scratch_free(lda_scratch *s);

typedef struct lda_ctx {
    const lda_opts *o;
    const rt_plan *plan;
    const lda_layout *layout;
    double vbeta; /* V * beta */
} lda_ctx;

/* Rotation 0: add the tokens' topics of block b into its payload and nk. */
int lda_visit_init(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                   rt_error *err);
/* Rotation 0 with --init progressive (lda_init.c): assign the worker's
 * tokens of block b from the collapsed conditional given the tokens
 * assigned so far.  lda_init_lists makes each training document's topic
 * list and counts for it (packed: in t->dlist; -1: out of memory); lda_init_lists_done drops
 * what later sweeps do not use. */
int lda_visit_exact(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                    rt_rng *rng, int assigned, rt_error *err);
int lda_init_lists(lda_tokens *t, uint32_t K, int packed);
/* The lists from the tokens' topics, in order of first appearance (row:
 * K zeroed scratch, zeroed again on return). */
void lda_exact_lists_fill(lda_tokens *t, int32_t *row);
void lda_init_lists_done(lda_tokens *t);
/* Spare entries past the last document's list (the list sampler reads
 * 8 at a time). */
#define LDA_LIST_SLACK 8
/* A packed list entry's count is 16 bits: the lists of a worker pack when
 * none of its training documents has more tokens than that (a topic's
 * count is at most its document's length); else dnz and dnc, whose
 * kernels give the same bits. */
#define LDA_LIST_COUNT_MAX 65535u
int lda_list_packs(const lda_tokens *t);
/* Entry `at` (dnz_off[d] + x) of a training document's list, either form. */
static inline uint32_t lda_list_topic_at(const lda_tokens *t, uint64_t at)
{
    return t->dlist ? t->dlist[at] >> 16 : t->dnz[at];
}
static inline uint32_t lda_list_count_at(const lda_tokens *t, uint64_t at)
{
    return t->dlist ? t->dlist[at] & 0xffff : t->dnc[at];
}
static inline void lda_list_set_at(lda_tokens *t, uint64_t at, uint32_t k, uint32_t count)
{
    if (t->dlist) {
        t->dlist[at] = k << 16 | count;
    } else {
        t->dnz[at] = (uint16_t)k;
        t->dnc[at] = count;
    }
}
/* The exact sampler's visits (lda_doc.c, lda_bucket.c) draw from a wyrand
 * seeded by one draw of the visit's stream (rt_wyrand_uniform, ground.h):
 * its one-word state stays in a register where xoshiro's four went through
 * memory each draw (~34 of a token's ~500 instructions at K = 1000 on KOS). */
/* One sweep over the worker's tokens of block b. */
int lda_visit_sparse(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                     rt_rng *rng, rt_error *err);
/* The sparse sampler on the document lists (lda_uses_lists; lda_bucket.c),
 * and its part of the thread scratch (-1: out of memory). */
int lda_list_scratch_init(lda_scratch *s, uint32_t K);
/* Its r bucket: the weights of a document's list (topics tz, counts tc, n
 * entries; topic `from` one count less) with coef (floats by topic) into w,
 * and their lane sums into acc (the order is stated in lda_bucket.c; both
 * n rounded up to 8, and tz, tc readable that far); *own: the entry of
 * `from` (left alone when absent); returns the sum r.  avx2 picks the vector
 * path; the bits are the same either way. */
float lda_list_weights(int avx2, const uint16_t *tz, const uint32_t *tc, uint32_t n, uint32_t from,
                       const float *coef, float *w, float *acc, uint32_t *own);
/* The entry of topic k in a list of n entries, n when absent (tz readable
 * to n rounded up to 8; what lies past n is never taken). */
uint32_t lda_list_topic(const uint16_t *tz, uint32_t n, uint32_t k);
/* The same two on a packed list (entries e: topic << 16 | count): the same
 * bits as on its topics and counts apart. */
float lda_packed_weights(int avx2, const uint32_t *e, uint32_t n, uint32_t from, const float *coef,
                         float *w, float *acc, uint32_t *own);
uint32_t lda_packed_topic(const uint32_t *e, uint32_t n, uint32_t k);
/* The entry where u falls, 0 <= u < r (never one of weight +0). */
uint32_t lda_list_find(const float *w, const float *acc, uint32_t n, double u);
void lda_list_scratch_free(lda_scratch *s);
/* The sparse sampler's visit on document lists (lda_doc.c): the block's
 * tokens document by document, each drawn from SparseLDA's three buckets
 * (q over the word's topics, r over the document's, s over all K), then
 * the tokens of the words with more topics than a mean document list (or
 * a count past 16 bits) word-major (lda_visit_lists_of); all of it
 * word-major where the worker's lists do not pack.  Its part of the
 * thread scratch (-1: out of memory; the arrays sized by the visits grow
 * to the largest visit once). */
int lda_doc_scratch_init(lda_scratch *s, uint32_t K);
void lda_doc_scratch_free(lda_scratch *s);
int lda_visit_docs(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                   rt_rng *rng, rt_error *err);
/* Its q bucket: the weights n_wk c[k] of a word's packed list (e: n
 * entries topic << 16 | count, `from` one count less; *own its entry, left
 * alone when absent) and their running sums into pre (n rounded up to 8,
 * the order stated in lda_doc.c); returns q, the last.  The entry where u
 * falls, 0 <= u < q: the first whose running sum passes u.  A topic's
 * entry in a word's list, n when absent (nothing past n is read).  avx2
 * picks the vector path; the bits are the same either way. */
float lda_doc_q_weights(int avx2, const uint32_t *e, uint32_t n, uint32_t from, const float *cf,
                        float *pre, uint32_t *own);
uint32_t lda_doc_q_find(int avx2, const float *pre, uint32_t n, double u);
uint32_t lda_doc_word_topic(const uint32_t *e, uint32_t n, uint32_t k);
/* Topic k gains a token in a word's list v (v[0] entries, then the entries;
 * room for `room` of them): x is k's entry, v[0] when absent (then k is
 * appended at count 1).  -1, nothing written, when the list is full: the
 * counts were corrupt (a word has no more topics than tokens). */
int lda_doc_word_gain(uint32_t *v, uint32_t room, uint32_t x, uint32_t k);
/* Its s bucket's draw: topic k with probability inv[k] / sum (inv[f] taken
 * as invf), by rejection against max(inv_max, invf) (inv_max >= every
 * inv[k]), finished by a scan over K after the bucket's tries. */
uint32_t lda_doc_s_draw(const double *inv, uint32_t K, double inv_max, uint32_t f, double invf,
                        rt_wyrand *rng);
/* The document-major visit's static order: at K <= LDA_DOC_ORDER_MAX_K after the first sweeps
 * no word is drawn word-major (KOS and the synthetic corpus at K = 1000, sweep 26: none), so
 * the sort a visit (doc_order, 6-8% of the time) gave the same order every sweep.  There the
 * list sampler's training z is doc-major (tokens_build: lda_doc_layout), so a visit reads and
 * writes a document's topics in place, in order, not scattered over a word-major z; the
 * word-major paths reach a token's topic through tok_pos and its document through doc_step
 * (lda_doc_of).  8 bytes a token (z, tok_pos, ord_run) where z, tok_doc and the packed order
 * took 10.  At K = 10000 a third of the tokens are drawn word-major: z stays word-major there
 * (its visits read it in order) and doc_order sorts each visit.  lda_doc_order_build fills
 * ord_run and ord_seg (lda_tokens) once; -1: out of memory. */
#define LDA_DOC_ORDER_MAX_K 4096u
#define LDA_DOC_ORDER_SLACK 4u
#define LDA_DOC_ORDER_MAX_RUNS 65536u /* a block's run index in ord_run's 16 bits */
int lda_doc_order_build(lda_tokens *t, uint32_t blocks);
int lda_visit_lists(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                    rt_rng *rng, rt_error *err);
/* ... the tokens of the block's runs r (from blk_run[b]) with runs[r - blk_run[b]] != 0 alone. */
int lda_visit_lists_of(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload,
                       lda_scratch *s, rt_rng *rng, const uint8_t *runs, rt_error *err);
int lda_visit_mh(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                 rt_rng *rng, rt_error *err);
/* Warp sampler (lda_warp.c): the word phase of a block visit and the
 * document phase that runs before a worker's first visit of a rotation;
 * lda_visit_warp is also the cycle sampler's block visit. */
int lda_visit_warp(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                   rt_rng *rng, rt_error *err);
void lda_doc_phase(const lda_ctx *c, lda_worker *w, lda_scratch *s, rt_rng *rng);
/* The cycle sampler (lda_warp.c) is the warp sampler's word phase alone,
 * judging word and document proposals by the exact Metropolis-Hastings
 * ratio against the current counts (the document's counted from its
 * topics); it has no document phase. */
/* A training document's topic counts into dense row (K, zeroed by the caller). */
void lda_doc_counts(const lda_tokens *t, uint32_t K, uint32_t d, int32_t *row);

/* The sparse sampler at K <= LDA_DENSE_K (lda_sample.c): the full
 * conditional's weights ((float)n_dk + alpha) coef[k] over all K topics
 * (document counts ndk, readable for lda_dense_totals_len(K) chunks of LDA_CHUNK, all >= 0: those
 * past K weigh +0; coef: lda_dense_totals_len(K) chunks, +0 past K) into w (lda_dense_totals_len(K)
 * chunks of LDA_CHUNK, +0 past K; the chunks past lda_chunks(K) may be written, with +0), summed in
 * chunks; the chunk sums' running totals into total (lda_dense_totals_len(K)), returns the last.
 * The order of every float operation is stated in lda_sample.c.  avx2 (lda_have_avx2) picks the
 * vector path; the bits are the same either way. */
/* Up to 512 the dense draw costs less than the buckets (serial CPU, KOS
 * 10 sweeps: 0.96 against 1.44 s at K = 512, even at 768, buckets ahead at
 * 1000; synthetic 4 sweeps: 7.7 against 14.3 s at 512). */
#define LDA_DENSE_K 512u
_Static_assert(LDA_AUTO_WARP_MAX_K == LDA_DENSE_K, "auto's warp band ends where the lists begin");
/* Above LDA_DENSE_K the sparse sampler keeps each training document's topic
 * counts in its list alone (t->dnz topics, t->dnc counts, capacity
 * min(K, length)): memory grows with the nonzeros, not K x documents, and
 * a document's counts are contiguous (lda_bucket.c). */
static inline int lda_uses_lists(lda_sampler s, uint32_t K)
{
    return s == LDA_SAMPLER_SPARSE && K > LDA_DENSE_K;
}
/* The list sampler's training tokens with z doc-major (LDA_DOC_ORDER_MAX_K above). */
static inline int lda_doc_layout(const lda_opts *o, uint64_t n_tokens, uint64_t max_block_runs)
{
    return lda_uses_lists(o->sampler, o->K) && o->K <= LDA_DOC_ORDER_MAX_K &&
           n_tokens < UINT32_MAX && max_block_runs <= LDA_DOC_ORDER_MAX_RUNS;
}
#define LDA_CHUNK 8u
static inline uint32_t lda_chunks(uint32_t K)
{
    return (K + LDA_CHUNK - 1) / LDA_CHUNK;
}
static inline uint32_t lda_dense_totals_len(uint32_t K)
{
    return lda_chunks(lda_chunks(K)) * LDA_CHUNK;
}
/* The vector path reads a document row (and changes a count) a whole group of LDA_CHUNK chunks at
 * a time, past the row's K counts into the next row's: a document-topic matrix keeps this many
 * zeroed counts after its last row (lda_dense_totals_len(K) * LDA_CHUNK - K < this). */
#define LDA_DENSE_ROW_SLACK (LDA_CHUNK * LDA_CHUNK)
float lda_dense_weights(int avx2, const int32_t *ndk, float alpha, const float *coef, uint32_t K,
                        float *w, float *total);
/* coef[k] = (float)((nwk[k] + beta) / ((double)nk[k] + vbeta)), computed in double, for every
 * k < K (|nk[k]| < 2^51); avx2 picks the vector path, the bits are the same either way. */
void lda_dense_coefs(int avx2, float *coef, const int32_t *nwk, const int64_t *nk, uint32_t K,
                     double beta, double vbeta);
/* One weight changed since total was computed: topic k's is now d more than before (d = the weight
 * now - the weight before, in float), so every running total from k's chunk on is d more (added
 * after, in float).  {0, +0} changes nothing. */
typedef struct lda_dense_patch {
    uint32_t k;
    float d;
} lda_dense_patch;
/* The topic where u falls among the patched weights, 0 <= u < the patched sum (total's last + d;
 * never a topic of zero weight; total[-1] is read, and must be +0): the chunk by the patched
 * totals, the topic in it by the weights of ndk and coef as they are now (lda_dense_weights'
 * formula; they hold the patch's change). */
uint32_t lda_dense_find(int avx2, const int32_t *ndk, float alpha, const float *coef,
                        const float *total, uint32_t K, float u, lda_dense_patch p);
int lda_have_avx2(void);

/* The error for a word whose counts no longer fit its sparse slice. */
int lda_overflow(uint32_t b, uint32_t j, rt_error *err);
uint32_t *lda_word_slice(const lda_ctx *c, uint32_t b, uint32_t j, uint32_t *payload,
                         uint32_t *cap);

/* Held-out documents: resample the observed half against the block's words
 * (counts untouched); with eval, add the completion half's log-likelihood. */
int lda_visit_test(const lda_ctx *c, lda_worker *w, uint32_t b, uint32_t *payload, lda_scratch *s,
                   rt_rng *rng, int eval, rt_error *err);

/* Fast uniform integer in [0, n) (multiply-shift; n < 2^32). */
static inline uint32_t lda_below(rt_rng *r, uint32_t n)
{
    return (uint32_t)(((rt_rng_next(r) >> 32) * (uint64_t)n) >> 32);
}

/* Document completion: is copy `i` of word `gword` in document `gdoc` in the
 * completion half (likelihood only) rather than the observed half?  A hash
 * of (seed, gdoc, gword, i), shared by training's held-out documents and
 * rotor infer. */
int lda_token_held(uint64_t seed, uint32_t gdoc, uint32_t gword, uint32_t i);

/* The document of doc-major token position p without tok_doc: from the
 * document at p rounded down to a multiple of 2^LDA_DOC_STEP, forward
 * (t->doc_step, lda_doc_step_build; -1: out of memory). */
#define LDA_DOC_STEP 6
int lda_doc_step_build(lda_tokens *t);
static inline uint32_t lda_doc_of(const lda_tokens *t, uint64_t p)
{
    uint32_t d = t->doc_step[p >> LDA_DOC_STEP];
    while (t->doc_off[d + 1] <= p)
        d++;
    return d;
}

/* The list sampler's training tokens: their documents' counts are their lists alone (no
 * matrix, no records), whichever order z is in. */
static inline int lda_counts_in_lists(const lda_tokens *t)
{
    return !t->ndk && !t->aux;
}

/* Where word-major token i's topic is: z (or aux) at this index. */
static inline uint64_t lda_tok_slot(const lda_tokens *t, uint64_t i)
{
    return t->tok_pos ? t->tok_pos[i] : i;
}

/* The topic of token p (doc-major) of t, whichever sampler keeps it (not
 * where z is word-major: there the lists give a document's topics). */
static inline uint32_t lda_topic(const lda_tokens *t, uint64_t p)
{
    return t->aux ? t->aux[p * t->aux_stride] : t->z[p];
}

/* Random stream for (seed, worker, rotation, block, purpose); purpose 0
 * samples a block visit, 1 and 2 draw the initial topics (lda_state.c). */
#define LDA_PURPOSE_DOCS 3u /* the warp sampler's document phase (block UINT32_MAX) */
uint64_t lda_stream(uint32_t worker, uint64_t rotation, uint32_t block, uint32_t purpose);

/* ---- evaluation (lda_eval.c) ---- */
/* sum_{w in block, k} lgamma(n_wk + beta) */
double lda_block_word_lgamma(const lda_layout *l, const rt_plan *plan, uint32_t b,
                             const uint32_t *payload, double beta);
/* sum_{d} [sum_k lgamma(n_dk + alpha) - lgamma(n_d + K alpha)] */
double lda_worker_doc_lgamma(const lda_tokens *t, uint32_t K, double alpha);
/* Griffiths & Steyvers log p(w, z) from its parts. */
double lda_log_joint(uint32_t K, uint64_t V, uint64_t D, double alpha, double beta,
                     const int64_t *nk, double word_part, double doc_part);

/* ---- the core (lda_core.c): one node's sampler state, no engine ----
 * The glue (or a test) runs the rotation: block_home for the home blocks,
 * visit for every (worker, block) of a step in schedule order, then after
 * each step all-reduces lda_core_step_delta() and calls
 * lda_core_step_absorb(); after the rotation, on evaluation rotations
 * (lda_core_is_eval), fills the parts (lda_core_parts_begin, then
 * lda_core_part_block for each home block), all-reduces them and calls
 * lda_core_evaluate.  Rotation 0 only counts the initial topics. */
typedef struct lda_core {
    lda_opts o;
    const rt_plan *plan;
    lda_layout layout;
    lda_ctx ctx;
    uint32_t first, n_local, n_threads; /* local workers first .. first + n_local - 1 */
    const rt_shard *shards;             /* n_local, kept by the caller */
    lda_worker *workers;                /* n_local */
    lda_scratch *scratch;               /* per thread */
    int64_t *nk;                        /* K: global topic totals (as of the last step) */
    int64_t *delta;                     /* K: this node's changes in the step */
    double *parts;                      /* B + 2W: evaluation parts */
    void *arrays;                       /* the one allocation workers .. parts live in */
    uint64_t tokens, held_tokens;       /* over the plan (lda_core_set_totals) */
    double ll_per_token, perplexity;    /* at the last evaluation */
    uint64_t iters_done;                /* sweeps at the last evaluation */
} lda_core;

int lda_core_init(lda_core *c, const lda_opts *o, const rt_plan *plan, const rt_shard *shards,
                  uint32_t first_worker, uint32_t n_workers, uint32_t n_threads, rt_error *err);
void lda_core_free(lda_core *c);
void lda_core_block_home(lda_core *c, uint32_t block, uint64_t rotation, uint32_t *payload,
                         size_t *len);
/* `thread` picks the scratch (0..n_threads-1). */
int lda_core_visit(lda_core *c, uint32_t worker, uint32_t thread, uint32_t block, uint64_t rotation,
                   uint32_t *payload, size_t len, rt_error *err);
/* After a step: this node's topic-total changes (K), to be all-reduced in
 * place, then absorbed into every local worker's totals. */
int64_t *lda_core_step_delta(lda_core *c);
void lda_core_step_absorb(lda_core *c);
/* This node's training and held-out token counts (to all-reduce once), and
 * the totals over the plan. */
void lda_core_local_totals(const lda_core *c, int64_t tot[2]);
void lda_core_set_totals(lda_core *c, const int64_t tot[2]);
int lda_core_is_eval(const lda_core *c, uint64_t rotation);
/* Evaluation parts (B + 2W doubles): the local workers' parts, then each
 * home block's; all-reduce, then lda_core_evaluate. */
double *lda_core_parts_begin(lda_core *c);
void lda_core_part_block(lda_core *c, uint32_t block, const uint32_t *payload);
size_t lda_core_parts_len(const lda_core *c);
/* log p(w, z) and the held-out log-likelihood from the reduced parts; sets
 * ll_per_token, perplexity and iters_done. */
void lda_core_evaluate(lda_core *c, uint64_t rotation, double *ll, double *held_ll);
/* The node's training state between rotations (topic assignments, doc-topic
 * counts and their nonzero lists, topic totals, the last evaluation), into
 * / out of a state file (app_common.h); the home blocks' payloads (the
 * word-topic counts) are saved by the caller. */
struct rt_state_writer;
struct rt_state_reader;
int lda_core_state_save(const lda_core *c, struct rt_state_writer *w, rt_error *err);
int lda_core_state_load(lda_core *c, struct rt_state_reader *r, rt_error *err);

#endif
