/*
 * tcp.c - the TCP backend: transport.h's semantics over plain sockets.
 *
 * Connections (all set up by connect_all, then the listener is closed):
 *   - ring out: to the next rank.  We write block frames, read credits.
 *   - ring in:  from the previous rank.  We read block frames, write credits.
 *   - control:  one per peer pair, for send_msg/recv_msg (collectives).
 * Every connection starts with a handshake (struct hello) so that a wrong
 * hostfile, a different build or mismatched window sizes fail with a clear
 * message instead of corrupting data.
 *
 * Threads (only when size > 1):
 *   - receiver: reads block frames from the previous rank straight into slot
 *     (initial_occupied + k) % n_slots and queues the arrival.
 *   - sender:   writes queued passes to the next rank; after each pass's
 *     bytes are written it returns one credit to the previous rank (the
 *     source slot is free again, and slots are refilled by the previous rank).
 *   - creditor: reads credits from the next rank.
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
 * ring neighbours (FAIL frames) so they report the same root cause, and every
 * socket is shut down, which wakes all our threads and all blocked calls.
 * A peer that closes normally first sends BYE on its ring connections, so
 * its later EOF is not a failure unless we still needed something from it.
 */
#define _GNU_SOURCE
#include "verbs/backend.h"

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

/* ---- wire format (native byte order; the magic catches a foreign peer) ---- */

#define TCP_MAGIC 0x524f5452u /* "ROTR" */
#define TCP_VERSION 1

enum { CONN_RING = 1, CONN_CTRL = 2, CONN_ACK = 3 };

typedef struct hello {
    uint32_t magic;
    uint16_t version;
    uint16_t purpose; /* CONN_RING, CONN_CTRL; CONN_ACK in replies */
    int32_t from, to; /* sender's rank, the rank it believes it reached */
    int32_t size;
    uint32_t n_slots;
    uint32_t initial_occupied;
    uint32_t status; /* replies: 0 accepted, 1 rejected (why says why) */
    uint64_t slot_bytes;
    char why[200];
} hello;

/* Ring frames from the previous rank: a header, then `len` payload bytes. */
enum { FRAME_BLOCK = 0xB10C, FRAME_BYE = 0xB7E, FRAME_FAIL = 0xFA11 };
typedef struct frame_hdr {
    uint32_t type;
    uint32_t block;
    uint32_t epoch;
    uint32_t reserved;
    uint64_t len; /* payload bytes (FRAME_FAIL: message bytes) */
} frame_hdr;

/* Credits from the next rank: a uint32 count, or one of these markers.
 * CREDIT_FAIL is followed by a uint32 length and the failure message. */
#define CREDIT_BYE 0xFFFFFFFFu
#define CREDIT_FAIL 0xFFFFFFFEu

#define FAIL_MSG_MAX 1000
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

typedef struct tcp_transport {
    rt_transport base; /* must be first */
    int rank, size, next, prev;
    uint32_t n_slots, init_occ;
    size_t slot_bytes;
    uint8_t *window;

    int next_fd, prev_fd; /* ring out / ring in; -1 when size == 1 */
    int *ctl_fd;          /* size entries, -1 for ourselves */
    int peer_timeout_ms;

    pthread_t sender, receiver, creditor;
    int threads_started;
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
    int closing;
    int prev_closed, next_closed; /* BYE seen on ring in / credits */
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

static void set_nonblocking(int fd, int on)
{
    int fl = fcntl(fd, F_GETFL, 0);
    if (fl >= 0)
        fcntl(fd, F_SETFL, on ? fl | O_NONBLOCK : fl & ~O_NONBLOCK);
}

/* The ring sockets' buffer size: cfg.tcp_sockbuf, 0 = default, < 0 = leave
 * it to kernel autotuning (returns 0). */
static int ring_sockbuf_bytes(const tcp_transport *t)
{
    int bytes = t->base.cfg.tcp_sockbuf;
    return bytes == 0 ? SOCK_BUF_BYTES : bytes < 0 ? 0 : bytes;
}

static void tune_socket(int fd, int ring_bytes)
{
    int one = 1;
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
    /* A peer host that vanishes without closing (power loss, cable) is found
     * by keepalive probes within ~25 s while the connection is idle, even
     * with peer_timeout_ms == 0; a live but busy peer's kernel answers them.
     * (No TCP_USER_TIMEOUT: it could abort a live peer that is merely slow
     * to read.  Use peer_timeout_ms to bound waits on a frozen peer.) */
    int idle = 10, intvl = 5, cnt = 3;
    setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, sizeof(one));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPIDLE, &idle, sizeof(idle));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPINTVL, &intvl, sizeof(intvl));
    setsockopt(fd, IPPROTO_TCP, TCP_KEEPCNT, &cnt, sizeof(cnt));
    if (ring_bytes > 0) {
        setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &ring_bytes, sizeof(ring_bytes));
        setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &ring_bytes, sizeof(ring_bytes));
    }
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
        size_t left = (size_t)n;
        while (iovcnt > 0 && left >= iov->iov_len) {
            left -= iov->iov_len;
            iov++;
            iovcnt--;
        }
        if (iovcnt > 0) {
            iov->iov_base = (uint8_t *)iov->iov_base + left;
            iov->iov_len -= left;
        }
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
    if (len > FAIL_MSG_MAX)
        len = FAIL_MSG_MAX;
    if (t->next_fd >= 0 && pthread_mutex_trylock(&t->next_wmu) == 0) {
        frame_hdr h = {.type = FRAME_FAIL, .len = len};
        struct iovec iov[2] = {{&h, sizeof(h)}, {(void *)msg, len}};
        writev_full(t->next_fd, iov, 2, MSG_DONTWAIT);
        pthread_mutex_unlock(&t->next_wmu);
    }
    if (t->prev_fd >= 0 && pthread_mutex_trylock(&t->prev_wmu) == 0) {
        uint32_t head[2] = {CREDIT_FAIL, len};
        struct iovec iov[2] = {{head, sizeof(head)}, {(void *)msg, len}};
        writev_full(t->prev_fd, iov, 2, MSG_DONTWAIT);
        pthread_mutex_unlock(&t->prev_wmu);
    }
}

