/* lda_core.c - the LDA sampler state of one node and its rotation steps (see
 * lda.h).  Nothing here knows about the engine or the network: lda.c forwards
 * the engine's callbacks here and does the all-reduces, and tests can drive
 * the same functions through an in-memory schedule. */
#include "apps/app_common.h"
#include "apps/lda.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

int lda_core_init(lda_core *c, const lda_opts *o, const rt_plan *plan, const rt_shard *shards,
                  uint32_t first_worker, uint32_t n_workers, uint32_t n_threads, rt_error *err)
{
    memset(c, 0, sizeof(*c));
    c->o = *o;
    c->plan = plan;
    c->ctx.o = &c->o;
    c->ctx.plan = plan;
    c->ctx.layout = &c->layout;
    c->ctx.vbeta = (double)plan->n_cols * o->beta;
    c->first = first_worker;
    c->n_local = n_workers;
    c->n_threads = n_threads;
    c->shards = shards;
    c->perplexity = NAN;
    rt_part part[] = {RT_PART(c->workers, n_workers), RT_PART(c->scratch, n_threads),
                      RT_PART(c->nk, o->K), RT_PART(c->delta, o->K),
                      RT_PART(c->parts, (uint64_t)plan->blocks + 2u * plan->workers)};
    if (!(c->arrays = rt_alloc_parts(part, sizeof(part) / sizeof(part[0]))))
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    if (lda_layout_build(&c->layout, plan, o->K, err))
        return -1;
    for (uint64_t j = 0; lda_uses_urn(o->sampler) && j < plan->n_cols; j++)
        if (c->layout.tokens[j] > LDA_WARP_WORD_TOKENS_MAX)
            return rt_fail(err, RT_EXIT_INPUT,
                           "lda: word %llu has %llu training tokens; --sampler %s takes at most "
                           "%u per word",
                           (unsigned long long)j, (unsigned long long)c->layout.tokens[j],
                           lda_sampler_name(o->sampler), LDA_WARP_WORD_TOKENS_MAX);
    int held_out = 0;
    for (uint32_t i = 0; i < n_workers; i++)
        held_out |= shards[i].test_row_ids != NULL;
    const unsigned parts = lda_scratch_parts(o, held_out);
    for (uint32_t t = 0; t < n_threads; t++)
        if (lda_scratch_init(&c->scratch[t], o->K, parts) ||
            (lda_uses_urn(o->sampler) && lda_scratch_urn(&c->scratch[t], &c->layout, plan->n_cols)))
            return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA scratch)");
    /* opening the shards read them all (checksums); each worker's tokens
     * read its own again, one worker at a time */
    for (uint32_t i = 0; i < n_workers; i++)
        if (rt_shard_release(&shards[i], shards[i].map,
                             (const char *)shards[i].map + shards[i].map_len, err))
            return -1;
    for (uint32_t i = 0; i < n_workers; i++)
        if (lda_worker_init(&c->workers[i], plan, &shards[i], &c->o, err))
            return -1;
    return 0;
}

void lda_core_free(lda_core *c)
{
    for (uint32_t i = 0; c->arrays && i < c->n_local; i++)
        lda_worker_free(&c->workers[i]);
    for (uint32_t t = 0; c->arrays && t < c->n_threads; t++)
        lda_scratch_free(&c->scratch[t]);
    rt_free(c->arrays);
    lda_layout_free(&c->layout);
    memset(c, 0, sizeof(*c));
}

void lda_core_block_home(lda_core *c, uint32_t block, uint64_t rotation, uint32_t *payload,
                         size_t *len)
{
    if (rotation == 0)
        *len = lda_payload_init(&c->layout, c->plan, block, payload);
    else
        *len = c->layout.block_u32[block] * 4;
}

int lda_core_is_eval(const lda_core *c, uint64_t rotation)
{
    return rotation == 0 || rotation % c->o.eval_every == 0 || rotation == c->o.iters;
}

