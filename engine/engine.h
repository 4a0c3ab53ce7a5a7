/*
 * engine.h - the schedule executor.
 *
 * The engine owns: this node's place in the group (rank, size, peers), the
 * transport, `threads` worker threads (pinned with hwloc), and this node's
 * parameter blocks, which it moves as the plan's schedule table says
 * (partition/partition.h).  An app gives it a
 * vtable; the engine runs *rotations*.  One rotation = one epoch = B steps in
 * which every block visits every worker exactly once and returns home.
 *
 * Per rotation, on each node:
 *   1. block_home() for every block whose home is this node (blocks are at
 *      home now): the app may (re)write the payload and set its length.
 *   2. B steps.  In step s every local worker thread t calls visit() on the
 *      block the schedule gives it; after the step, blocks whose next visitor
 *      is on another node are passed there,
 *      the outgoing transfer overlapped with the next step's compute.
 *      After each step (all local threads done) step_end() runs on the
 *      orchestrating thread; it may use collectives (all ranks call them in
 *      the same order).
 *   3. When every block is home again: rotation_end() on the orchestrating
 *      thread, which may use collectives, log metrics and ask to stop.
 *
 * Within a step, workers touch disjoint rows (their own row block) and
 * disjoint column blocks, and each block's visits happen in schedule order,
 * so the result equals a single-threaded replay of the schedule, bit for bit,
 * for any split of the W workers over nodes and threads.
 */
#ifndef ROTOR_ENGINE_H
#define ROTOR_ENGINE_H

#include "partition/partition.h"
#include "verbs/transport.h"
#include "ground/ground.h"

typedef struct rt_engine rt_engine;

/* Who we are: from flags, or from the launcher's environment, which the
 * tools read (tools/launch_env.c) and pass down here. */
typedef struct rt_group_config {
    int rank, size;       /* -1 = not given: a single process (rank 0 of 1) */
    int local_rank;       /* rank among processes on this host (-1 = the rank) */
    const char *source;   /* where rank and size came from (NULL = "flags") */
    const char *hostfile; /* one line per rank: "host[:port]" or "host [port]" */
    int base_port;        /* port for hostfile lines without one: base_port + rank */
    int pmix;             /* rank and size (when -1) from the launcher's PMIx server, and
                             without a hostfile every rank's address (engine/pmix.c) */
    int pmix_secret;      /* with pmix and more than one rank: rank 0 makes a job secret
                             and every rank receives it through PMIx (rt_group.secret) */
} rt_group_config;

/* A secret made by rt_transport_new_secret: 64 hex digits and a NUL. */
#define RT_GROUP_SECRET_CAP 65

typedef struct rt_group {
    int rank, size, local_rank;
    rt_peer *peers;  /* size entries (NULL when size == 1) */
    char source[64]; /* where rank/size came from: "flags", "rotor launch", "mpirun", ... */
    char secret[RT_GROUP_SECRET_CAP]; /* cfg->pmix_secret: the job secret ("" otherwise);
                                         rt_group_forget_secret once it is used */
} rt_group;

int rt_group_resolve(const rt_group_config *cfg, rt_group *group, rt_error *err);
void rt_group_free(rt_group *group);
/* Wipe group->secret (rt_group_free does too). */
void rt_group_forget_secret(rt_group *group);
/* 1 when this build can bootstrap through PMIx (libpmix found at build time). */
int rt_pmix_compiled(void);
/* The group from PMIx: rank, size, without a hostfile a free port of every
 * rank, and with cfg->pmix_secret the job secret (exchanged through the PMIx
 * server).  Called by rt_group_resolve for cfg->pmix. */
int rt_pmix_group(const rt_group_config *cfg, rt_group *g, rt_error *err);
/* Read a hostfile into peers (exactly `size` usable lines expected). */
int rt_hostfile_read(const char *path, int size, int base_port, rt_peer **peers, rt_error *err);

typedef enum rt_pin_mode { RT_PIN_AUTO = 0, RT_PIN_YES = 1, RT_PIN_NO = 2 } rt_pin_mode;

