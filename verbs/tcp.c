/*
 * tcp.c - the TCP backend: transport.h's semantics over plain sockets.
 *
 * Connections (all set up by connect_all, then the listener is closed):
 *   - ring out: to the next rank.  We write block frames, read credits.
 *   - ring in:  from the previous rank.  We read block frames, write credits.
 *   - control:  one per peer pair, for send_msg/recv_msg (collectives).
 * Every connection starts with an authenticated handshake (see "connection
 * setup" below): a stranger learns nothing and delays no one, and a wrong
 * hostfile or a different build fails with a clear message instead of
 * corrupting data.  (Window sizes and the rest of the job's identity are
 * compared afterwards, by fingerprint.c.)
 *
 * Threads (only when size > 1):
 *   - receiver: reads block frames from the previous rank straight into slot
 *     (initial_occupied + k) % n_slots and queues the arrival.
 *   - sender:   writes queued passes to the next rank; after each pass's
 *     bytes are written it returns one credit to the previous rank (the
 *     source slot is free again, and slots are refilled by the previous rank).
 *   - creditor: reads credits from the next rank.
 *   - watchdog: sends a heartbeat to both ring neighbours every second (a
 *     quarter of the peer timeout when that is shorter), and fails the
 *     transport when one of them has sent nothing at all, not even a
 *     heartbeat, for peer_timeout_ms: a stopped or hung process, whose
 *     kernel still ACKs TCP, is named within the timeout.  Waits for data
 *     have no timeout of their own (a slow peer is not a failure), so a
 *     rank stuck behind the silent one is never blamed.  Every rank hears
 *     of the loss: the neighbours relay it round the ring.
 * rt_transport_pass waits for a credit, queues the pass and returns, so the
 * caller computes while the sender thread writes.  (Blocks up to INLINE_MAX
 * bytes are written by the caller itself when the sender is idle and the
 * socket takes them at once: cheaper than a thread hand-off.)
 *
 * Ring sockets get 4 MiB send/receive buffers unless cfg.tcp_sockbuf says
 * otherwise (a size, or kernel autotuning), for benchmarking.
 *
 * Failure: an error, EOF or protocol violation on any connection marks the
 * transport failed with a message naming the peer ("lost rank 1 (host:port):
 * connection closed by peer").  The first failure wins; it is relayed to both
 * ring neighbours (FAIL frames, LOST) so they report the same root cause, and
 * every socket is shut down, which wakes all our threads and all blocked calls.
 * A peer that closes normally first sends BYE on its ring connections, so
 * its later EOF is not a failure unless we still needed something from it.
 *
 * Stopping in order (transport.h): a rank that stops on an error of its own
 * (rt_transport_abort), or on a call that needed a rank that had stopped,
 * lets its sender thread write the passes already queued, then ends every
 * connection with a stop notice carrying its message: a FAIL frame (STOP)
 * to the next rank, WIRE_CREDIT_STOP to the previous one, a WIRE_CTL_STOP
 * header on every control connection (send_notices).  A receiver records
 * the peer as stopped (t->stopped) without failing: the calls that need
 * that peer fail with its message once everything it sent before the
 * notice has been delivered, and the others go on, so every rank sees the
 * same results of the collectives that rank finished before it stopped.
 */
#define _GNU_SOURCE
#include "verbs/backend.h"
#include "verbs/netaddr.h"
#include "verbs/wire.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

/* Payloads are read in chunks of this size, so that the watchdog sees a
 * large block that is still arriving as progress. */
#define READ_CHUNK (256 << 10)

#define SOCK_BUF_BYTES (4 << 20)

/* Blocks up to this size are written by the calling thread when the sender
 * thread is idle and the socket has room (no thread hand-off, which costs
 * more than the copy); larger ones always go to the sender thread so the
 * caller's compute overlaps the copy into the kernel. */
#define INLINE_MAX (64 << 10)

typedef struct pass_item {
    uint32_t slot, block, epoch;
    int inline_owned; /* the caller is writing it; the sender thread waits */
    size_t len;
    size_t off; /* bytes of header + payload already written */
} pass_item;

/* One direction of the ring connection as its reader thread sees it: the
 * receiver reads block frames from the previous rank, the creditor reads
 * credits from the next; both share the reader loop below. */
typedef struct ring_reader {
    struct tcp_transport *t;
    int fd, peer;
    int64_t *heard;     /* last sign of life of the peer */
    int *closed;        /* the peer said BYE */
    pthread_cond_t *cv; /* woken on BYE and on the end of the reader */
    size_t unit;        /* bytes of one frame header or credit word */
    int (*parse)(const void *buf, size_t len, const wire_ring *ring, wire_msg *out,
                 const char *peer, rt_error *err);
    /* Act on a block or credits; called and returns with t->mu held.
     * Returns 0 to read on, -1 when the reader must stop. */
    int (*on_data)(struct tcp_transport *t, const wire_msg *m);
    int *ended; /* the reader read its last unit (a stop notice, BYE and EOF, a failure) */
} ring_reader;

typedef struct tcp_transport {
    rt_transport base; /* must be first */
    int rank, size, next, prev;
    uint32_t n_slots, init_occ;
    size_t slot_bytes;
    uint8_t *window;
    size_t window_bytes; /* n_slots x slot_bytes, for rt_free_untouched */

    int next_fd, prev_fd; /* ring out / ring in; -1 when size == 1 */
    int *ctl_fd;          /* size entries, -1 for ourselves */
    int peer_timeout_ms;

    pthread_t sender, receiver, creditor, watchdog;
    ring_reader readers[2]; /* the receiver's (from prev) and the creditor's (from next) */
    int threads_started;
    /* Liveness: when bytes last came from each ring neighbour (rt_now()
     * milliseconds, atomic).  The watchdog thread sends heartbeats both
     * ways and fails the transport when a neighbour is silent longer than
     * peer_timeout_ms. */
    int64_t heard_prev_ms, heard_next_ms;
    int beats_stopped; /* BYE written: no more beats (under the wmu locks) */
    int watchdog_quit; /* under mu */
    pthread_cond_t cv_watchdog;
    /* Serialise writers per socket: the sender thread against close() and
     * failure relays (which only try-lock, so they never block). */
    pthread_mutex_t next_wmu, prev_wmu;

    pthread_mutex_t mu;        /* everything below */
    pthread_cond_t cv_credit;  /* pass: credits, next rank closed, failure */
    pthread_cond_t cv_arrival; /* wait_arrival: arrivals, previous rank closed, failure */
    pthread_cond_t cv_main;    /* flush: passes completed; failure */
    pthread_cond_t cv_send;    /* sender thread: queued passes, close, failure */

    pass_item *q; /* n_slots entries: passes queued for the sender */
    uint32_t q_head, q_count;
    uint64_t passes_queued; /* calls to pass so far */
    uint64_t passes_freed;  /* bytes written: source slot free again */
    uint64_t passes_done;   /* ... and its credit written to the previous rank */
    uint32_t credits;       /* free slots we may write at the next rank */

    rt_arrival *aq; /* n_slots entries: arrivals not yet taken */
    uint32_t a_head, a_count;
    uint64_t arrivals; /* blocks received so far */

    int failed;
    rt_error fail;
    int fail_lost;    /* our failure is a loss: relayed at once, every socket shut down */
    int notices_sent; /* our stop was told, in order, on every connection */
    int sender_done;  /* the sender thread has written its last frame */
    /* Peers that stopped, with their message (size entries, NULL = not
     * stopped): set from their in-order notice; see "Stopping in order". */
    char **stopped;
    uint8_t *ctl_broken; /* size entries: control connection cut, maybe mid-message */
    int closing;
    int prev_closed, next_closed; /* BYE seen on ring in / credits */
    int prev_ended, next_ended;   /* their reader threads are done (ring_reader.ended) */
    int prev_credit_broken;       /* writing a credit failed (judged by receiver) */
    rt_transport_stats stats;
} tcp_transport;

/* ---- small helpers ---- */

static const char *peer_str(const tcp_transport *t, int r, char *buf, size_t cap)
{
    const rt_peer *p = &t->base.peers[r];
    if (strchr(p->host, ':'))
        snprintf(buf, cap, "rank %d ([%s]:%d)", r, p->host, p->port);
    else
        snprintf(buf, cap, "rank %d (%s:%d)", r, p->host, p->port);
    return buf;
}

static const char *errno_text(int e)
{
    if (e == 0)
        return "connection closed by peer";
    if (e == ECONNRESET)
        return "connection reset by peer";
    return strerror(e);
}

static void timespec_at(double when, struct timespec *ts)
{
    double whole = (double)(time_t)when;
    ts->tv_sec = (time_t)when;
    ts->tv_nsec = (long)((when - whole) * 1e9);
    if (ts->tv_nsec >= 1000000000L) {
        ts->tv_sec++;
        ts->tv_nsec -= 1000000000L;
    }
}

/* Wait on cv until `deadline` (rt_now() seconds; <= 0 = forever).
 * Returns 0 when woken, ETIMEDOUT at the deadline. */
static int cond_wait_until(pthread_cond_t *cv, pthread_mutex_t *mu, double deadline)
{
    if (deadline <= 0) {
        pthread_cond_wait(cv, mu);
        return 0;
    }
    struct timespec ts;
    timespec_at(deadline, &ts);
    return pthread_cond_timedwait(cv, mu, &ts) == ETIMEDOUT ? ETIMEDOUT : 0;
}

static int ms_until(double deadline)
{
    double ms = (deadline - rt_now()) * 1000.0;
    if (ms <= 0)
        return 0;
    return ms > 1e9 ? 1000000000 : (int)ms + 1;
}

/* Connection set-up serves every socket from one poll loop, so they are
 * created non-blocking; the ring's threads then block in their reads and
 * writes (a peer that is lost shuts the socket down, which wakes them). */
static int set_blocking(int fd)
{
    int fl = fcntl(fd, F_GETFL, 0);
    return fl < 0 || fcntl(fd, F_SETFL, fl & ~O_NONBLOCK) ? -1 : 0;
}

/* The ring sockets' buffer size: cfg.tcp_sockbuf, 0 = default, < 0 = leave
 * it to kernel autotuning (returns 0). */
static int ring_sockbuf_bytes(const tcp_transport *t)
{
    int bytes = t->base.cfg.tcp_sockbuf;
    return bytes == 0 ? SOCK_BUF_BYTES : bytes < 0 ? 0 : bytes;
}

static int tune_socket(int fd, int ring_bytes)
{
    int one = 1;
    /* A peer host that vanishes without closing (power loss, cable) is found
     * by keepalive probes within ~25 s while the connection is idle, even
     * with peer_timeout_ms == 0; a live but busy peer's kernel answers them.
     * (No TCP_USER_TIMEOUT: it could abort a live peer that is merely slow
     * to read.  Use peer_timeout_ms to bound waits on a frozen peer.) */
    int idle = 10, intvl = 5, cnt = 3;
    if (setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one)) ||
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one)) ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle)) ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl)) ||
        setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt)))
        return -1;
    if (ring_bytes > 0 && (setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &ring_bytes, sizeof(ring_bytes)) ||
                           setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &ring_bytes, sizeof(ring_bytes))))
        return -1;
    return 0;
}

/* Blocking full read.  0 = done, otherwise the errno (0 is mapped to EPIPE
 * only for "EOF": returns -1 for EOF so callers can tell it apart). */
