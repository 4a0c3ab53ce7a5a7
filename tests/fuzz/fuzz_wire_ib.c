/* fuzz_wire_ib.c - the RDMA backend's frames (verbs/wire.h) as a peer could
 * send them.  The first byte picks the parser, the next few set the state
 * the frames are checked against, the rest are the bytes from the wire:
 *   0  rdma_cm private data: group size, then the data (empty = none)
 *   1  window description (after authentication)
 *   2  receive completions: group size, the next rank's n_slots (0 = not
 *      known yet), whether the sender is the next rank; then records of
 *      {flags, immediate (4), byte_len (4)}; flags bit 0 = has an
 *      immediate, bits 1..3 = which credits or chunks the rank uses up
 *      before the next record
 *   3  ring-pass arrivals: n_slots, initial_occupied, slot bytes (2), then
 *      records of {immediate (4), metadata (24), deliver (1)}
 * Whatever a parser accepts must respect the limits it was given; a
 * violation traps. */
#include "tests/fuzz/fuzz.h"
#include "verbs/wire.h"

#include <string.h>

static void fuzz_hello(fuzz_input *in)
{
    uint8_t s[1];
    if (fuzz_take(in, s, sizeof(s)))
        return;
    int size = 1 + s[0] % 16;
    wire_ib_hello h;
    rt_error err = {0};
    if (wire_ib_hello_parse(in->left ? in->p : NULL, in->left, size, &h, &err) == 0 &&
        (h.rank >= size || h.size != size || h.mtu < 1 || h.mtu > 5))
        __builtin_trap();
}

static void fuzz_window(fuzz_input *in)
{
    wire_ib_window w;
    rt_error err = {0};
    if (wire_ib_window_parse(in->p, in->left, &w, "peer", &err))
        return;
    if (w.n_slots < 2 || w.initial_occupied >= w.n_slots || w.slot_bytes == 0)
        __builtin_trap();
    /* The last metadata entry's end must not wrap. */
    unsigned __int128 end = (unsigned __int128)w.addr +
                            (unsigned __int128)w.slot_bytes * w.n_slots + 2ull * w.n_slots * 64;
    if (end > UINT64_MAX)
        __builtin_trap();
}

static void fuzz_recvs(fuzz_input *in)
{
    uint8_t s[3];
    if (fuzz_take(in, s, sizeof(s)))
        return;
    wire_ib_state st = {.size = 2 + s[0] % 15,
                        .n_slots = s[1] ? 2 + s[1] % 30 : 0,
                        .from_next = s[2] & 1,
                        .ctrl_credits = 16,
                        .ctrl_max = 16,
                        .chunk_max = 16 * 1024,
                        .chunks_max = 64};
    uint8_t rec[9];
    while (fuzz_take(in, rec, sizeof(rec)) == 0) {
        uint32_t imm, byte_len;
        memcpy(&imm, rec + 1, 4);
        memcpy(&byte_len, rec + 5, 4);
        wire_ib_msg m;
        rt_error err = {0};
        if (wire_ib_recv_parse(rec[0] & 1, imm, byte_len, &st, &m, "peer", &err))
            return;
        switch (m.kind) {
        case WIRE_IMM_SLOT_CREDIT:
            st.credits += m.n;
            if (!st.from_next || st.credits > st.n_slots)
                __builtin_trap();
            break;
        case WIRE_IMM_CTRL_CREDIT:
            st.ctrl_credits += m.n;
            if (st.ctrl_credits > st.ctrl_max)
                __builtin_trap();
            break;
        case WIRE_IMM_CTRL_DATA:
            if (m.n == 0 || m.n > st.chunk_max || m.n != byte_len ||
                st.chunks_held >= st.chunks_max)
                __builtin_trap();
            st.chunks_held++;
            break;
        case WIRE_IMM_NOTICE:
            if (m.notice > WIRE_NOTICE_BEAT ||
                (m.notice == WIRE_NOTICE_LOST && (m.lost < -1 || m.lost >= st.size)) ||
                (byte_len && (m.notice != WIRE_NOTICE_LOST || byte_len > WIRE_FAIL_MSG_MAX)))
                __builtin_trap();
            break;
        default:
            __builtin_trap();
        }
        if ((rec[0] & 2) && st.credits > 0)
            st.credits--;
        if ((rec[0] & 4) && st.ctrl_credits > 0)
            st.ctrl_credits--;
        if ((rec[0] & 8) && st.chunks_held > 0)
            st.chunks_held--;
    }
}

static void fuzz_arrivals(fuzz_input *in)
{
    uint8_t s[4];
    if (fuzz_take(in, s, sizeof(s)))
        return;
    wire_ib_ring ring = {.n_slots = 2 + s[0] % 30, .slot_bytes = (size_t)(s[2] | s[3] << 8)};
    ring.initial_occupied = s[1] % ring.n_slots;
    uint8_t rec[4 + sizeof(wire_ib_meta) + 1];
    while (fuzz_take(in, rec, sizeof(rec)) == 0) {
        uint32_t imm, slot;
        wire_ib_meta meta;
        memcpy(&imm, rec, 4);
        memcpy(&meta, rec + 4, sizeof(meta));
        rt_error err = {0};
        if (wire_ib_arrival_parse(imm, &meta, &ring, &slot, "peer", &err))
            return;
        if (slot >= ring.n_slots || meta.len > ring.slot_bytes ||
            ring.received - ring.delivered >= ring.n_slots)
            __builtin_trap();
        ring.received++;
        if (rec[sizeof(rec) - 1] & 1)
            ring.delivered++;
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static void (*const parsers[])(fuzz_input *) = {fuzz_hello, fuzz_window, fuzz_recvs,
                                                    fuzz_arrivals};
    fuzz_pick(data, size, parsers, sizeof(parsers) / sizeof(parsers[0]));
    return 0;
}
