#!/usr/bin/env bash
# scale.sh - measured against predicted: the real engine over TCP between
# network namespaces joined by shaped veth links, next to `rotor simulate`.
#
#   bench/scale.sh [--quick] [--ranks 2,4,8] [--gbps 1,5,25] [--apps sgd-mf,lda]
#                  [--epochs N] [--rounds 3] [--calibrations 1] [--keep] [--size small|large]
#                  [--busy-from ranks|threads] [--wake-pause-us 50000] [--wake-pairs 3]
#                  [--slow-start-after-idle 0|1] [--tcp-cc NAME]
#                  [--calibrate-after 1|0] [--latency-repeats 3] [--statistic mean|median]
#                  [--ranks-calibration-epochs N] [--busy-pool plan|round]
#                  [--rate-pool round|config|plan]
#                  [--configs APP:RANKS:GBPS[:THREADS[:PIPELINE[:ADDED_LATENCY_US]]],...]
#   bench/scale.sh --auto APP:RANKS:GBPS [--rounds 3] [--epochs N]
#   bench/scale.sh --repredict DIR [--model-args "ARGS"] [--calibrate-after 1|0]
#                  [--statistic mean|median] [--busy-from ranks|threads]
#                  [--busy-pool plan|round] [--rate-pool round|config|plan]
#
# Needs root (ip netns, tc).  Topology: one namespace per rank (rtscale-R,
# address 169.254.77.R+1/24 on its veth) and one holding a bridge
# (rtscale-sw); every rank's veth is shaped with tc tbf in both directions
# (the rank side and the bridge side), like a NIC of that rate on a switch,
# and TCP may queue about 1 ms of that rate below a socket (shape).
# No address outside 169.254.77.0/24 is used and nothing is routed out of
# the namespaces.  netem is not available on every kernel (not on this
# one: no sch_netem, and no sch_fq for timestamp-based delay), so a
# configuration's ADDED_LATENCY_US (default 0) comes from bench/delay_relay
# (built with rotor: build/bench/delay_relay) in the switch namespace: it
# holds every frame a rank sends that long before the bridge.  The link
# latency the model gets is the one measured between two namespaces
# (rotor bench-link, 8-byte ping-pong) right before each round, with its
# shaping and that relay in place (the median of --latency-repeats
# measures of 200 passes each; their range in the JSON), and the CPU
# per byte is measured with it too (its copies are the emulated link's; the
# relay's own part at the configuration's rate: net_cpu_at); the
# bandwidth is measured without it (what the link carries, not what one
# ping-pong stream reaches over a longer round trip).
#
# For each configuration, --rounds times: calibrate the machine's speed
# right before the round (--calibrations pairs, default 1: `rotor simulate
# --calibrate`, a short serial run of the app on the plan, unpinned like the
# ranks, for the kernel rate and the per-step cost, and --calibrate-threads,
# the job's workers as threads of one process on these cores, for the rate
# of a core while all compute, the step costs beyond the cells and
# the spread of step costs and cell times), then the job itself for 4
# epochs (--ranks-calibration-epochs; LDA 10 iterations) with its ranks as processes over TCP on the loopback, unshaped
# (ranks_calibration: the busy cores' speed as the ranks compute, one
# process per rank with its transport threads, which the threaded
# calibration, one process, does not pay); then run `rotor train` in every
# namespace (THREADS threads per rank, default 1, on a plan of PIPELINE
# blocks per worker, default 2; --pin no: on one machine every rank would
# pin to the same core) and take its mean epoch time and stall over the
# epochs after the first; and predict that round (the model's means over
# its rotations) with `rotor simulate`: its speed (--rate, and
# --busy-core-speed: the ranks' calibration's rate per CPU second of their
# cells over the serial one's, or with --busy-from threads the threaded
# calibration's per CPU second of a visit) from the calibrations made
# right before it and right after it (the next round's, or after the last
# round one more, the closing calibration: --calibrate-after 1, the
# default; the geometric mean of the two, round_speed; 0: the one before
# alone; the busy core speed, with --busy-pool plan, the default, pooled
# instead, see below), the rest of the plan's figures (--step-overhead-us, --step-cv, --cell-cv,
# --worker-cv, --wake-speed) the medians over all the plan's calibrations in
# this run so far (wake speed: the threaded calibration's steps that each
# followed --wake-pause-us of idle cores, default 50 ms, against its
# others, in CPU per unit of work, at most 1, measured in the plan's first
# --wake-pairs pairs; the model slows a step that follows 1 ms or more of
# its node's idling by it; --wake-pause-us 0: none); the bandwidth TCP reaches through the shaped link (gbps_tcp, rotor
# bench-link) and tbf's burst (--burst-kib), all ranks on this machine's
# cores (--host-cores $(nproc): the emulation's truth; a real cluster gives
# every node its own), the kernel's CPU per byte moved taken from those
# cores (--net-cpu-ns-per-byte, measured with the bandwidth) and TCP's send
# buffer (--send-buffer-kib 8192: the transport's 4 MiB SO_SNDBUF, which
# Linux doubles; a pass frees its slot once written there).
# --busy-pool plan (the default): every round's --busy-core-speed is the
# median of each calibration's own ratio (the ranks' CPU rate over the
# serial one's, measured a few seconds apart; --busy-from threads: the
# threaded one's) over all the plan's calibrations in this run so far, the
# earlier configurations' of the plan and this one's up to its closing
# calibration (pooled_ratio), while --rate stays the round's (the serial
# wall rate of its two calibrations): the machine's speed drifts within
# minutes, and a calibration's ranks run 3 rotations, so one calibration's
# ratio carries their sampling noise (in the four quiet 17-row runs the
# ranks' CPU rate varied 8.2% between a row's calibrations, its rounds'
# 5.1%, the same noise per rotation: calibration_epochs), which the pair
# around a round cuts by 1/sqrt(2) (it halves the variance) and the plan's
# median, over 4-24 calibrations, cuts further where the machine does not
# drift between them.  The 2 x 2 0.5 Gb/s miss of the second quiet 17-row run of
# 2026-11-27 (stall 23.6% predicted, 17.4% measured) came from its rounds'
# busy speed, 0.912 where the run before had 0.775 (the model at 0.775:
# 16.7%).  Two loaded 7-row runs (sim16k, 2026-11-27 19:25 and 19:37, load
# 5-12, 28 calibrations each): one calibration's ratio varied by 7.2% and
# 9.1% (sd of ln) within a configuration, each round's own (the busiest
# rank's CPU rate in the round over the serial rate) by 4.6% and 6.0%; as
# an estimate of a round's own the pair erred by 11.1% and 10.5% rms, the
# plan's median by 9.7% and 12.2% (over both 10.8% and 11.0%; both about
# 5% high, the rounds' CPU per unit of work above the calibrations'):
# under others' load the ratio moves and the pair follows it a little.  Their predictions, within both limits in 14 of 14 either
# way: mean |epoch error| 8.0% and 7.1% with the pair, 7.8% and 5.6% with
# the plan's median; |stall error| 1.29 and 1.10 points, 1.46 and 1.07.
# The quiet evidence (rev25 F14): the two quiet 17-row runs of main 4537431
# (2026-11-27 21:01 and 21:37, kept /tmp/tmp.HSYhzGtxEW and
# /tmp/tmp.9uV7Gd0IbB), predicted again by `--repredict DIR --busy-pool
# round`: within both limits in 14 and 15 of 17 against 16 and 14 with
# the plan's median (the live lines); mean |epoch error| 7.3% and 5.3%
# against 4.2% and 4.3%.  round: the pair's, the rule until this option.
# --rate-pool round (the default): a round's --rate is the serial wall rate
# of the pair around it; config: the geometric mean of the configuration's
# calibrations' (its rounds' and the closing one: 4 with --rounds 3); plan:
# the median of the plan's so far (pooled_rate).  Why: in the two quiet
# 17-row runs above the serial calibration's rate varied 9% (sd of ln)
# within a configuration, 8.2-9 or 10.5-12.3 M/s for the same sgd-mf plan,
# and did not follow the ranks' rate measured seconds later (correlation
# -0.06 and 0.14 within a configuration) nor the round's own (-0.12,
# -0.22): noise, not drift, within a configuration; but between
# configurations it drifts (plan's median: sgd-mf 2 x 1 5 Gb/s +12.0%).
# As an estimate of a round's own core speed (its ranks' user CPU rate, each
# class's mean taken out) the pair's rate with the plan's busy ratio erred
# by 8.9% rms, the configuration's by 6.6%.  The repredict of both runs
# (rows within both limits, mean |epoch error|, mean |stall error|): round
# 16/17 4.24% 2.08, 14/17 4.31% 1.72; config 17/17 4.56% 2.11, 15/17 3.73%
# 1.69; plan 15/17 6.95% 2.18, 15/17 4.69% 1.81 (sim16c's notes).  A row's
# rounds average the pair's noise much as the configuration's mean does,
# so config moves the rows little, and on sim16k's two loaded 7-row runs
# (above) its mean |epoch error| was the worse, 8.0% and 6.2% against 7.8%
# and 5.6% (7 of 7 either way): not the default.
# Measured and
# predicted are each the mean over the rounds (the mean of all the rounds'
# epochs, the rounds being of equal length).  --statistic median: medians
# instead, of a round's epochs, of the model's rotations and of the rounds,
# the rule until this option; the mean repeats better: an epoch's stall
# (the largest of the ranks') varies by 4-7 points sd within a round, the
# epochs are independent (lag-1 correlation -0.12), so 3 x 7 of them leave
# a sampling spread, and the median of 3 medians of 7 spread it most (the
# four quiet 17-row runs of 2026-11-27: a row's measured stall ranged over
# 4.2 points on average, up to 9.3, from run to run; their means 2.8, up to
# 6.3; sim16g's note).  One JSON line per configuration:
#   {"app", "ranks", "threads", "pipeline", "gbps", "gbps_tcp",
#    "net_cpu_ns_per_byte", "added_latency_us", "latency_us",
#    "rounds", "measured_epoch_s", "predicted_epoch_s", "epoch_error",
#    "measured_stall", "predicted_stall", "stall_error", "measured_compute_s",
#    "predicted_compute_s", "round_measured_epoch_s", "round_predicted_epoch_s",
#    "round_measured_stall", "round_predicted_stall", "round_measured_compute_s",
#    "round_predicted_compute_s", "round_rate", "round_busy_core_speed",
#    "round_latency_us", "round_latency_range_us", "calibrate_after",
#    "round_model_rate", "round_model_busy_core_speed", "calibration_ranks_cpu_rate",
#    "measured_compute_cpu_s", "round_measured_compute_cpu_s", "round_steal",
#    "round_measured_compute_sys_s", "round_compute_cpu_ratio", "epoch_given_measured_compute_s",
#    "stall_given_measured_compute", "round_epoch_given_measured_compute_s",
#    "round_stall_given_measured_compute",
#    "calibrations", "rate", "busy_core_speed", "step_overhead_us", "cell_cv",
#    "worker_cv", "step_cv", "cell_cv_cpu", "critical", "loadavg", "round_compute_cpu_ratio_ranks",
#    "busy_from", "round_ranks_busy_core_speed", "round_ranks_cpu_rate", "alt_busy_from",
#    "alt_predicted_epoch_s", "alt_predicted_stall", "round_alt_predicted_epoch_s",
#    "round_alt_predicted_stall", "wake_speed", "round_wake_rate_ratio", "statistic",
#    "measured_stall_ranks_mean", "predicted_stall_ranks_mean",
#    "round_measured_stall_ranks_mean", "round_predicted_stall_ranks_mean",
#    "measured_compute_gap_s", "predicted_compute_gap_s", "round_measured_compute_gap_s",
#    "round_predicted_compute_gap_s", "busy_pool", "busy_pool_calibrations",
#    "round_worker_factor_cv"}
# (the round_ lists: each round's figures, in order; rate and
# busy_core_speed: the medians of the speeds of the calibrations before the
# rounds; round_model_*: the speeds the model got (round_speed; busy_pool:
# the rule, busy_pool_calibrations: how many the busy speed pooled, 0 for
# round);
# calibration_ranks_cpu_rate: every calibration's, the closing one last.)
# (compute: the most any rank spends in its kernel per epoch, from the
# engine's debug log, median over the rounds, against the model's, which
# includes the sharing; the calibration's figures are the model's inputs;
# compute_cpu: the same in the CPU seconds of the ranks' threads inside the
# kernel, which leave out their waits for a core and count the kernel's
# work done in their time slices (compute_sys: the kernel's part of them, the
# busiest in it of the ranks); compute_cpu_ratio: that over the busiest
# node's work at the threaded calibration's CPU rate, all workers computing
# at once: above 1, the ranks' threads needed more CPU per unit of work than
# the calibration's; steal: the fraction of the machine's CPU time during
# the round's run that the hypervisor gave to others; the same ratio against
# the ranks' calibration: compute_cpu_ratio_ranks; alt_*: the prediction
# with the other --busy-from, for comparison; *_given_measured_compute:
# not a prediction but a diagnostic, the same model with each round's rate
# scaled so that its compute CPU is the measured one (given_scale): what
# error is left is the schedule's and the link's model, the rest came from
# the calibration).
# (worker_factor_cv: the cv of the factor per worker and rotation the model
# drew from --worker-cv, 0 where the cells' own spread averaged over a
# worker's cells already gives all of the measured spread: rev27 F10.)
# (stall_ranks_mean: the stall as the mean over the ranks of a rank's stall
# over its rotation, rotations after the first, against the model's
# stall_mean; means whatever --statistic: the engine's stall, the largest
# of the ranks', swings with whichever rank was the slower in a rotation,
# this one about a third as much.)
# (compute_gap: the slowest rank's compute less the fastest's per rotation,
# rotations after the first, the mean over them and the rounds, against the
# model's mean over its rotations (ranks_compute_gap); a diagnostic: a ring
# whose compute is the limit stalls about one transfer plus this gap.)
# stderr gets one line per configuration with its plan's figures so far
# (median and range) and its rounds' speeds.
# --auto: the plan of `rotor partition --pipeline auto` (for the measured
# link and the rate calibrated right before) against the default plan, run
# alternately; one JSON line with the medians and their ratio.
# --size large: a workload about 12x the default (MF 40,000 x 60,000 with
# 9M ratings at rank 128, LDA 15,000 documents of 150 tokens over 60,000
# words), so an epoch takes 0.4-1.3 s instead of 40-220 ms and the
# millisecond thread hand-offs and run-to-run noise weigh less; MF's block
# bytes grow with its compute (rank and columns alike), so 0.25-0.5 Gb/s
# stay bandwidth-bound on 2 cores.  Default epochs 8 (means over 7).
# --quick: 4 configurations, one round of 4 epochs each (about a minute).
# --keep: keep the scratch directory; per configuration
# (kept/APP.RANKS.THREADS.PIPELINE.GBPS.ADDED_US) every round's rank logs
# (round.N), with the model's command and per-node debug lines for that
# round and the calibration pairs run before it (one line each: rate,
# inline_us, step_us, cell_cv, step_cv, worker_cv, serial and threaded CPU
# rates, wake ratio) and the ranks' calibration's logs (calibration.log.R),
# and the closing calibration's (closing/); model_terms: the model terms and
# speed rule of the round's command (see MODEL_TERMS); kept/ORDER: the
# configurations' names in the order they ran (kept_order).
# --repredict DIR: runs nothing but the model: every configuration kept in
# DIR (the scratch directory of a --keep run, which it names on stderr) is
# predicted again, round by round, by this build's `rotor simulate` with
# the command kept beside the round (its plan taken from DIR), followed by
# what the kept logs give the model terms that came later (model_args_of),
# by the speed of this scale.sh's rule (--calibrate-after) from the kept
# calibrations where the round's command took another (speed_args_of), and
# by --model-args, against the figures the round's rank logs measured;
# one JSON line per configuration with the fields above that need no run
# (app to stall_error, the compute and round_ lists, the
# *_given_measured_compute ones, the stall_ranks_mean and compute_gap ones,
# round_model_busy_core_speed, busy_pool, busy_pool_calibrations,
# round_worker_factor_cv) and "model_args";
# --statistic applies to a kept run as to a live one.  So a change of the
# model is checked against a quiet run's data without running it again.
# Without root or namespaces it prints a message and exits 0.
# One scale.sh at a time owns the rtscale-* namespaces (lock
# /run/lock/rotor-scale.lock): a second one exits 2 saying so.  Every exit
# (normal, error, INT, TERM, HUP) removes them; a SIGKILLed run's are
# removed, with a message, by the next run.
set -euo pipefail
source "$(dirname "$0")/lib.sh"
ranks=2,4,8 gbps=1,5,25 apps=sgd-mf,lda epochs="" rounds=3 quick=0 keep=0 configs="" auto="" size=small
calibrations=1 tcp_cc="" slow_start_after_idle=0 busy_from=ranks wake_pause_us=50000 wake_pairs=3
repredict="" model_args="" calibrate_after=1 latency_repeats=3 statistic=mean ranks_calibration_epochs=""
busy_pool=plan rate_pool=round
BENCH_FLAGS=([quick]=quick=1 [keep]=keep=1)
bench_options 2,188 "$@"
case $busy_from in ranks | threads) ;; *) bench_fail "--busy-from is ranks or threads, not $busy_from" ;; esac
case $calibrate_after in 0 | 1) ;; *) bench_fail "--calibrate-after is 0 or 1, not $calibrate_after" ;; esac
case $busy_pool in plan | round) ;; *) bench_fail "--busy-pool is plan or round, not $busy_pool" ;; esac
case $rate_pool in round | config | plan) ;; *) bench_fail "--rate-pool is round, config or plan, not $rate_pool" ;; esac
[[ $latency_repeats =~ ^[1-9][0-9]*$ ]] || bench_fail "--latency-repeats is a count, not $latency_repeats"
case $statistic in mean | median) ;; *) bench_fail "--statistic is mean or median, not $statistic" ;; esac
[[ $ranks_calibration_epochs =~ ^([2-9]|[1-9][0-9]+)?$ ]] ||
    bench_fail "--ranks-calibration-epochs is a count of 2 or more, not $ranks_calibration_epochs"
