/* sim.c - see sim.h. */
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* verbs/collectives.c exchanges in chunks of this many bytes. */
#define SIM_EXCHANGE_CHUNK (16.0 * 1024)
/* ... and reduce-scatters vectors at least this long. */
#define SIM_HALVING_MIN_BYTES (64.0 * 1024)

static double wire_s(const rt_sim_link *l, double bytes)
{
    return l->gbps > 0 ? bytes * 8 / (l->gbps * 1e9) : 0;
}

/* One message of `bytes` between two nodes, sent while the peer sends
 * its own (full duplex): overhead per chunk, the wire time, one latency. */
static double exchange_s(const rt_sim_link *l, double bytes)
{
    double chunks = bytes > SIM_EXCHANGE_CHUNK ? ceil(bytes / SIM_EXCHANGE_CHUNK) : 1;
    return chunks * l->overhead_s + wire_s(l, bytes) + l->latency_s;
}

double rt_sim_allreduce_s(const rt_sim_link *l, uint32_t nodes, double bytes,
                          rt_sim_collectives algo)
{
    if (nodes < 2 || bytes <= 0)
        return 0;
    if (algo == RT_SIM_STAR) /* P - 1 messages into rank 0, then P - 1 out */
        return 2 * (l->latency_s + (nodes - 1) * (l->overhead_s + wire_s(l, bytes)));
    uint32_t pof2 = 1, rounds = 0;
    while (pof2 * 2 <= nodes)
        pof2 *= 2, rounds++;
    double t = pof2 < nodes ? 2 * exchange_s(l, bytes) : 0; /* fold and unfold the pairs */
    if (bytes < SIM_HALVING_MIN_BYTES || bytes / 8 < pof2)
        return t + rounds * exchange_s(l, bytes);
    double part = bytes; /* reduce-scatter halves, all-gather doubles back */
    for (uint32_t j = 0; j < rounds; j++) {
        part /= 2;
        t += 2 * exchange_s(l, part);
    }
    return t;
}

/* One node's timeline. */
typedef struct sim_node {
    double t;       /* current time of the node's orchestrator */
    double stall;   /* time waiting for arrivals */
    double credit;  /* time blocked waiting for credits */
    double compute; /* sum of step compute times */
    double link;    /* when the node's outgoing link is free */
} sim_node;

/* Per-node timelines of one rotation. */
typedef struct sim_state {
    uint32_t N, T, W, B, c;
    sim_node *node; /* N */
    double *arrive; /* N x B: arrival k at node n (pass k of node n - 1) */
    double *sent;   /* N x B: time pass k of node n finished on the wire */
} sim_state;

static void state_free(sim_state *s)
{
    free(s->node);
    free(s->arrive);
    free(s->sent);
}

static int state_init(sim_state *s, const rt_sim_shape *sh, rt_error *err)
{
    memset(s, 0, sizeof(*s));
    s->N = sh->nodes, s->T = sh->threads, s->c = sh->pipeline;
    s->W = s->N * s->T, s->B = s->c * s->W;
    s->node = calloc(s->N, sizeof(sim_node));
    s->arrive = calloc((size_t)s->N * s->B, sizeof(double));
    s->sent = calloc((size_t)s->N * s->B, sizeof(double));
    if (!s->node || !s->arrive || !s->sent) {
        state_free(s);
        return rt_fail(err, RT_EXIT_RUNTIME, "simulate: out of memory");
    }
    return 0;
}

static double compute_scale(const rt_sim_shape *sh, uint32_t W)
{
    return sh->host_cores > 0 && W > sh->host_cores ? W / sh->host_cores : 1.0;
}

/* Step s on node n: wait for the block needed now, then the slowest local
 * worker's cell. */
static void node_step(sim_state *s, const rt_sim_shape *sh, uint32_t n, uint32_t step,
                      double *worker_sum)
{
    if (s->N > 1 && step >= s->c) { /* arrivals 0 .. step - c must be in */
        double a = s->arrive[(size_t)n * s->B + (step - s->c)];
        if (a > s->node[n].t) {
            s->node[n].stall += a - s->node[n].t;
            s->node[n].t = a;
        }
    }
    double slowest = 0, scale = compute_scale(sh, s->W);
    for (uint32_t th = 0; th < s->T; th++) {
        uint32_t w = n * s->T + th;
        uint32_t b = sh->schedule[(size_t)step * s->W + w];
        double dt = sh->rate > 0 ? sh->cell_work[(size_t)w * s->B + b] / sh->rate * scale : 0;
        worker_sum[w] += dt;
        if (dt > slowest)
            slowest = dt;
    }
    s->node[n].compute += slowest;
    s->node[n].t += slowest + sh->step_overhead_s;
}

/* After step k, node n passes the block that worker (n, T-1) just finished. */
static void node_pass(sim_state *s, const rt_sim_shape *sh, const rt_sim_link *l, uint32_t n,
                      uint32_t k)
{
    uint32_t next = (n + 1) % s->N;
    uint32_t spare = sh->spare_slots ? sh->spare_slots : 1;
    if (k >= spare) { /* a slot at `next` frees when its pass k - spare is on the wire */
        double credit = s->sent[(size_t)next * s->B + (k - spare)] + l->latency_s;
        if (credit > s->node[n].t) {
            s->node[n].credit += credit - s->node[n].t;
            s->node[n].t = credit;
        }
    }
    uint32_t w = n * s->T + s->T - 1;
    uint32_t b = sh->schedule[(size_t)k * s->W + w];
    double start = s->node[n].t > s->node[n].link ? s->node[n].t : s->node[n].link;
    double done = start + l->overhead_s + wire_s(l, sh->block_bytes[b]);
    s->node[n].link = done;
    s->sent[(size_t)n * s->B + k] = done;
    s->arrive[(size_t)next * s->B + k] = done + l->latency_s;
}

