/*
 * transport_test.c - multi-process transport scenarios, for any backend.
 *
 *   transport_test [--transport tcp|ib] [--host ADDR] [--ranks P]
 *                  [--collectives tree|star]
 *                  [--scenario NAME[,NAME...]|all] [--bench] [--alarm S]
 *
 * Every forked rank arms alarm(S) (default 90) so that it never outlives a
 * hung parent; a slow host (the soft-RoCE VM under TCG on a loaded machine)
 * passes a larger S so that the guard does not end a healthy but slow rank.
 *
 * For each scenario the parent picks P free ports on ADDR, forks P ranks and
 * checks their exit statuses; every rank opens its own transport and checks
 * everything it receives.  The same binary runs the RDMA backend inside the
 * soft-RoCE VM (--transport ib --host 169.254.77.1), since rdma_cm cannot use
 * loopback.
 *
 * Block content: a block passed for the h-th time carries L(block, h) bytes
 * of C(block, h), tagged epoch = h.  Ranks forward blocks in arrival order,
 * so the sequence of (block, hop) every rank receives is known in advance and
 * checked exactly, as are the arrival slot, length and bytes.  A held block
 * is checked again just before it is passed on, so a slot overwritten before
 * it was consumed is caught.
 *
 * Exit status: 0 all passed, 1 a scenario failed, 2 usage.
 */
#define _GNU_SOURCE
#include "verbs/netaddr.h"
#include "verbs/transport.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netdb.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANKS 16
#define MAX_INIT 64 /* block id = rank * MAX_INIT + j */

typedef struct opts {
    rt_transport_kind kind;
    char host[256];
    int ranks;
    rt_collectives collectives;
    int alarm_s; /* SIGALRM deadline of every forked rank */
} opts;

/* One rank's view while running a scenario. */
typedef struct ctx {
    const opts *o;
    int rank, size;
    rt_peer peers[MAX_RANKS];
} ctx;

static int fail(const ctx *c, const char *what, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static int fail(const ctx *c, const char *what, const char *fmt, ...)
{
    char msg[1200];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof(msg), fmt, ap);
    va_end(ap);
    fprintf(stderr, "transport_test: rank %d: %s: FAIL: %s\n", c->rank, what, msg);
    return -1;
}

/* Set when our port was taken between picking and binding it (another
 * process on this machine got it); the driver then retries with new ports. */
static int port_clash;
#define EXIT_PORT_CLASH 75

static int open_transport(const ctx *c, size_t slot_bytes, uint32_t n_slots, uint32_t init,
                          rt_transport **t, rt_error *err)
{
    rt_transport_config cfg;
    rt_transport_config_init(&cfg);
    cfg.kind = c->o->kind;
    cfg.rank = c->rank;
    cfg.size = c->size;
    cfg.peers = c->peers;
    cfg.slot_bytes = slot_bytes;
    cfg.n_slots = n_slots;
    cfg.initial_occupied = init;
    cfg.connect_timeout_ms = 20000;
    cfg.collectives = c->o->collectives;
    int rc = rt_transport_open(&cfg, t, err);
    if (rc && strstr(err->msg, "cannot listen") && strstr(err->msg, "in use"))
        port_clash = 1;
    return rc;
}

/* ---- block content ---- */

static uint64_t mix(uint32_t block, uint32_t hop)
{
    return rt_hash64(((uint64_t)block << 32) ^ hop ^ 0x5eedULL);
}

static size_t block_len(uint32_t block, uint32_t hop, size_t slot_bytes)
{
    uint64_t h = mix(block, hop);
    switch (h % 8) {
    case 0:
        return 1;
    case 1:
        return slot_bytes;
    default:
        return 1 + (size_t)((h >> 8) % slot_bytes);
    }
}

static void fill(uint8_t *p, size_t len, uint32_t block, uint32_t hop)
{
    uint64_t seed = mix(block, hop);
    size_t i = 0;
    for (; i + 8 <= len; i += 8) {
        uint64_t w = rt_hash64(seed + i);
        memcpy(p + i, &w, 8);
    }
    if (i < len) {
        uint64_t w = rt_hash64(seed + i);
        memcpy(p + i, &w, len - i);
    }
}

/* Offset of the first wrong byte, or -1 when p holds C(block, hop). */
static long check_fill(const uint8_t *p, size_t len, uint32_t block, uint32_t hop)
{
    uint64_t seed = mix(block, hop);
    for (size_t i = 0; i < len; i += 8) {
        uint64_t w = rt_hash64(seed + i);
        size_t n = len - i < 8 ? len - i : 8;
        if (memcmp(p + i, &w, n))
            return (long)i;
    }
    return -1;
}

/* ---- the conveyor: pass blocks around the ring and check everything ---- */

