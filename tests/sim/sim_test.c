/* sim_test.c - the simulator's model (sim/sim.h) on cases whose answer is
 * known analytically. */
#include "sim/sim.h"

#include <setjmp.h>
#include <stdarg.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* A shape of N nodes x T threads x pipeline c with the ring schedule
 * (written out here, independently of partition.h), cells from cell(w, b). */
typedef struct test_shape {
    rt_sim_shape s;
    double *cells, *bytes;
    uint32_t *sched;
} test_shape;

static double cell_uniform(uint32_t w, uint32_t b)
{
    (void)w, (void)b;
    return 1000;
}

static double cell_skewed(uint32_t w, uint32_t b)
{
    return 100.0 * (1 + (w * 7 + b * 3) % 11);
}

static void shape_make(test_shape *t, uint32_t N, uint32_t T, uint32_t c,
                       double (*cell)(uint32_t, uint32_t), double block_bytes)
{
    uint32_t W = N * T, B = c * W;
    memset(t, 0, sizeof(*t));
    t->cells = calloc((size_t)W * B, sizeof(double));
    t->bytes = calloc(B, sizeof(double));
    t->sched = calloc((size_t)W * B, sizeof(uint32_t));
    assert_non_null(t->cells);
    assert_non_null(t->bytes);
    assert_non_null(t->sched);
    for (uint32_t w = 0; w < W; w++)
        for (uint32_t b = 0; b < B; b++)
            t->cells[(size_t)w * B + b] = cell(w, b);
    for (uint32_t b = 0; b < B; b++)
        t->bytes[b] = block_bytes;
    for (uint32_t s = 0; s < B; s++)
        for (uint32_t w = 0; w < W; w++)
            t->sched[(size_t)s * W + w] = (c * w + c - 1 + B - s) % B;
    t->s = (rt_sim_shape){.nodes = N,
                          .threads = T,
                          .pipeline = c,
                          .schedule = t->sched,
                          .cell_work = t->cells,
                          .block_bytes = t->bytes,
                          .rate = 1e6};
}

static void shape_free(test_shape *t)
{
    free(t->cells);
    free(t->bytes);
    free(t->sched);
}

/* One rotation of t over link; it must succeed and leave no error behind
 * (the jittered rotations after the first once filled it on success). */
static rt_sim_result rotation(const test_shape *t, const rt_sim_link *link)
{
    rt_sim_result r;
    rt_error err = {0};
    assert_int_equal(rt_sim_rotation(&t->s, link, &r, &err), 0);
    assert_int_equal(err.code, 0);
    return r;
}

static const rt_sim_link infinite = {.gbps = 0, .latency_s = 0, .overhead_s = 0};

/* Infinitely fast link, balanced cells: the epoch is the compute alone,
 * B steps of one cell each plus the per-step overhead, and nothing stalls. */
static void test_infinite_link_is_compute(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 4, 2, 2, cell_uniform, 1e6);
    t.s.step_overhead_s = 1e-5;
    rt_sim_result r = rotation(&t, &infinite);
    uint32_t B = 16;
    assert_true(fabs(r.epoch_s - B * (1000 / 1e6 + 1e-5)) < 1e-12);
    assert_true(r.stall_max == 0);
    assert_string_equal(r.critical, "compute");
    shape_free(&t);
}

/* One node, skewed cells: the epoch is the sum over steps of the slowest
 * thread's cell. */
static void test_one_node_sums_slowest_cells(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 1, 3, 2, cell_skewed, 1e6);
    rt_sim_result r = rotation(&t, &infinite);
    double want = 0, sum = 0;
    for (uint32_t s = 0; s < 6; s++) {
        double slowest = 0;
        for (uint32_t w = 0; w < 3; w++) {
            double c = cell_skewed(w, t.sched[s * 3 + w]) / 1e6;
            slowest = c > slowest ? c : slowest;
            sum += c;
        }
        want += slowest;
    }
    assert_true(fabs(r.epoch_s - want) < 1e-12);
    assert_true(fabs(r.compute_mean_s - sum / 3) < 1e-12);
    shape_free(&t);
}

/* Compute-free cells on a 1 Gb/s link without latency: every link carries
 * B blocks back to back, so the epoch is B x bytes / bandwidth (plus the
 * statistics all-reduce), and the nodes wait nearly all the time. */
static void test_compute_free_is_transfer_bound(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 3, 2, 2, cell_uniform, 125000); /* 1 ms at 1 Gb/s */
    t.s.rate = 0;                                  /* infinitely fast kernel */
    rt_sim_link link = {.gbps = 1};
    rt_sim_result r = rotation(&t, &link);
    uint32_t B = 12;
    double want = B * 1e-3 + rt_sim_allreduce_s(&link, 3, 8.0 * 4, RT_SIM_TREE);
    assert_true(fabs(r.epoch_s - want) < 1e-12);
    /* waiting for arrivals or, the next node having one free slot, for its credits */
    assert_true(r.stall_max * r.epoch_s + r.credit_wait_s > 0.8 * r.epoch_s);
    assert_true(fabs(r.bytes_per_link - B * 125000.0) < 1e-6);
    assert_string_equal(r.critical, "bandwidth");
    /* With two spare slots a pass never waits for a credit here: the same
     * epoch, all of the waiting is stall. */
    t.s.spare_slots = 2;
    rt_sim_result r2 = rotation(&t, &link);
    assert_true(fabs(r2.epoch_s - want) < 1e-12);
    assert_true(r2.stall_max > 0.8 && r2.credit_wait_s == 0);
    /* So with one spare slot and a send buffer that takes two blocks ahead
     * of the wire (TCP's): a slot frees as soon as its pass is written. */
    t.s.spare_slots = 1;
    link.buffer_bytes = 2 * 125000;
    rt_sim_result r3 = rotation(&t, &link);
    assert_true(fabs(r3.epoch_s - want) < 1e-12);
    assert_true(r3.stall_max > 0.8 && r3.credit_wait_s == 0);
    shape_free(&t);
}

