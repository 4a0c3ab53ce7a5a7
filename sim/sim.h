/*
 * sim.h - a model of how long one rotation (epoch) of the schedule takes on
 * N nodes x T threads with a given link and kernel rate, without running it.
 *
 * It replays what engine/engine.c does, step by step, on a timeline per node:
 *   1. wait until at most c - 1 arrivals are outstanding (time spent here is
 *      the node's *stall*, as the engine reports it);
 *   2. compute: every local worker runs its cell (w, schedule(s, w)); the
 *      step ends when the slowest local worker is done (thread barrier).
 *      By default every node has its own T cores, so a cell takes
 *      work / rate.  With host_cores > 0, nodes_per_host nodes share one
 *      host of that many cores, and the workers computing on it at any
 *      moment share them equally (processor sharing: each runs at
 *      min(1, cores / busy) of a core); a worker that is done or whose node
 *      is waiting (stall, credits, collectives) frees its share.  That is
 *      what N ranks of T threads on one C-core machine do (bench/scale.sh).
 *      Cores that compute at once may each be slower than one alone
 *      (busy_core_speed: shared cache and memory bandwidth), so a worker
 *      runs at min(1, cores / busy) x the speed of min(busy, cores) busy
 *      cores.  While a link transmits, the kernel's work for it
 *      (net_cpu_s_per_byte) takes cores from the hosts of both ends first,
 *      for as long as the bytes take at the link's rate, also those that a
 *      token bucket's burst lets through at once (their CPU is paid alike);
 *      what the cores cannot do while the links ask for more than all of
 *      them is owed, and the kernel keeps every core until it is done.
 *      A step that follows an idle time of its node (wake_after_s or more
 *      since its previous compute ended) computes at wake_speed.
 *      Run queue (tick_s > 0, with host_cores): sharing is how cells much
 *      longer than a time slice run, not short ones: Linux lets a runnable
 *      worker run its cell to the end unless the tick finds others waiting.
 *      So each core runs one worker at a time, the others wait in the host's
 *      queue in the order they became runnable (ties, such as the nodes
 *      that one collective releases together, in an order drawn from a fixed
 *      seed), and at every tick a core whose worker has others waiting
 *      gives it to the first of them (the worker goes to the back).  A
 *      waiting worker does not compute; its wait is part of its cell's wall
 *      time, except where its node had blocked for an arrival: its
 *      orchestrator then needs a core to see the arrival, and until it gets
 *      one the node is still waiting (stall, as the engine logs it).
 *      After a collective (the rotation's start follows one) the
 *      orchestrator needs a core to go on (a turn of no work), and keeps it
 *      for cells it runs inline that follow at once; worker threads give
 *      theirs up after each cell (the step's barrier).  A pass goes to the
 *      node's sender thread (over TCP, blocks above 64 KiB), which needs a
 *      turn too before the pass is on its way.  The kernel's network work
 *      takes the cores ahead of the queue as above.  With cells much
 *      longer than the tick the turns converge to processor sharing.
 *      Leaving in turns (leave_tick_s > 0, with host_cores and processor
 *      sharing): a step's collective releases all its nodes at one moment,
 *      and on a host with more threads than cores they cannot all run: the
 *      woken threads - each node's orchestrator, then the sender thread its
 *      pass wakes (it writes the node's passes in order) - go one at a time
 *      when a core is free (a cell ended, or a thread blocked) or when the
 *      tick lets one in per core; those one collective woke in an order
 *      drawn from a fixed seed, those an earlier one woke first.  A node
 *      leaves the collective at its orchestrator's turn (no stall: the
 *      engine counts it in the step's end) and its pass goes on the wire
 *      at its sender's.  Measured on lda 8 x 1 (8 ranks on 2 cores): the
 *      ranks leave a step's all-reduce over 7 ms (max - min, mean) while
 *      the ranks out first compute, and a sender waits longer for a core
 *      the later its rank got out, so blocks come late and the next rank
 *      waits for them;
 *   3. optional per-step all-reduce (LDA's topic totals) across all nodes;
 *   4. pass the block at the end of the node's segment to the next node:
 *      the pass waits for a credit (the next node has span + S slots, S spare
 *      slots, default 1, so the k-th pass needs the next node's (k-S)-th pass
 *      to have left its slot: on the wire, or, over TCP, written into the
 *      socket's send buffer, which takes it long before it is on the wire
 *      unless the buffer is full; see rt_sim_link.buffer_bytes), then
 *      queues on the node's outgoing link: per-message overhead plus
 *      bytes / bandwidth, arriving one latency later.  Only the waits for
 *      arrivals are stall, as in the engine; credit waits are not.
 * After B steps each node waits for its last arrival, and the rotation ends
 * with the engine's statistics all-reduce (plus the app's) across all nodes,
 * and once the hosts have done the kernel work they still owe (the next
 * rotation's cells could not start before).
 * Every rotation starts with all blocks home and all nodes in step, so one
 * rotation from time 0 is the steady state.  The nodes' timelines are
 * advanced together, event by event (shared cores couple them).
 *
 * The model is deterministic: the same input gives the same numbers.
 * It knows nothing of the engine or apps (ground only); tools/cmd_simulate.c
 * fills the shape from a plan or from sizes.
 */
