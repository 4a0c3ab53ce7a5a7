/*
 * wire.h - the bytes the two backends exchange, and their parsers
 * (internal to verbs/).
 *
 * One owner for every frame that crosses a connection: the TCP handshake
 * (hello, challenge, proof, verdict), the TCP ring frames (block headers
 * from the previous rank, credits from the next) and control-message
 * headers, the rdma_cm connect private data, the RDMA window description
 * sent after authentication, and the immediates and pass metadata of RDMA
 * completions.  tcp.c and ib.c build frames with these types and read them
 * only through the parse functions below.
 *
 * The parse functions are pure (no I/O, no transport state beyond what is
 * passed in): they check every length, count and index that came from the
 * wire against the limits given, and on a bad frame return -1 with an
 * rt_error that names the peer (`peer` is the caller's description, such as
 * "rank 1 (10.0.0.2:18516)").  tests/fuzz/fuzz_wire_*.c feed them arbitrary
 * bytes.  Native byte order throughout (the magic catches a foreign peer),
 * except the RDMA immediates, which are network order on the wire and
 * host order here.
 */
#ifndef ROTOR_VERBS_WIRE_H
#define ROTOR_VERBS_WIRE_H

#include "ground/ground.h"
#include "verbs/auth.h"

#include <stddef.h>
#include <stdint.h>

#define WIRE_MAGIC 0x524f5452u /* "ROTR" */
#define WIRE_TCP_VERSION 3     /* 3: a failure says whether its sender stops (in order) */
#define WIRE_IB_VERSION 3      /* 3: a LOST notice may carry its sender's message */
#define WIRE_FAIL_MSG_MAX 1000 /* bytes of a relayed failure message */

/* ---- TCP handshake (tcp.c "connection setup") ---- */

enum { WIRE_CONN_RING = 1, WIRE_CONN_CTRL = 2 };

typedef struct wire_hello { /* connector -> acceptor; no padding (MAC'd as bytes) */
    uint32_t magic;
    uint16_t version;
    uint16_t purpose; /* WIRE_CONN_RING or WIRE_CONN_CTRL */
    int32_t from, to; /* sender's rank, the rank it believes it reached */
    int32_t size;
    uint32_t secure; /* the sender has a job secret (informational) */
    uint8_t nonce[AUTH_NONCE_BYTES];
} wire_hello;

typedef struct wire_challenge { /* acceptor -> connector */
    uint8_t nonce[AUTH_NONCE_BYTES];
    uint8_t tag[AUTH_TAG_BYTES]; /* the acceptor's answer to the hello's nonce */
} wire_challenge;

typedef struct wire_proof {      /* connector -> acceptor */
    uint8_t tag[AUTH_TAG_BYTES]; /* the connector's answer to the challenge's nonce */
} wire_proof;

#define WIRE_WHY_BYTES 200
typedef struct wire_verdict { /* acceptor -> authenticated connector */
    uint32_t status;          /* 0 accepted, 1 rejected (why says why) */
    uint32_t initial_occupied;
    char why[WIRE_WHY_BYTES]; /* NUL-terminated by the parser, whatever was sent */
} wire_verdict;

/* What a rank knows about itself when it judges a hello. */
typedef struct wire_self {
    int rank, size;
    int prev; /* the rank whose ring connection we accept */
} wire_self;

/* The hello in buf[0..len): 0 when it speaks our protocol (copied to *out),
 * -1 when it does not ("not a rotor peer" / "another rotor protocol
 * version" in err).  Checked before authentication, so nothing else. */
int wire_hello_parse(const void *buf, size_t len, wire_hello *out, const char *peer, rt_error *err);

/* Identity checks on an authenticated hello (group size, ranks, purpose);
 * the text for the verdict goes into why (cap bytes).  0 or -1. */
int wire_hello_check(const wire_hello *h, const wire_self *self, char *why, size_t cap);

/* A verdict in buf[0..len) for a connection of `purpose` to a rank whose
 * window has n_slots slots.  0 = accepted (*out set, why terminated);
 * -1 = rejected or malformed, with err naming the peer (exit code 2). */
int wire_verdict_parse(const void *buf, size_t len, int purpose, uint32_t n_slots,
                       wire_verdict *out, const char *peer, rt_error *err);

/* ---- TCP ring frames ---- */

