#!/usr/bin/env bash
# rxe-vm.sh - run one command in a throw-away QEMU guest that has a real
# soft-RoCE device (rdma_rxe), for hosts whose kernel has no RDMA support.
#
#   rxe-vm.sh [-t SECS] [-s DIR]... [-e NAME=VALUE]... [-v] -- COMMAND [ARG...]
#   rxe-vm.sh --image          # only prepare the cached image
#
# The guest is Debian's stock kernel (linux-image-amd64, downloaded with
# `apt-get download` and unpacked - never installed on the host) booted
# under qemu-system-x86_64 with TCG (no KVM needed).  Its root filesystem is
# the host's own "/" shared read-only over virtio-9p with a RAM overlay on
# top, so host-built binaries and libraries run unchanged.  Every -s DIR
# (default: $ROTOR_BUILD, else the current directory) is shared read-write at
# the same path.  The guest has no network card: rxe0 sits on a guest-only
# dummy interface "rotor0" with address $ROTOR_RXE_ADDR (169.254.99.1/32), so
# RDMA traffic is in-kernel loopback and never leaves the guest.
#
# The command runs as root with `ulimit -l unlimited`, stdin /dev/null, in the
# current directory, and sees ROTOR_RXE_VM=1 ROTOR_RXE_DEV=rxe0
# ROTOR_RXE_ADDR=169.254.99.1 ROTOR_RXE_GID_INDEX=<RoCE v2 GID of the address>.
#
# Exit status: the command's; 77 = skipped (qemu or the kernel image is not
# available and cannot be installed); 124 = timeout; 125 = the VM failed.
#
# Environment: ROTOR_RXE_CACHE (image cache, default ~/.cache/rotor-rxe),
# ROTOR_RXE_NO_APT=1 (never run apt-get), ROTOR_RXE_MEM (MiB, default 1536),
# ROTOR_RXE_CPUS (default: host cores, at most 4).
set -euo pipefail

ME=${0##*/}
CACHE=${ROTOR_RXE_CACHE:-$HOME/.cache/rotor-rxe}
MEM=${ROTOR_RXE_MEM:-1536}
CPUS=${ROTOR_RXE_CPUS:-$(nproc)}
((CPUS > 4)) && CPUS=4
GUEST_ADDR=169.254.99.1
TIMEOUT=900
VERBOSE=0
SHARES=()
ENVS=()
IMAGE_ONLY=0

msg() { echo "$ME: $*" >&2; }
skip() { msg "SKIP: $*"; exit 77; }
vmfail() { msg "error: $*"; exit 125; }

while (($#)); do
    case $1 in
    -t) TIMEOUT=$2; shift 2 ;;
    -s) SHARES+=("$(realpath -e "$2")"); shift 2 ;;
    -e) ENVS+=("$2"); shift 2 ;;
    -v) VERBOSE=1; shift ;;
    --image) IMAGE_ONLY=1; shift ;;
    -h | --help) sed -n '2,27p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    --) shift; break ;;
    -*) msg "unknown option $1"; exit 2 ;;
    *) break ;;
    esac
