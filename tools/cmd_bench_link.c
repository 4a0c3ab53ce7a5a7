/*
 * cmd_bench_link.c - `rotor bench-link`: latency and bandwidth of the ring
 * pass (rt_transport_pass), printed like perftest's ib_write_lat/ib_write_bw.
 *
 * Two ranks (rotor launch -n 2, mpirun, srun, or --rank/--size + hostfile).
 * Rank 0 starts with 3 blocks in a 4-slot window, rank 1 with none; both
 * windows have slots of --max-size bytes.  Blocks obey the slot discipline:
 * each rank passes blocks on in the order they arrived.
 *   latency:   one block bounces 0 -> 1 -> 0, `size` bytes each way;
 *              one-way latency = round trip / 2 (as ib_write_lat reports).
 *   bandwidth: rank 0 keeps all 3 blocks in flight with `size` bytes; rank 1
 *              returns each at once with 0 bytes.  BW = bytes / elapsed.
 *   allreduce: (--test allreduce, any number of ranks) the time of one
 *              all-reduce of `size` bytes of int64, back to back, with the
 *              tree collectives or (--collectives star) through rank 0.
 * Rank 0 prints the tables (or one JSON object with --json).
 */
#define _GNU_SOURCE
#include "tools/commands.h"
#include "tools/tuning_env.h"
#include "engine/engine.h"
#include "tools/link_opts.h"

#include <stdlib.h>
#include <string.h>

#define N_SLOTS 4
#define N_BLOCKS 3

enum { TEST_LAT = 1, TEST_BW = 2, TEST_BOTH = 3, TEST_ALLREDUCE = 4 };

typedef struct bench_opts {
    link_opts link;
    int rank, size; /* -1 = from the environment */
    uint64_t min_size, max_size;
    int iters; /* 0 = by size */
    int json, do_lat, do_bw, do_allreduce;
    int tests;       /* TEST_* */
    int collectives; /* rt_collectives */
} bench_opts;

typedef struct lat_row {
    size_t bytes;
    int iters;
    double t_min, t_typ, t_avg, t_max; /* usec, one-way */
} lat_row;

typedef struct bw_row {
    size_t bytes;
    int iters;
    double mb_s, mib_s;
} bw_row;

/* FIFO of slots holding blocks, in the order they must leave. */
typedef struct slot_fifo {
    uint32_t s[N_SLOTS];
    int head, count;
} slot_fifo;

static void fifo_push(slot_fifo *f, uint32_t slot)
{
    f->s[(f->head + f->count) % N_SLOTS] = slot;
    f->count++;
}

static uint32_t fifo_pop(slot_fifo *f)
{
    uint32_t s = f->s[f->head];
    f->head = (f->head + 1) % N_SLOTS;
    f->count--;
    return s;
}

static const rt_opt_choice bench_tests[] = {{"lat", TEST_LAT},
                                            {"bw", TEST_BW},
                                            {"both", TEST_BOTH},
                                            {"allreduce", TEST_ALLREDUCE},
                                            {NULL, 0}};
static const rt_opt_choice collective_kinds[] = {
    {"tree", RT_COLLECTIVES_TREE}, {"star", RT_COLLECTIVES_STAR}, {NULL, 0}};

static const rt_opt bench_options[] = {
    RT_U64_OPT("min-size", 0, bench_opts, min_size, "BYTES", "4096", 1, 1 << 30, 0,
               "smallest block"),
    RT_U64_OPT("max-size", 0, bench_opts, max_size, "BYTES", "64M", 1, 1 << 30, 0,
               "largest block; each rank registers 4 slots of this size"),
    RT_INT_OPT("iters", 0, bench_opts, iters, "N", NULL, 1, 100000000, 0,
               "iterations per size (default: 256 MiB / size, 5..1000)"),
    RT_ENUM_OPT(
        "test", 0, bench_opts, tests, bench_tests, "both",
        "which table(s); allreduce times one all-reduce of each size on any number of ranks"),
    RT_ENUM_OPT("collectives", 0, bench_opts, collectives, collective_kinds, "tree",
                "how collectives travel"),
    RT_FLAG_OPT("json", 0, bench_opts, json, "one JSON object on stdout instead of the tables"),
    RT_INT_OPT("rank", 0, bench_opts, rank, "R", NULL, 0, 1048575, 0,
               "this process's rank, when not started by a launcher"),
    RT_INT_OPT("size", 0, bench_opts, size, "P", NULL, 1, 1048576, 0,
               "the number of processes (with --rank)"),
    {0}};

