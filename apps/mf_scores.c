/*
 * mf_scores.c - predictions of a saved MF model for a block of users x
 * items (recommend, ranking metrics), bit for bit what rt_mf_predict gives
 * for each pair.
 *
 * rt_mf_dot sums w . h in one fixed order: chunk c of 8 floats goes into
 * accumulator c mod 4 lane by lane (fused multiply-add), the four
 * accumulators are added pairwise and the 8 lanes folded 8 -> 4 -> 2 -> 1.
 * A BLAS sgemm would sum in its own order and so change the last bits (and
 * with them the order of near ties).  Here the same operations run across 8
 * items at once instead: H is packed into panels of 8 items (for each of the
 * kp coordinates, the 8 items' values side by side), every scalar operation
 * of rt_mf_dot becomes one 8-wide operation on a panel, and each user's
 * coordinate is broadcast.  A panel is 8 x kp floats (1 KiB at k = 32), so it
 * stays in L1 while every user of the block is scored against it.
 */
#include "apps/mf_common.h"

#include <immintrin.h>
#include <math.h>
#include <string.h>

enum { PANEL = 8 }; /* items per panel = floats per AVX2 register */

float *rt_mf_pack_panels(const float *H, uint64_t n_cols, uint32_t kp)
{
    uint64_t panels = (n_cols + PANEL - 1) / PANEL;
    float *P = rt_alloc((size_t)panels * kp * PANEL * sizeof(float) + 1);
    if (!P)
        return NULL;
    for (uint64_t j = 0; j < n_cols; j++)
        for (uint32_t d = 0; d < kp; d++)
            P[((j / PANEL) * kp + d) * PANEL + j % PANEL] = H[j * kp + d];
    return P;
}

/* ------------------------------------------------------- portable path */

/* dot(w, item) for the 8 items of one panel, rt_mf_dot's operations in its
 * order, lane by lane. */
static void panel_dot_portable(const float *w, const float *panel, uint32_t kp, float out[PANEL])
{
    uint32_t chunks = kp / RT_MF_LANES;
    float s[RT_MF_LANES][PANEL];
    for (int l = 0; l < RT_MF_LANES; l++) {
        float acc[4][PANEL] = {{0}};
        for (uint32_t c = 0; c < chunks; c++) {
            uint32_t d = c * RT_MF_LANES + (uint32_t)l;
            for (int j = 0; j < PANEL; j++)
                acc[c % 4][j] = fmaf(w[d], panel[d * PANEL + j], acc[c % 4][j]);
        }
        for (int j = 0; j < PANEL; j++)
            s[l][j] = (acc[0][j] + acc[1][j]) + (acc[2][j] + acc[3][j]);
    }
    for (int j = 0; j < PANEL; j++) {
        float h4[4], h2[2];
        for (int l = 0; l < 4; l++)
            h4[l] = s[l][j] + s[l + 4][j];
        for (int l = 0; l < 2; l++)
            h2[l] = h4[l] + h4[l + 2];
        out[j] = h2[0] + h2[1];
    }
}

/* ----------------------------------------------------------- AVX2 path */

#define AVX2 __attribute__((target("avx2,fma")))

/* One lane l of rt_mf_dot's four accumulators, added pairwise.  Chunk c
 * goes to accumulator c mod 4; the loop is unrolled by four so that the
 * accumulators live in registers. */
AVX2 static inline __m256 lane_sum_avx2(const float *w, const float *panel, uint32_t chunks,
                                        uint32_t l)
{
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0;
#define TERM(c)                                                                                    \
    _mm256_broadcast_ss(w + (c)*RT_MF_LANES + l),                                                  \
        _mm256_load_ps(panel + (size_t)((c)*RT_MF_LANES + l) * PANEL)
    uint32_t c = 0;
    for (; c + 4 <= chunks; c += 4) {
        a0 = _mm256_fmadd_ps(TERM(c), a0);
        a1 = _mm256_fmadd_ps(TERM(c + 1), a1);
        a2 = _mm256_fmadd_ps(TERM(c + 2), a2);
        a3 = _mm256_fmadd_ps(TERM(c + 3), a3);
    }
    if (c < chunks)
        a0 = _mm256_fmadd_ps(TERM(c), a0);
    if (c + 1 < chunks)
        a1 = _mm256_fmadd_ps(TERM(c + 1), a1);
    if (c + 2 < chunks)
        a2 = _mm256_fmadd_ps(TERM(c + 2), a2);
#undef TERM
    return _mm256_add_ps(_mm256_add_ps(a0, a1), _mm256_add_ps(a2, a3));
}

AVX2 static void panel_dot_avx2(const float *w, const float *panel, uint32_t kp, float out[PANEL])
{
    uint32_t chunks = kp / RT_MF_LANES;
    __m256 h4[4];
    for (uint32_t l = 0; l < 4; l++)
        h4[l] = _mm256_add_ps(lane_sum_avx2(w, panel, chunks, l),
                              lane_sum_avx2(w, panel, chunks, l + 4));
    __m256 h2a = _mm256_add_ps(h4[0], h4[2]), h2b = _mm256_add_ps(h4[1], h4[3]);
    _mm256_storeu_ps(out, _mm256_add_ps(h2a, h2b));
}

/* ------------------------------------------------------------- blocks */

void rt_mf_scores_block(const rt_mf_scores_args *a, const uint32_t *rows, uint32_t n_rows,
                        uint32_t col0, uint32_t n_cols, float *out)
{
    uint32_t kp = a->kp, end = col0 + n_cols;
    const float zero = 0.0f;
    for (uint32_t p = col0 / PANEL; (uint64_t)p * PANEL < end; p++) {
        const float *panel = a->panels + (size_t)p * kp * PANEL;
        uint32_t j0 = p * PANEL;
        uint32_t lo = j0 < col0 ? col0 : j0, hi = j0 + PANEL < end ? j0 + PANEL : end;
        for (uint32_t i = 0; i < n_rows; i++) {
            float dot[PANEL];
            const float *w = a->W + (size_t)rows[i] * kp;
            if (a->kernel == RT_MF_KERNEL_AVX2)
                panel_dot_avx2(w, panel, kp, dot);
            else
                panel_dot_portable(w, panel, kp, dot);
            float base = a->mu + (a->bu ? a->bu[rows[i]] : zero);
            float *o = out + (size_t)i * n_cols - col0;
            for (uint32_t j = lo; j < hi; j++)
                o[j] = (base + (a->bi ? a->bi[j] : zero)) + dot[j - j0];
        }
    }
}
