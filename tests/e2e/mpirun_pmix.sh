#!/usr/bin/env bash
# No hostfile under mpirun (issue 10, item 4): Debian's Open MPI runs a PMIx
# server, and rotor built with PMIx finds its peers through it.
#  1. `mpirun --oversubscribe -np 3 rotor train --plan P ...` with no
#     hostfile trains, every rank having picked its own free port and
#     published it through PMIx, and its model is bit-identical to
#     `rotor launch -n 3` on the same plan;
#  2. the same with only PMIX_RANK in the environment (Open MPI's own
#     variables removed, as newer launchers may set only that): the size
#     comes from PMIx, same model;
#  3. the same job without ROTOR_TOKEN: rank 0 makes a secret and PMIx hands
#     it to the others (every rank logs that source), same model; with
#     ROTOR_TOKEN (run 1) every rank uses that instead;
#  4. --insecure without ROTOR_TOKEN stays insecure (no secret is made), same
#     model;
#  5. with a hostfile (peers not through PMIx) and no ROTOR_TOKEN the job
#     still needs a secret (exit 2, hint, no model).
# Installs openmpi-bin with apt when it is missing and we are root, else
# skips with a message; skips when rotor was built without PMIx.
. "$(dirname "$0")/lib.sh"
"$ROTOR" --version | grep -q "pmix (" || skip "rotor was built without PMIx (libpmix-dev)"
if ! command -v mpirun >/dev/null; then
    if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
        note "installing openmpi-bin"
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
            openmpi-bin >"$TMP/apt.log" 2>&1 || { tail -5 "$TMP/apt.log"; skip "cannot install openmpi-bin"; }
    fi
    command -v mpirun >/dev/null || skip "mpirun not found (Debian: openmpi-bin) and no root to install it"
fi
mpirun --version 2>&1 | grep -q "Open MPI" || skip "mpirun is not Open MPI's"
# Root needs Open MPI's consent; the ranks only use mpirun's PMIx server.
MPI=(mpirun --oversubscribe --allow-run-as-root -np 3 --mca plm_rsh_agent false)

"$ROTOR" gen mf --rows 600 --cols 240 --nnz 12000 --rank 3 --noise 0.1 --seed 4 \
    --out "$TMP/r.txt" 2>/dev/null
"$ROTOR" partition --input "$TMP/r.txt" --nodes 3 --threads 1 --seed 4 --out "$TMP/plan" \
    >/dev/null 2>&1
train=(train --plan "$TMP/plan" --app sgd-mf --rank 4 --epochs 3 --seed 2)

note "rotor launch -n 3"
"$ROTOR" launch -n 3 -- "$ROTOR" "${train[@]}" --out "$TMP/launch" 2>"$TMP/launch.log" ||
    { cat "$TMP/launch.log"; fail "rotor launch -n 3 failed"; }

note "mpirun -np 3, no hostfile"
unset ROTOR_HOSTFILE
ROTOR_LOG=debug timeout 120 "${MPI[@]}" -x ROTOR_TOKEN -x ROTOR_LOG "$ROTOR" "${train[@]}" \
    --out "$TMP/mpi" >"$TMP/mpi.log" 2>&1 || { cat "$TMP/mpi.log"; fail "mpirun -np 3 failed"; }
for r in 0 1 2; do
    grep -q "PMIx: rank $r of 3 listens on 127.0.0.1:" "$TMP/mpi.log" ||
        { cat "$TMP/mpi.log"; fail "rank $r did not publish its address through PMIx"; }
done
grep -q "epoch   3" "$TMP/mpi.log" || fail "the mpirun job did not train 3 epochs"
[ "$(grep -c "job secret from ROTOR_TOKEN" "$TMP/mpi.log")" = 3 ] ||
    { cat "$TMP/mpi.log"; fail "not every rank took the given ROTOR_TOKEN"; }
grep -q "job secret from PMIx" "$TMP/mpi.log" && fail "a given ROTOR_TOKEN did not win over PMIx"
single "$TMP/launch" # the per-rank parts merged into W.npy, H.npy
# $1: the run's directory; $2: what it was, for the message.
same_as_launch() {
    single "$1"
    for f in W.npy H.npy; do
        [ -s "$1.single/$f" ] || fail "$2: no $f"
        cmp -s "$TMP/launch.single/$f" "$1.single/$f" || fail "$2: $f differs from rotor launch -n 3"
    done
}
same_as_launch "$TMP/mpi" "mpirun -np 3"

note "mpirun, only PMIX_RANK set"
ROTOR_LOG=debug timeout 120 "${MPI[@]}" -x ROTOR_TOKEN -x ROTOR_LOG env -u OMPI_COMM_WORLD_RANK \
    -u OMPI_COMM_WORLD_SIZE -u OMPI_UNIVERSE_SIZE -u OMPI_COMM_WORLD_LOCAL_RANK "$ROTOR" \
    "${train[@]}" --out "$TMP/pmix" >"$TMP/pmix.log" 2>&1 || { cat "$TMP/pmix.log"; fail "PMIX_RANK only: failed"; }
grep -q "PMIx: rank 2 of 3 listens" "$TMP/pmix.log" || { cat "$TMP/pmix.log"; fail "PMIX_RANK only: no PMIx bootstrap"; }
same_as_launch "$TMP/pmix" "only PMIX_RANK"

note "mpirun without ROTOR_TOKEN: the secret comes through PMIx"
env -u ROTOR_TOKEN timeout 120 "${MPI[@]}" "$ROTOR" "${train[@]}" --out "$TMP/pmixsecret" \
    >"$TMP/pmixsecret.log" 2>&1 || { cat "$TMP/pmixsecret.log"; fail "mpirun without ROTOR_TOKEN failed"; }
for r in 0 1 2; do
    grep -q "rank $r: job secret from PMIx" "$TMP/pmixsecret.log" ||
        { cat "$TMP/pmixsecret.log"; fail "rank $r did not take the secret from PMIx"; }
done
grep -q "insecure" "$TMP/pmixsecret.log" && fail "the PMIx-secret job ran insecure"
same_as_launch "$TMP/pmixsecret" "secret through PMIx"

note "mpirun --insecure without ROTOR_TOKEN"
env -u ROTOR_TOKEN timeout 120 "${MPI[@]}" "$ROTOR" "${train[@]}" --insecure --out "$TMP/insecure" \
    >"$TMP/insecure.log" 2>&1 || { cat "$TMP/insecure.log"; fail "mpirun --insecure failed"; }
grep -q "warning: --insecure" "$TMP/insecure.log" || fail "--insecure was not logged"
grep -q "job secret from" "$TMP/insecure.log" && fail "--insecure made a secret"
same_as_launch "$TMP/insecure" "--insecure"

note "mpirun with a hostfile and without a secret"
printf '127.0.0.1\n127.0.0.1\n127.0.0.1\n' >"$TMP/hosts"
st=0
env -u ROTOR_TOKEN timeout 120 "${MPI[@]}" "$ROTOR" "${train[@]}" --hostfile "$TMP/hosts" \
    --out "$TMP/nosecret" >"$TMP/nosecret.log" 2>&1 || st=$?
[ "$st" != 0 ] || fail "mpirun without a secret exited 0"
grep -q "need a job secret" "$TMP/nosecret.log" || { cat "$TMP/nosecret.log"; fail "no secret hint"; }
[ ! -e "$TMP/nosecret" ] || fail "a model was written without a secret"
echo "PASS: mpirun -np 3 without a hostfile equals rotor launch -n 3 bit for bit, with the secret" \
    "from ROTOR_TOKEN, from PMIx, or none (--insecure)"