case $size in
small) mf_cols=10000 mf_nnz=1500000 mf_rank=64 lda_docs=6000 lda_vocab=20000 ;;
large) mf_cols=60000 mf_nnz=9000000 mf_rank=128 lda_docs=15000 lda_vocab=60000 ;;
*) bench_fail "--size is small or large, not $size" ;;
esac
if [ -z "$epochs" ]; then
    if [ "$size" = large ]; then epochs=8; else epochs=6; fi
fi

PREFIX=rtscale
SUBNET=169.254.77
TMP=$(mktemp -d)
max_ranks=0 burst_kib=0 tsq_default=""

# Whoever holds this lock owns every $PREFIX-* namespace (and its pid is in it).
NETNS_LOCK=/run/lock/rotor-scale.lock
[ -d /run/lock ] || NETNS_LOCK=/tmp/rotor-scale.lock

skip() { echo "scale.sh: skipped: $*" >&2; rm -rf "$TMP"; exit 0; }

# Our namespaces ($PREFIX-0.., $PREFIX-sw), whatever run made them.
our_netns() { ip netns list 2>/dev/null | awk -v p="$PREFIX-" 'index($1, p) == 1 { print $1 }'; }

# Remove every $PREFIX-* namespace, ending the processes still inside it
# first (ours: only the holder of the lock gets here).
teardown() {
    local ns pids
    for ns in $(our_netns); do
        pids=$(ip netns pids "$ns" 2>/dev/null) || true
        # shellcheck disable=SC2086 # one pid a word
        [ -z "$pids" ] || kill $pids 2>/dev/null || true
        ip netns del "$ns" 2>/dev/null || true
    done
}

cleanup() {
    local pids
    pids=$(jobs -p)
    [ -n "$pids" ] && kill $pids 2>/dev/null || true
    teardown
    [ "$keep" = 1 ] && echo "scale.sh: kept $TMP" >&2 || rm -rf "$TMP"
}

# Take the namespaces: refuse while another scale.sh holds them; then any
# $PREFIX-* namespace left is a killed run's (a SIGKILL skips its cleanup),
# and goes.
own_netns() {
    local stale
    exec 9<>"$NETNS_LOCK" || { echo "scale.sh: cannot open $NETNS_LOCK" >&2; exit 2; }
    if ! flock -n 9; then
        echo "scale.sh: another bench/scale.sh (pid $(cat "$NETNS_LOCK")) is using" \
            "the $PREFIX-* namespaces ($NETNS_LOCK); run this one when it ends" >&2
        rm -rf "$TMP"
        exit 2
    fi
    echo $$ >"$NETNS_LOCK"
    stale=$(our_netns | tr '\n' ' ')
    [ -z "$stale" ] || echo "scale.sh: removing namespaces a killed run left: $stale" >&2
    teardown
}

[ -x "$ROTOR" ] || { echo "scale.sh: build rotor first ($ROTOR)" >&2; exit 2; }
if [ -n "$repredict" ]; then # the model alone, on kept data: no namespaces
    [ -d "$repredict/kept" ] || bench_fail "--repredict: no kept configurations in $repredict"
    trap 'rm -rf "$TMP"' EXIT
else
    [ "$(id -u)" = 0 ] || skip "needs root for ip netns and tc"
    command -v ip >/dev/null && command -v tc >/dev/null || skip "needs iproute2 (ip, tc)"
    own_netns
    # every exit path tears down: a signal exits through the EXIT trap
    trap cleanup EXIT
