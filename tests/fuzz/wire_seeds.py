#!/usr/bin/env python3
"""wire_seeds.py ROTOR - seeds for fuzz_wire_tcp and fuzz_wire_ib from real frames.

Runs a small 2-rank SGD-MF job over TCP on loopback under strace, cuts what
every connection sent into the frames of verbs/wire.h (hello, proof,
challenge, verdict, ring frames with their payloads, heartbeats, BYE,
credits, control messages) and writes each kind, prefixed with the state
bytes the fuzz targets expect (see their top comments), into
tests/fuzz/corpus/wire_tcp/.  The RDMA frames cannot be captured off the
wire here (no RDMA device), so their seeds are built from the same run's
window geometry with the layouts of wire.h: private data, window
description, credit, control, notice and heartbeat immediates, arrivals.
  tests/fuzz/wire_seeds.py build/tools/rotor
"""
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

MAGIC = 0x524F5452
HERE = os.path.dirname(os.path.abspath(__file__))
TCP_DIR = os.path.join(HERE, "corpus", "wire_tcp")
IB_DIR = os.path.join(HERE, "corpus", "wire_ib")


def run_job(rotor, tmp):
    """Train 2 ranks x 1 thread for 2 epochs under strace; return the trace path."""
    env = dict(os.environ, ROTOR_LOG="error")
    r = os.path.join(tmp, "r.txt")
    subprocess.run([rotor, "gen", "mf", "--rows", "40", "--cols", "24", "--nnz", "300",
                    "--rank", "2", "--seed", "3", "--out", r], check=True, env=env)
    plan = os.path.join(tmp, "plan")
    subprocess.run([rotor, "partition", "--input", r, "--nodes", "2", "--threads", "1",
                    "--seed", "3", "--out", plan], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    trace = os.path.join(tmp, "trace")
    subprocess.run(["strace", "-ff", "-ttt", "-qq", "-xx", "-s", "1000000", "-e",
                    "trace=sendto,sendmsg,close,clone,clone3", "-o", trace, rotor, "launch", "-n", "2", "--",
                    rotor, "train", "--plan", plan, "--app", "sgd-mf", "--rank", "2",
                    "--epochs", "2", "--transport", "tcp"], check=True, env=env,
                   stdout=subprocess.DEVNULL)
    return trace


def trace_lines(trace):
    """Every thread's lines (strace -ff writes TRACE.TID, whole calls), as
    "TID CALL..." in time order."""
    lines = []
    d, base = os.path.split(trace)
    for name in os.listdir(d):
        if name.startswith(base + "."):
            tid = name[len(base) + 1:]
            for line in open(os.path.join(d, name)):
                when, _, rest = line.partition(" ")
                lines.append((float(when), tid + " " + rest))
    return [l for _, l in sorted(lines)]


def streams(trace):
    """Bytes sent per connection (per process and fd, whichever thread sent
    them), in order: a list of byte strings."""
    done, open_, tgid = [], {}, {}
    line_re = re.compile(r"^(\d+)\s+(sendto|sendmsg|close|clone3?)\((\d*)")
    for line in trace_lines(trace):
        m = line_re.match(line)
        if not m or "= -1" in line or "<unfinished" in line or "resumed>" in line:
            continue
        tid, call = m.group(1), m.group(2)
        proc = tgid.get(tid, tid)
        if call.startswith("clone"):
            child = line.rsplit("=", 1)[1].split()[0]
            tgid[child] = proc if "CLONE_THREAD" in line else child
            continue
        key = (proc, m.group(3))
        if call == "close":
            if key in open_:
                done.append(open_.pop(key))
            continue
        sent = int(line.rsplit("=", 1)[1].split()[0])
        data = b"".join(bytes.fromhex(s.replace("\\x", ""))
                        for s in re.findall(r'"((?:\\x[0-9a-f]{2})*)"', line))
        open_[key] = open_.get(key, b"") + data[:sent]
    return done + list(open_.values())


def write(dirname, name, data):
    with open(os.path.join(dirname, name), "wb") as f:
        f.write(data)


def split_ctl(rest):
    """Control messages: (u64 length, bytes) until rest ends, or None."""
    msgs, off = [], 0
    while off + 8 <= len(rest):
        n = struct.unpack_from("<Q", rest, off)[0]
        if n > len(rest) - off - 8:
            return None
        msgs.append(rest[off:off + 8 + n])
        off += 8 + n
    return msgs if off == len(rest) and msgs else None


def tcp_seeds(conns):
    """Write the TCP seeds; return the window geometry (slot bytes, n_slots)."""
    count, geometry = {}, (4096, 2)

    def seed(kind, data):
        count[kind] = count.get(kind, 0) + 1
        if count[kind] <= 3:
            write(TCP_DIR, "%s-%d.bin" % (kind, count[kind]), data)

    ring_frames, credit_words, verdicts = [], [], []
    for s in conns:
        if len(s) >= 40 and struct.unpack_from("<I", s)[0] == MAGIC:  # connector
            _, _, purpose, frm, to, size = struct.unpack_from("<IHHiii", s)
            seed("hello", bytes([0, to % 256, (size - 1) % 256, (to - 1) % size]) + s[:40])
            rest = s[40 + 32:]
            if purpose == 1:
                ring_frames.append(rest)
            else:
                for msg in (split_ctl(rest) or [])[:2]:
                    seed("ctl", bytes([4, (len(msg) - 8) % 256]) + msg[:8])
        elif len(s) >= 48 + 208:  # acceptor: challenge, verdict, then credits or control
            verdict, rest = s[48:48 + 208], s[48 + 208:]
            verdicts.append(verdict)
            if split_ctl(rest) is None and len(rest) % 4 == 0:
                credit_words.append(rest)
    for v in verdicts:
        seed("verdict", bytes([1, 1, 2]) + v)  # a ring of 4 slots
    for rest in ring_frames:
        # The largest block sent tells the slot size closely enough.
        off, biggest, frames = 0, 0, []
        while off + 24 <= len(rest):
            typ, _, _, _, n = struct.unpack_from("<IIIIQ", rest, off)
            frames.append(rest[off:off + 24 + n])
            biggest = max(biggest, n if typ == 0xB10C else 0)
            off += 24 + n
        slot = max(biggest, 1)
        geometry = (slot, 2 + 2)
        head = bytes([2, (slot - 1) & 0xFF, (slot - 1) >> 8 & 0xFF, 2, 0])
        seed("frames", head + b"".join(frames[:4]))
        seed("frames", head + b"".join(frames[-4:]))  # the end: BYE
        fail = struct.pack("<IIIIQ", 0xFA11, 0, 0, 0, 38) + b"lost rank 1 (127.0.0.1:18516): silent"
        seed("frames-fail", head + frames[0] + fail)
    for words in credit_words:
        seed("credits", bytes([3, 0, 0, 2, 0]) + words[:64])
        msg = b"lost rank 0 (127.0.0.1:18515): connection reset by peer"
        seed("credits-fail", bytes([3, 0, 0, 2, 1]) + struct.pack("<II", 0xFFFFFFFE, len(msg)) + msg)
    print("wire_tcp seeds: %s" % ", ".join("%s %d" % kv for kv in sorted(count.items())))
    return geometry


def ib_seeds(slot_bytes, n_slots):
    """RDMA frames with the layouts of wire.h and the run's geometry."""
    imm = lambda kind, n: kind << 30 | (n & 0x3FFFFFFF)
    notice = lambda sort, rank: imm(0, sort << 28 | rank)
    for rank in (0, 1):
        write(IB_DIR, "hello-%d.bin" % rank,
              bytes([0, 1]) + struct.pack("<IHHHBB", MAGIC, 2, rank, 2, 5, 0))
    window = struct.pack("<QQIIII", 0x7F3A5C000000, slot_bytes, 0x1234, n_slots, 1, 0)
    write(IB_DIR, "window.bin", bytes([1]) + window)
    recs = [(1, imm(1, 1), 0), (1, imm(2, 8), 0), (1, imm(3, 16), 16), (1, imm(3, 4096), 4096),
            (1, notice(2, 1), 0), (1, notice(0, 1), 0), (1, notice(1, 3), 0)]
    stream = b"".join(struct.pack("<BII", f | 0xE, i, n) for f, i, n in recs)
    write(IB_DIR, "recvs.bin", bytes([2, 0, n_slots - 2, 1]) + stream)
    arrivals = b""
    for k in range(6):
        slot = (1 + k) % n_slots
        arrivals += struct.pack("<I", (slot & 0xFF) << 24 | k)
        arrivals += struct.pack("<IIQQ", k % 4, k // 4, slot_bytes, k) + bytes([1])
    write(IB_DIR, "arrivals.bin",
          bytes([3, n_slots - 2, 1, slot_bytes & 0xFF, slot_bytes >> 8 & 0xFF]) + arrivals)
    print("wire_ib seeds: 6 files")


def main():
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    rotor = os.path.realpath(sys.argv[1])
    for d in (TCP_DIR, IB_DIR):
        shutil.rmtree(d, ignore_errors=True)
        os.makedirs(d)
    with tempfile.TemporaryDirectory() as tmp:
        conns = streams(run_job(rotor, tmp))
    slot, n_slots = tcp_seeds(conns)
    ib_seeds(min(slot, 0xFFFF), n_slots)


if __name__ == "__main__":
    main()
