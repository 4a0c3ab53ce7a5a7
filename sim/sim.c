/* sim.c - see sim.h. */
#include "sim/sim.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/* verbs/collectives.c exchanges in chunks of this many bytes. */
#define SIM_EXCHANGE_CHUNK (16.0 * 1024)
/* ... and reduce-scatters vectors at least this long. */
#define SIM_HALVING_MIN_BYTES (64.0 * 1024)
/* Cell time jitter: rotations averaged by default, and the seed of their
 * draws (fixed: the prediction is deterministic). */
#define SIM_JITTER_ROTATIONS 32
#define SIM_JITTER_SEED 0x5eed5157u
/* The run queue's order of workers that become runnable at one moment
 * (a seed of its own: the jitter's draws stay as they were). */
#define SIM_ORDER_SEED 0x0bde5eedu
/* The order of the threads that a step's collective wakes at once
 * (rt_sim_shape.leave_tick_s; a seed of its own too). */
#define SIM_LEAVE_SEED 0x1ea7e5edu

static double wire_s(const rt_sim_link *l, double bytes)
{
    return l->gbps > 0 ? bytes * 8 / (l->gbps * 1e9) : 0;
}

double rt_sim_step_rest(double step_start, double step_end, const double *visit_start,
                        const double *visit_end, uint32_t n)
{
    double first = INFINITY, last = -INFINITY;
    for (uint32_t i = 0; i < n; i++) {
        if (visit_start[i] < step_start)
            continue;
        first = fmin(first, visit_start[i]);
        last = fmax(last, visit_end[i]);
    }
    if (!isfinite(first))
        return 0;
    double rest = (first - step_start) + (step_end - last);
    return rest > 0 ? rest : 0;
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

/* Where a node's orchestrator is within the rotation (engine.c's
 * run_rotation, in this order). */
typedef enum node_phase {
    PHASE_WAIT,     /* for the arrival the step needs: stall */
    PHASE_COMPUTE,  /* its workers run their cells (ends when the last is done) */
    PHASE_STEP_END, /* the fixed cost of a step */
    PHASE_REDUCE,   /* inside the per-step all-reduce */
    PHASE_PASS,     /* waiting for a credit, then the pass is queued on the link */
    PHASE_HOME,     /* for the rotation's last arrival: stall */
    PHASE_EPOCH,    /* inside the rotation's statistics all-reduce */
    PHASE_DONE
} node_phase;

/* One node's timeline. */
typedef struct sim_node {
    node_phase phase;
    uint32_t step;
    uint32_t busy;      /* its workers with work left in this step */
    double since;       /* when the current phase began */
    double release;     /* PHASE_REDUCE, PHASE_EPOCH: when the collective ends (INFINITY: not
                           every node is in yet) */
    double stall;       /* time waiting for arrivals */
    double credit;      /* time blocked waiting for credits */
    double compute;     /* sum of step compute times */
    double cpu;         /* sum over its steps of their cells' CPU seconds (last_cpu_s) */
    double link;        /* when the node's outgoing link is free */
    double net_until;   /* until when the kernel works for its passes (net_cpu_s_per_byte):
                           as long as their bytes take at the link's rate, the burst's too */
    double step_cost;   /* PHASE_STEP_END: this step's fixed cost */
    int inline_step;    /* this step's cells run on the orchestrating thread */
    double last_cpu_s;  /* CPU seconds of its previous step's cells (< 0: none yet) */
    double compute_end; /* when its last step's compute ended (the rotation's start before) */
    double tokens;      /* the link's token bucket (burst_bytes), as of tokens_at */
    double tokens_at;
    uint32_t inline_steps; /* steps whose cells ran inline (the engine logs the same count) */
    int after_collective;  /* run queue: its orchestrator left a collective and has not had a
                              core since (its pass and its next cells need a turn) */
    uint32_t passes_given; /* run queue, leaving in turns: passes handed to its sender ... */
    uint32_t passes_made;  /* ... and written by it (on their way) */
    /* leaving a step's collective in turns (leave_tick_s): a thread's place in its host's
       order, 0 when it waits for no turn */
    uint64_t leave_key; /* its orchestrator, to leave the collective */
    uint64_t send_key;  /* its sender thread, to write the passes given it (passes_given) */
} sim_node;

/* A worker in its host's run queue (rt_sim_shape.tick_s). */
typedef enum worker_state {
    WORKER_IDLE,    /* no cell, no core */
    WORKER_QUEUED,  /* its cell waits for a core (a thread that woke up for it) */
    WORKER_BEHIND,  /* its cell waits for a core after the tick took it (it ran a slice) */
    WORKER_TURN,    /* its node's orchestrator waits for a core (no work: a turn) */
    WORKER_RUNNING, /* on a core, its cell computing */
    WORKER_HOLDING  /* on a core with nothing to compute: kept for a cell that starts at the
                       same moment, else given up */
} worker_state;

/* The cores that a group of nodes shares.  Busy workers share them
 * equally (processor sharing): each runs at min(1, cores / busy) of a
 * core.  `progress` is the work time a worker busy since the start has
 * done, so a worker whose cell needs x seconds on a core of its own is
 * done when progress reaches its start value + x. */
typedef struct sim_host {
    double cores;
    double all_busy_speed; /* rt_sim_shape.busy_core_speed (1: none) */
    double net_load;       /* cores its transmitting links' kernel work asks for now */
    double net_owed;       /* core-seconds of that work its cores could not do yet (the load
                              above them): owed, the kernel keeps every core until it is done */
    uint32_t busy;
    double progress;
    double next_done; /* least `done_at` of its busy workers (INFINITY: none) */
    uint32_t grants;  /* leaving in turns: waiting threads the tick at leave_granted lets in */
    /* run queue (tick_s > 0): */
    uint32_t slots;   /* workers that can be on its cores at once */
    uint32_t running; /* workers on its cores (running or holding) */
    uint32_t queued;  /* workers waiting for a core (cells and turns) */
} sim_host;

typedef struct sim_state {
    uint32_t N, T, W, B, c, spare, per_host, hosts;
    double now;
    sim_node *node;     /* N */
    sim_host *host;     /* hosts */
    double *done_at;    /* W: host progress at which the worker's cell is done (INFINITY: idle) */
    double *worker_sum; /* W: wall time of the worker's cells */
    double *arrive;     /* N x B: arrival k at node n (INFINITY until its pass is made) */
    double *freed;      /* N x B: when pass k of node n left its slot (ditto) */
    double *wire_start; /* N x B: when pass k of node n started on the wire */
    double *wire_free;  /* N x B: bytes of it that went at once (the link's burst) */
    double *stream_end; /* N x B: bytes node n has passed up to and including pass k */
    double link_load;   /* cores that a transmitting link takes from the hosts of its two ends
                           together (rt_sim_shape.net_cpu_s_per_byte x bytes per second) */
    uint32_t in_collective; /* nodes inside the current collective */
    rt_rng rng;             /* jitter (rt_sim_shape.cell_cv, step_cv) */
    double cell_sigma;      /* of the cells' log-normal factor; 0: none */
    double *worker_factor;  /* W: this rotation's factor of each worker's cells (worker_cv) */
    double step_sigma;      /* of the steps' */
    double step_overhead_s;
    /* run queue (tick_s > 0; off: NULL arrays) */
    double tick;      /* the scheduler's tick (0: processor sharing) */
    double tick_next; /* the next tick */
    /* per thread: W workers (node n's are n x T ...), then N senders (node n's: W + n) */
    uint8_t *state;      /* worker_state (a sender: idle, turn or holding) */
    double *left;        /* work time left of a waiting cell (preempted or not started) */
    double *queued_at;   /* when it joined the queue (first come, first served) */
    uint64_t *queue_key; /* ... and among those that joined at one moment */
    double *run_start;   /* when it got its core */
    rt_rng order_rng;    /* draws queue_key */
    /* leaving a step's collective in turns (leave_tick_s, with processor sharing) */
    double leave_tick; /* 0: off */
    double leave_tick_next, leave_granted;
    rt_rng leave_rng; /* draws leave_key, send_key */
} sim_state;

static void state_free(sim_state *s)
{
    free(s->node);
    free(s->host);
    free(s->done_at);
    free(s->worker_sum);
    free(s->arrive);
    free(s->freed);
    free(s->wire_start);
    free(s->wire_free);
    free(s->stream_end);
    free(s->worker_factor);
    free(s->state);
    free(s->left);
    free(s->queued_at);
    free(s->queue_key);
    free(s->run_start);
}

/* The run queue's arrays, with shared cores and a tick (rt_sim_shape.tick_s). */
static int run_queue_init(sim_state *s, const rt_sim_shape *sh)
{
    if (sh->tick_s <= 0 || sh->host_cores <= 0)
        return 0;
    s->tick = sh->tick_s, s->tick_next = sh->tick_s;
    size_t threads = (size_t)s->W + s->N;
    s->state = calloc(threads, sizeof(uint8_t));
    s->left = calloc(threads, sizeof(double));
    s->queued_at = calloc(threads, sizeof(double));
    s->queue_key = calloc(threads, sizeof(uint64_t));
    s->run_start = calloc(threads, sizeof(double));
    if (!s->state || !s->left || !s->queued_at || !s->queue_key || !s->run_start)
        return -1;
    for (uint32_t h = 0; h < s->hosts; h++) /* a part of a core is a core to run on */
        s->host[h].slots = (uint32_t)ceil(sh->host_cores);
    return 0;
}

static int state_init(sim_state *s, const rt_sim_shape *sh, rt_error *err)
{
    memset(s, 0, sizeof(*s));
    s->N = sh->nodes, s->T = sh->threads, s->c = sh->pipeline;
    s->W = s->N * s->T, s->B = s->c * s->W;
    s->spare = sh->spare_slots ? sh->spare_slots : 1;
    int shared = sh->host_cores > 0;
    s->per_host = 1; /* own cores: a host per node */
    if (shared)
        s->per_host = sh->nodes_per_host && sh->nodes_per_host < s->N ? sh->nodes_per_host : s->N;
    s->hosts = (s->N + s->per_host - 1) / s->per_host;
    size_t NB = (size_t)s->N * s->B;
    s->node = calloc(s->N, sizeof(sim_node));
    s->host = calloc(s->hosts, sizeof(sim_host));
    s->done_at = malloc(s->W * sizeof(double));
    s->worker_sum = calloc(s->W, sizeof(double));
    s->arrive = malloc(NB * sizeof(double));
    s->freed = malloc(NB * sizeof(double));
    s->wire_start = calloc(NB, sizeof(double));
    s->wire_free = calloc(NB, sizeof(double));
    s->stream_end = calloc(NB, sizeof(double));
    s->worker_factor = malloc(s->W * sizeof(double));
    if (!s->node || !s->host || !s->done_at || !s->worker_sum || !s->arrive || !s->freed ||
        !s->wire_start || !s->wire_free || !s->stream_end || !s->worker_factor) {
        state_free(s);
        return rt_fail(err, RT_EXIT_RUNTIME, "simulate: out of memory");
    }
    for (uint32_t h = 0; h < s->hosts; h++)
        s->host[h] = (sim_host){.cores = shared ? sh->host_cores : s->T,
                                .all_busy_speed = sh->busy_core_speed > 0 ? sh->busy_core_speed : 1,
                                .next_done = INFINITY};
    for (uint32_t w = 0; w < s->W; w++)
        s->done_at[w] = INFINITY, s->worker_factor[w] = 1;
    for (size_t i = 0; i < NB; i++)
        s->arrive[i] = s->freed[i] = INFINITY;
    if (sh->leave_tick_s > 0 && shared && sh->tick_s <= 0)
        s->leave_tick = sh->leave_tick_s, s->leave_tick_next = sh->leave_tick_s;
    s->leave_granted = -INFINITY;
    if (run_queue_init(s, sh)) {
        state_free(s);
        return rt_fail(err, RT_EXIT_RUNTIME, "simulate: out of memory");
    }
    return 0;
}

/* ---- the cores ---- */

/* How fast each of the host's cores computes while `busy` workers share
 * them (rt_sim_shape.busy_core_speed), as a fraction of one alone. */
static double host_speed(const sim_host *h, uint32_t busy)
{
    double in_use = h->cores < busy ? h->cores : busy;
    return h->cores > 1 && in_use > 1 ? 1 - (1 - h->all_busy_speed) * (in_use - 1) / (h->cores - 1)
                                      : 1;
}

/* What one of the host's busy workers computes per second, in seconds of
 * a core of its own: its share of the cores, each as fast as a core is
 * while that many compute at once. */
static double host_share(const sim_host *h)
{
    /* with a run queue only the workers on a core compute (never more than
     * its cores), and share them alike */
    uint32_t computing = h->slots ? h->running : h->busy;
    if (!computing)
        return 1.0;
    double speed = host_speed(h, computing);
    double kernel = h->net_owed > 0 ? h->cores : fmin(h->net_load, h->cores);
    double left = h->cores - kernel; /* what the kernel's network work leaves */
    if (left <= 0)
        return 0;
    return (left < computing ? left / computing : 1.0) * speed;
}

/* When the host's next worker is done at the current sharing. */
static double host_next_s(const sim_state *s, const sim_host *h)
{
    double share = host_share(h);
    return h->busy && share > 0 ? s->now + (h->next_done - h->progress) / share : INFINITY;
}

/* When the host's cores have done the kernel work they owe (INFINITY: none
 * owed, or the load still above the cores). */
static double host_owed_until(const sim_state *s, const sim_host *h)
{
    return h->net_owed > 0 && h->net_load < h->cores
               ? s->now + h->net_owed / (h->cores - h->net_load)
               : INFINITY;
}

/* The kernel's work for the links transmitting now (the kernel runs before
 * the cells): half of each link's load on its sender's host and half on
 * its receiver's, all of it where they share one.  A load above the cores
 * is not lost: the part they cannot do now is owed (hosts_advance). */
static void hosts_net_load(sim_state *s)
{
    if (s->link_load <= 0)
        return;
    for (uint32_t hi = 0; hi < s->hosts; hi++)
        s->host[hi].net_load = 0;
    for (uint32_t n = 0; n < s->N && s->N > 1; n++)
        if (s->now < s->node[n].net_until) {
            s->host[n / s->per_host].net_load += s->link_load / 2;
            s->host[(n + 1) % s->N / s->per_host].net_load += s->link_load / 2;
        }
}

static void host_find_next(sim_state *s, uint32_t hi)
{
    sim_host *h = &s->host[hi];
    uint32_t first = hi * s->per_host * s->T, last = first + s->per_host * s->T;
    h->next_done = INFINITY;
    for (uint32_t w = first; w < last && w < s->W; w++)
        if (s->done_at[w] < h->next_done)
            h->next_done = s->done_at[w];
}

/* ---- the run queue (rt_sim_shape.tick_s) ---- */

/* The host of thread w (a worker, or from W on a node's sender). */
static uint32_t host_of(const sim_state *s, uint32_t w)
{
    return (w < s->W ? w / s->T : w - s->W) / s->per_host;
}

/* Thread i of host hi's (its workers, then its nodes' senders), or
 * UINT32_MAX past the last. */
static uint32_t host_thread(const sim_state *s, uint32_t hi, uint32_t i)
{
    uint32_t n0 = hi * s->per_host, n1 = n0 + s->per_host < s->N ? n0 + s->per_host : s->N;
    uint32_t workers = (n1 - n0) * s->T;
    if (i < workers)
        return n0 * s->T + i;
    return i < workers + (n1 - n0) ? s->W + n0 + (i - workers) : UINT32_MAX;
}

/* Thread w waits for a core from now (as `state`: a worker with its cell's
 * `work` seconds, or a node's orchestrator or sender for a turn, no work). */
static void queue_join(sim_state *s, uint32_t w, worker_state state, double work)
{
    s->state[w] = (uint8_t)state;
    s->left[w] = work;
    s->queued_at[w] = s->now;
    s->queue_key[w] = rt_rng_next(&s->order_rng);
    s->host[host_of(s, w)].queued++;
}

/* Whether thread a goes before thread b in the queue: threads that woke
 * up before those the tick took off a core (the scheduler owes the first
 * their share, the second have just had theirs: EEVDF's lag), then the
 * earlier to join, those that joined at one moment in the order of their
 * keys. */
static int queued_before(const sim_state *s, uint32_t a, uint32_t b)
{
    int behind_a = s->state[a] == WORKER_BEHIND, behind_b = s->state[b] == WORKER_BEHIND;
    if (behind_a != behind_b)
        return behind_b;
    return s->queued_at[a] < s->queued_at[b] ||
           (s->queued_at[a] == s->queued_at[b] && s->queue_key[a] < s->queue_key[b]);
}

/* The first in host hi's queue (UINT32_MAX: nobody waits). */
static uint32_t queue_first(const sim_state *s, uint32_t hi)
{
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0, w; (w = host_thread(s, hi, i)) != UINT32_MAX; i++)
        if ((s->state[w] == WORKER_QUEUED || s->state[w] == WORKER_BEHIND ||
             s->state[w] == WORKER_TURN) &&
            (best == UINT32_MAX || queued_before(s, w, best)))
            best = w;
    return best;
}