/* A shaped link's token bucket: the bucket is full at the start, and on a
 * link busy back to back it never refills, so exactly one bucket's worth
 * of wire time is saved. */
static void test_burst_saves_one_bucket(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 3, 2, 2, cell_uniform, 125000); /* 1 ms at 1 Gb/s */
    t.s.rate = 0;
    t.s.spare_slots = 2;
    rt_sim_link link = {.gbps = 1};
    rt_sim_result plain = rotation(&t, &link);
    link.burst_bytes = 62500; /* half a block */
    rt_sim_result burst = rotation(&t, &link);
    assert_true(fabs(plain.epoch_s - burst.epoch_s - 0.5e-3) < 1e-12);
    shape_free(&t);
}

/* Cell times that vary: every step waits for its slowest worker and every
 * node for its slowest neighbour, so the mean epoch grows and nodes stall;
 * the draws come from a fixed seed (deterministic). */
static void test_jitter_costs_time_and_stall(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 4, 2, 2, cell_uniform, 1e3);
    rt_sim_link link = {.gbps = 10, .latency_s = 1e-5};
    rt_sim_result even = rotation(&t, &link);
    t.s.cell_cv = 0.3;
    rt_sim_result a = rotation(&t, &link), b = rotation(&t, &link);
    assert_memory_equal(&a, &b, offsetof(rt_sim_result, critical));
    assert_true(a.epoch_s > 1.05 * even.epoch_s);
    assert_true(a.stall_max > even.stall_max + 0.02);
    /* Steps whose fixed cost varies: the nodes drift apart and stall. */
    t.s.cell_cv = 0, t.s.step_overhead_s = 1e-3;
    rt_sim_result fixed = rotation(&t, &link);
    t.s.step_cv = 0.5;
    a = rotation(&t, &link), b = rotation(&t, &link);
    assert_memory_equal(&a, &b, offsetof(rt_sim_result, critical));
    assert_true(a.stall_max > fixed.stall_max + 0.01);
    shape_free(&t);
}

/* Steps whose cells take less than inline_below_s together run them on
 * one thread (the engine's --inline-steps auto): the step takes their sum
 * plus inline_step_s; longer ones take the slowest plus step_overhead_s. */
static void test_tiny_steps_run_inline(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 1, 2, 2, cell_uniform, 1e3); /* 1 ms cells, 4 steps */
    t.s.step_overhead_s = 1e-3, t.s.inline_step_s = 1e-5;
    t.s.inline_below_s = 2.5e-3;
    rt_sim_result r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - 4 * (2e-3 + 1e-5)) < 1e-12);
    t.s.inline_below_s = 1.5e-3;
    r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - 4 * (1e-3 + 1e-3)) < 1e-12);
    shape_free(&t);
}

/* A per-step all-reduce over a slow network dominates a fast kernel. */
static void test_step_collectives_can_dominate(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 8, 1, 2, cell_uniform, 100);
    t.s.step_reduce_bytes = 8000;
    rt_sim_link link = {.gbps = 10, .latency_s = 1e-3, .overhead_s = 1e-5};
    rt_sim_result r = rotation(&t, &link);
    assert_string_equal(r.critical, "collectives");
    /* 3 doubling rounds per step for 8 nodes; the star sends 7 each way. */
    assert_true(fabs(rt_sim_allreduce_s(&link, 8, 8000, RT_SIM_TREE) -
                     3 * (1e-5 + 8000 * 8 / 1e10 + 1e-3)) < 1e-12);
    /* The star costs 2 latencies but 2 (P - 1) messages through rank 0:
     * on a 20 us link with 64 nodes the tree's 6 rounds win; with a 1 ms
     * latency and 8 nodes the star's 2 latencies do. */
    rt_sim_link lan = {.gbps = 10, .latency_s = 2e-5, .overhead_s = 1e-5};
    assert_true(rt_sim_allreduce_s(&lan, 64, 8000, RT_SIM_STAR) >
                3 * rt_sim_allreduce_s(&lan, 64, 8000, RT_SIM_TREE));
    assert_true(rt_sim_allreduce_s(&link, 8, 8000, RT_SIM_STAR) <
                rt_sim_allreduce_s(&link, 8, 8000, RT_SIM_TREE));
    assert_true(rt_sim_allreduce_s(&link, 1, 8000, RT_SIM_TREE) == 0);
    shape_free(&t);
}

/* N nodes x T threads on one host of C cores, fast link, balanced cells:
 * every worker computes at every moment, so each runs at C / (N T) of a
 * core and the epoch is the compute-only time stretched by N T / C.  With
 * the cores to spare (N T <= C), or with every node on its own cores, it is
 * the compute-only time. */
static void test_shared_cores_stretch_compute(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 4, 2, 2, cell_uniform, 1e6);
    uint32_t B = 16;
    double cell = 1000 / 1e6, own = B * cell;
    t.s.host_cores = 2;
    rt_sim_result r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - own * 8 / 2) < 1e-12);
    assert_true(r.stall_max == 0);
    t.s.host_cores = 8; /* one core per worker */
    r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - own) < 1e-12);
    t.s.host_cores = 2, t.s.nodes_per_host = 2; /* two hosts of 2 nodes x 2 threads */
    r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - own * 4 / 2) < 1e-12);
    t.s.host_cores = 0; /* the default: each node its own T cores */
    r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - own) < 1e-12);
    shape_free(&t);
}