static int read_full(int fd, void *buf, size_t len)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = recv(fd, p, len, MSG_WAITALL);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
        } else if (n == 0) {
            return -1;
        } else if (errno != EINTR) {
            return errno;
        }
    }
    return 0;
}

/* Drop the first `bytes` of an iovec array: skip the entries they cover
 * and trim the next one; *iov and *n then describe what is left. */
static void iov_drop(struct iovec **iov, int *n, size_t bytes)
{
    struct iovec *v = *iov;
    while (*n > 0 && bytes >= v->iov_len) {
        bytes -= v->iov_len;
        v++;
        (*n)--;
    }
    if (*n > 0) {
        v->iov_base = (uint8_t *)v->iov_base + bytes;
        v->iov_len -= bytes;
    }
    *iov = v;
}

/* Blocking full write of an iovec array (modified in place). 0 or errno. */
static int writev_full(int fd, struct iovec *iov, int iovcnt, int flags)
{
    while (iovcnt > 0) {
        struct msghdr mh = {.msg_iov = iov, .msg_iovlen = (size_t)iovcnt};
        ssize_t n = sendmsg(fd, &mh, MSG_NOSIGNAL | flags);
        if (n < 0) {
            if (errno == EINTR)
                continue;
            return errno;
        }
        iov_drop(&iov, &iovcnt, (size_t)n);
    }
    return 0;
}

static int write_full(int fd, const void *buf, size_t len, int flags)
{
    struct iovec iov = {(void *)buf, len};
    return writev_full(fd, &iov, 1, flags);
}

/* ---- failure ---- */

static void shutdown_all(tcp_transport *t)
{
    if (t->next_fd >= 0)
        shutdown(t->next_fd, SHUT_RDWR);
    if (t->prev_fd >= 0)
        shutdown(t->prev_fd, SHUT_RDWR);
    for (int r = 0; r < t->size; r++)
        if (t->ctl_fd[r] >= 0)
            shutdown(t->ctl_fd[r], SHUT_RDWR);
}

/* Tell both ring neighbours why we fail, without ever blocking. */
static void relay_failure(tcp_transport *t, const char *msg)
{
    uint32_t len = (uint32_t)strlen(msg);
    if (len > WIRE_FAIL_MSG_MAX)
        len = WIRE_FAIL_MSG_MAX;
    if (t->next_fd >= 0 && pthread_mutex_trylock(&t->next_wmu) == 0) {
        wire_frame_hdr h = {.type = WIRE_FRAME_FAIL, .len = len};
        struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)msg, len}};
        writev_full(t->next_fd, iov, 2, MSG_DONTWAIT);
        pthread_mutex_unlock(&t->next_wmu);
    }
    if (t->prev_fd >= 0 && pthread_mutex_trylock(&t->prev_wmu) == 0) {
        uint32_t head[2] = {WIRE_CREDIT_FAIL, len};
        struct iovec iov[2] = {{head, sizeof(head)}, {(void *)msg, len}};
        writev_full(t->prev_fd, iov, 2, MSG_DONTWAIT);
        pthread_mutex_unlock(&t->prev_wmu);
    }
}

/* Wake every waiter: a failure, or a peer that stopped.  Caller holds t->mu. */
static void wake_all_locked(tcp_transport *t)
{
    pthread_cond_broadcast(&t->cv_credit);
    pthread_cond_broadcast(&t->cv_arrival);
    pthread_cond_broadcast(&t->cv_main);
    pthread_cond_broadcast(&t->cv_send);
}

/* Mark the transport failed by a loss (first failure wins): relay it to
 * both ring neighbours at once and shut every socket down, which fails
 * every call on every rank.  Caller holds t->mu. */
