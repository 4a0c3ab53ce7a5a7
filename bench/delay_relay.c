/*
 * delay_relay.c - added link latency for bench/scale.sh, on a kernel
 * without sch_netem (or sch_fq, for timestamp-based delay).
 *
 *   delay_relay --delay-us L RANKSIDE:SWITCHSIDE [...]
 *
 * Each pair is two interfaces of the switch namespace: RANKSIDE is the
 * veth end that faces a rank, SWITCHSIDE one whose peer is on the bridge.
 * Every frame the rank sends (arriving on RANKSIDE) is held L us and then
 * sent out of SWITCHSIDE; frames from the bridge (arriving on SWITCHSIDE)
 * go to RANKSIDE at once.  So every one-way path between two ranks (a
 * block, a credit, a collective's message, an ACK) gains L once.  Frames
 * keep their order.  The frames travel with their virtio-net header
 * (PACKET_VNET_HDR), so TCP's 64 KiB GSO frames and unfinished checksums
 * pass as they are, with no segmentation or checksum work here.
 *
 * Its CPU is the emulated link's (the NICs' and the switch's work), which
 * on a cluster every node pays for its own traffic.  Left to the
 * scheduler, this one task stays on one core for whole rotations, so the
 * rank sharing that core pays all of it, waits behind it on the run queue
 * and computes 0.1-0.2 s longer per rotation than the other (seen with
 * per-thread schedstat at 10 ms, 2 ranks x 1 thread at 1 Gb/s and +200 us).
 * So it moves to the next core it may use every SPREAD_MS (when awake),
 * which shares its cost out evenly over the cores, the way
 * `rotor simulate --host-cores` charges the link's CPU.
 *
 * It runs until killed (SIGTERM: exits 0) and prints nothing unless it
 * fails, or at exit (stderr) a count of frames whose queue was full.
 * Bench tool only: root, Linux, its own namespace.
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <errno.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#ifndef PACKET_IGNORE_OUTGOING
#define PACKET_IGNORE_OUTGOING 23
#endif

#define MAX_PAIRS 16
#define FRAME_MAX (65536 + 64)  /* a GSO frame and its virtio-net header */
#define QUEUE_BYTES (32u << 20) /* held frames of one pair (ring) */
#define SPREAD_NS 10000000      /* time on one core before moving to the next */

/* Frames held for one direction: a byte ring of [due ns, length, bytes]. */
typedef struct held {
    uint8_t *ring;
    size_t head, tail, used; /* bytes */
} held;

typedef struct pair {
    int rank_fd, switch_fd;
    held q;
} pair;

typedef struct entry {
    int64_t due_ns;
    uint32_t len;
} entry;

static volatile sig_atomic_t stop;
static uint64_t dropped, refused;

static void on_signal(int sig)
{
    (void)sig;
    stop = 1;
}

static int64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (int64_t)t.tv_sec * 1000000000 + t.tv_nsec;
}

static void die(const char *what, const char *name)
{
    fprintf(stderr, "delay_relay: %s %s: %s\n", what, name, strerror(errno));
    exit(1);
}

/* A packet socket on interface `name`: every frame it receives (not the
 * ones sent out of it), with its virtio-net header. */
static int open_iface(const char *name)
{
    int one = 1, fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
    if (fd < 0)
        die("socket for", name);
    unsigned idx = if_nametoindex(name);
    if (!idx)
        die("no interface", name);
    /* Room for what the rank's tbf (fed from here) holds: a packet socket
     * that is out of send buffer refuses the frame, which TCP then resends
     * after its 200 ms timeout (seen with the default 208 KiB). */
    int buf = 16 << 20, sndbuf = 64 << 20;
    if (setsockopt(fd, SOL_PACKET, PACKET_VNET_HDR, &one, sizeof(one)) ||
        setsockopt(fd, SOL_PACKET, PACKET_IGNORE_OUTGOING, &one, sizeof(one)) ||
        (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &buf, sizeof(buf)) &&
         setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &buf, sizeof(buf))) ||
        (setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &sndbuf, sizeof(sndbuf)) &&
         setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &sndbuf, sizeof(sndbuf))))
        die("socket options on", name);
    struct sockaddr_ll a = {
        .sll_family = AF_PACKET, .sll_protocol = htons(ETH_P_ALL), .sll_ifindex = (int)idx};
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)))
        die("bind to", name);
    return fd;
}

