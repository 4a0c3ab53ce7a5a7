/* fuzz_wire_tcp.c - the TCP backend's frames (verbs/wire.h) as a peer could
 * send them.  The first byte picks the parser, the next few set the state
 * the frames are checked against, the rest are the bytes from the wire:
 *   0  hello:   rank, size, prev, then the hello
 *   1  verdict: purpose, n_slots, then the verdict
 *   2  ring frames from the previous rank, 3 credits from the next: slot
 *      bytes (2), n_slots, slots in use or credits held, then a stream of
 *      headers and payloads, or credit words, up to a failure message
 *   4  control header: expected length, then the header (or a stop)
 * Whatever a parser accepts must respect the limits it was given; a
 * violation traps.  tests/fuzz/wire_seeds.py writes the seeds from frames
 * captured on a real run. */
#include "tests/fuzz/fuzz.h"
#include "verbs/wire.h"

#include <string.h>
#include <unistr.h>

/* A relayed message is one line of valid UTF-8 (rt_one_line): no control
 * byte but a tab, nothing a terminal would obey. */
static void check_text(const void *buf, size_t len)
{
    char msg[WIRE_FAIL_MSG_MAX + 1];
    wire_fail_text(buf, len, msg, sizeof(msg));
    size_t n = strnlen(msg, sizeof(msg));
    if (n > WIRE_FAIL_MSG_MAX)
        __builtin_trap();
    for (size_t i = 0; i < n; i++) {
        unsigned char c = (unsigned char)msg[i];
        if ((c < 0x20 && c != '\t') || c == 0x7f)
            __builtin_trap();
    }
    if (u8_check((const uint8_t *)msg, n))
        __builtin_trap();
}

static void fuzz_hello(fuzz_input *in)
{
    uint8_t s[3];
    if (fuzz_take(in, s, sizeof(s)))
        return;
    wire_self self = {.rank = s[0] % 8, .size = 1 + s[1] % 8, .prev = s[2] % 8};
    wire_hello h;
    rt_error err = {0};
    char why[WIRE_WHY_BYTES];
    if (wire_hello_parse(in->p, in->left, &h, "peer", &err))
        return;
    if (h.magic != WIRE_MAGIC || h.version != WIRE_TCP_VERSION)
        __builtin_trap();
    if (wire_hello_check(&h, &self, why, sizeof(why)) == 0 &&
        (h.from < 0 || h.from >= self.size || h.from == self.rank || h.size != self.size ||
         h.to != self.rank))
        __builtin_trap();
}

static void fuzz_verdict(fuzz_input *in)
{
    uint8_t s[2];
    if (fuzz_take(in, s, sizeof(s)))
        return;
    int purpose = s[0] & 1 ? WIRE_CONN_RING : WIRE_CONN_CTRL;
    uint32_t n_slots = 2 + s[1] % 30;
    wire_verdict v;
    rt_error err = {0};
    int rc = wire_verdict_parse(in->p, in->left, purpose, n_slots, &v, "peer", &err);
    if (rc == 0 && (v.status != 0 || (purpose == WIRE_CONN_RING && v.initial_occupied >= n_slots)))
        __builtin_trap();
    if (in->left == sizeof(v) && strnlen(v.why, sizeof(v.why)) == sizeof(v.why))
        __builtin_trap(); /* the peer's reason must come out terminated */
    if (rc && strnlen(err.msg, sizeof(err.msg)) == sizeof(err.msg))
        __builtin_trap();
}

/* A relayed failure after a FAIL unit: its length from the unit or from a
 * uint32 that follows (credits), then its text. */
static void fuzz_fail(fuzz_input *in, const wire_msg *m)
{
    uint8_t head[WIRE_CREDIT_UNIT];
    uint64_t len = m->len;
    rt_error err = {0};
    if (m->len_follows && (fuzz_take(in, head, sizeof(head)) ||
                           wire_fail_len_parse(head, sizeof(head), &len, "peer", &err)))
        return;
    if (len > WIRE_FAIL_MSG_MAX)
        __builtin_trap();
    check_text(in->p, len < in->left ? (size_t)len : in->left);
}

/* Ring units as read_ring (tcp.c) reads them: block frames from the
 * previous rank (credits = 0) or credit words from the next. */
static void fuzz_ring(fuzz_input *in, int credits)
{
    uint8_t s[4];
    if (fuzz_take(in, s, sizeof(s)))
        return;
    wire_ring ring = {.slot_bytes = 1 + (size_t)(s[0] | s[1] << 8), .n_slots = 2 + s[2] % 30};
    ring.slots_in_use = s[3] % ring.n_slots;
    ring.credits = s[3] % (ring.n_slots + 1);
    size_t unit_len = credits ? WIRE_CREDIT_UNIT : WIRE_FRAME_UNIT;
    uint8_t unit[WIRE_FRAME_UNIT];
    while (fuzz_take(in, unit, unit_len) == 0) {
        wire_msg m;
        rt_error err = {0};
        if ((credits ? wire_credit_parse : wire_frame_parse)(unit, unit_len, &ring, &m, "peer",
                                                             &err))
            return;
        if (m.kind == WIRE_FAIL) {
            fuzz_fail(in, &m);
            return;
        }
        if (m.kind == WIRE_BLOCK) {
            if (credits || m.len > ring.slot_bytes || ring.slots_in_use >= ring.n_slots)
                __builtin_trap();
            if (fuzz_take(in, NULL, m.len < in->left ? (size_t)m.len : in->left))
                return;
            ring.slots_in_use++;
            if (m.block & 1) /* the engine passed a block on: its slot is free */
                ring.slots_in_use--;
        } else if (m.kind == WIRE_CREDITS) {
            ring.credits += m.count;
            if (!credits || m.count == 0 || ring.credits > ring.n_slots)
                __builtin_trap();
        }
        if (credits && ring.credits > 0) /* a pass takes one */
            ring.credits--;
    }
}

static void fuzz_ctl(fuzz_input *in)
{
    uint8_t s[1];
    if (fuzz_take(in, s, sizeof(s)))
        return;
    rt_error err = {0};
    uint64_t got, stop_len = 0;
    int rc = wire_ctl_len_parse(in->p, in->left, s[0], &stop_len, "peer", &err);
    if (rc == 0 && (in->left != sizeof(got) || (memcpy(&got, in->p, sizeof(got)), got != s[0])))
        __builtin_trap();
    if (rc == 1 && (stop_len == 0 || stop_len > WIRE_FAIL_MSG_MAX))
        __builtin_trap(); /* a stop's message is read into a buffer of that size */
}

static void fuzz_frames(fuzz_input *in)
{
    fuzz_ring(in, 0);
}

static void fuzz_credits(fuzz_input *in)
{
    fuzz_ring(in, 1);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static void (*const parsers[])(fuzz_input *) = {fuzz_hello, fuzz_verdict, fuzz_frames,
                                                    fuzz_credits, fuzz_ctl};
    fuzz_pick(data, size, parsers, sizeof(parsers) / sizeof(parsers[0]));
    return 0;
}
