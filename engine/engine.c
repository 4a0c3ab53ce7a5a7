/*
 * engine.c - the schedule executor: follows the plan's rotation schedule,
 * keeps this node's part of the block conveyor, runs the worker threads and
 * overlaps the ring pass of finished blocks with the next step's compute.
 *
 * The conveyor (partition/partition.h): node n covers global positions
 * [span*n, span*(n+1)) with span = pipeline * threads.  res[j] is the block at
 * node-local offset j; local thread t works on offset c*t + c - 1.  After each
 * step the block at offset span-1 leaves for the next node and every other
 * block moves up one offset; the block the previous node just sent becomes
 * offset 0.  It is only needed c-1 steps later, so its transfer overlaps
 * compute (with c >= 2).
 */
#include "engine/engine.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

void rt_pin_current_thread(const rt_group *group, int local_size, int threads, int t,
                           rt_pin_mode mode);

typedef struct resident {
    uint32_t slot;  /* window slot holding the bytes (valid once arrived) */
    uint32_t block; /* column block id */
    uint32_t tag;   /* rotation tag the block was (or will be) passed with */
    size_t len;     /* payload bytes */
    int arrived;    /* 0 while the bytes are still on their way */
} resident;

typedef struct worker_slot {
    rt_engine *eng;
    uint32_t thread;
    pthread_t tid;
    rt_visit visit;
    double compute_s;
    int rc;
    rt_error err;
} worker_slot;

struct rt_engine {
    const rt_plan *plan;
    const rt_group *group;
    rt_transport *tr;
    uint32_t W, B, c, T, P, rank, span, first_worker;
    int serial;
    rt_pin_mode pin;
    int local_size;
    resident *res;    /* span entries, index = local offset */
    uint32_t pending; /* entries res[0 .. pending-1] have not arrived yet */
    /* worker threads (none in serial mode) */
    worker_slot *workers;
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
};

/* ---------------------------------------------------------------- threads */