typedef struct conveyor {
    uint32_t n_slots;
    uint32_t init[MAX_RANKS]; /* initial blocks per rank */
    size_t slot_bytes;
    uint64_t passes;     /* passes (and arrivals) per rank */
    int lockstep;        /* 1: pass one, wait one (like the engine); 0: random */
    int barrier_every;   /* lockstep only: barrier every k steps (0 = never) */
    int slow_rank;       /* this rank sleeps before consuming (-1 = none) */
    uint64_t slow_count; /* ... for its first slow_count arrivals */
    uint32_t kill_rank;  /* this rank kills itself at step kill_step */
    uint64_t kill_step;  /* 0 = nobody dies */
    int kill_in_barrier; /* die instead of entering the barrier at that step */
} conveyor;

typedef struct held {
    uint32_t slot, block, hop; /* hop = the tag it will carry when passed */
    size_t len;
} held;

/* The k-th (block, hop) to arrive at rank r: blocks circulate in FIFO order,
 * so arrivals are init[r-1], init[r-2], ..., init[r] repeated, and a block
 * from rank q (distance d = 1..P) arrives in cycle c after c*P + d hops. */
static void expected_arrival(const conveyor *cv, int r, int p, uint64_t k, uint32_t *block,
                             uint32_t *hop)
{
    uint64_t per_cycle = 0;
    for (int q = 0; q < p; q++)
        per_cycle += cv->init[q];
    uint64_t cycle = k / per_cycle, off = k % per_cycle;
    for (int d = 1; d <= p; d++) {
        int q = ((r - d) % p + p) % p;
        if (off < cv->init[q]) {
            *block = (uint32_t)(q * MAX_INIT + (int)off);
            *hop = (uint32_t)(cycle * (uint64_t)p + (uint64_t)d);
            return;
        }
        off -= cv->init[q];
    }
}

/* Prepare a held block for its next pass: C(block, hop) of L(block, hop). */
static void prepare(rt_transport *t, held *h, size_t slot_bytes)
{
    h->len = block_len(h->block, h->hop, slot_bytes);
    fill(rt_transport_slot(t, h->slot), h->len, h->block, h->hop);
}

static int run_conveyor(const ctx *c, const char *name, const conveyor *cv)
{
    rt_error err;
    rt_transport *t;
    int r = c->rank, p = c->size;
    uint32_t init = cv->init[r], n = cv->n_slots;
    if (open_transport(c, cv->slot_bytes, n, init, &t, &err))
        return fail(c, name, "%s", err.msg);
    size_t sb = rt_transport_slot_bytes(t);
    held q[64]; /* FIFO of held blocks (n_slots <= 64) */
    uint32_t qh = 0, qn = 0;
    for (uint32_t j = 0; j < init; j++) {
        q[qn] = (held){.slot = j, .block = (uint32_t)(r * MAX_INIT) + j, .hop = 1};
        prepare(t, &q[qn++], sb);
    }
    uint64_t passes = 0, arrivals = 0, step = 0;
    int skip_wait = 0;
    rt_rng rng;
    rt_rng_seed(&rng, 42, (uint64_t)r);
    int rc = -1;
    while (passes < cv->passes || arrivals < cv->passes) {
        int do_pass;
        if (cv->lockstep)
            do_pass = passes == arrivals && passes < cv->passes;
        else
            do_pass = qn > 0 && passes < cv->passes &&
                      (skip_wait || arrivals == cv->passes || rt_rng_below(&rng, 3) != 0);
        skip_wait = 0;
        if (do_pass) {
            held *h = &q[qh];
            long bad = check_fill(rt_transport_slot(t, h->slot), h->len, h->block, h->hop);
            if (bad >= 0) {
                fail(c, name, "block %u in slot %u overwritten at byte %ld before it was passed",
                     h->block, h->slot, bad);
                goto out;
            }
            if (rt_transport_pass(t, h->slot, h->len, h->block, h->hop, &err)) {
                fail(c, name, "pass %llu: %s", (unsigned long long)passes, err.msg);
                goto out;
            }
            qh = (qh + 1) % 64;
            qn--;
            passes++;
            continue;
        }
        if (cv->slow_rank == r && arrivals < cv->slow_count) {
            struct timespec ts = {0, 2 * 1000 * 1000};
            nanosleep(&ts, NULL);
        }
        rt_arrival a;
        /* Holding blocks, only poll: two ranks both waiting would deadlock. */
        int can_pass = qn > 0 && passes < cv->passes;
        int got = rt_transport_wait_arrival(t, &a, can_pass ? 0 : 20000, &err);
        if (got == 0 && can_pass) {
            skip_wait = 1;
            continue;
        }
        if (got < 0) {
            fail(c, name, "arrival %llu: %s", (unsigned long long)arrivals, err.msg);
            goto out;
        }
        if (got == 0) {
            fail(c, name, "no arrival %llu within 20 s", (unsigned long long)arrivals);
            goto out;
        }
        uint32_t eb = 0, eh = 0;
        expected_arrival(cv, r, p, arrivals, &eb, &eh);
        uint32_t eslot = (uint32_t)((init + arrivals) % n);
        size_t elen = block_len(eb, eh, sb);
        if (a.block != eb || a.epoch != eh || a.slot != eslot || a.len != elen) {
            fail(c, name,
                 "arrival %llu: got block %u hop %u slot %u len %zu, expected block %u hop %u "
                 "slot %u len %zu",
                 (unsigned long long)arrivals, a.block, a.epoch, a.slot, a.len, eb, eh, eslot,
                 elen);
            goto out;
        }
        long bad = check_fill(rt_transport_slot(t, a.slot), a.len, a.block, a.epoch);
        if (bad >= 0) {
            fail(c, name, "arrival %llu (block %u hop %u): wrong byte at offset %ld",
                 (unsigned long long)arrivals, a.block, a.epoch, bad);
            goto out;
        }
        arrivals++;
        q[(qh + qn) % 64] = (held){.slot = a.slot, .block = a.block, .hop = a.epoch + 1};
        prepare(t, &q[(qh + qn) % 64], sb);
        qn++;
        if (cv->lockstep) {
            step++;
            if (cv->kill_step && step == cv->kill_step && (uint32_t)r == cv->kill_rank) {
                if (!cv->kill_in_barrier)
                    kill(getpid(), SIGKILL);
            }
            if (cv->barrier_every && step % (uint64_t)cv->barrier_every == 0) {
                if (cv->kill_step && step == cv->kill_step && (uint32_t)r == cv->kill_rank)
                    kill(getpid(), SIGKILL);
                if (rt_transport_barrier(t, &err)) {
                    fail(c, name, "barrier at step %llu: %s", (unsigned long long)step, err.msg);
                    goto out;
                }
            }
        }
    }
    if (rt_transport_flush(t, &err) || rt_transport_barrier(t, &err)) {
        fail(c, name, "finish: %s", err.msg);
        goto out;
    }
    rt_transport_stats st;
    rt_transport_get_stats(t, &st);
    if (st.passes_sent != cv->passes || st.passes_received != cv->passes) {
        fail(c, name, "stats: %llu passes sent, %llu received, expected %llu",
             (unsigned long long)st.passes_sent, (unsigned long long)st.passes_received,
             (unsigned long long)cv->passes);
        goto out;
    }
    rc = 0;
out:
    rt_transport_close(t);
    return rc;
}

