/* schedule_variants.c - see schedule_variants.h. */
#include "tests/partition/schedule_variants.h"
#include "partition/partition.h"

#include <string.h>

void schedule_reverse(uint32_t workers, uint32_t pipeline, uint32_t *table)
{
    uint32_t B = workers * pipeline;
    for (uint32_t s = 0; s < B; s++)
        for (uint32_t w = 0; w < workers; w++)
            table[(size_t)s * workers + w] = (pipeline * w + s) % B;
}

void schedule_shuffle(uint32_t workers, uint32_t pipeline, uint64_t seed, uint32_t *table)
{
    uint32_t B = workers * pipeline;
    rt_schedule_ring(workers, pipeline, table);
    rt_rng rng;
    rt_rng_seed(&rng, seed, 0);
    for (uint32_t i = B; i > pipeline + 1; i--) {
        uint32_t a = i - 1, b = pipeline + (uint32_t)rt_rng_below(&rng, i - pipeline);
        for (uint32_t w = 0; w < workers; w++) {
            uint32_t x = table[(size_t)a * workers + w];
            table[(size_t)a * workers + w] = table[(size_t)b * workers + w];
            table[(size_t)b * workers + w] = x;
        }
    }
}

int schedule_variant(const char *name, uint32_t workers, uint32_t pipeline, uint64_t seed,
                     uint32_t *table)
{
    if (!strcmp(name, "reverse"))
        schedule_reverse(workers, pipeline, table);
    else if (!strcmp(name, "shuffle"))
        schedule_shuffle(workers, pipeline, seed, table);
    else
        return -1;
    return 0;
}
