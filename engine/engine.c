/*
 * engine.c - the schedule executor: runs the plan's schedule table, keeps
 * this node's blocks in the transport's window, runs the worker threads and
 * overlaps the pass of finished blocks with the next steps' compute.
 *
 * Each step, local thread t visits the block the table gives worker
 * first_worker + t.  After the step, every block whose next visitor is on
 * another node is passed there (route.h); it is needed there only at that
 * visit, so with the default schedule (c >= 2) its transfer overlaps c-1
 * steps of compute.  Before a step the engine waits only for the blocks the
 * step needs.
 *
 * Slots: the transport lands arrivals in its window in first-in, first-out
 * slot order and expects blocks to leave in that order too (transport.h).
 * The engine keeps a map block <-> slot; when the schedule lets a block leave
 * before an older one, the two blocks' bytes swap slots first (a copy that
 * the default schedule never needs).
 */
#include "engine/engine.h"
#include "engine/route.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

void rt_pin_current_thread(const rt_group *group, int local_size, int threads, int t,
                           rt_pin_mode mode);

#define NO_SLOT UINT32_MAX

typedef struct worker_slot {
    rt_engine *eng;
    uint32_t thread;
    pthread_t tid;
    rt_visit visit;
    double compute_s;     /* wall seconds inside visit() this rotation */
    double cell_s;        /* wall seconds of the last cell it ran */
    double compute_cpu_s; /* CPU seconds of the thread inside visit() this rotation */
    double compute_sys_s; /* ... of them in the kernel */
    double cpu_s;         /* CPU seconds of the last cell it ran */
    int rc;
    rt_error err;
} worker_slot;

struct rt_engine {
    const rt_plan *plan;
    const rt_group *group;
    rt_transport *tr;
    uint32_t W, B, c, T, P, rank, span, first_worker;
    int serial;
    rt_inline_mode inline_mode;
    double last_step_cpu_s;  /* CPU seconds of the previous step's cells together */
    uint32_t inline_steps;   /* steps run inline this rotation */
    uint64_t first_rotation; /* where rt_engine_run starts (resume) */
    rt_pin_mode pin;
    int local_size;
    rt_route route;     /* this node's passes and arrivals (route.h) */
    uint32_t n_slots;   /* the window */
    uint32_t *slot_of;  /* B: slot holding block b here, NO_SLOT when not here */
    size_t *len_of;     /* B: payload bytes of block b (valid while here) */
    uint32_t *block_in; /* n_slots: block in each slot, NO_SLOT when free */
    uint32_t out_slot;  /* the slot the next pass leaves from (first in, first out) */
    uint32_t arrivals;  /* entries of route.arrive received this rotation */
    void *scratch;      /* one slot's bytes, for swapping two blocks (allocated at the
                           first swap: the default schedule never swaps) */
    uint64_t swaps;     /* passes that needed a swap (never with the default schedule) */
    /* one slot per local worker (one in serial mode); the threads start at
     * the first step that is not run inline (never in serial mode) */
    worker_slot *workers;
    int threads_tried;
    uint32_t n_threads_started;
    pthread_barrier_t step_start, step_done;
    int barriers_ready;
    /* Start gate: threads wait here until every one of them exists (go = 1)
     * or one could not be created (go = -1, they exit without touching the
     * step barriers). */
    pthread_mutex_t gate_mu;
    pthread_cond_t gate_cv;
    int go;
    int quit;
    const rt_app_ops *ops;
    void *app;
    double stall_s;
    double imbalance_s, handover_s, step_end_s; /* this rotation (rt_rotation_stats) */
};

/* ---------------------------------------------------------------- threads */

/* CPU seconds of the calling thread: what a cell costs whoever runs it and
 * however busy the machine is (wall time would count waits for a core). */
static double thread_cpu_s(void)
{
    struct timespec ts;
    if (clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) != 0)
        return 0;
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* The part of them in the kernel (page faults, and the softirqs that ran in
 * its time slices, such as the network's: the kernel counts those to
 * whoever they interrupted), as the kernel apportions it by its ticks. */