static void fail_locked(tcp_transport *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void fail_locked(tcp_transport *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    t->failed = 1;
    t->fail_lost = 1;
    t->fail.code = RT_EXIT_RUNTIME;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(t->fail.msg, sizeof(t->fail.msg), fmt, ap);
    va_end(ap);
    if (!t->closing) {
        rt_debug("tcp: rank %d failing: %s", t->rank, t->fail.msg);
        relay_failure(t, t->fail.msg);
    }
    shutdown_all(t);
    wake_all_locked(t);
}

/* This rank stops with `msg` (first failure wins).  Nothing is shut down
 * or relayed here: the sender thread writes the passes already queued, and
 * send_notices then ends every connection with the message, in order.
 * Caller holds t->mu. */
static void stop_locked(tcp_transport *t, const char *msg)
{
    if (t->failed)
        return;
    t->failed = 1;
    t->fail.code = RT_EXIT_RUNTIME;
    snprintf(t->fail.msg, sizeof(t->fail.msg), "%s", msg);
    rt_debug("tcp: rank %d stopping: %s", t->rank, t->fail.msg);
    wake_all_locked(t);
}

/* Peer r's stop notice arrived (its message; the first is kept).  Only
 * the calls that need r fail, and only once what r sent before it is
 * delivered.  Caller holds t->mu. */
static void peer_stopped_locked(tcp_transport *t, int r, const char *msg)
{
    if (!t->stopped[r] && !(t->stopped[r] = strdup(msg)))
        fail_locked(t, "tcp: out of memory");
    wake_all_locked(t);
}

/* A connection to peer r broke (e = errno, 0 for EOF).  Caller holds t->mu. */
static void lost_locked(tcp_transport *t, int r, int e)
{
    char who[320];
    fail_locked(t, "lost %s: %s", peer_str(t, r, who, sizeof(who)), errno_text(e));
}

/* Like lost_locked, for a connection that ended without a FAIL message: if
 * the peer failed because of someone else while its writer was busy, the
 * root cause still comes round the ring the other way, so wait a moment
 * for it before blaming the peer. */
static void lost_soon_locked(tcp_transport *t, int r, int e)
{
    double until = rt_now() + 0.3;
    while (!t->failed && !t->stopped[r] && cond_wait_until(&t->cv_main, &t->mu, until) == 0)
        ;
    if (!t->stopped[r]) /* (a peer that stopped but could not say so on this connection) */
        lost_locked(t, r, e);
}

/* Copy the stored failure into err.  Caller holds t->mu. */
static int failed_locked(tcp_transport *t, rt_error *err)
{
    if (err)
        *err = t->fail;
    return -1;
}

/* A call needs peer r, which stopped: this rank stops too, with r's
 * message (which names the rank where it began).  Caller holds t->mu. */
static int peer_stopped_fail_locked(tcp_transport *t, int r, rt_error *err)
{
    stop_locked(t, t->stopped[r]);
    return failed_locked(t, err);
}

/* ---- background threads ---- */

/* A ring neighbour relayed a failure (a loss: fail with it, so every rank
 * reports the same root cause) or stops (m->stop: it is stopped, in order).
 * Read its message from fd: m says how long it is, or that a uint32 length
 * comes first (credits).  A message that cannot be read, is too long or is
 * empty blames `peer` instead.  Called and returns with t->mu held; drops
 * it while reading. */
static void read_fail_msg_locked(tcp_transport *t, int fd, int peer, const wire_msg *m)
{
    pthread_mutex_unlock(&t->mu);
    char who[320], raw[WIRE_FAIL_MSG_MAX], msg[WIRE_FAIL_MSG_MAX + 1];
    uint8_t head[WIRE_CREDIT_UNIT];
    uint64_t len = m->len;
    rt_error why = {0};
    peer_str(t, peer, who, sizeof(who));
    int e = 0;
    if (m->len_follows) {
        e = read_full(fd, head, sizeof(head));
        if (!e && wire_fail_len_parse(head, sizeof(head), &len, who, &why))
            e = EPROTO;
    }
    if (!e)
        e = read_full(fd, raw, (size_t)len);
    int empty = e || wire_fail_text(raw, (size_t)len, msg, sizeof(msg));
    pthread_mutex_lock(&t->mu);
    if (why.msg[0])
        fail_locked(t, "%s", why.msg);
    else if (empty)
        lost_locked(t, peer, 0);
    else if (m->stop)
        peer_stopped_locked(t, peer, msg);
    else
        fail_locked(t, "%s", msg);
}

static int64_t now_ms(void)
{
    return (int64_t)(rt_now() * 1000.0);
}

static void heard(int64_t *when)
{
    __atomic_store_n(when, now_ms(), __ATOMIC_RELAXED);
}

/* read_full in chunks, noting each one as a sign of life in *when. */
static int read_heard(int fd, void *buf, size_t len, int64_t *when)
{
    uint8_t *p = buf;
    while (len > 0) {
        size_t n = len < READ_CHUNK ? len : READ_CHUNK;
        int e = read_full(fd, p, n);
        if (e)
            return e;
        heard(when);
        p += n;
        len -= n;
    }
    return 0;
}

/* The ring state frames are checked against.  Caller holds t->mu. */
static wire_ring ring_state_locked(const tcp_transport *t)
{
    return (wire_ring){.slot_bytes = t->slot_bytes,
                       .n_slots = t->n_slots,
                       .slots_in_use = t->init_occ + t->arrivals - t->passes_freed,
                       .credits = t->credits};
}

/* Read units from one ring connection until it ends or fails: beats only
 * refresh the peer's sign of life, BYE marks a normal close, FAIL relays a
 * failure or ends the stream of a peer that stops, anything that does not
 * parse fails the transport naming the peer, and the rest goes to
 * r->on_data. */
static void read_ring(const ring_reader *r)
{
    tcp_transport *t = r->t;
    char who[320];
    peer_str(t, r->peer, who, sizeof(who));
    for (;;) {
        uint8_t unit[WIRE_FRAME_UNIT];
        int e = read_heard(r->fd, unit, r->unit, r->heard);
        pthread_mutex_lock(&t->mu);
        if (e) {
            if (!t->closing && !*r->closed)
                lost_soon_locked(t, r->peer, e < 0 ? 0 : e);
            break;
        }
        wire_ring ring = ring_state_locked(t);
        wire_msg m;
        rt_error why = {0};
        if (r->parse(unit, r->unit, &ring, &m, who, &why)) {
            fail_locked(t, "%s", why.msg);
            break;
        }
        if (m.kind == WIRE_FAIL) {
            read_fail_msg_locked(t, r->fd, r->peer, &m);
            break;
        }
        if (m.kind == WIRE_BYE) {
            *r->closed = 1; /* expect EOF next */
            pthread_cond_broadcast(r->cv);
        } else if (m.kind != WIRE_BEAT && r->on_data(t, &m)) {
            break;
        }
        pthread_mutex_unlock(&t->mu);
    }
    *r->ended = 1;
    pthread_cond_broadcast(r->cv);
    pthread_mutex_unlock(&t->mu);
}

/* A block frame from the previous rank: land its payload in the next slot
 * (the frame was checked against the slot size and the free slots). */
static int on_block_locked(tcp_transport *t, const wire_msg *m)
{
    uint32_t slot = (uint32_t)((t->init_occ + t->arrivals) % t->n_slots);
    pthread_mutex_unlock(&t->mu);
    int e = read_heard(t->prev_fd, t->window + (size_t)slot * t->slot_bytes, (size_t)m->len,
                       &t->heard_prev_ms);
    pthread_mutex_lock(&t->mu);
    if (e) {
        if (!t->closing)
            lost_soon_locked(t, t->prev, e < 0 ? 0 : e);
        return -1;
    }
    uint32_t at = (t->a_head + t->a_count) % t->n_slots;
    t->aq[at] =
        (rt_arrival){.slot = slot, .block = m->block, .epoch = m->epoch, .len = (size_t)m->len};
    t->a_count++;
    t->arrivals++;
    t->stats.passes_received++;
    t->stats.bytes_received += m->len;
    pthread_cond_signal(&t->cv_arrival);
    return 0;
}

/* Credits from the next rank (checked against the window). */
static int on_credits_locked(tcp_transport *t, const wire_msg *m)
{
    t->credits += m->count;
    pthread_cond_signal(&t->cv_credit);
    return 0;
}

static void *reader_main(void *arg)
{
    read_ring(arg);
    return NULL;
}

/* Write (the rest of) a pass's frame: header, then payload.  0 or errno. */
static int write_frame(tcp_transport *t, pass_item *it, int flags)
{
    wire_frame_hdr h = {
        .type = WIRE_FRAME_BLOCK, .block = it->block, .epoch = it->epoch, .len = it->len};
    uint8_t *payload = t->window + (size_t)it->slot * t->slot_bytes;
    struct iovec iov[2] = {{&h, sizeof(h)}, {payload, it->len}};
    int n = 2, e = 0;
    struct iovec *v = iov;
    iov_drop(&v, &n, it->off); /* what an earlier call already sent */
    while (n > 0) {
        struct msghdr mh = {.msg_iov = v, .msg_iovlen = (size_t)n};
        ssize_t w = sendmsg(t->next_fd, &mh, MSG_NOSIGNAL | flags);
        if (w < 0) {
            if (errno == EINTR)
                continue;
            e = errno;
            break;
        }
        it->off += (size_t)w;
        iov_drop(&v, &n, (size_t)w);
    }
    return e;
}

/* The head pass's bytes are all written.  Its source slot is free again and
 * will be refilled by the previous rank: return a credit there.  A failed
 * credit write is judged by the receiver thread, which reads the same
 * connection (BYE then EOF is a normal close).  Called and returns with
 * t->mu held; drops it while writing. */
static void complete_head_locked(tcp_transport *t)
{
    pass_item *it = &t->q[t->q_head];
    t->stats.passes_sent++;
    t->stats.bytes_sent += it->len;
    t->q_head = (t->q_head + 1) % t->n_slots;
    t->q_count--;
    t->passes_freed++;
    int broken = t->prev_credit_broken, e = 0;
    pthread_mutex_unlock(&t->mu);
    if (!broken) {
        uint32_t one = 1;
        pthread_mutex_lock(&t->prev_wmu);
        e = write_full(t->prev_fd, &one, sizeof(one), 0);
        pthread_mutex_unlock(&t->prev_wmu);
    }
    pthread_mutex_lock(&t->mu);
    if (e)
        t->prev_credit_broken = 1;
    t->passes_done++;
    pthread_cond_broadcast(&t->cv_main);
}

/* Writing to the next rank failed with errno e.  Caller holds t->mu.
 * The credit thread reads the same connection and will find out why - a
 * relayed failure or a BYE arrives before the reset - so give it a moment
 * to report the root cause before blaming the next rank. */
static void send_failed_locked(tcp_transport *t, const pass_item *it, int e)
{
    double until = rt_now() + 1.0;
    while (!t->failed && !t->next_closed && !t->stopped[t->next] &&
           cond_wait_until(&t->cv_credit, &t->mu, until) == 0)
        ;
    if (t->stopped[t->next])
        stop_locked(t, t->stopped[t->next]);
    if (t->next_closed) {
        char who[320];
        fail_locked(t, "%s closed its transport while block %u was passed to it",
                    peer_str(t, t->next, who, sizeof(who)), it->block);
    }
    lost_locked(t, t->next, e);
}

/* Writes the queued passes in order.  When this rank stops (not lost), the
 * passes queued before still go, so that its stop notice follows them. */
static void *sender_main(void *arg)
{
    tcp_transport *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while ((t->q_count == 0 || t->q[t->q_head].inline_owned) && !t->closing && !t->failed)
            pthread_cond_wait(&t->cv_send, &t->mu);
        if (t->fail_lost || t->q_count == 0 || t->q[t->q_head].inline_owned)
            break; /* lost, or failed or closing with nothing left to send */
        pass_item it = t->q[t->q_head];
        pthread_mutex_unlock(&t->mu);

        pthread_mutex_lock(&t->next_wmu);
        int e = write_frame(t, &it, 0);
        pthread_mutex_unlock(&t->next_wmu);

        pthread_mutex_lock(&t->mu);
        if (e) {
            send_failed_locked(t, &it, e);
            break;
        }
        complete_head_locked(t);
    }
    t->sender_done = 1;
    pthread_cond_broadcast(&t->cv_main);
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* ---- liveness ---- */

/* Write one heartbeat on fd unless a writer holds it (then real traffic is
 * flowing) or BYE was sent.  The first byte goes without waiting; a beat
 * the socket took only in part is completed while the transport lives, so
 * the stream never carries half a message. */
static void send_beat(tcp_transport *t, int fd, pthread_mutex_t *wmu, const void *beat, size_t len)
{
    if (fd < 0 || pthread_mutex_trylock(wmu) != 0)
        return;
    const uint8_t *p = beat;
    while (!t->beats_stopped && len > 0) {
        ssize_t n = send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
            break; /* the readers see the broken connection */
        if (p == beat)
            break; /* socket full: the peer is not reading, the watchdog will tell */
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        if (poll(&pfd, 1, 200) < 0 && errno != EINTR)
            break;
        if (__atomic_load_n(&t->failed, __ATOMIC_RELAXED))
            break;
    }
    pthread_mutex_unlock(wmu);
}

/* Fail when ring neighbour `r` (whose last sign of life is *when) has been
 * silent longer than the peer timeout.  Caller holds t->mu. */
static void check_silent_locked(tcp_transport *t, int r, const int64_t *when, int closed)
{
    int64_t silent = now_ms() - __atomic_load_n(when, __ATOMIC_RELAXED);
    if (closed || t->stopped[r] || t->failed || silent < t->peer_timeout_ms)
        return;
    char who[320];
    fail_locked(t,
                "lost %s: silent for %.1f s (no data and no heartbeat; process stopped, hung "
                "or cut off)",
                peer_str(t, r, who, sizeof(who)), silent / 1000.0);
}

/* Heartbeats both ways round the ring, and the silence check.  A beat
 * interval of a quarter of the timeout (at most 1 s) leaves a busy or
 * briefly descheduled peer plenty of margin. */
static void *watchdog_main(void *arg)
{
    tcp_transport *t = arg;
    int every_ms = t->peer_timeout_ms > 0 ? t->peer_timeout_ms / 4 : 1000;
    every_ms = every_ms > 1000 ? 1000 : every_ms < 20 ? 20 : every_ms;
    const wire_frame_hdr beat_next = {.type = WIRE_FRAME_BEAT};
    const uint32_t beat_prev = WIRE_CREDIT_BEAT;
    pthread_mutex_lock(&t->mu);
    while (!t->watchdog_quit) {
        if (t->peer_timeout_ms > 0) {
            check_silent_locked(t, t->prev, &t->heard_prev_ms, t->prev_closed);
            check_silent_locked(t, t->next, &t->heard_next_ms, t->next_closed);
        }
        int lost = t->fail_lost; /* a rank that stops beats on until its notices are out */
        pthread_mutex_unlock(&t->mu);
        if (!lost) {
            send_beat(t, t->next_fd, &t->next_wmu, &beat_next, sizeof(beat_next));
            send_beat(t, t->prev_fd, &t->prev_wmu, &beat_prev, sizeof(beat_prev));
        }
        pthread_mutex_lock(&t->mu);
        if (!t->watchdog_quit)
            cond_wait_until(&t->cv_watchdog, &t->mu, rt_now() + every_ms / 1000.0);
    }
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* ---- connection setup ----
 *
 * Every connection is authenticated before anything about the job crosses
 * it (verbs/auth.h):
 *
 *   connector -> acceptor   hello      {magic, version, purpose, from, to, size, Nc}
 *   acceptor  -> connector  challenge  {Na, MAC(K, "acceptor" | hello | Na)}
 *   connector -> acceptor   proof      {MAC(K, "connector" | hello | Na)}
 *   acceptor  -> connector  verdict    {accepted or why not, initial_occupied}
 *
 * The acceptor answers even a stranger's well-formed hello with a challenge,
 * which is random bytes to anyone without the key; a connection that sends
 * anything else, or nothing, or a wrong proof, is closed without a word.
 * Only an authenticated peer gets a verdict, and only then are mismatches
 * (hostfile, group size) reported and fatal.  Each pending incoming
 * connection has its own short deadline, and one event loop drives every
 * connection, so a stranger never delays the real ranks.  A flood of
 * strangers cannot either: when every pending slot is taken, a new
 * connection takes the slot of the one held longest without a hello (a
 * real rank sends its hello at once), and the log names the first few
 * dropped connections and counts the rest in one line.
 *
 * Ranks with different secrets: the connector checks the acceptor's answer
 * first, so a rank that connects to one with another secret knows at once
 * and stops (exit 2, "authentication failed").  Before it does, it lingers
 * (see linger) so that the ranks connecting to it meet its challenge and
 * stop the same way instead of retrying a closed port.  A rank that is only
 * ever connected to by the other-secret rank cannot tell it from a stranger
 * and must not stop on its word; it stops at its connect timeout, naming
 * that rank and the handshakes claiming to be it that failed (exit 2).
 */

#define ROLE_ACCEPTOR "rotor tcp acceptor"
#define ROLE_CONNECTOR "rotor tcp connector"
#define MAX_PENDING 32     /* unauthenticated incoming connections held at once */
#define EVICT_AFTER_S 0.25 /* a pending connection this old may lose its slot to a new one */
#define DROP_WARNINGS 3    /* dropped connections named in the log; the rest are counted */
#define RETRY_S 0.02       /* between attempts to reach a peer not yet listening */
#define LINGER_S 3.0       /* after a failed authentication: how long we still answer */

typedef enum conn_state {
    OUT_CONNECTING, /* connect() in progress, or waiting to retry (fd -1) */
    OUT_HELLO_SENT, /* waiting for the challenge */
    OUT_PROOF_SENT, /* waiting for the verdict */
    OUT_GAVE_UP,    /* lingering: this one failed too (see linger) */
    IN_HELLO,       /* accepted: waiting for the hello */
    IN_CHALLENGED,  /* waiting for the proof */
    CONN_READY,
} conn_state;

typedef struct conn {
    int fd; /* -1 when none */
    int peer, purpose;
    conn_state state;
    double when;  /* incoming: handshake deadline; outgoing, fd -1: next attempt */
    wire_hello h; /* ours (outgoing) or theirs (incoming) */
    uint8_t nonce[AUTH_NONCE_BYTES];   /* incoming: the nonce we challenged with */
    uint8_t buf[sizeof(wire_verdict)]; /* the message being read */
    size_t have;
    struct addrinfo *res, *ai; /* outgoing: the peer's addresses, the one tried next */
    uint32_t peer_init;        /* outgoing ring: the next rank's initial_occupied */
    int last_err;
    double t_open; /* outgoing: when the TCP connection was up (handshake cost);
                      incoming: when it was accepted (which one to evict) */
} conn;

typedef struct setup {
    tcp_transport *t;
    int lfd;
    double deadline; /* for the whole setup */
    conn *out;       /* ring to next, control to every lower rank */
    int n_out;
    conn pending[MAX_PENDING]; /* incoming, being authenticated */
    conn *in;                  /* incoming, authenticated */
    int n_in, want_in;
    int *unproven; /* per rank: handshakes claiming to come from it that failed */
    int *answered; /* per rank: it has met our challenge (lingering: see linger) */
    int lingering; /* we stop for a failed authentication (why: stop_why) */
    int dropped;   /* unauthenticated connections closed (DROP_WARNINGS of them logged) */
    char stop_why[WIRE_WHY_BYTES];
} setup;

/* How long a listen address in use is tried again.  The port may be held
 * for a moment (the source port of a short-lived outgoing connection, a
 * previous run's rank still exiting); a port that stays taken is another
 * process's, and then this rank fails, naming it, instead of waiting. */
#define LISTEN_RETRY_S 2.0
#define LISTEN_RETRY_NS 50000000L

/* Bind and listen on one of res's addresses: the socket, or -1 with *last. */
static int try_listen(struct addrinfo *res, int *last)
{
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd =
            socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
        if (fd < 0) {
            *last = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0)
            return fd;
        *last = errno;
        close(fd);
    }
    return -1;
}

static int open_listener(tcp_transport *t, rt_error *err)
{
    const rt_peer *me = &t->base.peers[t->rank];
    struct addrinfo *res;
    if (rt_net_resolve(me->host, me->port, 1, &res, err))
        return rt_error_prefix(err, "rank %d listen address", t->rank);
    int last = 0, fd;
    double until = rt_now() + LISTEN_RETRY_S;
    while ((fd = try_listen(res, &last)) < 0 && last == EADDRINUSE && rt_now() < until) {
        struct timespec pause = {0, LISTEN_RETRY_NS};
        nanosleep(&pause, NULL);
    }
    freeaddrinfo(res);
    if (fd >= 0)
        return fd;
    char who[320];
    if (last == EADDRINUSE)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "cannot listen on %s: the port has been in use for %.0f s (another "
                       "process holds it: give this rank another port in the hostfile, or "
                       "rotor launch another --base-port)",
                       peer_str(t, t->rank, who, sizeof(who)), LISTEN_RETRY_S);
    return rt_fail_errno(err, RT_EXIT_RUNTIME, last, "cannot listen on %s",
                         peer_str(t, t->rank, who, sizeof(who)));
}

