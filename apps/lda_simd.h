/*
 * lda_simd.h - AVX2 pieces the LDA kernels share (internal to apps/).
 *
 * Each kernel keeps a portable path doing the same IEEE operations in the
 * same order, and picks the AVX2 one at run time when the CPU has it; these
 * helpers only gather inputs, so they change no bits.
 */
#ifndef ROTOR_LDA_SIMD_H
#define ROTOR_LDA_SIMD_H

#include <immintrin.h>
#include <stdint.h>

#define AVX2 __attribute__((target("avx2")))

/* c[k] of eight packed list entries' topics (entry = topic << 16 | count),
 * by eight loads, not a gather: a gather was slower on this machine's AMD
 * EPYC in both buckets that read them (the q bucket 0.87-0.96x the tokens/s,
 * bench lock, 7 rounds; again 0.91 / 0.96x on KOS / AP at K = 1000 for 18%
 * fewer instructions; the r bucket with lists in cache, n = 40, 100, 200:
 * 34, 71, 128 ns against 25, 63, 91). */
AVX2 static inline __m256 lda_coef8_avx2(const uint32_t *p, const float *c)
{
    return _mm256_setr_ps(c[p[0] >> 16], c[p[1] >> 16], c[p[2] >> 16], c[p[3] >> 16], c[p[4] >> 16],
                          c[p[5] >> 16], c[p[6] >> 16], c[p[7] >> 16]);
}

/* The same for eight topics already in a register (a list's last, partial
 * block: the caller masks its lanes past the list to topic 0). */
AVX2 static inline __m256 lda_coef8_of_topics_avx2(__m256i k, const float *c)
{
    const __m128i lo = _mm256_castsi256_si128(k), hi = _mm256_extracti128_si256(k, 1);
    return _mm256_setr_ps(c[_mm_cvtsi128_si32(lo)], c[_mm_extract_epi32(lo, 1)],
                          c[_mm_extract_epi32(lo, 2)], c[_mm_extract_epi32(lo, 3)],
                          c[_mm_cvtsi128_si32(hi)], c[_mm_extract_epi32(hi, 1)],
                          c[_mm_extract_epi32(hi, 2)], c[_mm_extract_epi32(hi, 3)]);
}

/* c[k] of the lanes `in` of eight topics already in a register (+0 in the
 * others), by a masked gather: for a list's last, partial block the
 * gather beats taking the topics out of the register one by one (callgrind
 * Ir a token on KOS at K = 1000, the q bucket: 497 -> 475; serial CPU
 * 1.01-1.03x), where it lost to eight loads from memory above. */
AVX2 static inline __m256 lda_coef8_masked_avx2(__m256i k, __m256i in, const float *c)
{
    return _mm256_mask_i32gather_ps(_mm256_setzero_ps(), c, k, _mm256_castsi256_ps(in), 4);
}

#endif