/* Mark the transport failed (first failure wins).  Caller holds t->mu. */
static void fail_locked(tcp_transport *t, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
static void fail_locked(tcp_transport *t, const char *fmt, ...)
{
    if (t->failed)
        return;
    t->failed = 1;
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
    pthread_cond_broadcast(&t->cv_credit);
    pthread_cond_broadcast(&t->cv_arrival);
    pthread_cond_broadcast(&t->cv_main);
    pthread_cond_broadcast(&t->cv_send);
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
    while (!t->failed && cond_wait_until(&t->cv_main, &t->mu, until) == 0)
        ;
    lost_locked(t, r, e);
}

/* Copy the stored failure into err.  Caller holds t->mu. */
static int failed_locked(tcp_transport *t, rt_error *err)
{
    if (err)
        *err = t->fail;
    return -1;
}

/* ---- background threads ---- */

/* A ring neighbour relayed a failure: read its message from fd and fail with
 * it, so every rank reports the same root cause.  For FRAME_FAIL (receiver)
 * the header gave the length: `len` bytes follow, of which at most
 * FAIL_MSG_MAX are read.  For CREDIT_FAIL (creditor, len_follows) a uint32
 * length comes first, and one over FAIL_MSG_MAX is a protocol error.  A
 * message that cannot be read or is empty blames `peer` instead.  Called
 * and returns with t->mu held; drops it while reading. */
static void read_fail_msg_locked(tcp_transport *t, int fd, int peer, int len_follows, uint64_t len)
{
    pthread_mutex_unlock(&t->mu);
    char msg[FAIL_MSG_MAX + 1];
    int e = 0;
    if (len_follows) {
        uint32_t n = 0;
        e = read_full(fd, &n, sizeof(n));
        if (!e && n > FAIL_MSG_MAX)
            e = EPROTO;
        len = n;
    } else if (len > FAIL_MSG_MAX) {
        len = FAIL_MSG_MAX;
    }
    if (!e)
        e = read_full(fd, msg, (size_t)len);
    msg[e ? 0 : len] = '\0';
    pthread_mutex_lock(&t->mu);
    if (e || !msg[0])
        lost_locked(t, peer, 0);
    else
        fail_locked(t, "%s", msg);
}

static void *receiver_main(void *arg)
{
    tcp_transport *t = arg;
    for (;;) {
        frame_hdr h;
        int e = read_full(t->prev_fd, &h, sizeof(h));
        pthread_mutex_lock(&t->mu);
        if (e) {
            if (!t->closing && !t->prev_closed)
                lost_soon_locked(t, t->prev, e < 0 ? 0 : e);
            pthread_cond_broadcast(&t->cv_arrival);
            pthread_mutex_unlock(&t->mu);
            return NULL;
        }
        if (h.type == FRAME_BYE) {
            t->prev_closed = 1;
            pthread_cond_broadcast(&t->cv_arrival);
            pthread_mutex_unlock(&t->mu);
            continue; /* expect EOF next */
        }
        if (h.type == FRAME_FAIL) {
            read_fail_msg_locked(t, t->prev_fd, t->prev, 0, h.len);
            pthread_mutex_unlock(&t->mu);
            return NULL;
        }
        char who[320];
        if (h.type != FRAME_BLOCK || h.len > t->slot_bytes) {
            fail_locked(t, "lost %s: protocol error: bad block frame (type %#x, %llu bytes)",
                        peer_str(t, t->prev, who, sizeof(who)), h.type, (unsigned long long)h.len);
            pthread_mutex_unlock(&t->mu);
            return NULL;
        }
        /* Slots in use: initial + received - freed by our own passes. */
        uint64_t in_use = t->init_occ + t->arrivals - t->passes_freed;
        if (in_use >= t->n_slots) {
            fail_locked(t, "lost %s: protocol error: block %u arrived with all %u slots in use",
                        peer_str(t, t->prev, who, sizeof(who)), h.block, t->n_slots);
            pthread_mutex_unlock(&t->mu);
            return NULL;
        }
        uint32_t slot = (uint32_t)((t->init_occ + t->arrivals) % t->n_slots);
        pthread_mutex_unlock(&t->mu);

        e = read_full(t->prev_fd, t->window + (size_t)slot * t->slot_bytes, (size_t)h.len);

        pthread_mutex_lock(&t->mu);
        if (e) {
            if (!t->closing)
                lost_soon_locked(t, t->prev, e < 0 ? 0 : e);
            pthread_mutex_unlock(&t->mu);
            return NULL;
        }
        uint32_t at = (t->a_head + t->a_count) % t->n_slots;
        t->aq[at] =
            (rt_arrival){.slot = slot, .block = h.block, .epoch = h.epoch, .len = (size_t)h.len};
        t->a_count++;
        t->arrivals++;
        t->stats.passes_received++;
        t->stats.bytes_received += h.len;
        pthread_cond_signal(&t->cv_arrival);
        pthread_mutex_unlock(&t->mu);
    }
}

static void *creditor_main(void *arg)
{
    tcp_transport *t = arg;
    for (;;) {
        uint32_t c;
        int e = read_full(t->next_fd, &c, sizeof(c));
        pthread_mutex_lock(&t->mu);
        if (e) {
            if (!t->closing && !t->next_closed)
                lost_soon_locked(t, t->next, e < 0 ? 0 : e);
            pthread_cond_broadcast(&t->cv_credit);
            pthread_mutex_unlock(&t->mu);
            return NULL;
        }
        if (c == CREDIT_BYE) {
            t->next_closed = 1;
            pthread_cond_broadcast(&t->cv_credit);
            pthread_mutex_unlock(&t->mu);
            continue;
        }
        if (c == CREDIT_FAIL) {
            read_fail_msg_locked(t, t->next_fd, t->next, 1, 0);
            pthread_mutex_unlock(&t->mu);
            return NULL;
        }
        if ((uint64_t)t->credits + c > t->n_slots || c == 0) {
            char who[320];
            fail_locked(t, "lost %s: protocol error: %u credits on top of %u (window of %u)",
                        peer_str(t, t->next, who, sizeof(who)), c, t->credits, t->n_slots);
            pthread_mutex_unlock(&t->mu);
            return NULL;
        }
        t->credits += c;
        pthread_cond_signal(&t->cv_credit);
        pthread_mutex_unlock(&t->mu);
    }
}

/* Write (the rest of) a pass's frame: header, then payload.  0 or errno. */
static int write_frame(tcp_transport *t, pass_item *it, int flags)
{
    frame_hdr h = {.type = FRAME_BLOCK, .block = it->block, .epoch = it->epoch, .len = it->len};
    uint8_t *payload = t->window + (size_t)it->slot * t->slot_bytes;
    struct iovec iov[2] = {{&h, sizeof(h)}, {payload, it->len}};
    int n = 2, e = 0;
    size_t skip = it->off;
    struct iovec *v = iov;
    while (n > 0 && skip >= v->iov_len) {
        skip -= v->iov_len;
        v++;
        n--;
    }
    if (n > 0) {
        v->iov_base = (uint8_t *)v->iov_base + skip;
        v->iov_len -= skip;
    }
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
        size_t left = (size_t)w;
        while (n > 0 && left >= v->iov_len) {
            left -= v->iov_len;
            v++;
            n--;
        }
        if (n > 0) {
            v->iov_base = (uint8_t *)v->iov_base + left;
            v->iov_len -= left;
        }
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
    while (!t->failed && !t->next_closed && cond_wait_until(&t->cv_credit, &t->mu, until) == 0)
        ;
    if (t->next_closed) {
        char who[320];
        fail_locked(t, "%s closed its transport while block %u was passed to it",
                    peer_str(t, t->next, who, sizeof(who)), it->block);
    }
    lost_locked(t, t->next, e);
}

static void *sender_main(void *arg)
{
    tcp_transport *t = arg;
    pthread_mutex_lock(&t->mu);
    for (;;) {
        while ((t->q_count == 0 || t->q[t->q_head].inline_owned) && !t->closing && !t->failed)
            pthread_cond_wait(&t->cv_send, &t->mu);
        if (t->failed || t->q_count == 0 || t->q[t->q_head].inline_owned)
            break; /* failed, or closing with nothing left to send */
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
    pthread_mutex_unlock(&t->mu);
    return NULL;
}

/* ---- connection setup ---- */

typedef struct conn {
    int fd;
    int peer;
    int purpose;
    int replied; /* outgoing: reply read */
} conn;

static int resolve(const rt_peer *p, int passive, struct addrinfo **res, rt_error *err)
{
    struct addrinfo hints = {.ai_family = AF_UNSPEC, .ai_socktype = SOCK_STREAM};
    hints.ai_flags = AI_NUMERICSERV | (passive ? AI_PASSIVE : 0);
    char port[16];
    snprintf(port, sizeof(port), "%d", p->port);
    int rc = getaddrinfo(p->host, port, &hints, res);
    if (rc)
        return rt_fail(err, RT_EXIT_INPUT, "cannot resolve '%s': %s", p->host, gai_strerror(rc));
    return 0;
}

static int open_listener(tcp_transport *t, rt_error *err)
{
    const rt_peer *me = &t->base.peers[t->rank];
    struct addrinfo *res;
    if (resolve(me, 1, &res, err))
        return rt_error_prefix(err, "rank %d listen address", t->rank);
    int last = 0;
    for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
        int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
        if (fd < 0) {
            last = errno;
            continue;
        }
        int one = 1;
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
        if (bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && listen(fd, SOMAXCONN) == 0) {
            freeaddrinfo(res);
            set_nonblocking(fd, 1);
            return fd;
        }
        last = errno;
        close(fd);
    }
    freeaddrinfo(res);
    char who[320];
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

/* One non-blocking connect attempt.  Returns fd, or -1 with *e set. */
static int try_connect(const struct addrinfo *ai, double deadline, int *e)
{
    int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) {
        *e = errno;
        return -1;
    }
    set_nonblocking(fd, 1);
    if (connect(fd, ai->ai_addr, ai->ai_addrlen) != 0) {
        if (errno != EINPROGRESS) {
            *e = errno;
            close(fd);
            return -1;
        }
        struct pollfd pfd = {.fd = fd, .events = POLLOUT};
        int ms = ms_until(deadline);
        int rc = poll(&pfd, 1, ms < 1000 ? ms : 1000);
        int soerr = 0;
        socklen_t sl = sizeof(soerr);
        if (rc <= 0 || getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) || soerr) {
            *e = rc == 0 ? ETIMEDOUT : rc < 0 ? errno : soerr;
            close(fd);
            return -1;
        }
    }
    if (same_endpoint(fd)) { /* TCP simultaneous open onto our own port */
        *e = ECONNREFUSED;
        close(fd);
        return -1;
    }
    return fd;
}