static int same_endpoint(int fd)
{
    struct sockaddr_storage a, b;
    socklen_t la = sizeof(a), lb = sizeof(b);
    if (getsockname(fd, (struct sockaddr *)&a, &la) || getpeername(fd, (struct sockaddr *)&b, &lb))
        return 0;
    return la == lb && memcmp(&a, &b, la) == 0;
}

/* Read or write exactly len bytes on fd (blocking or not: each call is
 * MSG_DONTWAIT, so it never blocks past the deadline; 0 = no deadline).
 * Returns 0, -1 for EOF, else errno (ETIMEDOUT at the deadline). */
static int io_deadline(int fd, void *buf, size_t len, int writing, double deadline)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = writing ? send(fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT)
                            : recv(fd, p, len, MSG_DONTWAIT);
        if (n > 0) {
            p += n;
            len -= (size_t)n;
            continue;
        }
        if (n == 0 && !writing)
            return -1;
        if (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
            return errno;
        struct pollfd pfd = {.fd = fd, .events = writing ? POLLOUT : POLLIN};
        int ms = deadline > 0 ? ms_until(deadline) : -1;
        if (ms == 0)
            return ETIMEDOUT;
        if (poll(&pfd, 1, ms) < 0 && errno != EINTR)
            return errno;
    }
    return 0;
}

/* Handshake messages are small: a peer that cannot take one within a
 * second is not a rank that wants to connect. */
static int send_small(int fd, const void *buf, size_t len)
{
    return io_deadline(fd, (void *)buf, len, 1, rt_now() + 1.0);
}

/* Read more of a `need`-byte message into c->buf without blocking.
 * 1 = complete, 0 = not yet, -1 = EOF or error (c->last_err, 0 for EOF). */
static int read_more(conn *c, size_t need)
{
    while (c->have < need) {
        ssize_t n = recv(c->fd, c->buf + c->have, need - c->have, 0);
        if (n > 0) {
            c->have += (size_t)n;
            continue;
        }
        if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
            return 0;
        c->last_err = n == 0 ? 0 : errno;
        return -1;
    }
    c->have = 0;
    return 1;
}

static void close_conn(conn *c)
{
    if (c->fd >= 0)
        close(c->fd);
    c->fd = -1;
    c->have = 0;
}

static const char *addr_str(int fd, char *buf, size_t cap)
{
    struct sockaddr_storage a;
    socklen_t la = sizeof(a);
    char host[INET6_ADDRSTRLEN] = "?";
    int port = 0;
    if (getpeername(fd, (struct sockaddr *)&a, &la) == 0) {
        if (a.ss_family == AF_INET) {
            struct sockaddr_in *s4 = (struct sockaddr_in *)&a;
            inet_ntop(AF_INET, &s4->sin_addr, host, sizeof(host));
            port = ntohs(s4->sin_port);
        } else if (a.ss_family == AF_INET6) {
            struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)&a;
            inet_ntop(AF_INET6, &s6->sin6_addr, host, sizeof(host));
            port = ntohs(s6->sin6_port);
        }
    }
    snprintf(buf, cap, "%s:%d", host, port);
    return buf;
}

/* Say in our log why a connection that never authenticated is closed: the
 * first DROP_WARNINGS by name, the rest only counted (see log_drops), so
 * that a flood of strangers does not flood the log too. */
static void log_drop(setup *s, int fd, const char *why)
{
    char addr[80];
    if (++s->dropped <= DROP_WARNINGS)
        rt_warn("tcp: rank %d dropped a connection from %s: %s", s->t->rank,
                addr_str(fd, addr, sizeof(addr)), why);
}

/* The connections log_drop counted without naming them, in one line. */
static void log_drops(const setup *s)
{
    if (s->dropped > DROP_WARNINGS)
        rt_warn("tcp: rank %d dropped %d more connections that did not authenticate (%d in all)",
                s->t->rank, s->dropped - DROP_WARNINGS, s->dropped);
}

/* A pending incoming connection failed its handshake: close it quietly
 * (the stranger learns nothing) and say so in our log. */
static void drop_pending(setup *s, conn *c, const char *why)
{
    log_drop(s, c->fd, why);
    close_conn(c);
}

/* ---- outgoing ---- */

static void retry_later(conn *c, int e)
{
    close_conn(c);
    c->last_err = e;
    c->state = OUT_CONNECTING;
    c->when = rt_now() + RETRY_S;
    c->ai = c->ai && c->ai->ai_next ? c->ai->ai_next : c->res;
}

static int send_hello(setup *s, conn *c)
{
    tcp_transport *t = s->t;
    memset(&c->h, 0, sizeof(c->h));
    c->h.magic = WIRE_MAGIC;
    c->h.version = WIRE_TCP_VERSION;
    c->h.purpose = (uint16_t)c->purpose;
    c->h.from = t->rank;
    c->h.to = c->peer;
    c->h.size = t->size;
    c->h.secure = (uint32_t)t->base.cfg.secure;
    auth_nonce(c->h.nonce);
    c->t_open = rt_now();
    int e = send_small(c->fd, &c->h, sizeof(c->h));
    if (e) {
        retry_later(c, e < 0 ? ECONNRESET : e);
        return 0;
    }
    c->state = OUT_HELLO_SENT;
    return 0;
}

/* Start (or restart) a non-blocking connect to c->peer. */
static int start_connect(setup *s, conn *c)
{
    const struct addrinfo *ai = c->ai;
    c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC | SOCK_NONBLOCK, ai->ai_protocol);
    if (c->fd < 0) {
        retry_later(c, errno);
        return 0;
    }
    if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) == 0)
        return same_endpoint(c->fd) ? (retry_later(c, ECONNREFUSED), 0) : send_hello(s, c);
    if (errno != EINPROGRESS)
        retry_later(c, errno);
    return 0;
}

/* The connect in progress finished (POLLOUT or an error). */
static int connect_done(setup *s, conn *c)
{
    int soerr = 0;
    socklen_t sl = sizeof(soerr);
    if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
        retry_later(c, soerr ? soerr : errno);
        return 0;
    }
    if (same_endpoint(c->fd)) { /* TCP simultaneous open onto our own port */
        retry_later(c, ECONNREFUSED);
        return 0;
    }
    return send_hello(s, c);
}

static int auth_failed(setup *s, conn *c, const char *what, rt_error *err)
{
    char who[320];
    rt_fail(err, RT_EXIT_INPUT,
            "authentication failed: %s %s (different ROTOR_TOKEN or --token-file, only one side "
            "--insecure, or another job's rank on that port?)",
            peer_str(s->t, c->peer, who, sizeof(who)), what);
    if (s->lingering)
        return -1; /* the first failure is the one we report */
    s->lingering = 1;
    /* what a rank with our secret is told while we linger (cut to fit) */
    int n = snprintf(s->stop_why, sizeof(s->stop_why), "rank %d stops: ", s->t->rank);
    size_t len = strnlen(err->msg, sizeof(s->stop_why) - (size_t)n - 1);
    memcpy(s->stop_why + n, err->msg, len);
    s->stop_why[(size_t)n + len] = '\0';
    return -1;
}

static int on_challenge(setup *s, conn *c, rt_error *err)
{
    wire_challenge ch;
    memcpy(&ch, c->buf, sizeof(ch));
    if (!auth_check(&s->t->base.cfg, ROLE_ACCEPTOR, &c->h, sizeof(c->h), ch.nonce, ch.tag))
        return auth_failed(s, c, "does not know this job's secret", err);
    wire_proof p;
    auth_tag(&s->t->base.cfg, ROLE_CONNECTOR, &c->h, sizeof(c->h), ch.nonce, p.tag);
    int e = send_small(c->fd, &p, sizeof(p));
    if (e)
        return auth_failed(s, c, "closed the connection during the handshake", err);
    c->state = OUT_PROOF_SENT;
    return 0;
}

static int on_verdict(setup *s, conn *c, rt_error *err)
{
    char who[320];
    wire_verdict v;
    peer_str(s->t, c->peer, who, sizeof(who));
    if (wire_verdict_parse(c->buf, sizeof(v), c->purpose, s->t->n_slots, &v, who, err))
        return -1;
    c->peer_init = v.initial_occupied;
    c->state = CONN_READY;
    rt_debug("tcp: rank %d: handshake with %s took %.3f ms", s->t->rank, who,
             (rt_now() - c->t_open) * 1e3);
    return 0;
}

/* Outgoing connection c is ready for I/O (or failed). */
static int step_out(setup *s, conn *c, rt_error *err)
{
    if (c->state == OUT_CONNECTING)
        return connect_done(s, c);
    size_t need = c->state == OUT_HELLO_SENT ? sizeof(wire_challenge) : sizeof(wire_verdict);
    int rc = read_more(c, need);
    if (rc == 0)
        return 0;
    if (rc < 0) {
        /* Before the challenge: the peer may have dropped us (too many
         * pending connections, or we were slow): try again.  After our
         * proof: it did not accept it. */
        if (c->state == OUT_HELLO_SENT) {
            retry_later(c, c->last_err ? c->last_err : ECONNRESET);
            return 0;
        }
        return auth_failed(s, c, "closed the connection after our answer to its challenge", err);
    }
    return c->state == OUT_HELLO_SENT ? on_challenge(s, c, err) : on_verdict(s, c, err);
}

