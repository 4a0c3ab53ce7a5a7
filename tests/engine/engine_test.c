/*
 * engine_test.c - the schedule executor on one process, with an app that
 * records every visit inside the block payload it travels with.
 *
 * Checks, for several (threads, pipeline) shapes and the serial replay:
 * each visit's block is the one the schedule names; in every rotation each
 * block meets every worker exactly once, in schedule order; blocks return
 * home between rotations with their payload intact; step_end runs once per
 * step; rotation_end stops the run when asked.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <string.h>

#include "engine/engine.h"

#define ROTATIONS 3

typedef struct visit_log {
    uint32_t count;
    uint32_t rotation;
    uint32_t entries[64][2]; /* (worker, step) */
} visit_log;

typedef struct recorder {
    const rt_plan *plan;
    uint32_t step_ends;
    uint64_t rotations_seen;
    int failures;
} recorder;

static int rec_home(void *app, uint32_t block, uint64_t rot, void *payload, size_t *len,
                    rt_error *err)
{
    (void)app;
    (void)block;
    (void)err;
    visit_log *log = payload;
    if (rot > 0 && log->rotation != rot - 1)
        return rt_fail(err, RT_EXIT_RUNTIME, "block %u came home with a stale log", block);
    memset(log, 0, sizeof(*log));
    log->rotation = (uint32_t)rot;
    *len = sizeof(*log);
    return 0;
}

static int rec_visit(void *app, const rt_visit *v, rt_error *err)
{
    recorder *r = app;
    visit_log *log = v->payload;
    uint32_t want = rt_schedule_block(r->plan->workers, r->plan->pipeline, v->step, v->worker);
    if (v->block != want)
        return rt_fail(err, RT_EXIT_RUNTIME, "worker %u step %u got block %u, schedule says %u",
                       v->worker, v->step, v->block, want);
    if (v->len != sizeof(*log) || log->rotation != v->rotation || log->count >= 64)
        return rt_fail(err, RT_EXIT_RUNTIME, "bad payload in block %u", v->block);
    log->entries[log->count][0] = v->worker;
    log->entries[log->count][1] = v->step;
    log->count++;
    return 0;
}

static int rec_step_end(void *app, rt_engine *eng, uint64_t rot, uint32_t step, rt_error *err)
{
    (void)eng;
    (void)rot;
    (void)step;
    (void)err;
    ((recorder *)app)->step_ends++;
    return 0;
}

static int rec_rotation_end(void *app, rt_engine *eng, uint64_t rot, const rt_rotation_stats *st,
                            int *stop, rt_error *err)
{
    recorder *r = app;
    const rt_plan *p = r->plan;
    (void)st;
    for (uint32_t b = 0; b < p->blocks; b++) {
        size_t len;
        visit_log *log = rt_engine_home_payload(eng, b, &len);
        if (!log || len != sizeof(*log))
            return rt_fail(err, RT_EXIT_RUNTIME, "block %u not home", b);
        uint32_t seen = 0, last_step = 0;
        for (uint32_t i = 0; i < log->count; i++) {
            uint32_t w = log->entries[i][0], s = log->entries[i][1];
            if (seen & (1u << w))
                r->failures++; /* a worker met the block twice */
            if (i > 0 && s <= last_step)
                r->failures++; /* visits out of schedule order */
            seen |= 1u << w;
            last_step = s;
        }
        if (log->count != p->workers || seen != (1u << p->workers) - 1)
            r->failures++;
    }
    r->rotations_seen = rot + 1;
    *stop = rot + 1 == ROTATIONS;
    return 0;
}

static const rt_app_ops recorder_ops = {
    .name = "recorder",
    .block_home = rec_home,
    .visit = rec_visit,
    .step_end = rec_step_end,
    .rotation_end = rec_rotation_end,
};

static void run_shape(uint32_t threads, uint32_t pipeline, int serial)
{
    rt_plan plan;
    memset(&plan, 0, sizeof(plan));
    strcpy(plan.dir, "(in-memory plan)");
    plan.app = RT_PLAN_MF;
    plan.nodes = 1;
    plan.threads = threads;
    plan.workers = threads;
    plan.pipeline = pipeline;
    plan.blocks = threads * pipeline;
    rt_group group = {.rank = 0, .size = 1, .local_rank = 0, .peers = NULL};
    rt_engine_config cfg = {0};
    cfg.plan = &plan;
    cfg.group = &group;
    cfg.threads = (int)threads;
    rt_transport_config_init(&cfg.transport);
    cfg.transport.kind = RT_TRANSPORT_TCP;
    cfg.pin = RT_PIN_NO;
    cfg.slot_bytes = sizeof(visit_log);
    cfg.serial = serial;

    rt_engine *eng;
    rt_error err = {0};
    int rc = rt_engine_create(&cfg, &eng, &err);
    if (rc)
        fail_msg("create: %s", err.msg);
    recorder rec = {.plan = &plan};
    rc = rt_engine_run(eng, &recorder_ops, &rec, &err);
    if (rc)
        fail_msg("run (threads %u, pipeline %u, serial %d): %s", threads, pipeline, serial,
                 err.msg);
    assert_int_equal(rec.failures, 0);
    assert_int_equal(rec.rotations_seen, ROTATIONS);
    assert_int_equal(rec.step_ends, ROTATIONS * plan.blocks);
    rt_engine_destroy(eng);
}

static void test_one_thread(void **state)
{
    (void)state;
    run_shape(1, 1, 0);
    run_shape(1, 2, 0);
}

static void test_threads_and_pipelines(void **state)
{
    (void)state;
    for (uint32_t t = 2; t <= 4; t++)
        for (uint32_t c = 1; c <= 3; c++)
            run_shape(t, c, 0);
}

static void test_serial_replay(void **state)
{
    (void)state;
    run_shape(4, 2, 1);
    run_shape(3, 1, 1);
}

static void test_worker_mismatch_is_input_error(void **state)
{
    (void)state;
    rt_plan plan;
    memset(&plan, 0, sizeof(plan));
    strcpy(plan.dir, "p");
    plan.nodes = 2;
    plan.threads = 2;
    plan.workers = 4;
    plan.pipeline = 2;
    plan.blocks = 8;
    rt_group group = {.rank = 0, .size = 1, .local_rank = 0};
    rt_engine_config cfg = {.plan = &plan, .group = &group, .threads = 3, .slot_bytes = 64};
    rt_transport_config_init(&cfg.transport);
    rt_engine *eng = NULL;
    rt_error err = {0};
    assert_int_equal(rt_engine_create(&cfg, &eng, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
    assert_non_null(strstr(err.msg, "plan is for 4 workers"));
    assert_null(eng);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_one_thread),
        cmocka_unit_test(test_threads_and_pipelines),
        cmocka_unit_test(test_serial_replay),
        cmocka_unit_test(test_worker_mismatch_is_input_error),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