/* Who runs a step's cells.  Handing a step to the worker threads and
 * waiting for them costs a wake-up of each, and on a busy machine a wait
 * for a core each time: tens of microseconds on idle cores, 10-30 ms per
 * step at load 13-27 on 2 cores (MovieLens 100K, 2 threads: 80 steps took
 * 1.2-2.8 s, the same cells on one thread 0.27 s).  RT_INLINE_AUTO runs a
 * step's cells one after another on the orchestrating thread when the
 * previous step's cells took together less than RT_INLINE_STEP_CPU_S of CPU
 * time (CPU, not wall: the choice does not follow the load), else on the
 * worker threads (started at the first step that needs them).  2 ms: a
 * MovieLens 100K step is 0.65 ms of CPU (median; 1.0 ms at the 99th
 * percentile, 1.3 ms at most, measured at load 13, where other processes'
 * cache traffic inflates it), so it stays inline with room to spare; on
 * idle cores a step just under the bound costs at most (T - 1) / T of it
 * more than on T threads, and that is what the bound gives away: at 4 ms,
 * 3 of the 4 steps of a warp LDA sweep at K = 1000 on AP (3.8 ms of CPU
 * each) ran inline, at 19M tokens/s on 2 threads against 35M on the worker
 * threads (KOS: 20M against 34M).  The model is the same bits either
 * way: the cells of a step are independent and each keeps its thread index
 * (per-thread scratch). */
typedef enum rt_inline_mode {
    RT_INLINE_AUTO = 0,
    RT_INLINE_ALWAYS = 1, /* every step on the orchestrating thread; no worker threads */
    RT_INLINE_NEVER = 2   /* every step on the worker threads */
} rt_inline_mode;
#define RT_INLINE_STEP_CPU_S 2e-3

typedef struct rt_engine_config {
    const rt_plan *plan;
    const rt_group *group;
    int threads;                   /* worker threads on this node (= plan->threads
                                      unless the plan is replayed with other splits) */
    rt_transport_config transport; /* kind and ib knobs; the engine fills the rest */
    rt_pin_mode pin;
    int local_size;              /* processes on this host, for RT_PIN_AUTO (0 = unknown) */
    size_t slot_bytes;           /* largest payload the app will put in a block */
    uint32_t spare_slots;        /* window slots beyond the home blocks (0 = 1): each is a
                                    block of memory; a second one lets a pass start before
                                    the next node's previous pass has returned its credit,
                                    which a bandwidth- or latency-bound ring needs */
    int serial;                  /* 1: run all W workers of the plan on one thread
                                    in schedule order (reference replay; size 1 only) */
    rt_inline_mode inline_steps; /* who runs a step's cells (ignored with serial) */
    uint64_t first_rotation;     /* the rotation rt_engine_run starts with (0; a resumed
                                    run: the next one, with the home payloads
                                    written back through rt_engine_home_payload) */
} rt_engine_config;

typedef struct rt_visit {
    uint32_t worker;   /* global worker id (row block) */
    uint32_t thread;   /* local thread index 0..threads-1 (per-thread scratch) */
    uint32_t block;    /* column block */
    uint64_t rotation; /* 0-based */
    uint32_t step;     /* 0..B-1 */
    void *payload;     /* the block's bytes, RT_ALIGN aligned */
    size_t len;        /* payload length set by block_home */
} rt_visit;

typedef struct rt_rotation_stats {
    double seconds;        /* wall time of the rotation on this rank */
    double compute_s;      /* sum over local threads of time inside visit() / threads
                              (a step run inline counts each cell for its thread) */
    double compute_cpu_s;  /* the same in CPU seconds of the threads that ran the cells (their
                              waits for a core left out; the kernel's work done in their
                              time slices, such as network softirqs, counted) */
    double compute_sys_s;  /* the part of compute_cpu_s in the kernel (its page faults and the
                              softirqs that interrupted it), as the kernel's ticks apportion it */
    uint32_t inline_steps; /* steps of this rotation whose cells ran on the
                              orchestrating thread (rt_inline_mode) */
    double stall_s;        /* orchestrator time waiting for blocks to arrive */
    /* Where the steps' wall time went besides the cells, summed over the
     * steps run on the worker threads (their wall = the mean cell + these
     * two): imbalance_s, the longest cell less the mean (threads idle at the
     * step's end, waiting for the slowest); handover_s, the step less its
     * longest cell (waking the threads and being woken).  Wall times: on a
     * busy machine they include waits for a core. */
    double imbalance_s, handover_s;
    double step_end_s;     /* orchestrator time in the app's step_end (collectives included) */
    double stall_frac_max; /* max over ranks of stall_s / seconds */
    uint64_t bytes_moved;  /* sum over ranks of payload bytes passed this rotation */
} rt_rotation_stats;