/* ---- incoming ---- */

/* Identity checks on an authenticated hello (wire.c), and that it is not a
 * second connection of the same kind from the same rank; on mismatch fill
 * `why`. */
static int check_hello(const setup *s, const wire_hello *h, char *why, size_t cap)
{
    const tcp_transport *t = s->t;
    wire_self self = {.rank = t->rank, .size = t->size, .prev = t->prev};
    if (wire_hello_check(h, &self, why, cap))
        return -1;
    for (int i = 0; i < s->n_in; i++)
        if (s->in[i].peer == h->from && s->in[i].purpose == h->purpose) {
            snprintf(why, cap, "duplicate connection from rank %d", h->from);
            return -1;
        }
    return 0;
}

static int on_hello(setup *s, conn *c)
{
    rt_error why = {0};
    if (wire_hello_parse(c->buf, sizeof(c->h), &c->h, "it", &why)) {
        drop_pending(s, c, why.msg);
        return 0;
    }
    wire_challenge ch;
    auth_nonce(ch.nonce);
    memcpy(c->nonce, ch.nonce, sizeof(c->nonce));
    auth_tag(&s->t->base.cfg, ROLE_ACCEPTOR, &c->h, sizeof(c->h), ch.nonce, ch.tag);
    if (send_small(c->fd, &ch, sizeof(ch))) {
        drop_pending(s, c, "closed during the handshake");
        return 0;
    }
    c->state = IN_CHALLENGED;
    return 0;
}

/* A handshake that claimed to come from rank c->h.from failed after our
 * challenge: a stranger, or a rank with another secret.  We cannot tell
 * which, so it only counts: a setup that then times out waiting for that
 * rank says so (setup_timed_out), and a lingering rank knows the rank has
 * met our challenge. */
static void unproven(setup *s, const conn *c)
{
    if (c->h.from >= 0 && c->h.from < s->t->size) {
        s->unproven[c->h.from]++;
        s->answered[c->h.from] = 1;
    }
}

static int on_proof(setup *s, conn *c, rt_error *err)
{
    tcp_transport *t = s->t;
    wire_proof p;
    memcpy(&p, c->buf, sizeof(p));
    if (!auth_check(&t->base.cfg, ROLE_CONNECTOR, &c->h, sizeof(c->h), c->nonce, p.tag)) {
        unproven(s, c);
        drop_pending(s, c, "failed authentication (it does not know this job's secret)");
        return 0;
    }
    wire_verdict v;
    memset(&v, 0, sizeof(v));
    v.initial_occupied = t->init_occ;
    if (s->lingering) { /* a rank that knows our secret: tell it why we stop */
        if (c->h.from >= 0 && c->h.from < t->size)
            s->answered[c->h.from] = 1;
        v.status = 1;
        snprintf(v.why, sizeof(v.why), "%s", s->stop_why);
        send_small(c->fd, &v, sizeof(v));
        close_conn(c);
        return 0;
    }
    if (check_hello(s, &c->h, v.why, sizeof(v.why))) {
        v.status = 1;
        send_small(c->fd, &v, sizeof(v));
        close_conn(c);
        return rt_fail(err, RT_EXIT_INPUT, "rank %d rejected a connection from rank %d: %s",
                       t->rank, c->h.from, v.why);
    }
    int e = send_small(c->fd, &v, sizeof(v));
    if (e) {
        char who[320];
        close_conn(c);
        return rt_fail(err, RT_EXIT_RUNTIME, "handshake with %s: %s",
                       peer_str(t, c->h.from, who, sizeof(who)), errno_text(e < 0 ? 0 : e));
    }
    s->in[s->n_in++] =
        (conn){.fd = c->fd, .peer = c->h.from, .purpose = c->h.purpose, .state = CONN_READY};
    c->fd = -1;
    return 0;
}

static int step_in(setup *s, conn *c, rt_error *err)
{
    size_t need = c->state == IN_HELLO ? sizeof(wire_hello) : sizeof(wire_proof);
    int rc = read_more(c, need);
    if (rc == 0)
        return 0;
    if (rc < 0) {
        if (c->state == IN_CHALLENGED) /* what a rank that rejects our challenge does */
            unproven(s, c);
        drop_pending(s, c,
                     c->last_err ? errno_text(c->last_err) : "closed before the handshake ended");
        return 0;
    }
    return c->state == IN_HELLO ? on_hello(s, c) : on_proof(s, c, err);
}

/* A pending slot for a new incoming connection: a free one, else the slot
 * of the connection held longest without a complete hello (a real rank
 * sends its hello at once; an idle stranger never does), else of the
 * oldest one; but never of one younger than EVICT_AFTER_S, so that a burst
 * cannot push out a real rank before its hello is read.  NULL: none. */
static conn *pending_slot(setup *s)
{
    conn *oldest = NULL, *oldest_silent = NULL;
    for (int i = 0; i < MAX_PENDING; i++) {
        conn *c = &s->pending[i];
        if (c->fd < 0)
            return c;
        if (!oldest || c->t_open < oldest->t_open)
            oldest = c;
        if (c->state == IN_HELLO && (!oldest_silent || c->t_open < oldest_silent->t_open))
            oldest_silent = c;
    }
    conn *victim = oldest_silent ? oldest_silent : oldest;
    if (rt_now() - victim->t_open < EVICT_AFTER_S)
        return NULL;
    drop_pending(s, victim, "its slot went to a newer connection (every slot was taken)");
    return victim;
}

/* Take every connection waiting on the listener into a pending slot. */
static int accept_new(setup *s, rt_error *err)
{
    for (;;) {
        int fd = accept4(s->lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
        if (fd < 0) {
            if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
                return 0;
            return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "rank %d: accept", s->t->rank);
        }
        conn *c = pending_slot(s);
        if (!c) { /* a burst of new ones: a real rank retries */
            log_drop(s, fd, "every pending slot holds a newer connection");
            close(fd);
            continue;
        }
        int ms =
            s->t->base.cfg.handshake_timeout_ms > 0 ? s->t->base.cfg.handshake_timeout_ms : 5000;
        double now = rt_now();
        *c = (conn){.fd = fd, .state = IN_HELLO, .when = now + ms / 1000.0, .t_open = now};
    }
}

/* Describe which expected connections are missing (for timeout errors). */
static void describe_missing(const setup *s, char *buf, size_t cap)
{
    const tcp_transport *t = s->t;
    size_t off = 0;
    buf[0] = '\0';
    for (int r = 0; r < t->size; r++) {
        if (r == t->rank)
            continue;
        int want_ring = r == t->prev, want_ctl = r > t->rank;
        for (int i = 0; i < s->n_in; i++) {
            if (s->in[i].peer == r && s->in[i].purpose == WIRE_CONN_RING)
                want_ring = 0;
            if (s->in[i].peer == r && s->in[i].purpose == WIRE_CONN_CTRL)
                want_ctl = 0;
        }
        if ((want_ring || want_ctl) && off < cap) {
            char who[320];
            off += (size_t)snprintf(buf + off, cap - off, "%s%s", off ? ", " : "",
                                    peer_str(t, r, who, sizeof(who)));
        }
    }
}

/* Whether rank r is one we wait for: the ring's previous rank and every
 * higher rank (control) connect to us. */
static int connects_to_us(const tcp_transport *t, int r)
{
    return r != t->rank && (r == t->prev || r > t->rank);
}

/* The first missing rank that handshakes claiming to be it failed
 * authentication for, or -1. */
static int unproven_missing(const setup *s)
{
    const tcp_transport *t = s->t;
    for (int r = 0; r < t->size; r++) {
        int missing = 0;
        for (int i = 0; i < s->n_out; i++)
            missing |= s->out[i].peer == r && s->out[i].state != CONN_READY;
        if (connects_to_us(t, r)) {
            int in = 0;
            for (int i = 0; i < s->n_in; i++)
                in += s->in[i].peer == r;
            missing |= in < 1 + (r == t->prev && r > t->rank);
        }
        if (missing && s->unproven[r])
            return r;
    }
    return -1;
}

static int setup_timed_out(const setup *s, rt_error *err)
{
    const tcp_transport *t = s->t;
    char who[320];
    int r = unproven_missing(s);
    if (r >= 0) /* most likely a rank with another secret: say so, exit 2 */
        return rt_fail(err, RT_EXIT_INPUT,
                       "authentication failed: rank %d: timed out after %d ms waiting for %s, "
                       "and %d connections claiming to be it did not prove this job's secret "
                       "(different ROTOR_TOKEN or --token-file, or a stranger?)",
                       t->rank, t->base.cfg.connect_timeout_ms, peer_str(t, r, who, sizeof(who)),
                       s->unproven[r]);
    for (int i = 0; i < s->n_out; i++)
        if (s->out[i].state == OUT_CONNECTING)
            return rt_fail_errno(
                err, RT_EXIT_RUNTIME, s->out[i].last_err, "cannot connect to %s within %d ms",
                peer_str(t, s->out[i].peer, who, sizeof(who)), t->base.cfg.connect_timeout_ms);
    char missing[700];
    describe_missing(s, missing, sizeof(missing));
    if (missing[0])
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "rank %d: timed out after %d ms waiting for %s to connect", t->rank,
                       t->base.cfg.connect_timeout_ms, missing);
    for (int i = 0; i < s->n_out; i++)
        if (s->out[i].state != CONN_READY)
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "rank %d: timed out after %d ms waiting for %s "
                           "to answer the handshake",
                           t->rank, t->base.cfg.connect_timeout_ms,
                           peer_str(t, s->out[i].peer, who, sizeof(who)));
    return rt_fail(err, RT_EXIT_RUNTIME, "rank %d: connection setup timed out", t->rank);
}

static int setup_done(const setup *s)
{
    for (int i = 0; i < s->n_out; i++)
        if (s->out[i].state != CONN_READY)
            return 0;
    return s->n_in == s->want_in;
}

/* When an outgoing handshake that the peer's kernel took (the listen
 * backlog) but the peer has not answered counts as lost: after the peer
 * timeout, as silence does once the job runs.  A rank stopped or hung in
 * its start-up would otherwise hold every other for the whole connect
 * timeout.  (A rank that does not listen yet is waited for: it may still be
 * starting.)  0: never. */
static double unanswered_deadline(const tcp_transport *t, const conn *c)
{
    if (t->peer_timeout_ms <= 0 || (c->state != OUT_HELLO_SENT && c->state != OUT_PROOF_SENT))
        return 0;
    return c->t_open + t->peer_timeout_ms / 1000.0;
}

static int unanswered_fail(const tcp_transport *t, const conn *c, double now, rt_error *err)
{
    char who[320];
    return rt_fail(err, RT_EXIT_RUNTIME,
                   "lost %s: it took the connection but has not answered the handshake for "
                   "%.1f s (process stopped or hung; --peer-timeout)",
                   peer_str(t, c->peer, who, sizeof(who)), now - c->t_open);
}

