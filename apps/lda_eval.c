/* lda_eval.c - the Griffiths & Steyvers (2004) joint log-likelihood
 *
 *   log p(w, z) = K [lgamma(V beta) - V lgamma(beta)]
 *               + sum_k [ sum_w lgamma(n_wk + beta) - lgamma(n_k + V beta) ]
 *               + D [lgamma(K alpha) - K lgamma(alpha)]
 *               + sum_d [ sum_k lgamma(n_dk + alpha) - lgamma(n_d + K alpha) ]
 *
 * computed from per-block and per-worker parts so that the sum can be
 * formed in a fixed order whatever the split of workers over nodes. */
#include "apps/lda.h"

#include <math.h>
#include <stdlib.h>

double lda_block_word_lgamma(const lda_layout *l, const rt_plan *plan, uint32_t b,
                             const uint32_t *payload, double beta)
{
    const uint32_t K = l->K;
    const double lg0 = lgamma(beta);
    double sum = 0;
    for (uint64_t i = plan->block_col_offset[b]; i < plan->block_col_offset[b + 1]; i++) {
        const uint32_t *slice = payload + l->slice_off[i];
        if (!l->slice_cap[i]) {
            for (uint32_t k = 0; k < K; k++)
                sum += slice[k] ? lgamma((int32_t)slice[k] + beta) : lg0;
        } else {
            uint32_t n = slice[0];
            sum += (double)(K - n) * lg0;
            for (uint32_t x = 0; x < n; x++)
                sum += lgamma((double)(slice[1 + x] & 0xffff) + beta);
        }
    }
    return sum;
}

/* Documents without a count matrix are counted from their lists (the list
 * sampler: lda_counts_in_lists), else (the warp sampler) from their topics
 * into row, one at a time; a zero count adds lgamma(alpha). */
double lda_worker_doc_lgamma(const lda_tokens *t, uint32_t K, double alpha)
{
    const double lg0 = lgamma(alpha);
    int32_t *row = t->ndk || lda_counts_in_lists(t) ? NULL : calloc(K, sizeof(int32_t));
    double sum = 0;
    for (uint32_t d = 0; d < t->n_docs; d++) {
        const uint64_t beg = t->doc_off[d], end = t->doc_off[d + 1];
        if (t->ndk) {
            const int32_t *nd = t->ndk + (size_t)d * K;
            for (uint32_t k = 0; k < K; k++)
                sum += nd[k] ? lgamma(nd[k] + alpha) : lg0;
        } else if (lda_counts_in_lists(t)) {
            const uint64_t o = t->dnz_off[d];
            const uint32_t n = t->dnz_n[d];
            for (uint32_t x = 0; x < n; x++)
                sum += lgamma(lda_list_count_at(t, o + x) + alpha);
            sum += (double)(K - n) * lg0;
        } else if (row) {
            uint32_t distinct = 0;
            for (uint64_t p = beg; p < end; p++)
                distinct += row[lda_topic(t, p)]++ == 0;
            for (uint64_t p = beg; p < end; p++)
                if (row[lda_topic(t, p)]) {
                    sum += lgamma(row[lda_topic(t, p)] + alpha);
                    row[lda_topic(t, p)] = 0;
                }
            sum += (double)(K - distinct) * lg0;
        } else {
            return NAN; /* out of memory: no likelihood rather than a wrong one */
        }
        sum -= lgamma((double)(end - beg) + K * alpha);
    }
    free(row);
    return sum;
}

double lda_log_joint(uint32_t K, uint64_t V, uint64_t D, double alpha, double beta,
                     const int64_t *nk, double word_part, double doc_part)
{
    double ll = K * (lgamma(V * beta) - (double)V * lgamma(beta)) +
                (double)D * (lgamma(K * alpha) - K * lgamma(alpha)) + word_part + doc_part;
    for (uint32_t k = 0; k < K; k++)
        ll -= lgamma((double)nk[k] + V * beta);
    return ll;
}
