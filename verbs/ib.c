/*
 * ib.c - the RDMA backend: rdma-core (libibverbs + librdmacm), RC queue pairs.
 *
 * Connections.  Every rank listens with rdma_cm on peers[rank] (host, port);
 * rank r connects to every rank below it and accepts every rank above it, so
 * each pair of ranks shares one RC QP.  That QP carries the ring passes (to
 * the next rank), their credits (to the previous rank) and the control
 * messages of collectives (to anyone).  We create the QPs ourselves and drive
 * their state transitions with rdma_init_qp_attr(), so that we can set the
 * path MTU to the minimum of both ports' active MTU (exchanged in the connect
 * private data), honour an explicit GID index, and choose the ACK timeout and
 * retry counts that make a dead peer visible within a few seconds.
 *
 * The connect/accept private data (wire_ib_hello) carries only the sender's
 * rank, group size and port MTU.  The window is registered once, at open;
 * its address, rkey and geometry go to the previous rank in a control
 * message (wire_ib_window) only after every rank has proven the job secret
 * (rt_transport_authenticate_peers, then ib_authenticated), so a stranger
 * that completes an rdma_cm connect never learns where to write.
 *
 * Window layout (one MR, IBV_ACCESS_REMOTE_WRITE):
 *   [ n_slots x slot_bytes | n_slots x 64 B meta_in | n_slots x 64 B meta_out ]
 *
 * Ring pass of src_slot to slot d = (next.initial_occupied + k) % next.n_slots
 * (the k-th pass) is two work requests posted together:
 *   1. RDMA_WRITE of meta_out[src_slot] = {block, epoch, len, seq} into
 *      next's meta_in[d] (unsignalled);
 *   2. RDMA_WRITE_WITH_IMM of the payload into next's slot d (signalled).
 * RC executes them in order, so when the receiver sees the immediate, the
 * metadata is in place.  Immediate of a ring pass (network byte order):
 *   bits 31..24  d & 0xff       (destination slot, checked by the receiver)
 *   bits 23..0   k & 0xffffff   (pass sequence number, checked)
 * block, epoch and len do not fit in 32 bits, so they travel in meta (the
 * "small header" is a side table next to the slots, not inside them).
 *
 * Everything else is SEND_WITH_IMM; the immediate is
 *   bits 31..30  kind: 1 = slot credits, 2 = control credits, 3 = control data
 *   bits 29..0   credit count (kinds 1, 2) or chunk bytes (kind 3)
 * Slot credits: when a pass's WRITE completes locally, its source slot is free
 * and one credit goes back to the previous rank (batched when several are
 * due).  Control messages are a byte stream per peer, cut into chunks of
 * CTRL_CHUNK bytes sent from pre-registered bounce buffers; the receiver
 * holds at most CTRL_CREDITS chunks per peer and returns control credits as
 * recv_msg consumes them.  Credit sends carry no data and are signalled only
 * every SIGNAL_EVERY-th time (selective signalling); passes and data chunks
 * are always signalled because their completion frees a slot or a buffer.
 *
 * Receive queue depth per QP is 2 n_slots + 2 CTRL_CREDITS + 8 + BEAT_SLACK:
 * at most n_slots passes and n_slots slot credits, CTRL_CREDITS data chunks
 * and as many control-credit messages can be outstanding, plus notices and
 * heartbeats (reposted as soon as they arrive), so RNR never happens.
 *
 * Progress.  Completions are handled under a poll lock (so they are
 * processed in CQ order) by whichever thread polls: caller threads post
 * their own work requests and, in busy-poll mode (the default), poll the CQ
 * themselves while they wait, yielding now and then; a comm thread polls
 * while passes are in flight and nobody waits (so credits go back at once),
 * naps while callers poll, and otherwise sleeps on the completion channel.
 * With cfg->event_mode callers sleep on a condition variable and the comm
 * thread always waits on the completion channel.  The comm thread also
 * watches the rdma_cm event channel.
 *
 * Failure.  A completion error or RDMA_CM_EVENT_DISCONNECTED marks the
 * transport failed with "lost rank N (host:port): ..."; every later call
 * fails (receives still return what had already arrived).  A killed
 * process's kernel sends a DREQ at once; a silent host is caught by the RC
 * retry limit (ACK timeout 2^IB_ACK_TIMEOUT x 4.096 us, IB_RETRY_CNT tries:
 * about 2 s).  A stopped or hung process, whose HCA (or rxe) still ACKs, is
 * caught by heartbeats: the comm thread sends a NOTICE_BEAT to both ring
 * neighbours every second (a quarter of the peer timeout when that is
 * shorter) and fails the transport when one of them has sent nothing, not
 * even a beat, for peer_timeout_ms.  Waits for data have no timeout of
 * their own, so a slow peer is never a failure and a rank stuck behind the
 * silent one is never blamed.  On close a rank sends each peer a notice (SEND_WITH_IMM,
 * kind 0): "bye" for a normal close, so that its disconnect is not a
 * failure (only calls that need it fail: "rank N has closed its transport"),
 * or "lost rank N", so that ranks that are not its neighbours name the
 * rank that really died; a rank that stopped on its own error names itself
 * and sends its message with the notice, which its peers report as theirs
 * (as tcp's FAIL frames relay it).  Such a stop does not fail the peers at
 * once (transport.h, "Stopping is ordered"): the notice comes after
 * everything the rank sent on the QP (RC order, completions handled in CQ
 * order), so a receive delivers all that first; only the calls that need
 * the stopped rank fail, with its message, and a rank whose call fails so
 * stops in turn, with the same message.
 */
#define _GNU_SOURCE
#include "verbs/backend.h"
#include "verbs/netaddr.h"
#include "verbs/wire.h"

#include <errno.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <netdb.h>
#include <poll.h>
#include <pthread.h>
#include <rdma/rdma_cma.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#define CTRL_CHUNK (16 * 1024) /* bytes per control chunk (bounce buffer) */
#define CTRL_CREDITS 16        /* chunks in flight per peer and direction */
#define SIGNAL_EVERY 16        /* signal every n-th credit send */
#define META_BYTES 64          /* one metadata entry (RT_ALIGN) */
#define IB_ACK_TIMEOUT 16      /* 4.096 us * 2^16 = 268 ms per try */
#define IB_RETRY_CNT 7         /* tries before IBV_WC_RETRY_EXC_ERR */
#define IB_RNR_RETRY 7         /* 7 = retry forever (RNR cannot happen, see above) */
#define RETRY_DELAY_S 0.2      /* between attempts to reach a peer not yet listening */
#define BEAT_SLACK 8           /* receives for heartbeats not yet reposted */

enum { WR_PASS = 1, WR_CTRL = 2, WR_CREDIT = 3, WR_RECV = 4, WR_DRAIN = 5 };
enum { PEER_NONE, PEER_CONNECTING, PEER_CONNECTED };

typedef struct ib_peer {
    int rank;
    int state;
    struct rdma_cm_id *id;
    struct ibv_qp *qp;
    wire_ib_hello remote; /* the peer's hello */
    wire_ib_window win;   /* the peer's window (next rank only, after authentication) */
    int have_win;
    double heard_at; /* rt_now() of the last message from the peer (under mu) */
    double retry_at; /* next connect attempt (active side), 0 = now */
    enum ibv_mtu path_mtu;
    /* send queue accounting */
    uint32_t sq_depth, sq_used, unsignalled;
    /* control messages out: ring of CTRL_CREDITS bounce buffers */
    uint8_t *tx_bufs;
    uint32_t tx_head, tx_busy; /* next buffer; chunks posted, not completed */
    uint32_t ctrl_credits;     /* peer's receive buffers we may fill */
    uint32_t ctrl_owed;        /* consumed chunks whose credit is not yet sent */
    /* receive buffers (rq_depth of them) and the FIFO of data chunks held */
    uint8_t *rx_bufs;
    uint32_t rq_depth;
    uint32_t *rx_fifo, *rx_len;
    uint32_t rx_head, rx_count, rx_off;
    uint32_t drains_pending;
    int gone;      /* said bye: closed normally, calls needing it fail */
    char *stopped; /* it stops, with this message (its last notice, on_notice) */
} ib_peer;

typedef struct ib_transport {
    rt_transport base;
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_mutex_t poll_mu; /* one CQ poller at a time keeps completions in order */
    /* rdma_cm and device */
    struct rdma_event_channel *ec;
    struct rdma_cm_id *listen_id;
    struct ibv_context *ctx; /* borrowed from the listening cm_id */
    struct ibv_pd *pd;
    struct ibv_comp_channel *cc;
    struct ibv_cq *cq;
    uint8_t port;
    enum ibv_mtu active_mtu;
    struct sockaddr_storage self_addr;
    /* memory */
    uint8_t *window;
    size_t window_bytes;
    struct ibv_mr *win_mr;
    wire_ib_meta *meta_in, *meta_out;
    uint8_t *bufs;
    size_t bufs_bytes;
    struct ibv_mr *buf_mr;
    uint8_t *reason; /* in bufs: our own failure's text, sent with the last notice */
    /* peers and the ring */
    ib_peer *peers;
    int next, prev;
    uint32_t credits;         /* free slots in the next rank's window */
    uint32_t slot_owed;       /* slot credits due to the previous rank, not yet sent */
    uint64_t sent, completed; /* passes posted / whose WRITE completed */
    uint64_t received, delivered;
    rt_arrival *arrq; /* n_slots entries: received, not yet delivered */
    rt_transport_stats stats;
    /* failure: set once, never cleared */
    int failed;
    char fail_msg[600];
    int lost_rank; /* the peer whose loss failed us (-1 = none) */
    int waiters;   /* caller threads blocked on the network (busy-poll hint) */
    int closing;
    /* comm thread */
    pthread_t thread;
    int thread_started;
    volatile int stop;
    int wake_fd;
    double next_beat; /* comm thread: when to send the next heartbeats */
} ib_transport;