/* Thread w gets a core of host h: a worker's cell goes on from where it
 * was; an orchestrator or a sender holds the core (the sender writes its
 * node's passes: senders_write). */
static void core_take(sim_state *s, sim_host *h, uint32_t w)
{
    h->queued--, h->running++;
    s->run_start[w] = s->now;
    if (s->state[w] == WORKER_TURN) {
        s->state[w] = WORKER_HOLDING;
        return;
    }
    s->state[w] = WORKER_RUNNING;
    s->done_at[w] = h->progress + s->left[w];
}

/* The worker on a core of host h that has run longest since it got it,
 * before now (UINT32_MAX: none). */
static uint32_t longest_running(const sim_state *s, uint32_t hi)
{
    uint32_t best = UINT32_MAX;
    for (uint32_t i = 0, w; (w = host_thread(s, hi, i)) != UINT32_MAX; i++)
        if (s->state[w] == WORKER_RUNNING && s->run_start[w] < s->now &&
            (best == UINT32_MAX || s->run_start[w] < s->run_start[best]))
            best = w;
    return best;
}

/* Host hi's cores now: a worker holding one with nothing to compute gives
 * it up; at a tick, as many workers as wait give theirs to them (those that
 * have run longest; they go to the back of the queue); free cores go to the
 * first in the queue.  1 if an orchestrator got its turn (its node moves). */