/* Cores that compute at once are slower (busy_core_speed): two ranks of
 * one thread on a 2-core host, both computing all the time, take their
 * compute over the measured factor; off (0, or 1) it is the old prediction,
 * and on a host where one core at a time is busy nothing changes. */
static void test_busy_cores_compute_slower(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 2, 1, 2, cell_uniform, 1e6);
    double own = 4 * 1000 / 1e6; /* B steps of one cell each */
    t.s.host_cores = 2;
    rt_sim_result old = rotation(&t, &infinite);
    assert_true(fabs(old.epoch_s - own) < 1e-12);
    t.s.busy_core_speed = 1;
    assert_true(rotation(&t, &infinite).epoch_s == old.epoch_s);
    t.s.busy_core_speed = 0.7;
    rt_sim_result r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - own / 0.7) < 1e-12);
    assert_true(fabs(r.compute_max_s - own / 0.7) < 1e-12);
    assert_true(r.stall_max == 0);
    t.s.host_cores = 4; /* 2 of 4 busy: a third of the way to 0.7 */
    r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - own / (1 - 0.3 / 3)) < 1e-12);
    t.s.host_cores = 1; /* one core: it never competes with another */
    r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - 2 * own) < 1e-12);
    t.s.busy_core_speed = 1.5; /* out of range */
    rt_error err = {0};
    assert_int_equal(rt_sim_rotation(&t.s, &infinite, &r, &err), -1);
    shape_free(&t);
}

/* While a link transmits, the kernel's work for it (net_cpu_s_per_byte)
 * takes cores from the cells.  Two nodes of one thread, each on a core of
 * its own; 1 MB blocks take 8 ms on a 1 Gb/s link, a 1 ms cell is short of
 * that, so after step 0 both links transmit all the time: each host
 * carries half of its own link's load and half of its neighbour's, 0.5 of
 * a core at 4 ns per byte, and steps 1-3 compute at half speed.  The
 * epoch is the link's: step 0, then 4 passes back to back.  Off, the
 * old prediction exactly. */
static void test_link_cpu_takes_cores(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 2, 1, 2, cell_uniform, 1e6);
    rt_sim_link link = {.gbps = 1};
    double cell = 1000 / 1e6, wire = 1e6 * 8 / 1e9;
    rt_sim_result old = rotation(&t, &link);
    assert_true(fabs(old.compute_max_s - 4 * cell) < 1e-12);
    assert_true(fabs(old.epoch_s - (cell + 4 * wire + old.collective_s)) < 1e-12);
    t.s.net_cpu_s_per_byte = 4e-9;
    rt_sim_result r = rotation(&t, &link);
    assert_true(fabs(r.compute_max_s - (cell + 3 * 2 * cell)) < 1e-12);
    assert_true(fabs(r.epoch_s - (cell + 4 * wire + r.collective_s)) < 1e-12);
    t.s.host_cores = 4; /* one host with a core to spare for the kernel: as fast as before */
    r = rotation(&t, &link);
    assert_true(fabs(r.compute_max_s - 4 * cell) < 1e-12);
    t.s.net_cpu_s_per_byte = 0, t.s.host_cores = 0;
    r = rotation(&t, &link);
    assert_memory_equal(&r, &old, offsetof(rt_sim_result, critical));
    t.s.net_cpu_s_per_byte = -1;
    rt_error err = {0};
    assert_int_equal(rt_sim_rotation(&t.s, &link, &r, &err), -1);
    shape_free(&t);
}

/* The kernel's CPU for a pass is paid for every byte, also for the bytes
 * that a shaped link's bucket lets through at once: the measured CPU per
 * byte is the whole machine's per byte moved, whatever the bucket.  Two
 * nodes of one thread on cores of their own, 20 ms cells, 1 MB blocks on a
 * 1 Gb/s link (8 ms) with a 1 MB bucket that refills between passes, so
 * every pass goes at once: the load (0.5 of each host's core at 4 ns per
 * byte) lasts the 8 ms the bytes take at the link's rate, and steps 1-3 each
 * lose 4 ms.  A model that charged only the time on the wire charged none. */
static void test_burst_bytes_cost_cpu(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 2, 1, 2, cell_uniform, 1e6);
    t.s.rate = 1000 / 20e-3; /* 20 ms cells */
    t.s.net_cpu_s_per_byte = 4e-9;
    rt_sim_link link = {.gbps = 1, .burst_bytes = 1e6};
    double cell = 20e-3, wire = 1e6 * 8 / 1e9;
    rt_sim_result r = rotation(&t, &link);
    assert_true(fabs(r.compute_max_s - (cell + 3 * (cell + wire / 2))) < 1e-9);
    link.burst_bytes = 0; /* the same CPU without the bucket */
    rt_sim_result plain = rotation(&t, &link);
    assert_true(fabs(plain.compute_max_s - r.compute_max_s) < 1e-9);
    shape_free(&t);
}

/* The kernel's work for the links is conserved when it asks for more than
 * the cores: what they cannot do while the links transmit is owed, and the
 * cells wait until it is done.  Two nodes of one thread, each on a core of
 * its own; 1 MB blocks take 8 ms on a 1 Gb/s link, and at 16 ns per byte
 * each host's share of the two links' kernel work is 2 cores on its 1: in
 * each pass's 8 ms its core does 8 ms of the 16, so the 1 ms cells of
 * steps 1-3 each wait the 8 ms on the wire and the 8 ms owed.  The epoch:
 * step 0, three steps of 17 ms, the last pass's 8 ms, and the 8 ms its
 * kernel work is owed after it (the next rotation's cells would wait for
 * them; the statistics' all-reduce, 0.2 us, runs meanwhile).  A model that
 * lost the kernel's work above the cores ran each cell once its link was
 * done (1 + 3 x 9 ms of compute), less CPU than the bytes' measured cost;
 * one that stopped at the last arrival dropped the last pass's 8 ms. */