static const struct rt_transport_ops ib_ops;

/* ------------------------------------------------------------------ utils -- */

static const char *peer_name(const ib_transport *ib, int rank, char *buf, size_t n)
{
    const rt_peer *p = &ib->base.peers[rank];
    snprintf(buf, n, "rank %d (%s:%d)", rank, p->host, p->port);
    return buf;
}

/* Mark the transport failed (first reason wins) and wake every waiter.
 * Caller holds mu. */
static void set_failed(ib_transport *ib, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void set_failed(ib_transport *ib, const char *fmt, ...)
{
    if (!ib->failed) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(ib->fail_msg, sizeof(ib->fail_msg), fmt, ap);
        va_end(ap);
        ib->failed = 1;
        if (!ib->closing)
            rt_debug("%s", ib->fail_msg);
    }
    pthread_cond_broadcast(&ib->cv);
}

static int fail_from_state(ib_transport *ib, rt_error *err)
{
    return rt_fail(err, RT_EXIT_RUNTIME, "%s", ib->fail_msg);
}

/* A call needs peer r, which stopped: this rank stops too, with r's message
 * (which names the rank where it began).  Caller holds mu. */
static void peer_stopped_fail(ib_transport *ib, int r)
{
    set_failed(ib, "%s", ib->peers[r].stopped);
}

static uint64_t wr_id(int kind, int peer, uint32_t aux, uint32_t covers)
{
    return (uint64_t)kind << 60 | (uint64_t)(uint16_t)peer << 44 |
           (uint64_t)(aux & 0x0fffffffu) << 16 | (covers & 0xffffu);
}
static int wr_kind(uint64_t id)
{
    return (int)(id >> 60);
}
static int wr_peer(uint64_t id)
{
    return (int)((id >> 44) & 0xffff);
}
static uint32_t wr_aux(uint64_t id)
{
    return (uint32_t)((id >> 16) & 0x0fffffffu);
}
static uint32_t wr_covers(uint64_t id)
{
    return (uint32_t)(id & 0xffff);
}

static int mtu_bytes(enum ibv_mtu m)
{
    return 128 << (int)m; /* IBV_MTU_256 = 1 */
}

/* Wait on the condition variable until woken or `deadline` (rt_now seconds;
 * < 0 = none, but still wake every 200 ms to re-check). */
static int try_progress(ib_transport *ib);
static int drain_cq_locked(ib_transport *ib);
static void wait_cv(ib_transport *ib, double deadline)
{
    if (try_progress(ib) > 0)
        return;
    if (!ib->base.cfg.event_mode && ib->thread_started && !ib->closing) {
        /* Busy-poll mode: the waiting caller polls the CQ itself, without a
         * thread hand-off per completion (the comm thread naps meanwhile). */
        __atomic_add_fetch(&ib->waiters, 1, __ATOMIC_RELAXED);
        pthread_mutex_unlock(&ib->mu);
        for (int i = 0; i < 256; i++) {
            int n = 0;
            if (pthread_mutex_trylock(&ib->poll_mu) == 0) {
                n = drain_cq_locked(ib);
                pthread_mutex_unlock(&ib->poll_mu);
            }
            if (n != 0 || ib->stop)
                break;
        }
        sched_yield(); /* let other threads on an oversubscribed node run */
        pthread_mutex_lock(&ib->mu);
        __atomic_sub_fetch(&ib->waiters, 1, __ATOMIC_RELAXED);
        return;
    }
    double now = rt_now();
    double until = now + 0.2;
    if (deadline >= 0 && deadline < until)
        until = deadline;
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    double d = until - now;
    if (d < 0)
        d = 0;
    long ns = ts.tv_nsec + (long)((d - (double)(long)d) * 1e9);
    ts.tv_sec += (time_t)d + ns / 1000000000L;
    ts.tv_nsec = ns % 1000000000L;
    __atomic_add_fetch(&ib->waiters, 1, __ATOMIC_RELAXED);
    pthread_cond_timedwait(&ib->cv, &ib->mu, &ts);
    __atomic_sub_fetch(&ib->waiters, 1, __ATOMIC_RELAXED);
}

/* A call needs `rank`, which closed its transport normally. */
static int gone_fail(ib_transport *ib, int rank, const char *what, rt_error *err)
{
    char pn[300];
    return rt_fail(err, RT_EXIT_RUNTIME, "ib: %s: %s has closed its transport", what,
                   peer_name(ib, rank, pn, sizeof(pn)));
}

/* ----------------------------------------------------- posting work requests */

/* Post a chain of send WRs on peer p, keeping the SQ accounting.  `nwr` is
 * the number of WRs in the chain; the last is signalled when `signal`.
 * Caller holds mu and has checked sq space. */
static int post_send(ib_transport *ib, ib_peer *p, struct ibv_send_wr *wr, uint32_t nwr, int kind,
                     uint32_t aux, int signal, const char *what)
{
    struct ibv_send_wr *last = wr;
    while (last->next)
        last = last->next;
    if (!signal && p->unsignalled + nwr >= SIGNAL_EVERY)
        signal = 1;
    if (signal) {
        last->send_flags |= IBV_SEND_SIGNALED;
        last->wr_id = wr_id(kind, p->rank, aux, p->unsignalled + nwr);
        p->unsignalled = 0;
    } else {
        p->unsignalled += nwr;
    }
    for (struct ibv_send_wr *w = wr; w != last; w = w->next)
        w->wr_id = wr_id(kind, p->rank, aux, 0);
    if (!signal)
        last->wr_id = wr_id(kind, p->rank, aux, 0);
    struct ibv_send_wr *bad = NULL;
    int rc = ibv_post_send(p->qp, wr, &bad);
    if (rc) {
        char pn[300];
        set_failed(ib, "ib: ibv_post_send (%s) to %s failed: %s", what,
                   peer_name(ib, p->rank, pn, sizeof(pn)), strerror(rc));
        return -1;
    }
    p->sq_used += nwr;
    return 0;
}

static int sq_room(const ib_peer *p, uint32_t nwr)
{
    return p->sq_used + nwr <= p->sq_depth;
}

static int post_recv(ib_transport *ib, ib_peer *p, uint32_t idx)
{
    struct ibv_sge sge = {
        .addr = (uintptr_t)(p->rx_bufs + (size_t)idx * CTRL_CHUNK),
        .length = CTRL_CHUNK,
        .lkey = ib->buf_mr->lkey,
    };
    struct ibv_recv_wr wr = {
        .wr_id = wr_id(WR_RECV, p->rank, idx, 0), .sg_list = &sge, .num_sge = 1};
    struct ibv_recv_wr *bad = NULL;
    int rc = ibv_post_recv(p->qp, &wr, &bad);
    if (rc) {
        char pn[300];
        set_failed(ib, "ib: ibv_post_recv for %s failed: %s",
                   peer_name(ib, p->rank, pn, sizeof(pn)), strerror(rc));
        return -1;
    }
    return 0;
}

/* Send a credit message (no payload) when there is room; otherwise the owed
 * count stays and is retried after the next completion. */
static void send_credits(ib_transport *ib, ib_peer *p, int kind, uint32_t *owed)
{
    if (p->gone)
        *owed = 0;
    if (*owed == 0 || ib->failed || p->state != PEER_CONNECTED || !sq_room(p, 1))
        return;
    struct ibv_send_wr wr = {
        .opcode = IBV_WR_SEND_WITH_IMM,
        .imm_data = htonl(wire_ib_imm(kind, *owed)),
    };
    if (post_send(ib, p, &wr, 1, WR_CREDIT, 0, 0, "credit") == 0)
        *owed = 0;
}

static void send_owed_credits(ib_transport *ib)
{
    if (ib->prev >= 0)
        send_credits(ib, &ib->peers[ib->prev], WIRE_IMM_SLOT_CREDIT, &ib->slot_owed);
    for (int r = 0; r < ib->base.cfg.size; r++)
        if (r != ib->base.cfg.rank)
            send_credits(ib, &ib->peers[r], WIRE_IMM_CTRL_CREDIT, &ib->peers[r].ctrl_owed);
}

/* --------------------------------------------------------- completions ---- */

static const char *wr_kind_name(int kind)
{
    switch (kind) {
    case WR_PASS:
        return "RDMA write (ring pass)";
    case WR_CTRL:
        return "send (control message)";
    case WR_CREDIT:
        return "send (credit)";
    case WR_RECV:
        return "receive";
    case WR_DRAIN:
        return "RDMA write (drain)";
    }
    return "work request";
}

static void on_arrival(ib_transport *ib, ib_peer *p, uint32_t imm)
{
    const rt_transport_config *c = &ib->base.cfg;
    char pn[300];
    rt_error why = {0};
    peer_name(ib, p->rank, pn, sizeof(pn));
    if (p->rank != ib->prev) {
        set_failed(ib, "ib: protocol error: ring pass from %s, which is not the previous rank", pn);
        return;
    }
    /* The metadata entry of the slot the immediate must name, copied once
     * so that what is checked is what is used. */
    uint32_t want = (uint32_t)((c->initial_occupied + ib->received) % c->n_slots);
    wire_ib_meta m;
    memcpy(&m, (const uint8_t *)ib->meta_in + (size_t)want * META_BYTES, sizeof(m));
    wire_ib_ring ring = {.n_slots = c->n_slots,
                         .initial_occupied = c->initial_occupied,
                         .slot_bytes = c->slot_bytes,
                         .received = ib->received,
                         .delivered = ib->delivered};
    uint32_t slot;
    if (wire_ib_arrival_parse(imm, &m, &ring, &slot, pn, &why)) {
        set_failed(ib, "%s", why.msg);
        return;
    }
    rt_arrival *a = &ib->arrq[ib->received % c->n_slots];
    a->slot = slot;
    a->block = m.block;
    a->epoch = m.epoch;
    a->len = (size_t)m.len;
    ib->received++;
    ib->stats.passes_received++;
    ib->stats.bytes_received += m.len;
}