fi
RELAY=$(dirname "$ROTOR")/../bench/delay_relay
trap 'exit 130' INT
trap 'exit 143' TERM
trap 'exit 129' HUP
# every rank of a job proves this secret to the others (bench-link and train)
ROTOR_TOKEN=${ROTOR_TOKEN:-$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')}
export ROTOR_TOKEN

# ---- network ----

# netns_up N: namespaces for ranks 0..N-1 plus the switch, no shaping yet.
netns_up() {
    max_ranks=$1
    ip netns add "$PREFIX-sw" || skip "cannot create network namespaces"
    ip -n "$PREFIX-sw" link add br0 type bridge || skip "cannot create a bridge"
    ip -n "$PREFIX-sw" link set br0 up
    ip -n "$PREFIX-sw" link set lo up
    for ((r = 0; r < $1; r++)); do
        local ns=$PREFIX-$r
        ip netns add "$ns"
        [ -n "$tsq_default" ] || tsq_default=$(ip netns exec "$ns" sysctl -n net.ipv4.tcp_limit_output_bytes)
        ip -n "$ns" link set lo up
        tcp_setup "$ns"
        ip -n "$ns" link add eth0 type veth peer name "p$r" netns "$PREFIX-sw"
        ip -n "$ns" addr add "$SUBNET.$((r + 1))/24" dev eth0
        ip -n "$ns" link set eth0 up
        ip -n "$PREFIX-sw" link set "p$r" master br0
        ip -n "$PREFIX-sw" link set "p$r" up
        # the relay's side door to the bridge (used with added latency)
        ip -n "$PREFIX-sw" link add "d$r" type veth peer name "q$r"
        ip -n "$PREFIX-sw" link set "d$r" up
        ip -n "$PREFIX-sw" link set "q$r" up
    done
}

# tcp_setup NS: the rank namespace's TCP.  After an idle moment longer than
# its retransmission timeout Linux restarts a connection's window
# (tcp_slow_start_after_idle); a ring's link idles between blocks whenever
# compute is the limit, and the model's link has one rate whatever came
# before, so it is off by default (--slow-start-after-idle 1: the kernel's
# default; at +1000 us, 3 rounds each under load, the stall was 18.5-20.5%
# with it and 17.5-18.2% without).  --tcp-cc NAME: the congestion control
# (default: the kernel's, bbr here).
tcp_setup() {
    ip netns exec "$1" sysctl -qw net.ipv4.tcp_slow_start_after_idle="$slow_start_after_idle"
    [ -z "$tcp_cc" ] || ip netns exec "$1" sysctl -qw net.ipv4.tcp_congestion_control="$tcp_cc"
}

# add_latency US: every frame a rank sends is held US us by delay_relay in
# the switch namespace (rank r's port p$r leaves the bridge; the relay
# forwards between it and d$r, whose peer q$r takes its place), so every
# one-way path between two ranks gains US once; 0: the plain bridge.  The
# tbf shaping (on eth0 and p$r) is unchanged.
relay_pid=""
add_latency() {
    local us=$1 pairs=() r sw=$PREFIX-sw
    if [ -n "$relay_pid" ]; then
        kill "$relay_pid" 2>/dev/null || true
        wait "$relay_pid" 2>/dev/null || true
        relay_pid=""
    fi
    for ((r = 0; r < max_ranks; r++)); do
        if [ "$us" = 0 ]; then
            ip -n "$sw" link set "q$r" nomaster
            ip -n "$sw" link set "p$r" master br0
        else
            ip -n "$sw" link set "p$r" nomaster
            ip -n "$sw" link set "q$r" master br0
            pairs+=("p$r:d$r")
        fi
    done
    [ "$us" != 0 ] || return 0
    [ -x "$RELAY" ] || { echo "scale.sh: build delay_relay first ($RELAY)" >&2; exit 2; }
    ip netns exec "$sw" "$RELAY" --delay-us "$us" "${pairs[@]}" &
    relay_pid=$!
    sleep 0.3
}

# shape GBPS: tbf on both ends of every rank's link (0 = unshaped).
shape() {
    local rate=$1 burst
    # A burst of ~1 ms of traffic (at least 256 KiB) keeps tbf accurate at
    # high rates and cheap at low ones (a smaller bucket splits every 64 KiB
    # GSO packet, and those copies take the ranks' cores).  After an idle
    # moment a full bucket goes out at once, which a real link does not do:
    # the model is told (--burst-kib).
    burst=$(awk -v g="$rate" 'BEGIN { b = g * 1e9 / 8 / 1000; if (b < 262144) b = 262144; printf "%d", b }')
    burst_kib=$((burst / 1024))
    for ((r = 0; r < max_ranks; r++)); do
        # TCP small queues: what a socket may hold in the qdisc below it.  Linux's
        # 4 MiB is 3 ms on a 10 Gb/s NIC but 130 ms at 0.25 Gb/s, and a rank's
        # tbf queue holds the other flow's ACKs behind it (its data to the next
        # rank and the ACKs of the previous rank's data share eth0): the reverse
        # flow then stalls for tens of ms, and the ranks' phases come apart.
        # A bucket's worth (about 1 ms of the rate) keeps the link busy; unshaped,
        # the kernel's own (tsq_default, read in a fresh namespace).
        ip netns exec "$PREFIX-$r" sysctl -qw \
            net.ipv4.tcp_limit_output_bytes="$([ "$rate" = 0 ] && echo "$tsq_default" || echo "$burst")"
        tc -n "$PREFIX-$r" qdisc del dev eth0 root 2>/dev/null || true
        tc -n "$PREFIX-sw" qdisc del dev "p$r" root 2>/dev/null || true
        [ "$rate" = 0 ] && continue
        tc -n "$PREFIX-$r" qdisc add dev eth0 root tbf rate "${rate}gbit" burst "$burst" latency 200ms
        tc -n "$PREFIX-sw" qdisc add dev "p$r" root tbf rate "${rate}gbit" burst "$burst" latency 200ms
    done
}

hostfile() { # hostfile N PORT FILE
    : >"$3"
    for ((r = 0; r < $1; r++)); do echo "$SUBNET.$((r + 1)):$(($2 + r))" >>"$3"; done
}

# Run CMD... in namespaces 0..N-1 as ranks of one job; logs in $TMP/log.R.
port=21000
run_ranks() { # run_ranks N CMD...
    local n=$1; shift
    port=$((port + 16))
    hostfile "$n" "$port" "$TMP/hosts"
    local pids=() rc=0
    for ((r = 0; r < n; r++)); do
        ip netns exec "$PREFIX-$r" "$@" --node "$r" --nodes "$n" --hostfile "$TMP/hosts" \
            >"$TMP/out.$r" 2>"$TMP/log.$r" &
        pids+=($!)
    done
    for p in "${pids[@]}"; do wait "$p" || rc=1; done
    return $rc
}

# bench-link between namespaces 0 and 1; prints rank 0's JSON.
link_bench() { # link_bench ARGS...
    port=$((port + 16))
    hostfile 2 "$port" "$TMP/hosts2"
    ip netns exec "$PREFIX-1" "$ROTOR" bench-link --rank 1 --size 2 --hostfile "$TMP/hosts2" \
        --transport tcp --json "$@" >/dev/null 2>&1 &
    ip netns exec "$PREFIX-0" "$ROTOR" bench-link --rank 0 --size 2 --hostfile "$TMP/hosts2" \
        --transport tcp --json "$@" 2>/dev/null
    wait
}

# One-way latency between two namespaces as the links are now (shaping and
# relay), in microseconds: "median min max" over --latency-repeats measures,
# each the median of 200 8-byte ring passes.  Two quiet runs minutes apart
# measured 109 and 373 us once each at their start; the model's +0 rows
# moved by under 1.2 points of stall between the two, but one figure per run
# hid that spread.
measure_latency() {
    local i
    for ((i = 0; i < latency_repeats; i++)); do
        link_bench --test lat --min-size 8 --max-size 8 --iters 200 |
            sed -n 's/.*"t_typical_usec": \([0-9.]*\).*/\1/p'
    done | sort -g | awk '{ a[NR] = $1 }
        END { if (NR) printf "%s %s %s\n", (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2), a[1], a[NR] }'
}

# CPU seconds the kernel has spent (system, irq, softirq; all cores), from /proc/stat
# (and the delay relay's own user time: its copies are the emulated link's)
kernel_cpu_s() {
    local u=0
    [ -z "$relay_pid" ] || u=$(awk '{ print $14 }' "/proc/$relay_pid/stat" 2>/dev/null || echo 0)
    awk -v u="$u" '/^cpu / { printf "%.2f", ($4 + $7 + $8 + u) / 100; exit }' /proc/stat
}

# What TCP gets through the shaped link (2 MiB blocks, Gb/s): the link
# model's bandwidth.  tbf plus TCP's congestion control rarely reach the
# nominal rate, and on a 2-core machine the copies bound the fast rates.
measure_gbps() {
    link_bench --test bw --min-size 2M --max-size 2M --iters 20 |
        sed -n 's/.*"bw_mb_per_sec": \([0-9.]*\).*/\1/p' | awk '{ printf "%.3f", $1 * 8 / 1000 }'
}

# What moving a byte from one rank to another costs the kernel in CPU
# (copies at both ends, veth, bridge, tbf), in ns: the kernel time of the
# whole machine while 600 MiB go through a 5 Gb/s link (about a second),
# less its rate over the second before, over the bytes; the median of three.
# At 0.25-1 Gb/s the same measure swung from 0 to 7 ns (too few bytes for
# /proc/stat's 10 ms ticks and the other sessions' kernel time); at 5 Gb/s
# it gave 1.2-1.4, and 1.3-1.5 at 1 Gb/s when it was not lost in the noise,
# so one figure serves all rates.
measure_net_cpu() {
    local k0 k1 k2 t1 t2
    shape 5
    for _ in 1 2 3; do
        k0=$(kernel_cpu_s)
        sleep 1
        k1=$(kernel_cpu_s) t1=$(date +%s.%N)
        link_bench --test bw --min-size 2M --max-size 2M --iters 300 >/dev/null
        k2=$(kernel_cpu_s) t2=$(date +%s.%N)
        awk -v a="$k0" -v b="$k1" -v c="$k2" -v t1="$t1" -v t2="$t2" \
            'BEGIN { x = (c - b) - (b - a) * (t2 - t1); printf "%.3f\n", (x > 0 ? x : 0) * 1e9 / (300 * 2 * 1048576) }'
    done | median
}

# The delay relay's CPU per byte (ns) while 2 MiB blocks stream through the
# link shaped at GBPS for about a second: its schedstat (ns, exact; it
# runs the receive path of the frames it forwards in its own time); the
# median of three.  Unlike the kernel's own, it depends on the rate: below a
# few Gb/s every 64 KiB frame (data or ACK) wakes it, while at 5 Gb/s it
# takes about three a wake-up (2026-11-27, +1000 us: 20-22 wake-ups per MB
# and 2.2-2.6 ns/B at 1 Gb/s, 7.6-8.3 and 1.5-1.8 at 5 Gb/s).
relay_ns_at() { # relay_ns_at GBPS
    local iters c0 c1
    shape "$1"
    iters=$(awk -v g="$1" 'BEGIN { n = int(g * 1e9 / 8 / 2097152); print (n < 8 ? 8 : n) }')
    for _ in 1 2 3; do
        c0=$(awk '{ print $1 }' "/proc/$relay_pid/schedstat")
        link_bench --test bw --min-size 2M --max-size 2M --iters "$iters" >/dev/null
        c1=$(awk '{ print $1 }' "/proc/$relay_pid/schedstat")
        awk -v a="$c0" -v b="$c1" -v n="$iters" 'BEGIN { printf "%.3f\n", (b - a) / (n * 2097152) }'
    done | median
}

# net_cpu_at GBPS NET5 [RELAY5]: the CPU per byte the model gets for a link
# of GBPS: measure_net_cpu's figure at 5 Gb/s (NET5), which holds for every
# rate without the relay, and through the relay (RELAY5: its relay_ns_at 5)
# plus what the relay's part costs more at GBPS than at 5 Gb/s.  Taken at 5
# Gb/s alone the relay rows' cells got 0.7 ns/B too little of the cores'
# time at 1 Gb/s, and the 8 quiet relay rows of two runs were predicted
# 6.7% fast on average (3.3% with the figure at their rate; sim16e's note).
net_cpu_at() {
    if [ -z "${3:-}" ] || [ "$1" = 5 ]; then
        echo "$2"
        return
    fi
    awk -v b="$2" -v r="$(relay_ns_at "$1")" -v f="$3" \
        'BEGIN { x = b + r - f; printf "%.3f\n", (x > 0 ? x : 0) }'
}

# ---- data and runs ----

# Workload per app: transfer and compute of the same order at 1-5 Gb/s
# on one core per rank, so the stall moves with the link.
gen_plan() { # gen_plan APP RANKS THREADS OUT [PARTITION OPTIONS...]
    local app=$1 n=$2 th=$3 out=$4
    shift 4
    mkdir -p "$(dirname "$out")"
    if [ "$app" = lda ]; then
        [ -f "$TMP/corpus.txt" ] || "$ROTOR" gen lda --docs "$lda_docs" --vocab "$lda_vocab" --topics 50 \
            --doc-len 150 --seed 1 --out "$TMP/corpus.txt" >/dev/null 2>&1
        "$ROTOR" partition --app lda --input "$TMP/corpus.txt" --nodes "$n" --threads "$th" \
            --seed 1 --out "$out" --force "$@" 2>"$out.log" >/dev/null
    else
        [ -f "$TMP/mf.txt" ] || "$ROTOR" gen mf --rows 40000 --cols "$mf_cols" --nnz "$mf_nnz" \
            --rank 8 --seed 1 --out "$TMP/mf.txt" >/dev/null 2>&1
        "$ROTOR" partition --input "$TMP/mf.txt" --nodes "$n" --threads "$th" --seed 1 \
            --out "$out" --force "$@" 2>"$out.log" >/dev/null
    fi
}

app_args() { # the app's options (block size and kernel cost)
    if [ "$1" = lda ]; then echo "--topics 100 --iters $epochs --eval-every 1"
    else echo "--rank $mf_rank --epochs $epochs"; fi
}

col_bytes() { # what a column adds to a block with app_args: K counts, or k floats and a bias
    if [ "$1" = lda ]; then echo 400; else echo $((mf_rank * 4 + 4)); fi
}

# "seconds stall_fraction" of every epoch after the first, from rank 0's log
# (the engine's stall there is the largest over the ranks): $TMP/log.0, or FILE
epochs_of_run() { # epochs_of_run [FILE]
    local f=${1:-$TMP/log.0}
    if grep -q 'lda iter' "$f"; then
        sed -n 's/.*last sweep \([0-9.]*\)s stall *\([0-9.]*\)%.*/\1 \2/p' "$f"
    else
        sed -n 's/.*epoch *[0-9]* *\([0-9.]*\)s .*stall *\([0-9.]*\)%.*/\1 \2/p' "$f"
    fi | tail -n +2 | awk '{ printf "%s %.4f\n", $1, $2 / 100 }'
}

# "epoch stall": the --statistic of the epochs in FILE ("nan nan" if none)
epoch_stats() { # epoch_stats FILE
    [ -s "$1" ] || { echo "nan nan"; return; }
    echo "$(col_stat 1 "$1") $(col_stat 2 "$1")"
}

# ranks_stall_mean RANKS LOG_PREFIX: the stall as the mean over the ranks (not
# the engine's max) of each rank's stall over its rotation, in the rotations
# after the first that every rank logged, averaged over them; nan if none.
# The max swings with whichever rank was the slower in a rotation (the
# quiet runs' sgd-mf 2 x 1 at 1 Gb/s: an epoch's max varied by 5.4 points
# sd within a round, the mean over ranks by 1.9), so this one repeats better
# from run to run; the model's is its "stall_mean".
ranks_stall_mean() {
    for ((r = 0; r < $1; r++)); do
        sed -n 's/.*engine: rank \([0-9]*\) rotation: \([0-9.]*\) s, .* stall \([0-9.]*\) s, .*(rotation \([0-9]*\)).*/\1 \4 \2 \3/p' \
            "$2.$r" 2>/dev/null
    done | awk -v n="$1" '$2 > 0 && $3 > 0 { s[$2] += $4 / $3; c[$2]++ }
        END { for (k in c) if (c[k] == n) { t += s[k] / n; m++ }
              if (m) printf "%.4f\n", t / m; else print "nan" }'
}

# ranks_compute_gap RANKS LOG_PREFIX: how far the slowest rank's compute
# lags the fastest's in a rotation (the largest less the smallest of the
# ranks' compute seconds, wall, as the engine logs them), in the rotations
# after the first that every rank logged, averaged over them; nan if none.
# Beside the model's compute_gap_s: the stall of a compute-bound ring is
# about a transfer plus this gap (the quiet runs' sgd-mf 2 x 1 at 1 Gb/s:
# 0.068 s measured against the model's 0.056, the 3-4 points of stall it
# missed; at 5 Gb/s 0.058 against 0.056, and no miss; sim16i's note).
ranks_compute_gap() {
    for ((r = 0; r < $1; r++)); do
        sed -n 's/.*engine: rank \([0-9]*\) rotation: [0-9.]* s, compute \([0-9.]*\) s .*(rotation \([0-9]*\)).*/\3 \2/p' \
            "$2.$r" 2>/dev/null
    done | awk -v n="$1" '$1 > 0 { k = $1; c[k]++
            if (!(k in hi) || $2 > hi[k]) hi[k] = $2
            if (!(k in lo) || $2 < lo[k]) lo[k] = $2 }
        END { for (k in c) if (c[k] == n) { t += hi[k] - lo[k]; m++ }
              if (m) printf "%.4f\n", t / m; else print "nan" }'
}