static void test_link_cpu_above_cores_is_owed(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 2, 1, 2, cell_uniform, 1e6);
    t.s.net_cpu_s_per_byte = 16e-9;
    rt_sim_link link = {.gbps = 1};
    double cell = 1000 / 1e6, wire = 1e6 * 8 / 1e9;
    rt_sim_result r = rotation(&t, &link);
    assert_true(fabs(r.compute_max_s - (cell + 3 * (cell + 2 * wire))) < 1e-12);
    assert_true(r.collective_s < wire);
    assert_true(fabs(r.epoch_s - (cell + 3 * (cell + 2 * wire) + 2 * wire)) < 1e-12);
    assert_true(r.stall_max > 0);
    shape_free(&t);
}

/* The engine runs a step inline when the previous step's cells took less
 * CPU than the bound together (RT_INLINE_STEP_CPU_S); the model decides on
 * the same: the cells' kernel time at the speed of the cores as they ran
 * (busy_core_speed), with their jitter.  One node of 2 threads, 0.9 ms
 * cells (1.8 ms a step alone, under the 2 ms bound): with both cores busy
 * at 0.8 of their speed a step is 2.25 ms of CPU, so every step goes to the
 * threads and pays the 10 ms hand-off; at full speed all run inline.  With
 * cells that vary (cv 0.5) some steps cross the bound though their mean
 * does not. */
static void test_inline_choice_is_on_cpu(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 1, 2, 2, cell_uniform, 1e3);
    t.s.rate = 1000 / 0.9e-3;
    t.s.step_overhead_s = 10e-3, t.s.inline_step_s = 0, t.s.inline_below_s = 2e-3;
    rt_sim_result r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - 4 * 1.8e-3) < 1e-12);
    t.s.busy_core_speed = 0.8;
    r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - 4 * (0.9e-3 / 0.8 + 10e-3)) < 1e-12);
    t.s.busy_core_speed = 0, t.s.cell_cv = 0.5;
    r = rotation(&t, &infinite);
    assert_true(r.epoch_s > 4 * 1.8e-3 + 10e-3);
    shape_free(&t);
}

/* Step 0's cells (block 2w + 1 of worker w in a 1 x 2 x 2 ring) small, the
 * others 0.9 ms at rate 1e6. */
static double cell_small_first(uint32_t w, uint32_t b)
{
    return b == 2 * w + 1 ? 100 : 900;
}

/* An inline step's CPU is its cells' on the one thread that ran them, at
 * the speed of a core with one more busy, not T more: that is the CPU the
 * engine measures after an inline step.  One node of 2 threads on its 2
 * cores (0.8 of their speed when both compute): step 0 (0.2 ms) runs
 * inline, so step 1 does, its 1.8 ms of cells on one core at full speed:
 * 1.8 ms of CPU, under the bound, so steps 2 and 3 run inline too; booked
 * at the two busy cores' speed (2.25 ms) they went to the threads. */
static void test_inline_step_cpu_on_one_core(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 1, 2, 2, cell_small_first, 1e3);
    t.s.step_overhead_s = 10e-3, t.s.inline_step_s = 0, t.s.inline_below_s = 2e-3;
    t.s.busy_core_speed = 0.8;
    rt_sim_result r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - (0.2e-3 + 3 * 1.8e-3)) < 1e-12);
    shape_free(&t);
}

/* A worker that is slow for a whole rotation (worker_cv: the part of the
 * cells' spread that its cells share) makes its neighbour wait: unlike the
 * same spread drawn per cell, it does not average out over the worker's
 * cells.  2 nodes of 1 thread, own cores, an infinite link: without jitter
 * nothing stalls; cell times of cv 0.3 drawn per cell stall 0.145 of the
 * rotation; the same 0.3 shared per worker and rotation 0.178, more than
 * 1.15 times that, for about the same compute.  worker_cv 0 is the old
 * result. */
static void test_slow_worker_makes_neighbours_wait(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 2, 1, 2, cell_uniform, 100);
    rt_sim_result none = rotation(&t, &infinite);
    assert_true(none.stall_max == 0);
    t.s.cell_cv = 0.3;
    rt_sim_result cells = rotation(&t, &infinite);
    t.s.worker_cv = 0.3;
    rt_sim_result workers = rotation(&t, &infinite);
    assert_true(cells.stall_max > 0);
    assert_true(workers.stall_max > 1.15 * cells.stall_max);
    assert_true(fabs(workers.compute_mean_s / cells.compute_mean_s - 1) < 0.1);
    t.s.worker_cv = 0;
    rt_sim_result again = rotation(&t, &infinite);
    assert_memory_equal(&again, &cells, offsetof(rt_sim_result, critical));
    shape_free(&t);
}

/* worker_cv is what the calibrations measure: the spread across workers of
 * a whole rotation's time per unit of work, which holds the cells' own
 * spread averaged over the worker's cells.  So the model's nodes must
 * spread by that much, not by it plus the cells' part drawn again: 8 nodes
 * of one thread, 16 equal cells each (own cores, an infinite link), cells of
 * cv 0.3 and workers of 0.1: a rotation's range of the nodes' compute is
 * 2.85 sd of 8 draws, 2.85 x 0.1 x 16 ms = 4.5 ms (the old rule drew 0.121:
 * 5.5 ms). */