done
((IMAGE_ONLY || $# > 0)) || { msg "no command given (see --help)"; exit 2; }
if ((${#SHARES[@]} == 0)); then
    SHARES=("$(realpath -e "${ROTOR_BUILD:-$PWD}")")
fi

# ---- host packages ---------------------------------------------------------
# qemu to run the guest; busybox-static for the initramfs; kmod/cpio to build
# it; iproute2 (ip, rdma) is run inside the guest from the shared host root.
need_pkgs() {
    local p missing=()
    for p in qemu-system-x86 busybox-static kmod cpio iproute2 libibverbs1 \
        ibverbs-providers librdmacm1; do
        dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null | grep -qx installed ||
            missing+=("$p")
    done
    ((${#missing[@]} == 0)) && return 0
    [[ ${ROTOR_RXE_NO_APT:-0} == 1 ]] && skip "missing packages ${missing[*]} (ROTOR_RXE_NO_APT=1)"
    local sudo=
    if ((EUID != 0)); then
        command -v sudo >/dev/null && sudo -n true 2>/dev/null && sudo="sudo -n" ||
            skip "missing packages ${missing[*]} and no root to install them"
    fi
    msg "apt-get install ${missing[*]}"
    $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq >&2 &&
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            --no-install-recommends "${missing[@]}" >&2 ||
        skip "apt-get install ${missing[*]} failed"
}
need_pkgs
command -v qemu-system-x86_64 >/dev/null || skip "qemu-system-x86_64 not found"

# ---- cached image: kernel, module tree, initramfs -----------------------------
IMG=$CACHE/img
# The first-stage init, run from the initramfs by busybox: mount the host root
# read-only with a RAM overlay, the module tree and the control dir, then hand
# over to the per-run guest script in the control dir.
read -r -d '' INIT <<'EOF' || true
#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc; mount -t sysfs sys /sys; mount -t devtmpfs dev /dev
for m in $(cat /modules.order); do insmod /mods/$m; done
P=trans=virtio,version=9p2000.L,msize=262144
mkdir -p /host /ram /root
mount -t 9p -o $P,ro,cache=loose host /host
mount -t tmpfs ram /ram && mkdir /ram/u /ram/w
mount -t overlay -o lowerdir=/host,upperdir=/ram/u,workdir=/ram/w ovl /root
mount -t proc proc /root/proc; mount -t sysfs sys /root/sys; mount -t devtmpfs dev /root/dev
mkdir -p /root/run/rotor-rxe && mount -t 9p -o $P,cache=none ctl /root/run/rotor-rxe
mkdir -p /root/lib/modules && mount -t 9p -o $P,ro,cache=loose mods /root/lib/modules
exec switch_root /root /bin/bash /run/rotor-rxe/guest.sh
EOF
STAMP="rotor-rxe-3 $(printf '%s' "$INIT" | md5sum | cut -c1-16)"

build_image() {
    mkdir -p "$CACHE"
    exec 8>"$CACHE/lock"
    flock 8
    if [[ -f $IMG/stamp && $(cat "$IMG/stamp") == "$STAMP" ]]; then
        exec 8>&-
        return 0
    fi
    msg "building the guest image in $IMG (once) ..."
    local tmp=$CACHE/tmp.$$ pkg kver kroot m
    rm -rf "$tmp" && mkdir -p "$tmp/deb" "$tmp/x" "$tmp/init/mods" "$tmp/init/bin"
    # linux-image-amd64 is a metapackage: find the real kernel package.
    pkg=$(apt-cache depends linux-image-amd64 2>/dev/null |
        awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }')
    [[ -n $pkg ]] || skip "cannot resolve linux-image-amd64 (apt-get update needed?)"
    (cd "$tmp/deb" && apt-get download -q "$pkg" >&2) || skip "apt-get download $pkg failed"
    dpkg-deb -x "$tmp"/deb/*.deb "$tmp/x"
    kver=$(ls "$tmp/x/lib/modules")
    kroot=$tmp/x/lib/modules/$kver
    # Drop hardware drivers the NIC-less guest never loads (saves ~300 MB).
    for m in sound drivers/gpu drivers/media drivers/net/ethernet drivers/net/wireless \
        drivers/usb drivers/scsi drivers/staging drivers/infiniband/hw drivers/hid \
        drivers/input drivers/iio drivers/mtd drivers/bluetooth net/bluetooth net/wireless \
        net/mac80211; do
        rm -rf "${kroot:?}/kernel/$m"
    done
    depmod -b "$tmp/x" "$kver"
    # initramfs: static busybox, /init, and the modules for 9p + overlay
    # (with their dependencies, uncompressed, in load order).
    cp /bin/busybox "$tmp/init/bin/"
    printf '%s\n' "$INIT" >"$tmp/init/init" && chmod +x "$tmp/init/init"
    for m in virtio_pci 9pnet_virtio 9p overlay; do
        modprobe -d "$tmp/x" -S "$kver" --show-depends "$m"
    done | awk '$1 == "insmod" && !seen[$2]++ { print $2 }' | while read -r f; do
        b=$(basename "$f")
        b=${b%.xz} && b=${b%.zst}
        case $f in
        *.xz) xz -dc "$f" >"$tmp/init/mods/$b" ;;
        *.zst) zstd -qdc "$f" >"$tmp/init/mods/$b" ;;
        *) cp "$f" "$tmp/init/mods/$b" ;;
        esac
        echo "$b" >>"$tmp/init/modules.order"
    done
    (cd "$tmp/init" && find . | cpio -o -H newc --quiet | gzip -1) >"$tmp/initrd.gz"
    rm -rf "$IMG" && mkdir -p "$IMG"
    mv "$tmp/x/boot/vmlinuz-$kver" "$IMG/vmlinuz"
    mv "$kroot" "$IMG/modules-$kver"
    mkdir -p "$IMG/modules" && mv "$IMG/modules-$kver" "$IMG/modules/$kver"
    mv "$tmp/initrd.gz" "$IMG/initrd.gz"
    echo "$kver" >"$IMG/kver"
    echo "$STAMP" >"$IMG/stamp"
    rm -rf "$tmp"
    exec 8>&-
    msg "image ready (kernel $kver)"
}
build_image
((IMAGE_ONLY)) && exit 0

# ---- per-run control directory -----------------------------------------------
RUN=$(mktemp -d "${TMPDIR:-/tmp}/rotor-rxe.XXXXXX")
QEMU_PID=
cleanup() {
    [[ -n $QEMU_PID ]] && kill "$QEMU_PID" 2>/dev/null
    rm -rf "$RUN"
}
trap cleanup EXIT
: >"$RUN/stdout"
: >"$RUN/stderr"

# The command, with its environment, as a script the guest runs.
{
    for e in "${ENVS[@]}"; do printf 'export %q\n' "$e"; done
    printf 'cd %q || exit 125\n' "$PWD"
    printf 'exec'
    printf ' %q' "$@"
    printf '\n'
} >"$RUN/cmd.sh"

# Second stage, PID 1 in the guest: mount the shares, bring up rxe0, run the
# command with its output in the control dir, record the status, power off.
{
    echo '#!/bin/bash'
    echo 'export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin HOME=/root'
    echo 'C=/run/rotor-rxe'
    echo 'fin() { echo "$1" > $C/rc.tmp; mv $C/rc.tmp $C/rc; sync; echo o > /proc/sysrq-trigger; sleep 30; }'
    echo 'exec 1>>$C/stderr 2>&1'
    echo 'mkdir -p /dev/pts /dev/shm; mount -t devpts devpts /dev/pts; mount -t tmpfs shm /dev/shm'
    echo 'ln -sf /proc/self/fd /dev/fd'
    i=0
    for s in "${SHARES[@]}"; do
        printf 'mkdir -p %q && mount -t 9p -o trans=virtio,version=9p2000.L,msize=262144,cache=mmap share%d %q || fin 125\n' \
            "$s" "$i" "$s"
        i=$((i + 1))
    done
    echo 'ip link set lo up'
    echo 'modprobe -a rdma_rxe rdma_ucm ib_uverbs && modprobe dummy numdummies=0 || fin 125'
    echo "ip link add rotor0 mtu 9000 type dummy && ip addr add $GUEST_ADDR/32 dev rotor0 && ip link set rotor0 up || fin 125"
    echo 'rdma link add rxe0 type rxe netdev rotor0 || fin 125'
    # GIDs appear asynchronously: wait for ACTIVE and the IPv4-mapped GID.
    cat <<EOF
want=\$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' ${GUEST_ADDR//./ })
P=/sys/class/infiniband/rxe0/ports/1 GIDX=
for t in \$(seq 100); do
    g=\$(grep -lsx "\$want" \$P/gids/* | head -n 1); GIDX=\${g##*/}
    grep -qs ACTIVE \$P/state && [ -n "\$GIDX" ] && break
    sleep 0.1
done
[ -n "\$GIDX" ] || { echo "rxe0 did not come up:"; rdma link; ls /sys/class/infiniband; dmesg | tail -5; fin 125; }
export ROTOR_RXE_VM=1 ROTOR_RXE_DEV=rxe0 ROTOR_RXE_ADDR=$GUEST_ADDR ROTOR_RXE_GID_INDEX=\$GIDX
ulimit -l unlimited
echo "ready \$(cut -d' ' -f1 /proc/uptime)" > \$C/times
bash \$C/cmd.sh </dev/null >>\$C/stdout 2>>\$C/stderr
rc=\$?
echo "done \$(cut -d' ' -f1 /proc/uptime)" >> \$C/times
fin \$rc
EOF
} >"$RUN/guest.sh"

VIRTFS=(-virtfs "local,path=/,mount_tag=host,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$IMG/modules,mount_tag=mods,security_model=none,readonly=on"
    -virtfs "local,path=$RUN,mount_tag=ctl,security_model=none")
i=0
for s in "${SHARES[@]}"; do
    VIRTFS+=(-virtfs "local,path=$s,mount_tag=share$i,security_model=none,multidevs=remap")
    i=$((i + 1))
done

((VERBOSE)) && msg "booting $(cat "$IMG/kver") (${CPUS} vCPU, ${MEM} MiB), shares: ${SHARES[*]}"
T0=$(date +%s)
timeout --kill-after=5 "$TIMEOUT" qemu-system-x86_64 -accel tcg -cpu max -smp "$CPUS" -m "$MEM" \
    -nodefaults -no-user-config -nic none -display none -monitor none -no-reboot \
    -kernel "$IMG/vmlinuz" -initrd "$IMG/initrd.gz" \
    -append "console=ttyS0 quiet loglevel=3 panic=-1 rdinit=/init" \
    -serial "file:$RUN/console" "${VIRTFS[@]}" </dev/null >"$RUN/qemu.log" 2>&1 &
QEMU_PID=$!
# Stream the command's output while it runs.
tail -n +1 -s 0.3 -f --pid=$QEMU_PID "$RUN/stdout" &
tail -n +1 -s 0.3 -f --pid=$QEMU_PID "$RUN/stderr" >&2 &
set +e
wait $QEMU_PID
QRC=$?
set -e
QEMU_PID=
wait
((VERBOSE)) && msg "VM ran $(($(date +%s) - T0)) s; guest uptime at: $(tr '\n' ' ' <"$RUN/times" 2>/dev/null)"
if [[ -f $RUN/rc ]]; then
    exit "$(cat "$RUN/rc")"
fi
if ((QRC == 124)); then
    msg "timeout after $TIMEOUT s"
    tail -n 20 "$RUN/console" >&2
    exit 124
fi
msg "VM failed (qemu status $QRC)"
tail -n 20 "$RUN/qemu.log" "$RUN/console" >&2
exit 125