static void conveyor_init(conveyor *cv, int p, uint32_t n_slots, uint32_t init, size_t slot,
                          uint64_t passes)
{
    memset(cv, 0, sizeof(*cv));
    cv->n_slots = n_slots;
    for (int r = 0; r < p; r++)
        cv->init[r] = init;
    cv->slot_bytes = slot;
    cv->passes = passes;
    cv->slow_rank = -1;
}

/* ---- scenarios ---- */

/* Engine-like lockstep with tags and barriers in between. */
static int sc_order(const ctx *c)
{
    conveyor cv;
    conveyor_init(&cv, c->size, 4, 2, 4096, 300);
    cv.lockstep = 1;
    cv.barrier_every = 25;
    return run_conveyor(c, "order", &cv);
}

/* Fast senders, one slow consumer, the smallest window: credits must hold
 * every sender back (checked by content at consumption). */
static int sc_credits(const ctx *c)
{
    conveyor cv;
    conveyor_init(&cv, c->size, 2, 1, 65536, 400);
    cv.slow_rank = 1;
    cv.slow_count = 100;
    return run_conveyor(c, "credits", &cv);
}

/* Small window, many wrap-arounds, different initial occupancy per rank. */
static int sc_wrap(const ctx *c)
{
    conveyor cv;
    conveyor_init(&cv, c->size, 3, 1, 256, 3000);
    for (int r = 0; r < c->size; r++)
        cv.init[r] = 1 + (uint32_t)(r % 2);
    return run_conveyor(c, "wrap", &cv);
}

/* 10,000 passes per rank of 1 B .. slot_bytes with random bursts. */
static int sc_stress(const ctx *c)
{
    conveyor cv;
    conveyor_init(&cv, c->size, 4, 2, 16384, 10000);
    return run_conveyor(c, "stress", &cv);
}

static double f64_value(int r, size_t i)
{
    /* Magnitudes far apart, so the order of addition changes the result. */
    static const double scale[] = {1e16, 1.0, -1e16, 3.14159, 1e-3, 7e15};
    return scale[(size_t)(r + (int)i) % 6] * (double)(i + 1) + 0.1 * r;
}

/* The sum of f64_value(0..P-1, i) in the order collectives.c documents:
 * rank order for the star; for the tree, pairs (2j, 2j+1) for the first
 * P - pof2 pairs, then pairwise levels. */