declare -A rate step_us cell_cv step_cv worker_cv inline_us busy_speed wake
# The kernel rate of one thread on this machine now (serial, unpinned): a
# rank's thread computes at that rate while it has a core to itself (the
# model shares the cores); the rest of a serial step is what a step costs
# when the engine runs its cells inline (--inline-steps auto, below 2 ms).  Then, with all the job's workers at once on
# these cores (--calibrate-threads: every worker a thread of one process),
# what a step costs beyond its cells (from the step's start to its first
# cell's, and from its last cell's end to the next step: the thread
# hand-offs; not the step less its slowest cell, which with more workers
# than cores holds the cells' waits for a core, 1-4 ms a step, that the
# model's sharing of the cores makes again: sim16s) and
# how much that and a cell's time vary (the time slices that the model's
# even sharing smooths out: a cell's wall seconds; in CPU seconds, column
# 10, the spread is 0.16 against 0.32-0.64 wall at 8 workers, 0.11-0.14
# against 0.12-0.34 at 2, and the model given it predicted the two quiet
# runs' stall worse, within both limits in 25 of 34 rows against 28: the
# sharing does not make the wall spread by itself).  Prints "rate inline_us
# step_us cell_cv step_cv worker_cv serial_cpu_rate threads_cpu_rate
# wake_ratio cell_cv_cpu": the CPU rates are the work per CPU second of the
# visits (time slices waiting for a core left out), one thread alone and
# all the workers at once.
calibrate_once() { # calibrate_once APP PLAN KEY
    local out serial_cpu r inl pause=0 wake_n
    # shellcheck disable=SC2046
    out=$("$ROTOR" simulate --plan "$2" --app "$1" $(app_args "$1") --calibrate --gbps 0 \
        --json 2>&1) || { echo "$out" >&2; return 1; }
    r=$(json_num rate "$out") inl=$(json_num step_overhead_us "$out")
    serial_cpu=$(json_num busy_rate "$out")
    # the wake ratio in the plan's first --wake-pairs pairs (2 more rotations and the pauses)
    wake_n=$(wake_ratios "$TMP/calibration.$3" | wc -l)
    [ "$wake_n" -ge "$wake_pairs" ] || pause=$wake_pause_us
    # shellcheck disable=SC2046
    out=$("$ROTOR" simulate --plan "$2" --app "$1" $(app_args "$1") --calibrate-threads \
        --calibrate-pause-us "$pause" --gbps 0 --json 2>&1) || { echo "$out" >&2; return 1; }
    echo "$r $inl $(json_num step_overhead_us "$out") $(json_num cell_cv "$out")" \
        "$(json_num step_cv "$out") $(json_num worker_cv "$out") $serial_cpu" \
        "$(json_num busy_rate "$out") $(awk -v x="$(json_num wake_rate_ratio "$out")" \
            'BEGIN { print (x + 0 > 0 ? x : "null") }') $(json_num cell_cv_cpu "$out")"
}

# wake_ratios FILE: the wake ratios measured in a plan's calibration pairs
wake_ratios() {
    [ -f "$1" ] || return 0
    awk '$9 != "" && $9 != "null" { print $9 }' "$1"
}

json_num() { echo "$2" | sed -n "s/.*\"$1\": \([0-9.e+-]*\).*/\1/p"; } # json_num NAME JSON

# busy_of SERIAL_CPU_RATE THREADS_CPU_RATE: busy_core_speed, a core's rate
# while all compute at once over its rate alone, in [0.01, 1].
busy_of() {
    awk -v s="$1" -v t="$2" \
        'BEGIN { f = s > 0 && t > 0 ? t / s : 1; if (f > 1) f = 1; if (f < 0.01) f = 0.01; printf "%.3f", f }'
}

# plan_figures KEY: the plan's figures (rate, inline_us, step_us, cell_cv,
# step_cv, worker_cv, busy_speed [KEY]): the median of each over every
# calibration pair this plan has had in this run so far.  busy_speed is the
# ratio of the two CPU rates' medians (the serial run's rate moves most:
# 9.6-11.7 M/s in five pairs, with the threaded pair's ratio 0.98-0.72
# against it).  A round's prediction takes its speed (rate, busy_speed)
# from the pair run right before it instead (calibrate_round).
plan_figures() {
    local key=$1 f=$TMP/calibration.$1
    rate[$key]=$(col_median 1 "$f") inline_us[$key]=$(col_median 2 "$f")
    step_us[$key]=$(col_median 3 "$f") cell_cv[$key]=$(col_median 4 "$f")
    step_cv[$key]=$(col_median 5 "$f") worker_cv[$key]=$(col_median 6 "$f")
    busy_speed[$key]=$(busy_of "$(col_median 7 "$f")" "$(col_median 8 "$f")")
    wake[$key]=$(busy_of 1 "$(wake_ratios "$f" | median)")
}

# calibrate APP PLAN KEY PAIRS: PAIRS more calibration pairs of the plan
# (added to $TMP/calibration.KEY; their lines alone in $TMP/pairs), then the
# plan's figures.
calibrate() {
    local key=$3 i
    : >"$TMP/pairs"
    for ((i = 0; i < $4; i++)); do
        calibrate_once "$1" "$2" "$key" >>"$TMP/pairs" || return 1
        tail -n 1 "$TMP/pairs" >>"$TMP/calibration.$key"
    done
    plan_figures "$key"
}

# calibrate_round APP PLAN KEY: the machine's speed right before a round,
# in $TMP/speed ("rate busy_core_speed threads_cpu_rate": medians over
# $calibrations pairs run now).  This
# VM's speed drifts within minutes (last session's quiet runs: calibrated
# rates 30% lower in one run than in the one before, and one plan 60%
# slower at its last configuration than at its first), so a calibration
# made once per plan, or once per configuration, predicts rounds run at
# another speed; the shape of the machine's noise (step costs, the cvs)
# changes less and is pooled over all the plan's pairs (plan_figures).
calibrate_round() {
    calibrate "$1" "$2" "$3" "$calibrations" || return 1
    echo "$(col_median 1 "$TMP/pairs")" \
        "$(busy_of "$(col_median 7 "$TMP/pairs")" "$(col_median 8 "$TMP/pairs")")" \
        "$(col_median 8 "$TMP/pairs")" >"$TMP/speed"
}

range() { cut -d' ' -f"$1" "$2" | sort -g | sed -n '1p;$p' | paste -sd- -; } # range COLUMN FILE

declare -A effective
plan_dir() { echo "$TMP/$1.$2.$3.$4/plan"; } # plan_dir APP RANKS THREADS PIPELINE

# ranks_calibration APP RANKS THREADS PIPELINE: the job itself for a few
# epochs, its ranks as processes on this machine talking TCP through the
# loopback (no shaping, no relay: the link costs next to nothing, so every
# rank computes nearly all the time); prints "busy_core_speed cpu_rate
# serial_cpu_rate": the busiest rank's work per CPU second of its cells (its
# median over the rotations after the first), that over the serial
# calibration's CPU rate (busy_of) and the latter.  Unlike --calibrate-threads (the workers as threads of
# one process) it pays what the measured run pays besides the link: one
# process per rank with its transport threads, their time slices on
# shared cores, and the TCP copies of every block in the ranks' time.
ranks_calibration() {
    local app=$1 n=$2 th=$3 plan r pids=() rc=1 try work cpu
    plan=$(plan_dir "$app" "$n" "$th" "$4")
    # The loopback is the machine's: other programs' ports, and below 32768
    # (Linux's ephemeral range starts there) none of its outgoing
    # connections'; a port taken anyway: another try on others.
    for ((try = 0; try < 3 && rc != 0; try++)); do
        port=$((port + 16)) pids=() rc=0
        : >"$TMP/hosts.lo"
        for ((r = 0; r < n; r++)); do
            echo "127.0.0.1:$((port % 8000 + 24000 + r))" >>"$TMP/hosts.lo"
        done
        for ((r = 0; r < n; r++)); do
            # shellcheck disable=SC2046
            ROTOR_LOG=debug "$ROTOR" train --plan "$plan" --app "$app" $(app_args "$app") \
                $(calibration_epochs "$app") --threads "$th" --transport tcp --pin no --node "$r" \
                --nodes "$n" --hostfile "$TMP/hosts.lo" >/dev/null 2>"$TMP/cal.$r" &
            pids+=($!)
        done
        for p in "${pids[@]}"; do wait "$p" || rc=1; done
    done
    [ "$rc" = 0 ] || { tail -n 5 "$TMP"/cal.* >&2; return 1; }
    ranks_rate "$app" "$plan" "$n" "$TMP/cal" >"$TMP/ranks_rate" || return 1
    echo "$(busy_of "$(col_median 7 "$TMP/pairs")" "$(cat "$TMP/ranks_rate")")" \
        "$(cat "$TMP/ranks_rate") $(col_median 7 "$TMP/pairs")"
}

# ranks_rate APP PLAN RANKS LOG_PREFIX: the busiest node's work per CPU
# second of its cells in the ranks' calibration logs (LOG_PREFIX.R): the
# busiest rank's median over its rotations after the first (0 if none)
ranks_rate() {
    local work cpu
    work=$(busiest_work "$1" "$2") || return 1
    cpu=$(rank_max_median "$3" "compute CPU" "$4")
    awk -v w="$work" -v c="$cpu" 'BEGIN { printf "%.6g\n", (c > 0 ? w / c : 0) }'
}