int lda_core_visit(lda_core *c, uint32_t worker, uint32_t thread, uint32_t block, uint64_t rotation,
                   uint32_t *payload, size_t len, rt_error *err)
{
    lda_worker *w = &c->workers[worker - c->first];
    lda_scratch *s = &c->scratch[thread];
    if (lda_payload_check(&c->layout, block, payload, len, err))
        return -1;
    rt_rng rng;
    if (rotation == 0 && c->o.init == LDA_INIT_PROGRESSIVE) {
        rt_rng_seed(&rng, c->o.seed, lda_stream(worker, 0, block, 0));
        return lda_visit_exact(&c->ctx, w, block, payload, s, &rng, 0, err);
    }
    if (rotation == 0)
        return lda_visit_init(&c->ctx, w, block, payload, s, err);
    const int exact = rotation > c->o.exact_after &&
                      rotation - c->o.exact_after <= c->o.exact_sweeps &&
                      c->o.sampler != LDA_SAMPLER_SPARSE;
    const int records = lda_uses_records(c->o.sampler);
    if (w->train.dnc && !(exact && records) && !lda_uses_lists(c->o.sampler, c->o.K))
        lda_init_lists_done(&w->train); /* no list-based sweep follows */
    if (exact && records && w->doc_phase_rotation != rotation) {
        /* the worker's first visit of an exact sweep: its documents' lists */
        if (!w->train.dnc && lda_init_lists(&w->train, c->o.K, 0))
            return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA document topic lists)");
        lda_exact_lists_fill(&w->train, s->dcnt);
        w->doc_phase_rotation = rotation;
    }
    if (c->o.sampler == LDA_SAMPLER_WARP && !exact && w->doc_phase_rotation != rotation) {
        /* the worker's first visit of this sweep: its document phase first */
        rt_rng_seed(&rng, c->o.seed, lda_stream(worker, rotation, UINT32_MAX, LDA_PURPOSE_DOCS));
        lda_doc_phase(&c->ctx, w, s, &rng);
        w->doc_phase_rotation = rotation;
    }
    rt_rng_seed(&rng, c->o.seed, lda_stream(worker, rotation, block, 0));
    int rc;
    switch (exact ? LDA_SAMPLER_SPARSE : c->o.sampler) {
    case LDA_SAMPLER_MH:
        rc = lda_visit_mh(&c->ctx, w, block, payload, s, &rng, err);
        break;
    case LDA_SAMPLER_WARP:
    case LDA_SAMPLER_CYCLE:
        rc = lda_visit_warp(&c->ctx, w, block, payload, s, &rng, err);
        break;
    default:
        rc = w->train.aux ? lda_visit_exact(&c->ctx, w, block, payload, s, &rng, 1, err)
                          : lda_visit_sparse(&c->ctx, w, block, payload, s, &rng, err);
    }
    if (rc)
        return -1;
    return lda_visit_test(&c->ctx, w, block, payload, s, &rng, lda_core_is_eval(c, rotation), err);
}

/* Topic totals: every local worker's changes this step, summed over all
 * ranks (integers: the order of addition cannot matter). */
int64_t *lda_core_step_delta(lda_core *c)
{
    const uint32_t K = c->o.K;
    memset(c->delta, 0, K * sizeof(int64_t));
    for (uint32_t i = 0; i < c->n_local; i++)
        for (uint32_t k = 0; k < K; k++)
            c->delta[k] += c->workers[i].nk[k] - c->nk[k];
    return c->delta;
}

void lda_core_step_absorb(lda_core *c)
{
    const uint32_t K = c->o.K;
    for (uint32_t k = 0; k < K; k++)
        c->nk[k] += c->delta[k];
    for (uint32_t i = 0; i < c->n_local; i++)
        memcpy(c->workers[i].nk, c->nk, K * sizeof(int64_t));
}

void lda_core_local_totals(const lda_core *c, int64_t tot[2])
{
    tot[0] = tot[1] = 0;
    for (uint32_t i = 0; i < c->n_local; i++) {
        tot[0] += (int64_t)c->workers[i].train.n_tokens;
        tot[1] += (int64_t)c->workers[i].test.n_held;
    }
}

void lda_core_set_totals(lda_core *c, const int64_t tot[2])
{
    c->tokens = (uint64_t)tot[0];
    c->held_tokens = (uint64_t)tot[1];
}