static int read_reply(tcp_transport *t, conn *c, double deadline, uint32_t *their_init,
                      rt_error *err);

/* Read replies that already arrived on our outgoing connections, so that a
 * peer which rejected us (and quit) is reported while we still retry others. */
static int early_replies(tcp_transport *t, conn *out, int n_out, double deadline,
                         uint32_t *next_init, rt_error *err)
{
    for (int i = 0; i < n_out; i++) {
        struct pollfd pfd = {.fd = out[i].fd, .events = POLLIN};
        if (!out[i].replied && poll(&pfd, 1, 0) == 1 &&
            read_reply(t, &out[i], deadline, next_init, err))
            return -1;
    }
    return 0;
}

/* Connect to rank r, retrying until the deadline (peers start at different
 * times).  out[0..n_out-1] are the connections made so far. */
static int connect_retry(tcp_transport *t, int r, double deadline, conn *out, int n_out,
                         uint32_t *next_init, rt_error *err)
{
    char who[320];
    struct addrinfo *res;
    if (resolve(&t->base.peers[r], 0, &res, err))
        return rt_error_prefix(err, "%s", peer_str(t, r, who, sizeof(who)));
    int e = 0;
    for (;;) {
        for (struct addrinfo *ai = res; ai; ai = ai->ai_next) {
            int fd = try_connect(ai, deadline, &e);
            if (fd >= 0) {
                freeaddrinfo(res);
                return fd;
            }
        }
        if (rt_now() >= deadline)
            break;
        if (early_replies(t, out, n_out, deadline, next_init, err)) {
            freeaddrinfo(res);
            return -1;
        }
        struct timespec ts = {0, 20 * 1000 * 1000};
        nanosleep(&ts, NULL);
    }
    freeaddrinfo(res);
    return rt_fail_errno(err, RT_EXIT_RUNTIME, e, "cannot connect to %s within %d ms",
                         peer_str(t, r, who, sizeof(who)), t->base.cfg.connect_timeout_ms);
}

