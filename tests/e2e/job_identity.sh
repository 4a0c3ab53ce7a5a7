#!/usr/bin/env bash
# Ranks that disagree stop before training, exit 2, naming what differs:
# different plans, different --epochs, different --out or --checkpoint (or
# one relative --out from two directories of one host; of two hosts it runs),
# different builds of rotor, different secrets; and a job of
# several processes without any secret stops with a one-line hint.
source "$(dirname "$0")/lib.sh"
"$ROTOR" gen mf --rows 2000 --cols 800 --nnz 60000 --rank 4 --noise 0.1 --seed 5 \
    --out "$TMP/r.txt" 2>/dev/null
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 --seed 5 --out "$TMP/a" 2>/dev/null
"$ROTOR" partition --input "$TMP/r.txt" --nodes 2 --threads 1 --seed 6 --out "$TMP/b" 2>/dev/null

# two_ranks NAME ARGS0 -- ARGS1: ranks 0 and 1 by hand (rank 1 runs
# $ROTOR_RANK1 when set); both must exit 2 within 20 s, and the messages are
# in $TMP/NAME.{0,1}.log.
two_ranks() {
    local name=$1 a0=() a1=()
    shift
    while [ "$1" != -- ]; do a0+=("$1"); shift; done
    shift
    a1=("$@")
    printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$(free_port)" "$(free_port)" >"$TMP/$name.hosts"
    local t0=$SECONDS s0=0 s1=0
    timeout 60 "$ROTOR" train --hostfile "$TMP/$name.hosts" --nodes 2 --node 0 "${a0[@]}" \
        >/dev/null 2>"$TMP/$name.0.log" &
    local p0=$!
    timeout 60 "${ROTOR_RANK1:-$ROTOR}" train --hostfile "$TMP/$name.hosts" --nodes 2 --node 1 \
        "${a1[@]}" \
        >/dev/null 2>"$TMP/$name.1.log" || s1=$?
    wait "$p0" || s0=$?
    note "$name: exits $s0 $s1 after $((SECONDS - t0)) s: $(grep error "$TMP/$name.0.log")"
    for r in 0 1; do
        local s
        s=$([ $r = 0 ] && echo $s0 || echo $s1)
        [ "$s" = 2 ] || { cat "$TMP/$name.$r.log" >&2; fail "$name: rank $r exited $s"; }
    done
    [ $((SECONDS - t0)) -le 20 ] || fail "$name: took $((SECONDS - t0)) s"
}

common=(--app sgd-mf --rank 8 --epochs 3)
two_ranks plans --plan "$TMP/a" "${common[@]}" -- --plan "$TMP/b" "${common[@]}"
for r in 0 1; do grep -q "ranks disagree on plan: rank 1 has '" "$TMP/plans.$r.log" ||
    fail "plans: rank $r's message does not name the plan"; done

two_ranks epochs --plan "$TMP/a" --app sgd-mf --rank 8 --epochs 3 -- \
    --plan "$TMP/a" --app sgd-mf --rank 8 --epochs 4
for r in 0 1; do grep -q "ranks disagree on --epochs: rank 1 has '4', rank 0 has '3'" \
    "$TMP/epochs.$r.log" || fail "epochs: rank $r's message does not name --epochs"; done

# Two ranks of one host naming different --out split the model (each wrote
# its parts into its own directory, rank 0's was "incomplete", exit 0); the
# same for --checkpoint.  Both refuse, naming the option; nothing is made.
two_ranks outs --plan "$TMP/a" "${common[@]}" --out "$TMP/m0" -- \
    --plan "$TMP/a" "${common[@]}" --out "$TMP/m1"
for r in 0 1; do grep -q "ranks disagree on --out (the model directory: the same path on every \
rank): rank 1 has '$TMP/m1', rank 0 has '$TMP/m0'" "$TMP/outs.$r.log" ||
    fail "outs: rank $r's message does not name --out"; done
[ ! -e "$TMP/m0" ] && [ ! -e "$TMP/m1" ] || fail "outs: a model directory was made"
two_ranks checkpoints --plan "$TMP/a" "${common[@]}" --checkpoint "$TMP/c0" -- \
    --plan "$TMP/a" "${common[@]}" --checkpoint "$TMP/c1"
for r in 0 1; do grep -q "ranks disagree on --checkpoint" "$TMP/checkpoints.$r.log" ||
    fail "checkpoints: rank $r's message does not name --checkpoint"; done