static void test_worker_spread_is_the_measured_one(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 8, 1, 2, cell_uniform, 100);
    t.s.cell_cv = 0.3, t.s.worker_cv = 0.1;
    t.s.jitter_rotations = 400;
    rt_sim_result r = rotation(&t, &infinite);
    double sd = sqrt(log(1 + 0.1 * 0.1)), expected = 2.847 * sd * r.compute_mean_s;
    assert_true(fabs(r.compute_gap_s / expected - 1) < 0.06);
    shape_free(&t);
}

/* The per-worker factor the model draws is reported (rev27 F10): none
 * where the measured worker spread is what the cells' own spread gives
 * averaged over a worker's 16 cells (cell cv 0.4, worker cv 0.05: the
 * factor's variance would be negative), a small one just above that (0.1:
 * f = (16 x 0.00995 - 0.1484) / 15), and all of it where the worker's
 * spread exceeds the cells' (0.5 > 0.4). */
static void test_worker_factor_is_reported(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 8, 1, 2, cell_uniform, 100);
    t.s.cell_cv = 0.4, t.s.jitter_rotations = 2;
    static const double worker[] = {0.05, 0.1, 0.5};
    double c = log(1 + 0.4 * 0.4), v = log(1 + 0.1 * 0.1);
    double expected[] = {0, sqrt(exp((16 * v - c) / 15) - 1), 0.5};
    for (int i = 0; i < 3; i++) {
        t.s.worker_cv = worker[i];
        rt_sim_result r = rotation(&t, &infinite);
        assert_true(fabs(r.worker_factor_cv - expected[i]) < 1e-9);
    }
    t.s.worker_cv = 0; /* no worker spread asked for: none drawn */
    assert_true(rotation(&t, &infinite).worker_factor_cv == 0);
    shape_free(&t);
}

static double cell_by_worker(uint32_t w, uint32_t b)
{
    (void)b;
    return 1000.0 * (w + 1);
}

static double cell_threads_mixed(uint32_t w, uint32_t b)
{
    static const double ms[] = {1, 4, 2, 3};
    (void)b;
    return 1000.0 * ms[w % 4];
}

/* The compute gap is the slowest node's compute less the fastest's: 3
 * nodes whose cells take 1, 2 and 3 ms, 6 steps each: 18 - 6 = 12 ms (the
 * slowest less the mean would be 6); equal cells give 0; with a spread per
 * worker it is the mean of the rotations' gaps, above 0 for equal cells. */
static void test_compute_gap_is_slowest_less_fastest(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 3, 1, 2, cell_by_worker, 100);
    rt_sim_result r = rotation(&t, &infinite);
    assert_true(fabs(r.compute_max_s - 18e-3) < 1e-12);
    assert_true(fabs(r.compute_gap_s - 12e-3) < 1e-12);
    shape_free(&t);
    shape_make(&t, 2, 1, 2, cell_uniform, 100);
    assert_true(rotation(&t, &infinite).compute_gap_s == 0);
    t.s.worker_cv = 0.2;
    r = rotation(&t, &infinite);
    assert_true(r.compute_gap_s > 0.05 * r.compute_mean_s);
    assert_true(r.compute_gap_s < r.compute_max_s);
    shape_free(&t);
    /* as the engine logs a rank's compute, the mean over its threads: nodes
     * of threads with 1 and 4 ms cells and of 2 and 3 ms cells, 8 steps:
     * both 20 ms (their slowest threads' 32 and 24 would give 8) */
    shape_make(&t, 2, 2, 2, cell_threads_mixed, 100);
    r = rotation(&t, &infinite);
    assert_true(fabs(r.compute_max_s - 32e-3) < 1e-12);
    assert_true(fabs(r.compute_gap_s) < 1e-12);
    shape_free(&t);
}

/* A node's compute CPU (compute_cpu_s) is what the engine logs as a rank's
 * "compute CPU": its cells' kernel time at the busy cores' speed, without
 * the waits for a core that its wall compute has.  Four ranks of one
 * thread on a 2-core host, all computing at once: each cell takes twice its
 * kernel time of wall, and its kernel time of CPU (over 0.7 with busy cores
 * slower); on cores of their own both are the kernel time; the slowest
 * node's, as the wall figure. */
static void test_compute_cpu_leaves_out_core_waits(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 4, 1, 2, cell_uniform, 100);
    double own = 8 * 1000 / 1e6; /* B = 8 steps of one cell each */
    rt_sim_result r = rotation(&t, &infinite);
    assert_true(fabs(r.compute_cpu_s - own) < 1e-12);
    assert_true(fabs(r.compute_max_s - own) < 1e-12);
    t.s.host_cores = 2;
    r = rotation(&t, &infinite);
    assert_true(fabs(r.compute_max_s - 2 * own) < 1e-12);
    assert_true(fabs(r.compute_cpu_s - own) < 1e-12);
    t.s.busy_core_speed = 0.7;
    r = rotation(&t, &infinite);
    assert_true(fabs(r.compute_max_s - 2 * own / 0.7) < 1e-12);
    assert_true(fabs(r.compute_cpu_s - own / 0.7) < 1e-12);
    shape_free(&t);
    shape_make(&t, 3, 1, 2, cell_by_worker, 100); /* 6 cells of 1, 2 and 3 ms */
    assert_true(fabs(rotation(&t, &infinite).compute_cpu_s - 18e-3) < 1e-12);
    shape_free(&t);
}

static double cell_node1_only(uint32_t w, uint32_t b)
{
    (void)b;
    return w == 1 ? 1000 : 0;
}