static int host_dispatch(sim_state *s, uint32_t hi, int tick)
{
    sim_host *h = &s->host[hi];
    for (uint32_t i = 0, w; (w = host_thread(s, hi, i)) != UINT32_MAX; i++)
        if (s->state[w] == WORKER_HOLDING)
            s->state[w] = WORKER_IDLE, h->running--;
    int turned = 0;
    for (int round = 0; round < 2; round++) {
        while (h->running < h->slots && h->queued) {
            uint32_t w = queue_first(s, hi);
            turned |= s->state[w] == WORKER_TURN;
            core_take(s, h, w);
        }
        for (uint32_t k = h->queued; tick && round == 0 && k > 0; k--) {
            uint32_t w = longest_running(s, hi);
            if (w == UINT32_MAX)
                break;
            double left = s->done_at[w] - h->progress;
            s->done_at[w] = INFINITY;
            h->running--;
            queue_join(s, w, WORKER_BEHIND, left > 0 ? left : 0);
        }
    }
    host_find_next(s, hi);
    return turned;
}

/* Every host's cores now (host_dispatch); the tick's switches once, at it. */
static int hosts_dispatch(sim_state *s)
{
    int tick = s->now == s->tick_next;
    if (s->now >= s->tick_next) { /* past ticks found nobody waiting */
        s->tick_next = (floor(s->now / s->tick) + 1) * s->tick;
        if (s->tick_next <= s->now)
            s->tick_next += s->tick;
    }
    int turned = 0;
    for (uint32_t hi = 0; hi < s->hosts; hi++)
        turned |= host_dispatch(s, hi, tick);
    return turned;
}

/* Worker w of host h has done its cell: it keeps its core if it is its
 * node's orchestrator (`orchestrates`), else it gives it up. */
static void state_after_cell(sim_state *s, sim_host *h, uint32_t w, int orchestrates)
{
    if (orchestrates && w % s->T == 0) {
        s->state[w] = WORKER_HOLDING;
    } else {
        s->state[w] = WORKER_IDLE;
        h->running--;
    }
}

/* Worker w of host h has a cell of `work` seconds from now: on the core it
 * holds, or it waits for one. */
static void cell_ready(sim_state *s, sim_host *h, uint32_t w, double work)
{
    if (s->state[w] == WORKER_HOLDING) {
        s->state[w] = WORKER_RUNNING;
        s->done_at[w] = h->progress + work;
    } else {
        queue_join(s, w, WORKER_QUEUED, work);
    }
}

/* The kernel work a host owes at `t`: what its load beyond the cores piled
 * up, less what every core paid off once the load fell below them (t is
 * never past host_owed_until: next_event stops there). */
static double host_owed_at(const sim_state *s, const sim_host *h, double t)
{
    if (host_owed_until(s, h) <= t)
        return 0; /* exactly paid off (no rounding short of it) */
    if (h->net_owed <= 0 && h->net_load <= h->cores)
        return 0;
    return fmax(0, h->net_owed + (h->net_load - h->cores) * (t - s->now));
}