/* One round of the event loop: poll everything that can make progress. */
static int setup_round(setup *s, rt_error *err)
{
    int size = s->t->size;
    struct pollfd pfd[1 + size + MAX_PENDING];
    conn *owner[1 + size + MAX_PENDING];
    int np = 0;
    double now = rt_now(), wake = s->deadline;
    if (s->n_in < s->want_in || s->lingering) {
        pfd[np] = (struct pollfd){.fd = s->lfd, .events = POLLIN};
        owner[np++] = NULL;
    }
    for (int i = 0; i < s->n_out; i++) {
        conn *c = &s->out[i];
        if (c->state == CONN_READY || c->state == OUT_GAVE_UP)
            continue;
        if (c->fd < 0 && c->when <= now && start_connect(s, c))
            return -1;
        if (c->fd < 0) {
            wake = c->when < wake ? c->when : wake;
            continue;
        }
        double silent_at = unanswered_deadline(s->t, c);
        if (silent_at > 0 && silent_at <= now)
            return unanswered_fail(s->t, c, now, err);
        if (silent_at > 0 && silent_at < wake)
            wake = silent_at;
        pfd[np] =
            (struct pollfd){.fd = c->fd, .events = c->state == OUT_CONNECTING ? POLLOUT : POLLIN};
        owner[np++] = c;
    }
    for (int i = 0; i < MAX_PENDING; i++) {
        conn *c = &s->pending[i];
        if (c->fd < 0)
            continue;
        if (c->when <= now) {
            drop_pending(s, c, "no handshake in time");
            continue;
        }
        wake = c->when < wake ? c->when : wake;
        pfd[np] = (struct pollfd){.fd = c->fd, .events = POLLIN};
        owner[np++] = c;
    }
    int ready = poll(pfd, (nfds_t)np, ms_until(wake));
    if (ready < 0 && errno != EINTR)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "rank %d: poll", s->t->rank);
    for (int i = 0; ready > 0 && i < np; i++) {
        if (!pfd[i].revents)
            continue;
        conn *c = owner[i];
        int was_lingering = s->lingering;
        int rc = !c                     ? accept_new(s, err)
                 : c->state >= IN_HELLO ? step_in(s, c, err)
                                        : step_out(s, c, err);
        if (rc && s->lingering && c && c->state < IN_HELLO) {
            close_conn(c); /* this handshake is over; linger goes on with the rest */
            c->state = OUT_GAVE_UP;
            if (was_lingering)
                continue; /* already stopping: the first failure stands */
        }
        if (rc)
            return -1;
    }
    return 0;
}

/* While we linger: every handshake of ours has ended, and every rank that
 * connects to us has met our challenge. */
static int all_answered(const setup *s)
{
    for (int i = 0; i < s->n_out; i++)
        if (s->out[i].state != CONN_READY && s->out[i].state != OUT_GAVE_UP)
            return 0;
    for (int r = 0; r < s->t->size; r++)
        if (connects_to_us(s->t, r) && !s->answered[r])
            return 0;
    for (int i = 0; i < MAX_PENDING; i++)
        if (s->pending[i].fd >= 0)
            return 0;
    return 1;
}

/* We stop because a peer failed our authentication.  A rank still
 * connecting to us would only find a closed port and retry until its
 * connect timeout, then blame the network; so go on with every handshake a
 * little longer (at most LINGER_S): a rank with another secret meets our
 * challenge (or we close on its), counts it, and stops naming the
 * authentication failure itself; one with ours that connects to us gets a
 * verdict that says why we stop, and one we connect to gets our proof, so
 * it does not count us as a stranger.  Strangers learn nothing more than
 * before: a challenge, or nothing. */
static void linger(setup *s)
{
    s->deadline = rt_now() + LINGER_S;
    rt_error ignored;
    while (rt_now() < s->deadline && !all_answered(s))
        if (setup_round(s, &ignored))
            break;
}

/* Hand the authenticated sockets to the transport. */
static int keep_sockets(setup *s, rt_error *err)
{
    tcp_transport *t = s->t;
    uint32_t next_init = 0;
    for (int i = 0; i < s->n_out; i++) {
        conn *c = &s->out[i];
        if (c->purpose == WIRE_CONN_RING) {
            t->next_fd = c->fd;
            next_init = c->peer_init;
        } else {
            t->ctl_fd[c->peer] = c->fd;
        }
        c->fd = -1;
    }
    for (int i = 0; i < s->n_in; i++) {
        if (s->in[i].purpose == WIRE_CONN_RING)
            t->prev_fd = s->in[i].fd;
        else
            t->ctl_fd[s->in[i].peer] = s->in[i].fd;
        s->in[i].fd = -1;
    }
    /* We may write into every slot the next rank does not start with. */
    t->credits = t->n_slots - next_init;
    int bad = set_blocking(t->next_fd) || set_blocking(t->prev_fd) ||
              tune_socket(t->next_fd, ring_sockbuf_bytes(t)) ||
              tune_socket(t->prev_fd, ring_sockbuf_bytes(t));
    for (int r = 0; r < t->size && !bad; r++)
        bad = t->ctl_fd[r] >= 0 && tune_socket(t->ctl_fd[r], 0);
    if (bad)
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "rank %d: cannot set up its sockets",
                             t->rank);
    return 0;
}

/* Build every connection: listen, connect out (ring to next, control to
 * lower ranks) and accept the expected incoming ones, all in one event loop
 * so that ranks starting in any order cannot deadlock and no connection
 * waits for another. */
static int connect_all(tcp_transport *t, rt_error *err)
{
    int size = t->size, rc = -1;
    conn out[size], in[size];
    int unproven[size], answered[size];
    memset(unproven, 0, sizeof(unproven));
    memset(answered, 0, sizeof(answered));
    setup s = {.t = t,
               .out = out,
               .in = in,
               .want_in = 1 + (size - 1 - t->rank),
               .unproven = unproven,
               .answered = answered};
    s.deadline = rt_now() + t->base.cfg.connect_timeout_ms / 1000.0;
    for (int i = 0; i < MAX_PENDING; i++)
        s.pending[i].fd = -1;
    s.lfd = open_listener(t, err);
    if (s.lfd < 0)
        return -1;
    if (!t->base.cfg.secure && t->rank == 0)
        rt_warn("tcp: running without a job secret (--insecure): any process that reaches "
                "these ports can join");
    for (int k = 0; k < t->rank + 1; k++) {
        conn *c = &out[s.n_out];
        *c = (conn){.fd = -1,
                    .peer = k == 0 ? t->next : k - 1,
                    .purpose = k == 0 ? WIRE_CONN_RING : WIRE_CONN_CTRL,
                    .state = OUT_CONNECTING};
        char who[320];
        if (rt_net_resolve(t->base.peers[c->peer].host, t->base.peers[c->peer].port, 0, &c->res,
                           err)) {
            rt_error_prefix(err, "%s", peer_str(t, c->peer, who, sizeof(who)));
            goto out;
        }
        c->ai = c->res;
        s.n_out++;
    }
    while (!setup_done(&s)) {
        if (rt_now() >= s.deadline) {
            setup_timed_out(&s, err);
            goto out;
        }
        if (setup_round(&s, err)) {
            if (s.lingering)
                linger(&s);
            goto out;
        }
    }
    rc = keep_sockets(&s, err);
out:
    for (int i = 0; i < s.n_out; i++) {
        close_conn(&out[i]);
        freeaddrinfo(out[i].res);
    }
    for (int i = 0; i < s.n_in; i++)
        close_conn(&in[i]);
    for (int i = 0; i < MAX_PENDING; i++)
        close_conn(&s.pending[i]);
    close(s.lfd);
    log_drops(&s);
    return rc;
}

/* ---- ops ---- */

static void *tcp_slot(rt_transport *base, uint32_t slot)
{
    tcp_transport *t = (tcp_transport *)base;
    return t->window + (size_t)slot * t->slot_bytes;
}

static int tcp_pass(rt_transport *base, uint32_t src_slot, size_t len, uint32_t block,
                    uint32_t epoch, rt_error *err)
{
    tcp_transport *t = (tcp_transport *)base;
    char who[320];
    pthread_mutex_lock(&t->mu);
    if (t->failed)
        goto failed;
    if (t->stopped[t->next])
        goto stopped;
    uint32_t expect = (uint32_t)(t->passes_queued % t->n_slots);
    if (src_slot != expect) {
        pthread_mutex_unlock(&t->mu);
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "transport: pass of slot %u out of order: blocks leave in arrival "
                       "order, slot %u is next",
                       src_slot, expect);
    }
    if (t->credits == 0) {
        /* No timeout here: a slow peer is not a failure, and a silent one
         * fails the transport through the watchdog, which wakes us. */
        double t0 = rt_now();
        while (t->credits == 0 && !t->failed && !t->stopped[t->next]) {
            if (t->next_closed) {
                pthread_mutex_unlock(&t->mu);
                return rt_fail(err, RT_EXIT_RUNTIME, "pass: %s has closed its transport",
                               peer_str(t, t->next, who, sizeof(who)));
            }
            cond_wait_until(&t->cv_credit, &t->mu, 0);
        }
        t->stats.credit_wait_s += rt_now() - t0;
        if (t->failed)
            goto failed;
        if (t->credits == 0)
            goto stopped;
    }
    t->credits--;
    int try_inline = t->q_count == 0 && len <= INLINE_MAX;
    pass_item *it = &t->q[(t->q_head + t->q_count) % t->n_slots];
    *it = (pass_item){
        .slot = src_slot, .block = block, .epoch = epoch, .len = len, .inline_owned = try_inline};
    t->q_count++;
    t->passes_queued++;
    if (!try_inline) {
        pthread_cond_signal(&t->cv_send);
        pthread_mutex_unlock(&t->mu);
        return 0;
    }
    /* Nothing queued ahead of it: write what the socket takes right now. */
    pthread_mutex_unlock(&t->mu);
    pthread_mutex_lock(&t->next_wmu);
    int e = write_frame(t, it, MSG_DONTWAIT);
    pthread_mutex_unlock(&t->next_wmu);
    pthread_mutex_lock(&t->mu);
    it->inline_owned = 0;
    if (e && e != EAGAIN && e != EWOULDBLOCK)
        send_failed_locked(t, it, e);
    else if (it->off == sizeof(wire_frame_hdr) + it->len)
        complete_head_locked(t);
    else
        pthread_cond_signal(&t->cv_send); /* the sender thread writes the rest */
    if (t->failed)
        goto failed;
    pthread_mutex_unlock(&t->mu);
    return 0;
failed:
    failed_locked(t, err);
    pthread_mutex_unlock(&t->mu);
    return -1;
stopped:
    peer_stopped_fail_locked(t, t->next, err);
    pthread_mutex_unlock(&t->mu);
    return -1;
}

/* Arrivals that came before the previous rank's stop notice are delivered
 * first; the call after them fails with its message. */
