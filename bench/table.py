#!/usr/bin/env python3
"""table.py - the README's markdown tables from the benches' JSON.

  bench/table.py scale FILE.json...   the Scaling validation table
  bench/table.py lda FILE.json...     the LDA-next-to-WarpLDA table

scale: FILE holds bench/scale.sh's JSON lines (a live run's or a
--repredict's; lines that are not a configuration's, such as --auto's, are
skipped).  One file: one row per configuration (app, ranks x threads, Gb/s,
added one-way latency with the measured one in parentheses, measured and
predicted epoch, error, measured and predicted stall, points, the same
errors given the measured compute, load), **x** on a miss of issue 16's
limits (epoch within 15%, stall within 5 points), then the counts line.
Several files (runs of the same configurations): a table of each row's
spread across the runs (measured and predicted stall per run, the stall
error's min and max, the measured epoch's range, how many runs met both
limits) and each file's counts line.

lda: FILE holds bench/lda.sh's JSON (one object; several concatenated are
read too).  One row per (corpus, K, rotor sampler): tokens/s ratio to
WarpLDA with both medians in M tokens/s, peak RSS both in MB (10^6 bytes)
and their ratio, the time to WarpLDA's final log-likelihood over WarpLDA's
time, and both log-likelihoods per token after the last iteration.  Rows of
several files are sorted by corpus (KOS, AP, synthetic) and K.

A null or missing figure prints as "-".  Python 3 standard library only.
"""
import argparse
import json
import sys

EPOCH_LIMIT = 0.15  # issue 16: |predicted - measured| / measured epoch
STALL_LIMIT = 0.05  # issue 16: |predicted - measured| stall, 5 points
DASH = "-"