/* The workers of every host progress until `t`; a host whose next worker is
 * done exactly then gets there (no rounding short of it). */
static void hosts_advance(sim_state *s, double t)
{
    for (uint32_t hi = 0; hi < s->hosts; hi++) {
        sim_host *h = &s->host[hi];
        if (h->busy) {
            int due = host_next_s(s, h) <= t;
            h->progress += (t - s->now) * host_share(h);
            if (due && h->progress < h->next_done)
                h->progress = h->next_done;
        }
        h->net_owed = host_owed_at(s, h, t);
    }
    s->now = t;
}

/* A log-normal factor of mean 1 whose log has standard deviation sigma
 * (1 for sigma 0: no jitter). */
static double jitter(sim_state *s, double sigma)
{
    if (sigma <= 0)
        return 1;
    double u1 = 1 - rt_rng_uniform(&s->rng), u2 = rt_rng_uniform(&s->rng); /* Box-Muller */
    double z = sqrt(-2 * log(u1)) * cos(6.283185307179586 * u2);
    return exp(sigma * z - sigma * sigma / 2);
}

/* How many cells of equal weight a worker's rotation averages over: its
 * cells' (sum of work)^2 / (sum of squares), the mean over the workers
 * (B for equal cells; 1 for none). */
static double cells_averaged(const rt_sim_shape *sh)
{
    uint32_t W = sh->nodes * sh->threads, B = sh->pipeline * W;
    double n = 0;
    for (uint32_t w = 0; w < W; w++) {
        double sum = 0, sq = 0;
        for (uint32_t b = 0; b < B; b++) {
            double x = sh->cell_work[(size_t)w * B + b];
            sum += x, sq += x * x;
        }
        n += (sq > 0 ? sum * sum / sq : 1) / W;
    }
    return n;
}

/* The variance of the log of a worker's factor for the rotation, given
 * the measured spread of a rotation's work per CPU second across workers
 * (worker_var) and of a cell's (cell_var).  Why not worker_var itself:
 * the calibrations measure a worker's spread on its whole rotation, and
 * that holds the cells' own spread averaged over its n cells, which the
 * model draws again per cell; the factor is what is left:
 * f + (cell_var - f) / n = worker_var.  A spread per worker above the
 * cells' is all the worker's. */
static double worker_factor_var(double worker_var, double cell_var, double n)
{
    if (worker_var >= cell_var || n <= 1)
        return worker_var;
    double f = (n * worker_var - cell_var) / (n - 1);
    return f > 0 ? f : 0;
}

/* The variance of the log of the per-worker factor the shape's jitter draws
 * (worker_factor_var of its worker_cv and cell_cv; 0 without worker_cv). */
static double shape_worker_var(const rt_sim_shape *sh)
{
    if (sh->worker_cv <= 0)
        return 0;
    return worker_factor_var(log(1 + sh->worker_cv * sh->worker_cv),
                             log(1 + sh->cell_cv * sh->cell_cv), cells_averaged(sh));
}

/* The jitter of rotation `stream`: the cells' log-normal spread split into
 * a factor per worker for the whole rotation (worker_factor_var, drawn
 * first) and the rest per cell (their variances of the log add up to
 * cell_cv's, or to worker_cv's if that is the larger). */
static void jitter_init(sim_state *s, const rt_sim_shape *sh, uint64_t stream)
{
    rt_rng_seed(&s->rng, SIM_JITTER_SEED, stream);
    double cell_var = log(1 + sh->cell_cv * sh->cell_cv);
    double worker_var = shape_worker_var(sh);
    s->cell_sigma = cell_var > worker_var ? sqrt(cell_var - worker_var) : 0;
    s->step_sigma = sqrt(log(1 + sh->step_cv * sh->step_cv));
    for (uint32_t w = 0; w < s->W && worker_var > 0; w++)
        s->worker_factor[w] = jitter(s, sqrt(worker_var));
}

/* Node n's step compute is over: the step's fixed cost follows. */
static void step_end_begin(sim_state *s, const rt_sim_shape *sh, uint32_t n)
{
    sim_node *d = &s->node[n];
    d->phase = PHASE_STEP_END, d->since = s->now;
    d->step_cost =
        d->inline_step ? sh->inline_step_s : s->step_overhead_s * jitter(s, s->step_sigma);
}

/* The kernel time of node n's cells at its current step (without jitter). */
static double step_cells_s(const sim_state *s, const rt_sim_shape *sh, uint32_t n)
{
    double sum = 0;
    for (uint32_t th = 0; th < s->T && sh->rate > 0; th++) {
        uint32_t w = n * s->T + th;
        sum += sh->cell_work[(size_t)w * s->B + sh->schedule[(size_t)s->node[n].step * s->W + w]];
    }
    return sh->rate > 0 ? sum / sh->rate : 0;
}

/* Whether node n runs the step starting now inline, as the engine decides
 * (RT_INLINE_AUTO): on the CPU seconds of its previous step's cells; the
 * rotation's first step, which has none, on its own cells' kernel time
 * (cells_s, without jitter) at the speed of T more busy cores: the threaded
 * estimate, which is what a rotation after a threaded one carries over. */
static int step_runs_inline(const sim_state *s, const rt_sim_shape *sh, uint32_t n, double cells_s)
{
    const sim_node *d = &s->node[n];
    const sim_host *h = &s->host[n / s->per_host];
    double cpu_s = d->last_cpu_s >= 0 ? d->last_cpu_s : cells_s / host_speed(h, h->busy + s->T);
    return cpu_s < sh->inline_below_s;
}

/* What node n's cells take longer after it idled (wake_speed): 1 / the
 * speed after wake_after_s or more since its previous compute ended. */
static double woken_slowdown(const sim_state *s, const rt_sim_shape *sh, uint32_t n)
{
    const sim_node *d = &s->node[n];
    int idled = s->now - d->compute_end >= sh->wake_after_s && s->now > d->compute_end;
    return sh->wake_speed > 0 && sh->wake_speed < 1 && idled ? 1 / sh->wake_speed : 1;
}

/* Step `step` of node n starts now: its workers take up their cells. */
static void compute_start(sim_state *s, const rt_sim_shape *sh, uint32_t n)
{
    sim_node *d = &s->node[n];
    sim_host *h = &s->host[n / s->per_host];
    d->phase = PHASE_COMPUTE, d->since = s->now, d->busy = 0;
    double cells_s = step_cells_s(s, sh, n);
    d->inline_step = step_runs_inline(s, sh, n, cells_s);
    d->inline_steps += (uint32_t)d->inline_step;
    d->last_cpu_s = 0;
    /* the speed its cells' CPU is booked at (as of now: the busy count moves
     * while they run): T more busy cores, or one for an inline step (its
     * cells one after another on one thread) */
    double speed = host_speed(h, h->busy + (d->inline_step ? 1 : s->T));
    double woken = woken_slowdown(s, sh, n);
    for (uint32_t th = 0; th < s->T; th++) {
        uint32_t w = n * s->T + th;
        uint32_t b = sh->schedule[(size_t)d->step * s->W + w];
        double x = sh->rate > 0 ? sh->cell_work[(size_t)w * s->B + b] / sh->rate : 0;
        if (d->inline_step) /* all the cells, one after another, on the first thread */
            x = th == 0 ? cells_s : 0;
        if (x <= 0)
            continue;
        x *= woken * s->worker_factor[w] * jitter(s, s->cell_sigma);
        double cpu_s = x / speed; /* the CPU both the inline choice and the engine's log see */
        d->last_cpu_s += cpu_s;
        d->cpu += cpu_s;
        if (s->tick > 0)
            cell_ready(s, h, w, x);
        else
            s->done_at[w] = h->progress + x;
        d->busy++, h->busy++;
    }
    host_find_next(s, n / s->per_host);
}