# ranks_spread PLAN RANKS APP LOG_PREFIX: how much the ranks' speeds differ
# within a rotation when each is a process of its own (its vCPU, the cache
# and memory it shares with the others): over the rotations after the
# first in the ranks' logs (LOG_PREFIX.R, the engine's debug lines), the
# coefficient of variation across the ranks of a rank's compute CPU (the
# CPU seconds of its threads in its kernel) per unit of its node's work,
# the root mean square over the rotations; nothing if the logs lack it.
# CPU seconds, not wall: the model shares the cores among the busy workers
# itself, so the waits for a core that more ranks than cores make are its
# output, and a spread measured in wall seconds counts them a second time
# (8 ranks on 2 cores: wall 0.08-0.19, CPU 0.02-0.07 in the same logs; 2
# ranks, a core each: both alike).  The threaded calibration's worker_cv is
# the same figure for threads of one process.
ranks_spread() {
    local plan=$1 n=$2 app=$3 prefix=$4 r work rate1
    rate1=$(plan_at_rate_1 "$app" "$plan") || return 1
    work=$(sed -n 's/.*simulate: node \([0-9]*\) rotation: .*, compute \([0-9.]*\) s .*/\1:\2/p' \
        "$rate1.log" | paste -sd, -)
    for ((r = 0; r < n; r++)); do
        [ -f "$prefix.$r" ] || return 0
        sed -n 's/.*engine: rank \([0-9]*\) rotation: .*(rotation \([0-9]*\)), compute CPU \([0-9.]*\) s.*/\1 \2 \3/p' \
            "$prefix.$r"
    done | awk -v work="$work" -v n="$n" '
        BEGIN { m = split(work, w, ","); for (i = 1; i <= m; i++) { split(w[i], f, ":"); wk[f[1]] = f[2] } }
        $2 > 0 && wk[$1] > 0 { x[$2, $1] = $3 / wk[$1]; seen[$2]++ }
        END {
            for (k in seen) {
                if (seen[k] != n || n < 2) continue
                s = 0; for (r = 0; r < n; r++) s += x[k, r]
                mean = s / n; v = 0
                for (r = 0; r < n; r++) v += (x[k, r] - mean) ^ 2
                if (mean > 0) { sum += v / (n - 1) / mean ^ 2; rots++ }
            }
            if (rots) printf "%.4f\n", sqrt(sum / rots)
        }'
}

# worker_cv_of THREADED_CV KEY: the model's --worker-cv for the plan KEY: the
# larger of the threaded calibration's and the ranks' spreads (ranks_spread)
# measured so far for the plan ($TMP/ranks_cv.KEY), pooled as a root mean
# square (the pooled estimate of a variance: the median of cvs each taken
# from 2-8 ranks over 3 rotations sits below it, their spread being skewed)
worker_cv_of() {
    local pooled=""
    [ ! -s "$TMP/ranks_cv.$2" ] ||
        pooled=$(awk '{ s += $1 * $1; n++ } END { if (n) printf "%.4f", sqrt(s / n) }' "$TMP/ranks_cv.$2")
    awk -v t="$1" -v p="$pooled" 'BEGIN { printf "%.4g\n", (p != "" && p + 0 > t + 0 ? p : t) }'
}

# calibration_epochs APP: the ranks' calibration's length, a short run (about
# 2 s; the medians over all epochs but the first): sgd-mf 4 epochs, or
# --ranks-calibration-epochs; LDA 10 iterations (0.1 s each at --size
# large).  In the four quiet 17-row runs the busiest rank's CPU per rotation
# of an sgd-mf row's 4 calibrations (3 rounds and the closing one) varied by
# 8.2% (sd of ln) where its 3 rounds' (7 rotations each) varied by 5.1%: the
# same noise per rotation, over fewer rotations (5.1% x sqrt(7/3) = 7.8%),
# not drift (lda: 6.7% and 5.3%).  8 epochs would bring sgd-mf's near the rounds'; 4 epochs more
# cost about 2 s a calibration at --size large, 110 s over the 13 sgd-mf
# rows of the 17-row run.
calibration_epochs() {
    if [ "$1" = lda ]; then echo "--iters 10"; else echo "--epochs ${ranks_calibration_epochs:-4}"; fi
}

# calibrate_speed APP RANKS THREADS PIPELINE [serial]: one calibration of
# the machine's speed (calibrate_round, then ranks_calibration; the ranks'
# spread pooled for the plan), separate short runs of the app's kernel,
# never a measured round; appends its "rate threads_cpu_rate ranks_cpu_rate
# serial_cpu_rate" to $TMP/speeds (round_speed takes a round's from there).
# serial: the serial calibration alone in place of the pair (threads_cpu_rate
# 0, the threaded calibration's figures not pooled): the closing
# calibration, which brackets a round's speed and needs no more (the plan's
# pooled figures have every round's pair), saving a threaded run a
# configuration (3-7 s).
calibrate_speed() {
    local plan key=$1.$2.$3.$4 out
    plan=$(plan_dir "$1" "$2" "$3" "$4")
    if [ "${5:-}" = serial ]; then
        # shellcheck disable=SC2046
        out=$("$ROTOR" simulate --plan "$plan" --app "$1" $(app_args "$1") --calibrate --gbps 0 \
            --json 2>&1) || { echo "$out" >&2; return 1; }
        echo "$(json_num rate "$out") $(json_num step_overhead_us "$out") 0 0 0 0" \
            "$(json_num busy_rate "$out") 0 null 0" >"$TMP/pairs"
        echo "$(json_num rate "$out") 1 0" >"$TMP/speed"
    else
        calibrate_round "$1" "$plan" "$key" || return 1
    fi
    ranks_calibration "$1" "$2" "$3" "$4" >"$TMP/ranks_speed" || return 1
    ranks_spread "$plan" "$2" "$1" "$TMP/cal" >>"$TMP/ranks_cv.$key" || return 1
    echo "$(cut -d' ' -f1,3 "$TMP/speed") $(cut -d' ' -f2,3 "$TMP/ranks_speed")" >>"$TMP/speeds"
    tail -n 1 "$TMP/speeds" >>"$TMP/plan_speeds.$key"
}

# keep_calibration DIR RANKS: the calibration just made (its pair and the
# ranks' logs) into DIR, when --keep
keep_calibration() {
    [ "$keep" = 1 ] || return 0
    mkdir -p "$1"
    cp "$TMP/pairs" "$1/calibration"
    for ((r = 0; r < $2; r++)); do cp "$TMP/cal.$r" "$1/calibration.log.$r"; done
}

# round_speed ROUND FILE FROM: "rate busy_core_speed" for round ROUND (1..)
# from the calibrations in FILE (lines of "rate threads_cpu_rate
# ranks_cpu_rate serial_cpu_rate"; line ROUND was made right before the
# round, line ROUND + 1 right after it, before the next round or, after the
# last, as the configuration's closing calibration): with --calibrate-after
# 1 the geometric mean of each figure over the two, else line ROUND's alone.
# The machine's speed drifts while a round runs (quiet runs: a round's CPU
# per unit of work off its calibration's by 10% rms, 8% against the two
# around it), and a calibration is short (3 rotations), so the pair
# brackets the round and halves a calibration's own noise.  FROM ranks:
# the cores compute at the ranks' CPU rate while all are busy, and alone at
# the serial calibration's unless the ranks were faster: rate x max(1,
# ratio), busy core speed min(1, ratio), ratio the ranks' CPU rate over the
# serial one's (the serial run's wall over CPU rate, a core shared with
# other processes, stays in both); threads: the serial wall rate, and the
# threaded calibration's CPU rate over the serial one's (busy_of), each
# calibration's ratio of its own pair, then their geometric mean: the
# closing calibration has no threaded run (threads_cpu_rate 0), and the
# last round's own threaded rate over the mean of two serial ones (rev22
# F4) took its busy speed from a pair never measured together.
# RATE (optional): the serial wall rate pooled by --rate-pool (pooled_rate),
# in place of the pair's.
round_speed() {
    local pooled=""
    [ -z "${4:-}" ] || [ ! -s "$4" ] || pooled=$(pooled_ratio "$4" "$3")
    sed -n "$1,$(($1 + calibrate_after))p" "$2" | awk -v from="$3" -v pooled="$pooled" -v prate="${5:-}" '
        { for (i = 1; i <= 4; i++) if ($i + 0 > 0) { l[i] += log($i); c[i]++ } }
        $2 + 0 > 0 && $4 + 0 > 0 { lp += log($2 / $4); cp++ }
        function g(i) { return c[i] ? exp(l[i] / c[i]) : 0 }
        END {
            r = g(1); k = g(3); s = g(4)
            if (prate + 0 > 0) r = prate
            if (from == "ranks") {
                x = (k > 0 && s > 0) ? k / s : 1
                if (pooled != "") x = pooled
                if (x < 0.01) x = 0.01
                printf "%.6g %.4g\n", (x > 1 ? r * x : r), (x > 1 ? 1 : x)
            } else {
                f = cp ? exp(lp / cp) : 1
                if (pooled != "") f = pooled
                if (f > 1) f = 1; if (f < 0.01) f = 0.01
                printf "%.6g %.3f\n", r, f
            }
        }'
}

# pooled_rate KEY: the serial wall rate every round of a configuration of
# the plan KEY gets by --rate-pool: config, the geometric mean over the
# configuration's calibrations ($TMP/speeds: its rounds' and the closing
# one); plan, the median over the plan's so far ($TMP/plan_speeds.KEY);
# round: nothing (the pair around the round, round_speed).
pooled_rate() {
    case $rate_pool in
    config) awk '$1 + 0 > 0 { l += log($1); n++ } END { if (n) printf "%.6g\n", exp(l / n) }' "$TMP/speeds" ;;
    plan) [ ! -s "$TMP/plan_speeds.$1" ] || awk '$1 + 0 > 0 { print $1 }' "$TMP/plan_speeds.$1" | median "" ;;
    esac
}

# pooled_ratio FILE FROM: the busy ratio pooled over every calibration in
# FILE (lines as round_speed's): the median of each calibration's own ratio,
# the ranks' CPU rate over the serial one's (FROM ranks) or the threaded
# one's over it (threads; the closing calibrations, without a threaded run,
# left out); nothing if no line has one (see --busy-pool)
pooled_ratio() {
    awk -v from="$2" '{ k = (from == "ranks" ? $3 : $2) } k + 0 > 0 && $4 + 0 > 0 { printf "%.6g\n", k / $4 }' "$1" |
        median ""
}

# one_round APP RANKS GBPS LAT_US THREADS PIPELINE ADDED_US: the machine's
# speed now (calibrate_speed) and the link's latency (measure_latency,
# through the round's shaping and relay), then one run; appends "compute
# epoch stall rate busy_core_speed threads_cpu_rate compute_cpu steal
# compute_sys" to $TMP/rounds: the run's compute (rank_max_median) and
# epoch and stall over its epochs after the first (--statistic), the speed of the
# calibration right before it, the compute's CPU seconds, the steal while
# it ran and the compute's kernel seconds, then "ranks_busy_core_speed
# ranks_cpu_rate serial_cpu_rate" (ranks_calibration), the wake ratio and
# "latency_us latency_min_us latency_max_us" (the median of
# --latency-repeats measures, and their range), and the stall's mean over
# the ranks (ranks_stall_mean).
one_round() {
    local app=$1 n=$2 g=$3 th=$5 c=$6 d=$7 plan r kept ticks lat
    plan=$(plan_dir "$app" "$n" "$th" "$c")
    calibrate_speed "$app" "$n" "$th" "$c" || return 1
    lat=$(measure_latency)
    [ -n "$lat" ] || { echo "scale.sh: cannot measure the latency between ranks 0 and 1" >&2; return 1; }
    ticks=$(cpu_ticks)
    # shellcheck disable=SC2046
    if ! ROTOR_LOG=debug run_ranks "$n" "$ROTOR" train --plan "$plan" --app "$app" \
        $(app_args "$app") --threads "$th" --transport tcp --pin no; then
        echo "scale.sh: $app on $n ranks x $th threads at $g Gb/s failed:" >&2
        tail -n 5 "$TMP"/log.* >&2
        return 1
    fi
    ticks="$ticks $(cpu_ticks)"
    epochs_of_run >"$TMP/epochs"
    echo "$(rank_max_median "$n" compute) $(epoch_stats "$TMP/epochs") $(cat "$TMP/speed")" \
        "$(rank_max_median "$n" "compute CPU") $(steal_between "$ticks")" \
        "$(rank_max_median "$n" "in the kernel") $(cat "$TMP/ranks_speed")" \
        "$(cut -d' ' -f9 "$TMP/pairs" | tail -n 1) $lat $(ranks_stall_mean "$n" "$TMP/log")" \
        "$(ranks_compute_gap "$n" "$TMP/log")" >>"$TMP/rounds"
    if [ "$keep" = 1 ]; then # the ranks' logs, beside the model's (one_config)
        kept=$TMP/kept/$app.$n.$th.$c.$g.$d/round.$(wc -l <"$TMP/rounds")
        keep_calibration "$kept" "$n"
        for ((r = 0; r < n; r++)); do cp "$TMP/log.$r" "$kept/"; done
    fi
}