/* Read or write exactly len bytes on a non-blocking fd before the deadline.
 * Returns 0, -1 for EOF, else errno (ETIMEDOUT at the deadline). */
static int io_deadline(int fd, void *buf, size_t len, int writing, double deadline)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = writing ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
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

static void make_hello(const tcp_transport *t, hello *h, int purpose, int to)
{
    memset(h, 0, sizeof(*h));
    h->magic = TCP_MAGIC;
    h->version = TCP_VERSION;
    h->purpose = (uint16_t)purpose;
    h->from = t->rank;
    h->to = to;
    h->size = t->size;
    h->n_slots = t->n_slots;
    h->initial_occupied = t->init_occ;
    h->slot_bytes = t->slot_bytes;
}

/* Check an incoming hello; on mismatch fill `why`.  Returns 0 if acceptable. */
static int check_hello(const tcp_transport *t, const hello *h, conn *in, int n_in, char *why,
                       size_t cap)
{
    int from = h->from;
    if (h->version != TCP_VERSION)
        snprintf(why, cap, "protocol version %u, rank %d speaks %u", h->version, t->rank,
                 TCP_VERSION);
    else if (h->size != t->size)
        snprintf(why, cap, "group size %d, rank %d has %d (different hostfiles?)", h->size, t->rank,
                 t->size);
    else if (h->to != t->rank)
        snprintf(why, cap,
                 "connected to rank %d's address believing it rank %d (hostfile "
                 "mismatch?)",
                 t->rank, h->to);
    else if (from < 0 || from >= t->size || from == t->rank)
        snprintf(why, cap, "bad sender rank %d", from);
    else if (h->slot_bytes != t->slot_bytes || h->n_slots != t->n_slots)
        snprintf(why, cap, "window %u x %llu bytes, rank %d has %u x %zu", h->n_slots,
                 (unsigned long long)h->slot_bytes, t->rank, t->n_slots, t->slot_bytes);
    else if (h->purpose == CONN_RING && from != t->prev)
        snprintf(why, cap, "ring connection from rank %d, expected it from rank %d", from, t->prev);
    else if (h->purpose == CONN_CTRL && from < t->rank)
        snprintf(why, cap, "control connection from lower rank %d", from);
    else if (h->purpose != CONN_RING && h->purpose != CONN_CTRL)
        snprintf(why, cap, "unknown connection purpose %u", h->purpose);
    else {
        for (int i = 0; i < n_in; i++)
            if (in[i].peer == from && in[i].purpose == h->purpose) {
                snprintf(why, cap, "duplicate connection from rank %d", from);
                return -1;
            }
        return 0;
    }
    return -1;
}