/* Workers whose cells are done by now go idle; a node whose last worker is
 * done ends the step's compute. */
static void workers_finish(sim_state *s, const rt_sim_shape *sh)
{
    for (uint32_t hi = 0; hi < s->hosts; hi++) {
        sim_host *h = &s->host[hi];
        if (!h->busy || h->progress < h->next_done)
            continue;
        uint32_t first = hi * s->per_host * s->T, last = first + s->per_host * s->T;
        for (uint32_t w = first; w < last && w < s->W; w++) {
            if (s->done_at[w] > h->progress)
                continue;
            sim_node *d = &s->node[w / s->T];
            s->done_at[w] = INFINITY;
            if (s->tick > 0) /* the orchestrator that ran the cells inline keeps its core
                                for what follows at once; worker threads block on the
                                step's barrier and give theirs up */
                state_after_cell(s, h, w, s->node[w / s->T].inline_step);
            s->worker_sum[w] += s->now - d->since;
            h->busy--;
            if (--d->busy == 0) {
                d->compute += s->now - d->since;
                d->compute_end = s->now;
                step_end_begin(s, sh, w / s->T);
            }
        }
        host_find_next(s, hi);
    }
}

/* ---- the orchestrators ---- */

/* When the arrival node n waits for in its current phase is in (-INFINITY:
 * it needs none; INFINITY: not yet passed). */
static double arrival_needed(const sim_state *s, uint32_t n)
{
    const sim_node *d = &s->node[n];
    if (s->N < 2)
        return -INFINITY;
    if (d->phase == PHASE_HOME) /* the last block comes home */
        return s->arrive[(size_t)n * s->B + s->B - 1];
    /* before step s, arrivals 0 .. s - c must be in */
    return d->step >= s->c ? s->arrive[(size_t)n * s->B + (d->step - s->c)] : -INFINITY;
}

/* When node n's pass k may start: a slot at the next node frees when its
 * pass k - spare has left it (pass_freed_at), and the credit takes one
 * latency. */
static double credit_at(const sim_state *s, const rt_sim_link *l, uint32_t n, uint32_t k)
{
    uint32_t next = (n + 1) % s->N;
    return k >= s->spare ? s->freed[(size_t)next * s->B + (k - s->spare)] + l->latency_s
                         : -INFINITY;
}

/* When node n's current phase can end (INFINITY: on an event not yet known;
 * compute ends through its host). */
static double node_ready(const sim_state *s, const rt_sim_link *l, uint32_t n)
{
    const sim_node *d = &s->node[n];
    switch (d->phase) {
    case PHASE_WAIT:
    case PHASE_HOME:
        return fmax(d->since, arrival_needed(s, n));
    case PHASE_STEP_END:
        return d->since + d->step_cost;
    case PHASE_REDUCE:
    case PHASE_EPOCH:
        return d->release;
    case PHASE_PASS:
        return s->N < 2 ? d->since : fmax(d->since, credit_at(s, l, n, d->step));
    default:
        return INFINITY;
    }
}

/* Whether node n waited for an arrival in its current phase (PHASE_WAIT):
 * it was not in when the phase began. */
static int node_blocked(const sim_state *s, uint32_t n)
{
    return arrival_needed(s, n) > s->node[n].since;
}

/* Run queue: whether node n, ready to end its phase, needs its orchestrator
 * (the first worker's slot) on a core first: to see the arrival it blocked
 * for, or to pass its block and start its cells after a collective (the
 * rotation's start follows one too). */
static int node_wants_core(const sim_state *s, uint32_t n)
{
    const sim_node *d = &s->node[n];
    if (s->tick <= 0 || s->state[n * s->T] == WORKER_HOLDING)
        return 0;
    if (d->phase == PHASE_WAIT)
        return d->after_collective || node_blocked(s, n);
    return d->phase == PHASE_PASS && d->after_collective;
}

/* ---- leaving a step's collective in turns (rt_sim_shape.leave_tick_s) ---- */

/* Whether host hi has more threads than cores: the threads that a
 * collective wakes at once cannot all run. */
static int host_crowded(const sim_state *s, uint32_t hi)
{
    uint32_t n0 = hi * s->per_host, n1 = n0 + s->per_host < s->N ? n0 + s->per_host : s->N;
    return (n1 - n0) * s->T > s->host[hi].cores;
}

/* Node n's orchestrator waits for its turn to leave the step's collective. */
static int leave_waiting(const sim_state *s, uint32_t n)
{
    const sim_node *d = &s->node[n];
    return d->leave_key && d->phase == PHASE_REDUCE && d->release <= s->now;
}

/* Whether the thread of node n with place `key` in its host's order gets a
 * core now: none waits before it, and a core is free (a cell ended) or the
 * tick lets it in.  Taking a tick's grant uses it up. */
static int turn_now(sim_state *s, uint32_t n, uint64_t key)
{
    uint32_t hi = n / s->per_host;
    sim_host *h = &s->host[hi];
    uint32_t n0 = hi * s->per_host, n1 = n0 + s->per_host < s->N ? n0 + s->per_host : s->N;
    for (uint32_t m = n0; m < n1; m++)
        if ((leave_waiting(s, m) && s->node[m].leave_key < key) ||
            (s->node[m].send_key && s->node[m].send_key < key))
            return 0;
    if (h->busy < h->cores)
        return 1;
    if (s->now == s->leave_granted && h->grants > 0) {
        h->grants--;
        return 1;
    }
    return 0;
}

/* A tick now: on each host up to one waiting thread per core gets in even
 * with every core busy (the scheduler switches each core once). */
static void leave_tick_at(sim_state *s)
{
    if (s->leave_tick <= 0 || s->now < s->leave_tick_next)
        return;
    if (s->now == s->leave_tick_next) {
        s->leave_granted = s->now;
        for (uint32_t hi = 0; hi < s->hosts; hi++)
            s->host[hi].grants = (uint32_t)ceil(s->host[hi].cores);
    }
    s->leave_tick_next = (floor(s->now / s->leave_tick) + 1) * s->leave_tick;
    if (s->leave_tick_next <= s->now)
        s->leave_tick_next += s->leave_tick;
}

/* A place in a host's order for a thread that the collective of step
 * `wave` woke: those an earlier collective woke go first (they have waited
 * longer: the scheduler owes them), those of one collective in an order
 * drawn. */
static uint64_t turn_key(sim_state *s, uint32_t wave)
{
    return (uint64_t)wave << 40 | rt_rng_next(&s->leave_rng) >> 24 | 1;
}

/* Node n hands its pass to its sender thread, which waits for a turn
 * (unless it waits already: it writes the passes in order). */