static double thread_sys_s(void)
{
    struct rusage ru;
    if (getrusage(RUSAGE_THREAD, &ru) != 0)
        return 0;
    return (double)ru.ru_stime.tv_sec + (double)ru.ru_stime.tv_usec * 1e-6;
}

static int run_visit(rt_engine *e, worker_slot *w)
{
    double s0 = thread_sys_s(), c0 = thread_cpu_s(), t0 = rt_now();
    w->rc = e->ops->visit(e->app, &w->visit, &w->err);
    w->cell_s = rt_now() - t0;
    w->compute_s += w->cell_s;
    w->cpu_s = thread_cpu_s() - c0;
    w->compute_cpu_s += w->cpu_s;
    w->compute_sys_s += thread_sys_s() - s0;
    return w->rc;
}

static void *worker_main(void *arg)
{
    worker_slot *w = arg;
    rt_engine *e = w->eng;
    pthread_mutex_lock(&e->gate_mu);
    while (e->go == 0)
        pthread_cond_wait(&e->gate_cv, &e->gate_mu);
    int go = e->go;
    pthread_mutex_unlock(&e->gate_mu);
    if (go < 0)
        return NULL;
    rt_pin_current_thread(e->group, e->local_size, (int)e->T, (int)w->thread, e->pin);
    for (;;) {
        pthread_barrier_wait(&e->step_start);
        if (e->quit)
            break;
        run_visit(e, w);
        pthread_barrier_wait(&e->step_done);
    }
    return NULL;
}

static int make_worker_slots(rt_engine *e, rt_error *err)
{
    uint32_t n = e->serial ? 1 : e->T;
    e->workers = calloc(n, sizeof(worker_slot));
    if (!e->workers)
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: out of memory");
    for (uint32_t t = 0; t < n; t++) {
        e->workers[t].eng = e;
        e->workers[t].thread = t;
    }
    return 0;
}

/* Start the T worker threads (once; a failed start is not retried). */
static int start_threads(rt_engine *e, rt_error *err)
{
    if (e->threads_tried)
        return e->go > 0 ? 0
                         : rt_fail(err, RT_EXIT_RUNTIME, "engine: worker threads did not start");
    e->threads_tried = 1;
    if (pthread_barrier_init(&e->step_start, NULL, e->T + 1))
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: cannot create barriers");
    if (pthread_barrier_init(&e->step_done, NULL, e->T + 1)) {
        pthread_barrier_destroy(&e->step_start);
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: cannot create barriers");
    }
    e->barriers_ready = 1;
    int rc = 0;
    for (uint32_t t = 0; t < e->T && rc == 0; t++) {
        if (pthread_create(&e->workers[t].tid, NULL, worker_main, &e->workers[t]) != 0)
            rc = rt_fail(err, RT_EXIT_RUNTIME, "engine: cannot start worker thread %u", t);
        else
            e->n_threads_started++;
    }
    pthread_mutex_lock(&e->gate_mu);
    e->go = rc ? -1 : 1;
    pthread_cond_broadcast(&e->gate_cv);
    pthread_mutex_unlock(&e->gate_mu);
    return rc;
}

static void stop_threads(rt_engine *e)
{
    if (e->serial || !e->workers || !e->barriers_ready)
        return;
    if (e->go > 0) { /* all threads run the step loop: release them from it */
        e->quit = 1;
        pthread_barrier_wait(&e->step_start);
    }
    for (uint32_t t = 0; t < e->n_threads_started; t++)
        pthread_join(e->workers[t].tid, NULL);
    pthread_barrier_destroy(&e->step_start);
    pthread_barrier_destroy(&e->step_done);
}

/* ------------------------------------------------------------- residency */

/* Home blocks go into slots 0.. in the order they first leave, so that with
 * the default schedule passes already follow the window's slot order. */