/* A peer says bye (normal close), that it lost another rank, that it
 * stopped on its own error (`text` its message, as tcp relays it; "" from a
 * peer that had none to send), or only that it lives (a heartbeat: its
 * arrival already counted). */
static void on_notice(ib_transport *ib, ib_peer *p, const wire_ib_msg *m, const char *text)
{
    char pn[300], qn[300];
    if (m->notice == WIRE_NOTICE_BEAT)
        return;
    if (m->notice == WIRE_NOTICE_BYE) {
        p->gone = 1;
        return;
    }
    int lost = m->lost >= 0 ? m->lost : p->rank;
    if (lost == p->rank) { /* it stops, on its own error or one it met: in order */
        char why[WIRE_FAIL_MSG_MAX + 300];
        if (text[0])
            snprintf(why, sizeof(why), "%s", text);
        else
            snprintf(why, sizeof(why), "ib: %s stopped with an error of its own (see its message)",
                     peer_name(ib, lost, pn, sizeof(pn)));
        if (!p->stopped && !(p->stopped = strdup(why)))
            set_failed(ib, "ib: out of memory");
        return;
    }
    if (!ib->failed)
        ib->lost_rank = lost;
    set_failed(ib, "ib: lost %s (reported by %s)", peer_name(ib, lost, pn, sizeof(pn)),
               peer_name(ib, p->rank, qn, sizeof(qn)));
}

/* What a receive from p is checked against. */
static wire_ib_state recv_state(const ib_transport *ib, const ib_peer *p)
{
    return (wire_ib_state){.size = ib->base.cfg.size,
                           .from_next = p->rank == ib->next,
                           .n_slots = p->have_win ? p->win.n_slots : 0,
                           .credits = ib->credits,
                           .ctrl_credits = p->ctrl_credits,
                           .ctrl_max = CTRL_CREDITS,
                           .chunk_max = CTRL_CHUNK,
                           .chunks_held = p->rx_count,
                           .chunks_max = p->rq_depth};
}

static void on_recv(ib_transport *ib, ib_peer *p, const struct ibv_wc *wc)
{
    uint32_t idx = wr_aux(wc->wr_id);
    p->heard_at = rt_now();
    if (wc->opcode == IBV_WC_RECV_RDMA_WITH_IMM) {
        on_arrival(ib, p, ntohl(wc->imm_data));
        post_recv(ib, p, idx);
        return;
    }
    char pn[300];
    rt_error why = {0};
    wire_ib_msg m;
    wire_ib_state st = recv_state(ib, p);
    if (wire_ib_recv_parse(!!(wc->wc_flags & IBV_WC_WITH_IMM), ntohl(wc->imm_data), wc->byte_len,
                           &st, &m, peer_name(ib, p->rank, pn, sizeof(pn)), &why)) {
        set_failed(ib, "%s", why.msg);
        return;
    }
    switch (m.kind) {
    case WIRE_IMM_SLOT_CREDIT:
        ib->credits += m.n;
        post_recv(ib, p, idx);
        break;
    case WIRE_IMM_CTRL_CREDIT:
        p->ctrl_credits += m.n;
        post_recv(ib, p, idx);
        break;
    case WIRE_IMM_CTRL_DATA: {
        uint32_t pos = (p->rx_head + p->rx_count) % p->rq_depth;
        p->rx_fifo[pos] = idx;
        p->rx_len[pos] = m.n;
        p->rx_count++;
        break;
    }
    default: { /* WIRE_IMM_NOTICE */
        char text[WIRE_FAIL_MSG_MAX + 1] = "";
        if (wc->byte_len)
            wire_fail_text(p->rx_bufs + (size_t)idx * CTRL_CHUNK, wc->byte_len, text, sizeof(text));
        post_recv(ib, p, idx);
        on_notice(ib, p, &m, text);
    }
    }
}

/* Handle one work completion.  Caller holds mu. */
static void on_completion(ib_transport *ib, const struct ibv_wc *wc)
{
    int kind = wr_kind(wc->wr_id), r = wr_peer(wc->wr_id);
    if (r < 0 || r >= ib->base.cfg.size || r == ib->base.cfg.rank)
        return;
    ib_peer *p = &ib->peers[r];
    if (wc->status != IBV_WC_SUCCESS) {
        if (ib->closing || p->gone || p->stopped ||
            (ib->failed && wc->status == IBV_WC_WR_FLUSH_ERR))
            return;
        char pn[300];
        if (!ib->failed)
            ib->lost_rank = r;
        const char *hint = "";
        if (wc->status == IBV_WC_RETRY_EXC_ERR)
            hint = " (peer dead or unreachable)";
        else if (wc->status == IBV_WC_REM_ACCESS_ERR)
            hint = " (remote window/rkey mismatch)";
        set_failed(ib, "ib: lost %s: %s failed: %s%s (vendor error 0x%x)",
                   peer_name(ib, r, pn, sizeof(pn)), wr_kind_name(kind),
                   ibv_wc_status_str(wc->status), hint, wc->vendor_err);
        return;
    }
    if (kind == WR_RECV) {
        on_recv(ib, p, wc);
        return;
    }
    /* A signalled send completed: it and the unsignalled ones before it left the SQ. */
    uint32_t covers = wr_covers(wc->wr_id);
    p->sq_used = covers > p->sq_used ? 0 : p->sq_used - covers;
    if (kind == WR_PASS) {
        ib->completed++;
        ib->slot_owed++; /* the source slot is free: credit to the previous rank */
    } else if (kind == WR_CTRL) {
        p->tx_busy--;
    } else if (kind == WR_DRAIN) {
        p->drains_pending--;
    }
}

/* Poll the CQ until empty; returns completions handled or -1.  Caller
 * holds poll_mu, not mu. */
static int drain_cq_locked(ib_transport *ib)
{
    struct ibv_wc wc[32];
    int total = 0;
    for (;;) {
        int n = ibv_poll_cq(ib->cq, 32, wc);
        if (n < 0) {
            pthread_mutex_lock(&ib->mu);
            set_failed(ib, "ib: ibv_poll_cq failed");
            pthread_mutex_unlock(&ib->mu);
            return -1;
        }
        if (n == 0)
            return total;
        pthread_mutex_lock(&ib->mu);
        for (int i = 0; i < n; i++)
            on_completion(ib, &wc[i]);
        send_owed_credits(ib);
        pthread_cond_broadcast(&ib->cv);
        pthread_mutex_unlock(&ib->mu);
        total += n;
    }
}

static int drain_cq(ib_transport *ib)
{
    pthread_mutex_lock(&ib->poll_mu);
    int n = drain_cq_locked(ib);
    pthread_mutex_unlock(&ib->poll_mu);
    return n;
}

/* Caller-driven progress: a waiting caller polls the CQ itself unless the
 * comm thread is already at it (saves a thread wake-up per completion).
 * Caller holds mu; returns completions handled. */
static int try_progress(ib_transport *ib)
{
    if (!ib->thread_started || pthread_mutex_trylock(&ib->poll_mu))
        return 0;
    pthread_mutex_unlock(&ib->mu);
    int n = drain_cq_locked(ib);
    pthread_mutex_unlock(&ib->poll_mu);
    pthread_mutex_lock(&ib->mu);
    return n > 0 ? n : 0;
}

/* rdma_cm events after setup (comm thread): disconnects and device loss. */
static void handle_cm_events(ib_transport *ib)
{
    struct rdma_cm_event *ev;
    while (rdma_get_cm_event(ib->ec, &ev) == 0) {
        enum rdma_cm_event_type type = ev->event;
        ib_peer *p = ev->id->context;
        struct rdma_cm_id *reject = type == RDMA_CM_EVENT_CONNECT_REQUEST ? ev->id : NULL;
        rdma_ack_cm_event(ev);
        if (reject) {
            rdma_reject(reject, NULL, 0);
            rdma_destroy_id(reject);
            continue;
        }
        if (type == RDMA_CM_EVENT_DISCONNECTED || type == RDMA_CM_EVENT_DEVICE_REMOVAL) {
            drain_cq(ib); /* deliver what arrived before the peer left */
            pthread_mutex_lock(&ib->mu);
            char pn[300] = "a peer";
            int known = p && p >= ib->peers && p < ib->peers + ib->base.cfg.size;
            if (known)
                peer_name(ib, p->rank, pn, sizeof(pn));
            if (known && !ib->failed && !p->gone && !p->stopped)
                ib->lost_rank = p->rank;
            if (known && (p->gone || p->stopped)) /* it said bye or stop first */
                p->state = PEER_NONE;
            else if (!ib->closing)
                set_failed(ib, "ib: lost %s: %s", pn,
                           type == RDMA_CM_EVENT_DISCONNECTED
                               ? "disconnected (the process exited or closed its transport)"
                               : "RDMA device removed");
            pthread_mutex_unlock(&ib->mu);
        }
    }
}

/* Busy-poll is worth its CPU only while a caller waits on the network or
 * our own transfers are in flight; otherwise the comm thread sleeps on the
 * completion channel, so an idle or oversubscribed node is not slowed down.
 * (Waiting callers also poll the CQ once before sleeping: try_progress.) */
static int want_spin(ib_transport *ib)
{
    if (ib->base.cfg.event_mode)
        return 0;
    return __atomic_load_n(&ib->sent, __ATOMIC_RELAXED) !=
           __atomic_load_n(&ib->completed, __ATOMIC_RELAXED);
}