/* 0, 1 (help printed) or -1. */
static int parse(int argc, char **argv, bench_opts *o, rt_error *err)
{
    memset(o, 0, sizeof(*o));
    o->rank = o->size = -1;
    link_opts_init(&o->link, 60);
    rt_opt_group g[] = {{.opts = bench_options, .dest = o},
                        {.title = "transport options", .opts = link_options, .dest = &o->link}};
    int rc = rt_opts_parse(&rotor_doc_bench_link, g, 2, argc, argv, NULL, err);
    if (rc)
        return rc;
    link_opts_finish(&o->link);
    o->link.group.rank = o->rank;
    o->link.group.size = o->size;
    o->do_lat = (o->tests & TEST_LAT) != 0;
    o->do_bw = (o->tests & TEST_BW) != 0;
    o->do_allreduce = o->tests == TEST_ALLREDUCE;
    o->link.transport.collectives = (rt_collectives)o->collectives;
    if (o->min_size > o->max_size)
        return rt_fail(err, RT_EXIT_INPUT, "--min-size is larger than --max-size");
    return 0;
}

static int iters_for(const bench_opts *o, size_t bytes)
{
    if (o->iters > 0)
        return o->iters;
    uint64_t n = (256ull << 20) / bytes;
    return n < 5 ? 5 : n > 1000 ? 1000 : (int)n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* Pass the oldest block this rank holds; its slot joins the arrivals later. */
static int pass_front(rt_transport *t, slot_fifo *f, size_t len, uint32_t tag, rt_error *err)
{
    if (f->count == 0)
        return rt_fail(err, RT_EXIT_RUNTIME, "bench-link: no block to pass (internal error)");
    return rt_transport_pass(t, fifo_pop(f), len, tag, tag, err);
}

static int await(rt_transport *t, slot_fifo *f, rt_error *err)
{
    rt_arrival a;
    int got = rt_transport_wait_arrival(t, &a, -1, err);
    if (got <= 0)
        return got < 0 ? -1 : rt_fail(err, RT_EXIT_RUNTIME, "bench-link: no arrival");
    fifo_push(f, a.slot);
    return 0;
}

/* Ping-pong `iters` round trips of `bytes`; rank 0 fills row. */
static int run_latency(rt_transport *t, slot_fifo *f, size_t bytes, int iters, lat_row *row,
                       rt_error *err)
{
    int rank = rt_transport_rank(t);
    double *rtt = rank == 0 ? malloc((size_t)iters * sizeof(double)) : NULL;
    if (rank == 0 && !rtt)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    int rc = 0;
    for (int i = -2; i < iters && rc == 0; i++) { /* two warm-up rounds */
        double t0 = rt_now();
        if (rank == 0)
            rc = pass_front(t, f, bytes, (uint32_t)i, err) || await(t, f, err);
        else
            rc = await(t, f, err) || pass_front(t, f, bytes, (uint32_t)i, err);
        if (rank == 0 && i >= 0)
            rtt[i] = (rt_now() - t0) * 1e6 / 2;
    }
    if (rc == 0 && rank == 0) {
        double sum = 0;
        for (int i = 0; i < iters; i++)
            sum += rtt[i];
        qsort(rtt, (size_t)iters, sizeof(double), cmp_double);
        *row = (lat_row){.bytes = bytes,
                         .iters = iters,
                         .t_min = rtt[0],
                         .t_typ = rtt[iters / 2],
                         .t_avg = sum / iters,
                         .t_max = rtt[iters - 1]};
    }
    free(rtt);
    return rc ? -1 : 0;
}

/* Stream `iters` blocks of `bytes` from rank 0 to 1 (returned empty). */
static int run_bandwidth(rt_transport *t, slot_fifo *f, size_t bytes, int iters, bw_row *row,
                         rt_error *err)
{
    if (rt_transport_barrier(t, err))
        return -1;
    double t0 = rt_now();
    if (rt_transport_rank(t) == 0) {
        int sent = 0, back = 0;
        while (back < iters) {
            while (sent < iters && f->count > 0) {
                if (pass_front(t, f, bytes, (uint32_t)sent, err))
                    return -1;
                sent++;
            }
            if (await(t, f, err))
                return -1;
            back++;
        }
        double s = rt_now() - t0;
        double total = (double)bytes * iters;
        *row = (bw_row){.bytes = bytes,
                        .iters = iters,
                        .mb_s = total / s / 1e6,
                        .mib_s = total / s / (1024.0 * 1024.0)};
    } else {
        for (int i = 0; i < iters; i++)
            if (await(t, f, err) || pass_front(t, f, 0, (uint32_t)i, err))
                return -1;
    }
    return 0;
}

/* Median over 5 repeats of the mean time of `iters` back-to-back
 * all-reduces of `bytes` (int64 elements); rank 0 fills row (t_min = best
 * repeat). */
static int run_allreduce(rt_transport *t, size_t bytes, int iters, lat_row *row, rt_error *err)
{
    enum { REPEATS = 5 };
    size_t n = bytes / sizeof(int64_t) ? bytes / sizeof(int64_t) : 1;
    int64_t *v = calloc(n, sizeof(int64_t));
    if (!v)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    double rep[REPEATS];
    int rc = rt_transport_allreduce_i64(t, v, n, err); /* warm-up */
    for (int k = 0; k < REPEATS && rc == 0; k++) {
        rc = rt_transport_barrier(t, err);
        double t0 = rt_now();
        for (int i = 0; i < iters && rc == 0; i++)
            rc = rt_transport_allreduce_i64(t, v, n, err);
        rep[k] = (rt_now() - t0) * 1e6 / iters;
    }
    free(v);
    if (rc)
        return -1;
    qsort(rep, REPEATS, sizeof(double), cmp_double);
    double sum = 0;
    for (int k = 0; k < REPEATS; k++)
        sum += rep[k];
    *row = (lat_row){.bytes = n * sizeof(int64_t),
                     .iters = iters,
                     .t_min = rep[0],
                     .t_typ = rep[REPEATS / 2],
                     .t_avg = sum / REPEATS,
                     .t_max = rep[REPEATS - 1]};
    return 0;
}

static void print_allreduce(const bench_opts *o, const rt_transport *t, const lat_row *ar,
                            int nrows)
{
    const char *algo = o->link.transport.collectives == RT_COLLECTIVES_STAR ? "star" : "tree";
    if (o->json) {
        printf("{\"transport\": \"%s\", \"ranks\": %d, \"collectives\": \"%s\", "
               "\"allreduce\": [",
               rt_transport_name(t), rt_transport_size(t), algo);
        for (int i = 0; i < nrows; i++)
            printf("%s\n  {\"bytes\": %zu, \"iterations\": %d, \"t_min_usec\": %.2f, "
                   "\"t_typical_usec\": %.2f, \"t_max_usec\": %.2f}",
                   i ? "," : "", ar[i].bytes, ar[i].iters, ar[i].t_min, ar[i].t_typ, ar[i].t_max);
        printf("]}\n");
    } else {
        printf(" all-reduce (int64), transport %s, %d ranks, %s collectives\n",
               rt_transport_name(t), rt_transport_size(t), algo);
        printf(" %-10s %-12s %-12s %-16s %-12s\n", "#bytes", "#iterations", "t_min[usec]",
               "t_typical[usec]", "t_max[usec]");
        for (int i = 0; i < nrows; i++)
            printf(" %-10zu %-12d %-12.2f %-16.2f %-12.2f\n", ar[i].bytes, ar[i].iters, ar[i].t_min,
                   ar[i].t_typ, ar[i].t_max);
    }
    fflush(stdout);
}

static void print_tables(const bench_opts *o, const rt_transport *t, const lat_row *lat,
                         const bw_row *bw, int nrows)
{
    const char *dash = "-----------------------------------------------------------------------"
                       "----------------";
    if (o->json) {
        printf("{\"transport\": \"%s\", \"ranks\": %d, \"slots\": %d, \"blocks_in_flight\": %d",
               rt_transport_name(t), rt_transport_size(t), N_SLOTS, N_BLOCKS);
        if (o->do_lat) {
            printf(",\n \"latency\": [");
            for (int i = 0; i < nrows; i++)
                printf("%s\n  {\"bytes\": %zu, \"iterations\": %d, \"t_min_usec\": %.2f, "
                       "\"t_typical_usec\": %.2f, \"t_avg_usec\": %.2f, \"t_max_usec\": %.2f}",
                       i ? "," : "", lat[i].bytes, lat[i].iters, lat[i].t_min, lat[i].t_typ,
                       lat[i].t_avg, lat[i].t_max);
            printf("]");
        }
        if (o->do_bw) {
            printf(",\n \"bandwidth\": [");
            for (int i = 0; i < nrows; i++)
                printf("%s\n  {\"bytes\": %zu, \"iterations\": %d, \"bw_mb_per_sec\": %.2f, "
                       "\"bw_mib_per_sec\": %.2f}",
                       i ? "," : "", bw[i].bytes, bw[i].iters, bw[i].mb_s, bw[i].mib_s);
            printf("]");
        }
        printf("}\n");
        return;
    }
    if (o->do_lat) {
        printf("%s\n", dash);
        printf("                    RDMA-style ring pass latency: rotor bench-link\n");
        printf(" transport: %s   ranks: %d   one-way = round trip / 2\n", rt_transport_name(t),
               rt_transport_size(t));
        printf("%s\n", dash);
        printf(" %-10s %-12s %-12s %-16s %-12s %-12s\n", "#bytes", "#iterations", "t_min[usec]",
               "t_typical[usec]", "t_avg[usec]", "t_max[usec]");
        for (int i = 0; i < nrows; i++)
            printf(" %-10zu %-12d %-12.2f %-16.2f %-12.2f %-12.2f\n", lat[i].bytes, lat[i].iters,
                   lat[i].t_min, lat[i].t_typ, lat[i].t_avg, lat[i].t_max);
        printf("%s\n", dash);
    }
    if (o->do_bw) {
        printf("%s\n", dash);
        printf("                    RDMA-style ring pass bandwidth: rotor bench-link\n");
        printf(" transport: %s   ranks: %d   %d blocks in flight, one-way\n", rt_transport_name(t),
               rt_transport_size(t), N_BLOCKS);
        printf("%s\n", dash);
        printf(" %-10s %-12s %-20s %-20s\n", "#bytes", "#iterations", "BW average[MB/sec]",
               "BW average[MiB/sec]");
        for (int i = 0; i < nrows; i++)
            printf(" %-10zu %-12d %-20.2f %-20.2f\n", bw[i].bytes, bw[i].iters, bw[i].mb_s,
                   bw[i].mib_s);
        printf("%s\n", dash);
    }
    fflush(stdout);
}

static int bench_allreduce(const bench_opts *o, rt_transport *t, rt_error *err)
{
    int nrows = 0;
    for (uint64_t b = o->min_size; b <= o->max_size; b *= 2)
        nrows++;
    lat_row *ar = calloc((size_t)nrows, sizeof(lat_row));
    int rc = ar ? 0 : rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    int i = 0;
    for (uint64_t b = o->min_size; rc == 0 && b <= o->max_size; b *= 2, i++)
        rc = run_allreduce(t, (size_t)b, o->iters > 0 ? o->iters : 200, &ar[i], err);
    if (rc == 0)
        rc = rt_transport_barrier(t, err);
    if (rc == 0 && rt_transport_rank(t) == 0)
        print_allreduce(o, t, ar, nrows);
    free(ar);
    return rc ? -1 : 0;
}

static int bench(const bench_opts *o, rt_error *err)
{
    rt_group g;
    link_opts link = o->link;
    if (link_opts_join(&link, &g, err))
        return -1;
    if (g.size != 2 && !o->do_allreduce) {
        rt_group_free(&g);
        return rt_fail(err, RT_EXIT_INPUT,
                       "bench-link needs exactly 2 ranks (got %d): rotor launch -n 2 -- rotor "
                       "bench-link",
                       g.size);
    }
    rt_transport_config tc = link.transport;
    rt_env_tune_transport(&tc);
    tc.rank = g.rank;
    tc.size = g.size;
    tc.peers = g.peers;
    tc.slot_bytes = o->do_allreduce ? 4096 : (size_t)o->max_size;
    tc.n_slots = N_SLOTS;
    tc.initial_occupied = g.rank == 0 ? N_BLOCKS : 0;
    rt_transport *t = NULL;
    int rc = rt_transport_open(&tc, &t, err);
    rt_group_free(&g);
    if (rc)
        return -1;
    if (o->do_allreduce) {
        rc = bench_allreduce(o, t, err);
        rt_transport_close(t);
        return rc;
    }
    slot_fifo f = {.head = 0, .count = 0};
    for (uint32_t s = 0; s < tc.initial_occupied; s++) {
        fifo_push(&f, s);
        memset(rt_transport_slot(t, s), 0xA5, (size_t)o->max_size);
    }
    int nrows = 0;
    for (uint64_t b = o->min_size; b <= o->max_size; b *= 2)
        nrows++;
    lat_row *lat = calloc((size_t)nrows, sizeof(lat_row));
    bw_row *bw = calloc((size_t)nrows, sizeof(bw_row));
    if (!lat || !bw)
        rc = rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    int i = 0;
    for (uint64_t b = o->min_size; rc == 0 && b <= o->max_size; b *= 2, i++) {
        if (o->do_lat)
            rc = run_latency(t, &f, (size_t)b, iters_for(o, (size_t)b), &lat[i], err);
        if (rc == 0 && o->do_bw)
            rc = run_bandwidth(t, &f, (size_t)b, iters_for(o, (size_t)b), &bw[i], err);
    }
    if (rc == 0)
        rc = rt_transport_flush(t, err) || rt_transport_barrier(t, err);
    if (rc == 0 && rt_transport_rank(t) == 0)
        print_tables(o, t, lat, bw, nrows);
    free(lat);
    free(bw);
    rt_transport_close(t);
    return rc ? -1 : 0;
}

int cmd_bench_link(int argc, char **argv)
{
    bench_opts o;
    rt_error err = {0};
    int rc = parse(argc, argv, &o, &err);
    if (rc == 1)
        return RT_EXIT_OK;
    if (rc || bench(&o, &err)) {
        fprintf(stderr, "rotor: error: bench-link: %s\n", err.msg);
        return err.code ? err.code : RT_EXIT_RUNTIME;
    }
    return RT_EXIT_OK;
}