static int tcp_wait_arrival(rt_transport *base, rt_arrival *out, int timeout_ms, rt_error *err)
{
    tcp_transport *t = (tcp_transport *)base;
    char who[320];
    double user = timeout_ms >= 0 ? rt_now() + timeout_ms / 1000.0 : 0;
    pthread_mutex_lock(&t->mu);
    /* (The previous rank's stop counts once its frames are all read: it may
     * be known sooner from another connection.) */
    while (t->a_count == 0 && !t->failed && !(t->prev_ended && t->stopped[t->prev])) {
        if (t->prev_closed) {
            pthread_mutex_unlock(&t->mu);
            return rt_fail(err, RT_EXIT_RUNTIME, "wait: %s has closed its transport",
                           peer_str(t, t->prev, who, sizeof(who)));
        }
        if (timeout_ms == 0 || cond_wait_until(&t->cv_arrival, &t->mu, user) == ETIMEDOUT) {
            if (t->a_count || t->failed || (t->prev_ended && t->stopped[t->prev]))
                break;
            pthread_mutex_unlock(&t->mu);
            return 0;
        }
    }
    if (t->failed || t->a_count == 0) {
        if (!t->failed)
            peer_stopped_fail_locked(t, t->prev, err);
        failed_locked(t, err);
        pthread_mutex_unlock(&t->mu);
        return -1;
    }
    *out = t->aq[t->a_head];
    t->a_head = (t->a_head + 1) % t->n_slots;
    t->a_count--;
    pthread_mutex_unlock(&t->mu);
    return 1;
}

static int tcp_flush(rt_transport *base, rt_error *err)
{
    tcp_transport *t = (tcp_transport *)base;
    pthread_mutex_lock(&t->mu);
    while (t->passes_done < t->passes_queued && !t->failed && !t->stopped[t->next])
        cond_wait_until(&t->cv_main, &t->mu, 0); /* the watchdog bounds this */
    if (!t->failed && t->passes_done < t->passes_queued)
        peer_stopped_fail_locked(t, t->next, err);
    int rc = t->failed ? failed_locked(t, err) : 0;
    pthread_mutex_unlock(&t->mu);
    return rc;
}

/* Read peer's stop notice from its control connection into msg (cap
 * bytes): the header said stop_len bytes follow.  0 or an errno. */
static int read_ctl_stop(tcp_transport *t, int peer, uint64_t stop_len, char *msg, size_t cap,
                         double deadline)
{
    char raw[WIRE_FAIL_MSG_MAX];
    int e = io_deadline(t->ctl_fd[peer], raw, (size_t)stop_len, 0, deadline);
    if (!e && wire_fail_text(raw, (size_t)stop_len, msg, cap))
        e = EPROTO;
    return e;
}

/* Writing to peer failed: if it stopped, its notice is in what it sent us
 * and not yet read.  Skim that (complete messages, then the notice) for a
 * moment; what is skipped no longer matters, as this rank fails either way. */
static void skim_for_stop(tcp_transport *t, int peer)
{
    double deadline = rt_now() + 0.2;
    uint8_t hdr[sizeof(uint64_t)], junk[4096];
    while (io_deadline(t->ctl_fd[peer], hdr, sizeof(hdr), 0, deadline) == 0) {
        uint64_t n, stop_len = 0;
        memcpy(&n, hdr, sizeof(n));
        rt_error why = {0};
        if (n & WIRE_CTL_STOP) {
            char msg[WIRE_FAIL_MSG_MAX + 1];
            if (wire_ctl_len_parse(hdr, sizeof(hdr), 0, &stop_len, "peer", &why) != 1 ||
                read_ctl_stop(t, peer, stop_len, msg, sizeof(msg), deadline))
                return;
            pthread_mutex_lock(&t->mu);
            peer_stopped_locked(t, peer, msg);
            pthread_mutex_unlock(&t->mu);
            return;
        }
        for (; n > 0; n -= n < sizeof(junk) ? n : sizeof(junk))
            if (io_deadline(t->ctl_fd[peer], junk, n < sizeof(junk) ? (size_t)n : sizeof(junk), 0,
                            deadline))
                return;
    }
}

/* A control-connection operation failed with e (-1 = EOF).  If the peer
 * stopped, fail with its message; else give a failure relayed over the
 * ring a moment to arrive, so the message names the root cause, then fail
 * (or report the failure already recorded). */
static int ctl_failed(tcp_transport *t, int peer, int e, int writing, rt_error *err)
{
    pthread_mutex_lock(&t->mu);
    t->ctl_broken[peer] = 1;
    if (writing && !t->stopped[peer]) {
        pthread_mutex_unlock(&t->mu);
        skim_for_stop(t, peer);
        pthread_mutex_lock(&t->mu);
    }
    double until = rt_now() + 0.2;
    while (!t->failed && !t->stopped[peer] && cond_wait_until(&t->cv_main, &t->mu, until) == 0)
        ;
    if (!t->failed && t->stopped[peer])
        peer_stopped_fail_locked(t, peer, err);
    lost_locked(t, peer, e < 0 ? 0 : e);
    failed_locked(t, err);
    pthread_mutex_unlock(&t->mu);
    return -1;
}

/* Before a control operation with peer: this rank has not failed, and
 * there is something to do on the connection.  Sending, the peer must not
 * have stopped; receiving, its stop (known from a ring notice, say) counts
 * only once its stream is read up to the notice (ctl_broken), for what it
 * sent before is still to be delivered. */
static int check_ctl(tcp_transport *t, int peer, int writing, rt_error *err)
{
    if (peer < 0 || peer >= t->size || peer == t->rank)
        return rt_fail(err, RT_EXIT_RUNTIME, "transport: no control connection to rank %d", peer);
    pthread_mutex_lock(&t->mu);
    int rc = 0;
    if (t->failed)
        rc = failed_locked(t, err);
    else if (t->stopped[peer] && (writing || t->ctl_broken[peer]))
        rc = peer_stopped_fail_locked(t, peer, err);
    else if (t->ctl_broken[peer])
        rc = (lost_locked(t, peer, 0), failed_locked(t, err));
    pthread_mutex_unlock(&t->mu);
    return rc;
}

/* Control I/O: poll-driven so a shutdown (failure anywhere, a silent
 * neighbour found by the watchdog, a relayed loss) wakes it. */
static int ctl_io(int fd, void *buf, size_t len, int writing)
{
    return io_deadline(fd, buf, len, writing, 0); /* no deadline: poll until shut down */
}

static int tcp_send_msg(rt_transport *base, int peer, const void *buf, size_t len, rt_error *err)
{
    tcp_transport *t = (tcp_transport *)base;
    if (check_ctl(t, peer, 1, err))
        return -1;
    uint64_t hdr = len;
    int e = ctl_io(t->ctl_fd[peer], &hdr, sizeof(hdr), 1);
    if (!e)
        e = ctl_io(t->ctl_fd[peer], (void *)buf, len, 1);
    return e ? ctl_failed(t, peer, e, 1, err) : 0;
}

/* A stop notice in place of the message: everything the peer sent before
 * it has been read, so this call fails with its message. */
static int tcp_recv_msg(rt_transport *base, int peer, void *buf, size_t len, rt_error *err)
{
    tcp_transport *t = (tcp_transport *)base;
    if (check_ctl(t, peer, 0, err))
        return -1;
    uint8_t hdr[sizeof(uint64_t)];
    int e = ctl_io(t->ctl_fd[peer], hdr, sizeof(hdr), 0);
    if (e)
        return ctl_failed(t, peer, e, 0, err);
    char who[320], msg[WIRE_FAIL_MSG_MAX + 1];
    rt_error why = {0};
    uint64_t stop_len = 0;
    int kind = wire_ctl_len_parse(hdr, sizeof(hdr), len, &stop_len,
                                  peer_str(t, peer, who, sizeof(who)), &why);
    if (kind == 1) {
        e = read_ctl_stop(t, peer, stop_len, msg, sizeof(msg), 0);
        if (e)
            return ctl_failed(t, peer, e, 0, err);
        pthread_mutex_lock(&t->mu);
        t->ctl_broken[peer] = 1; /* read to its end */
        peer_stopped_locked(t, peer, msg);
        if (!t->failed)
            peer_stopped_fail_locked(t, peer, err);
        failed_locked(t, err);
        pthread_mutex_unlock(&t->mu);
        return -1;
    }
    if (kind < 0) {
        pthread_mutex_lock(&t->mu);
        fail_locked(t, "%s", why.msg);
        failed_locked(t, err);
        pthread_mutex_unlock(&t->mu);
        return -1;
    }
    e = ctl_io(t->ctl_fd[peer], buf, len, 0);
    return e ? ctl_failed(t, peer, e, 0, err) : 0;
}

static void tcp_get_stats(const rt_transport *base, rt_transport_stats *out)
{
    tcp_transport *t = (tcp_transport *)base;
    pthread_mutex_lock(&t->mu);
    *out = t->stats;
    pthread_mutex_unlock(&t->mu);
}

static void tcp_free(tcp_transport *t)
{
    if (t->next_fd >= 0)
        close(t->next_fd);
    if (t->prev_fd >= 0)
        close(t->prev_fd);
    if (t->ctl_fd) {
        for (int r = 0; r < t->size; r++)
            if (t->ctl_fd[r] >= 0)
                close(t->ctl_fd[r]);
        free(t->ctl_fd);
    }
    pthread_cond_destroy(&t->cv_credit);
    pthread_cond_destroy(&t->cv_arrival);
    pthread_cond_destroy(&t->cv_main);
    pthread_cond_destroy(&t->cv_send);
    pthread_cond_destroy(&t->cv_watchdog);
    pthread_mutex_destroy(&t->mu);
    pthread_mutex_destroy(&t->next_wmu);
    pthread_mutex_destroy(&t->prev_wmu);
    for (int r = 0; t->stopped && r < t->size; r++)
        free(t->stopped[r]);
    free(t->stopped);
    free(t->ctl_broken);
    free(t->q);
    free(t->aq);
    rt_free_untouched(t->window, t->window_bytes);
    rt_transport_base_free(&t->base);
    free(t);
}

/* ---- stopping in order ---- */

/* Every pass queued before this rank stopped is written: wait for the
 * sender thread to finish them, and write what it left (the rest of a
 * frame the caller began inline) ourselves.  1 when the ring out is clean
 * for a notice.  Called and returns with t->mu held. */
static int passes_out_locked(tcp_transport *t, double deadline)
{
    while (!t->sender_done && !t->fail_lost && cond_wait_until(&t->cv_main, &t->mu, deadline) == 0)
        ;
    if (!t->sender_done || t->fail_lost)
        return 0;
    while (t->q_count > 0) {
        pass_item *it = &t->q[t->q_head];
        pthread_mutex_unlock(&t->mu);
        int e = 0;
        while (!e && it->off < sizeof(wire_frame_hdr) + it->len) {
            e = write_frame(t, it, MSG_DONTWAIT);
            if (e == EAGAIN || e == EWOULDBLOCK) {
                struct pollfd pfd = {.fd = t->next_fd, .events = POLLOUT};
                int ms = ms_until(deadline);
                e = ms == 0 ? ETIMEDOUT : poll(&pfd, 1, ms) < 0 && errno != EINTR ? errno : 0;
            }
        }
        pthread_mutex_lock(&t->mu);
        if (e)
            return 0;
        complete_head_locked(t);
    }
    return 1;
}

/* Tell every peer that this rank stops, and why (t->fail), as the last
 * thing on each connection: after the passes queued before (ring out),
 * after the credits (ring in), after the control messages sent before.  A
 * connection that cannot take it in time, or that broke, goes without: its
 * peer then reports a lost connection.  Not for a loss, which was relayed
 * when it happened.  The caller's thread; t->mu not held. */