/* From the previous rank: a header, then `len` payload bytes. */
enum {
    WIRE_FRAME_BLOCK = 0xB10C,
    WIRE_FRAME_BYE = 0xB7E,
    WIRE_FRAME_FAIL = 0xFA11,
    WIRE_FRAME_BEAT = 0xBEA7
};
/* What a failure message means (FRAME_FAIL's `block`; the credit word).
 * LOST: a relayed loss, which fails every rank at once.  STOP: the sender
 * stops, and this is the last thing it sends on the connection, after
 * everything it sent before (transport.h's ordering). */
enum { WIRE_FAIL_LOST = 0, WIRE_FAIL_STOP = 1 };
typedef struct wire_frame_hdr {
    uint32_t type;
    uint32_t block; /* FRAME_FAIL: WIRE_FAIL_LOST or WIRE_FAIL_STOP */
    uint32_t epoch;
    uint32_t reserved;
    uint64_t len; /* payload bytes (FRAME_FAIL: message bytes) */
} wire_frame_hdr;

/* From the next rank: a uint32 count of freed slots, or one of these.
 * WIRE_CREDIT_FAIL (a loss) and WIRE_CREDIT_STOP (the sender stops) are
 * followed by a uint32 length and the message. */
#define WIRE_CREDIT_BYE 0xFFFFFFFFu
#define WIRE_CREDIT_FAIL 0xFFFFFFFEu
#define WIRE_CREDIT_BEAT 0xFFFFFFFDu
#define WIRE_CREDIT_STOP 0xFFFFFFFCu

/* What one unit read from a ring connection means. */
typedef enum wire_kind {
    WIRE_BEAT = 1, /* heartbeat: only a sign of life */
    WIRE_BYE,      /* the peer closes normally */
    WIRE_FAIL,     /* a relayed failure message follows */
    WIRE_BLOCK,    /* a block of `len` bytes follows */
    WIRE_CREDITS,  /* `count` slots are free again */
} wire_kind;

typedef struct wire_msg {
    wire_kind kind;
    uint32_t block, epoch; /* WIRE_BLOCK */
    uint64_t len;          /* WIRE_BLOCK: payload bytes; WIRE_FAIL: message bytes (capped) */
    int len_follows;       /* WIRE_FAIL: a uint32 length precedes the message */
    int stop;              /* WIRE_FAIL: the sender stops (WIRE_FAIL_STOP), else a loss */
    uint32_t count;        /* WIRE_CREDITS */
} wire_msg;

/* The ring state a frame is checked against. */
typedef struct wire_ring {
    size_t slot_bytes; /* capacity of one slot */
    uint32_t n_slots;
    uint64_t slots_in_use; /* receiver: slots holding blocks (initial + received - freed) */
    uint32_t credits;      /* creditor: credits held now */
} wire_ring;

#define WIRE_FRAME_UNIT sizeof(wire_frame_hdr)
#define WIRE_CREDIT_UNIT sizeof(uint32_t)

/* A block-frame header from the previous rank (len = WIRE_FRAME_UNIT). */
int wire_frame_parse(const void *buf, size_t len, const wire_ring *ring, wire_msg *out,
                     const char *peer, rt_error *err);
/* A credit word from the next rank (len = WIRE_CREDIT_UNIT). */
int wire_credit_parse(const void *buf, size_t len, const wire_ring *ring, wire_msg *out,
                      const char *peer, rt_error *err);
/* The uint32 length before a WIRE_CREDIT_FAIL message. */
int wire_fail_len_parse(const void *buf, size_t len, uint64_t *out, const char *peer,
                        rt_error *err);
/* A relayed failure message of len bytes (at most WIRE_FAIL_MSG_MAX read),
 * as one line of text in msg (cap bytes, NUL-terminated; rt_one_line: valid
 * UTF-8 kept, control and broken bytes escaped \xNN, a NUL shown as '?').
 * Returns -1 for an empty message. */
int wire_fail_text(const void *buf, size_t len, char *msg, size_t cap);

/* A control message header (uint64): the length of a message, or
 * WIRE_CTL_STOP | n, the sender's last message: it stops, for the reason in
 * the n (1..WIRE_FAIL_MSG_MAX) bytes that follow.  Returns 0 for a message
 * of the length the receiver expects, 1 for a stop (*stop_len = n), -1
 * otherwise. */