/* While callers poll the CQ themselves, nap without arming the CQ (no
 * interrupt per completion); still watch rdma_cm and the wake-up fd. */
static void nap(ib_transport *ib)
{
    struct pollfd fds[2] = {{.fd = ib->ec->fd, .events = POLLIN},
                            {.fd = ib->wake_fd, .events = POLLIN}};
    if (poll(fds, 2, 2) > 0 && (fds[0].revents & POLLIN))
        handle_cm_events(ib);
}

/* Sleep until the CQ, the rdma_cm channel or the wake-up fd has news. */
static int block_for_events(ib_transport *ib)
{
    if (ibv_req_notify_cq(ib->cq, 0)) {
        pthread_mutex_lock(&ib->mu);
        set_failed(ib, "ib: ibv_req_notify_cq failed");
        pthread_mutex_unlock(&ib->mu);
        return -1;
    }
    if (drain_cq(ib) > 0) /* completions that raced with arming */
        return 0;
    struct pollfd fds[3] = {{.fd = ib->cc->fd, .events = POLLIN},
                            {.fd = ib->ec->fd, .events = POLLIN},
                            {.fd = ib->wake_fd, .events = POLLIN}};
    if (poll(fds, 3, 200) <= 0)
        return 0;
    if (fds[0].revents & POLLIN) {
        struct ibv_cq *cq;
        void *ctx;
        if (ibv_get_cq_event(ib->cc, &cq, &ctx) == 0)
            ibv_ack_cq_events(cq, 1);
    }
    if (fds[1].revents & POLLIN)
        handle_cm_events(ib);
    if (fds[2].revents & POLLIN) {
        uint64_t v;
        if (read(ib->wake_fd, &v, sizeof(v)) < 0) {
            /* nothing to do: the stop flag is what matters */
        }
    }
    return 0;
}

/* ---------------------------------------------------------- liveness ---- */

/* The heartbeat interval: a quarter of the peer timeout, at most 1 s, so a
 * busy or briefly descheduled peer has plenty of margin. */
static double beat_every_s(const ib_transport *ib)
{
    int ms = ib->base.cfg.peer_timeout_ms > 0 ? ib->base.cfg.peer_timeout_ms / 4 : 1000;
    ms = ms > 1000 ? 1000 : ms < 20 ? 20 : ms;
    return ms / 1000.0;
}

/* One heartbeat to ring neighbour r, when its send queue has room (when it
 * has none, real traffic is queued and the peer hears from us anyway).
 * Caller holds mu. */
static void send_beat_locked(ib_transport *ib, int r)
{
    ib_peer *p = &ib->peers[r];
    if (p->state != PEER_CONNECTED || p->gone || !sq_room(p, 1))
        return;
    struct ibv_send_wr wr = {
        .opcode = IBV_WR_SEND_WITH_IMM,
        .imm_data = htonl(wire_ib_notice(WIRE_NOTICE_BEAT, ib->base.cfg.rank)),
    };
    post_send(ib, p, &wr, 1, WR_CREDIT, 0, 0, "heartbeat");
}

/* Fail when ring neighbour r has been silent longer than the peer timeout.
 * Caller holds mu. */
static void check_silent_locked(ib_transport *ib, int r, double now)
{
    ib_peer *p = &ib->peers[r];
    double silent = now - p->heard_at;
    if (ib->failed || p->gone || p->stopped || p->state != PEER_CONNECTED ||
        silent * 1000.0 < ib->base.cfg.peer_timeout_ms)
        return;
    char pn[300];
    ib->lost_rank = r;
    set_failed(ib,
               "ib: lost %s: silent for %.1f s (no data and no heartbeat; process stopped, hung "
               "or cut off)",
               peer_name(ib, r, pn, sizeof(pn)), silent);
}

/* Comm thread, every turn: heartbeats both ways round the ring when they
 * are due, and the silence check. */
static void liveness_tick(ib_transport *ib)
{
    double now = rt_now();
    if (now < ib->next_beat)
        return;
    ib->next_beat = now + beat_every_s(ib);
    pthread_mutex_lock(&ib->mu);
    if (!ib->failed && !ib->closing) {
        if (ib->base.cfg.peer_timeout_ms > 0) {
            check_silent_locked(ib, ib->prev, now);
            check_silent_locked(ib, ib->next, now);
        }
        send_beat_locked(ib, ib->next);
        if (ib->prev != ib->next)
            send_beat_locked(ib, ib->prev);
    }
    pthread_mutex_unlock(&ib->mu);
}

static void *comm_thread(void *arg)
{
    ib_transport *ib = arg;
    unsigned spins = 0;
    while (!ib->stop) {
        liveness_tick(ib);
        int n = drain_cq(ib);
        if (n < 0)
            break;
        if (n > 0)
            continue;
        if (!ib->base.cfg.event_mode && __atomic_load_n(&ib->waiters, __ATOMIC_RELAXED) > 0) {
            nap(ib);
            continue;
        }
        if (want_spin(ib)) {
            if ((++spins & 1023) == 0)
                handle_cm_events(ib); /* nonblocking fd: returns at once */
            sched_yield();
            continue;
        }
        if (block_for_events(ib))
            break;
    }
    return NULL;
}

/* ------------------------------------------------------- transport ops ---- */

static void *ib_slot(rt_transport *t, uint32_t slot)
{
    ib_transport *ib = (ib_transport *)t;
    return ib->window + (size_t)slot * t->cfg.slot_bytes;
}

static int ib_pass(rt_transport *t, uint32_t src_slot, size_t len, uint32_t block, uint32_t epoch,
                   rt_error *err)
{
    ib_transport *ib = (ib_transport *)t;
    ib_peer *p = &ib->peers[ib->next];
    pthread_mutex_lock(&ib->mu);
    double t0 = rt_now();
    /* No timeout here: a slow peer is not a failure, and a silent one fails
     * the transport through the heartbeats, which wakes us. */
    while (!ib->failed && !p->gone && !p->stopped && (ib->credits == 0 || !sq_room(p, 2)))
        wait_cv(ib, -1);
    ib->stats.credit_wait_s += rt_now() - t0;
    if (ib->failed || p->gone || p->stopped) {
        if (p->stopped) /* a stopped next rank takes nothing more: stop with its message */
            peer_stopped_fail(ib, ib->next);
        int failed = ib->failed;
        pthread_mutex_unlock(&ib->mu);
        return failed ? fail_from_state(ib, err) : gone_fail(ib, ib->next, "pass", err);
    }
    const wire_ib_window *rw = &p->win;
    if (!p->have_win || len > rw->slot_bytes) {
        pthread_mutex_unlock(&ib->mu);
        return rt_fail(err, RT_EXIT_RUNTIME, "ib: pass of %zu bytes exceeds rank %d's slots (%llu)",
                       len, ib->next, (unsigned long long)rw->slot_bytes);
    }
    uint32_t dst = (uint32_t)((rw->initial_occupied + ib->sent) % rw->n_slots);
    wire_ib_meta *m = (wire_ib_meta *)((uint8_t *)ib->meta_out + (size_t)src_slot * META_BYTES);
    m->block = block;
    m->epoch = epoch;
    m->len = len;
    m->seq = ib->sent;
    uint64_t remote_meta =
        rw->addr + (uint64_t)rw->n_slots * rw->slot_bytes + (uint64_t)dst * META_BYTES;
    struct ibv_sge msge = {.addr = (uintptr_t)m, .length = sizeof(*m), .lkey = ib->win_mr->lkey};
    struct ibv_sge dsge = {
        .addr = (uintptr_t)ib_slot(t, src_slot), .length = (uint32_t)len, .lkey = ib->win_mr->lkey};
    struct ibv_send_wr data = {
        .sg_list = &dsge,
        .num_sge = len ? 1 : 0,
        .opcode = IBV_WR_RDMA_WRITE_WITH_IMM,
        .imm_data = htonl(wire_ib_pass_imm(dst, ib->sent)),
        .wr.rdma = {.remote_addr = rw->addr + (uint64_t)dst * rw->slot_bytes, .rkey = rw->rkey},
    };
    struct ibv_send_wr meta = {
        .next = &data,
        .sg_list = &msge,
        .num_sge = 1,
        .opcode = IBV_WR_RDMA_WRITE,
        .wr.rdma = {.remote_addr = remote_meta, .rkey = rw->rkey},
    };
    int rc = post_send(ib, p, &meta, 2, WR_PASS, src_slot, 1, "ring pass");
    if (rc == 0) {
        ib->credits--;
        ib->sent++;
        ib->stats.passes_sent++;
        ib->stats.bytes_sent += len;
    }
    pthread_mutex_unlock(&ib->mu);
    return rc ? fail_from_state(ib, err) : 0;
}

static int ib_wait_arrival(rt_transport *t, rt_arrival *out, int timeout_ms, rt_error *err)
{
    ib_transport *ib = (ib_transport *)t;
    double t0 = rt_now();
    double deadline = timeout_ms < 0 ? -1 : t0 + timeout_ms / 1000.0;
    int got = 0, polled = 0;
    pthread_mutex_lock(&ib->mu);
    for (;;) {
        if (ib->delivered < ib->received) {
            *out = ib->arrq[ib->delivered % t->cfg.n_slots];
            ib->delivered++;
            got = 1;
            break;
        }
        if (ib->failed) {
            got = -1;
            break;
        }
        if (ib->peers[ib->prev].stopped) { /* after its arrivals (same QP, CQ order) */
            peer_stopped_fail(ib, ib->prev);
            got = -1;
            break;
        }
        if (ib->peers[ib->prev].gone) {
            got = -2;
            break;
        }
        if (deadline >= 0 && rt_now() >= deadline) {
            if (!polled && try_progress(ib) > 0) {
                polled = 1;
                continue;
            }
            break;
        }
        wait_cv(ib, deadline);
    }
    pthread_mutex_unlock(&ib->mu);
    if (got == -2)
        return gone_fail(ib, ib->prev, "waiting for a block", err);
    return got < 0 ? fail_from_state(ib, err) : got;
}