static double expected_sum(const ctx *c, size_t i)
{
    double y[MAX_RANKS];
    int p = c->size, pof2 = 1;
    if (c->o->collectives == RT_COLLECTIVES_STAR) {
        double s = f64_value(0, i);
        for (int q = 1; q < p; q++)
            s += f64_value(q, i);
        return s;
    }
    while (pof2 * 2 <= p)
        pof2 *= 2;
    int extra = p - pof2;
    for (int j = 0; j < pof2; j++)
        y[j] = j < extra ? f64_value(2 * j, i) + f64_value(2 * j + 1, i) : f64_value(j + extra, i);
    for (int n = pof2; n > 1; n /= 2)
        for (int j = 0; j < n / 2; j++)
            y[j] = y[2 * j] + y[2 * j + 1];
    return y[0];
}

/* A vector long enough for reduce-scatter (odd length, so halves differ)
 * where element i belongs to rank i % P: the sum must be every owner's value
 * exactly, on every rank. */
static int check_disjoint_sum(const ctx *c, rt_transport *t)
{
    enum { N = 20011 };
    rt_error err = {0};
    double *v = malloc(N * sizeof(double));
    if (!v)
        return fail(c, "collectives", "out of memory");
    for (size_t i = 0; i < N; i++)
        v[i] = (int)(i % (size_t)c->size) == c->rank ? f64_value(c->rank, i) * 1.000001 : 0.0;
    int rc = rt_transport_allreduce_f64(t, v, N, &err);
    if (rc)
        fail(c, "collectives", "allreduce_f64 of %d doubles: %s", N, err.msg);
    for (size_t i = 0; rc == 0 && i < N; i++)
        if (v[i] != f64_value((int)(i % (size_t)c->size), i) * 1.000001)
            rc = fail(c, "collectives", "long allreduce_f64: element %zu wrong", i);
    free(v);
    return rc;
}

static int sc_collectives(const ctx *c)
{
    const char *name = "collectives";
    rt_error err;
    rt_transport *t;
    int r = c->rank, p = c->size, rc = -1;
    void *all = NULL;
    uint8_t *big = NULL;
    if (open_transport(c, 4096, 2, 1, &t, &err))
        return fail(c, name, "%s", err.msg);
    for (int i = 0; i < 3; i++)
        if (rt_transport_barrier(t, &err)) {
            fail(c, name, "barrier %d: %s", i, err.msg);
            goto out;
        }

    /* all-reduce f64: bit-identical to the documented order (the star adds
     * in rank order, the tree pairwise), and a long odd-length vector
     * (reduce-scatter path) whose elements each have one contributor: exact. */
    enum { NV = 37 };
    double v[NV], want[NV];
    for (size_t i = 0; i < NV; i++) {
        v[i] = f64_value(r, i);
        want[i] = expected_sum(c, i);
    }
    if (rt_transport_allreduce_f64(t, v, NV, &err)) {
        fail(c, name, "allreduce_f64: %s", err.msg);
        goto out;
    }
    if (memcmp(v, want, sizeof(v))) {
        fail(c, name, "allreduce_f64 differs from the %s-order sum",
             c->o->collectives == RT_COLLECTIVES_STAR ? "rank" : "tree");
        goto out;
    }
    if (check_disjoint_sum(c, t) < 0)
        goto out;
    /* all-reduce i64 with wrap-around. */
    int64_t iv[5], iw[5];
    for (int i = 0; i < 5; i++) {
        iv[i] = i == 0 ? INT64_MAX : (int64_t)(r + 1) * (i - 2) * 1000003;
        iw[i] = 0;
        for (int q = 0; q < p; q++)
            iw[i] =
                (int64_t)((uint64_t)iw[i] +
                          (uint64_t)(i == 0 ? INT64_MAX : (int64_t)(q + 1) * (i - 2) * 1000003));
    }
    if (rt_transport_allreduce_i64(t, iv, 5, &err)) {
        fail(c, name, "allreduce_i64: %s", err.msg);
        goto out;
    }
    if (memcmp(iv, iw, sizeof(iv))) {
        fail(c, name, "allreduce_i64 wrong");
        goto out;
    }
    /* Every rank's result gathered at the root must be the same bytes. */
    size_t lens[MAX_RANKS];
    if (rt_transport_gatherv(t, v, sizeof(v), &all, lens, &err)) {
        fail(c, name, "gatherv of results: %s", err.msg);
        goto out;
    }
    if (r == 0)
        for (int q = 0; q < p; q++)
            if (lens[q] != sizeof(v) || memcmp((char *)all + q * sizeof(v), v, sizeof(v))) {
                fail(c, name, "rank %d's all-reduce result differs from rank 0's", q);
                goto out;
            }
    free(all);
    all = NULL;

    /* gatherv with differing lengths, including 0 (rank 0) and a large one. */
    size_t mylen = r == 0 ? 0 : r == 1 ? 3u << 20 : (size_t)(r * 37 % 100);
    big = malloc(mylen ? mylen : 1);
    if (!big) {
        fail(c, name, "out of memory");
        goto out;
    }
    fill(big, mylen, 9000 + (uint32_t)r, 0);
    if (rt_transport_gatherv(t, big, mylen, &all, lens, &err)) {
        fail(c, name, "gatherv: %s", err.msg);
        goto out;
    }
    if (r == 0) {
        size_t off = 0;
        for (int q = 0; q < p; q++) {
            size_t ql = q == 0 ? 0 : q == 1 ? 3u << 20 : (size_t)(q * 37 % 100);
            if (lens[q] != ql) {
                fail(c, name, "gatherv: rank %d contributed %zu bytes, expected %zu", q, lens[q],
                     ql);
                goto out;
            }
            if (check_fill((uint8_t *)all + off, ql, 9000 + (uint32_t)q, 0) >= 0) {
                fail(c, name, "gatherv: rank %d's bytes are wrong", q);
                goto out;
            }
            off += ql;
        }
    }
    /* bcast: small, then large. */
    size_t blen[2] = {1000, 2u << 20};
    for (int i = 0; i < 2; i++) {
        uint8_t *b = malloc(blen[i]);
        if (!b) {
            fail(c, name, "out of memory");
            goto out;
        }
        if (r == 0)
            fill(b, blen[i], 7777, (uint32_t)i);
        else
            memset(b, 0, blen[i]);
        int e = rt_transport_bcast(t, b, blen[i], &err);
        long bad = e ? -1 : check_fill(b, blen[i], 7777, (uint32_t)i);
        free(b);
        if (e || bad >= 0) {
            fail(c, name, "bcast of %zu bytes: %s", blen[i], e ? err.msg : "wrong bytes");
            goto out;
        }
    }
    if (rt_transport_barrier(t, &err)) {
        fail(c, name, "final barrier: %s", err.msg);
        goto out;
    }
    rc = 0;
out:
    free(all);
    free(big);
    rt_transport_close(t);
    return rc;
}