static void sender_wait(sim_state *s, uint32_t n)
{
    sim_node *d = &s->node[n];
    d->passes_given = d->step + 1;
    if (!d->send_key)
        d->send_key = turn_key(s, d->step);
}

/* Whether any thread waits for a turn (the next tick is an event then). */
static int turns_waiting(const sim_state *s)
{
    for (uint32_t n = 0; n < s->N && s->leave_tick > 0; n++)
        if (leave_waiting(s, n) || s->node[n].send_key)
            return 1;
    return 0;
}

/* Node n enters a collective of cost `cost_s`; the last one in starts it for
 * all, and all leave together - or, from a step's collective on a host with
 * more threads than cores, in turns: their orchestrators, and the sender
 * threads their passes wake, in an order drawn per collective. */
static void collective_enter(sim_state *s, uint32_t n, node_phase phase, double cost_s)
{
    sim_node *d = &s->node[n];
    d->phase = phase, d->since = s->now, d->release = INFINITY;
    if (++s->in_collective < s->N)
        return;
    s->in_collective = 0;
    for (uint32_t m = 0; m < s->N; m++) {
        s->node[m].release = s->now + cost_s;
        if (phase == PHASE_REDUCE && s->leave_tick > 0 && host_crowded(s, m / s->per_host))
            s->node[m].leave_key = turn_key(s, s->node[m].step);
    }
}

/* When node n's stream of passes has gone on the wire up to byte x (x is
 * within pass k's end): the link sends one pass after the other, each
 * after its per-message overhead. */
static double wire_reaches(const sim_state *s, const rt_sim_link *l, uint32_t n, uint32_t k,
                           double x)
{
    const double *end = s->stream_end + (size_t)n * s->B;
    uint32_t j = 0;
    while (j < k && end[j] < x)
        j++;
    double before = j ? end[j - 1] : 0;
    double free = s->wire_free[(size_t)n * s->B + j]; /* went out with the burst */
    return s->wire_start[(size_t)n * s->B + j] + l->overhead_s +
           (x - before > free ? wire_s(l, x - before - free) : 0);
}

/* When node n's pass k (just queued) leaves its slot, which is then free
 * for the previous node's next block: once its bytes are on the wire or,
 * where the sending side buffers (a TCP socket's send buffer), once all but
 * the buffer's worth of the stream up to its last byte are; never before
 * the pass before it (one sender writes them in order). */
static double pass_freed_at(const sim_state *s, const rt_sim_link *l, uint32_t n, uint32_t k)
{
    double x = s->stream_end[(size_t)n * s->B + k] - l->buffer_bytes;
    double t = x > 0 ? wire_reaches(s, l, n, k, x) : s->now;
    double prev = k ? s->freed[(size_t)n * s->B + k - 1] : -INFINITY;
    return fmax(fmax(t, s->now), prev);
}

/* A shaped link (a token bucket: rt_sim_link.burst_bytes) lets up to its
 * bucket of bytes go at once after an idle time; this many of `bytes`
 * starting at `start` do, and the bucket is empty after (it refills at the
 * link's rate while idle). */
static double burst_take(sim_node *d, const rt_sim_link *l, double start, double bytes)
{
    if (l->burst_bytes <= 0 || l->gbps <= 0)
        return 0;
    double tokens = d->tokens + (start - d->tokens_at) * l->gbps * 1e9 / 8;
    tokens = tokens < l->burst_bytes ? tokens : l->burst_bytes;
    double free = tokens < bytes ? tokens : bytes;
    d->tokens = tokens - free;
    return free;
}

/* Queue node n's pass k on its link (the block its last worker finished at
 * step k). */
static void node_pass(sim_state *s, const rt_sim_shape *sh, const rt_sim_link *l, uint32_t n,
                      uint32_t k)
{
    sim_node *d = &s->node[n];
    uint32_t next = (n + 1) % s->N;
    size_t at = (size_t)n * s->B + k;
    double bytes = sh->block_bytes[sh->schedule[(size_t)k * s->W + n * s->T + s->T - 1]];
    double start = s->now > d->link ? s->now : d->link;
    double free = burst_take(d, l, start, bytes);
    d->link = start + l->overhead_s + wire_s(l, bytes - free);
    d->net_until = fmax(start, d->net_until) + l->overhead_s + wire_s(l, bytes);
    d->tokens_at = d->link;
    s->wire_start[at] = start;
    s->wire_free[at] = free;
    s->stream_end[at] = (k ? s->stream_end[at - 1] : 0) + bytes;
    s->freed[at] = pass_freed_at(s, l, n, k);
    s->arrive[(size_t)next * s->B + k] = d->link + l->latency_s;
}

typedef struct sim_costs {
    double step_reduce_s, epoch_reduce_s;
} sim_costs;

static int reduces_after(const rt_sim_shape *sh, uint32_t step, uint32_t B)
{
    uint32_t every = sh->step_reduce_every ? sh->step_reduce_every : 1;
    return sh->step_reduce_bytes > 0 && ((step + 1) % every == 0 || step + 1 == B);
}

/* Run queue: node n hands its pass to its sender thread (over TCP a block
 * this large is written by it), which needs a core to write it. */
static void sender_take(sim_state *s, uint32_t n)
{
    s->node[n].passes_given = s->node[n].step + 1;
    if (s->state[s->W + n] == WORKER_IDLE)
        queue_join(s, s->W + n, WORKER_TURN, 0);
}

/* Run queue: the senders on a core write the passes they were given. */
static void senders_write(sim_state *s, const rt_sim_shape *sh, const rt_sim_link *l)
{
    for (uint32_t n = 0; n < s->N; n++) {
        sim_node *d = &s->node[n];
        for (; s->state[s->W + n] == WORKER_HOLDING && d->passes_made < d->passes_given;
             d->passes_made++)
            node_pass(s, sh, l, n, d->passes_made);
    }
}

/* Node n's current phase ends now (node_ready said so): on to the next. */
static void node_next_phase(sim_state *s, const rt_sim_shape *sh, const rt_sim_link *l,
                            const sim_costs *cost, uint32_t n)
{
    sim_node *d = &s->node[n];
    switch (d->phase) {
    case PHASE_WAIT: /* a wait for a core alone (run queue) is no stall */
        if (node_blocked(s, n))
            d->stall += s->now - d->since;
        d->after_collective = 0;
        compute_start(s, sh, n);
        if (d->busy == 0) /* nothing to compute */
            step_end_begin(s, sh, n);
        break;
    case PHASE_STEP_END:
        if (reduces_after(sh, d->step, s->B))
            collective_enter(s, n, PHASE_REDUCE, cost->step_reduce_s);
        else
            d->phase = PHASE_PASS, d->since = s->now;
        break;
    case PHASE_REDUCE:
        d->phase = PHASE_PASS, d->since = s->now;
        d->after_collective = 1;
        break;
    case PHASE_PASS:
        if (s->N > 1) { /* the wait for the credit, not for a core */
            d->credit += fmax(0, fmin(s->now, credit_at(s, l, n, d->step)) - d->since);
            if (s->tick > 0)
                sender_take(s, n);
            else if (d->leave_key || d->send_key) /* left in turns: its sender takes one */
                sender_wait(s, n);
            else
                node_pass(s, sh, l, n, d->step), d->passes_made = d->step + 1;
        }
        d->leave_key = 0;
        d->step++;
        d->phase = d->step < s->B ? PHASE_WAIT : PHASE_HOME, d->since = s->now;
        break;
    case PHASE_HOME:
        d->stall += s->now - d->since;
        collective_enter(s, n, PHASE_EPOCH, cost->epoch_reduce_s);
        break;
    case PHASE_EPOCH:
        d->phase = PHASE_DONE, d->since = s->now;
        break;
    default:
        break;
    }
}