#ifndef ROTOR_SIM_H
#define ROTOR_SIM_H

#include "ground/ground.h"

#include <stdint.h>

typedef struct rt_sim_link {
    double gbps;         /* bandwidth of each node's link, per direction (<= 0: infinite) */
    double latency_s;    /* one-way latency per message */
    double overhead_s;   /* per-message software overhead on the sending side */
    double buffer_bytes; /* what the sending side holds beyond the wire: a pass leaves its
                            slot (and the credit goes back) once all but this many bytes
                            of the stream up to its end are on the wire (TCP: the
                            socket's send buffer; 0: once it is all on the wire) */
    double burst_bytes;  /* a shaped link's token bucket (tc tbf's burst): after an idle
                            time up to this many bytes go at once, the rest at gbps; 0:
                            a real link, always at gbps */
} rt_sim_link;

/* The shortest scheduler tick the run queue accepts (rt_sim_shape.tick_s). */
#define RT_SIM_MIN_TICK_S 100e-6

typedef enum rt_sim_collectives { RT_SIM_TREE = 0, RT_SIM_STAR = 1 } rt_sim_collectives;

typedef struct rt_sim_shape {
    uint32_t nodes, threads, pipeline; /* W = nodes x threads, B = pipeline x W */
    const uint32_t *schedule;          /* B x W: block of worker w at step s (the plan's) */
    const double *cell_work;           /* W x B: work units of cell (w, b), row-major by w */
    const double *block_bytes;         /* B: payload bytes of block b */
    double rate;                       /* work units per second of one thread (<= 0: infinite) */
    double host_cores;                 /* > 0: cores of each host, shared by its busy workers;
                                          0: every node has its own T cores */
    uint32_t nodes_per_host;           /* with host_cores: nodes 0..H-1 on the first host, and so
                                          on (0: all nodes on one host) */
    double busy_core_speed;            /* in (0, 1]: what a core computes, as a fraction of `rate`,
                                          while all of its host's cores compute at once (they share
                                          the last-level cache and memory bandwidth); with k of C
                                          busy, 1 - (1 - this) (k - 1) / (C - 1); 0: 1, no contention */
    double net_cpu_s_per_byte; /* CPU seconds that moving a byte between two nodes takes (the
                                  kernel's TCP copies and packet handling, both ends): while a
                                  link transmits, gbps / 8 x this many cores of its sender's
                                  and receiver's hosts (half on each) are the kernel's, ahead
                                  of the cells (a load above the cores: the rest is owed, and
                                  paid with every core before the cells go on); 0 (or an
                                  infinite link): none */
    double step_overhead_s;    /* fixed cost of every step (thread hand-off, barrier) */
    double inline_below_s;     /* a step that follows one whose cells on the node took less CPU
                                  than this together (their kernel time at the speed of the
                                  cores as they ran, jitter included; a rotation's first
                                  step: its own cells, without jitter, at the speed of T
                                  more busy cores, as if threaded) runs them one after
                                  another on one thread, at a cost of inline_step_s instead
                                  of step_overhead_s (the engine's --inline-steps auto, which
                                  decides on the previous step's CPU: 2 ms); 0: never */
    double inline_step_s;
    double step_reduce_bytes;   /* all-reduced after every step (0: none) */
    uint32_t step_reduce_every; /* ... every this many steps and after the last (0 = 1) */
    double epoch_reduce_bytes;  /* all-reduced once per rotation (statistics, metrics) */
    rt_sim_collectives collectives;
    uint32_t spare_slots; /* window slots beyond the home blocks (0 = 1, the engine's) */
    double cell_cv;       /* > 0: each cell's time varies, log-normal with mean work / rate
                             and this coefficient of variation (time slices on a loaded
                             machine), drawn from a fixed seed; over jitter_rotations
                             rotations (0 = 32), the result's epoch_s and stall_max
                             are the medians, the rest the means */
    double worker_cv;     /* > 0: the part of cell_cv that a worker's cells share within a
                             rotation (a thread that is slow for a while: it shares its
                             core with the kernel's network work or another process), a
                             log-normal factor per worker and rotation; the cells keep
                             the rest of cell_cv's spread.  It does not average out over
                             a worker's cells, so its neighbours wait for it */
    double step_cv;       /* > 0: each step's fixed cost varies so (thread hand-offs that wait
                             for a busy core), with the same averaging */
    uint32_t jitter_rotations;
    double wake_speed;   /* in (0, 1]: a step whose node was idle at least wake_after_s
                            before it (a wait for an arrival, a credit or a collective)
                            computes at this fraction of its speed (a core that idled:
                            cold caches, a vCPU the host gave away); 0: 1, no cost */
    double wake_after_s; /* the idle time that costs it (0: any) */
    double tick_s;       /* with host_cores: > 0, a run queue per host instead of processor
                            sharing (see "Run queue" above): the scheduler's tick, at which
                            a core whose worker has others waiting switches to the first of
                            them (1 / CONFIG_HZ: 4 ms at HZ=250); 0: processor sharing */
    double leave_tick_s; /* with host_cores and processor sharing: > 0, the threads a step's
                            collective wakes at once take turns on a crowded host (see
                            "Leaving in turns"), and the scheduler's tick, at which waiting
                            ones get in anyway; 0: all go at once */
} rt_sim_shape;

