/* wire.c - parsers of the frames both backends exchange (see wire.h). */
#include "verbs/wire.h"

#include <stdio.h>
#include <string.h>

/* A frame whose size is not what its type says: a caller bug or a broken
 * stream, reported like any other protocol error. */
static int bad_size(const char *what, size_t len, size_t want, const char *peer, rt_error *err)
{
    return rt_fail(err, RT_EXIT_RUNTIME, "lost %s: protocol error: %zu-byte %s (expected %zu)",
                   peer, len, what, want);
}

/* Copy a fixed-size unit of `want` bytes out of buf[0..len). */
static int take_unit(const void *buf, size_t len, void *unit, size_t want, const char *what,
                     const char *peer, rt_error *err)
{
    if (len != want)
        return bad_size(what, len, want, peer, err);
    memcpy(unit, buf, want);
    return 0;
}

/* ---- TCP handshake ---- */

int wire_hello_parse(const void *buf, size_t len, wire_hello *out, const char *peer, rt_error *err)
{
    if (len != sizeof(*out))
        return rt_fail(err, RT_EXIT_RUNTIME, "%s is not a rotor peer (%zu-byte hello)", peer, len);
    memcpy(out, buf, sizeof(*out));
    if (out->magic != WIRE_MAGIC)
        return rt_fail(err, RT_EXIT_RUNTIME, "%s is not a rotor peer", peer);
    if (out->version != WIRE_TCP_VERSION)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "%s speaks another rotor protocol version (%u, ours %u)", peer, out->version,
                       WIRE_TCP_VERSION);
    return 0;
}

int wire_hello_check(const wire_hello *h, const wire_self *self, char *why, size_t cap)
{
    int from = h->from;
    if (h->size != self->size)
        snprintf(why, cap, "group size %d, rank %d has %d (different hostfiles?)", h->size,
                 self->rank, self->size);
    else if (h->to != self->rank)
        snprintf(why, cap,
                 "connected to rank %d's address believing it rank %d (hostfile "
                 "mismatch?)",
                 self->rank, h->to);
    else if (from < 0 || from >= self->size || from == self->rank)
        snprintf(why, cap, "bad sender rank %d", from);
    else if (h->purpose != WIRE_CONN_RING && h->purpose != WIRE_CONN_CTRL)
        snprintf(why, cap, "unknown connection purpose %u", h->purpose);
    else if (h->purpose == WIRE_CONN_RING && from != self->prev)
        snprintf(why, cap, "ring connection from rank %d, expected it from rank %d", from,
                 self->prev);
    else if (h->purpose == WIRE_CONN_CTRL && from < self->rank)
        snprintf(why, cap, "control connection from lower rank %d", from);
    else
        return 0;
    return -1;
}

int wire_verdict_parse(const void *buf, size_t len, int purpose, uint32_t n_slots,
                       wire_verdict *out, const char *peer, rt_error *err)
{
    if (take_unit(buf, len, out, sizeof(*out), "verdict", peer, err))
        return -1;
    /* The reason is text from the peer: terminated here, whatever it sent,
     * and only printable bytes reach our message. */
    char why[WIRE_WHY_BYTES];
    wire_fail_text(out->why, strnlen(out->why, sizeof(out->why)), why, sizeof(why));
    memcpy(out->why, why, sizeof(why));
    if (out->status != 0)
        return rt_fail(err, RT_EXIT_INPUT, "%s rejected our connection: %s", peer,
                       out->why[0] ? out->why : "(no reason given)");
    if (purpose == WIRE_CONN_RING && out->initial_occupied >= n_slots)
        return rt_fail(err, RT_EXIT_INPUT, "protocol error: %s starts with %u of %u slots occupied",
                       peer, out->initial_occupied, n_slots);
    return 0;
}

/* ---- TCP ring frames ---- */

int wire_frame_parse(const void *buf, size_t len, const wire_ring *ring, wire_msg *out,
                     const char *peer, rt_error *err)
{
    wire_frame_hdr h = {0};
    memset(out, 0, sizeof(*out));
    if (take_unit(buf, len, &h, sizeof(h), "frame header", peer, err))
        return -1;
    switch (h.type) {
    case WIRE_FRAME_BEAT:
    case WIRE_FRAME_BYE:
        if (h.len != 0)
            break;
        out->kind = h.type == WIRE_FRAME_BEAT ? WIRE_BEAT : WIRE_BYE;
        return 0;
    case WIRE_FRAME_FAIL:
        /* Only the first WIRE_FAIL_MSG_MAX bytes are kept; a longer message
         * is a protocol error rather than a reason to read without end. */
        if (h.len > WIRE_FAIL_MSG_MAX || (h.block != WIRE_FAIL_LOST && h.block != WIRE_FAIL_STOP))
            break;
        out->kind = WIRE_FAIL;
        out->len = h.len;
        out->stop = h.block == WIRE_FAIL_STOP;
        return 0;
    case WIRE_FRAME_BLOCK:
        if (h.len > ring->slot_bytes)
            break;
        if (ring->slots_in_use >= ring->n_slots)
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "lost %s: protocol error: block %u arrived with all %u slots in use",
                           peer, h.block, ring->n_slots);
        out->kind = WIRE_BLOCK;
        out->block = h.block;
        out->epoch = h.epoch;
        out->len = h.len;
        return 0;
    }
    return rt_fail(err, RT_EXIT_RUNTIME,
                   "lost %s: protocol error: bad frame (type %#x, %llu bytes; slots hold %zu)",
                   peer, h.type, (unsigned long long)h.len, ring->slot_bytes);
}