static void init_residency(rt_engine *e)
{
    uint32_t first = e->span * e->rank, next = 0;
    for (uint32_t b = 0; b < e->B; b++)
        e->slot_of[b] = NO_SLOT;
    for (uint32_t i = 0; i < e->n_slots; i++)
        e->block_in[i] = NO_SLOT;
    const rt_route *r = &e->route;
    for (uint32_t i = 0; i < r->depart_off[e->B]; i++) {
        uint32_t b = r->depart[i];
        if (b - first < e->span && e->slot_of[b] == NO_SLOT) {
            e->slot_of[b] = next;
            e->block_in[next++] = b;
        }
    }
    for (uint32_t b = first; b < first + e->span; b++)
        if (e->slot_of[b] == NO_SLOT) {
            e->slot_of[b] = next;
            e->block_in[next++] = b;
        }
    e->out_slot = 0;
    e->arrivals = 0;
}

/* Take the next arrival; it must be the block the route says comes next. */
static int take_arrival(rt_engine *e, uint64_t rotation, rt_error *err)
{
    const rt_route *r = &e->route;
    if (e->arrivals == r->n_arrive)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "engine: rank %u waits for a block its route does not bring", e->rank);
    uint32_t want = r->arrive[e->arrivals];
    for (;;) {
        rt_arrival a;
        int got = rt_transport_wait_arrival(e->tr, &a, 1000, err);
        if (got < 0)
            return -1;
        if (got == 0)
            continue;
        if (a.block != want || a.epoch != (uint32_t)rotation)
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "engine: rank %u expected block %u (rotation %llu) from rank %u, "
                           "got block %u (rotation %u)",
                           e->rank, want, (unsigned long long)rotation, r->prev, a.block, a.epoch);
        e->slot_of[want] = a.slot;
        e->block_in[a.slot] = want;
        e->len_of[want] = a.len;
        e->arrivals++;
        return 0;
    }
}

/* Wait until the blocks step `step` needs are here. */
static int wait_for_step(rt_engine *e, uint32_t step, uint64_t rotation, rt_error *err)
{
    double t0 = rt_now();
    for (uint32_t t = 0; t < e->T; t++) {
        uint32_t b = rt_plan_schedule_block(e->plan, step, e->first_worker + t);
        while (e->slot_of[b] == NO_SLOT)
            if (take_arrival(e, rotation, err))
                return -1;
    }
    e->stall_s += rt_now() - t0;
    return 0;
}

/* Wait for the rest of this rotation's arrivals: every block is home. */
static int wait_all_home(rt_engine *e, uint64_t rotation, rt_error *err)
{
    double t0 = rt_now();
    while (e->arrivals < e->route.n_arrive)
        if (take_arrival(e, rotation, err))
            return -1;
    e->arrivals = 0;
    e->stall_s += rt_now() - t0;
    return 0;
}

/* Swap the bytes (and the map entries) of the blocks in slots x and y. */
static int swap_slots(rt_engine *e, uint32_t x, uint32_t y, rt_error *err)
{
    if (!e->scratch && !(e->scratch = rt_alloc(rt_transport_slot_bytes(e->tr))))
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: out of memory for a block swap");
    uint32_t bx = e->block_in[x], by = e->block_in[y];
    void *px = rt_transport_slot(e->tr, x), *py = rt_transport_slot(e->tr, y);
    memcpy(e->scratch, px, e->len_of[bx]);
    memcpy(px, py, e->len_of[by]);
    memcpy(py, e->scratch, e->len_of[bx]);
    e->block_in[x] = by;
    e->block_in[y] = bx;
    e->slot_of[bx] = y;
    e->slot_of[by] = x;
    e->swaps++;
    return 0;
}

/* Pass block b to the next node from the slot the window's order says. */
static int pass_block(rt_engine *e, uint32_t b, uint64_t rotation, rt_error *err)
{
    uint32_t out = e->out_slot;
    if (e->block_in[out] == NO_SLOT)
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: rank %u: slot %u is empty at block %u's pass",
                       e->rank, out, b);
    if (e->slot_of[b] != out && swap_slots(e, e->slot_of[b], out, err))
        return -1;
    if (rt_transport_pass(e->tr, out, e->len_of[b], b, (uint32_t)rotation, err))
        return -1;
    e->slot_of[b] = NO_SLOT;
    e->block_in[out] = NO_SLOT;
    e->out_slot = (out + 1) % e->n_slots;
    return 0;
}