/* Everything that can happen at the current time, in node order until
 * nothing more does (deterministic). */
static void settle(sim_state *s, const rt_sim_shape *sh, const rt_sim_link *l,
                   const sim_costs *cost)
{
    leave_tick_at(s);
    for (int moved = 1; moved;) {
        moved = 0;
        workers_finish(s, sh);
        if (s->tick > 0)
            senders_write(s, sh, l);
        for (uint32_t n = 0; n < s->N && s->leave_tick > 0; n++) /* senders in turns */
            if (s->node[n].send_key && turn_now(s, n, s->node[n].send_key)) {
                sim_node *d = &s->node[n];
                for (d->send_key = 0; d->passes_made < d->passes_given; d->passes_made++)
                    node_pass(s, sh, l, n, d->passes_made);
                moved = 1;
            }
        for (uint32_t n = 0; n < s->N; n++)
            while (s->node[n].phase != PHASE_DONE && node_ready(s, l, n) <= s->now) {
                if (leave_waiting(s, n) && !turn_now(s, n, s->node[n].leave_key))
                    break;                   /* its turn comes when a core frees or at a tick */
                if (node_wants_core(s, n)) { /* its turn comes through the queue */
                    if (s->state[n * s->T] != WORKER_TURN)
                        queue_join(s, n * s->T, WORKER_TURN, 0);
                    break;
                }
                node_next_phase(s, sh, l, cost, n);
                moved = 1;
            }
        if (!moved && s->tick > 0)
            moved = hosts_dispatch(s);
    }
}

/* The next time anything happens: a node's phase can end, a host's worker
 * is done, or a link stops transmitting (its kernel load ends); INFINITY
 * once every node is done (the rotation is over). */
static double next_event(const sim_state *s, const rt_sim_link *l)
{
    double t = INFINITY;
    uint32_t done = 0;
    for (uint32_t n = 0; n < s->N; n++) {
        double ready = node_ready(s, l, n);
        if (!(ready <= s->now && (node_wants_core(s, n) || leave_waiting(s, n))))
            t = fmin(t, ready); /* waiting for its turn: the hosts' */
        done += s->node[n].phase == PHASE_DONE;
    }
    if (done == s->N)
        return INFINITY;
    if (turns_waiting(s))
        t = fmin(t, s->leave_tick_next);
    for (uint32_t hi = 0; hi < s->hosts && s->tick > 0; hi++) /* a tick that switches */
        if (s->host[hi].queued && s->host[hi].running)
            t = fmin(t, s->tick_next);
    for (uint32_t n = 0; n < s->N && s->link_load > 0; n++) /* a link's load ends */
        if (s->node[n].net_until > s->now)
            t = fmin(t, s->node[n].net_until);
    for (uint32_t hi = 0; hi < s->hosts; hi++)
        t = fmin(fmin(t, host_next_s(s, &s->host[hi])), host_owed_until(s, &s->host[hi]));
    return t;
}

/* Run the rotation's events; -1 when the nodes cannot all finish (a
 * schedule whose arrivals never come). */
static int run_events(sim_state *s, const rt_sim_shape *sh, const rt_sim_link *l,
                      const sim_costs *cost)
{
    for (;;) {
        settle(s, sh, l, cost);
        hosts_net_load(s);
        double t = next_event(s, l);
        if (t == INFINITY)
            break;
        hosts_advance(s, t);
    }
    /* the kernel work the hosts still owe keeps every core from the next
     * rotation's cells: the rotation ends once it is done (the links are
     * idle by now, so it is paid off) */
    double paid = s->now;
    for (uint32_t hi = 0; hi < s->hosts; hi++)
        if (s->host[hi].net_owed > 0)
            paid = fmax(paid, host_owed_until(s, &s->host[hi]));
    if (paid > s->now && paid < INFINITY)
        hosts_advance(s, paid);
    for (uint32_t n = 0; n < s->N; n++)
        if (s->node[n].phase != PHASE_DONE)
            return -1;
    return 0;
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
    if (sh->net_cpu_s_per_byte < 0)
        return rt_fail(err, RT_EXIT_INPUT, "simulate: a byte's CPU cost cannot be negative");
    /* Why a floor: the run queue steps through every tick, so a tick of a
     * nanosecond is billions of events (and one below the clock's rounding
     * never advances); no kernel ticks faster than 1000 Hz. */
    if (sh->tick_s < 0 || (sh->tick_s > 0 && sh->tick_s < RT_SIM_MIN_TICK_S) ||
        sh->leave_tick_s < 0 || (sh->leave_tick_s > 0 && sh->leave_tick_s < RT_SIM_MIN_TICK_S))
        return rt_fail(err, RT_EXIT_INPUT,
                       "simulate: the scheduler's tick must be 0 (off) or at least %g us",
                       RT_SIM_MIN_TICK_S * 1e6);
    if (sh->busy_core_speed < 0 || sh->busy_core_speed > 1)
        return rt_fail(err, RT_EXIT_INPUT, "simulate: the busy core speed must be in (0, 1]");
    if (sh->wake_speed < 0 || sh->wake_speed > 1 || sh->wake_after_s < 0)
        return rt_fail(err, RT_EXIT_INPUT,
                       "simulate: the speed after an idle time must be in (0, 1], the time >= 0");
    if (!sh->cell_work || !sh->block_bytes || !sh->schedule)
        return rt_fail(err, RT_EXIT_INPUT, "simulate: shape without cells or schedule");
    return 0;
}

/* The result's figures from the finished timelines. */
static void summarize(const sim_state *s, const rt_sim_shape *sh, const rt_sim_link *l,
                      const sim_costs *cost, rt_sim_result *out)
{
    out->epoch_s = s->now;
    uint32_t reduces = 0;
    for (uint32_t k = 0; k < s->B; k++)
        reduces += (uint32_t)reduces_after(sh, k, s->B);
    out->collective_s = reduces * cost->step_reduce_s + cost->epoch_reduce_s;
    double compute_min = INFINITY;
    for (uint32_t n = 0; n < s->N; n++) {
        double st = out->epoch_s > 0 ? s->node[n].stall / out->epoch_s : 0;
        out->stall_mean += st / s->N;
        if (st > out->stall_max)
            out->stall_max = st;
        if (s->node[n].compute > out->compute_max_s)
            out->compute_max_s = s->node[n].compute;
        if (s->node[n].credit > out->credit_wait_s)
            out->credit_wait_s = s->node[n].credit;
        double bytes = 0;
        for (uint32_t k = 0; s->N > 1 && k < s->B; k++)
            bytes += sh->block_bytes[sh->schedule[(size_t)k * s->W + n * s->T + s->T - 1]];
        if (bytes > out->bytes_per_link)
            out->bytes_per_link = bytes;
    }
    double compute_max = 0; /* as the engine logs a rank's compute: the mean over its threads */
    for (uint32_t n = 0; n < s->N; n++) {
        double mean = 0;
        for (uint32_t t = 0; t < s->T; t++)
            mean += s->worker_sum[n * s->T + t] / s->T;
        compute_min = fmin(compute_min, mean);
        compute_max = fmax(compute_max, mean);
    }
    out->compute_gap_s = compute_max - compute_min;
    for (uint32_t n = 0; n < s->N; n++) /* the engine's compute CPU: the mean over threads */
        out->compute_cpu_s = fmax(out->compute_cpu_s, s->node[n].cpu / s->T);
    for (uint32_t w = 0; w < s->W; w++)
        out->compute_mean_s += s->worker_sum[w] / s->W;
    if (s->N > 1) {
        out->link_busy_s = s->B * l->overhead_s + wire_s(l, out->bytes_per_link);
        out->latency_s = s->B * (l->latency_s + l->overhead_s);
    }
    out->steps_s = s->B * sh->step_overhead_s;
    double imbalance = out->compute_max_s - out->compute_mean_s;
    double network = out->stall_max * out->epoch_s + out->credit_wait_s;
    out->critical = critical_of(out, imbalance, network);
}