/* Accept one connection and process its hello.  Returns 1 if a connection
 * was added to in[], 0 if a stray connection was dropped, -1 on error. */
static int accept_one(tcp_transport *t, int lfd, conn *in, int *n_in, double deadline,
                      rt_error *err)
{
    int fd = accept4(lfd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
    if (fd < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR || errno == ECONNABORTED)
            return 0;
        return rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "rank %d: accept", t->rank);
    }
    hello h;
    int e = io_deadline(fd, &h, sizeof(h), 0, deadline);
    if (e || h.magic != TCP_MAGIC) {
        rt_warn("tcp: rank %d dropped a connection that is not a rotor peer", t->rank);
        close(fd);
        return 0;
    }
    hello reply;
    make_hello(t, &reply, CONN_ACK, h.from);
    if (check_hello(t, &h, in, *n_in, reply.why, sizeof(reply.why))) {
        reply.status = 1;
        io_deadline(fd, &reply, sizeof(reply), 1, deadline);
        close(fd);
        return rt_fail(err, RT_EXIT_INPUT, "rank %d rejected a connection from rank %d: %s",
                       t->rank, h.from, reply.why);
    }
    e = io_deadline(fd, &reply, sizeof(reply), 1, deadline);
    if (e) {
        close(fd);
        char who[320];
        return rt_fail(err, RT_EXIT_RUNTIME, "handshake with %s: %s",
                       peer_str(t, h.from, who, sizeof(who)), errno_text(e < 0 ? 0 : e));
    }
    in[(*n_in)++] = (conn){.fd = fd, .peer = h.from, .purpose = h.purpose, .replied = 1};
    return 1;
}

/* Read the reply to one of our hellos. */
static int read_reply(tcp_transport *t, conn *c, double deadline, uint32_t *their_init,
                      rt_error *err)
{
    char who[320];
    hello h;
    int e = io_deadline(c->fd, &h, sizeof(h), 0, deadline);
    if (e)
        return rt_fail(err, RT_EXIT_RUNTIME, "handshake with %s: %s",
                       peer_str(t, c->peer, who, sizeof(who)),
                       e == ETIMEDOUT ? "no reply in time" : errno_text(e < 0 ? 0 : e));
    h.why[sizeof(h.why) - 1] = '\0';
    if (h.magic != TCP_MAGIC || h.purpose != CONN_ACK)
        return rt_fail(err, RT_EXIT_INPUT, "handshake with %s: not a rotor peer",
                       peer_str(t, c->peer, who, sizeof(who)));
    if (h.status != 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s rejected our connection: %s",
                       peer_str(t, c->peer, who, sizeof(who)), h.why);
    if (h.from != c->peer)
        return rt_fail(err, RT_EXIT_INPUT,
                       "handshake with %s: answered by rank %d (hostfile mismatch?)",
                       peer_str(t, c->peer, who, sizeof(who)), h.from);
    if (c->purpose == CONN_RING)
        *their_init = h.initial_occupied;
    c->replied = 1;
    return 0;
}

/* Describe which expected connections are missing (for timeout errors). */
static void describe_missing(tcp_transport *t, conn *in, int n_in, char *buf, size_t cap)
{
    size_t off = 0;
    buf[0] = '\0';
    for (int r = 0; r < t->size; r++) {
        if (r == t->rank)
            continue;
        int want_ring = r == t->prev, want_ctl = r > t->rank;
        for (int i = 0; i < n_in; i++) {
            if (in[i].peer == r && in[i].purpose == CONN_RING)
                want_ring = 0;
            if (in[i].peer == r && in[i].purpose == CONN_CTRL)
                want_ctl = 0;
        }
        if ((want_ring || want_ctl) && off < cap) {
            char who[320];
            off += (size_t)snprintf(buf + off, cap - off, "%s%s", off ? ", " : "",
                                    peer_str(t, r, who, sizeof(who)));
        }
    }
}