# predict APP RANKS GBPS LAT_US THREADS PIPELINE ADDED_US ROUND [RATE_SCALE
# [BUSY_FROM]]: the model's JSON for round ROUND (1..) of the configuration:
# its speed (--rate, --busy-core-speed) from the calibrations around it
# (round_speed), its latency the one measured right before it, the rest of
# the plan's figures (--step-overhead-us, --step-cv, --cell-cv,
# --worker-cv) pooled over the plan's calibrations, and the link's measures.
# RATE_SCALE (default 1) multiplies the rate: the diagnostic run at the
# speed the round really computed at (one_config).  BUSY_FROM (default
# --busy-from): the busy core speed of the threaded calibration (threads),
# or the ranks' (ranks; the ranks' figure is the one taken the way the
# round computes), see round_speed.
predict() {
    local app=$1 n=$2 g=$3 th=$5 c=$6 d=$7 key=$1.$2.$5.$6 plan sim kept r_rate r_busy lat
    local scale=${9:-1} from=${10:-$busy_from}
    plan=$(plan_dir "$app" "$n" "$th" "$c")
    read -r r_rate r_busy <<<"$(round_speed "$8" "$TMP/speeds" "$from" "$(busy_pool_of "$key")" "$(pooled_rate "$key")")"
    lat=$(sed -n "$8p" "$TMP/rounds" | cut -d' ' -f14)
    # shellcheck disable=SC2046,SC2207 # app_args: one option a word
    sim=("$ROTOR" simulate --plan "$plan" --app "$app" $(app_args "$app") --json
        --rate "$(awk -v r="$r_rate" -v s="$scale" 'BEGIN { printf "%.6g", r * s }')"
        --step-overhead-us "${step_us[$key]}"
        --step-cv "${step_cv[$key]}" --cell-cv "${cell_cv[$key]}"
        --worker-cv "$(worker_cv_of "${worker_cv[$key]}" "$key")"
        --inline-below-us 2000
        --inline-step-us "${inline_us[$key]}" --busy-core-speed "$r_busy"
        --wake-speed "${wake[$key]}" --wake-after-us 1000
        --gbps "${effective[$g]}" --burst-kib "$burst_kib" --net-cpu-ns-per-byte "${net_ns[$d:$g]}"
        --latency-us "$lat" --overhead-us 10 --host-cores "$(nproc)" --send-buffer-kib 8192)
    if [ "$keep" = 1 ] && [ "$scale" = 1 ] && [ "$from" = "$busy_from" ]; then # the model's per-node lines and command
        kept=$TMP/kept/$app.$n.$th.$c.$g.$d/round.$8
        mkdir -p "$kept"
        echo "${sim[*]}" >"$kept/simulate.cmd"
        echo "$MODEL_TERMS $(speed_rule)" >"$kept/model_terms"
        model_run "$kept/simulate.log" "${sim[@]}"
    else
        model_run "$TMP/model.log" "${sim[@]}"
    fi
}

# model_run LOG CMD...: the model's JSON line (CMD, a `rotor simulate --json`,
# its debug lines in LOG) with "mean_epoch_s" and "mean_stall" added: the
# means over its jittered rotations (its debug line; its predicted_* are their
# medians), or its one rotation's figures without jitter.  --statistic mean
# compares them with the means of the measured epochs.
model_run() {
    local log=$1 json means
    shift
    json=$(ROTOR_LOG=debug "$@" 2>"$log") || { tail -n 3 "$log" >&2; return 1; }
    means=$(sed -n 's/.*simulate: over [0-9]* rotations: epoch mean \([0-9.e+-]*\) s median [0-9.e+-]* s, stall mean \([0-9.e+-]*\) median .*/\1 \2/p' \
        "$log" | tail -n 1)
    [ -n "$means" ] || means="$(json_num predicted_epoch_s "$json") $(json_num predicted_stall "$json")"
    echo "${json%\}}, \"mean_epoch_s\": ${means% *}, \"mean_stall\": ${means#* }}"
}

# model_figures JSON: "epoch stall" of a model_run by --statistic: the means
# over its rotations, or (median) their medians, predicted_epoch_s and
# predicted_stall, the figures before --statistic existed
model_figures() {
    if [ "$statistic" = mean ]; then
        echo "$(json_num mean_epoch_s "$1") $(json_num mean_stall "$1")"
    else
        echo "$(json_num predicted_epoch_s "$1") $(json_num predicted_stall "$1")"
    fi
}

# The model terms a kept round's command already has, written beside it
# (round.N/model_terms): worker_cv_cpu, its --worker-cv is the larger of the
# threaded and the ranks' spreads, both in CPU seconds (worker_cv_of); and
# the rule its speed was taken by (speed_rule).  A round kept with every
# term --repredict knows is predicted by its command as it was run, so the
# repredict of a run reproduces its live prediction.
MODEL_TERMS=worker_cv_cpu

# speed_rule: how a round's speed comes from the calibrations (round_speed):
# speed:bracket (--calibrate-after 1) or speed:own (0)
# speed:bracket (--calibrate-after 1) or speed:own (0), its busy core speed
# pooled over the plan's calibrations (--busy-pool plan) marked +busy:plan
speed_rule() {
    local rule=speed:own
    [ "$calibrate_after" = 0 ] || rule=speed:bracket
    [ "$busy_pool" = round ] || rule=$rule+busy:plan
    [ "$rate_pool" = round ] || rule=$rule+rate:$rate_pool
    echo "$rule"
}

# busy_pool_of KEY: the file of the plan KEY's calibrations so far that
# round_speed pools the busy core speed over (--busy-pool plan), or nothing
busy_pool_of() { [ "$busy_pool" = round ] || echo "$TMP/plan_speeds.$1"; }

# has_term ROUND TERM: the kept round's model_terms has TERM (a whole term:
# speed:bracket is not speed:bracket+busy:plan)
has_term() { [ -f "$1/model_terms" ] && tr ' ' '\n' <"$1/model_terms" | grep -qxF -- "$2"; }

# model_args_of WORKER_CV KEY ROUND: the options of the model terms that came
# after a kept round's command (--repredict): none if the round's
# model_terms has worker_cv_cpu; else --worker-cv from the ranks' spreads of the
# plan KEY (ranks_spread, in CPU seconds), or the kept WORKER_CV where the
# kept logs give none.  A round kept without model_terms has a threaded
# figure (its calibration's column 6, or WORKER_CV) measured in wall seconds
# before the spreads were CPU seconds (a5c2587, or a run kept before this
# mark existed), so it is left out where the ranks' figure exists.
model_args_of() {
    if has_term "$3" worker_cv_cpu; then
        return 0
    elif [ -s "$TMP/ranks_cv.$2" ]; then
        echo "--worker-cv $(worker_cv_of 0 "$2")"
    else
        echo "--worker-cv $1"
    fi
}

# rank_max_median RANKS FIELD: the largest over the ranks of their median per
# rotation, epochs after the first, of a figure on the engine's debug line:
# "compute" (wall seconds inside the kernel, mean over the rank's threads) or
# "compute CPU" (the CPU seconds of those threads there: a rank slow for want
# of a core has more of the first than of the second) or "in the kernel" (the
# part of those in the kernel: page faults, and the softirqs, the network's
# among them, that ran in their time slices); nan if absent.
rank_max_median() {
    for ((r = 0; r < $1; r++)); do
        sed -n "s/.*engine: rank [0-9]* rotation: .*, $2 \([0-9.]*\) s.*/\1/p" "${3:-$TMP/log}.$r" |
            tail -n +2 | median nan
    done | sort -g | tail -n 1
}

# "steal total": the whole machine's CPU ticks so far that the hypervisor gave
# to others (steal) and all its ticks (/proc/stat, user to steal)
cpu_ticks() { awk '/^cpu / { t = 0; for (i = 2; i <= 9; i++) t += $i; print $9, t; exit }' /proc/stat; }

# steal_between "STEAL0 TOTAL0 STEAL1 TOTAL1" (two cpu_ticks): the fraction of
# the machine's CPU time in between that its vCPUs waited for the host
steal_between() { echo "$1" | awk '{ d = $4 - $2; printf "%.4f", (d > 0 ? ($3 - $1) / d : 0) }'; }

# plan_at_rate_1 APP PLAN: the model of the plan alone at rate 1 (its
# nodes' work units per rotation), run once per plan and app and kept in
# $TMP/rate1: prints the path of its JSON (PATH.json) and debug lines
# (PATH.log).  A model run reads the plan (0.3-0.8 s here), and each
# calibration and configuration asked for the same figures again (about 10
# runs a configuration).  A failed model run fails (with its message): its
# empty figures made the ranks' rate 0, which round_speed skipped unsaid.
plan_at_rate_1() {
    local f
    f=$TMP/rate1/$1.$(echo "$2" | cksum | cut -d' ' -f1)
    if [ ! -s "$f.json" ]; then
        mkdir -p "$TMP/rate1"
        # shellcheck disable=SC2046 # app_args: one option a word
        if ! ROTOR_LOG=debug "$ROTOR" simulate --plan "$2" --app "$1" $(app_args "$1") --rate 1 \
            --gbps 0 --json >"$f.json" 2>"$f.log"; then
            echo "scale.sh: the model of $2 at rate 1 (its nodes' work) failed:" >&2
            tail -n 3 "$f.log" >&2
            rm -f "$f.json"
            return 1
        fi
    fi
    echo "$f"
}

# busiest_work APP PLAN: the work units of the plan's busiest node per
# rotation (the model's compute time at rate 1, alone); fails without it
busiest_work() {
    local f w
    f=$(plan_at_rate_1 "$1" "$2") || return 1
    w=$(json_num compute_s "$(cat "$f.json")")
    [ -n "$w" ] || { echo "scale.sh: no compute_s in the model of $2 at rate 1 ($f.json)" >&2; return 1; }
    echo "$w"
}

# mean: the mean of the numbers on standard input (%.6g); nan if one is not
# a number (a round that logged no epochs), null if there are none (as median)
mean() {
    awk '$1 !~ /^[-+]?[0-9.]+([eE][-+]?[0-9]+)?$/ { bad = 1 } { s += $1; n++ }
        END { if (!n) print "null"; else if (bad) print "nan"; else printf "%.6g\n", s / n }'
}
col_median() { cut -d' ' -f"$1" "${2:-$TMP/rounds}" | median; } # col_median COLUMN [FILE]
col_mean() { cut -d' ' -f"$1" "${2:-$TMP/rounds}" | mean; }     # col_mean COLUMN [FILE]
# col_stat COLUMN [FILE]: the --statistic of a column: how a round's epochs
# make its figure, and the rounds' figures (measured and predicted alike)
# the configuration's
col_stat() { if [ "$statistic" = mean ]; then col_mean "$@"; else col_median "$@"; fi; }
# json_nan_null: a configuration's JSON line with each figure that could not
# be had (nan from the awk helpers: a rank log without the line, an older
# ROTOR=) as null, since JSON has no nan and a reader would reject the line
json_nan_null() { sed -E 's/(^|[][ ,:])-?nan([],} ]|$)/\1null\2/g; s/(^|[][ ,:])-?nan([],} ]|$)/\1null\2/g'; }

# json_list COLUMN [FILE]: a column as a JSON list
json_list() { cut -d' ' -f"$1" "${2:-$TMP/rounds}" | paste -sd, - | sed 's/^/[/; s/$/]/; s/,/, /g'; }

other_busy_from() { if [ "$busy_from" = ranks ]; then echo threads; else echo ranks; fi; }

