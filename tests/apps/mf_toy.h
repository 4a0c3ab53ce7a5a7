/* mf_toy.h - a small planted MF problem cut like a plan, in memory (plan,
 * shards and the same ratings with global ids), for the tests that drive
 * the MF cores through the ring schedule without an engine. */
#ifndef ROTOR_TESTS_MF_TOY_H
#define ROTOR_TESTS_MF_TOY_H

#include "partition/partition.h"
#include "tests/apps/cd_mf_ref.h"

typedef struct toy {
    rt_plan plan;
    rt_shard *shards; /* W */
    rt_entry **train; /* per worker */
    rt_entry **test;  /* per worker */
    cd_ref_data ref;  /* the same ratings with global ids */
} toy;

/* Rows go to worker g % W (local index g / W), columns to block g % B;
 * ratings 3 + planted rank-3 product + noise, 20% of them held out. */
void toy_make(toy *t, uint32_t n_rows, uint32_t n_cols, uint32_t W, uint32_t c, uint32_t threads,
              double density, uint64_t seed);
void toy_free(toy *t);
/* The block worker w visits in step s (the plan's ring schedule). */
uint32_t toy_block(const toy *t, uint32_t step, uint32_t worker);

#endif