/* The last rank dies mid-run; every survivor must fail within 10 s with a
 * message naming it.  in_barrier: it dies instead of entering a barrier. */
static int kill_common(const ctx *c, const char *name, int in_barrier)
{
    conveyor cv;
    int victim = c->size - 1;
    conveyor_init(&cv, c->size, 3, 1, 1024, 1000000);
    cv.lockstep = 1;
    cv.barrier_every = 10;
    cv.kill_rank = (uint32_t)victim;
    cv.kill_step = in_barrier ? 50 : 47;
    cv.kill_in_barrier = in_barrier;

    /* Capture the survivor's error instead of printing it as a failure. */
    int pipefd[2];
    if (pipe(pipefd))
        return fail(c, name, "pipe: %s", strerror(errno));
    fflush(stderr);
    int saved = dup(2);
    dup2(pipefd[1], 2);
    close(pipefd[1]);
    double t0 = rt_now();
    int rc = run_conveyor(c, name, &cv);
    double elapsed = rt_now() - t0;
    fflush(stderr);
    dup2(saved, 2);
    close(saved);
    char msg[4096];
    ssize_t n = read(pipefd[0], msg, sizeof(msg) - 1);
    close(pipefd[0]);
    msg[n > 0 ? n : 0] = '\0';

    char want[32];
    snprintf(want, sizeof(want), "rank %d", victim);
    if (rc == 0)
        return fail(c, name, "survivor finished without noticing the killed rank");
    if (!strstr(msg, want) || !strstr(msg, "lost"))
        return fail(c, name, "error does not name the lost rank %d: %s", victim, msg);
    /* Setup plus 50 steps takes well under a second; allow 10 s for noticing. */
    if (elapsed > 12.0)
        return fail(c, name, "took %.1f s to notice the killed rank", elapsed);
    const char *why = strstr(msg, "FAIL: ");
    printf("rank %d: %s: ok, failed after %.2f s: %s", c->rank, name, elapsed, why ? why + 6 : msg);
    return 0;
}

static int sc_kill(const ctx *c)
{
    return kill_common(c, "kill", 0);
}

static int sc_kill_collective(const ctx *c)
{
    return kill_common(c, "kill-collective", 1);
}

/* Runs of scenarios so far (counted in the parent, seen by each fork). */
static unsigned scenario_runs;

/* Stopping in order (transport.h): rank A, a different one from run to
 * run, passes a block and joins an all-reduce, then stops on an error of
 * its own the moment the all-reduce returns (as a rank that refuses on the
 * sums does).  Every other rank must still get the all-reduce's exact sums
 * and the block its previous rank passed, and only then fail, in a
 * barrier, with A's own message rather than a lost connection. */