/* A worker with nothing to do frees its share: node 0's cells are empty,
 * so on one shared core node 1 computes alone, at full speed, and node 0
 * waits (for blocks or, with one spare slot, for credits) all the time. */
static void test_idle_workers_free_their_share(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 2, 1, 2, cell_node1_only, 1e3);
    t.s.host_cores = 1;
    rt_sim_result shared = rotation(&t, &infinite);
    t.s.host_cores = 0;
    rt_sim_result own = rotation(&t, &infinite);
    assert_true(fabs(shared.epoch_s - 4 * 1000 / 1e6) < 1e-12);
    assert_true(fabs(shared.epoch_s - own.epoch_s) < 1e-12);
    assert_true(shared.stall_max * shared.epoch_s + shared.credit_wait_s > 0.99 * shared.epoch_s);
    shape_free(&t);
}

/* The same input gives the same bytes of output. */
/* Two nodes, one block each (pipeline 1), 1 ms cells, 8 ms passes: each
 * node's second step waits 8 ms for the other's block.  With wake_speed
 * 0.5 after 1 ms idle that step computes 2 ms instead of 1; a wait shorter
 * than wake_after_s costs nothing, and without waits (an infinite link)
 * the term changes nothing. */
static void test_idle_time_slows_next_step(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 2, 1, 1, cell_uniform, 1e6); /* 8 ms at 1 Gb/s */
    rt_sim_link link = {.gbps = 1};
    rt_sim_result plain = rotation(&t, &link);
    assert_true(fabs(plain.compute_max_s - 2e-3) < 1e-12);
    assert_true(plain.stall_max > 0);
    t.s.wake_speed = 0.5, t.s.wake_after_s = 1e-3;
    rt_sim_result woken = rotation(&t, &link);
    assert_true(fabs(woken.compute_max_s - 3e-3) < 1e-12);
    assert_true(fabs(woken.epoch_s - (plain.epoch_s + 1e-3)) < 1e-12);
    t.s.wake_after_s = 0.1; /* longer than the 8 ms wait */
    rt_sim_result short_wait = rotation(&t, &link);
    assert_true(fabs(short_wait.compute_max_s - 2e-3) < 1e-12);
    t.s.wake_after_s = 0;
    rt_sim_result none = rotation(&t, &infinite);
    assert_true(fabs(none.compute_max_s - 2e-3) < 1e-12);
    assert_true(none.stall_max == 0);
    t.s.wake_speed = 1.5; /* faster after a rest is not a thing */
    rt_sim_result r;
    rt_error err = {0};
    assert_int_equal(rt_sim_rotation(&t.s, &link, &r, &err), -1);
    shape_free(&t);
}

/* A run queue (tick_s): two nodes of one thread on a host of one core,
 * pipeline 1 (step 1 needs the neighbour's pass of step 0), 1 ms cells, a
 * 4 ms tick, an infinitely fast link.  Shared evenly, both cells of step 0
 * end at 2 ms, both passes are in, step 1 ends at 4 ms: no stall.  In
 * turns (the cells run inline, on the orchestrating thread; a pass needs
 * its node's sender thread on the core), the node the draw puts first (X)
 * runs 0-1 ms and hands its pass over; its step 1 blocks for the other's
 * pass, so X gives the core up; Y, whose thread waited for a core since
 * the rotation began (after a collective: no stall, no compute), runs 1-2
 * ms; X's sender (queued at 1 ms) writes at 2 ms, before or after Y's
 * turn, and Y goes on with step 1, 2-3 ms (in either order: its sender
 * then writes at 2 or 3 ms); X, blocked since 1 ms, gets the core at 3 ms
 * (1 to 3 ms stalled: the wait for a core after the arrival is the
 * engine's stall too) and runs 3-4 ms, while Y waits 3-4 ms for X's last
 * pass.  The same 4 ms epoch, stall 2 of 4 ms on X, 1 on Y; compute 1 + 1
 * ms on each, not 2 + 2. */
static void test_run_queue_takes_turns(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 2, 1, 1, cell_uniform, 1e6);
    t.s.host_cores = 1;
    t.s.inline_below_s = 2e-3, t.s.inline_step_s = 0; /* the cells on the orchestrator */
    rt_sim_result shared = rotation(&t, &infinite);
    assert_true(fabs(shared.epoch_s - 4e-3) < 1e-12);
    assert_true(shared.stall_max == 0);
    assert_true(fabs(shared.compute_mean_s - 4e-3) < 1e-12);
    t.s.tick_s = 4e-3;
    rt_sim_result r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - 4e-3) < 1e-12);
    assert_true(fabs(r.stall_max - 0.5) < 1e-9);
    assert_true(fabs(r.stall_mean - (0.5 + 0.25) / 2) < 1e-9);
    assert_true(fabs(r.compute_max_s - 2e-3) < 1e-12);
    assert_true(fabs(r.compute_mean_s - 2e-3) < 1e-12);
    t.s.host_cores = 0; /* a run queue needs shared cores: else each node has its own */
    r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - 2e-3) < 1e-12);
    t.s.host_cores = 1, t.s.tick_s = -1;
    rt_error err = {0};
    assert_int_equal(rt_sim_rotation(&t.s, &infinite, &r, &err), -1);
    shape_free(&t);
}

