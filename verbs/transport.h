/*
 * transport.h - the engine's only view of the network.
 *
 * Ranks 0..size-1 form a ring.  Each rank owns a *window* of `n_slots`
 * equally sized parameter-block slots, allocated (and, for RDMA, registered)
 * once by rt_transport_open.  The one bulk operation is the ring pass:
 *
 *   rt_transport_pass(t, src_slot, len, block, epoch)
 *
 * copies `len` bytes from this rank's slot `src_slot` into the *next* rank's
 * window (rank + 1 unless cfg.ring names another ring order), one-sided: the next rank's engine
 * does nothing to receive it.  It only learns of it through rt_transport_wait_arrival, which
 * reports the (slot, block, epoch, len) of arrivals in the order they were passed.
 *
 * Slot discipline (the same in every backend):
 *  - Slots form a FIFO ring per rank.  Slots 0 .. initial_occupied-1 hold the
 *    rank's starting blocks; the k-th arrival (k = 0, 1, ...) lands in slot
 *    (initial_occupied + k) % n_slots.
 *  - A block leaves a rank in the order it arrived (initial blocks first, in
 *    slot order).  After rt_transport_pass(src_slot) returns, the engine must
 *    not touch src_slot again: once the outgoing transfer has completed, the
 *    transport itself returns that slot to the previous rank as a credit.
 *  - The sender never overwrites a slot before its credit came back:
 *    rt_transport_pass waits for a credit when none is available.  So the
 *    previous rank may hold at most n_slots - initial_occupied passes in
 *    flight to us at start.
 *
 * Collectives (barrier, all-reduce, gather, broadcast) are synchronous, and
 * every rank must call them in the same order.  They take log2(size) rounds
 * (trees, recursive doubling).  All-reduce sums are deterministic: they follow
 * a fixed binary tree whose shape depends only on the rank count, so results
 * are bit-identical on every rank whatever the timing.
 *
 * Failure: a lost peer (closed connection, completion error, or silence: no
 * heartbeat for peer_timeout_ms) makes the current and every later call fail
 * with an rt_error naming the peer rank, on every rank; no call, flush and
 * close included, ever blocks forever on a dead or frozen peer.  A peer that
 * is alive but slow (heartbeats keep coming) is never a failure.
 *
 * Stopping is ordered (the one statement of it; every backend keeps it): a
 * rank that stops, by rt_transport_abort or because a call of its own
 * failed, is known to each peer only after everything it sent that peer
 * before: a call that receives from it (wait_arrival, and recv inside a
 * collective) first gets every arrival and message it sent, and only the
 * call that needs more from it fails, with its message ("rank R stopped:
 * WHY", kept word for word as it travels on).  Calls that do not need it go
 * on: so a collective that a rank finished before it stopped ends with the
 * same result on every rank, and a verdict every rank reaches from that
 * result (a check that refuses, with exit 2) is each rank's own, never
 * "rank R stopped".  Calls that send to a stopped rank fail at once.
 *
 * Connections: every connection is authenticated with the job key (or runs
 * insecure when none is given); a stranger that cannot prove it knows the
 * key is dropped without learning anything about the job, and never delays
 * the real ranks.  Every length, count and index that comes from the wire is
 * checked before use.
 * size == 1 is valid: no connections, passes are not allowed, collectives
 * are local no-ops.
 *
 * Threads: a transport runs threads of its own (senders, receivers, a
 * watchdog), but it has one caller: every call on an rt_transport comes
 * from the same thread (the engine's orchestrating thread), never two at
 * once.  rt_transport_get_stats, which takes the transport's lock, is the
 * exception; the memory rt_transport_slot returns may be handed to other
 * threads, as the engine's workers use their blocks.
 *
 * Ownership: rt_transport_open reads cfg and the strings and peers it
 * points to only while it runs (the peers are copied).  A call that takes
 * an rt_error returns -1 with it set when it fails, else 0 (or, for
 * rt_transport_wait_arrival, 1 with an arrival).
 */
#ifndef ROTOR_TRANSPORT_H
#define ROTOR_TRANSPORT_H

#include "ground/ground.h"

#include <stddef.h>
#include <stdint.h>