static int sc_abort_order(const ctx *c)
{
    enum { N = 5000 }; /* 40 KB: several chunks per exchange */
    const char *name = "abort-order";
    int a = (int)(scenario_runs % (unsigned)c->size);
    rt_error err;
    rt_transport *t;
    if (open_transport(c, 256, 3, 1, &t, &err))
        return fail(c, name, "%s", err.msg);
    int64_t *v = calloc(N, sizeof(*v));
    int rc = -1;
    char why[64], want[128];
    snprintf(why, sizeof(why), "a verdict of its own (run %u)", scenario_runs);
    snprintf(want, sizeof(want), "rank %d stopped: %s", a, why);
    uint8_t *slot = rt_transport_slot(t, 0);
    memset(slot, 0xA0 + c->rank, 256);
    if (!v || rt_transport_pass(t, 0, 256, (uint32_t)c->rank, 7, &err)) {
        fail(c, name, "pass: %s", v ? err.msg : "out of memory");
        goto out;
    }
    for (size_t i = c->rank; i < N; i += (size_t)c->size)
        v[i] = (int64_t)(i + 1) * (c->rank + 3);
    if (rt_transport_allreduce_i64(t, v, N, &err)) {
        fail(c, name, "all-reduce before rank %d stopped: %s", a, err.msg);
        goto out;
    }
    if (c->rank == a) {
        rt_transport_abort(t, why);
        rc = 0;
        goto out;
    }
    for (size_t i = 0; i < N; i++)
        if (v[i] != (int64_t)(i + 1) * (int64_t)(i % (size_t)c->size + 3)) {
            fail(c, name, "all-reduce element %zu is %lld", i, (long long)v[i]);
            goto out;
        }
    int prev = (c->rank + c->size - 1) % c->size;
    rt_arrival got;
    if (rt_transport_wait_arrival(t, &got, -1, &err) != 1) {
        fail(c, name, "the block rank %d passed before rank %d stopped: %s", prev, a, err.msg);
        goto out;
    }
    const uint8_t *in = rt_transport_slot(t, got.slot);
    if (got.block != (uint32_t)prev || got.epoch != 7 || got.len != 256 || in[0] != 0xA0 + prev ||
        in[255] != 0xA0 + prev) {
        fail(c, name, "the block from rank %d arrived wrong (block %u, epoch %u, %zu bytes)", prev,
             got.block, got.epoch, got.len);
        goto out;
    }
    if (rt_transport_barrier(t, &err) == 0)
        fail(c, name, "a barrier passed without rank %d", a);
    else if (!strstr(err.msg, want))
        fail(c, name, "the barrier failed with '%s', not rank %d's own message", err.msg, a);
    else
        rc = 0;
out:
    free(v);
    rt_transport_close(t);
    return rc;
}

/* size == 1 needs no network: collectives are no-ops, passes are refused. */
static int sc_single(const ctx *c)
{
    if (c->rank != 0)
        return 0;
    ctx one = *c;
    one.size = 1;
    rt_error err;
    rt_transport *t;
    if (open_transport(&one, 100, 2, 1, &t, &err))
        return fail(c, "single", "%s", err.msg);
    double v = 2.5;
    int rc = 0;
    if (rt_transport_barrier(t, &err) || rt_transport_allreduce_f64(t, &v, 1, &err) || v != 2.5)
        rc = fail(c, "single", "collectives on one rank: %s", err.msg);
    else if (rt_transport_pass(t, 0, 10, 0, 0, &err) == 0)
        rc = fail(c, "single", "a pass on one rank was accepted");
    else if (((uintptr_t)rt_transport_slot(t, 1) % RT_ALIGN) != 0)
        rc = fail(c, "single", "slot 1 is not aligned");
    rt_transport_close(t);
    return rc;
}

/* ---- bench: pass latency and bandwidth between 2 ranks ---- */

static int bench_one(const ctx *c, size_t bytes, int iters, int pingpong, double *out)
{
    rt_error err;
    rt_transport *t;
    uint32_t n = 4, init = pingpong ? (c->rank == 0) : 2;
    if (open_transport(c, bytes, n, init, &t, &err))
        return fail(c, "bench", "%s", err.msg);
    uint64_t passes = 0, arrivals = 0;
    uint32_t nheld = init;
    int rc = -1;
    if (rt_transport_barrier(t, &err))
        goto out;
    double t0 = rt_now();
    uint64_t total = (uint64_t)iters;
    while (passes < total || arrivals < total) {
        if (nheld > 0 && passes < total) {
            if (rt_transport_pass(t, (uint32_t)(passes % n), bytes, 0, 0, &err))
                goto out;
            passes++;
            nheld--;
            continue;
        }
        rt_arrival a;
        if (rt_transport_wait_arrival(t, &a, 20000, &err) != 1)
            goto out;
        arrivals++;
        nheld++;
    }
    if (rt_transport_flush(t, &err))
        goto out;
    *out = rt_now() - t0;
    if (rt_transport_barrier(t, &err))
        goto out;
    rc = 0;
out:
    if (rc)
        fail(c, "bench", "%s", err.msg);
    rt_transport_close(t);
    return rc;
}