size_t lda_core_parts_len(const lda_core *c)
{
    return (size_t)c->plan->blocks + 2u * c->plan->workers;
}

/* Slots: one per block (its words' part), then one per worker (its
 * documents' part), then one per worker (its held-out log-likelihood);
 * zero where the block or worker is not here, so the all-reduce is exact
 * and the sums below run in a fixed order for every split of the workers. */
double *lda_core_parts_begin(lda_core *c)
{
    const uint32_t B = c->plan->blocks, W = c->plan->workers;
    memset(c->parts, 0, lda_core_parts_len(c) * sizeof(double));
    for (uint32_t i = 0; i < c->n_local; i++) {
        c->parts[B + c->first + i] =
            lda_worker_doc_lgamma(&c->workers[i].train, c->o.K, c->o.alpha);
        c->parts[B + W + c->first + i] = c->workers[i].held_ll;
        c->workers[i].held_ll = 0;
    }
    return c->parts;
}

void lda_core_part_block(lda_core *c, uint32_t block, const uint32_t *payload)
{
    c->parts[block] = lda_block_word_lgamma(&c->layout, c->plan, block, payload, c->o.beta);
}

void lda_core_evaluate(lda_core *c, uint64_t rotation, double *ll, double *held_ll)
{
    const rt_plan *plan = c->plan;
    const uint32_t B = plan->blocks, W = plan->workers;
    double word_part = 0, doc_part = 0, held = 0;
    for (uint32_t b = 0; b < B; b++)
        word_part += c->parts[b];
    for (uint32_t w = 0; w < W; w++) {
        doc_part += c->parts[B + w];
        held += c->parts[B + W + w];
    }
    *ll = lda_log_joint(c->o.K, plan->n_cols, plan->n_rows, c->o.alpha, c->o.beta, c->nk, word_part,
                        doc_part);
    *held_ll = held;
    c->ll_per_token = *ll / (double)(c->tokens ? c->tokens : 1);
    c->perplexity = c->held_tokens && rotation ? exp(-held / (double)c->held_tokens) : NAN;
    c->iters_done = rotation;
}

/* ---- training state ---- */

typedef struct lda_scalars {
    uint32_t K, n_local;
    double ll_per_token, perplexity;
    uint64_t iters_done;
} lda_scalars;

/* One token set's mutable state: the topics with the doc-topic counts (the
 * matrix, or the list sampler's counts beside its lists, or its packed
 * lists alone) and each document's list of nonzero topics (its order
 * steers the sparse sampler), or for the warp sampler each token's record
 * (topic, counted topic, pending proposals). */
/* The list sampler's topics go to and come from a state file word-major
 * (where z is doc-major, lda_doc_layout, through tok_pos), so a state does
 * not depend on the layout: z_put, z_get. */
static int z_put(rt_state_writer *w, const lda_tokens *t, rt_error *err)
{
    if (!lda_counts_in_lists(t) || !t->tok_pos)
        return rt_state_put(w, "z", t->z, t->n_tokens * sizeof(uint16_t), err);
    uint16_t *z = malloc((t->n_tokens ? t->n_tokens : 1) * sizeof(uint16_t));
    if (!z)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA state: topics)");
    for (uint64_t i = 0; i < t->n_tokens; i++)
        z[i] = t->z[t->tok_pos[i]];
    const int rc = rt_state_put(w, "z", z, t->n_tokens * sizeof(uint16_t), err);
    free(z);
    return rc;
}

static int z_get(rt_state_reader *r, lda_tokens *t, rt_error *err)
{
    if (!lda_counts_in_lists(t) || !t->tok_pos)
        return rt_state_get(r, "z", t->z, t->n_tokens * sizeof(uint16_t), err);
    uint16_t *z = malloc((t->n_tokens ? t->n_tokens : 1) * sizeof(uint16_t));
    if (!z)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA state: topics)");
    const int rc = rt_state_get(r, "z", z, t->n_tokens * sizeof(uint16_t), err);
    for (uint64_t i = 0; !rc && i < t->n_tokens; i++)
        t->z[t->tok_pos[i]] = z[i];
    free(z);
    return rc;
}

