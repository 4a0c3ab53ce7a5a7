"""lda_metrics.py - how bench/lda.sh and bench/lda_ab.sh read a rotor LDA
run's metrics file (`rotor train --metrics`), so both read the same window."""
import json


def window_record(path, iters):
    """The record of sweep ITERS: with --eval-every ITERS/2 its tokens_per_s
    and step split cover sweeps ITERS/2+1 .. ITERS.  None when the run did
    not reach it."""
    with open(path) as f:
        last = [e for e in json.load(f)["epochs"] if e["iter"] == iters]
    return last[0] if last else None


def window_tokens_per_s(path, iters):
    rec = window_record(path, iters)
    return rec["tokens_per_s"] if rec else None