/* Every node enters; all leave together after the collective. */
static double sync_all(sim_state *s, double cost)
{
    double latest = 0;
    for (uint32_t n = 0; n < s->N; n++)
        if (s->node[n].t > latest)
            latest = s->node[n].t;
    for (uint32_t n = 0; n < s->N; n++)
        s->node[n].t = latest + cost;
    return cost;
}

static const char *critical_of(const rt_sim_result *r, double imbalance_s, double network_s)
{
    double compute_s = r->compute_mean_s;
    if (r->steps_s > compute_s && r->steps_s > network_s && r->steps_s > r->collective_s &&
        r->steps_s > imbalance_s)
        return "steps";
    if (r->collective_s >= compute_s && r->collective_s >= network_s &&
        r->collective_s >= imbalance_s)
        return "collectives";
    if (network_s >= compute_s && network_s >= imbalance_s)
        return r->link_busy_s >= r->latency_s ? "bandwidth" : "latency";
    return imbalance_s > compute_s ? "imbalance" : "compute";
}

static int check_shape(const rt_sim_shape *sh, rt_error *err)
{
    if (sh->nodes < 1 || sh->threads < 1 || sh->pipeline < 1)
        return rt_fail(err, RT_EXIT_INPUT, "simulate: nodes, threads and pipeline must be >= 1");
    if (!sh->cell_work || !sh->block_bytes || !sh->schedule)
        return rt_fail(err, RT_EXIT_INPUT, "simulate: shape without cells or schedule");
    return 0;
}

int rt_sim_rotation(const rt_sim_shape *sh, const rt_sim_link *l, rt_sim_result *out, rt_error *err)
{
    sim_state s;
    memset(out, 0, sizeof(*out));
    if (check_shape(sh, err) || state_init(&s, sh, err))
        return -1;
    double *worker_sum = calloc(s.W, sizeof(double));
    if (!worker_sum) {
        state_free(&s);
        return rt_fail(err, RT_EXIT_RUNTIME, "simulate: out of memory");
    }
    double step_reduce = rt_sim_allreduce_s(l, s.N, sh->step_reduce_bytes, sh->collectives);
    for (uint32_t step = 0; step < s.B; step++) {
        for (uint32_t n = 0; n < s.N; n++)
            node_step(&s, sh, n, step, worker_sum);
        uint32_t every = sh->step_reduce_every ? sh->step_reduce_every : 1;
        if (sh->step_reduce_bytes > 0 && ((step + 1) % every == 0 || step + 1 == s.B))
            out->collective_s += sync_all(&s, step_reduce);
        for (uint32_t n = 0; s.N > 1 && n < s.N; n++)
            node_pass(&s, sh, l, n, step);
    }
    for (uint32_t n = 0; s.N > 1 && n < s.N; n++) { /* the last block comes home */
        double a = s.arrive[(size_t)n * s.B + s.B - 1];
        if (a > s.node[n].t) {
            s.node[n].stall += a - s.node[n].t;
            s.node[n].t = a;
        }
    }
    /* the engine's statistics ([bytes, stall per rank]) and the app's */
    out->collective_s +=
        sync_all(&s, rt_sim_allreduce_s(l, s.N, 8.0 * (s.N + 1), sh->collectives) +
                         rt_sim_allreduce_s(l, s.N, sh->epoch_reduce_bytes, sh->collectives));
    out->epoch_s = s.node[0].t;
    for (uint32_t n = 0; n < s.N; n++) {
        double st = out->epoch_s > 0 ? s.node[n].stall / out->epoch_s : 0;
        out->stall_mean += st / s.N;
        if (st > out->stall_max)
            out->stall_max = st;
        if (s.node[n].compute > out->compute_max_s)
            out->compute_max_s = s.node[n].compute;
        if (s.node[n].credit > out->credit_wait_s)
            out->credit_wait_s = s.node[n].credit;
        double bytes = 0;
        for (uint32_t k = 0; s.N > 1 && k < s.B; k++)
            bytes += sh->block_bytes[sh->schedule[(size_t)k * s.W + n * s.T + s.T - 1]];
        if (bytes > out->bytes_per_link)
            out->bytes_per_link = bytes;
    }
    for (uint32_t w = 0; w < s.W; w++)
        out->compute_mean_s += worker_sum[w] / s.W;
    if (s.N > 1) {
        out->link_busy_s = s.B * l->overhead_s + wire_s(l, out->bytes_per_link);
        out->latency_s = s.B * (l->latency_s + l->overhead_s);
    }
    out->steps_s = s.B * sh->step_overhead_s;
    double imbalance = out->compute_max_s - out->compute_mean_s;
    double network = out->stall_max * out->epoch_s + out->credit_wait_s;
    out->critical = critical_of(out, imbalance, network);
    free(worker_sum);
    state_free(&s);
    return 0;
}