static int run_visit(rt_engine *e, worker_slot *w)
{
    double t0 = rt_now();
    w->rc = e->ops->visit(e->app, &w->visit, &w->err);
    w->compute_s += rt_now() - t0;
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

static int start_threads(rt_engine *e, rt_error *err)
{
    uint32_t n = e->serial ? 1 : e->T;
    e->workers = calloc(n, sizeof(worker_slot));
    if (!e->workers)
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: out of memory");
    for (uint32_t t = 0; t < n; t++) {
        e->workers[t].eng = e;
        e->workers[t].thread = t;
    }
    if (e->serial)
        return 0;
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

/* ----------------------------------------------------------- the conveyor */

/* Block at local offset j during step s of any rotation. */
static uint32_t block_at(const rt_engine *e, uint32_t j, uint32_t s)
{
    uint64_t pos = (uint64_t)e->span * e->rank + j;
    return (uint32_t)((pos + e->B - s % e->B) % e->B);
}

static void init_conveyor(rt_engine *e)
{
    /* Offset span-1 leaves first, so it sits in slot 0 (the transport's
     * FIFO release order); offset 0 leaves last, from slot span-1. */
    for (uint32_t j = 0; j < e->span; j++) {
        e->res[j].slot = e->span - 1 - j;
        e->res[j].block = block_at(e, j, 0);
        e->res[j].tag = 0;
        e->res[j].len = 0;
        e->res[j].arrived = 1;
    }
    e->pending = 0;
}

/* Wait until at most `max_pending` entries are still on their way. */
static int wait_arrivals(rt_engine *e, uint32_t max_pending, rt_error *err)
{
    double t0 = rt_now();
    while (e->pending > max_pending) {
        rt_arrival a;
        int got = rt_transport_wait_arrival(e->tr, &a, 1000, err);
        if (got < 0)
            return -1;
        if (got == 0)
            continue;
        resident *r = &e->res[e->pending - 1];
        if (a.block != r->block || a.epoch != r->tag)
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "engine: rank %u expected block %u (rotation %u) from rank %u, "
                           "got block %u (rotation %u)",
                           e->rank, r->block, r->tag, (e->rank + e->P - 1) % e->P, a.block,
                           a.epoch);
        r->slot = a.slot;
        r->len = a.len;
        r->arrived = 1;
        e->pending--;
    }
    e->stall_s += rt_now() - t0;
    return 0;
}

/* Send the block at the last offset on and shift the conveyor by one. */
static int advance_conveyor(rt_engine *e, uint32_t next_step, uint64_t rotation, rt_error *err)
{
    resident leaving = e->res[e->span - 1];
    memmove(&e->res[1], &e->res[0], (e->span - 1) * sizeof(resident));
    if (e->P == 1) {
        e->res[0] = leaving; /* the ring is this node: the block stays put */
        return 0;
    }
    if (rt_transport_pass(e->tr, leaving.slot, leaving.len, leaving.block, (uint32_t)rotation, err))
        return -1;
    /* The block the previous node sent after this step; it is tagged with
     * the rotation of the step it finished. */
    uint32_t s = next_step % e->B;
    e->res[0] = (resident){.slot = UINT32_MAX,
                           .block = block_at(e, 0, s),
                           .tag = (uint32_t)rotation,
                           .len = 0,
                           .arrived = 0};
    e->pending++;
    return 0;
}

static resident *find_home_block(rt_engine *e, uint32_t block)
{
    for (uint32_t j = 0; j < e->span; j++)
        if (e->res[j].block == block && e->res[j].arrived)
            return &e->res[j];
    return NULL;
}

/* ----------------------------------------------------------------- steps */

static void assign_visit(rt_engine *e, rt_visit *v, uint32_t t, uint32_t step, uint64_t rot)
{
    resident *r = &e->res[e->c * t + e->c - 1];
    v->worker = e->first_worker + t;
    v->block = r->block;
    v->rotation = rot;
    v->step = step;
    v->payload = rt_transport_slot(e->tr, r->slot);
    v->len = r->len;
}

static int run_step(rt_engine *e, uint32_t step, uint64_t rot, rt_error *err)
{
    if (e->serial) {
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
    for (uint32_t t = 0; t < e->T; t++) {
        assign_visit(e, &e->workers[t].visit, t, step, rot);
        e->workers[t].visit.thread = t;
    }
    pthread_barrier_wait(&e->step_start);
    pthread_barrier_wait(&e->step_done);
    for (uint32_t t = 0; t < e->T; t++)
        if (e->workers[t].rc) {
            *err = e->workers[t].err;
            return -1;
        }
    return 0;
}

static int call_block_home(rt_engine *e, uint64_t rot, rt_error *err)
{
    for (uint32_t j = 0; j < e->span; j++) {
        resident *r = &e->res[j];
        void *payload = rt_transport_slot(e->tr, r->slot);
        if (e->ops->block_home(e->app, r->block, rot, payload, &r->len, err))
            return -1;
        if (r->len > rt_transport_slot_bytes(e->tr))
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "engine: app put %zu bytes in block %u, the slot holds %zu", r->len,
                           r->block, rt_transport_slot_bytes(e->tr));
    }
    return 0;
}

static int check_home(rt_engine *e)
{
    for (uint32_t j = 0; j < e->span; j++)
        if (e->res[j].block != block_at(e, j, 0) || !e->res[j].arrived)
            return -1;
    return 0;
}

static int rotation_stats(rt_engine *e, double t0, uint64_t bytes0, rt_rotation_stats *st,
                          rt_error *err)
{
    rt_transport_stats ts;
    rt_transport_get_stats(e->tr, &ts);
    double compute = 0;
    for (uint32_t t = 0; t < (e->serial ? 1 : e->T); t++) {
        compute += e->workers[t].compute_s;
        e->workers[t].compute_s = 0;
    }
    st->seconds = rt_now() - t0;
    st->compute_s = compute / (e->serial ? 1 : e->T);
    st->stall_s = e->stall_s;
    /* [bytes, stall fraction of rank 0, ..., of rank P-1]: exact sums. */
    double *v = calloc(e->P + 1, sizeof(double));
    if (!v)
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: out of memory");
    v[0] = (double)(ts.bytes_sent - bytes0);
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
        if (wait_arrivals(e, e->c - 1, err))
            return -1;
        if (run_step(e, s, rot, err))
            return rt_error_prefix(err, "rotation %llu step %u", (unsigned long long)rot, s);
        if (e->ops->step_end && e->ops->step_end(e->app, e, rot, s, err))
            return -1;
        if (advance_conveyor(e, s + 1, rot, err))
            return -1;
    }
    if (wait_arrivals(e, 0, err))
        return -1;
    if (check_home(e))
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: blocks not home after rotation %llu",
                       (unsigned long long)rot);
    rt_rotation_stats st;
    if (rotation_stats(e, t0, ts.bytes_sent, &st, err))
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
    e->res = calloc(e->span, sizeof(resident));
    if (!e->res) {
        free(e);
        return rt_fail(err, RT_EXIT_RUNTIME, "engine: out of memory");
    }
    init_conveyor(e);

    rt_transport_config tc = cfg->transport;
    tc.rank = cfg->group->rank;
    tc.size = cfg->group->size;
    tc.peers = cfg->group->peers;
    tc.slot_bytes = cfg->slot_bytes;
    tc.n_slots = e->span + 2; /* resident blocks + one arriving + one leaving */
    tc.initial_occupied = e->span;
    if (rt_transport_open(&tc, &e->tr, err) || start_threads(e, err)) {
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
    for (uint64_t rot = 0; !stop; rot++)
        if (run_rotation(e, rot, &stop, err))
            return -1;
    return rt_transport_flush(e->tr, err);
}

void rt_engine_destroy(rt_engine *e)
{
    if (!e)
        return;
    stop_threads(e);
    rt_transport_close(e->tr);
    pthread_mutex_destroy(&e->gate_mu);
    pthread_cond_destroy(&e->gate_cv);
    free(e->workers);
    free(e->res);
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

const char *rt_engine_transport_name(const rt_engine *e)
{
    return rt_transport_name(e->tr);
}

void rt_engine_home_blocks(const rt_engine *e, uint32_t *first, uint32_t *count)
{
    *first = e->span * e->rank;
    *count = e->span;
}

void *rt_engine_home_payload(rt_engine *e, uint32_t block, size_t *len)
{
    resident *r = find_home_block(e, block);
    if (!r)
        return NULL;
    if (len)
        *len = r->len;
    return rt_transport_slot(e->tr, r->slot);
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