typedef enum rt_transport_kind {
    RT_TRANSPORT_AUTO = 0, /* ib when a device with an active port is usable, else tcp */
    RT_TRANSPORT_TCP = 1,
    RT_TRANSPORT_IB = 2,
} rt_transport_kind;

/* How collectives travel (see collectives.c).  Both give bit-identical
 * results on every rank; the star exists to be measured against. */
typedef enum rt_collectives {
    RT_COLLECTIVES_TREE = 0, /* recursive doubling / halving, binomial trees */
    RT_COLLECTIVES_STAR = 1, /* everything through rank 0 */
} rt_collectives;

typedef struct rt_peer {
    char host[256]; /* IPv4/IPv6 literal or host name */
    int port;       /* TCP port the rank listens on (rdma_cm uses the same number) */
} rt_peer;

typedef struct rt_transport_config {
    rt_transport_kind kind;
    int rank, size;
    const rt_peer *peers;      /* size entries: where each rank listens */
    size_t slot_bytes;         /* capacity of one slot (rounded up to RT_ALIGN) */
    uint32_t n_slots;          /* slots in each rank's window (>= 2) */
    uint32_t initial_occupied; /* slots 0..initial_occupied-1 start full */
    int connect_timeout_ms;    /* time allowed to reach every peer (default 30000) */
    int handshake_timeout_ms;  /* time one incoming connection has to authenticate (5000) */
    int peer_timeout_ms;       /* a peer that sends nothing, not even a heartbeat, for this
                                  long is lost (default RT_PEER_TIMEOUT_MS; 0 = never) */
    /* Job identity.  With `secure`, every connection proves knowledge of
     * job_key (challenge and response, verbs/auth.h) before it learns
     * anything about the job; without, connections are only checked for
     * the protocol (insecure mode). */
    int secure;
    uint8_t job_key[32]; /* RT_JOB_KEY_BYTES, from rt_transport_job_key */
    /* What every rank must agree on, as "name=value" lines (plan, app,
     * options...).  rt_transport_open compares every rank's lines with rank
     * 0's before it returns and fails (exit code 2) naming the first field
     * that differs and both values.  NULL = only the transport's own. */
    const char *fingerprint;
    /* The build of rotor this rank runs (rotor --version), compared like a
     * fingerprint field, first: ranks of different builds may compute or
     * frame things differently, so they refuse to run.  NULL = not sent. */
    const char *build;
    rt_collectives collectives; /* default tree */
    /* The ring neighbours: with ring.custom = 0, rank + 1 and rank - 1 (mod
     * size).  The engine sets them when the plan's schedule moves blocks
     * around the nodes in another order; every rank's choice must agree. */
    struct {
        int custom, next, prev;
    } ring;
    /* TCP only (ignored by ib): */
    int tcp_sockbuf; /* ring socket buffers, bytes: 0 = default (4 MiB), < 0 = kernel autotuning */
    /* RDMA only (ignored by tcp): */
    const char *ib_dev; /* rdma_cm picks the device from this rank's address; when
                           set, the transport checks it is this one (NULL = any) */
    int ib_port;        /* likewise for the port (0 = any) */
    int gid_index;      /* -1 = auto: the RoCE v2 GID of the interface's IPv4 address */
    int event_mode;     /* 0 = busy-poll completions, 1 = completion channel */
} rt_transport_config;

#define RT_JOB_KEY_BYTES 32
#define RT_PEER_TIMEOUT_MS 8000 /* default silence limit: a frozen peer is named within ~10 s */

typedef struct rt_arrival {
    uint32_t slot;  /* where the bytes are now */
    uint32_t block; /* tag given to rt_transport_pass */
    uint32_t epoch; /* tag given to rt_transport_pass */
    size_t len;     /* bytes written */
} rt_arrival;

typedef struct rt_transport_stats {
    uint64_t bytes_sent, bytes_received;
    uint64_t passes_sent, passes_received;
    double credit_wait_s; /* time rt_transport_pass spent waiting for a credit */
} rt_transport_stats;

typedef struct rt_transport rt_transport;

/* Fill `cfg` with defaults (kind AUTO, timeouts, gid_index -1). */
void rt_transport_config_init(rt_transport_config *cfg);