static int ib_flush(rt_transport *t, rt_error *err)
{
    ib_transport *ib = (ib_transport *)t;
    pthread_mutex_lock(&ib->mu);
    while (!ib->failed && (ib->completed < ib->sent || ib->slot_owed > 0)) {
        if (ib->peers[ib->prev].gone || ib->peers[ib->prev].stopped)
            ib->slot_owed = 0; /* nobody to return credits to */
        if (ib->peers[ib->next].stopped && ib->completed < ib->sent)
            peer_stopped_fail(ib, ib->next);
        else if (ib->peers[ib->next].gone && ib->completed < ib->sent)
            break; /* it acknowledged what it needed before saying bye */
        else if (ib->completed < ib->sent || ib->slot_owed > 0)
            wait_cv(ib, -1);
    }
    int failed = ib->failed;
    pthread_mutex_unlock(&ib->mu);
    return failed ? fail_from_state(ib, err) : 0;
}

static int ib_send_msg(rt_transport *t, int peer, const void *buf, size_t len, rt_error *err)
{
    ib_transport *ib = (ib_transport *)t;
    ib_peer *p = &ib->peers[peer];
    const uint8_t *src = buf;
    pthread_mutex_lock(&ib->mu);
    while (len > 0 && !ib->failed && !p->gone && !p->stopped) {
        if (p->ctrl_credits == 0 || p->tx_busy == CTRL_CREDITS || !sq_room(p, 1)) {
            wait_cv(ib, -1);
            continue;
        }
        uint32_t n = len < CTRL_CHUNK ? (uint32_t)len : CTRL_CHUNK;
        uint32_t b = p->tx_head;
        uint8_t *chunk = p->tx_bufs + (size_t)b * CTRL_CHUNK;
        memcpy(chunk, src, n);
        struct ibv_sge sge = {.addr = (uintptr_t)chunk, .length = n, .lkey = ib->buf_mr->lkey};
        struct ibv_send_wr wr = {
            .sg_list = &sge,
            .num_sge = 1,
            .opcode = IBV_WR_SEND_WITH_IMM,
            .imm_data = htonl(wire_ib_imm(WIRE_IMM_CTRL_DATA, n)),
        };
        if (post_send(ib, p, &wr, 1, WR_CTRL, b, 1, "control message"))
            break;
        p->tx_head = (b + 1) % CTRL_CREDITS;
        p->tx_busy++;
        p->ctrl_credits--;
        src += n;
        len -= n;
    }
    if (!ib->failed && len > 0 && p->stopped)
        peer_stopped_fail(ib, peer);
    int failed = ib->failed, gone = len > 0 && p->gone;
    pthread_mutex_unlock(&ib->mu);
    if (gone && !failed)
        return gone_fail(ib, peer, "send", err);
    return failed ? fail_from_state(ib, err) : 0;
}

static int ib_recv_msg(rt_transport *t, int peer, void *buf, size_t len, rt_error *err)
{
    ib_transport *ib = (ib_transport *)t;
    ib_peer *p = &ib->peers[peer];
    uint8_t *dst = buf;
    int rc = 0;
    pthread_mutex_lock(&ib->mu);
    while (len > 0) {
        if (p->rx_count == 0) {
            if (!ib->failed && p->stopped) /* all it sent before is read */
                peer_stopped_fail(ib, peer);
            if (ib->failed) {
                rc = -1;
                break;
            }
            if (p->gone) {
                rc = -2;
                break;
            }
            wait_cv(ib, -1);
            continue;
        }
        uint32_t idx = p->rx_fifo[p->rx_head];
        uint32_t avail = p->rx_len[p->rx_head] - p->rx_off;
        uint32_t n = len < avail ? (uint32_t)len : avail;
        memcpy(dst, p->rx_bufs + (size_t)idx * CTRL_CHUNK + p->rx_off, n);
        dst += n;
        len -= n;
        p->rx_off += n;
        if (p->rx_off == p->rx_len[p->rx_head]) { /* chunk used up: recycle it */
            p->rx_head = (p->rx_head + 1) % p->rq_depth;
            p->rx_count--;
            p->rx_off = 0;
            if (!ib->failed && post_recv(ib, p, idx) == 0)
                p->ctrl_owed++;
            if (p->ctrl_owed >= CTRL_CREDITS / 2)
                send_credits(ib, p, WIRE_IMM_CTRL_CREDIT, &p->ctrl_owed);
        }
    }
    send_credits(ib, p, WIRE_IMM_CTRL_CREDIT, &p->ctrl_owed);
    pthread_mutex_unlock(&ib->mu);
    if (rc == -2)
        return gone_fail(ib, peer, "receive", err);
    return rc ? fail_from_state(ib, err) : 0;
}

/* After every rank has proven the job secret: tell the previous rank where
 * our window is, learn where the next rank's is, and take its free slots as
 * our credits.  (Sent to everyone before anyone waits: no order deadlocks.) */
static int ib_authenticated(rt_transport *t, rt_error *err)
{
    ib_transport *ib = (ib_transport *)t;
    const rt_transport_config *c = &t->cfg;
    if (c->size < 2)
        return 0;
    wire_ib_window mine = {.addr = (uintptr_t)ib->window,
                           .slot_bytes = c->slot_bytes,
                           .rkey = ib->win_mr->rkey,
                           .n_slots = c->n_slots,
                           .initial_occupied = c->initial_occupied};
    uint8_t buf[sizeof(wire_ib_window)];
    if (ib_send_msg(t, ib->prev, &mine, sizeof(mine), err) ||
        ib_recv_msg(t, ib->next, buf, sizeof(buf), err))
        return rt_error_prefix(err, "ib: exchanging windows");
    char pn[300];
    wire_ib_window w;
    if (wire_ib_window_parse(buf, sizeof(buf), &w, peer_name(ib, ib->next, pn, sizeof(pn)), err))
        return -1;
    pthread_mutex_lock(&ib->mu);
    ib->peers[ib->next].win = w;
    ib->peers[ib->next].have_win = 1;
    ib->credits = w.n_slots - w.initial_occupied;
    pthread_mutex_unlock(&ib->mu);
    return 0;
}

static void ib_get_stats(const rt_transport *t, rt_transport_stats *out)
{
    ib_transport *ib = (ib_transport *)t;
    pthread_mutex_lock(&ib->mu);
    *out = ib->stats;
    pthread_mutex_unlock(&ib->mu);
}

/* Wait (bounded) until every posted send to every peer has completed, so
 * that nothing we queued is cut off by the disconnect: the signalled notice
 * completes only after all earlier work requests on its QP (RC order). */
static void drain_sends(ib_transport *ib)
{
    pthread_mutex_lock(&ib->mu);
    const rt_transport_config *c = &ib->base.cfg;
    /* Tell every peer why we go: bye, which rank we lost (so that ranks
     * that are not its neighbours can name it), or that we stopped on our
     * own error, with its message (from registered memory). */
    uint32_t notice =
        ib->failed ? wire_ib_notice(WIRE_NOTICE_LOST, ib->lost_rank >= 0 ? ib->lost_rank : c->rank)
                   : wire_ib_notice(WIRE_NOTICE_BYE, c->rank);
    struct ibv_sge why = {.addr = (uintptr_t)ib->reason, .lkey = ib->buf_mr->lkey};
    if (ib->failed && ib->lost_rank < 0) {
        why.length = (uint32_t)strnlen(ib->fail_msg, WIRE_FAIL_MSG_MAX);
        memcpy(ib->reason, ib->fail_msg, why.length);
    }
    for (int r = 0; r < c->size; r++) {
        ib_peer *p = &ib->peers[r];
        if (r == c->rank || p->state != PEER_CONNECTED || p->gone || p->stopped ||
            r == ib->lost_rank || !sq_room(p, 1))
            continue;
        struct ibv_send_wr note = {.opcode = IBV_WR_SEND_WITH_IMM,
                                   .imm_data = htonl(notice),
                                   .sg_list = why.length ? &why : NULL,
                                   .num_sge = why.length ? 1 : 0};
        if (post_send(ib, p, &note, 1, WR_DRAIN, 0, 1, "drain") == 0)
            p->drains_pending++;
    }
    double deadline = rt_now() + (ib->failed ? 1.0 : 5.0);
    for (;;) {
        int pending = 0;
        for (int r = 0; r < c->size; r++)
            pending += (int)ib->peers[r].drains_pending;
        if (!pending || rt_now() >= deadline)
            break;
        wait_cv(ib, deadline);
    }
    ib->closing = 1;
    pthread_mutex_unlock(&ib->mu);
}