# A relative --out is the directory of that name where each rank runs.
# Ranks of two hosts may start in different directories (a launcher that
# starts each in $HOME, named differently on each host: refused before, as
# their absolute paths differed); each writes its parts there.  Two ranks of
# one host may not: the model would be split.  in_dirs NAME HOST1 ARGS...:
# rank 0 in $TMP/NAME-0, rank 1 in $TMP/NAME-1 under host name HOST1 ("" =
# this host's), both with --out m; exits in $s0 $s1.
in_dirs() {
    local name=$1 host1=$2 pre=()
    shift 2
    mkdir -p "$TMP/$name-0" "$TMP/$name-1"
    [ -z "$host1" ] || pre=(unshare -u sh -c 'hostname "$0" && exec "$@"' "$host1")
    printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$(free_port)" "$(free_port)" >"$TMP/$name.hosts"
    s0=0 s1=0
    (cd "$TMP/$name-0" && exec timeout 60 "$ROTOR" train --hostfile "$TMP/$name.hosts" --nodes 2 \
        --node 0 "$@" --out m) >/dev/null 2>"$TMP/$name.0.log" &
    local p0=$!
    (cd "$TMP/$name-1" && exec timeout 60 "${pre[@]}" "$ROTOR" train --hostfile "$TMP/$name.hosts" \
        --nodes 2 --node 1 "$@" --out m) >/dev/null 2>"$TMP/$name.1.log" || s1=$?
    wait "$p0" || s0=$?
    note "$name: exits $s0 $s1: $(grep error "$TMP/$name.0.log")"
}
in_dirs cwds "" --plan "$TMP/a" "${common[@]}"
[ "$s0$s1" = 22 ] || { cat "$TMP/cwds.0.log" "$TMP/cwds.1.log" >&2; fail "cwds: exits $s0 $s1"; }
for r in 0 1; do grep -q "ranks 0 and 1 run on one host but their --out 'm' is two directories \
there (their working directories differ; here it is $TMP/cwds-$r/m)" "$TMP/cwds.$r.log" ||
    fail "cwds: rank $r's message does not name the two directories"; done
[ ! -e "$TMP/cwds-0/m" ] && [ ! -e "$TMP/cwds-1/m" ] || fail "cwds: a model directory was made"
if unshare -u true 2>/dev/null; then
    in_dirs hosts other-host --plan "$TMP/a" "${common[@]}"
    [ "$s0$s1" = 00 ] || { cat "$TMP/hosts.0.log" "$TMP/hosts.1.log" >&2; fail "hosts: exits $s0 $s1"; }
    [ -e "$TMP/hosts-0/m/model.json" ] || fail "hosts: rank 0 saved no model.json"
    [ -n "$(ls "$TMP/hosts-1/m")" ] || fail "hosts: rank 1 saved nothing in its directory"
    # One --resume path that shows the two hosts different files (a disk per
    # host, a network filesystem's cache behind the newest manifest): both
    # refuse before training, naming the two rotations (they started at
    # rotations 3 and 2: exit 1, "expected block 1 (rotation 2) ... got block
    # 1 (rotation 3)").
    mkdir -p "$TMP/resumes-0" "$TMP/resumes-1"
    "$ROTOR" launch -n 2 -- "$ROTOR" train --plan "$TMP/a" "${common[@]}" \
        --checkpoint "$TMP/resumes-0/ck" --checkpoint-every 1 2>/dev/null || fail "checkpoints"
    cp -r "$TMP/resumes-0/ck" "$TMP/resumes-1/ck"
    rm "$TMP/resumes-1/ck/ckpt-000000000003/manifest.json"
    in_dirs resumes other-host --plan "$TMP/a" --app sgd-mf --rank 8 --epochs 5 --resume ck
    [ "$s0$s1" = 22 ] || { cat "$TMP/resumes.0.log" "$TMP/resumes.1.log" >&2; fail "resumes: exits $s0 $s1"; }
    for r in 0 1; do grep -q "resume ck: rank 0 sees the newest complete checkpoint at rotation 3, \
rank 1 at rotation 2" "$TMP/resumes.$r.log" || fail "resumes: rank $r does not name both"; done
else
    note "hosts: skipped (no UTS namespace to stand for a second host)"
fi

# Another build of rotor on rank 1: a copy of this binary whose build hash
# (rotor --version) is changed in place, standing for a rank built from other
# sources or flags.  Both ranks refuse, naming the build.
read -r _ version _ hash < <("$ROTOR" --version)
[[ $hash =~ ^[0-9a-f]{16}$ ]] || fail "--version has no build hash"
python3 - "$ROTOR" "$TMP/rotor-other" "$hash" <<'PY'
import sys
src, dst, old = sys.argv[1], sys.argv[2], sys.argv[3].encode()
new = bytes(b"0123456789abcdef"[(int(chr(c), 16) + 1) % 16] for c in old)
data = open(src, "rb").read()
if data.count(old) < 1:
    sys.exit("the build hash is not in the binary")