typedef struct rt_app_ops {
    /* Orchestrating thread, block at home.  Write/refresh the payload (at most
     * slot_bytes) and set *len.  Required. */
    int (*block_home)(void *app, uint32_t block, uint64_t rotation, void *payload, size_t *len,
                      rt_error *err);
    /* Worker thread.  Required. */
    int (*visit)(void *app, const rt_visit *v, rt_error *err);
    /* Orchestrating thread, after every local thread finished step `step`.  Optional. */
    int (*step_end)(void *app, rt_engine *eng, uint64_t rotation, uint32_t step, rt_error *err);
    /* Orchestrating thread, all blocks home again.  Set *stop = 1 to finish.  Required. */
    int (*rotation_end)(void *app, rt_engine *eng, uint64_t rotation,
                        const rt_rotation_stats *stats, int *stop, rt_error *err);
} rt_app_ops;

/* Connect to the group and start the transport; 0, or -1 with err.  The
 * engine keeps cfg->plan and cfg->group (they must outlive it) and copies
 * the rest of cfg. */
int rt_engine_create(const rt_engine_config *cfg, rt_engine **out, rt_error *err);
/* Run rotations until rotation_end sets *stop.  Any error on any rank makes
 * this return -1 (the message names the failing peer when it was the network). */
int rt_engine_run(rt_engine *e, const rt_app_ops *ops, void *app, rt_error *err);
void rt_engine_destroy(rt_engine *e);
/* This rank stops on an error of its own (`why`, its one-line message):
 * the other ranks are told, and report "rank R stopped: WHY" instead of a
 * lost connection (rt_transport_abort).  Call before rt_engine_destroy;
 * NULL e: nothing. */
void rt_engine_abort(rt_engine *e, const char *why);

int rt_engine_rank(const rt_engine *e);
int rt_engine_size(const rt_engine *e);
int rt_engine_threads(const rt_engine *e);
/* Global ids of the workers this node runs: first .. first + threads - 1. */
uint32_t rt_engine_first_worker(const rt_engine *e);
const char *rt_engine_transport_name(const rt_engine *e);
/* The blocks whose home is this node: first .. first + count - 1 (they sit
 * here between rotations and after the run). */
void rt_engine_home_blocks(const rt_engine *e, uint32_t *first, uint32_t *count);
/* Payload of home block b between rotations (before the run and after it
 * returned, too): valid only for blocks whose home is this node. */
void *rt_engine_home_payload(rt_engine *e, uint32_t block, size_t *len);
/* Capacity of every block slot (at least the configured slot_bytes). */
size_t rt_engine_slot_bytes(const rt_engine *e);
/* The rotation rt_engine_run starts with (rt_engine_config.first_rotation). */
uint64_t rt_engine_first_rotation(const rt_engine *e);

/* Collectives for apps (orchestrating thread only, same order on all ranks),
 * as verbs/transport.h describes them: on rank 0, rt_engine_gatherv's
 * *out_at_root is malloc'd and the caller frees it. */
int rt_engine_barrier(rt_engine *e, rt_error *err);
int rt_engine_allreduce_f64(rt_engine *e, double *v, size_t n, rt_error *err);
int rt_engine_allreduce_i64(rt_engine *e, int64_t *v, size_t n, rt_error *err);
int rt_engine_gatherv(rt_engine *e, const void *buf, size_t len, void **out_at_root,
                      size_t *lens_at_root, rt_error *err);
int rt_engine_bcast(rt_engine *e, void *buf, size_t len, rt_error *err);

#endif