static void ib_close(rt_transport *t)
{
    ib_transport *ib = (ib_transport *)t;
    if (ib->thread_started)
        drain_sends(ib);
    ib->closing = 1;
    if (ib->thread_started) {
        ib->stop = 1;
        uint64_t one = 1;
        if (write(ib->wake_fd, &one, sizeof(one)) < 0) {
            /* the comm thread also wakes by itself within 500 ms */
        }
        pthread_join(ib->thread, NULL);
    }
    for (int r = 0; ib->peers && r < t->cfg.size; r++) {
        ib_peer *p = &ib->peers[r];
        if (p->id && p->state == PEER_CONNECTED)
            rdma_disconnect(p->id);
    }
    for (int r = 0; ib->peers && r < t->cfg.size; r++) {
        ib_peer *p = &ib->peers[r];
        if (p->qp)
            ibv_destroy_qp(p->qp);
        if (p->id)
            rdma_destroy_id(p->id);
        free(p->rx_fifo);
        free(p->rx_len);
        free(p->stopped);
    }
    if (ib->win_mr)
        ibv_dereg_mr(ib->win_mr);
    if (ib->buf_mr)
        ibv_dereg_mr(ib->buf_mr);
    if (ib->cq)
        ibv_destroy_cq(ib->cq);
    if (ib->cc)
        ibv_destroy_comp_channel(ib->cc);
    if (ib->pd)
        ibv_dealloc_pd(ib->pd);
    if (ib->listen_id)
        rdma_destroy_id(ib->listen_id);
    if (ib->ec)
        rdma_destroy_event_channel(ib->ec);
    if (ib->wake_fd > 0)
        close(ib->wake_fd);
    rt_free(ib->window);
    rt_free(ib->bufs);
    free(ib->peers);
    free(ib->arrq);
    pthread_cond_destroy(&ib->cv);
    pthread_mutex_destroy(&ib->mu);
    pthread_mutex_destroy(&ib->poll_mu);
    rt_transport_base_free(t);
    free(ib);
}

/* Our own error stops this rank: failed with no lost rank, the close sends
 * every peer a notice naming this rank as the one lost, with the message
 * ("rank R stopped: WHY"), which they report as tcp's peers do. */
static void ib_abort(rt_transport *t, const char *why)
{
    ib_transport *ib = (ib_transport *)t;
    pthread_mutex_lock(&ib->mu);
    set_failed(ib, "rank %d stopped: %s", ib->base.cfg.rank, why);
    pthread_mutex_unlock(&ib->mu);
}

static const struct rt_transport_ops ib_ops = {
    .name = "ib",
    .close = ib_close,
    .slot = ib_slot,
    .pass = ib_pass,
    .wait_arrival = ib_wait_arrival,
    .flush = ib_flush,
    .send_msg = ib_send_msg,
    .recv_msg = ib_recv_msg,
    .get_stats = ib_get_stats,
    .authenticated = ib_authenticated,
    .abort = ib_abort,
};

/* ------------------------------------------------------------- probing ---- */

int rt_ib_probe(char *why, size_t why_len)
{
    int n = 0;
    struct ibv_device **list = ibv_get_device_list(&n);
    if (!list) {
        snprintf(why, why_len, "no RDMA devices found (ibv_get_device_list: %s)", strerror(errno));
        return 0;
    }
    int found = 0;
    char names[128] = "";
    for (int i = 0; i < n && !found; i++) {
        const char *name = ibv_get_device_name(list[i]);
        size_t used = strlen(names);
        snprintf(names + used, sizeof(names) - used, "%s%s", used ? ", " : "", name);
        struct ibv_context *ctx = ibv_open_device(list[i]);
        if (!ctx)
            continue;
        struct ibv_device_attr da;
        if (ibv_query_device(ctx, &da) == 0)
            for (int port = 1; port <= da.phys_port_cnt && !found; port++) {
                struct ibv_port_attr pa;
                if (ibv_query_port(ctx, (uint8_t)port, &pa) == 0 && pa.state == IBV_PORT_ACTIVE)
                    found = 1;
            }
        ibv_close_device(ctx);
    }
    ibv_free_device_list(list);
    if (found)
        return 1;
    if (n == 0)
        snprintf(why, why_len, "no RDMA devices found");
    else
        snprintf(why, why_len, "RDMA device(s) %s found, but no port is ACTIVE", names);
    return 0;
}

/* --------------------------------------------------------------- setup ---- */

/* host:port as one socket address (the first getaddrinfo gives). */
static int resolve(const char *host, int port, struct sockaddr_storage *out, rt_error *err)
{
    struct addrinfo *res = NULL;
    if (rt_net_resolve(host, port, 0, &res, err))
        return rt_error_prefix(err, "ib");
    memcpy(out, res->ai_addr, res->ai_addrlen);
    freeaddrinfo(res);
    return 0;
}

/* Check RLIMIT_MEMLOCK before registering `bytes`, with an actionable hint. */
static int check_memlock(size_t bytes, rt_error *err)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_MEMLOCK, &rl) || rl.rlim_cur == RLIM_INFINITY || geteuid() == 0)
        return 0;
    if ((rlim_t)bytes <= rl.rlim_cur)
        return 0;
    return rt_fail(err, RT_EXIT_RUNTIME,
                   "ib: the RDMA window and buffers need %zu KiB of locked memory but "
                   "RLIMIT_MEMLOCK is %llu KiB; run 'ulimit -l unlimited' (or add '* - memlock "
                   "unlimited' to /etc/security/limits.conf) or use --transport tcp",
                   bytes / 1024, (unsigned long long)rl.rlim_cur / 1024);
}

static int reg_mr(ib_transport *ib, void *addr, size_t len, int access, struct ibv_mr **out,
                  rt_error *err)
{
    *out = ibv_reg_mr(ib->pd, addr, len, access);
    if (*out)
        return 0;
    int e = errno;
    return rt_fail_errno(err, RT_EXIT_RUNTIME, e, "ib: ibv_reg_mr of %zu bytes on %s failed%s", len,
                         ibv_get_device_name(ib->ctx->device),
                         e == ENOMEM || e == EPERM || e == EAGAIN
                             ? " (locked-memory limit? try 'ulimit -l unlimited')"
                             : "");
}

/* Find the GID index rdma_cm uses for our address (for the log line). */
static int find_gid_index(ib_transport *ib)
{
    union ibv_gid want;
    memset(&want, 0, sizeof(want));
    if (ib->self_addr.ss_family == AF_INET) {
        const struct sockaddr_in *s = (const struct sockaddr_in *)&ib->self_addr;
        want.raw[10] = want.raw[11] = 0xff;
        memcpy(&want.raw[12], &s->sin_addr, 4);
    } else {
        const struct sockaddr_in6 *s = (const struct sockaddr_in6 *)&ib->self_addr;
        memcpy(want.raw, &s->sin6_addr, 16);
    }
    struct ibv_port_attr pa;
    if (ibv_query_port(ib->ctx, ib->port, &pa))
        return -1;
    int v1 = -1;
    for (int i = 0; i < pa.gid_tbl_len; i++) {
        struct ibv_gid_entry e;
        if (ibv_query_gid_ex(ib->ctx, ib->port, (uint32_t)i, &e, 0))
            continue;
        if (memcmp(&e.gid, &want, sizeof(want)))
            continue;
        if (e.gid_type == IBV_GID_TYPE_ROCE_V2)
            return i;
        if (v1 < 0)
            v1 = i;
    }
    return v1;
}

/* Work requests one peer's queue pair holds: receives (passes' notices,
 * control chunks, heartbeats) and sends (passes, control, credits). */
static uint32_t rq_depth(const rt_transport_config *c)
{
    return 2 * c->n_slots + 2 * CTRL_CREDITS + 8 + BEAT_SLACK;
}
static uint32_t sq_depth(const rt_transport_config *c)
{
    return 3 * c->n_slots + 2 * CTRL_CREDITS + SIGNAL_EVERY + 8;
}
/* Registered bounce-buffer bytes per peer: its control sends and receives. */
static size_t peer_buf_bytes(const rt_transport_config *c)
{
    return (size_t)(CTRL_CREDITS + rq_depth(c)) * CTRL_CHUNK;
}

/* The device and port behind our listening address: the ones asked for
 * (--ib-dev, --ib-port), and ACTIVE. */
static int open_port(ib_transport *ib, rt_error *err)
{
    const rt_transport_config *c = &ib->base.cfg;
    ib->ctx = ib->listen_id->verbs;
    const char *dev = ib->ctx ? ibv_get_device_name(ib->ctx->device) : NULL;
    if (!ib->ctx)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "ib: %s is not the address of an RDMA device's network interface "
                       "(rdma_bind_addr gave no device; for soft-RoCE: rdma link add rxe0 type "
                       "rxe netdev IF)",
                       c->peers[c->rank].host);
    if (c->ib_dev && c->ib_dev[0] && strcmp(c->ib_dev, dev))
        return rt_fail(err, RT_EXIT_INPUT,
                       "ib: --ib-dev %s was requested but %s belongs to device %s", c->ib_dev,
                       c->peers[c->rank].host, dev);
    ib->port = ib->listen_id->port_num ? ib->listen_id->port_num : 1;
    if (c->ib_port > 0 && c->ib_port != ib->port)
        return rt_fail(err, RT_EXIT_INPUT,
                       "ib: --ib-port %d was requested but %s is on port %d of %s", c->ib_port,
                       c->peers[c->rank].host, ib->port, dev);
    struct ibv_port_attr pa;
    if (ibv_query_port(ib->ctx, ib->port, &pa))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: ibv_query_port(%s, %d)", dev,
                             ib->port);
    if (pa.state != IBV_PORT_ACTIVE)
        return rt_fail(err, RT_EXIT_RUNTIME, "ib: port %d of %s is %s, not ACTIVE", ib->port, dev,
                       ibv_port_state_str(pa.state));
    ib->active_mtu = pa.active_mtu;
    int gid = c->gid_index >= 0 ? c->gid_index : find_gid_index(ib);
    rt_info("ib: rank %d on %s port %d (%s), GID index %d%s, active MTU %d", c->rank, dev, ib->port,
            pa.link_layer == IBV_LINK_LAYER_ETHERNET ? "RoCE" : "InfiniBand", gid,
            c->gid_index >= 0 ? " (--gid-index)" : " (auto: RoCE v2 GID of the address)",
            mtu_bytes(pa.active_mtu));
    return 0;
}