open(dst, "wb").write(data.replace(old, new))
PY
chmod +x "$TMP/rotor-other"
other=$("$TMP/rotor-other" --version | head -1)
[ "$other" != "rotor $version build $hash" ] || fail "the copy has the same build ($other)"
ROTOR_RANK1=$TMP/rotor-other two_ranks builds --plan "$TMP/a" "${common[@]}" -- \
    --plan "$TMP/a" "${common[@]}"
for r in 0 1; do grep -q "ranks disagree on build: rank 1 has '${other#rotor }', rank 0 has \
'$version build $hash' (every rank must run the same build" "$TMP/builds.$r.log" ||
    fail "builds: rank $r's message does not name the builds"; done

printf 'one\n' >"$TMP/t1"
printf 'two\n' >"$TMP/t2"
chmod 600 "$TMP/t1" "$TMP/t2"
unset ROTOR_TOKEN
make_plan3() {
    [ -d "$TMP/a3" ] || "$ROTOR" partition --input "$TMP/r.txt" --nodes 3 --threads 1 --seed 5 \
        --out "$TMP/a3" 2>/dev/null
}
# secrets NAME LIMIT FILE...: one rank per token file, started together by
# hand (no launcher to end them).  Every rank must exit 2 within LIMIT
# seconds naming the authentication failure, and none may train.
secrets() {
    local name=$1 limit=$2 n r t0=$SECONDS pids=() st
    shift 2
    n=$#
    local plan=$TMP/a
    [ "$n" = 2 ] || { make_plan3; plan=$TMP/a3; }
    : >"$TMP/$name.hosts"
    for ((r = 0; r < n; r++)); do echo "127.0.0.1:$(free_port)" >>"$TMP/$name.hosts"; done
    for ((r = 0; r < n; r++)); do
        timeout 60 "$ROTOR" train --hostfile "$TMP/$name.hosts" --nodes "$n" --node $r \
            --plan "$plan" "${common[@]}" --token-file "$1" >/dev/null 2>"$TMP/$name.$r.log" &
        pids+=($!)
        shift
    done
    for ((r = 0; r < n; r++)); do
        st=0
        wait "${pids[$r]}" || st=$?
        [ "$st" = 2 ] || { cat "$TMP/$name.$r.log" >&2; fail "$name: rank $r exited $st, expected 2"; }
        grep -q "authentication failed" "$TMP/$name.$r.log" ||
            { cat "$TMP/$name.$r.log" >&2; fail "$name: rank $r does not name the authentication failure"; }
        grep -q "epoch " "$TMP/$name.$r.log" && fail "$name: rank $r trained"
    done
    note "$name: every rank exited 2 naming authentication after $((SECONDS - t0)) s"
    [ $((SECONDS - t0)) -le "$limit" ] || fail "$name: took $((SECONDS - t0)) s (limit $limit)"
}
# Each rank meets the other's challenge: both stop at once.
secrets secrets2 10 "$TMP/t1" "$TMP/t2"
# Rank 0 may only ever be connected to by rank 2, which it cannot tell from
# a stranger; it stops when its connect timeout (30 s) ends, naming rank 2.
secrets secrets3 50 "$TMP/t1" "$TMP/t1" "$TMP/t2"

# The same secret saved by an editor (a UTF-8 byte order mark, CRLF) is the
# same secret: the job runs (the mark made it another one, "authentication
# failed").
printf '\xef\xbb\xbfone\r\n' >"$TMP/t1-edited"
chmod 600 "$TMP/t1-edited"
printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$(free_port)" "$(free_port)" >"$TMP/bom.hosts"
st0=0 st1=0
timeout 60 "$ROTOR" train --hostfile "$TMP/bom.hosts" --nodes 2 --node 0 --plan "$TMP/a" \
    "${common[@]}" --token-file "$TMP/t1" >/dev/null 2>"$TMP/bom.0.log" &
p0=$!
timeout 60 "$ROTOR" train --hostfile "$TMP/bom.hosts" --nodes 2 --node 1 --plan "$TMP/a" \
    "${common[@]}" --token-file "$TMP/t1-edited" >/dev/null 2>"$TMP/bom.1.log" || st1=$?
wait $p0 || st0=$?
[ "$st0$st1" = 00 ] || { cat "$TMP/bom.0.log" "$TMP/bom.1.log" >&2; fail "edited token file: exits $st0 $st1"; }
note "a token file with a byte order mark and CRLF: the same secret"
printf '127.0.0.1:%s\n127.0.0.1:%s\n' "$(free_port)" "$(free_port)" >"$TMP/sec.hosts"

expect_status 2 "$ROTOR" train --hostfile "$TMP/sec.hosts" --nodes 2 --node 0 --plan "$TMP/a" \
    "${common[@]}"
grep -q "need a job secret.*--insecure" "$TMP/last.err" || fail "no hint without a secret"
[ "$(wc -l <"$TMP/last.err")" = 1 ] || fail "the hint is not one line"
echo PASS