/* Copy n bytes into / out of the ring at *pos, wrapping. */
static void ring_put(held *q, const void *src, size_t n)
{
    size_t first = n < QUEUE_BYTES - q->tail ? n : QUEUE_BYTES - q->tail;
    memcpy(q->ring + q->tail, src, first);
    memcpy(q->ring, (const uint8_t *)src + first, n - first);
    q->tail = (q->tail + n) % QUEUE_BYTES;
    q->used += n;
}

static void ring_get(held *q, void *dst, size_t n)
{
    size_t first = n < QUEUE_BYTES - q->head ? n : QUEUE_BYTES - q->head;
    memcpy(dst, q->ring + q->head, first);
    memcpy((uint8_t *)dst + first, q->ring, n - first);
    q->head = (q->head + n) % QUEUE_BYTES;
    q->used -= n;
}

/* The end of a receive loop: an empty queue is its normal end, anything
 * else (the interface gone, a socket error) stops the relay, since every
 * frame after it would be lost without a word. */
static void check_recv(ssize_t n, const char *side)
{
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR))
        return;
    if (n == 0)
        errno = EIO; /* a packet socket never reads 0 bytes */
    die("receive on the", side);
}

static void send_frame(int fd, const void *buf, size_t len)
{
    /* a full device queue drops the frame, as a switch would; TCP resends */
    if (send(fd, buf, len, MSG_DONTWAIT) < 0) {
        if (errno != EAGAIN && errno != ENOBUFS)
            perror("delay_relay: send");
        refused++;
    }
}

/* Frames from the rank: held until due (all of them when delay is 0). */
/* Where the next frame from the rank can be received in place (after its
 * entry, in one piece before the ring's end), or NULL when the ring has not
 * FRAME_MAX bytes there: then it goes through `buf` and is copied in. */
static uint8_t *room_in_place(const held *q)
{
    size_t to_end = QUEUE_BYTES - q->tail, free = QUEUE_BYTES - q->used;
    size_t room = to_end < free ? to_end : free;
    return room >= sizeof(entry) + FRAME_MAX ? q->ring + q->tail + sizeof(entry) : NULL;
}

/* Frames from the rank: held until due (all of them when delay is 0).  A
 * held frame is received straight into the ring when it fits there in one
 * piece (nearly always), since these copies were a fifth of the relay's CPU. */
static void take_from_rank(pair *p, int64_t delay_ns, uint8_t *buf)
{
    ssize_t n;
    for (;;) {
        uint8_t *in_place = delay_ns ? room_in_place(&p->q) : NULL;
        if ((n = recv(p->rank_fd, in_place ? in_place : buf, FRAME_MAX, 0)) <= 0)
            break;
        if (delay_ns == 0) {
            send_frame(p->switch_fd, buf, (size_t)n);
            continue;
        }
        if (p->q.used + sizeof(entry) + (size_t)n > QUEUE_BYTES) {
            dropped++;
            continue;
        }
        entry e = {.due_ns = now_ns() + delay_ns, .len = (uint32_t)n};
        ring_put(&p->q, &e, sizeof(e));
        if (in_place) { /* the bytes are there already */
            p->q.tail = (p->q.tail + (size_t)n) % QUEUE_BYTES;
            p->q.used += (size_t)n;
        } else {
            ring_put(&p->q, buf, (size_t)n);
        }
    }
    check_recv(n, "rank side");
}

/* Frames from the bridge: straight on to the rank. */
static void take_from_switch(pair *p, uint8_t *buf)
{
    ssize_t n;
    while ((n = recv(p->switch_fd, buf, FRAME_MAX, 0)) > 0)
        send_frame(p->rank_fd, buf, (size_t)n);
    check_recv(n, "switch side");
}

/* Send the held frames that are due; returns the next one's due time
 * (INT64_MAX: none held). */
static int64_t send_due(pair *p, uint8_t *buf)
{
    while (p->q.used) {
        entry e;
        size_t head = p->q.head, used = p->q.used;
        ring_get(&p->q, &e, sizeof(e));
        if (e.due_ns > now_ns()) {
            p->q.head = head, p->q.used = used; /* not yet: put the entry back */
            return e.due_ns;
        }
        if (p->q.head + e.len <= QUEUE_BYTES) { /* in one piece: send it from the ring */
            send_frame(p->switch_fd, p->q.ring + p->q.head, e.len);
            p->q.head = (p->q.head + e.len) % QUEUE_BYTES;
            p->q.used -= e.len;
        } else {
            ring_get(&p->q, buf, e.len);
            send_frame(p->switch_fd, buf, e.len);
        }
    }
    return INT64_MAX;
}