/* Protection domain, completion channel and one CQ for every peer's QP. */
static int create_queues(ib_transport *ib, rt_error *err)
{
    const rt_transport_config *c = &ib->base.cfg;
    const char *dev = ibv_get_device_name(ib->ctx->device);
    int cqe = (int)((rq_depth(c) + sq_depth(c)) * (uint32_t)(c->size > 1 ? c->size - 1 : 1));
    if (!(ib->pd = ibv_alloc_pd(ib->ctx)))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: ibv_alloc_pd on %s", dev);
    if (!(ib->cc = ibv_create_comp_channel(ib->ctx)))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: ibv_create_comp_channel on %s", dev);
    if (!(ib->cq = ibv_create_cq(ib->ctx, cqe, NULL, ib->cc, 0)))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: ibv_create_cq(%d) on %s", cqe, dev);
    return 0;
}

/* The registered memory: the window (slots, meta_in, meta_out), which the
 * previous rank writes, and the bounce buffers (every peer's, then the
 * failure reason we send). */
static int register_memory(ib_transport *ib, rt_error *err)
{
    const rt_transport_config *c = &ib->base.cfg;
    size_t slots = (size_t)c->n_slots * c->slot_bytes;
    ib->window_bytes = slots + 2 * (size_t)c->n_slots * META_BYTES;
    ib->bufs_bytes = peer_buf_bytes(c) * (size_t)(c->size - 1) + WIRE_FAIL_MSG_MAX;
    if (check_memlock(ib->window_bytes + ib->bufs_bytes, err))
        return -1;
    ib->window = rt_alloc(ib->window_bytes);
    ib->bufs = rt_alloc(ib->bufs_bytes);
    if (!ib->window || !ib->bufs)
        return rt_fail(err, RT_EXIT_RUNTIME, "ib: out of memory for a %zu-byte window",
                       ib->window_bytes);
    ib->reason = ib->bufs + peer_buf_bytes(c) * (size_t)(c->size - 1);
    ib->meta_in = (wire_ib_meta *)(ib->window + slots);
    ib->meta_out = (wire_ib_meta *)(ib->window + slots + (size_t)c->n_slots * META_BYTES);
    if (reg_mr(ib, ib->window, ib->window_bytes, IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE,
               &ib->win_mr, err) ||
        reg_mr(ib, ib->bufs, ib->bufs_bytes, IBV_ACCESS_LOCAL_WRITE, &ib->buf_mr, err))
        return -1;
    return 0;
}

/* Each peer's queue depths, its share of the bounce buffers and its
 * receive bookkeeping. */
static int init_peers(ib_transport *ib, rt_error *err)
{
    const rt_transport_config *c = &ib->base.cfg;
    uint32_t rq = rq_depth(c);
    int k = 0;
    for (int r = 0; r < c->size; r++) {
        ib_peer *p = &ib->peers[r];
        p->rank = r;
        if (r == c->rank)
            continue;
        p->sq_depth = sq_depth(c);
        p->rq_depth = rq;
        p->tx_bufs = ib->bufs + peer_buf_bytes(c) * (size_t)k;
        p->rx_bufs = p->tx_bufs + (size_t)CTRL_CREDITS * CTRL_CHUNK;
        p->rx_fifo = calloc(rq, sizeof(uint32_t));
        p->rx_len = calloc(rq, sizeof(uint32_t));
        if (!p->rx_fifo || !p->rx_len)
            return rt_fail(err, RT_EXIT_RUNTIME, "ib: out of memory");
        k++;
    }
    return 0;
}

/* Open the device behind our listening address and allocate everything that
 * does not depend on peers: PD, CQ, window, bounce buffers. */
static int setup_device(ib_transport *ib, rt_error *err)
{
    if (open_port(ib, err) || create_queues(ib, err) || register_memory(ib, err))
        return -1;
    return init_peers(ib, err);
}

/* Our connect private data: who we are and our port's MTU, nothing that
 * lets the peer touch our memory (see the top of the file). */
static void fill_hello(const ib_transport *ib, wire_ib_hello *h)
{
    const rt_transport_config *c = &ib->base.cfg;
    memset(h, 0, sizeof(*h));
    h->magic = WIRE_MAGIC;
    h->version = WIRE_IB_VERSION;
    h->rank = (uint16_t)c->rank;
    h->size = (uint16_t)c->size;
    h->mtu = (uint8_t)ib->active_mtu;
}

static int create_qp(ib_transport *ib, ib_peer *p, struct rdma_cm_id *id, rt_error *err)
{
    struct ibv_qp_init_attr qa = {
        .send_cq = ib->cq,
        .recv_cq = ib->cq,
        .cap = {.max_send_wr = p->sq_depth,
                .max_recv_wr = p->rq_depth,
                .max_send_sge = 1,
                .max_recv_sge = 1},
        .qp_type = IBV_QPT_RC,
    };
    char pn[300];
    if (id->verbs != ib->ctx)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "ib: the route to %s uses another RDMA device than our own address",
                       peer_name(ib, p->rank, pn, sizeof(pn)));
    p->id = id;
    id->context = p;
    if (!(p->qp = ibv_create_qp(ib->pd, &qa)))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: ibv_create_qp for %s",
                             peer_name(ib, p->rank, pn, sizeof(pn)));
    /* INIT: port and pkey from rdma_cm, access flags ours */
    struct ibv_qp_attr a;
    int mask = 0;
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_INIT;
    if (rdma_init_qp_attr(id, &a, &mask))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: rdma_init_qp_attr(INIT) for %s",
                             peer_name(ib, p->rank, pn, sizeof(pn)));
    a.qp_access_flags = IBV_ACCESS_LOCAL_WRITE | IBV_ACCESS_REMOTE_WRITE;
    mask |= IBV_QP_ACCESS_FLAGS;
    int rc = ibv_modify_qp(p->qp, &a, mask);
    if (rc)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, rc, "ib: ibv_modify_qp(INIT) for %s",
                             peer_name(ib, p->rank, pn, sizeof(pn)));
    for (uint32_t i = 0; i < p->rq_depth; i++)
        if (post_recv(ib, p, i))
            return rt_fail(err, RT_EXIT_RUNTIME, "%s", ib->fail_msg);
    p->ctrl_credits = CTRL_CREDITS;
    return 0;
}

/* INIT -> RTR -> RTS once the peer's hello is known: path MTU = min of both
 * ports' active MTU, our ACK timeout and retry counts. */
static int qp_ready(ib_transport *ib, ib_peer *p, rt_error *err)
{
    struct ibv_qp_attr a;
    int mask = 0, rc;
    char pn[300];
    peer_name(ib, p->rank, pn, sizeof(pn));
    memset(&a, 0, sizeof(a));
    a.qp_state = IBV_QPS_RTR;
    if (rdma_init_qp_attr(p->id, &a, &mask))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: rdma_init_qp_attr(RTR) for %s", pn);
    enum ibv_mtu m =
        ib->active_mtu < (enum ibv_mtu)p->remote.mtu ? ib->active_mtu : (enum ibv_mtu)p->remote.mtu;
    if (a.path_mtu && a.path_mtu < m)
        m = a.path_mtu;
    a.path_mtu = m;
    p->path_mtu = m;
    if (ib->base.cfg.gid_index >= 0)
        a.ah_attr.grh.sgid_index = (uint8_t)ib->base.cfg.gid_index;
    if ((rc = ibv_modify_qp(p->qp, &a, mask | IBV_QP_PATH_MTU)))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, rc, "ib: ibv_modify_qp(RTR) for %s", pn);
    memset(&a, 0, sizeof(a));
    mask = 0;
    a.qp_state = IBV_QPS_RTS;
    if (rdma_init_qp_attr(p->id, &a, &mask))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: rdma_init_qp_attr(RTS) for %s", pn);
    a.timeout = IB_ACK_TIMEOUT;
    a.retry_cnt = IB_RETRY_CNT;
    a.rnr_retry = IB_RNR_RETRY;
    mask |= IBV_QP_TIMEOUT | IBV_QP_RETRY_CNT | IBV_QP_RNR_RETRY;
    if ((rc = ibv_modify_qp(p->qp, &a, mask)))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, rc, "ib: ibv_modify_qp(RTS) for %s", pn);
    return 0;
}

static void conn_param(const ib_transport *ib, wire_ib_hello *h, struct rdma_conn_param *cp,
                       const ib_peer *p)
{
    fill_hello(ib, h);
    memset(cp, 0, sizeof(*cp));
    cp->private_data = h;
    cp->private_data_len = sizeof(*h);
    cp->retry_count = IB_RETRY_CNT;
    cp->rnr_retry_count = IB_RNR_RETRY;
    cp->qp_num = p->qp->qp_num;
}

/* Drop a failed attempt to reach a lower rank; try again a little later. */
static void reset_active(ib_peer *p)
{
    if (p->qp)
        ibv_destroy_qp(p->qp);
    if (p->id)
        rdma_destroy_id(p->id);
    p->qp = NULL;
    p->id = NULL;
    p->state = PEER_NONE;
    p->retry_at = rt_now() + RETRY_DELAY_S;
}

static int start_connect(ib_transport *ib, ib_peer *p, rt_error *err)
{
    struct sockaddr_storage dst, src = ib->self_addr;
    const rt_peer *pp = &ib->base.peers[p->rank];
    if (resolve(pp->host, pp->port, &dst, err))
        return -1;
    ((struct sockaddr_in *)&src)->sin_port = 0; /* same offset for IPv6 */
    if (rdma_create_id(ib->ec, &p->id, p, RDMA_PS_TCP))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: rdma_create_id");
    p->state = PEER_CONNECTING;
    if (rdma_resolve_addr(p->id, (struct sockaddr *)&src, (struct sockaddr *)&dst, 2000)) {
        int e = errno;
        char pn[300];
        return rt_fail_errno(err, RT_EXIT_RUNTIME, e, "ib: rdma_resolve_addr to %s",
                             peer_name(ib, p->rank, pn, sizeof(pn)));
    }
    return 0;
}

