/* test_schedule.c - the schedule rules of partition.h: the default generator
 * follows them (and the ring properties the engine's overlap relies on) for
 * many (nodes, threads, pipeline), including c = 1; rt_schedule_check
 * accepts other valid tables and names what is wrong with invalid ones. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "partition/partition.h"
#include "tests/partition/schedule_variants.h"

typedef struct shape {
    uint32_t nodes, threads, c;
} shape;

static const shape shapes[] = {
    {1, 1, 1}, {1, 1, 2}, {1, 4, 1}, {1, 4, 2}, {2, 1, 1}, {2, 1, 2}, {2, 2, 2}, {2, 3, 3},
    {3, 2, 2}, {4, 1, 2}, {4, 2, 1}, {4, 4, 4}, {5, 3, 2}, {8, 2, 2}, {3, 1, 5}, {7, 3, 1},
};

static uint32_t *ring_table(uint32_t W, uint32_t c)
{
    uint32_t *t = malloc(sizeof(uint32_t) * (size_t)W * W * c);
    assert_non_null(t);
    rt_schedule_ring(W, c, t);
    return t;
}

/* Worker working on block b at step s, or -1. */
static int32_t worker_of(const uint32_t *t, uint32_t W, uint32_t c, uint32_t s, uint32_t b)
{
    for (uint32_t w = 0; w < W; w++)
        if (t[(size_t)(s % (W * c)) * W + w] == b)
            return (int32_t)w;
    return -1;
}

/* The default schedule moves a block only to the same node or the next one,
 * with >= c-1 whole steps between leaving a node and the next node's visit,
 * and its first visit of an epoch is on its home node. */
static void check_ring(const shape *sh, const uint32_t *t)
{
    uint32_t P = sh->nodes, T = sh->threads, c = sh->c, W = P * T, B = W * c;
    rt_plan plan;
    memset(&plan, 0, sizeof(plan));
    plan.pipeline = c;
    plan.threads = T;
    for (uint32_t b = 0; b < B; b++) {
        int32_t first_s = -1, prev_s = -1, prev_w = -1;
        for (uint32_t s = 0; s < 2 * B; s++) { /* two epochs: wrap-around */
            int32_t w = worker_of(t, W, c, s, b);
            if (w < 0)
                continue;
            if (first_s < 0)
                first_s = (int32_t)s;
            if (prev_w >= 0) {
                uint32_t n0 = (uint32_t)prev_w / T, n1 = (uint32_t)w / T;
                assert_true(n1 == n0 || n1 == (n0 + 1) % P);
                if (n1 != n0)
                    assert_true(s - (uint32_t)prev_s - 1 >= c - 1);
            }
            prev_s = (int32_t)s;
            prev_w = w;
        }
        uint32_t home = rt_plan_block_home(&plan, b);
        assert_int_equal(b / (c * T), home);
        assert_int_equal((uint32_t)worker_of(t, W, c, (uint32_t)first_s, b) / T, home);
    }
}

static void test_default_follows_the_rules(void **state)
{
    (void)state;
    rt_error err;
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        const shape *sh = &shapes[i];
        uint32_t W = sh->nodes * sh->threads;
        uint32_t *t = ring_table(W, sh->c);
        if (rt_schedule_check(t, W, sh->c, "ring", &err))
            fail_msg("%s", err.msg);
        check_ring(sh, t);
        free(t);
    }
}

/* The generator itself, for one small case worked by hand: W = 2, c = 2, B = 4. */
static void test_schedule_by_hand(void **state)
{
    (void)state;
    static const uint32_t want[4][2] = {{1, 3}, {0, 2}, {3, 1}, {2, 0}};
    uint32_t *t = ring_table(2, 2);
    for (uint32_t s = 0; s < 4; s++)
        for (uint32_t w = 0; w < 2; w++)
            assert_int_equal(t[s * 2 + w], want[s][w]);
    free(t);
}

/* The reversed and step-shuffled tables differ from the default and are valid. */
static void test_variants_are_valid(void **state)
{
    (void)state;
    rt_error err;
    for (size_t i = 0; i < sizeof(shapes) / sizeof(shapes[0]); i++) {
        uint32_t W = shapes[i].nodes * shapes[i].threads, c = shapes[i].c;
        size_t n = (size_t)W * W * c;
        uint32_t *ring = ring_table(W, c), *v = malloc(sizeof(uint32_t) * n);
        for (int k = 0; k < 2; k++) {
            schedule_variant(k ? "shuffle" : "reverse", W, c, 7 + i, v);
            if (rt_schedule_check(v, W, c, k ? "shuffle" : "reverse", &err))
                fail_msg("%s", err.msg);
            if (k == 0 && W * c > 2) /* (tiny tables, and shuffles, may equal the default) */
                assert_true(memcmp(v, ring, n * sizeof(uint32_t)) != 0);
        }
        free(ring);
        free(v);
    }
}

static void expect_refused(const uint32_t *t, uint32_t W, uint32_t c, const char *what)
{
    rt_error err;
    memset(&err, 0, sizeof(err));
    assert_int_equal(rt_schedule_check(t, W, c, "plan.json", &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    if (!strstr(err.msg, what))
        fail_msg("expected '%s' in: %s", what, err.msg);
}

/* Each rule is enforced, with a message saying which. */
static void test_invalid_tables_refused(void **state)
{
    (void)state;
    uint32_t W = 3, c = 2, B = 6;
    uint32_t *t = ring_table(W, c), *bad = malloc(sizeof(uint32_t) * W * B);
    /* (i) two workers share a block in a step */
    memcpy(bad, t, sizeof(uint32_t) * W * B);
    bad[4 * W + 1] = bad[4 * W + 0];
    expect_refused(bad, W, c, "to two workers");
    /* (ii) a worker meets a block twice: two workers swap blocks in one step */
    memcpy(bad, t, sizeof(uint32_t) * W * B);
    bad[4 * W + 0] = t[4 * W + 1];
    bad[4 * W + 1] = t[4 * W + 0];
    expect_refused(bad, W, c, "twice in an epoch");
    /* out of range */
    memcpy(bad, t, sizeof(uint32_t) * W * B);
    bad[0] = B;
    expect_refused(bad, W, c, "is not a block");
    /* (iii) steps 0 and c swapped: blocks are first met away from home */
    memcpy(bad, t, sizeof(uint32_t) * W * B);
    for (uint32_t w = 0; w < W; w++) {
        bad[0 * W + w] = t[(size_t)c * W + w];
        bad[(size_t)c * W + w] = t[w];
    }
    expect_refused(bad, W, c, "home worker");
    free(t);
    free(bad);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_default_follows_the_rules),
        cmocka_unit_test(test_schedule_by_hand),
        cmocka_unit_test(test_variants_are_valid),
        cmocka_unit_test(test_invalid_tables_refused),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