/* Build every connection: listen, connect out (ring to next, control to
 * lower ranks) sending hellos, then accept the expected incoming ones while
 * collecting our replies.  Nothing waits for a reply before accepting, so
 * ranks starting in any order cannot deadlock. */
static int connect_all(tcp_transport *t, rt_error *err)
{
    int size = t->size;
    double deadline = rt_now() + t->base.cfg.connect_timeout_ms / 1000.0;
    conn out[size], in[size + 1];
    int n_out = 0, n_in = 0, want_in = 1 + (size - 1 - t->rank), rc = -1;
    uint32_t next_init = 0;
    int lfd = open_listener(t, err);
    if (lfd < 0)
        return -1;

    /* Outgoing: ring to next, control to every lower rank. */
    for (int k = 0; k < t->rank + 1; k++) {
        int peer = k == 0 ? t->next : k - 1, purpose = k == 0 ? CONN_RING : CONN_CTRL;
        int fd = connect_retry(t, peer, deadline, out, n_out, &next_init, err);
        if (fd < 0)
            goto out;
        out[n_out++] = (conn){.fd = fd, .peer = peer, .purpose = purpose};
        hello h;
        make_hello(t, &h, purpose, peer);
        int e = io_deadline(fd, &h, sizeof(h), 1, deadline);
        if (e) {
            char who[320];
            rt_fail(err, RT_EXIT_RUNTIME, "handshake with %s: %s",
                    peer_str(t, peer, who, sizeof(who)), errno_text(e < 0 ? 0 : e));
            goto out;
        }
    }

    /* Accept incoming connections and read replies, whichever comes first. */
    for (;;) {
        int pending_out = 0;
        struct pollfd pfd[size + 1];
        int map[size + 1];
        int np = 0;
        if (n_in < want_in) {
            pfd[np] = (struct pollfd){.fd = lfd, .events = POLLIN};
            map[np++] = -1;
        }
        for (int i = 0; i < n_out; i++)
            if (!out[i].replied) {
                pfd[np] = (struct pollfd){.fd = out[i].fd, .events = POLLIN};
                map[np++] = i;
                pending_out++;
            }
        if (np == 0)
            break;
        int ms = ms_until(deadline);
        int ready = ms > 0 ? poll(pfd, (nfds_t)np, ms) : 0;
        if (ready < 0 && errno == EINTR)
            continue;
        if (ready < 0) {
            rt_fail_errno(err, RT_EXIT_RUNTIME, errno, "rank %d: poll", t->rank);
            goto out;
        }
        if (ready == 0) {
            char missing[700];
            describe_missing(t, in, n_in, missing, sizeof(missing));
            if (missing[0])
                rt_fail(err, RT_EXIT_RUNTIME,
                        "rank %d: timed out after %d ms waiting for %s to connect", t->rank,
                        t->base.cfg.connect_timeout_ms, missing);
            else
                rt_fail(err, RT_EXIT_RUNTIME,
                        "rank %d: timed out after %d ms waiting for %d handshake replies", t->rank,
                        t->base.cfg.connect_timeout_ms, pending_out);
            goto out;
        }
        for (int i = 0; i < np; i++) {
            if (!pfd[i].revents)
                continue;
            if (map[i] < 0) {
                if (accept_one(t, lfd, in, &n_in, deadline, err) < 0)
                    goto out;
            } else if (read_reply(t, &out[map[i]], deadline, &next_init, err)) {
                goto out;
            }
        }
    }

    /* Keep the sockets. */
    for (int i = 0; i < n_out; i++) {
        if (out[i].purpose == CONN_RING)
            t->next_fd = out[i].fd;
        else
            t->ctl_fd[out[i].peer] = out[i].fd;
        out[i].fd = -1;
    }
    for (int i = 0; i < n_in; i++) {
        if (in[i].purpose == CONN_RING)
            t->prev_fd = in[i].fd;
        else
            t->ctl_fd[in[i].peer] = in[i].fd;
        in[i].fd = -1;
    }
    set_nonblocking(t->next_fd, 0);
    set_nonblocking(t->prev_fd, 0);
    tune_socket(t->next_fd, ring_sockbuf_bytes(t));
    tune_socket(t->prev_fd, ring_sockbuf_bytes(t));
    for (int r = 0; r < size; r++)
        if (t->ctl_fd[r] >= 0)
            tune_socket(t->ctl_fd[r], 0);
    /* We may write into every slot the next rank does not start with. */
    t->credits = t->n_slots - next_init;
    rc = 0;
out:
    for (int i = 0; i < n_out; i++)
        if (out[i].fd >= 0)
            close(out[i].fd);
    for (int i = 0; i < n_in; i++)
        if (in[i].fd >= 0)
            close(in[i].fd);
    close(lfd);
    return rc;
}

/* ---- ops ---- */

static void *tcp_slot(rt_transport *base, uint32_t slot)
{
    tcp_transport *t = (tcp_transport *)base;
    return t->window + (size_t)slot * t->slot_bytes;
}