def json_values(path):
    """Every JSON object in PATH: JSON lines, one object, or several
    concatenated; text that is not JSON is skipped a line at a time."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    dec, pos, out = json.JSONDecoder(), 0, []
    while pos < len(text):
        while pos < len(text) and text[pos].isspace():
            pos += 1
        if pos >= len(text):
            break
        try:
            value, pos = dec.raw_decode(text, pos)
        except ValueError:
            nl = text.find("\n", pos)
            pos = len(text) if nl < 0 else nl + 1
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def num(x):
    """A JSON number, or None (null, missing, a string such as "nan")."""
    return x if isinstance(x, (int, float)) and not isinstance(x, bool) else None


def fmt(x, spec, suffix=""):
    return DASH if x is None else format(x, spec) + suffix


def table(header, rows):
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


# ---- scale


def scale_rows(path):
    return [r for r in json_values(path) if "measured_epoch_s" in r and "app" in r]


def rel(measured, other):
    m, o = num(measured), num(other)
    return (o - m) / m if m is not None and o is not None and m != 0 else None


def diff(measured, other):
    m, o = num(measured), num(other)
    return o - m if m is not None and o is not None else None


def epoch_err(r):
    """Predicted over measured epoch, -1; from the raw figures (the JSON's
    epoch_error is rounded to 0.1%), else that field."""
    e = rel(r.get("measured_epoch_s"), r.get("predicted_epoch_s"))
    return e if e is not None else num(r.get("epoch_error"))


def stall_err(r):
    s = diff(r.get("measured_stall"), r.get("predicted_stall"))
    return s if s is not None else num(r.get("stall_error"))


def given_errs(r):
    return (rel(r.get("measured_epoch_s"), r.get("epoch_given_measured_compute_s")),
            diff(r.get("measured_stall"), r.get("stall_given_measured_compute")))


def printed(x):
    """A fraction as the tables print it, in percent or points to 0.1."""
    return None if x is None else float(format(x * 100, ".1f"))


def within(e, s):
    """(epoch within, stall within), judged on the figures as printed, so a
    row that reads +15.0% or -5.0 is within and +15.1% is not, whichever
    side of the limit the unrounded value fell ((1.035 - 0.9) / 0.9 is
    0.15000000000000002); None counts as a miss."""
    pe, ps = printed(e), printed(s)
    return (pe is not None and abs(pe) <= EPOCH_LIMIT * 100,
            ps is not None and abs(ps) <= STALL_LIMIT * 100)


def counts(rows):
    n = len(rows)
    ep = st = both = given = 0
    for r in rows:
        a, b = within(epoch_err(r), stall_err(r))
        ga, gb = within(*given_errs(r))
        ep, st, both, given = ep + a, st + b, both + (a and b), given + (ga and gb)
    return (f"epoch within 15%: {ep}/{n}; stall within 5 points: {st}/{n}; both: {both}/{n}; "
            f"given measured compute both: {given}/{n}")


def g(x):
    """A rate or latency as the README writes it: 0.25, 1, 97.7."""
    return DASH if num(x) is None else format(round(x, 2), "g")


def scale_cells(r):
    e, s = epoch_err(r), stall_err(r)
    ok_e, ok_s = within(e, s)
    ge, gs = given_errs(r)
    ms, ps = num(r.get("measured_stall")), num(r.get("predicted_stall"))
    load = r.get("loadavg")  # "1.46 1.30 1.2 ...", "", "  " or null
    load = ("" if load is None else str(load)).split()
    load = load[0] if load else DASH
    return [str(r.get("app", DASH)), f"{r.get('ranks', DASH)} x {r.get('threads', DASH)}",
            g(r.get("gbps")), f"+{g(r.get('added_latency_us'))} us ({g(r.get('latency_us'))} us)",
            fmt(num(r.get("measured_epoch_s")), ".3f", " s"),
            fmt(num(r.get("predicted_epoch_s")), ".3f", " s"),
            fmt(None if e is None else e * 100, "+.1f", "%") + ("" if ok_e else " **x**"),
            fmt(None if ms is None else ms * 100, ".1f", "%"),
            fmt(None if ps is None else ps * 100, ".1f", "%"),
            fmt(None if s is None else s * 100, "+.1f") + ("" if ok_s else " **x**"),
            fmt(None if ge is None else ge * 100, "+.1f", "%") + ", "
            + fmt(None if gs is None else gs * 100, "+.1f"), load]


SCALE_HEADER = ["app", "ranks x threads", "Gb/s", "added latency (one-way)", "measured epoch",
                "predicted", "error", "measured stall", "predicted stall", "points",
                "given measured compute: epoch, stall", "load"]


def row_key(r):
    return (r.get("app"), r.get("ranks"), r.get("threads"), r.get("pipeline"), r.get("gbps"),
            r.get("added_latency_us"))


def row_label(r):
    label = f"{r.get('app')} {r.get('ranks')}x{r.get('threads')} {g(r.get('gbps'))}"
    if r.get("pipeline") not in (None, 2):
        label += f" c{r.get('pipeline')}"
    if num(r.get("added_latency_us")):
        label += f" +{g(r.get('added_latency_us'))}"
    return label


def pct_list(xs, spec):
    return ", ".join(fmt(None if x is None else x * 100, spec) for x in xs)


def spread_cells(runs):
    """One configuration's figures over the runs that have it."""
    ms = [num(r.get("measured_stall")) for r in runs]
    ps = [num(r.get("predicted_stall")) for r in runs]
    errs = [x for x in (stall_err(r) for r in runs) if x is not None]
    have = [x for x in ms if x is not None]
    ep = [x for x in (num(r.get("measured_epoch_s")) for r in runs) if x is not None]
    both = sum(all(within(epoch_err(r), stall_err(r))) for r in runs)
    return [pct_list(ms, ".1f"),
            fmt((max(have) - min(have)) * 100 if have else None, ".1f"),
            pct_list(ps, ".1f"), pct_list([stall_err(r) for r in runs], "+.1f"),
            f"{min(errs) * 100:+.1f} / {max(errs) * 100:+.1f}" if errs else DASH,
            f"{min(ep):.3f}-{max(ep):.3f} s ({(max(ep) - min(ep)) / min(ep) * 100:.0f}%)"
            if ep and min(ep) > 0 else DASH,
            f"{both}/{len(runs)}"]


SPREAD_HEADER = ["row", "measured stall per run", "range", "predicted stall per run",
                 "stall error per run (points)", "stall error min / max", "measured epoch range",
                 "both limits"]


def cmd_scale(files):
    per_file = [(f, scale_rows(f)) for f in files]
    for f, rows in per_file:
        if not rows:
            raise ValueError(f"{f}: no configuration of bench/scale.sh's JSON lines")
    if len(files) == 1:
        rows = per_file[0][1]
        print(table(SCALE_HEADER, [scale_cells(r) for r in rows]))
        print()
        print(counts(rows))
        return 0
    order, runs = [], {}
    for _, rows in per_file:
        for r in rows:
            k = row_key(r)
            if k not in runs:
                order.append(k)
                runs[k] = []
            runs[k].append(r)
    print(table(SPREAD_HEADER, [[row_label(runs[k][0])] + spread_cells(runs[k]) for k in order]))
    print()
    for f, rows in per_file:
        print(f"{f}: {counts(rows)}")
    return 0