/* Each node's share of the rotation, in the words of the engine's debug
 * line per rank (engine.c log_rotation), to set the two side by side. */
static void log_nodes(const sim_state *s)
{
    for (uint32_t n = 0; n < s->N; n++) {
        double compute = 0;
        for (uint32_t t = 0; t < s->T; t++)
            compute += s->worker_sum[n * s->T + t] / s->T;
        rt_debug("simulate: node %u rotation: %.6f s, compute %.6f s (mean over threads), "
                 "stall %.6f s, credit wait %.6f s, %u of %u steps inline",
                 n, s->now, compute, s->node[n].stall, s->node[n].credit, s->node[n].inline_steps,
                 s->B);
    }
}

/* One rotation with the jitter drawn from stream `stream`. */
static int one_rotation(const rt_sim_shape *sh, const rt_sim_link *l, uint64_t stream,
                        rt_sim_result *out, rt_error *err)
{
    sim_state s;
    memset(out, 0, sizeof(*out));
    if (state_init(&s, sh, err))
        return -1;
    for (uint32_t n = 0; n < s.N; n++) {
        s.node[n].tokens = l->burst_bytes; /* idle between rotations: a full bucket */
        s.node[n].last_cpu_s = -1;         /* no previous step to decide inline on */
    }
    s.step_overhead_s = sh->step_overhead_s;
    /* a link moves gbps / 8 bytes a second while it transmits (an infinite
     * one takes no time, so no load) */
    s.link_load = l->gbps > 0 ? sh->net_cpu_s_per_byte * l->gbps * 1e9 / 8 : 0;
    if (sh->cell_cv > 0 || sh->step_cv > 0 || sh->worker_cv > 0)
        jitter_init(&s, sh, stream);
    if (s.tick > 0)
        rt_rng_seed(&s.order_rng, SIM_ORDER_SEED, stream);
    rt_rng_seed(&s.leave_rng, SIM_LEAVE_SEED, stream);
    for (uint32_t n = 0; n < s.N && s.tick > 0; n++) /* after the last rotation's all-reduce */
        s.node[n].after_collective = 1;
    /* the engine's statistics ([bytes, stall per rank]) and the app's */
    sim_costs cost = {
        .step_reduce_s = rt_sim_allreduce_s(l, s.N, sh->step_reduce_bytes, sh->collectives),
        .epoch_reduce_s = rt_sim_allreduce_s(l, s.N, 8.0 * (s.N + 1), sh->collectives) +
                          rt_sim_allreduce_s(l, s.N, sh->epoch_reduce_bytes, sh->collectives)};
    int rc = run_events(&s, sh, l, &cost);
    if (rc == 0)
        summarize(&s, sh, l, &cost, out);
    if (rc)
        rt_fail(err, RT_EXIT_INPUT, "simulate: the schedule never completes a rotation");
    else if (stream == 0)
        log_nodes(&s);
    state_free(&s);
    return rc;
}

/* acc += r / n, field by field */
static void add_mean(rt_sim_result *acc, const rt_sim_result *r, double n)
{
    acc->epoch_s += r->epoch_s / n;
    acc->stall_max += r->stall_max / n;
    acc->stall_mean += r->stall_mean / n;
    acc->compute_max_s += r->compute_max_s / n;
    acc->compute_mean_s += r->compute_mean_s / n;
    acc->compute_gap_s += r->compute_gap_s / n;
    acc->compute_cpu_s += r->compute_cpu_s / n;
    acc->credit_wait_s += r->credit_wait_s / n;
    acc->collective_s += r->collective_s / n;
    acc->link_busy_s += r->link_busy_s / n;
    acc->bytes_per_link += r->bytes_per_link / n;
    acc->latency_s += r->latency_s / n;
    acc->steps_s += r->steps_s / n;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median of v[0..n) (sorted here; n >= 1). */
static double median_of(double *v, uint32_t n)
{
    qsort(v, n, sizeof(double), cmp_double);
    return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int rt_sim_rotation(const rt_sim_shape *sh, const rt_sim_link *l, rt_sim_result *out, rt_error *err)
{
    memset(out, 0, sizeof(*out));
    if (check_shape(sh, err))
        return -1;
    if (sh->cell_cv <= 0 && sh->step_cv <= 0 && sh->worker_cv <= 0)
        return one_rotation(sh, l, 0, out, err); /* no jitter: worker_factor_cv 0 */
    /* reported because worker_factor_var can zero it: a re-predict then
     * says which rows drew no per-worker spread at all (rev27 F10) */
    double worker_cv = sqrt(exp(shape_worker_var(sh)) - 1);
    /* with jitter: the mean over rotations of independent draws, but the
     * epoch time and the stall are their medians, as a run's log is read
     * (bench/scale.sh: the median over its epochs); a few slow rotations
     * pull the mean of a skewed spread above it */
    uint32_t n = sh->jitter_rotations ? sh->jitter_rotations : SIM_JITTER_ROTATIONS;
    double *epoch = malloc(2 * (size_t)n * sizeof(double)), *stall = epoch + n;
    if (!epoch)
        return rt_fail(err, RT_EXIT_RUNTIME, "simulate: out of memory");
    for (uint32_t i = 0; i < n; i++) {
        rt_sim_result r;
        if (one_rotation(sh, l, i, &r, err)) {
            free(epoch);
            return -1;
        }
        add_mean(out, &r, n);
        epoch[i] = r.epoch_s, stall[i] = r.stall_max;
    }
    rt_debug("simulate: over %u rotations: epoch mean %.6f s median %.6f s, stall mean %.4f "
             "median %.4f, worker factor cv %.4f (of worker cv %.4f)",
             n, out->epoch_s, median_of(epoch, n), out->stall_max, median_of(stall, n), worker_cv,
             sh->worker_cv);
    out->worker_factor_cv = worker_cv;
    out->epoch_s = median_of(epoch, n);
    out->stall_max = median_of(stall, n);
    free(epoch);
    double imbalance = out->compute_max_s - out->compute_mean_s;
    out->critical = critical_of(out, imbalance, out->stall_max * out->epoch_s + out->credit_wait_s);
    return 0;
}