/* lda 8 x 1 on 2 cores in small: 8 nodes of one thread on a host of 2
 * cores, an all-reduce after every step (free on an infinitely fast link,
 * so all nodes start each step together), cells run inline (on the
 * orchestrating thread: under the 2 ms bound).  Shared evenly, every cell
 * of a step takes 4 cells' time.  With cells much shorter than the tick,
 * the 8 turns go 2 at a time: a step still takes 4 cells (the cores never
 * idle), but each node computes for 1 cell of it and waits for its turn
 * outside its compute (the pass after the all-reduce needs its thread on a
 * core; its arrivals are in, so that is no stall either).  With cells much
 * longer than the tick (not inline: on the worker threads), the turns of a
 * tick each converge to the even sharing. */
static void test_run_queue_limits(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 8, 1, 2, cell_uniform, 1e6);
    uint32_t B = 16;
    double cell = 1000 / 1e6;
    t.s.host_cores = 2, t.s.step_reduce_bytes = 800;
    t.s.inline_below_s = 2e-3, t.s.inline_step_s = 0;
    rt_sim_result shared = rotation(&t, &infinite);
    assert_true(fabs(shared.epoch_s - B * cell * 4) < 1e-12);
    assert_true(fabs(shared.compute_mean_s - B * cell * 4) < 1e-12);
    t.s.tick_s = 100 * cell; /* cells << tick */
    rt_sim_result r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - B * cell * 4) < 1e-9);
    assert_true(fabs(r.compute_mean_s - B * cell) < 1e-9);
    assert_true(r.stall_max == 0);
    t.s.rate = 1e6 / 100; /* 100 ms cells */
    t.s.tick_s = 0;
    shared = rotation(&t, &infinite);
    t.s.tick_s = 1e-3; /* cells >> tick */
    r = rotation(&t, &infinite);
    assert_true(fabs(shared.epoch_s - B * 0.4) < 1e-9);
    assert_true(fabs(r.epoch_s - shared.epoch_s) / shared.epoch_s < 0.01);
    assert_true(fabs(r.compute_mean_s - shared.compute_mean_s) / shared.compute_mean_s < 0.02);
    assert_true(r.stall_max < 0.01);
    shape_free(&t);
}

/* Leaving a step's collective in turns (rt_sim_shape.leave_tick_s): 8
 * nodes of one thread on a host of 2 cores, an all-reduce after every step
 * (free on an infinitely fast link), 1 ms cells.  Shared evenly, every
 * cell takes 4 ms and a step 4 ms.  In turns, after each step's all-reduce
 * the nodes go 2 at a time, each pair when the cells of the one before
 * end: a step still takes 4 ms (the cores never idle), but a cell takes
 * 1 ms of its node's time; the rotation's first step starts together (no
 * step's all-reduce before it).  Whatever the order drawn, the passes are
 * in before they are needed (pipeline 2): no stall.  The tick (100 ms) is
 * past the rotation, so it lets nobody in early. */
static void test_leave_in_turns_compute(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 8, 1, 2, cell_uniform, 1e6);
    uint32_t B = 16;
    t.s.host_cores = 2, t.s.step_reduce_bytes = 800;
    rt_sim_result shared = rotation(&t, &infinite);
    assert_true(fabs(shared.epoch_s - B * 4e-3) < 1e-12);
    assert_true(fabs(shared.compute_mean_s - B * 4e-3) < 1e-12);
    t.s.leave_tick_s = 0.1;
    rt_sim_result r = rotation(&t, &infinite);
    assert_true(fabs(r.epoch_s - B * 4e-3) < 1e-12);
    assert_true(fabs(r.compute_mean_s - (4e-3 + (B - 1) * 1e-3)) < 1e-12);
    assert_true(r.stall_max == 0);
    t.s.host_cores = 8; /* a core for every thread: all go at once */
    shared = rotation(&t, &infinite);
    assert_true(fabs(shared.epoch_s - B * 1e-3) < 1e-12);
    assert_true(fabs(shared.compute_mean_s - B * 1e-3) < 1e-12);
    t.s.host_cores = 2, t.s.leave_tick_s = -1;
    rt_error err = {0};
    assert_int_equal(rt_sim_rotation(&t.s, &infinite, &r, &err), -1);
    shape_free(&t);
}

/* The sender's turn: 2 nodes of 2 threads, each on a host of 1 core,
 * pipeline 2 with 2 spare slots (no credit waits), 1 ms cells (a step
 * computes 2 ms), blocks of 1 ms on the wire, an all-reduce of r after
 * every step.  Shared evenly, a pass goes at its step's release R_k and
 * is in 1 ms later, long before step k + 2: the rotation is 8 steps of
 * 2 + r, and the last block's 1 ms home is the only stall.  In turns, the
 * sender that a release wakes finds the core taken by its node's next
 * cells and writes when they end, 2 ms later: the block of step k is in
 * at R_k + 3 > R_{k+1} = R_k + 2 + r, so steps 2, 4 and 6 wait 1 - r for
 * it (their senders write while their nodes wait, but the link is busy
 * until the block before is out, so their blocks come 1 ms after: odd
 * steps wait for nothing), and the last block comes 2 - r after the last
 * release: R_0 = 2 + r, R_2k = R_2k-2 + 5 + r, epoch R_6 + 4 + e. */
static void test_leave_in_turns_sender(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 2, 2, 2, cell_uniform, 125000);
    t.s.host_cores = 1, t.s.nodes_per_host = 1;
    t.s.spare_slots = 2, t.s.step_reduce_bytes = 800;
    rt_sim_link link = {.gbps = 1}; /* 125000 bytes: 1 ms */
    double r = rt_sim_allreduce_s(&link, 2, 800, RT_SIM_TREE);
    double e = rt_sim_allreduce_s(&link, 2, 8.0 * 3, RT_SIM_TREE);
    rt_sim_result shared = rotation(&t, &link);
    assert_true(fabs(shared.epoch_s - (8 * (2e-3 + r) + 1e-3 + e)) < 1e-12);
    assert_true(fabs(shared.stall_max - 1e-3 / shared.epoch_s) < 1e-9);
    t.s.leave_tick_s = 0.1;
    rt_sim_result turns = rotation(&t, &link);
    assert_true(fabs(turns.epoch_s - (21e-3 + 4 * r + e)) < 1e-12);
    assert_true(fabs(turns.stall_max - (5e-3 - 4 * r) / turns.epoch_s) < 1e-9);
    assert_true(fabs(turns.stall_mean - turns.stall_max) < 1e-12);
    shape_free(&t);
}