/* Connect to the ring neighbours (and all peers for collectives), allocate
 * and register the window.  Returns 0, or -1 with `err` set. */
int rt_transport_open(const rt_transport_config *cfg, rt_transport **out, rt_error *err);
void rt_transport_close(rt_transport *t);
/* This rank is about to stop because of an error of its own (a file it
 * could not write, bad input): fail the transport and tell the peers why,
 * before rt_transport_close.  The other ranks' calls that need this rank
 * then fail with "rank R stopped: WHY", in order (see "Stopping is
 * ordered" above), instead of a lost connection.  A transport that has
 * already failed keeps its first cause, and tells it.  NULL t: nothing. */
void rt_transport_abort(rt_transport *t, const char *why);

const char *rt_transport_name(const rt_transport *t); /* "tcp" or "ib" */
int rt_transport_rank(const rt_transport *t);
int rt_transport_size(const rt_transport *t);
uint32_t rt_transport_n_slots(const rt_transport *t);
size_t rt_transport_slot_bytes(const rt_transport *t);

/* Base address of slot `slot` in this rank's window (RT_ALIGN aligned). */
void *rt_transport_slot(rt_transport *t, uint32_t slot);

/* Pass the block in `src_slot` to the next rank (see the header comment).
 * Returns once the transfer is queued; may wait for a credit first. */
int rt_transport_pass(rt_transport *t, uint32_t src_slot, size_t len, uint32_t block,
                      uint32_t epoch, rt_error *err);

/* Wait for the next arrival from the previous rank.  timeout_ms < 0 waits
 * forever (still failing when the peer is lost).  Returns 1 with *out set,
 * 0 on timeout, -1 on error. */
int rt_transport_wait_arrival(rt_transport *t, rt_arrival *out, int timeout_ms, rt_error *err);

/* Wait until every pass issued so far has completed locally (all credits for
 * them returned to the previous rank).  Used before close and at the end of
 * a run so no transfer is cut off. */
int rt_transport_flush(rt_transport *t, rt_error *err);

int rt_transport_barrier(rt_transport *t, rt_error *err);
/* In-place sum over ranks along the fixed tree (bit-identical everywhere).
 * Integer sums wrap.  A floating-point element with one non-zero contributor
 * (per-worker slots, as rotor's callers use) is exact, so equal to any
 * serial replay; general float sums follow the tree order of collectives.c. */
int rt_transport_allreduce_f64(rt_transport *t, double *v, size_t n, rt_error *err);
int rt_transport_allreduce_i64(rt_transport *t, int64_t *v, size_t n, rt_error *err);
/* Every rank contributes `len` bytes (lengths may differ).  On rank 0,
 * *out_at_root receives a malloc'd buffer with all contributions concatenated
 * in rank order and lens_at_root[r] their lengths (lens_at_root has `size`
 * entries).  Other ranks may pass NULL for both. */
int rt_transport_gatherv(rt_transport *t, const void *buf, size_t len, void **out_at_root,
                         size_t *lens_at_root, rt_error *err);
/* Rank 0's `len` bytes copied into `buf` on every rank (len equal on all). */
int rt_transport_bcast(rt_transport *t, void *buf, size_t len, rt_error *err);

void rt_transport_get_stats(const rt_transport *t, rt_transport_stats *out);

/* The job key for a secret (any bytes; rotor launch makes 64 hex digits). */
int rt_transport_job_key(const char *secret, size_t len, uint8_t key[RT_JOB_KEY_BYTES],
                         rt_error *err);
/* A new random secret as 64 hex digits (cap >= 65). */
int rt_transport_new_secret(char *hex, size_t cap, rt_error *err);
/* Overwrite a secret's bytes with zeros, in a way no compiler removes. */
void rt_transport_wipe_secret(void *secret, size_t len);

/* The transport names ("auto", "tcp", "ib", "rdma" = ib): option choices
 * (ground/opts.h) and what rt_transport_kind_parse accepts. */
extern const rt_opt_choice rt_transport_kinds[];
int rt_transport_kind_parse(const char *s, rt_transport_kind *out);

/* True when an RDMA device with an active port is usable on this machine
 * (used by AUTO; writes a one-line reason into why when it is not). */
int rt_transport_ib_available(char *why, size_t why_len);

#endif