/* After step `step`: pass on the blocks whose next visitor is elsewhere. */
static int pass_finished(rt_engine *e, uint32_t step, uint64_t rotation, rt_error *err)
{
    const rt_route *r = &e->route;
    for (uint32_t i = r->depart_off[step]; i < r->depart_off[step + 1]; i++)
        if (pass_block(e, r->depart[i], rotation, err))
            return -1;
    return 0;
}

/* ----------------------------------------------------------------- steps */

static void assign_visit(rt_engine *e, rt_visit *v, uint32_t t, uint32_t step, uint64_t rot)
{
    v->worker = e->first_worker + t;
    v->block = rt_plan_schedule_block(e->plan, step, v->worker);
    v->rotation = rot;
    v->step = step;
    v->payload = rt_transport_slot(e->tr, e->slot_of[v->block]);
    v->len = e->len_of[v->block];
}

/* --serial: all W workers' cells on one thread with one scratch (thread 0). */
static int run_step_serial(rt_engine *e, uint32_t step, uint64_t rot, rt_error *err)
{
    worker_slot *w = &e->workers[0];
    for (uint32_t t = 0; t < e->T; t++) {
        assign_visit(e, &w->visit, t, step, rot);
        w->visit.thread = 0;
        if (run_visit(e, w)) {
            *err = w->err;
            return -1;
        }
    }
    return 0;
}

/* Whether step's cells run on the orchestrating thread (rt_inline_mode). */
static int step_inline(const rt_engine *e)
{
    if (e->inline_mode == RT_INLINE_AUTO)
        return e->last_step_cpu_s < RT_INLINE_STEP_CPU_S;
    return e->inline_mode == RT_INLINE_ALWAYS;
}

/* A step on the worker threads took `wall`: its cells' spread and the rest
 * (rt_rotation_stats). */
static void account_step(rt_engine *e, double wall)
{
    double longest = 0, sum = 0;
    for (uint32_t t = 0; t < e->T; t++) {
        const double c = e->workers[t].cell_s;
        longest = c > longest ? c : longest;
        sum += c;
    }
    e->imbalance_s += longest - sum / e->T;
    e->handover_s += wall > longest ? wall - longest : 0;
}

static int run_step(rt_engine *e, uint32_t step, uint64_t rot, rt_error *err)
{
    if (e->serial)
        return run_step_serial(e, step, rot, err);
    int here = step_inline(e);
    if (!here && start_threads(e, err))
        return -1;
    for (uint32_t t = 0; t < e->T; t++) {
        assign_visit(e, &e->workers[t].visit, t, step, rot);
        e->workers[t].visit.thread = t;
    }
    if (here) { /* each cell still with its own thread index: the same scratch */
        e->inline_steps++;
        for (uint32_t t = 0; t < e->T; t++)
            if (run_visit(e, &e->workers[t]))
                break;
    } else {
        double t0 = rt_now();
        pthread_barrier_wait(&e->step_start);
        pthread_barrier_wait(&e->step_done);
        account_step(e, rt_now() - t0);
    }
    e->last_step_cpu_s = 0;
    for (uint32_t t = 0; t < e->T; t++) {
        if (e->workers[t].rc) {
            *err = e->workers[t].err;
            return -1;
        }
        e->last_step_cpu_s += e->workers[t].cpu_s;
    }
    return 0;
}