static int tokens_put(rt_state_writer *w, const lda_tokens *t, uint32_t K, rt_error *err)
{
    if (t->aux)
        return rt_state_put(w, "aux", t->aux, t->n_tokens * t->aux_stride * sizeof(uint16_t), err);
    const uint64_t entries = t->dnz_off ? t->dnz_off[t->n_docs] : 0;
    if (z_put(w, t, err))
        return -1;
    if (t->ndk     ? rt_state_put(w, "ndk", t->ndk, (size_t)t->n_docs * K * sizeof(int32_t), err)
        : t->dlist ? rt_state_put(w, "dlist", t->dlist, entries * sizeof(uint32_t), err)
                   : rt_state_put(w, "dnc", t->dnc, entries * sizeof(uint32_t), err))
        return -1;
    if (!t->dlist && rt_state_put(w, "dnz", t->dnz, entries * sizeof(uint16_t), err))
        return -1;
    return rt_state_put(w, "dnz_n", t->dnz_n, t->n_docs * sizeof(uint32_t), err);
}

static int tokens_get(rt_state_reader *r, lda_tokens *t, uint32_t K, rt_error *err)
{
    if (t->aux)
        return rt_state_get(r, "aux", t->aux, t->n_tokens * t->aux_stride * sizeof(uint16_t), err);
    const uint64_t entries = t->dnz_off ? t->dnz_off[t->n_docs] : 0;
    if (z_get(r, t, err))
        return -1;
    if (t->ndk     ? rt_state_get(r, "ndk", t->ndk, (size_t)t->n_docs * K * sizeof(int32_t), err)
        : t->dlist ? rt_state_get(r, "dlist", t->dlist, entries * sizeof(uint32_t), err)
                   : rt_state_get(r, "dnc", t->dnc, entries * sizeof(uint32_t), err))
        return -1;
    if (!t->dlist && rt_state_get(r, "dnz", t->dnz, entries * sizeof(uint16_t), err))
        return -1;
    return rt_state_get(r, "dnz_n", t->dnz_n, t->n_docs * sizeof(uint32_t), err);
}

int lda_core_state_save(const lda_core *c, rt_state_writer *w, rt_error *err)
{
    const uint32_t K = c->o.K;
    lda_scalars sc = {.K = K,
                      .n_local = c->n_local,
                      .ll_per_token = c->ll_per_token,
                      .perplexity = c->perplexity,
                      .iters_done = c->iters_done};
    if (rt_state_put(w, "lda", &sc, sizeof(sc), err) ||
        rt_state_put(w, "nk", c->nk, K * sizeof(int64_t), err))
        return -1;
    for (uint32_t i = 0; i < c->n_local; i++) {
        const lda_worker *wk = &c->workers[i];
        if (tokens_put(w, &wk->train, K, err) || (wk->test.z && tokens_put(w, &wk->test, K, err)) ||
            rt_state_put(w, "held_ll", &wk->held_ll, sizeof(double), err))
            return -1;
    }
    return 0;
}

int lda_core_state_load(lda_core *c, rt_state_reader *r, rt_error *err)
{
    const uint32_t K = c->o.K;
    lda_scalars sc;
    if (rt_state_get(r, "lda", &sc, sizeof(sc), err))
        return -1;
    if (sc.K != K || sc.n_local != c->n_local)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: state of %u topics and %u workers, this run has "
                       "%u and %u",
                       r->path, sc.K, sc.n_local, K, c->n_local);
    c->ll_per_token = sc.ll_per_token;
    c->perplexity = sc.perplexity;
    c->iters_done = sc.iters_done;
    if (rt_state_get(r, "nk", c->nk, K * sizeof(int64_t), err))
        return -1;
    for (uint32_t i = 0; i < c->n_local; i++) {
        lda_worker *wk = &c->workers[i];
        if (tokens_get(r, &wk->train, K, err) || (wk->test.z && tokens_get(r, &wk->test, K, err)) ||
            rt_state_get(r, "held_ll", &wk->held_ll, sizeof(double), err))
            return -1;
        memcpy(wk->nk, c->nk, K * sizeof(int64_t));
    }
    return 0;
}
