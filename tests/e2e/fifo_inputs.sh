#!/usr/bin/env bash
# FIFOs given where rotor reads a file, one rule for every command:
#   - the user's data (ratings, a corpus, users, test ratings) is read as a
#     stream, as '-' is: rotor says so, waits for the writer, and makes the
#     same plan / scores as from the file;
#   - a file rotor wrote (plan, model, checkpoint, metrics) replaced by a
#     FIFO is refused at once, exit 2 naming it (open() waited there for a
#     writer that never came: the command hung).
source "$(dirname "$0")/lib.sh"
cd "$TMP"
"$ROTOR" gen mf --rows 200 --cols 100 --nnz 3000 --rank 3 --noise 0.1 --seed 4 --out r.txt >/dev/null 2>&1
"$ROTOR" partition --input r.txt --nodes 1 --threads 1 --out plan -q >/dev/null 2>&1 || fail "partition"
"$ROTOR" train --plan plan --rank 3 --epochs 2 --serial --checkpoint ck --checkpoint-every 1 \
    --metrics m.json --out model >/dev/null 2>&1 || fail "train"
"$ROTOR" gen lda --docs 40 --vocab 60 --topics 3 --doc-len 20 --seed 4 --out c.txt >/dev/null 2>&1
"$ROTOR" partition --app lda --input c.txt --nodes 1 --threads 1 --out lplan -q >/dev/null 2>&1 ||
    fail "partition --app lda"
"$ROTOR" train --plan lplan --app lda --topics 3 --iters 2 --serial --out lmodel >/dev/null 2>&1 ||
    fail "train --app lda"
cut -d' ' -f1 r.txt | sort -u | head -5 >users.txt

# --- a file rotor wrote, replaced by a FIFO: exit 2 at once, naming it
# own DIR FILE CMD...: copy DIR to f-DIR, make FILE in it a FIFO, run CMD
# (with f-DIR for DIR) under a timeout: it must exit 2 naming the FIFO.
own() {
    local dir=$1 file=$2 got=0
    shift 2
    rm -rf "f-$dir" out
    cp -r "$dir" "f-$dir"
    rm "f-$dir/$file"
    mkfifo "f-$dir/$file"
    timeout 20 "$@" >/dev/null 2>own.err || got=$?
    [ "$got" = 2 ] || { cat own.err >&2; fail "FIFO $dir/$file: exit $got (124: hung in open), want 2: $*"; }
    grep -q "f-$dir/$file: a FIFO, not a file" own.err || { cat own.err >&2; fail "FIFO $dir/$file not named"; }
}
for f in plan.json layout.bin rows.ids shard-00000.bin; do
    own plan "$f" "$ROTOR" train --plan f-plan --rank 3 --epochs 1 --serial --out out
done
own plan shard-00000.bin "$ROTOR" partition --verify f-plan
for f in model.json rows.ids cols.ids; do
    own model "$f" "$ROTOR" eval --model f-model --input r.txt
    own model "$f" "$ROTOR" export --model f-model --out out
done
own lmodel model.json "$ROTOR" topics --model f-lmodel
own lmodel vocab.txt "$ROTOR" infer --model f-lmodel --input c.txt --out out
last=$(basename "$(ls -d ck/ckpt-* | tail -1)")
for f in manifest.json state-00000.bin; do
    own ck "$last/$f" "$ROTOR" train --plan plan --rank 3 --epochs 3 --serial --resume f-ck --out out
done
rm -f fm.json && mkfifo fm.json
got=0 && timeout 20 "$ROTOR" plot fm.json --out out.svg >/dev/null 2>own.err || got=$?
[ "$got" = 2 ] && grep -q "fm.json: a FIFO, not a file" own.err || { cat own.err >&2; fail "plot FIFO: exit $got"; }

# --- the user's data through a FIFO: a stream, the same result as the file
rm -f in.fifo && mkfifo in.fifo
# feed FILE CMD...: CMD reads in.fifo while FILE is written into it.
feed() {
    local file=$1
    shift
    cat "$file" >in.fifo &
    timeout 60 "$@" >feed.out 2>feed.err || { cat feed.err >&2; fail "FIFO data: $*"; }
    wait $!
}
feed r.txt "$ROTOR" partition --input in.fifo --nodes 1 --threads 1 --out p-fifo -q
for f in plan/shard-*.bin plan/rows.ids plan/cols.ids plan/layout.bin; do
    cmp -s "$f" "p-fifo/$(basename "$f")" || fail "$(basename "$f") differs when the ratings come from a FIFO"
done
feed r.txt "$ROTOR" partition --input r.txt --test in.fifo --nodes 1 --threads 1 --out p-test -q
"$ROTOR" eval --model model --input r.txt >want.out 2>/dev/null
feed r.txt "$ROTOR" eval --model model --input in.fifo
cmp -s want.out feed.out || fail "eval of a FIFO: $(cat feed.out), want $(cat want.out)"
"$ROTOR" recommend --model model --top 3 --users users.txt --out - >want.out 2>/dev/null
feed users.txt "$ROTOR" recommend --model model --top 3 --users in.fifo --out -
cmp -s want.out feed.out || fail "recommend --users FIFO differs"
"$ROTOR" infer --model lmodel --input c.txt --out inf-file >/dev/null 2>&1
feed c.txt "$ROTOR" infer --model lmodel --input in.fifo --out inf-fifo
cmp -s inf-file/doc_topic.npy inf-fifo/doc_topic.npy || fail "infer of a FIFO differs"
# A corpus from a FIFO, its format guessed: opened once, the guess made on
# the head of that one read (a second open for the reader waited for
# another writer and partitioned its data alone).
feed c.txt "$ROTOR" partition --app lda --input in.fifo --nodes 1 --threads 1 --out l-fifo -q
for f in lplan/shard-*.bin lplan/vocab.txt lplan/layout.bin; do
    cmp -s "$f" "l-fifo/$(basename "$f")" || fail "$(basename "$f") differs when the corpus comes from a FIFO"
done

# says_it_waits PID FIFO LOG WHAT: within 20 s LOG holds rotor's line that
# it waits for FIFO's writer, else PID is killed and the test fails.
says_it_waits() {
    for _ in $(seq 200); do
        grep -q "$2: a FIFO or pipe: reading it as a stream" "$3" && return 0
        sleep 0.1
    done
    kill "$1"
    cat "$3" >&2
    fail "no word while waiting for $4's writer"
}

# A FIFO with no writer yet: rotor says it waits for one (it hung without a
# word; the line is information, so -q hides it),
# and reads the data once the writer comes.
"$ROTOR" partition --input in.fifo --nodes 1 --threads 1 --out p-late >late.out 2>late.err &
pid=$!
says_it_waits "$pid" in.fifo late.err "the FIFO"
cat r.txt >in.fifo
wait "$pid" || { cat late.err >&2; fail "partition of a FIFO whose writer came late"; }
cmp -s plan/shard-00000.bin p-late/shard-00000.bin || fail "late FIFO: shard differs"

# The job's secret through a FIFO (--token-file <(...)): the same rule, a
# word while it waits (it hung in fopen() without one), then the run.
mkfifo tok.fifo
"$ROTOR" train --plan plan --rank 3 --epochs 1 --serial --token-file tok.fifo --out tmodel \
    >tok.out 2>tok.err &
pid=$!
says_it_waits "$pid" tok.fifo tok.err "the token FIFO"
head -c 32 /dev/urandom | base64 >tok.fifo
wait "$pid" || { cat tok.err >&2; fail "train with a token FIFO whose writer came late"; }
echo "PASS"
