#!/usr/bin/env bash
# Stationary level of each sampler on a corpus where a biased chain shows:
# 40k tokens, K = 100 fitted to 50 planted topics, beta = 0.01 (most of a
# word's proposals come from its counts, so proposals judged against counts
# that moved on show).  Mean ll/token over sweeps 201-500 of one chain
# against the serial reference's: the exact chains (sparse, cycle, mh) stay
# within 0.3% (seeds and chains spread 0.1%); the warp sampler sits below
# and stays there, 0.65% with one worker and 1.45% with the two here
# (WarpLDA's delayed updates: its document phase judges word proposals
# drawn at the word's last block visit as if the word's counts had not
# moved since, and the block counts another worker's tokens where its last
# visit left them; docs/benchmark-log.md), so it is held to 2.5% only.
# e2e_lda_reference's tiny corpus (K = 3) cannot tell them apart: warp is
# within 0.25% there.  The mh sampler with its word proposal from a table
# built when the word's run starts (LightLDA's stale alias table, before
# 2026-11) sat above: +0.45% at M = 2, +0.26% at M = 8 (apps/lda_sample.c).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lda_lib.sh"
"$ROTOR" gen lda --docs 500 --vocab 2000 --topics 50 --alpha 0.1 --beta 0.01 --doc-len 80 \
    --seed 5 --out "$TMP/c.txt" >/dev/null
"$ROTOR" partition --app lda --input "$TMP/c.txt" --nodes 1 --threads 2 --seed 1 \
    --out "$TMP/plan" >/dev/null 2>&1 || fail "partition"
mean_after() { awk '{ if ($1 + 0 > 200) { s += $2; n++ } } END { printf "%.6f", s / n }'; }
ref=$("$LDA_REF" gibbs --input "$TMP/c.txt" --topics 100 --alpha 0.5 --beta 0.01 --iters 500 \
    --eval-every 5 2>/dev/null | awk '{ print $2, $4 }' | mean_after)
stationary() {
    "$ROTOR" train --plan "$TMP/plan" --app lda --topics 100 --alpha 0.5 --beta 0.01 --serial \
        --sampler "$@" --iters 500 --eval-every 5 2>&1 |
        grep -o 'lda iter [0-9]*: ll/token [-0-9.]*' | awk '{ print $3 + 0, $5 }' | mean_after
}
for s in "sparse:0.003" "cycle --mh-steps 2:0.003" "mh --mh-steps 2:0.003" \
    "warp --mh-steps 2:0.025"; do
    got=$(stationary ${s%:*})
    note "${s%:*}: mean ll/token $got, reference $ref (tolerance ${s#*:})"
    rel_within "$got" "$ref" "${s#*:}" || fail "${s%:*}: stationary ll/token $got vs reference $ref"
done
echo "PASS"
