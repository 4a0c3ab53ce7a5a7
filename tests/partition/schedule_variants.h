/*
 * schedule_variants.h - valid schedules other than the default generator's,
 * for tests (partition.h gives the rules).
 *   reverse: blocks travel the workers the other way round,
 *            schedule[s][w] = (c*w + s) mod B (first visits stay with b / c);
 *   shuffle: the default table with its steps c..B-1 in a seeded random
 *            order (every first visit happens in steps 0..c-1, so they stay).
 */
#ifndef ROTOR_TESTS_SCHEDULE_VARIANTS_H
#define ROTOR_TESTS_SCHEDULE_VARIANTS_H

#include <stdint.h>

void schedule_reverse(uint32_t workers, uint32_t pipeline, uint32_t *table);
void schedule_shuffle(uint32_t workers, uint32_t pipeline, uint64_t seed, uint32_t *table);
/* "reverse" or "shuffle" (with seed); -1 for another name. */
int schedule_variant(const char *name, uint32_t workers, uint32_t pipeline, uint64_t seed,
                     uint32_t *table);

#endif
