#!/usr/bin/env bash
# Stationary level of each sampler on a corpus where a biased chain shows:
# 40k tokens, K = 100 fitted to 50 planted topics, beta = 0.01 (most of a
# word's proposals come from its counts, so proposals judged against counts
# that moved on show).  Mean ll/token over sweeps 201-500 of one chain
# against the serial reference's: the exact chains (sparse, cycle, mh) stay
# within 0.3% (seeds and chains spread 0.1%).  The warp sampler sits below
# and stays there (WarpLDA's delayed updates: each phase judges proposals
# drawn from the other side's counts at the end of the phase before, i.e.
# against counts that moved on): 0.67% with one worker, all of it from the
# document phase's stale word counts (a build whose document phase reads its
# word proposals live, as the topic of a random token of the word, sits at
# 0.06%; reading the word phase's document proposals live as well changes
# nothing more here, and by exact enumeration on a toy corpus both live is
# the Gibbs posterior exactly; either costs 20-35% of warp's tokens/s,
# 2026-11-27); 1.45% with the two workers here, as the block also
# counts the other worker's tokens where its last visit left them.  So warp
# is held to 1% with one worker and 1.8% with two: a density or count bug on
# top of the design shows.  e2e_lda_reference's tiny corpus (K = 3) cannot
# tell them apart: warp is within 0.25% there.  The mh sampler with its word
# proposal from a table built when the word's run starts (LightLDA's stale
# alias table, before 2026-11) sat above: +0.45% at M = 2, +0.26% at M = 8
# (apps/lda_sample.c).
source "$(dirname "$0")/lib.sh"
source "$(dirname "$0")/lda_lib.sh"
"$ROTOR" gen lda --docs 500 --vocab 2000 --topics 50 --alpha 0.1 --beta 0.01 --doc-len 80 \
    --seed 5 --out "$TMP/c.txt" >/dev/null
for w in 1 2; do
    "$ROTOR" partition --app lda --input "$TMP/c.txt" --nodes 1 --threads $w --seed 1 \
        --out "$TMP/plan$w" >/dev/null 2>&1 || fail "partition ($w workers)"
done
mean_after() { awk '{ if ($1 + 0 > 200) { s += $2; n++ } } END { printf "%.6f", s / n }'; }
ref=$("$LDA_REF" gibbs --input "$TMP/c.txt" --topics 100 --alpha 0.5 --beta 0.01 --iters 500 \
    --eval-every 5 2>/dev/null | awk '{ print $2, $4 }' | mean_after)
stationary() { # WORKERS SAMPLER...
    local w=$1
    shift
    "$ROTOR" train --plan "$TMP/plan$w" --app lda --topics 100 --alpha 0.5 --beta 0.01 --serial \
        --sampler "$@" --iters 500 --eval-every 5 2>&1 |
        grep -o 'lda iter [0-9]*: ll/token [-0-9.]*' | awk '{ print $3 + 0, $5 }' | mean_after
}
# WORKERS:SAMPLER:TOLERANCE
for s in "2:sparse:0.003" "2:cycle --mh-steps 2:0.003" "2:mh --mh-steps 2:0.003" \
    "1:warp --mh-steps 2:0.01" "2:warp --mh-steps 2:0.018"; do
    w=${s%%:*} run=${s#*:}
    got=$(stationary "$w" ${run%:*})
    note "${run%:*}, $w workers: mean ll/token $got, reference $ref (tolerance ${run##*:})"
    rel_within "$got" "$ref" "${run##*:}" ||
        fail "${run%:*}, $w workers: stationary ll/token $got vs reference $ref"
done
echo "PASS"