int wire_credit_parse(const void *buf, size_t len, const wire_ring *ring, wire_msg *out,
                      const char *peer, rt_error *err)
{
    uint32_t c = 0;
    memset(out, 0, sizeof(*out));
    if (take_unit(buf, len, &c, sizeof(c), "credit", peer, err))
        return -1;
    if (c == WIRE_CREDIT_BEAT || c == WIRE_CREDIT_BYE) {
        out->kind = c == WIRE_CREDIT_BEAT ? WIRE_BEAT : WIRE_BYE;
        return 0;
    }
    if (c == WIRE_CREDIT_FAIL || c == WIRE_CREDIT_STOP) {
        out->kind = WIRE_FAIL;
        out->len_follows = 1;
        out->stop = c == WIRE_CREDIT_STOP;
        return 0;
    }
    if (c == 0 || (uint64_t)ring->credits + c > ring->n_slots)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "lost %s: protocol error: %u credits on top of %u (window of %u)", peer, c,
                       ring->credits, ring->n_slots);
    out->kind = WIRE_CREDITS;
    out->count = c;
    return 0;
}

int wire_fail_len_parse(const void *buf, size_t len, uint64_t *out, const char *peer, rt_error *err)
{
    uint32_t n = 0;
    if (take_unit(buf, len, &n, sizeof(n), "failure length", peer, err))
        return -1;
    if (n > WIRE_FAIL_MSG_MAX)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "lost %s: protocol error: a %u-byte failure message (limit %d)", peer, n,
                       WIRE_FAIL_MSG_MAX);
    *out = n;
    return 0;
}

int wire_fail_text(const void *buf, size_t len, char *msg, size_t cap)
{
    if (cap == 0)
        return -1;
    /* The one owner of message text (rt_one_line) makes it one line: text
     * in another script (a file name "données.txt") stays readable, a
     * control or broken byte is escaped; a NUL would end it, so it shows. */
    char raw[WIRE_FAIL_MSG_MAX + 1];
    size_t n = len < WIRE_FAIL_MSG_MAX ? len : WIRE_FAIL_MSG_MAX;
    memcpy(raw, buf, n);
    for (size_t i = 0; i < n; i++)
        raw[i] = raw[i] ? raw[i] : '?';
    raw[n] = '\0';
    return rt_one_line(msg, cap, raw) ? 0 : -1;
}

int wire_ctl_len_parse(const void *buf, size_t len, size_t expect, uint64_t *stop_len,
                       const char *peer, rt_error *err)
{
    uint64_t n = 0;
    if (take_unit(buf, len, &n, sizeof(n), "control header", peer, err))
        return -1;
    if (n & WIRE_CTL_STOP) {
        n &= ~WIRE_CTL_STOP;
        if (n == 0 || n > WIRE_FAIL_MSG_MAX)
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "protocol error: %s stopped with a %llu-byte message (1 to %d)", peer,
                           (unsigned long long)n, WIRE_FAIL_MSG_MAX);
        *stop_len = n;
        return 1;
    }
    if (n != expect)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "protocol error: %s sent a %llu-byte control message where %zu bytes were "
                       "expected (collectives called in different orders?)",
                       peer, (unsigned long long)n, expect);
    return 0;
}

/* ---- RDMA ---- */

uint32_t wire_ib_imm(int kind, uint32_t n)
{
    return (uint32_t)kind << 30 | (n & 0x3fffffffu);
}

uint32_t wire_ib_notice(int sort, int rank)
{
    return wire_ib_imm(WIRE_IMM_NOTICE, (uint32_t)sort << 28 | ((uint32_t)rank & 0xffffu));
}

uint32_t wire_ib_pass_imm(uint32_t slot, uint64_t seq)
{
    return (slot & 0xffu) << 24 | (uint32_t)(seq & 0xffffffu);
}