# one_config APP RANKS GBPS LAT_US THREADS PIPELINE ADDED_US: --rounds runs,
# each after a calibration of the machine's speed, each predicted from its
# own; measured and predicted are the --statistic over the rounds of each
# round's figures (the same over its epochs, and over the model's jittered
# rotations).  The per-round lists are in the JSON too.
one_config() {
    local app=$1 n=$2 g=$3 lat=$4 th=$5 c=$6 d=$7 load me ms pe ps pred given alt crit i
    local key=$app.$n.$th.$c
    shape "$g"
    if [ -z "${effective[$g]:-}" ]; then # the link's bandwidth, without the added latency
        add_latency 0
        effective[$g]=$(measure_gbps)
        add_latency "$d"
    fi
    : >"$TMP/rounds"
    : >"$TMP/speeds"
    if [ "$keep" = 1 ]; then # the run's order, for --repredict (kept_order)
        mkdir -p "$TMP/kept"
        echo "$app.$n.$th.$c.$g.$d" >>"$TMP/kept/ORDER"
    fi
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    for ((i = 0; i < rounds; i++)); do one_round "$@" || return 1; done
    if [ "$calibrate_after" = 1 ]; then # the last round's calibration after it
        calibrate_speed "$app" "$n" "$th" "$c" serial || return 1
        keep_calibration "$TMP/kept/$app.$n.$th.$c.$g.$d/closing" "$n"
    fi
    : >"$TMP/preds"
    for ((i = 1; i <= rounds; i++)); do
        pred=$(predict "$@" "$i") || return 1
        given=$(predict "$@" "$i" "$(given_scale "$pred" "$(sed -n "${i}p" "$TMP/rounds" | cut -d' ' -f1)" \
            "$(sed -n "${i}p" "$TMP/rounds" | cut -d' ' -f7)")") || return 1
        alt=$(predict "$@" "$i" 1 "$(other_busy_from)") || return 1
        echo "$(model_figures "$pred") $(json_num compute_s "$pred")" \
            "$(echo "$pred" | sed -n 's/.*"critical": "\([a-z]*\)".*/\1/p')" \
            "$(model_figures "$given") $(model_figures "$alt") $(json_num stall_mean "$pred")" \
            "$(model_gap "$pred") $(worker_factor "$pred")" >>"$TMP/preds"
    done
    me=$(col_stat 2) ms=$(col_stat 3) pe=$(col_stat 1 "$TMP/preds") ps=$(col_stat 2 "$TMP/preds")
    crit=$(cut -d' ' -f4 "$TMP/preds" | sort | uniq -c | sort -rn | awk 'NR == 1 { print $2 }')
    calibration_line "$key"
    {
        printf '{"app": "%s", "ranks": %d, "threads": %d, "pipeline": %d, "gbps": %s, ' \
            "$app" "$n" "$th" "$c" "$g"
        printf '"gbps_tcp": %s, "net_cpu_ns_per_byte": %s, ' "${effective[$g]}" "${net_ns[$d:$g]}"
        printf '"added_latency_us": %s, "latency_us": %s, "rounds": %d, ' "$d" "$(col_median 14)" "$rounds"
        printf '"round_latency_us": %s, "round_latency_range_us": %s, ' "$(json_list 14)" \
            "$(awk '{ printf "%s\"%s-%s\"", (NR > 1 ? ", " : "["), $15, $16 } END { print "]" }' "$TMP/rounds")"
        measured_predicted_fields "$me" "$pe" "$ms" "$ps"
        printf '"round_rate": %s, "round_busy_core_speed": %s, ' "$(json_list 4)" "$(json_list 5)"
        printf '"calibrate_after": %d, "round_model_rate": %s, "round_model_busy_core_speed": %s, ' \
            "$calibrate_after" "$(for ((i = 1; i <= rounds; i++)); do round_speed "$i" "$TMP/speeds" "$busy_from" "$(busy_pool_of "$key")" "$(pooled_rate "$key")"; done |
                json_list 1 -)" "$(for ((i = 1; i <= rounds; i++)); do round_speed "$i" "$TMP/speeds" "$busy_from" "$(busy_pool_of "$key")" "$(pooled_rate "$key")"; done |
                json_list 2 -)"
        busy_pool_fields "$key"
        printf '"calibration_ranks_cpu_rate": %s, ' "$(json_list 3 "$TMP/speeds")"
        printf '"measured_compute_cpu_s": %s, "round_measured_compute_cpu_s": %s, "round_steal": %s, ' \
            "$(col_median 7)" "$(json_list 7)" "$(json_list 8)"
        printf '"round_measured_compute_sys_s": %s, ' "$(json_list 9)"
        printf '"epoch_given_measured_compute_s": %s, "stall_given_measured_compute": %s, ' \
            "$(col_stat 5 "$TMP/preds")" "$(col_stat 6 "$TMP/preds")"
        printf '"round_epoch_given_measured_compute_s": %s, "round_stall_given_measured_compute": %s, ' \
            "$(json_list 5 "$TMP/preds")" "$(json_list 6 "$TMP/preds")"
        stall_ranks_fields 17 9
        compute_gap_fields 18 10
        printf '"round_compute_cpu_ratio": %s, ' "$(awk -v w="$(busiest_work "$app" "$(plan_dir "$app" "$n" "$th" "$c")")" \
            '{ printf "%s%.3f", (NR > 1 ? ", " : "["), (w > 0 ? $7 * $6 / w : 0) } END { print "]" }' "$TMP/rounds")"
        printf '"round_compute_cpu_ratio_ranks": %s, ' "$(awk -v w="$(busiest_work "$app" "$(plan_dir "$app" "$n" "$th" "$c")")" \
            '{ printf "%s%.3f", (NR > 1 ? ", " : "["), (w > 0 ? $7 * $11 / w : 0) } END { print "]" }' "$TMP/rounds")"
        printf '"busy_from": "%s", "round_ranks_busy_core_speed": %s, "round_ranks_cpu_rate": %s, ' \
            "$busy_from" "$(json_list 10)" "$(json_list 11)"
        printf '"alt_busy_from": "%s", "alt_predicted_epoch_s": %s, "alt_predicted_stall": %s, ' \
            "$(other_busy_from)" "$(col_stat 7 "$TMP/preds")" "$(col_stat 8 "$TMP/preds")"
        printf '"round_alt_predicted_epoch_s": %s, "round_alt_predicted_stall": %s, ' \
            "$(json_list 7 "$TMP/preds")" "$(json_list 8 "$TMP/preds")"
        printf '"calibrations": %d, "rate": %s, "busy_core_speed": %s, "step_overhead_us": %s, ' \
            "$calibrations" "$(col_median 4)" "$(col_median 5)" "${step_us[$key]}"
        printf '"cell_cv": %s, "worker_cv": %s, "step_cv": %s, "cell_cv_cpu": %s, ' \
            "${cell_cv[$key]}" "${worker_cv[$key]}" "${step_cv[$key]}" \
            "$(awk '$10 + 0 > 0 { print $10 }' "$TMP/calibration.$key" | median)"
        printf '"round_worker_factor_cv": %s, ' "$(json_list 11 "$TMP/preds")"
        printf '"wake_speed": %s, "round_wake_rate_ratio": %s, ' "${wake[$key]}" "$(json_list 13)"
        printf '"critical": "%s", "loadavg": "%s"}\n' "$crit" "$load"
    } | json_nan_null
}

# given_scale PRED M_WALL M_CPU: how much the "given measured compute"
# diagnostic scales a round's rate: the model's compute CPU (compute_cpu_s
# of its JSON PRED) over the measured one (the engine's "compute CPU",
# M_CPU), or where either is missing (an older rotor, older logs) its wall
# compute (compute_s) over the measured wall (M_WALL); 1 if neither.  CPU
# seconds: where ranks outnumber cores a rank's wall compute is mostly its
# waits for a core, which the model places elsewhere (lda 8 x 1 in the two
# quiet runs of 4537431: 0.088-0.092 s wall, 0.035-0.036 s CPU per rank,
# the model's 0.060 and 0.040), so scaled by wall the diagnostic read
# +50.7% and +49.5% there, by CPU -0.9% and -3.7% (sim16m, f69a271).
given_scale() {
    awk -v p="$(json_num compute_s "$1")" -v m="$2" -v pc="$(json_num compute_cpu_s "$1")" -v mc="$3" '
        function num(x) { return x ~ /^[0-9.]+([eE][-+]?[0-9]+)?$/ && x + 0 > 0 }
        BEGIN {
            if (num(pc) && num(mc)) { p = pc; m = mc }
            printf "%.6g", (num(m) && num(p) ? p / m : 1)
        }'
}

# measured_predicted_fields ME PE MS PS: the JSON fields of a configuration's
# measured epoch and stall (ME, MS) against the model's (PE, PS), their
# errors, and compute; then each round's, from $TMP/rounds (columns 2, 3, 1)
# and $TMP/preds (columns 1, 2, 3), as a live run and a repredict write them.
measured_predicted_fields() {
    printf '"measured_epoch_s": %s, "predicted_epoch_s": %s, "epoch_error": %s, ' "$1" "$2" \
        "$(awk -v m="$1" -v p="$2" 'BEGIN { printf "%.3f", (p - m) / m }')"
    printf '"measured_stall": %s, "predicted_stall": %s, "stall_error": %s, ' "$3" "$4" \
        "$(awk -v m="$3" -v p="$4" 'BEGIN { printf "%.3f", p - m }')"
    printf '"measured_compute_s": %s, "predicted_compute_s": %.4g, ' "$(col_median 1)" \
        "$(col_median 3 "$TMP/preds")"
    printf '"round_measured_epoch_s": %s, "round_predicted_epoch_s": %s, ' "$(json_list 2)" \
        "$(json_list 1 "$TMP/preds")"
    printf '"round_measured_stall": %s, "round_predicted_stall": %s, ' "$(json_list 3)" \
        "$(json_list 2 "$TMP/preds")"
    printf '"round_measured_compute_s": %s, "round_predicted_compute_s": %s, ' "$(json_list 1)" \
        "$(json_list 3 "$TMP/preds")"
}

# stall_ranks_fields ROUNDS_COLUMN PREDS_COLUMN: the JSON fields of the
# stall as the mean over the ranks (ranks_stall_mean) against the model's
# (its stall_mean): the means over the rounds, whatever --statistic (the
# model gives that figure's mean alone), and each round's; and --statistic.
stall_ranks_fields() {
    printf '"statistic": "%s", "measured_stall_ranks_mean": %s, "predicted_stall_ranks_mean": %s, ' \
        "$statistic" "$(col_mean "$1")" "$(col_mean "$2" "$TMP/preds")"
    printf '"round_measured_stall_ranks_mean": %s, "round_predicted_stall_ranks_mean": %s, ' \
        "$(json_list "$1")" "$(json_list "$2" "$TMP/preds")"
}

# model_gap JSON: the model's compute_gap_s, nan from a rotor without it
model_gap() { local g; g=$(json_num compute_gap_s "$1"); echo "${g:-nan}"; }

# worker_factor JSON: the cv of the per-worker factor the model drew from its
# --worker-cv (0 where the cells' spread, averaged over a worker's cells, is
# all of the measured one: rev27 F10), nan from a rotor without it
worker_factor() { local f; f=$(json_num worker_factor_cv "$1"); echo "${f:-nan}"; }

# compute_gap_fields ROUNDS_COLUMN PREDS_COLUMN: the JSON fields of the
# ranks' compute gap (ranks_compute_gap) against the model's (its
# compute_gap_s): the means over the rounds, and each round's.
compute_gap_fields() {
    printf '"measured_compute_gap_s": %s, "predicted_compute_gap_s": %s, ' \
        "$(col_mean "$1")" "$(col_mean "$2" "$TMP/preds")"
    printf '"round_measured_compute_gap_s": %s, "round_predicted_compute_gap_s": %s, ' \
        "$(json_list "$1")" "$(json_list "$2" "$TMP/preds")"
}

# calibration_line KEY: stderr, the plan's figures so far (medians, then
# min-max over its pairs) and this configuration's rounds' speeds.
calibration_line() {
    local key=$1 f=$TMP/calibration.$1
    echo "scale.sh: $key after $(wc -l <"$f") calibration pairs (median, then min-max):" \
        "rate ${rate[$key]} ($(range 1 "$f")), busy_core_speed ${busy_speed[$key]}" \
        "(CPU rates: serial $(range 7 "$f"), threads $(range 8 "$f"))," \
        "step_us ${step_us[$key]} ($(range 3 "$f")), cell_cv ${cell_cv[$key]} ($(range 4 "$f"))," \
        "worker_cv ${worker_cv[$key]} ($(range 6 "$f")), step_cv ${step_cv[$key]} ($(range 5 "$f")))," \
        "wake_speed ${wake[$key]} (ratios $(wake_ratios "$f" | sort -g | sed -n '1p;$p' | paste -sd- -));" \
        "rounds' rate $(cut -d' ' -f4 "$TMP/rounds" | paste -sd' ' -)," \
        "busy_core_speed $(cut -d' ' -f5 "$TMP/rounds" | paste -sd' ' -)" >&2
}

# run_epoch APP RANKS PLAN: the measured median epoch of one run (1 thread per rank)
run_epoch() {
    # shellcheck disable=SC2046
    run_ranks "$2" "$ROTOR" train --plan "$3" --app "$1" $(app_args "$1") --transport tcp \
        --pin no || { tail -n 5 "$TMP"/log.* >&2; return 1; }
    epochs_of_run | cut -d' ' -f1 | median nan
}