static int call_block_home(rt_engine *e, uint64_t rot, rt_error *err)
{
    for (uint32_t b = e->span * e->rank; b < e->span * (e->rank + 1); b++) {
        void *payload = rt_transport_slot(e->tr, e->slot_of[b]);
        if (e->ops->block_home(e->app, b, rot, payload, &e->len_of[b], err))
            return -1;
        if (e->len_of[b] > rt_transport_slot_bytes(e->tr))
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "engine: app put %zu bytes in block %u, the slot holds %zu",
                           e->len_of[b], b, rt_transport_slot_bytes(e->tr));
    }
    return 0;
}

/* Between rotations this node holds exactly its home blocks. */
static int check_home(rt_engine *e)
{
    uint32_t first = e->span * e->rank;
    for (uint32_t b = 0; b < e->B; b++)
        if ((e->slot_of[b] != NO_SLOT) != (b - first < e->span))
            return -1;
    return 0;
}

/* This rank's share of a rotation, for whoever checks a model against it
 * (bench/scale.sh runs the ranks with ROTOR_LOG=debug). */
static void log_rotation(const rt_engine *e, uint64_t rot, const rt_rotation_stats *st,
                         double credit_wait_s)
{
    rt_debug("engine: rank %u rotation: %.6f s, compute %.6f s (mean over threads), stall "
             "%.6f s, credit wait %.6f s, %u of %u steps inline (rotation %llu), compute CPU "
             "%.6f s, in the kernel %.6f s, step imbalance %.6f s, hand-over %.6f s, step_end "
             "%.6f s",
             e->rank, st->seconds, st->compute_s, st->stall_s, credit_wait_s, st->inline_steps,
             e->B, (unsigned long long)rot, st->compute_cpu_s, st->compute_sys_s, st->imbalance_s,
             st->handover_s, st->step_end_s);
}

static int rotation_stats(rt_engine *e, uint64_t rot, double t0, const rt_transport_stats *ts0,
                          rt_rotation_stats *st, rt_error *err)
{
    rt_transport_stats ts;
    rt_transport_get_stats(e->tr, &ts);
    double compute = 0, cpu = 0, sys = 0;
    for (uint32_t t = 0; t < (e->serial ? 1 : e->T); t++) {
        compute += e->workers[t].compute_s;
        cpu += e->workers[t].compute_cpu_s;
        sys += e->workers[t].compute_sys_s;
        e->workers[t].compute_s = e->workers[t].compute_cpu_s = e->workers[t].compute_sys_s = 0;
    }
    st->seconds = rt_now() - t0;
    st->compute_s = compute / (e->serial ? 1 : e->T);
    st->compute_cpu_s = cpu / (e->serial ? 1 : e->T);
    st->compute_sys_s = sys / (e->serial ? 1 : e->T);
    st->stall_s = e->stall_s;
    st->imbalance_s = e->imbalance_s;
    st->handover_s = e->handover_s;
    st->step_end_s = e->step_end_s;
    e->imbalance_s = e->handover_s = e->step_end_s = 0;
    st->inline_steps = e->inline_steps;
    e->inline_steps = 0;
    log_rotation(e, rot, st, ts.credit_wait_s - ts0->credit_wait_s);
    /* [bytes, stall fraction of rank 0, ..., of rank P-1]: exact sums. */
    double *v = calloc(e->P + 1, sizeof(double));
    if (!v)
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: out of memory");
    v[0] = (double)(ts.bytes_sent - ts0->bytes_sent);
    v[1 + e->rank] = st->seconds > 0 ? e->stall_s / st->seconds : 0;
    int rc = rt_transport_allreduce_f64(e->tr, v, e->P + 1, err);
    st->bytes_moved = (uint64_t)v[0];
    st->stall_frac_max = 0;
    for (uint32_t r = 0; r < e->P; r++)
        if (v[1 + r] > st->stall_frac_max)
            st->stall_frac_max = v[1 + r];
    free(v);
    e->stall_s = 0;
    return rc;
}

