/* lda_layout.c - where each word's counts live inside a block payload, and
 * moving one word's counts between the payload and dense thread scratch. */
#include "apps/lda.h"

#include <stdlib.h>
#include <string.h>

/* Sparse when the word has fewer than K/2 tokens: its slice (1 + tokens
 * u32) is then smaller than a dense one, and counts fit in 16 bits. */
static uint32_t slice_cap(uint64_t tokens, uint32_t K)
{
    return 2 * (tokens + 1) < K ? (uint32_t)tokens + 1 : 0;
}

int lda_layout_build(lda_layout *l, const rt_plan *plan, uint32_t K, rt_error *err)
{
    memset(l, 0, sizeof(*l));
    l->K = K;
    l->blocks = plan->blocks;
    char path[4200];
    if (rt_path_join(path, sizeof(path), plan->dir, RT_LDA_WORDS_FILE, err) ||
        rt_lda_words_read(path, plan->plan_id, plan->n_cols, &l->tokens, err))
        return -1;
    l->slice_off = malloc((plan->n_cols + 1) * sizeof(uint64_t));
    l->slice_cap = malloc((plan->n_cols + 1) * sizeof(uint32_t));
    l->block_u32 = malloc((plan->blocks + 1) * sizeof(uint64_t));
    if (!l->slice_off || !l->slice_cap || !l->block_u32) {
        lda_layout_free(l);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory (LDA layout)");
    }
    for (uint32_t b = 0; b < plan->blocks; b++) {
        uint64_t off = RT_LDA_HEADER_U32;
        for (uint64_t i = plan->block_col_offset[b]; i < plan->block_col_offset[b + 1]; i++) {
            uint32_t cap = slice_cap(l->tokens[plan->block_col_ids[i]], K);
            l->slice_off[i] = off;
            l->slice_cap[i] = cap;
            off += cap ? cap : K; /* sparse: nnz + (cap - 1) entries */
        }
        l->block_u32[b] = off;
        if (off * 4 > l->max_bytes)
            l->max_bytes = off * 4;
    }
    return 0;
}

void lda_layout_free(lda_layout *l)
{
    free(l->tokens);
    free(l->slice_off);
    free(l->slice_cap);
    free(l->block_u32);
    memset(l, 0, sizeof(*l));
}

size_t lda_payload_init(const lda_layout *l, const rt_plan *plan, uint32_t b, uint32_t *payload)
{
    size_t bytes = l->block_u32[b] * 4;
    memset(payload, 0, bytes);
    payload[0] = RT_LDA_PAYLOAD_MAGIC;
    payload[1] = b;
    payload[2] = rt_plan_block_cols(plan, b);
    payload[3] = l->K;
    return bytes;
}

int lda_payload_check(const lda_layout *l, uint32_t b, const uint32_t *payload, size_t len,
                      rt_error *err)
{
    if (len != l->block_u32[b] * 4 || payload[0] != RT_LDA_PAYLOAD_MAGIC || payload[1] != b ||
        payload[3] != l->K)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "lda: block %u arrived with a bad payload (%zu bytes, header %08x %u)", b,
                       len, payload[0], payload[1]);
    return 0;
}

void lda_word_load(lda_word *w, uint32_t K, uint32_t *slice, uint32_t cap)
{
    w->slice = slice;
    w->cap = cap;
    w->n_nz = 0;
    if (!cap) {
        /* without a branch on each count: whether it is zero has no pattern
         * (callgrind's branch model: 13 misses per dense word load at
         * K = 100, one run of the dense sampler every 34 tokens on KOS).
         * k is written past the list every time (it has room for K + 1)
         * and kept when listed. */
        uint32_t n = 0;
        memcpy(w->nwk, slice, K * sizeof(int32_t));
        for (uint32_t k = 0; k < K; k++) {
            const uint32_t on = w->nwk[k] != 0;
            w->pos[k] = n | (on - 1); /* n, or UINT32_MAX when off */
            w->nz[n] = (uint16_t)k;
            n += on;
        }
        w->n_nz = n;
        return;
    }
    uint32_t n = slice[0];
    for (uint32_t i = 0; i < n; i++) {
        uint32_t e = slice[1 + i], k = e >> 16;
        w->nwk[k] = (int32_t)(e & 0xffff);
        w->pos[k] = w->n_nz;
        w->nz[w->n_nz++] = (uint16_t)k;
    }
}

void lda_word_drop(lda_word *w)
{
    for (uint32_t i = 0; i < w->n_nz; i++) {
        w->nwk[w->nz[i]] = 0;
        w->pos[w->nz[i]] = UINT32_MAX;
    }
    w->n_nz = 0;
}

/* Write the loaded word back into its slice and reset the scratch, in one
 * pass over its topics. */
int lda_word_store(lda_word *w, uint32_t K)
{
    int rc = 0;
    uint32_t n = 0;
    if (!w->cap)
        memcpy(w->slice, w->nwk, K * sizeof(int32_t));
    for (uint32_t i = 0; i < w->n_nz; i++) {
        uint32_t k = w->nz[i];
        int32_t c = w->nwk[k];
        w->nwk[k] = 0;
        w->pos[k] = UINT32_MAX;
        if (!w->cap || c <= 0)
            continue;
        if (n + 1 >= w->cap || c > 0xffff)
            rc = -1;
        else
            w->slice[1 + n++] = k << 16 | (uint32_t)c;
    }
    if (w->cap)
        w->slice[0] = n;
    w->n_nz = 0;
    return rc;
}
