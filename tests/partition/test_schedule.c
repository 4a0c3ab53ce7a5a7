/* test_schedule.c - the ring schedule's properties (i)-(iv) of partition.h
 * for many (nodes, threads, pipeline), including c = 1. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "partition/partition.h"

typedef struct shape {
    uint32_t nodes, threads, c;
} shape;

static const shape shapes[] = {
    {1, 1, 1}, {1, 1, 2}, {1, 4, 1}, {1, 4, 2}, {2, 1, 1}, {2, 1, 2}, {2, 2, 2}, {2, 3, 3},
    {3, 2, 2}, {4, 1, 2}, {4, 2, 1}, {4, 4, 4}, {5, 3, 2}, {8, 2, 2}, {3, 1, 5}, {7, 3, 1},
};

/* Worker working on block b at step s, or -1. */
static int32_t worker_of(uint32_t W, uint32_t c, uint32_t s, uint32_t b)
{
    for (uint32_t w = 0; w < W; w++)
        if (rt_schedule_block(W, c, s, w) == b)
            return (int32_t)w;
    return -1;
}

/* (i) no two workers share a block in a step; (ii) each worker meets each block once. */
static void check_exclusive_and_complete(const shape *sh)
{
    uint32_t W = sh->nodes * sh->threads, B = W * sh->c;
    uint8_t *seen = calloc((size_t)W * B, 1);
    uint8_t *used = calloc(B, 1);
    for (uint32_t s = 0; s < B; s++) {
        memset(used, 0, B);
        for (uint32_t w = 0; w < W; w++) {
            uint32_t b = rt_schedule_block(W, sh->c, s, w);
            assert_true(b < B);
            assert_int_equal(used[b], 0); /* (i) */
            used[b] = 1;
            seen[(size_t)w * B + b]++;
        }
    }
    for (size_t i = 0; i < (size_t)W * B; i++)
        assert_int_equal(seen[i], 1); /* (ii) */
    /* The schedule repeats every epoch. */
    for (uint32_t w = 0; w < W; w++)
        assert_int_equal(rt_schedule_block(W, sh->c, 0, w), rt_schedule_block(W, sh->c, B, w));
    free(seen);
    free(used);
}

/* (iii) consecutive visits of a block (cyclically, across epochs) are on the
 * same node or the next one; (iv) between leaving a node and the next node's
 * first visit there are >= c-1 whole steps; the block starts and ends each
 * epoch on its home node. */
static void check_ring(const shape *sh)
{
    uint32_t P = sh->nodes, T = sh->threads, c = sh->c, W = P * T, B = W * c;
    rt_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.pipeline = c;
    plan.threads = T;
    for (uint32_t b = 0; b < B; b++) {
        int32_t first_s = -1, prev_s = -1, prev_w = -1;
        for (uint32_t s = 0; s < 2 * B; s++) { /* two epochs: wrap-around */
            int32_t w = worker_of(W, c, s % B, b);
            if (w < 0)
                continue;
            if (first_s < 0)
                first_s = (int32_t)s;
            if (prev_w >= 0) {
                uint32_t n0 = (uint32_t)prev_w / T, n1 = (uint32_t)w / T;
                assert_true(n1 == n0 || n1 == (n0 + 1) % P); /* (iii) */
                if (n1 != n0)
                    assert_true(s - (uint32_t)prev_s - 1 >= c - 1); /* (iv) */
            }
            prev_s = (int32_t)s;
            prev_w = w;
        }
        /* Home: the node whose positions hold b at step 0 (position b). */
        uint32_t home = rt_plan_block_home(&plan, b);
        assert_true(home < P);
        assert_int_equal(b / (c * T), home);
        /* Its first visit in an epoch is on the home node or the next. */
        uint32_t n = (uint32_t)worker_of(W, c, (uint32_t)first_s, b) / T;
        assert_true(n == home || n == (home + 1) % P);
    }
}

static void test_schedule_properties(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        check_exclusive_and_complete(&shapes[i]);
        check_ring(&shapes[i]);
    }
}

/* The formula itself, for one small case worked by hand: W = 2, c = 2, B = 4. */
static void test_schedule_by_hand(void **state)
{
    (void)state;
    static const uint32_t want[4][2] = {{1, 3}, {0, 2}, {3, 1}, {2, 0}};
    for (uint32_t s = 0; s < 4; s++)
        for (uint32_t w = 0; w < 2; w++)
            assert_int_equal(rt_schedule_block(2, 2, s, w), want[s][w]);
}

/* Any split of W workers into nodes x threads gives the same per-worker
 * sequence: the schedule depends on W and c only. */
static void test_schedule_split_invariant(void **state)
{
    (void)state;
    for (uint32_t s = 0; s < 24; s++)
        for (uint32_t w = 0; w < 12; w++)
            assert_int_equal(rt_schedule_block(12, 2, s, w), (2 * w + 1 + 24 - s) % 24);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_schedule_properties),
        cmocka_unit_test(test_schedule_by_hand),
        cmocka_unit_test(test_schedule_split_invariant),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