/* The cores this process may use, in order, and which one it is on. */
typedef struct spread {
    int cpus[CPU_SETSIZE];
    int n, at;
    int64_t next_ns;
} spread;

static void spread_init(spread *sp)
{
    cpu_set_t set;
    sp->n = sp->at = 0;
    sp->next_ns = 0;
    if (sched_getaffinity(0, sizeof(set), &set))
        die("sched_getaffinity", "");
    for (int c = 0; c < CPU_SETSIZE; c++)
        if (CPU_ISSET(c, &set))
            sp->cpus[sp->n++] = c;
}

/* Past its time on this core: on to the next one. */
static void spread_step(spread *sp)
{
    int64_t now = now_ns();
    if (sp->n < 2 || now < sp->next_ns)
        return;
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sp->cpus[sp->at], &one);
    if (sched_setaffinity(0, sizeof(one), &one))
        die("sched_setaffinity", "");
    sp->at = (sp->at + 1) % sp->n;
    sp->next_ns = now + SPREAD_NS;
}

int main(int argc, char **argv)
{
    if (argc < 4 || strcmp(argv[1], "--delay-us")) {
        fprintf(stderr, "usage: delay_relay --delay-us L RANKSIDE:SWITCHSIDE [...]\n");
        return 2;
    }
    char *end;
    double us = strtod(argv[2], &end);
    if (*end || us < 0 || us > 1e6 || argc - 3 > MAX_PAIRS) {
        fprintf(stderr, "delay_relay: delay %s us or %d pairs out of range\n", argv[2], argc - 3);
        return 2;
    }
    int64_t delay_ns = (int64_t)(us * 1000);
    pair pairs[MAX_PAIRS];
    int np = argc - 3;
    struct pollfd fds[2 * MAX_PAIRS];
    for (int i = 0; i < np; i++) {
        char *colon = strchr(argv[3 + i], ':');
        if (!colon) {
            fprintf(stderr, "delay_relay: %s is not RANKSIDE:SWITCHSIDE\n", argv[3 + i]);
            return 2;
        }
        *colon = 0;
        pairs[i] = (pair){.rank_fd = open_iface(argv[3 + i]), .switch_fd = open_iface(colon + 1)};
        if (delay_ns && !(pairs[i].q.ring = malloc(QUEUE_BYTES))) {
            fprintf(stderr, "delay_relay: out of memory\n");
            return 1;
        }
        fds[2 * i] = (struct pollfd){.fd = pairs[i].rank_fd, .events = POLLIN};
        fds[2 * i + 1] = (struct pollfd){.fd = pairs[i].switch_fd, .events = POLLIN};
    }
    signal(SIGTERM, on_signal);
    signal(SIGINT, on_signal);
    prctl(PR_SET_TIMERSLACK, 1UL); /* wake when a frame is due, not up to 50 us later */
    static uint8_t buf[FRAME_MAX];
    spread sp;
    spread_init(&sp);
    while (!stop) {
        spread_step(&sp);
        int64_t next = INT64_MAX;
        for (int i = 0; i < np; i++) {
            int64_t due = send_due(&pairs[i], buf);
            next = due < next ? due : next;
        }
        struct timespec wait, *tmo = NULL;
        if (next != INT64_MAX) {
            int64_t left = next - now_ns();
            left = left > 0 ? left : 0;
            wait = (struct timespec){.tv_sec = left / 1000000000, .tv_nsec = left % 1000000000};
            tmo = &wait;
        }
        if (ppoll(fds, (nfds_t)(2 * np), tmo, NULL) < 0 && errno != EINTR)
            die("poll", "");
        for (int i = 0; i < np; i++) {
            take_from_rank(&pairs[i], delay_ns, buf);
            take_from_switch(&pairs[i], buf);
        }
    }
    if (dropped || refused)
        fprintf(stderr,
                "delay_relay: %llu frames dropped (queue full), %llu refused by the device\n",
                (unsigned long long)dropped, (unsigned long long)refused);
    return 0;
}