static int sc_bench(const ctx *c)
{
    if (c->size != 2)
        return c->rank == 0 ? fail(c, "bench", "needs --ranks 2") : -1;
    double s;
    const int lat_iters = 4000;
    if (bench_one(c, 4096, lat_iters, 1, &s))
        return -1;
    if (c->rank == 0)
        printf("bench %s: 4 KiB ping-pong: %.1f us per pass (one way)\n",
               c->o->kind == RT_TRANSPORT_IB ? "ib" : "tcp", s / lat_iters / 2 * 1e6);
    if (bench_one(c, 1 << 20, 500, 1, &s))
        return -1;
    if (c->rank == 0)
        printf("bench %s: 1 MiB ping-pong: %.1f us per pass (one way), %.2f GB/s\n",
               c->o->kind == RT_TRANSPORT_IB ? "ib" : "tcp", s / 500 / 2 * 1e6,
               (double)(1 << 20) * 1000 / s / 1e9);
    struct {
        size_t bytes;
        int iters;
    } bw[2] = {{4096, 40000}, {1 << 20, 2000}};
    for (int i = 0; i < 2; i++) {
        if (bench_one(c, bw[i].bytes, bw[i].iters, 0, &s))
            return -1;
        if (c->rank == 0)
            printf("bench %s: %zu-byte passes, both directions at once: %.0f passes/s, "
                   "%.2f GB/s per direction\n",
                   c->o->kind == RT_TRANSPORT_IB ? "ib" : "tcp", bw[i].bytes, bw[i].iters / s,
                   (double)bw[i].bytes * bw[i].iters / s / 1e9);
    }
    return 0;
}

/* ---- driver ---- */

typedef struct scenario {
    const char *name;
    int (*run)(const ctx *c);
    int in_all;
} scenario;

static const scenario scenarios[] = {
    {"single", sc_single, 1},
    {"order", sc_order, 1},
    {"credits", sc_credits, 1},
    {"wrap", sc_wrap, 1},
    {"stress", sc_stress, 1},
    {"collectives", sc_collectives, 1},
    {"kill", sc_kill, 1},
    {"kill-collective", sc_kill_collective, 1},
    {"abort-order", sc_abort_order, 1},
    {"bench", sc_bench, 0},
};

/* Pick a free TCP port on host (bind port 0; the kernel chooses). */
static int free_port(const char *host)
{
    int port = -1;
    return rt_net_free_port(host, &port, NULL) ? -1 : port;
}

/* Run one scenario on fresh ports: 0 passed, -1 failed, 1 retry (port clash). */
static int run_once(const opts *o, const scenario *sc)
{
    ctx c = {.o = o, .size = o->ranks};
    for (int r = 0; r < o->ranks; r++) {
        snprintf(c.peers[r].host, sizeof(c.peers[r].host), "%s", o->host);
        /* Free when picked; the kernel may hand the same one out twice. */
        int dup, tries = 0;
        do {
            c.peers[r].port = free_port(o->host);
            dup = 0;
            for (int q = 0; q < r; q++)
                dup |= c.peers[q].port == c.peers[r].port;
        } while (dup && ++tries < 100);
        if (c.peers[r].port < 0 || dup) {
            fprintf(stderr, "transport_test: cannot find a free port on %s\n", o->host);
            return -1;
        }
    }
    double t0 = rt_now();
    scenario_runs++;
    pid_t pids[MAX_RANKS];
    fflush(stdout);
    fflush(stderr);
    for (int r = 0; r < o->ranks; r++) {
        pids[r] = fork();
        if (pids[r] == 0) {
            c.rank = r;
            alarm((unsigned)o->alarm_s); /* never outlive a hung parent */
            int rc = sc->run(&c);
            fflush(stdout);
            _exit(port_clash ? EXIT_PORT_CLASH : rc ? 1 : 0);
        }
    }
    int ok = 1, left = o->ranks, clash = 0;
    int victim = o->ranks - 1;
    int is_kill = !strncmp(sc->name, "kill", 4);
    while (left > 0) {
        int status;
        pid_t pid = waitpid(-1, &status, 0);
        if (pid < 0 && errno == EINTR)
            continue;
        if (pid < 0)
            break;
        int r = 0;
        while (r < o->ranks && pids[r] != pid)
            r++;
        if (r == o->ranks)
            continue;
        left--;
        pids[r] = -1;
        if (WIFEXITED(status) && WEXITSTATUS(status) == EXIT_PORT_CLASH) {
            clash = 1; /* the others would wait for it in vain */
            for (int q = 0; q < o->ranks; q++)
                if (pids[q] > 0)
                    kill(pids[q], SIGKILL);
        }
        if (clash)
            continue;
        int expect_killed = is_kill && r == victim;
        if (expect_killed ? !(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL)
                          : !(WIFEXITED(status) && WEXITSTATUS(status) == 0)) {
            if (WIFSIGNALED(status))
                fprintf(stderr, "transport_test: %s: rank %d killed by signal %d\n", sc->name, r,
                        WTERMSIG(status));
            else
                fprintf(stderr, "transport_test: %s: rank %d exited with status %d\n", sc->name, r,
                        WEXITSTATUS(status));
            ok = 0;
        }
    }
    if (clash) {
        printf("transport_test: %s: a port was taken by another process; retrying\n", sc->name);
        return 1;
    }
    printf("transport_test: %s (%s, %d ranks on %s): %s in %.2f s\n", sc->name,
           o->kind == RT_TRANSPORT_IB ? "ib" : "tcp", o->ranks, o->host, ok ? "ok" : "FAILED",
           rt_now() - t0);
    fflush(stdout);
    return ok ? 0 : -1;
}