/* A connection request from a higher rank: set up its QP and accept. */
static int on_connect_request(ib_transport *ib, struct rdma_cm_event *ev, rt_error *err)
{
    wire_ib_hello h, mine;
    if (wire_ib_hello_parse(ev->param.conn.private_data, ev->param.conn.private_data_len,
                            ib->base.cfg.size, &h, err))
        return -1;
    ib_peer *p = &ib->peers[h.rank];
    if (h.rank <= ib->base.cfg.rank || p->state != PEER_NONE)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "ib: unexpected connection from rank %u (duplicate rank in the hostfile?)",
                       h.rank);
    p->remote = h;
    p->state = PEER_CONNECTING;
    if (create_qp(ib, p, ev->id, err) || qp_ready(ib, p, err))
        return -1;
    struct rdma_conn_param cp;
    conn_param(ib, &mine, &cp, p);
    if (rdma_accept(p->id, &cp)) {
        char pn[300];
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: rdma_accept from %s",
                             peer_name(ib, p->rank, pn, sizeof(pn)));
    }
    return 0;
}

/* One rdma_cm event during setup.  Returns 0, or -1 with err. */
static int setup_event(ib_transport *ib, struct rdma_cm_event *ev, int *connected, rt_error *err)
{
    ib_peer *p = ev->id->context;
    char pn[300] = "";
    if (p)
        peer_name(ib, p->rank, pn, sizeof(pn));
    switch (ev->event) {
    case RDMA_CM_EVENT_CONNECT_REQUEST:
        return on_connect_request(ib, ev, err);
    case RDMA_CM_EVENT_ADDR_RESOLVED:
        if (rdma_resolve_route(p->id, 2000))
            return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: rdma_resolve_route to %s", pn);
        return 0;
    case RDMA_CM_EVENT_ROUTE_RESOLVED: {
        wire_ib_hello mine;
        struct rdma_conn_param cp;
        if (create_qp(ib, p, p->id, err))
            return -1;
        conn_param(ib, &mine, &cp, p);
        if (rdma_connect(p->id, &cp))
            return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: rdma_connect to %s", pn);
        return 0;
    }
    case RDMA_CM_EVENT_CONNECT_RESPONSE:
        if (wire_ib_hello_parse(ev->param.conn.private_data, ev->param.conn.private_data_len,
                                ib->base.cfg.size, &p->remote, err) ||
            qp_ready(ib, p, err))
            return -1;
        if (p->remote.rank != p->rank)
            return rt_fail(err, RT_EXIT_INPUT, "ib: %s answered as rank %u (hostfile mismatch?)",
                           pn, p->remote.rank);
        if (rdma_establish(p->id))
            return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: rdma_establish with %s", pn);
        p->state = PEER_CONNECTED;
        (*connected)++;
        return 0;
    case RDMA_CM_EVENT_ESTABLISHED:
        if (p && p->state == PEER_CONNECTING) {
            p->state = PEER_CONNECTED;
            (*connected)++;
        }
        return 0;
    case RDMA_CM_EVENT_REJECTED:
    case RDMA_CM_EVENT_UNREACHABLE:
    case RDMA_CM_EVENT_ADDR_ERROR:
    case RDMA_CM_EVENT_ROUTE_ERROR:
    case RDMA_CM_EVENT_CONNECT_ERROR:
        if (p && p->rank < ib->base.cfg.rank && p->state == PEER_CONNECTING) {
            rt_debug("ib: %s not reachable yet (%s, status %d); retrying", pn,
                     rdma_event_str(ev->event), ev->status);
            p->retry_at = -1; /* reset after the event is acked */
            return 0;
        }
        return rt_fail(err, RT_EXIT_RUNTIME, "ib: connection with %s failed: %s (status %d)",
                       p ? pn : "a peer", rdma_event_str(ev->event), ev->status);
    case RDMA_CM_EVENT_DISCONNECTED:
        return rt_fail(err, RT_EXIT_RUNTIME, "ib: %s disconnected during setup", p ? pn : "a peer");
    default:
        return 0;
    }
}

/* Connect to every lower rank and accept every higher one, within
 * connect_timeout_ms.  Runs on the opening thread before the comm thread. */
static int connect_all(ib_transport *ib, rt_error *err)
{
    const rt_transport_config *c = &ib->base.cfg;
    int connected = 0;
    double deadline = rt_now() + (c->connect_timeout_ms > 0 ? c->connect_timeout_ms : 30000) / 1e3;
    while (connected < c->size - 1) {
        double now = rt_now();
        for (int r = 0; r < c->rank; r++) {
            ib_peer *p = &ib->peers[r];
            if (p->state == PEER_NONE && p->retry_at <= now && start_connect(ib, p, err))
                return -1;
        }
        if (now >= deadline) {
            char missing[256] = "";
            for (int r = 0; r < c->size; r++)
                if (r != c->rank && ib->peers[r].state != PEER_CONNECTED) {
                    size_t u = strlen(missing);
                    snprintf(missing + u, sizeof(missing) - u, "%s%d (%.64s:%d)", u ? ", " : "", r,
                             c->peers[r].host, c->peers[r].port);
                }
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "ib: rank %d could not connect to rank(s) %s within %d ms", c->rank,
                           missing, c->connect_timeout_ms);
        }
        struct pollfd pfd = {.fd = ib->ec->fd, .events = POLLIN};
        if (poll(&pfd, 1, 50) <= 0)
            continue;
        struct rdma_cm_event *ev;
        if (rdma_get_cm_event(ib->ec, &ev)) {
            if (errno == EAGAIN)
                continue;
            return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: rdma_get_cm_event");
        }
        int rc = setup_event(ib, ev, &connected, err);
        ib_peer *p = ev->id->context;
        rdma_ack_cm_event(ev);
        if (rc)
            return -1;
        if (p && p->retry_at < 0)
            reset_active(p);
    }
    return 0;
}

static int listen_self(ib_transport *ib, rt_error *err)
{
    const rt_transport_config *c = &ib->base.cfg;
    const rt_peer *me = &c->peers[c->rank];
    if (resolve(me->host, me->port, &ib->self_addr, err))
        return -1;
    if (!(ib->ec = rdma_create_event_channel()))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno,
                             "ib: rdma_create_event_channel (is rdma_ucm loaded?)");
    if (fcntl(ib->ec->fd, F_SETFL, fcntl(ib->ec->fd, F_GETFL) | O_NONBLOCK))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: fcntl");
    if (rdma_create_id(ib->ec, &ib->listen_id, NULL, RDMA_PS_TCP))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: rdma_create_id");
    if (rdma_bind_addr(ib->listen_id, (struct sockaddr *)&ib->self_addr))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: rdma_bind_addr(%s:%d)", me->host,
                             me->port);
    if (rdma_listen(ib->listen_id, c->size + 4))
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "ib: rdma_listen(%s:%d)", me->host,
                             me->port);
    return 0;
}

static int log_paths(ib_transport *ib)
{
    const rt_transport_config *c = &ib->base.cfg;
    for (int r = 0; r < c->size; r++)
        if (r != c->rank && (r == ib->next || r == ib->prev))
            rt_debug("ib: rank %d <-> rank %d: path MTU %d (local %d, remote %d)", c->rank, r,
                     mtu_bytes(ib->peers[r].path_mtu), mtu_bytes(ib->active_mtu),
                     mtu_bytes((enum ibv_mtu)ib->peers[r].remote.mtu));
    return 0;
}

int rt_ib_open(const rt_transport_config *cfg, rt_transport **out, rt_error *err)
{
    char why[256] = "";
    if (!rt_ib_probe(why, sizeof(why)))
        return rt_fail(err, RT_EXIT_INPUT,
                       "transport ib: %s; use --transport tcp (or auto) on this machine", why);
    ib_transport *ib = calloc(1, sizeof(*ib));
    if (!ib)
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    pthread_mutex_init(&ib->mu, NULL);
    pthread_mutex_init(&ib->poll_mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&ib->cv, &ca);
    pthread_condattr_destroy(&ca);
    ib->wake_fd = -1;
    ib->lost_rank = -1;
    if (rt_transport_base_init(&ib->base, &ib_ops, cfg, err)) {
        free(ib);
        return -1;
    }
    const rt_transport_config *c = &ib->base.cfg;
    ib->next = c->size < 2 ? -1 : c->ring.custom ? c->ring.next : (c->rank + 1) % c->size;
    ib->prev = c->size < 2 ? -1 : c->ring.custom ? c->ring.prev : (c->rank + c->size - 1) % c->size;
    ib->peers = calloc((size_t)c->size, sizeof(ib_peer));
    ib->arrq = calloc(c->n_slots, sizeof(rt_arrival));
    if (!ib->peers || !ib->arrq) {
        ib_close(&ib->base);
        return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
    }
    if (c->size == 1) { /* no peers: a plain local window */
        ib->window = rt_alloc((size_t)c->n_slots * c->slot_bytes);
        if (!ib->window) {
            ib_close(&ib->base);
            return rt_fail(err, RT_EXIT_RUNTIME, "out of memory");
        }
        *out = &ib->base;
        return 0;
    }
    if (listen_self(ib, err) || setup_device(ib, err) || connect_all(ib, err)) {
        ib_close(&ib->base);
        return -1;
    }
    log_paths(ib);
    for (int r = 0; r < c->size; r++)
        ib->peers[r].heard_at = rt_now(); /* the silence clock starts now */
    ib->wake_fd = eventfd(0, EFD_NONBLOCK);
    if (ib->wake_fd < 0 || pthread_create(&ib->thread, NULL, comm_thread, ib)) {
        ib_close(&ib->base);
        return rt_fail(err, RT_EXIT_RUNTIME, "ib: cannot start the completion thread");
    }
    ib->thread_started = 1;
    *out = &ib->base;
    return 0;
}