#define WIRE_CTL_STOP (1ull << 63)
int wire_ctl_len_parse(const void *buf, size_t len, size_t expect, uint64_t *stop_len,
                       const char *peer, rt_error *err);

/* ---- RDMA ---- */

/* Connect/accept private data (fits the 56 bytes of an RC REQ).  Nothing in
 * it lets a peer touch our memory: the window goes only to authenticated
 * peers, in a wire_ib_window control message. */
typedef struct __attribute__((packed)) wire_ib_hello {
    uint32_t magic;
    uint16_t version, rank, size;
    uint8_t mtu; /* enum ibv_mtu of the sender's port */
    uint8_t pad;
} wire_ib_hello;

/* Where a rank's window is: sent to its previous rank (the one that writes
 * into it) after both have proven the job secret. */
typedef struct wire_ib_window {
    uint64_t addr; /* window base */
    uint64_t slot_bytes;
    uint32_t rkey;
    uint32_t n_slots, initial_occupied;
    uint32_t reserved;
} wire_ib_window;

/* Per-slot metadata of a pass, written next to the slots. */
typedef struct wire_ib_meta {
    uint32_t block, epoch;
    uint64_t len;
    uint64_t seq;
} wire_ib_meta;

/* Immediates of SEND_WITH_IMM (host order): bits 31..30 kind, 29..0 count
 * or bytes; a NOTICE keeps its sort in bits 29..28 and a rank in 15..0. */
enum {
    WIRE_IMM_NOTICE = 0,
    WIRE_IMM_SLOT_CREDIT = 1,
    WIRE_IMM_CTRL_CREDIT = 2,
    WIRE_IMM_CTRL_DATA = 3
};
enum { WIRE_NOTICE_BYE = 0, WIRE_NOTICE_LOST = 1, WIRE_NOTICE_BEAT = 2 };

uint32_t wire_ib_imm(int kind, uint32_t n);
uint32_t wire_ib_notice(int sort, int rank);
/* Ring pass: destination slot d and pass sequence k. */
uint32_t wire_ib_pass_imm(uint32_t slot, uint64_t seq);

/* The rdma_cm private data (buf may be NULL) of a peer in a group of `size`. */
int wire_ib_hello_parse(const void *buf, size_t len, int size, wire_ib_hello *out, rt_error *err);
/* A window description (len bytes) from `peer`. */
int wire_ib_window_parse(const void *buf, size_t len, wire_ib_window *out, const char *peer,
                         rt_error *err);

/* What a receive completion means. */
typedef struct wire_ib_msg {
    int kind;   /* WIRE_IMM_* */
    uint32_t n; /* credits, or chunk bytes */
    int notice; /* WIRE_NOTICE_*: for WIRE_IMM_NOTICE */
    int lost;   /* WIRE_NOTICE_LOST: the rank the peer lost (checked) */
} wire_ib_msg;

/* The receive state such a message is checked against. */
typedef struct wire_ib_state {
    int size;              /* group size */
    int from_next;         /* the sender is our next rank (slot credits) */
    uint32_t n_slots;      /* our window */
    uint32_t credits;      /* slot credits held now */
    uint32_t ctrl_credits; /* control credits held for this peer */
    uint32_t ctrl_max;     /* at most this many */
    uint32_t chunk_max;    /* bytes of a control chunk */
    uint32_t chunks_held;  /* chunks received, not yet consumed */
    uint32_t chunks_max;   /* receive buffers */
} wire_ib_state;

/* A SEND_WITH_IMM receive: has_imm, the immediate (host order) and the
 * bytes received. */
int wire_ib_recv_parse(int has_imm, uint32_t imm, uint32_t byte_len, const wire_ib_state *st,
                       wire_ib_msg *out, const char *peer, rt_error *err);

/* The ring state an RDMA arrival is checked against. */
typedef struct wire_ib_ring {
    uint32_t n_slots, initial_occupied;
    size_t slot_bytes;
    uint64_t received, delivered; /* passes received / taken by the engine */
} wire_ib_ring;

/* A WRITE_WITH_IMM arrival: immediate (host order) and the metadata the
 * peer wrote for it.  0 with *slot, or -1 naming the peer. */
int wire_ib_arrival_parse(uint32_t imm, const wire_ib_meta *meta, const wire_ib_ring *ring,
                          uint32_t *slot, const char *peer, rt_error *err);

#endif