int wire_ib_hello_parse(const void *buf, size_t len, int size, wire_ib_hello *out, rt_error *err)
{
    if (!buf || len < sizeof(*out))
        return rt_fail(err, RT_EXIT_RUNTIME, "ib: connection without rotor hello (%zu bytes)",
                       buf ? len : 0);
    memcpy(out, buf, sizeof(*out));
    if (out->magic != WIRE_MAGIC || out->version != WIRE_IB_VERSION)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "ib: connection from something that is not rotor "
                       "(or another protocol version)");
    if (out->size != size || out->rank >= size)
        return rt_fail(err, RT_EXIT_INPUT, "ib: rank %u thinks there are %u ranks, we have %d",
                       out->rank, out->size, size);
    if (out->mtu < 1 || out->mtu > 5) /* IBV_MTU_256 .. IBV_MTU_4096 */
        return rt_fail(err, RT_EXIT_RUNTIME, "ib: rank %u sent an unknown port MTU (%u)", out->rank,
                       out->mtu);
    return 0;
}

int wire_ib_window_parse(const void *buf, size_t len, wire_ib_window *out, const char *peer,
                         rt_error *err)
{
    if (take_unit(buf, len, out, sizeof(*out), "window description", peer, err))
        return -1;
    /* The whole window (slots and metadata) must be addressable. */
    uint64_t meta = 2 * (uint64_t)out->n_slots * 64;
    if (out->n_slots < 2 || out->initial_occupied >= out->n_slots || out->slot_bytes == 0 ||
        out->slot_bytes > (UINT64_MAX - meta) / out->n_slots ||
        out->addr > UINT64_MAX - meta - out->slot_bytes * out->n_slots)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "ib: %s sent a bad window description (%u slots, %u occupied, %llu bytes "
                       "each)",
                       peer, out->n_slots, out->initial_occupied,
                       (unsigned long long)out->slot_bytes);
    return 0;
}

int wire_ib_recv_parse(int has_imm, uint32_t imm, uint32_t byte_len, const wire_ib_state *st,
                       wire_ib_msg *out, const char *peer, rt_error *err)
{
    memset(out, 0, sizeof(*out));
    if (!has_imm)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "ib: protocol error: unexpected message without immediate from %s", peer);
    out->kind = (int)(imm >> 30);
    out->n = imm & 0x3fffffffu;
    switch (out->kind) {
    case WIRE_IMM_SLOT_CREDIT:
        if (!st->from_next || out->n == 0 || (uint64_t)st->credits + out->n > st->n_slots)
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "ib: protocol error: %u slot credits from %s on top of %u (window of "
                           "%u)",
                           out->n, peer, st->credits, st->n_slots);
        return 0;
    case WIRE_IMM_CTRL_CREDIT:
        if (out->n == 0 || (uint64_t)st->ctrl_credits + out->n > st->ctrl_max)
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "ib: protocol error: %u control credits from %s on top of %u (of %u)",
                           out->n, peer, st->ctrl_credits, st->ctrl_max);
        return 0;
    case WIRE_IMM_CTRL_DATA:
        if (out->n != byte_len || out->n == 0 || out->n > st->chunk_max ||
            st->chunks_held >= st->chunks_max)
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "ib: protocol error: a %u-byte control chunk from %s says %u bytes",
                           byte_len, peer, out->n);
        return 0;
    default: /* WIRE_IMM_NOTICE */
        out->notice = (int)((imm >> 28) & 3);
        out->lost = (int)(imm & 0xffff);
        /* only a LOST notice has bytes: the failure message of a sender
         * that stopped on its own error */
        if (out->notice > WIRE_NOTICE_BEAT ||
            (byte_len != 0 && (out->notice != WIRE_NOTICE_LOST || byte_len > WIRE_FAIL_MSG_MAX)))
            return rt_fail(err, RT_EXIT_RUNTIME,
                           "ib: protocol error: unexpected message (imm 0x%08x, %u bytes) from %s",
                           imm, byte_len, peer);
        if (out->notice == WIRE_NOTICE_LOST && out->lost >= st->size)
            out->lost = -1; /* the sender itself is the one to blame */
        return 0;
    }
}

int wire_ib_arrival_parse(uint32_t imm, const wire_ib_meta *meta, const wire_ib_ring *ring,
                          uint32_t *slot, const char *peer, rt_error *err)
{
    uint32_t want = (uint32_t)((ring->initial_occupied + ring->received) % ring->n_slots);
    if (imm != wire_ib_pass_imm(want, ring->received))
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "ib: protocol error: pass #%llu from %s has immediate 0x%08x (expected "
                       "slot %u, sequence %llu)",
                       (unsigned long long)ring->received, peer, imm, want,
                       (unsigned long long)ring->received);
    /* The length against the slot, the count of blocks held against the
     * window. */
    if (meta->len > ring->slot_bytes || ring->received - ring->delivered >= ring->n_slots)
        return rt_fail(err, RT_EXIT_RUNTIME,
                       "ib: protocol error: pass #%llu from %s says %llu bytes (slots hold %zu) "
                       "with %llu arrivals not yet taken (window of %u)",
                       (unsigned long long)ring->received, peer, (unsigned long long)meta->len,
                       ring->slot_bytes, (unsigned long long)(ring->received - ring->delivered),
                       ring->n_slots);
    *slot = want;
    return 0;
}