typedef struct rt_sim_result {
    double epoch_s;        /* predicted rotation time */
    double stall_max;      /* max over nodes of stall / epoch (as the engine logs it) */
    double stall_mean;     /* mean over nodes */
    double compute_max_s;  /* max over nodes of the sum of its step compute times */
    double compute_mean_s; /* mean over workers of their own compute sum */
    double compute_cpu_s;  /* max over nodes of a node's compute CPU as the engine logs a
                              rank's (the mean over its threads of the CPU seconds of their
                              cells): each cell's kernel time at the speed of the cores
                              (busy_core_speed, wake_speed and jitter included) as of its
                              start, without its waits for a core, which the wall time above
                              has where workers outnumber cores (with jitter, the mean) */
    double compute_gap_s;  /* max minus min over nodes of a node's compute as the engine
                              logs a rank's (the mean over its threads of their compute
                              sums): how far the slowest node's compute lags the fastest's
                              in a rotation (what its successor waits for beyond the
                              transfers; with jitter, the mean over rotations) */
    double credit_wait_s;  /* max over nodes of time spent waiting for credits */
    double collective_s;   /* time inside all-reduces (same on every node) */
    double link_busy_s;    /* max over links of time spent sending */
    double bytes_per_link; /* max over nodes of bytes sent per rotation */
    double latency_s;      /* B x (latency + overhead): pure per-hop cost on one link */
    double steps_s;        /* B x step_overhead_s: the fixed cost of the steps */
    /* the cv of the factor per worker and rotation the jitter drew from worker_cv: what
     * of it the cells' own spread, averaged over a worker's cells, does not already give
     * (0 where that is all of it, or without worker_cv) */
    double worker_factor_cv;
    const char *critical; /* "compute", "imbalance", "bandwidth", "latency", "collectives",
                             or "steps" (many small steps: fixed per-step costs dominate) */
} rt_sim_result;

/* Time of one all-reduce of `bytes` among `nodes` (the algorithms of
 * verbs/collectives.c; 0 for one node). */
double rt_sim_allreduce_s(const rt_sim_link *link, uint32_t nodes, double bytes,
                          rt_sim_collectives algo);

/* The model's fixed cost of a step (rt_sim_shape.step_overhead_s) from one
 * measured step with every worker a thread: the step ran from step_start to
 * step_end and worker i's visit from visit_start[i] to visit_end[i] (a visit
 * that began before step_start, left from an earlier step, is not this
 * step's).  The time before the first visit and after the last: the thread
 * hand-offs and the app's step end.  Not the step less its slowest visit:
 * with more workers than cores the visits run one after another, and that
 * span, their waits for a core, is what the model's sharing of the cores
 * (host_cores) makes itself; counted in the step's cost too it was counted
 * twice (on 2 cores: 1-4 ms a step that way, 70-170 us this way).  0 when
 * no visit of this step was timed. */
double rt_sim_step_rest(double step_start, double step_end, const double *visit_start,
                        const double *visit_end, uint32_t n);

/* Simulate one rotation.  Returns 0, or -1 with err (bad shape, no memory). */
int rt_sim_rotation(const rt_sim_shape *shape, const rt_sim_link *link, rt_sim_result *out,
                    rt_error *err);

#endif