static void send_notices(tcp_transport *t)
{
    double deadline = rt_now() + 5.0;
    pthread_mutex_lock(&t->mu);
    if (!t->threads_started || !t->failed || t->fail_lost || t->notices_sent) {
        pthread_mutex_unlock(&t->mu);
        return;
    }
    t->notices_sent = 1;
    char msg[sizeof(t->fail.msg)];
    snprintf(msg, sizeof(msg), "%s", t->fail.msg);
    uint32_t len = (uint32_t)strnlen(msg, WIRE_FAIL_MSG_MAX);
    int ring_out = passes_out_locked(t, deadline) && !t->stopped[t->next];
    int ring_in = !t->stopped[t->prev];
    pthread_mutex_unlock(&t->mu);

    pthread_mutex_lock(&t->next_wmu);
    pthread_mutex_lock(&t->prev_wmu);
    t->beats_stopped = 1; /* the notice is the last thing on the ring connections */
    if (ring_out) {
        wire_frame_hdr h = {.type = WIRE_FRAME_FAIL, .block = WIRE_FAIL_STOP, .len = len};
        if (io_deadline(t->next_fd, &h, sizeof(h), 1, deadline) == 0)
            io_deadline(t->next_fd, msg, len, 1, deadline);
    }
    if (ring_in) {
        uint32_t head[2] = {WIRE_CREDIT_STOP, len};
        if (io_deadline(t->prev_fd, head, sizeof(head), 1, deadline) == 0)
            io_deadline(t->prev_fd, msg, len, 1, deadline);
    }
    pthread_mutex_unlock(&t->prev_wmu);
    pthread_mutex_unlock(&t->next_wmu);
    for (int r = 0; r < t->size; r++) {
        pthread_mutex_lock(&t->mu);
        int skip = t->ctl_fd[r] < 0 || t->ctl_broken[r] || t->stopped[r];
        pthread_mutex_unlock(&t->mu);
        uint64_t hdr = WIRE_CTL_STOP | len;
        if (!skip && io_deadline(t->ctl_fd[r], &hdr, sizeof(hdr), 1, deadline) == 0)
            io_deadline(t->ctl_fd[r], msg, len, 1, deadline);
    }
}

/* Close: let the sender finish what is queued, say BYE on both ring
 * connections (so neighbours see a normal close, not a lost peer), or, for
 * a rank that stops, its stop notice; then shut every socket down to wake
 * the reader threads and join them. */
static void tcp_close(rt_transport *base)
{
    tcp_transport *t = (tcp_transport *)base;
    send_notices(t);
    if (t->threads_started) {
        pthread_mutex_lock(&t->mu);
        t->closing = 1;
        if (t->failed)
            shutdown_all(t); /* (the notices are out) a sender stuck on a silent peer wakes */
        pthread_cond_broadcast(&t->cv_send);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->sender, NULL);

        pthread_mutex_lock(&t->mu);
        int failed = t->failed;
        pthread_mutex_unlock(&t->mu);
        pthread_mutex_lock(&t->next_wmu);
        pthread_mutex_lock(&t->prev_wmu);
        t->beats_stopped = 1;
        if (!failed) {
            wire_frame_hdr h = {.type = WIRE_FRAME_BYE};
            uint32_t bye = WIRE_CREDIT_BYE;
            write_full(t->next_fd, &h, sizeof(h), MSG_DONTWAIT);
            write_full(t->prev_fd, &bye, sizeof(bye), MSG_DONTWAIT);
        }
        pthread_mutex_unlock(&t->prev_wmu);
        pthread_mutex_unlock(&t->next_wmu);
        pthread_mutex_lock(&t->mu);
        shutdown_all(t);
        t->watchdog_quit = 1;
        pthread_cond_broadcast(&t->cv_watchdog);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->receiver, NULL);
        pthread_join(t->creditor, NULL);
        pthread_join(t->watchdog, NULL);
    }
    tcp_free(t);
}

/* Our own error stops this rank: every peer is told, in order, on every
 * connection (send_notices), and fails with the text when it needs us. */
static void tcp_abort(rt_transport *base, const char *why)
{
    tcp_transport *t = (tcp_transport *)base;
    if (t->size <= 1)
        return;
    char msg[sizeof(t->fail.msg)];
    snprintf(msg, sizeof(msg), "rank %d stopped: %s", t->rank, why);
    pthread_mutex_lock(&t->mu);
    stop_locked(t, msg);
    pthread_mutex_unlock(&t->mu);
    send_notices(t);
}

static const struct rt_transport_ops tcp_ops = {
    .name = "tcp",
    .close = tcp_close,
    .slot = tcp_slot,
    .pass = tcp_pass,
    .wait_arrival = tcp_wait_arrival,
    .flush = tcp_flush,
    .send_msg = tcp_send_msg,
    .recv_msg = tcp_recv_msg,
    .get_stats = tcp_get_stats,
    .abort = tcp_abort,
};

static int init_sync(tcp_transport *t, rt_error *err)
{
    pthread_condattr_t ca;
    if (pthread_condattr_init(&ca))
        return rt_fail(err, RT_EXIT_RUNTIME, "tcp: cannot set up condition variables");
    if (pthread_condattr_setclock(&ca, CLOCK_MONOTONIC)) {
        pthread_condattr_destroy(&ca);
        return rt_fail(err, RT_EXIT_RUNTIME, "tcp: cannot set up condition variables");
    }
    pthread_mutex_init(&t->mu, NULL);
    pthread_mutex_init(&t->next_wmu, NULL);
    pthread_mutex_init(&t->prev_wmu, NULL);
    pthread_cond_init(&t->cv_credit, &ca);
    pthread_cond_init(&t->cv_arrival, &ca);
    pthread_cond_init(&t->cv_main, &ca);
    pthread_cond_init(&t->cv_send, &ca);
    pthread_cond_init(&t->cv_watchdog, &ca);
    pthread_condattr_destroy(&ca);
    return 0;
}

/* Start the receiver, credit and sender threads with every signal blocked,
 * so the application's signal handlers run on its own threads. */
static int start_threads(tcp_transport *t, rt_error *err)
{
    static const char *const names[4] = {"rotor-tcp-recv", "rotor-tcp-cred", "rotor-tcp-send",
                                         "rotor-tcp-live"};
    void *(*const mains[4])(void *) = {reader_main, reader_main, sender_main, watchdog_main};
    void *args[4] = {&t->readers[0], &t->readers[1], t, t};
    pthread_t *ids[4] = {&t->receiver, &t->creditor, &t->sender, &t->watchdog};
    t->readers[0] = (ring_reader){t,
                                  t->prev_fd,
                                  t->prev,
                                  &t->heard_prev_ms,
                                  &t->prev_closed,
                                  &t->cv_arrival,
                                  WIRE_FRAME_UNIT,
                                  wire_frame_parse,
                                  on_block_locked,
                                  &t->prev_ended};
    t->readers[1] = (ring_reader){t,
                                  t->next_fd,
                                  t->next,
                                  &t->heard_next_ms,
                                  &t->next_closed,
                                  &t->cv_credit,
                                  WIRE_CREDIT_UNIT,
                                  wire_credit_parse,
                                  on_credits_locked,
                                  &t->next_ended};
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    t->heard_prev_ms = t->heard_next_ms = now_ms();
    int started = 0, e = 0;
    for (; started < 4; started++) {
        e = pthread_create(ids[started], NULL, mains[started], args[started]);
        if (e)
            break;
        pthread_setname_np(*ids[started], names[started]);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        pthread_mutex_lock(&t->mu);
        t->closing = 1; /* quiet exits */
        t->watchdog_quit = 1;
        shutdown_all(t);
        pthread_cond_broadcast(&t->cv_send);
        pthread_cond_broadcast(&t->cv_watchdog);
        pthread_mutex_unlock(&t->mu);
        for (int i = 0; i < started; i++)
            pthread_join(*ids[i], NULL);
        return rt_fail_errno(err, RT_EXIT_RUNTIME, e, "tcp: cannot start the %s thread",
                             names[started]);
    }
    t->threads_started = 1;
    return 0;
}

int rt_tcp_open(const rt_transport_config *cfg, rt_transport **out, rt_error *err)
{
    *out = NULL;
    tcp_transport *t = calloc(1, sizeof(*t));
    if (!t)
        return rt_fail(err, RT_EXIT_RUNTIME, "tcp: out of memory");
    t->next_fd = t->prev_fd = -1;
    if (rt_transport_base_init(&t->base, &tcp_ops, cfg, err)) {
        free(t);
        return -1;
    }
    t->rank = cfg->rank;
    t->size = cfg->size;
    t->next = cfg->ring.custom ? cfg->ring.next : (cfg->rank + 1) % cfg->size;
    t->prev = cfg->ring.custom ? cfg->ring.prev : (cfg->rank + cfg->size - 1) % cfg->size;
    t->n_slots = cfg->n_slots;
    t->init_occ = cfg->initial_occupied;
    t->slot_bytes = t->base.cfg.slot_bytes; /* rounded up to RT_ALIGN */
    t->peer_timeout_ms = cfg->peer_timeout_ms;
    if (t->base.cfg.connect_timeout_ms <= 0)
        t->base.cfg.connect_timeout_ms = 30000;
    if (init_sync(t, err)) {
        rt_transport_base_free(&t->base);
        free(t);
        return -1;
    }
    /* Every fd must read -1 ("none") before the first tcp_free(), which
     * closes each fd >= 0: 0 (calloc) or leftover heap bytes would be real
     * descriptors of the process, such as stdin. */
    t->ctl_fd = calloc((size_t)t->size, sizeof(*t->ctl_fd));
    if (t->ctl_fd)
        for (int r = 0; r < t->size; r++)
            t->ctl_fd[r] = -1;
    t->stopped = calloc((size_t)t->size, sizeof(*t->stopped));
    t->ctl_broken = calloc((size_t)t->size, sizeof(*t->ctl_broken));
    t->q = calloc(t->n_slots, sizeof(*t->q));
    t->aq = calloc(t->n_slots, sizeof(*t->aq));
    /* (slot_bytes is 0 when rounding a size near SIZE_MAX up wrapped.)  The
     * messages are formatted before tcp_free(t), which frees t. */
    size_t slot_bytes = t->slot_bytes ? t->slot_bytes : cfg->slot_bytes;
    if (t->slot_bytes == 0 || t->n_slots > SIZE_MAX / t->slot_bytes) {
        rt_fail(err, RT_EXIT_INPUT, "tcp: window of %u x %zu bytes is too large", cfg->n_slots,
                slot_bytes);
        tcp_free(t);
        return -1;
    }
    /* Untouched pages: the home blocks' slots fill when the app writes them,
     * the others only when a block arrives there. */
    t->window_bytes = (size_t)t->n_slots * t->slot_bytes;
    t->window = rt_alloc_untouched(t->window_bytes);
    if (!t->ctl_fd || !t->stopped || !t->ctl_broken || !t->q || !t->aq || !t->window) {
        rt_fail(err, RT_EXIT_RUNTIME, "tcp: out of memory for a window of %u x %zu bytes",
                cfg->n_slots, slot_bytes);
        tcp_free(t);
        return -1;
    }
    if (t->size > 1 && (connect_all(t, err) || start_threads(t, err))) {
        tcp_free(t);
        return rt_error_prefix(err, "tcp transport");
    }
    *out = &t->base;
    return 0;
}