static int run_rotation(rt_engine *e, uint64_t rot, int *stop, rt_error *err)
{
    rt_transport_stats ts;
    rt_transport_get_stats(e->tr, &ts);
    double t0 = rt_now();
    if (call_block_home(e, rot, err))
        return -1;
    for (uint32_t s = 0; s < e->B; s++) {
        if (wait_for_step(e, s, rot, err))
            return -1;
        if (run_step(e, s, rot, err))
            return rt_error_prefix(err, "rotation %llu step %u", (unsigned long long)rot, s);
        double t_end = rt_now();
        if (e->ops->step_end && e->ops->step_end(e->app, e, rot, s, err))
            return -1;
        e->step_end_s += rt_now() - t_end;
        if (pass_finished(e, s, rot, err))
            return -1;
    }
    if (wait_all_home(e, rot, err))
        return -1;
    if (check_home(e))
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: blocks not home after rotation %llu",
                       (unsigned long long)rot);
    rt_rotation_stats st;
    if (rotation_stats(e, rot, t0, &ts, &st, err))
        return -1;
    return e->ops->rotation_end(e->app, e, rot, &st, stop, err);
}

/* ------------------------------------------------------------ public API */

static int check_config(const rt_engine_config *cfg, rt_error *err)
{
    const rt_plan *p = cfg->plan;
    int size = cfg->group->size;
    if (cfg->serial) {
        if (size != 1)
            return rt_fail(err, RT_EXIT_INPUT, "--serial replays the plan in one process");
        return 0;
    }
    if (cfg->threads < 1)
        return rt_fail(err, RT_EXIT_INPUT, "--threads must be at least 1");
    if ((uint64_t)size * (uint64_t)cfg->threads != p->workers)
        return rt_fail(err, RT_EXIT_INPUT,
                       "%s: plan is for %u workers (%u nodes x %u threads) but this launch "
                       "has %d process%s x %d thread%s = %lld workers",
                       p->dir, p->workers, p->nodes, p->threads, size, size == 1 ? "" : "es",
                       cfg->threads, cfg->threads == 1 ? "" : "s", (long long)size * cfg->threads);
    return 0;
}

int rt_engine_create(const rt_engine_config *cfg, rt_engine **out, rt_error *err)
{
    *out = NULL;
    if (check_config(cfg, err))
        return -1;
    rt_engine *e = calloc(1, sizeof(*e));
    if (!e)
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: out of memory");
    const rt_plan *p = cfg->plan;
    e->plan = p;
    e->group = cfg->group;
    e->serial = cfg->serial;
    e->inline_mode = cfg->inline_steps;
    e->first_rotation = cfg->first_rotation;
    e->pin = cfg->pin;
    e->local_size = cfg->local_size;
    e->W = p->workers;
    e->c = p->pipeline;
    e->B = p->blocks;
    e->P = (uint32_t)cfg->group->size;
    e->rank = (uint32_t)cfg->group->rank;
    e->T = e->serial ? e->W : (uint32_t)cfg->threads;
    e->span = e->c * e->T;
    e->first_worker = e->rank * e->T;
    pthread_mutex_init(&e->gate_mu, NULL);
    pthread_cond_init(&e->gate_cv, NULL);
    if (rt_route_build(p, e->P, e->T, e->rank, &e->route, err)) {
        rt_engine_destroy(e);
        return -1;
    }
    /* Room for every block a node holds at a step boundary, leaving ones
     * included (route.h): then every arrival of a step lands without waiting
     * for this node's own passes, so no ring of credit waits can close.  At
     * least one slot beyond the home blocks, or the ring could not start.
     * Each further spare slot is a block's worth of resident memory that
     * hides one more credit round trip. */
    uint32_t spare = cfg->spare_slots ? cfg->spare_slots : 1;
    uint32_t need = e->route.slots_needed + spare - 1, floor = e->span + spare;
    e->n_slots = need > floor ? need : floor;
    e->slot_of = calloc(e->B, sizeof(uint32_t));
    e->len_of = calloc(e->B, sizeof(size_t));
    e->block_in = calloc(e->n_slots, sizeof(uint32_t));
    if (!e->slot_of || !e->len_of || !e->block_in) {
        rt_engine_destroy(e);
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: out of memory");
    }
    init_residency(e);

    rt_transport_config tc = cfg->transport;
    tc.rank = cfg->group->rank;
    tc.size = cfg->group->size;
    tc.peers = cfg->group->peers;
    tc.slot_bytes = cfg->slot_bytes;
    tc.n_slots = e->n_slots;
    tc.initial_occupied = e->span;
    if (e->P > 1) {
        tc.ring.custom = 1;
        tc.ring.next = (int)e->route.next;
        tc.ring.prev = (int)e->route.prev;
    }
    if (rt_transport_open(&tc, &e->tr, err)) {
        rt_engine_destroy(e);
        return -1;
    }
    if (make_worker_slots(e, err)) {
        rt_engine_destroy(e);
        return -1;
    }
    *out = e;
    return 0;
}

