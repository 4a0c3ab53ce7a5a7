/* rng.c - xoshiro256** with splitmix64 seeding; distributions on top. */
#include "ground/ground.h"

#include <math.h>

uint64_t rt_hash64(uint64_t x)
{
    x += 0x9e3779b97f4a7c15ULL;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
    return x ^ (x >> 31);
}

void rt_rng_seed(rt_rng *rng, uint64_t seed, uint64_t stream)
{
    uint64_t x = rt_hash64(seed) ^ rt_hash64(stream * 0xd1342543de82ef95ULL + 1);
    for (int i = 0; i < 4; i++) {
        x = rt_hash64(x + (uint64_t)i);
        rng->s[i] = x;
    }
    if (!(rng->s[0] | rng->s[1] | rng->s[2] | rng->s[3]))
        rng->s[0] = 1;
}

uint64_t rt_rng_below(rt_rng *rng, uint64_t n)
{
    if (n <= 1)
        return 0;
    uint64_t limit = UINT64_MAX - UINT64_MAX % n;
    uint64_t x;
    do
        x = rt_rng_next(rng);
    while (x >= limit);
    return x % n;
}

double rt_rng_normal(rt_rng *rng)
{
    double u1 = 1.0 - rt_rng_uniform(rng); /* (0, 1] */
    double u2 = rt_rng_uniform(rng);
    return sqrt(-2.0 * log(u1)) * cos(2.0 * M_PI * u2);
}

double rt_rng_gamma(rt_rng *rng, double shape)
{
    if (shape < 1.0) {
        double u = 1.0 - rt_rng_uniform(rng);
        return rt_rng_gamma(rng, shape + 1.0) * pow(u, 1.0 / shape);
    }
    double d = shape - 1.0 / 3.0, c = 1.0 / sqrt(9.0 * d);
    for (;;) {
        double x = rt_rng_normal(rng), v = 1.0 + c * x;
        if (v <= 0)
            continue;
        v = v * v * v;
        double u = 1.0 - rt_rng_uniform(rng);
        if (log(u) < 0.5 * x * x + d - d * v + d * log(v))
            return d * v;
    }
}

void rt_rng_shuffle_u32(rt_rng *rng, uint32_t *a, size_t n)
{
    for (size_t i = n; i > 1; i--) {
        size_t j = (size_t)rt_rng_below(rng, i);
        uint32_t t = a[i - 1];
        a[i - 1] = a[j];
        a[j] = t;
    }
}