# auto_compare APP RANKS GBPS LAT_US: the default plan against the plan of
# --pipeline auto (partitioned for the link measured here and the rate
# calibrated right before), run alternately, medians over the rounds.
auto_compare() {
    local app=$1 n=$2 g=$3 lat=$4 d pa load
    d=$(dirname "$(plan_dir "$app" "$n" 1 2)")
    shape "$g"
    effective[$g]=$(measure_gbps)
    load=$(cut -d' ' -f1-3 /proc/loadavg)
    calibrate "$app" "$d/plan" "$app.$n" 3 || return 1
    gen_plan "$app" "$n" 1 "$d/auto" --pipeline auto --rate "${rate[$app.$n]}" \
        --gbps "${effective[$g]}" --latency-us "$lat" --overhead-us 10 \
        --bytes-per-col "$(col_bytes "$app")"
    pa=$(sed -n 's/.*"pipeline": \([0-9]*\).*/\1/p' "$d/auto/plan.json")
    : >"$TMP/ab"
    for ((i = 0; i < rounds; i++)); do
        echo "$(run_epoch "$app" "$n" "$d/plan") $(run_epoch "$app" "$n" "$d/auto")" >>"$TMP/ab"
    done
    local md ma
    md=$(cut -d' ' -f1 "$TMP/ab" | median) ma=$(cut -d' ' -f2 "$TMP/ab" | median)
    printf '{"app": "%s", "ranks": %d, "gbps": %s, "gbps_tcp": %s, "latency_us": %s, ' \
        "$app" "$n" "$g" "${effective[$g]}" "$lat"
    printf '"auto_pipeline": %s, "rounds": %d, "default_epoch_s": %s, "auto_epoch_s": %s, ' \
        "$pa" "$rounds" "$md" "$ma"
    printf '"auto_over_default": %s, "predicted": "%s", "loadavg": "%s"}\n' \
        "$(awk -v a="$ma" -v b="$md" 'BEGIN { printf "%.3f", a / b }')" \
        "$(grep -o 'pipeline auto: [0-9]* blocks per worker (.*s)' "$d/auto.log")" "$load"
}

# ---- --repredict ----

# kept_speed APP PLAN RANKS DIR: the line calibrate_speed wrote for the
# calibration kept in DIR (its pair, calibration, and the ranks' logs,
# calibration.log.R); nothing if DIR lacks them
kept_speed() {
    local k
    [ -s "$4/calibration" ] && [ -f "$4/calibration.log.0" ] || return 0
    k=$(ranks_rate "$1" "$2" "$3" "$4/calibration.log") || return 1
    echo "$(col_median 1 "$4/calibration") $(col_median 8 "$4/calibration") $k $(col_median 7 "$4/calibration")"
}

# speed_args_of ROUND_DIR N COUNT KEY: --rate and --busy-core-speed for kept
# round N of COUNT by this run's speed rule, from $TMP/speeds (kept_speed of
# every round and the closing calibration) and the plan KEY's pool
# (busy_pool_of); nothing if the round's command took them by this rule
# already, or if a round's calibration was not kept
speed_args_of() {
    ! has_term "$1" "$(speed_rule)" || return 0
    [ "$(wc -l <"$TMP/speeds")" -ge "$3" ] || return 0
    round_speed "$2" "$TMP/speeds" "$busy_from" "$(busy_pool_of "$4")" "$(pooled_rate "$4")" |
        awk '{ print "--rate", $1, "--busy-core-speed", $2 }'
}

# busy_pool_fields KEY: the JSON fields of the busy core speed's pool: the
# rule (--busy-pool) and how many of the plan KEY's calibrations it pooled
# (0 with round: each round's own pair)
busy_pool_fields() {
    local n=0
    [ "$busy_pool" = round ] || n=$(awk -v from="$busy_from" \
        '{ k = (from == "ranks" ? $3 : $2) } k + 0 > 0 && $4 + 0 > 0 { c++ } END { print c + 0 }' \
        "$TMP/plan_speeds.$1" 2>/dev/null || echo 0)
    printf '"busy_pool": "%s", "busy_pool_calibrations": %d, "rate_pool": "%s", ' "$busy_pool" "$n" "$rate_pool"
}

# repredict_config DIR CONFIG_DIR: a kept configuration (DIR/kept/CONFIG) of
# a --keep run in DIR predicted again; its JSON line (see --repredict).
repredict_config() {
    local root=$1 dir=$2 name app n th c rest g d round sim i pred mc pc given lat busy
    name=$(basename "$dir")
    IFS=. read -r app n th c rest <<<"$name" # rest: GBPS.ADDED_US (GBPS may hold a dot)
    d=${rest##*.} g=${rest%.*}
    : >"$TMP/rounds"
    : >"$TMP/preds"
    local rounds key=$app.$n.$th.$c wcv
    local count
    count=$(find "$dir" -maxdepth 1 -name 'round.*' | wc -l)
    rounds=$(for ((i = 1; i <= count; i++)); do echo "$dir/round.$i"; done)
    for round in $rounds; do # as a run pools them: the plan's so far, these rounds included
        ranks_spread "$root/$key/plan" "$n" "$app" "$round/calibration.log" >>"$TMP/ranks_cv.$key" || return 1
    done
    : >"$TMP/speeds"
    : >"$TMP/lats"
    for round in $rounds "$dir/closing"; do
        kept_speed "$app" "$root/$key/plan" "$n" "$round" >>"$TMP/speeds" || return 1
    done
    # a round without its calibration kept: the lines would not be the rounds'
    for round in $rounds; do [ -s "$round/calibration" ] && [ -f "$round/calibration.log.0" ] || : >"$TMP/speeds"; done
    cat "$TMP/speeds" >>"$TMP/plan_speeds.$key" # the plan's so far, as a run pools them
    for round in $rounds; do
        [ -f "$round/simulate.cmd" ] && [ -f "$round/log.0" ] || continue
        read -ra sim <"$round/simulate.cmd"
        sim[0]=$ROTOR wcv=0 busy=null
        for i in "${!sim[@]}"; do
            [ "${sim[$i]}" != --plan ] || sim[i + 1]=$root/$key/plan
            [ "${sim[$i]}" != --latency-us ] || lat=${sim[i + 1]}
            [ "${sim[$i]}" != --worker-cv ] || wcv=${sim[i + 1]}
        done
        # shellcheck disable=SC2206,SC2207 # one option a word
        sim+=($(speed_args_of "$round" "${round##*.}" "$count" "$key") $(model_args_of "$wcv" "$key" "$round")
            $model_args)
        for i in "${!sim[@]}"; do # the busy core speed the model gets: the last given
            [ "${sim[$i]}" != --busy-core-speed ] || busy=${sim[i + 1]}
        done
        pred=$(model_run "$TMP/model.log" "${sim[@]}") || return 1
        echo "$lat" >>"$TMP/lats"
        mc=$(rank_max_median "$n" compute "$round/log")
        epochs_of_run "$round/log.0" >"$TMP/epochs"
        echo "$mc $(epoch_stats "$TMP/epochs") $(ranks_stall_mean "$n" "$round/log")" \
            "$(ranks_compute_gap "$n" "$round/log")" >>"$TMP/rounds"
        pc=$(json_num compute_s "$pred")
        # the rate scaled as one_config and predict scale it (two roundings)
        given=$(model_run "$TMP/model.log" "${sim[@]}" --rate "$(awk -v r="$(json_num rate "$pred")" \
            -v s="$(given_scale "$pred" "$mc" "$(rank_max_median "$n" "compute CPU" "$round/log")")" \
            'BEGIN { printf "%.6g", r * s }')") || return 1
        echo "$(model_figures "$pred") $pc $(model_figures "$given") $(json_num stall_mean "$pred")" \
            "$(model_gap "$pred") $busy $(worker_factor "$pred")" >>"$TMP/preds"
    done
    [ -s "$TMP/preds" ] || return 0
    local me ms pe ps
    me=$(col_stat 2) ms=$(col_stat 3) pe=$(col_stat 1 "$TMP/preds") ps=$(col_stat 2 "$TMP/preds")
    {
        printf '{"app": "%s", "ranks": %d, "threads": %d, "pipeline": %d, "gbps": %s, ' \
            "$app" "$n" "$th" "$c" "$g"
        printf '"added_latency_us": %s, "latency_us": %s, "rounds": %d, ' "$d" \
            "$(median <"$TMP/lats")" "$(wc -l <"$TMP/preds")"
        measured_predicted_fields "$me" "$pe" "$ms" "$ps"
        printf '"epoch_given_measured_compute_s": %s, "stall_given_measured_compute": %s, ' \
            "$(col_stat 4 "$TMP/preds")" "$(col_stat 5 "$TMP/preds")"
        printf '"round_epoch_given_measured_compute_s": %s, "round_stall_given_measured_compute": %s, ' \
            "$(json_list 4 "$TMP/preds")" "$(json_list 5 "$TMP/preds")"
        stall_ranks_fields 4 6
        compute_gap_fields 5 7
        printf '"round_model_busy_core_speed": %s, ' "$(json_list 8 "$TMP/preds")"
        busy_pool_fields "$key"
        printf '"round_worker_factor_cv": %s, ' "$(json_list 9 "$TMP/preds")"
        printf '"model_args": "%s"}\n' "$model_args"
    } | json_nan_null
}

# kept_order DIR: the configurations kept in DIR, in the order they ran:
# as kept/ORDER lists them (one_config; a name listed twice, a configuration
# run twice, at its last: the kept rounds are that run's), then any it does
# not list (a run kept before ORDER existed: all of them) by the time their
# directories were last written.  The order matters: the busy core speed
# and the ranks' spread pool the plan's calibrations so far, and a copy made
# without times (cp -r, rsync without -t) or a coarse clock reorders mtimes.
kept_order() {
    local k=$1/kept dir
    if [ -s "$k/ORDER" ]; then
        awk '{ last[$0] = NR } END { for (n in last) print last[n], n }' "$k/ORDER" | sort -n |
            while read -r _ dir; do [ ! -d "$k/$dir" ] || echo "$k/$dir"; done
    fi
    # shellcheck disable=SC2045 # by time (the kept names have no spaces)
    for dir in $(ls -dtr "$k"/*/); do
        dir=${dir%/}
        [ -s "$k/ORDER" ] && grep -qxF "${dir##*/}" "$k/ORDER" || echo "$dir"
    done
}

# repredict_all DIR: every configuration kept in DIR, in the order it ran
repredict_all() {
    local dir
    for dir in $(kept_order "$1"); do repredict_config "$1" "$dir" || return 1; done
}

# ---- main ----

if [ -n "$repredict" ]; then
    repredict_all "$repredict" || exit 1
    exit 0
fi

if [ -n "$configs" ]; then
    configs=${configs//,/ }
elif [ "$quick" = 1 ]; then
    configs="sgd-mf:2:1 sgd-mf:4:1 lda:2:1 lda:4:5" rounds=1 epochs=4
else
    for a in ${apps//,/ }; do
        for n in ${ranks//,/ }; do
            for g in ${gbps//,/ }; do configs="$configs $a:$n:$g"; done
        done
    done
fi
need=0
for cfg in $configs; do
    IFS=: read -r a n g <<<"$cfg"
    [ "$n" -gt "$need" ] && need=$n
done
[ -z "$auto" ] || need=${auto#*:} need=${need%%:*}
netns_up "$need"
shape 0
if [ -n "$auto" ]; then
    lat=$(measure_latency | cut -d' ' -f1)
    [ -n "$lat" ] || lat=30
    IFS=: read -r a n g <<<"$auto"
    gen_plan "$a" "$n" 1 "$(plan_dir "$a" "$n" 1 2)"
    auto_compare "$a" "$n" "$g" "$lat"
    exit 0
fi
# per added latency: the CPU per byte moved, through the relay (the latency:
# before each round, one_round; with the relay, per rate: net_cpu_at)
declare -A net_ns net5_of relay5_of
for cfg in $configs; do
    IFS=: read -r a n g th c d <<<"$cfg"
    th=${th:-1} c=${c:-2} d=${d:-0}
    plan=$(plan_dir "$a" "$n" "$th" "$c")
    [ -d "$plan" ] || gen_plan "$a" "$n" "$th" "$plan" --pipeline "$c"
    add_latency "$d"
    if [ -z "${net5_of[$d]:-}" ]; then
        shape 0
        net5_of[$d]=$(measure_net_cpu)
        [ "$d" = 0 ] || relay5_of[$d]=$(relay_ns_at 5)
    fi
    [ -n "${net_ns[$d:$g]:-}" ] ||
        net_ns[$d:$g]=$(net_cpu_at "$g" "${net5_of[$d]}" "${relay5_of[$d]:-}")
    one_config "$a" "$n" "$g" - "$th" "$c" "$d" || true
done