static void test_deterministic(void **state)
{
    (void)state;
    test_shape t;
    shape_make(&t, 5, 3, 3, cell_skewed, 3e5);
    t.s.step_reduce_bytes = 800;
    t.s.cell_cv = 0.2, t.s.worker_cv = 0.1;
    rt_sim_link link = {.gbps = 2.5, .latency_s = 3e-5, .overhead_s = 4e-6};
    rt_sim_result a = rotation(&t, &link), b = rotation(&t, &link);
    assert_memory_equal(&a, &b, offsetof(rt_sim_result, critical));
    assert_string_equal(a.critical, b.critical);
    t.s.host_cores = 4, t.s.nodes_per_host = 2; /* and with cores shared, and slower */
    t.s.busy_core_speed = 0.8, t.s.net_cpu_s_per_byte = 2e-9;
    t.s.wake_speed = 0.7, t.s.wake_after_s = 1e-4;
    a = rotation(&t, &link), b = rotation(&t, &link);
    assert_memory_equal(&a, &b, offsetof(rt_sim_result, critical));
    t.s.tick_s = 4e-3; /* and with a run queue, its order drawn */
    a = rotation(&t, &link), b = rotation(&t, &link);
    assert_memory_equal(&a, &b, offsetof(rt_sim_result, critical));
    t.s.tick_s = 0, t.s.leave_tick_s = 4e-3; /* and leaving in turns, their order drawn */
    a = rotation(&t, &link), b = rotation(&t, &link);
    assert_memory_equal(&a, &b, offsetof(rt_sim_result, critical));
    shape_free(&t);
}

/* A measured step's cost leaves out the span its visits waited for a core:
 * four 1 ms visits on two cores, two after the other two, in a step of
 * 2.3 ms cost 0.3 ms (0.1 before the first, 0.2 after the last), not the
 * 1.3 ms beyond the slowest visit; a visit left from an earlier step is
 * not this step's, and a step without one costs nothing measured. */
static void test_step_rest_leaves_out_core_waits(void **state)
{
    (void)state;
    const double start[] = {10.1e-3, 10.1e-3, 11.1e-3, 11.1e-3};
    const double end[] = {11.1e-3, 11.1e-3, 12.1e-3, 12.1e-3};
    assert_float_equal(rt_sim_step_rest(10e-3, 12.3e-3, start, end, 4), 0.3e-3, 1e-12);
    const double stale_start[] = {10.1e-3, 5e-3}, stale_end[] = {11.1e-3, 6e-3};
    assert_float_equal(rt_sim_step_rest(10e-3, 11.2e-3, stale_start, stale_end, 2), 0.2e-3, 1e-12);
    assert_float_equal(rt_sim_step_rest(10e-3, 11e-3, stale_start + 1, stale_end + 1, 1), 0, 0);
}

static void test_bad_shape(void **state)
{
    (void)state;
    rt_sim_shape s = {.nodes = 0, .threads = 1, .pipeline = 2};
    rt_sim_result r;
    rt_error err = {0};
    assert_int_equal(rt_sim_rotation(&s, &infinite, &r, &err), -1);
    assert_int_equal(err.code, RT_EXIT_INPUT);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_infinite_link_is_compute),
        cmocka_unit_test(test_one_node_sums_slowest_cells),
        cmocka_unit_test(test_compute_free_is_transfer_bound),
        cmocka_unit_test(test_step_collectives_can_dominate),
        cmocka_unit_test(test_burst_saves_one_bucket),
        cmocka_unit_test(test_tiny_steps_run_inline),
        cmocka_unit_test(test_jitter_costs_time_and_stall),
        cmocka_unit_test(test_shared_cores_stretch_compute),
        cmocka_unit_test(test_idle_workers_free_their_share),
        cmocka_unit_test(test_busy_cores_compute_slower),
        cmocka_unit_test(test_link_cpu_takes_cores),
        cmocka_unit_test(test_burst_bytes_cost_cpu),
        cmocka_unit_test(test_link_cpu_above_cores_is_owed),
        cmocka_unit_test(test_inline_choice_is_on_cpu),
        cmocka_unit_test(test_inline_step_cpu_on_one_core),
        cmocka_unit_test(test_slow_worker_makes_neighbours_wait),
        cmocka_unit_test(test_compute_gap_is_slowest_less_fastest),
        cmocka_unit_test(test_worker_spread_is_the_measured_one),
        cmocka_unit_test(test_worker_factor_is_reported),
        cmocka_unit_test(test_idle_time_slows_next_step),
        cmocka_unit_test(test_run_queue_takes_turns),
        cmocka_unit_test(test_run_queue_limits),
        cmocka_unit_test(test_leave_in_turns_compute),
        cmocka_unit_test(test_leave_in_turns_sender),
        cmocka_unit_test(test_compute_cpu_leaves_out_core_waits),
        cmocka_unit_test(test_deterministic),
        cmocka_unit_test(test_step_rest_leaves_out_core_waits),
        cmocka_unit_test(test_bad_shape),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