static double peer_deadline(const tcp_transport *t)
{
    return t->peer_timeout_ms > 0 ? rt_now() + t->peer_timeout_ms / 1000.0 : 0;
}

static int tcp_pass(rt_transport *base, uint32_t src_slot, size_t len, uint32_t block,
                    uint32_t epoch, rt_error *err)
{
    tcp_transport *t = (tcp_transport *)base;
    char who[320];
    pthread_mutex_lock(&t->mu);
    if (t->failed)
        goto failed;
    uint32_t expect = (uint32_t)(t->passes_queued % t->n_slots);
    if (src_slot != expect) {
        pthread_mutex_unlock(&t->mu);
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "transport: pass of slot %u out of order: blocks leave in arrival "
                       "order, slot %u is next",
                       src_slot, expect);
    }
    if (t->credits == 0) {
        double t0 = rt_now(), deadline = peer_deadline(t);
        while (t->credits == 0 && !t->failed) {
            if (t->next_closed) {
                pthread_mutex_unlock(&t->mu);
                return rt_fail(err, RT_EXIT_RUNTIME, "pass: %s has closed its transport",
                               peer_str(t, t->next, who, sizeof(who)));
            }
            if (cond_wait_until(&t->cv_credit, &t->mu, deadline) == ETIMEDOUT && !t->credits)
                fail_locked(t, "lost %s: no free slot for %d ms (peer timeout)",
                            peer_str(t, t->next, who, sizeof(who)), t->peer_timeout_ms);
        }
        t->stats.credit_wait_s += rt_now() - t0;
        if (t->failed)
            goto failed;
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
    else if (it->off == sizeof(frame_hdr) + it->len)
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
}