static int run_scenario(const opts *o, const scenario *sc)
{
    for (int attempt = 0; attempt < 3; attempt++) {
        int rc = run_once(o, sc);
        if (rc <= 0)
            return rc;
    }
    fprintf(stderr, "transport_test: %s: ports kept being taken; giving up\n", sc->name);
    return -1;
}

static void usage(FILE *fp)
{
    fprintf(fp, "usage: transport_test [--transport tcp|ib] [--host ADDR] [--ranks P]\n"
                "                      [--collectives tree|star]\n"
                "                      [--scenario NAME[,NAME...]|all] [--bench] [--alarm S]\n"
                "scenarios:");
    for (size_t i = 0; i < sizeof(scenarios) / sizeof(scenarios[0]); i++)
        fprintf(fp, " %s", scenarios[i].name);
    fprintf(fp, "\n");
}

int main(int argc, char **argv)
{
    opts o = {.kind = RT_TRANSPORT_TCP, .host = "127.0.0.1", .ranks = 2, .alarm_s = 90};
    char list[512] = "all";
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--transport") && v) {
            if (rt_transport_kind_parse(v, &o.kind) || o.kind == RT_TRANSPORT_AUTO) {
                usage(stderr);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--host") && v) {
            snprintf(o.host, sizeof(o.host), "%s", v);
            i++;
        } else if (!strcmp(a, "--ranks") && v) {
            if (rt_parse_int(v, &o.ranks) || o.ranks < 2 || o.ranks > MAX_RANKS) {
                fprintf(stderr, "transport_test: --ranks must be 2..%d\n", MAX_RANKS);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--collectives") && v) {
            o.collectives = !strcmp(v, "star") ? RT_COLLECTIVES_STAR : RT_COLLECTIVES_TREE;
            if (strcmp(v, "star") && strcmp(v, "tree")) {
                usage(stderr);
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--scenario") && v) {
            snprintf(list, sizeof(list), "%s", v);
            i++;
        } else if (!strcmp(a, "--alarm") && v) {
            if (rt_parse_int(v, &o.alarm_s) || o.alarm_s < 1) {
                fprintf(stderr, "transport_test: --alarm must be a positive number of seconds\n");
                return 2;
            }
            i++;
        } else if (!strcmp(a, "--bench")) {
            snprintf(list, sizeof(list), "bench");
            o.ranks = 2;
        } else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        } else {
            usage(stderr);
            return 2;
        }
    }
    const char *log_env = getenv("ROTOR_LOG");
    if (log_env && rt_log_level_parse(log_env) >= 0)
        rt_log_level = rt_log_level_parse(log_env);
    signal(SIGPIPE, SIG_IGN);
    int failed = 0;
    size_t ns = sizeof(scenarios) / sizeof(scenarios[0]);
    if (!strcmp(list, "all")) {
        for (size_t i = 0; i < ns; i++)
            if (scenarios[i].in_all && run_scenario(&o, &scenarios[i]))
                failed++;
    } else {
        for (char *save = NULL, *name = strtok_r(list, ",", &save); name;
             name = strtok_r(NULL, ",", &save)) {
            size_t i = 0;
            while (i < ns && strcmp(scenarios[i].name, name))
                i++;
            if (i == ns) {
                fprintf(stderr, "transport_test: unknown scenario '%s'\n", name);
                usage(stderr);
                return 2;
            }
            if (run_scenario(&o, &scenarios[i]))
                failed++;
        }
    }
    return failed ? 1 : 0;
}