int rt_engine_run(rt_engine *e, const rt_app_ops *ops, void *app, rt_error *err)
{
    e->ops = ops;
    e->app = app;
    int stop = 0;
    for (uint64_t rot = e->first_rotation; !stop; rot++)
        if (run_rotation(e, rot, &stop, err))
            return -1;
    return rt_transport_flush(e->tr, err);
}

void rt_engine_destroy(rt_engine *e)
{
    if (!e)
        return;
    stop_threads(e);
    if (e->swaps)
        rt_debug("engine: rank %u: %llu passes left out of slot order (bytes swapped first)",
                 e->rank, (unsigned long long)e->swaps);
    rt_transport_close(e->tr);
    pthread_mutex_destroy(&e->gate_mu);
    pthread_cond_destroy(&e->gate_cv);
    free(e->workers);
    rt_route_free(&e->route);
    free(e->slot_of);
    free(e->len_of);
    free(e->block_in);
    rt_free(e->scratch);
    free(e);
}

int rt_engine_rank(const rt_engine *e)
{
    return (int)e->rank;
}

int rt_engine_size(const rt_engine *e)
{
    return (int)e->P;
}

int rt_engine_threads(const rt_engine *e)
{
    return (int)e->T;
}

uint32_t rt_engine_first_worker(const rt_engine *e)
{
    return e->first_worker;
}

void rt_engine_abort(rt_engine *e, const char *why)
{
    if (e)
        rt_transport_abort(e->tr, why);
}

const char *rt_engine_transport_name(const rt_engine *e)
{
    return rt_transport_name(e->tr);
}

void rt_engine_home_blocks(const rt_engine *e, uint32_t *first, uint32_t *count)
{
    *first = e->span * e->rank;
    *count = e->span;
}

size_t rt_engine_slot_bytes(const rt_engine *e)
{
    return rt_transport_slot_bytes(e->tr);
}

uint64_t rt_engine_first_rotation(const rt_engine *e)
{
    return e->first_rotation;
}

void *rt_engine_home_payload(rt_engine *e, uint32_t block, size_t *len)
{
    if (block >= e->B || e->slot_of[block] == NO_SLOT)
        return NULL;
    if (len)
        *len = e->len_of[block];
    return rt_transport_slot(e->tr, e->slot_of[block]);
}

int rt_engine_barrier(rt_engine *e, rt_error *err)
{
    return rt_transport_barrier(e->tr, err);
}

int rt_engine_allreduce_f64(rt_engine *e, double *v, size_t n, rt_error *err)
{
    return rt_transport_allreduce_f64(e->tr, v, n, err);
}

int rt_engine_allreduce_i64(rt_engine *e, int64_t *v, size_t n, rt_error *err)
{
    return rt_transport_allreduce_i64(e->tr, v, n, err);
}

int rt_engine_gatherv(rt_engine *e, const void *buf, size_t len, void **out_at_root,
                      size_t *lens_at_root, rt_error *err)
{
    return rt_transport_gatherv(e->tr, buf, len, out_at_root, lens_at_root, err);
}

int rt_engine_bcast(rt_engine *e, void *buf, size_t len, rt_error *err)
{
    return rt_transport_bcast(e->tr, buf, len, err);
}