static int tcp_wait_arrival(rt_transport *base, rt_arrival *out, int timeout_ms, rt_error *err)
{
    tcp_transport *t = (tcp_transport *)base;
    char who[320];
    double user = timeout_ms >= 0 ? rt_now() + timeout_ms / 1000.0 : 0;
    double peer = peer_deadline(t);
    pthread_mutex_lock(&t->mu);
    while (t->a_count == 0 && !t->failed) {
        if (t->prev_closed) {
            pthread_mutex_unlock(&t->mu);
            return rt_fail(err, RT_EXIT_RUNTIME, "wait: %s has closed its transport",
                           peer_str(t, t->prev, who, sizeof(who)));
        }
        int peer_first = peer > 0 && (user <= 0 || peer < user);
        double deadline = peer_first ? peer : user;
        if (timeout_ms == 0 || cond_wait_until(&t->cv_arrival, &t->mu, deadline) == ETIMEDOUT) {
            if (t->a_count || t->failed)
                break;
            if (!peer_first) {
                pthread_mutex_unlock(&t->mu);
                return 0;
            }
            fail_locked(t, "lost %s: no block for %d ms (peer timeout)",
                        peer_str(t, t->prev, who, sizeof(who)), t->peer_timeout_ms);
        }
    }
    if (t->failed) {
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
    char who[320];
    pthread_mutex_lock(&t->mu);
    uint64_t last = t->passes_done;
    double deadline = peer_deadline(t);
    while (t->passes_done < t->passes_queued && !t->failed) {
        if (cond_wait_until(&t->cv_main, &t->mu, deadline) == ETIMEDOUT) {
            if (t->passes_done == last)
                fail_locked(t, "lost %s: flush made no progress for %d ms (peer timeout)",
                            peer_str(t, t->next, who, sizeof(who)), t->peer_timeout_ms);
            last = t->passes_done;
            deadline = peer_deadline(t);
        }
    }
    int rc = t->failed ? failed_locked(t, err) : 0;
    pthread_mutex_unlock(&t->mu);
    return rc;
}

/* A control-connection operation failed with e (-1 = EOF).  Give a failure
 * relayed over the ring a moment to arrive, so the message names the root
 * cause, then fail (or report the failure already recorded). */
static int ctl_failed(tcp_transport *t, int peer, int e, rt_error *err)
{
    char who[320];
    pthread_mutex_lock(&t->mu);
    double until = rt_now() + 0.2;
    while (!t->failed && e != ETIMEDOUT && cond_wait_until(&t->cv_main, &t->mu, until) == 0)
        ;
    if (e == ETIMEDOUT)
        fail_locked(t, "lost %s: no control message for %d ms (peer timeout)",
                    peer_str(t, peer, who, sizeof(who)), t->peer_timeout_ms);
    else
        lost_locked(t, peer, e < 0 ? 0 : e);
    failed_locked(t, err);
    pthread_mutex_unlock(&t->mu);
    return -1;
}

static int check_ctl(tcp_transport *t, int peer, rt_error *err)
{
    if (peer < 0 || peer >= t->size || peer == t->rank)
        return rt_fail(err, RT_EXIT_RUNTIME, "transport: no control connection to rank %d", peer);
    pthread_mutex_lock(&t->mu);
    int rc = t->failed ? failed_locked(t, err) : 0;
    pthread_mutex_unlock(&t->mu);
    return rc;
}

/* Control I/O: poll-driven so a shutdown (failure elsewhere) wakes it, and
 * so peer_timeout_ms bounds every wait for progress. */
static int ctl_io(tcp_transport *t, int fd, void *buf, size_t len, int writing)
{
    uint8_t *p = buf;
    while (len > 0) {
        ssize_t n = writing ? send(fd, p, len, MSG_NOSIGNAL) : recv(fd, p, len, 0);
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
        int rc = poll(&pfd, 1, t->peer_timeout_ms > 0 ? t->peer_timeout_ms : -1);
        if (rc == 0)
            return ETIMEDOUT;
        if (rc < 0 && errno != EINTR)
            return errno;
    }
    return 0;
}

static int tcp_send_msg(rt_transport *base, int peer, const void *buf, size_t len, rt_error *err)
{
    tcp_transport *t = (tcp_transport *)base;
    if (check_ctl(t, peer, err))
        return -1;
    uint64_t hdr = len;
    int e = ctl_io(t, t->ctl_fd[peer], &hdr, sizeof(hdr), 1);
    if (!e)
        e = ctl_io(t, t->ctl_fd[peer], (void *)buf, len, 1);
    return e ? ctl_failed(t, peer, e, err) : 0;
}

static int tcp_recv_msg(rt_transport *base, int peer, void *buf, size_t len, rt_error *err)
{
    tcp_transport *t = (tcp_transport *)base;
    if (check_ctl(t, peer, err))
        return -1;
    uint64_t hdr = 0;
    int e = ctl_io(t, t->ctl_fd[peer], &hdr, sizeof(hdr), 0);
    if (e)
        return ctl_failed(t, peer, e, err);
    if (hdr != len) {
        char who[320];
        pthread_mutex_lock(&t->mu);
        fail_locked(t,
                    "protocol error: %s sent a %llu-byte control message where %zu bytes were "
                    "expected (collectives called in different orders?)",
                    peer_str(t, peer, who, sizeof(who)), (unsigned long long)hdr, len);
        failed_locked(t, err);
        pthread_mutex_unlock(&t->mu);
        return -1;
    }
    e = ctl_io(t, t->ctl_fd[peer], buf, len, 0);
    return e ? ctl_failed(t, peer, e, err) : 0;
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
    pthread_mutex_destroy(&t->mu);
    pthread_mutex_destroy(&t->next_wmu);
    pthread_mutex_destroy(&t->prev_wmu);
    free(t->q);
    free(t->aq);
    rt_free(t->window);
    rt_transport_base_free(&t->base);
    free(t);
}

/* Close: let the sender finish what is queued, say BYE on both ring
 * connections (so neighbours see a normal close, not a lost peer), then shut
 * every socket down to wake the reader threads and join them. */
static void tcp_close(rt_transport *base)
{
    tcp_transport *t = (tcp_transport *)base;
    if (t->threads_started) {
        pthread_mutex_lock(&t->mu);
        t->closing = 1;
        pthread_cond_broadcast(&t->cv_send);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->sender, NULL);

        pthread_mutex_lock(&t->mu);
        int failed = t->failed;
        pthread_mutex_unlock(&t->mu);
        if (!failed) {
            frame_hdr h = {.type = FRAME_BYE};
            uint32_t bye = CREDIT_BYE;
            pthread_mutex_lock(&t->next_wmu);
            write_full(t->next_fd, &h, sizeof(h), MSG_DONTWAIT);
            pthread_mutex_unlock(&t->next_wmu);
            pthread_mutex_lock(&t->prev_wmu);
            write_full(t->prev_fd, &bye, sizeof(bye), MSG_DONTWAIT);
            pthread_mutex_unlock(&t->prev_wmu);
        }
        pthread_mutex_lock(&t->mu);
        shutdown_all(t);
        pthread_mutex_unlock(&t->mu);
        pthread_join(t->receiver, NULL);
        pthread_join(t->creditor, NULL);
    }
    tcp_free(t);
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
    pthread_condattr_destroy(&ca);
    return 0;
}

/* Start the receiver, credit and sender threads with every signal blocked,
 * so the application's signal handlers run on its own threads. */
static int start_threads(tcp_transport *t, rt_error *err)
{
    static const char *const names[3] = {"rotor-tcp-recv", "rotor-tcp-cred", "rotor-tcp-send"};
    void *(*const mains[3])(void *) = {receiver_main, creditor_main, sender_main};
    pthread_t *ids[3] = {&t->receiver, &t->creditor, &t->sender};
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int started = 0, e = 0;
    for (; started < 3; started++) {
        e = pthread_create(ids[started], NULL, mains[started], t);
        if (e)
            break;
        pthread_setname_np(*ids[started], names[started]);
    }
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (e) {
        pthread_mutex_lock(&t->mu);
        t->closing = 1; /* quiet exits */
        shutdown_all(t);
        pthread_cond_broadcast(&t->cv_send);
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
    t->window = rt_alloc((size_t)t->n_slots * t->slot_bytes);
    if (!t->ctl_fd || !t->q || !t->aq || !t->window) {
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