# ---- lda

CORPUS_ORDER = ["kos", "ap", "synthetic"]


def corpus_name(row):
    c = row.get("corpus")
    if c == "kos":
        return "UCI KOS"
    if c == "ap":
        return "AP"
    if c == "synthetic" and num(row.get("tokens")):
        return f"synthetic {row['tokens'] / 1e6:.0f}M tokens"
    return str(c)


def sampler_name(tool, K):
    """lda.sh's tool name as the README writes it; auto as the sampler it
    picks (apps: the dense kernel up to K = 384, warp to 512, sparse above)."""
    s = tool[len("rotor-"):] if tool.startswith("rotor-") else tool
    if s == "auto" and num(K) is not None:
        return ("dense" if K <= 384 else "warp" if K <= 512 else "sparse") + " (auto)"
    s = s.replace("-exact", "+exact").replace("-after", "+after")
    head, _, rest = s.partition("+")
    if "-m" in head:
        name, _, m = head.rpartition("-m")
        head = f"{name}:{m}"
    return head + ("+" + rest if rest else "")


def ll_at(tool, n):
    """The log-likelihood per token of the curve's point at iteration n."""
    pts = [p for p in (tool or {}).get("ll_curve", []) if p.get("iter") == n]
    return num(pts[0].get("ll_per_token")) if pts else None


def mega(x, spec):
    return fmt(None if num(x) is None else x / 1e6, spec)


def lda_cells(row, name, t, w, iters):
    K = row.get("topics")
    return [corpus_name(row), str(K if K is not None else DASH), sampler_name(name, K),
            f"{fmt(num(t.get('tokens_per_s_ratio_to_warplda')), '.2f')} "
            f"({mega(t.get('median_tokens_per_s'), '.1f')} / {mega(w.get('median_tokens_per_s'), '.1f')})",
            f"{mega(t.get('median_peak_rss_bytes'), '.1f')} / {mega(w.get('median_peak_rss_bytes'), '.1f')} MB"
            f" ({fmt(num(t.get('peak_rss_ratio_to_warplda')), '.2f')})",
            fmt(num(t.get("time_ratio_to_warplda_final_ll")), ".2f"),
            f"{fmt(ll_at(t, iters), '.3f')} / {fmt(ll_at(w, iters), '.3f')}"]


def cmd_lda(files):
    found, iters_seen = [], set()
    for f in files:
        for doc in json_values(f):
            if doc.get("benchmark") != "lda":
                continue
            iters = (doc.get("config") or {}).get("iters")
            iters_seen.add(iters)
            for row in doc.get("results", []):
                found.append((row, iters))
    if not found:
        raise ValueError(f"{', '.join(files)}: no result of bench/lda.sh's JSON")
    def order(item):
        c = item[0].get("corpus")
        return (CORPUS_ORDER.index(c) if c in CORPUS_ORDER else len(CORPUS_ORDER), str(c),
                num(item[0].get("topics")) or 0)
    found.sort(key=order)  # stable: a file's samplers keep their order
    rows = []
    for row, iters in found:
        tools = row.get("tools") or {}
        w = tools.get("warplda") or {}
        rows += [lda_cells(row, name, t or {}, w, iters) for name, t in tools.items() if name != "warplda"]
    # (mixed or unrecorded iteration counts: "N", and no LL point is picked)
    n = iters_seen.pop() if len(iters_seen) == 1 and None not in iters_seen else "N"
    print(table(["corpus", "K", "sampler", "tokens/s ratio (rotor / WarpLDA, M tokens/s)",
                 "peak RSS rotor / WarpLDA", "time to WarpLDA's LL",
                 f"LL after {n}: rotor / WarpLDA"], rows))
    return 0


def main(argv):
    ap = argparse.ArgumentParser(prog="table.py", description=__doc__.split("\n\n")[0],
                                 epilog=__doc__.split("\n\n", 1)[1],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="what", required=True)
    for name, help_ in (("scale", "bench/scale.sh's JSON lines"), ("lda", "bench/lda.sh's JSON")):
        p = sub.add_parser(name, help=help_)
        p.add_argument("files", nargs="+", metavar="FILE.json")
    args = ap.parse_args(argv)
    try:
        return cmd_scale(args.files) if args.what == "scale" else cmd_lda(args.files)
    except (OSError, ValueError) as e:
        print(f"table.py: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
