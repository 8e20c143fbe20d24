#!/bin/bash
# Run one command as root in a throw-away QEMU guest booting Debian's own
# kernel, whose root filesystem is the host's / (read-only 9p under a tmpfs
# overlay). The host kernel here has no module support and a hybrid cgroup
# layout, so this is where kernel modules and cgroup v2 get tested.
#
#   run-in-vm.sh [--timeout SECONDS] [--mem MB] [--cpus N] [--out DIR]
#                [--append KERNEL_ARGS] -- COMMAND [ARGS...]
#
# See tests/vm/README.md for the whole contract. In short: COMMAND runs as
# root in the guest, cwd = our cwd, MRUN_VM_OUT=/mnt/out (= host DIR, rw);
# its output streams to our stdout and to DIR/guest.log; we exit with its
# exit code, or
#   124  hung guest (no exit code within --timeout; qemu is killed)
#   123  the guest kernel logged an oops/BUG/WARNING/panic/... (lines printed)
#   125  the harness or qemu failed (bad usage, qemu did not start, guest
#        powered off without an exit code)
# Our own messages go to stderr, one line naming the cause, prefixed
# "run-in-vm: "; diagnostics start with "# ".
set -euo pipefail

readonly PROG=run-in-vm
readonly E_KERNEL=123 E_HUNG=124 E_HARNESS=125

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)

usage() {
    cat <<'EOF'
usage: run-in-vm.sh [--timeout SECONDS] [--mem MB] [--cpus N] [--out DIR]
                    [--append KERNEL_ARGS] -- COMMAND [ARGS...]

Boots Debian's kernel under qemu (TCG) with the host's / as a read-only root
(tmpfs overlay on top), runs COMMAND as root in the guest, streams its output,
and exits with its exit code (124: hung guest, 123: kernel oops/warning,
125: harness or qemu failure).

Environment: MRUN_VM_KERNEL_VERSION, MRUN_VM_CACHE, MRUN_VM_EXTRA_MODULES,
MRUN_VM_QEMU_ARGS; MRUN_* variables are passed through to COMMAND.
EOF
}

# die MESSAGE [CODE]: the one-line error callers grep for.
die() {
    printf '%s: %s\n' "$PROG" "$1" >&2
    exit "${2:-$E_HARNESS}"
}

is_uint() { [[ $1 =~ ^[0-9]+$ ]]; }

# ---------------------------------------------------------------- options
timeout_s=300 mem_mb=2048 cpus=2 out_dir='' extra_append=''
while (($#)); do
    case $1 in
    --timeout | --mem | --cpus | --out | --append)
        (($# >= 2)) || die "option $1 needs a value"
        case $1 in
        --timeout) timeout_s=$2 ;;
        --mem) mem_mb=$2 ;;
        --cpus) cpus=$2 ;;
        --out) out_dir=$2 ;;
        --append) extra_append=$2 ;;
        esac
        shift 2
        ;;
    --timeout=*) timeout_s=${1#*=}; shift ;;
    --mem=*) mem_mb=${1#*=}; shift ;;
    --cpus=*) cpus=${1#*=}; shift ;;
    --out=*) out_dir=${1#*=}; shift ;;
    --append=*) extra_append=${1#*=}; shift ;;
    -h | --help) usage; exit 0 ;;
    --) shift; break ;;
    *) usage >&2; die "unknown option '$1' (COMMAND goes after --)" ;;
    esac
done
(($#)) || { usage >&2; die "no COMMAND given (put it after --)"; }
if ! is_uint "$timeout_s" || ((timeout_s == 0)); then
    die "--timeout must be a positive number of seconds, not '$timeout_s'"
fi
if ! is_uint "$mem_mb" || ((mem_mb < 256)); then
    die "--mem must be at least 256 (MB), not '$mem_mb'"
fi
if ! is_uint "$cpus" || ((cpus == 0)); then
    die "--cpus must be a positive number, not '$cpus'"
fi

command -v qemu-system-x86_64 >/dev/null || die "qemu failed to start: qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"

# ---------------------------------------------------------------- kernel
# The newest Debian kernel that has both an image and its modules; the host's
# own (non-Debian, module-less) kernel never qualifies.
find_kernel_version() {
    local f v
    for f in /boot/vmlinuz-*-amd64; do
        [[ -e $f ]] || continue
        v=${f#/boot/vmlinuz-}
        [[ -r /lib/modules/$v/modules.dep ]] && printf '%s\n' "$v"
    done | sort -V | tail -n 1
}
kver=${MRUN_VM_KERNEL_VERSION:-$(find_kernel_version)}
[[ -n $kver ]] || die "no Debian kernel found: need /boot/vmlinuz-*-amd64 and /lib/modules/<ver>/modules.dep (apt-get install linux-image-amd64)"
kernel=/boot/vmlinuz-$kver
moddir=/lib/modules/$kver
[[ -r $kernel ]] || die "kernel image $kernel is missing or unreadable (MRUN_VM_KERNEL_VERSION=$kver)"
[[ -r $moddir/modules.dep ]] || die "$moddir/modules.dep is missing (MRUN_VM_KERNEL_VERSION=$kver; run depmod $kver)"

cache=${MRUN_VM_CACHE:-$repo/build/vm}
mkdir -p "$cache"
cache=$(cd "$cache" && pwd)

# ---------------------------------------------------------------- vmlinux
# On TCG the guest spends ~4 s inflating the xz-compressed bzImage. qemu can
# instead load the uncompressed ELF vmlinux directly via its PVH entry note
# (Debian builds with CONFIG_PVH=y), so extract it once per kernel and cache
# it. Any doubt (unknown compression, no PVH note) falls back to the bzImage.
extract_vmlinux() { # bzImage dest
    local src=$1 dst=$2 tmp magic tool off
    tmp=$(mktemp "$cache/.vmlinux.XXXXXX") || return 1
    for spec in $'\xfd7zXZ:xz' $'\x28\xb5\x2f\xfd:zstd' $'\x1f\x8b\x08:gzip'; do
        magic=${spec%:*} tool=${spec##*:}
        command -v "$tool" >/dev/null || continue
        for off in $(LC_ALL=C grep -abo -F "$magic" "$src" 2>/dev/null | head -n 3 | cut -d: -f1); do
            # The payload is followed by trailing data the tool complains
            # about: judge by the result, not the exit status.
            tail -c "+$((off + 1))" "$src" | "$tool" -dc >"$tmp" 2>/dev/null || true
            if [[ $(head -c 4 "$tmp" | od -An -c | tr -d ' ') == 177ELF ]] &&
                { ! command -v readelf >/dev/null || readelf -n "$tmp" 2>/dev/null | grep -q '(0x00000012)'; }; then
                chmod 0644 "$tmp"
                mv -f "$tmp" "$dst"
                return 0
            fi
        done
    done
    rm -f "$tmp"
    return 1
}
boot_image=$kernel
vmlinux=$cache/vmlinux-$kver-$(stat -c '%s-%Y' "$kernel")
if [[ -s $vmlinux ]] || extract_vmlinux "$kernel" "$vmlinux"; then
    boot_image=$vmlinux
    # Images of an older build of this kernel are 60+ MB each.
    find "$cache" -maxdepth 1 -name "vmlinux-$kver-*" ! -name "${vmlinux##*/}" -delete 2>/dev/null || true
fi

# ---------------------------------------------------------------- initramfs
# busybox-static + the modules needed to mount the root (virtio, 9p, overlay)
# and those a container runtime expects (fuse, tun, veth, loop). Everything
# else is loadable in the guest with the host's modprobe from /lib/modules.
modules=(virtio_pci 9pnet_virtio 9p overlay fuse tun veth loop)
read -r -a extra_modules <<<"${MRUN_VM_EXTRA_MODULES:-}"
modules+=("${extra_modules[@]}")

busybox=/bin/busybox
[[ -x $busybox ]] || die "$busybox is missing (apt-get install busybox-static)"
if ldd "$busybox" >/dev/null 2>&1; then
    die "$busybox is dynamically linked; the initramfs needs busybox-static"
fi

# Resolve dependencies from modules.dep, in load order, each file once.
# -C /dev/null: the host's modprobe.d options are not the guest's business.
declare -a ko_paths=()
declare -A ko_seen=()
for m in "${modules[@]}"; do
    deps=$(modprobe -S "$kver" -C /dev/null --show-depends "$m" 2>&1) \
        || die "cannot resolve kernel module '$m' for $kver: $deps"
    while read -r kind path _; do
        [[ $kind == insmod ]] || continue # "builtin NAME": nothing to load
        [[ -n ${ko_seen[$path]:-} ]] && continue
        ko_seen[$path]=1
        ko_paths+=("$path")
    done <<<"$deps"
done

# The cache key covers every input, so a changed init, busybox, module or
# module list rebuilds the image and nothing else does.
key=$(
    {
        printf '%s\n' "$kver" "${ko_paths[@]}"
        sha256sum "$here/guest/init" "$busybox"
        for p in "${ko_paths[@]}"; do stat -c '%n %s %Y' "$p"; done
    } | sha256sum | cut -c1-16
)
initramfs=$cache/initramfs-$kver-$key.cpio

# A subshell, so its EXIT trap removes the scratch files on every path. Each
# step checks itself: `set -e` does not apply inside `build_initramfs || die`.
build_initramfs() (
    stage=$(mktemp -d "$cache/.initramfs-stage.XXXXXX") || exit 1
    tmp=$(mktemp "$cache/.initramfs.XXXXXX") || exit 1
    trap 'rm -rf "$stage" "$tmp"' EXIT
    mkdir -p "$stage/bin" "$stage/dev" || exit 1
    cp "$busybox" "$stage/bin/busybox" || exit 1
    install -m 0755 "$here/guest/init" "$stage/init" || exit 1
    for p in "${ko_paths[@]}"; do
        mkdir -p "$stage${p%/*}" && cp "$p" "$stage$p" || exit 1
        printf '%s\n' "${p#/}"
    done >"$stage/modules.order" || exit 1
    # Lets the kernel give init a console; stage 1 reopens it anyway when
    # this fails (not root).
    mknod "$stage/dev/console" c 5 1 2>/dev/null
    # Uncompressed: no inflating on TCG, and qemu loads it by DMA anyway.
    (cd "$stage" && find . -mindepth 1 -print0 | LC_ALL=C sort -z |
        cpio --null -o -H newc -R 0:0 --reproducible --quiet) >"$tmp" || exit 1
    chmod 0644 "$tmp" || exit 1
    mv -f "$tmp" "$initramfs" # atomic: concurrent runs never see half a file
)
if [[ ! -s $initramfs ]]; then
    build_initramfs || die "cannot build the initramfs in $cache"
    # Drop images for other inputs that nobody used for a day.
    find "$cache" -maxdepth 1 -name 'initramfs-*.cpio' ! -path "$initramfs" -mmin +1440 -delete 2>/dev/null || true
fi
touch "$initramfs"

# ---------------------------------------------------------------- run dirs
# A run killed by SIGKILL cannot remove its control dir; sweep old ones.
find "$cache" -maxdepth 1 -name 'run.*' -type d -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
run_dir=$(mktemp -d "$cache/run.XXXXXX")
ctl=$run_dir/ctl # shared read-only with the guest
mkdir "$ctl"

out_is_temp=0
if [[ -z $out_dir ]]; then
    # Default out dirs of failed runs are kept for a look; not forever.
    find "$cache" -maxdepth 1 -name 'out.*' -type d -mmin +1440 -exec rm -rf {} + 2>/dev/null || true
    out_dir=$(mktemp -d "$cache/out.XXXXXX")
    out_is_temp=1
else
    mkdir -p "$out_dir" || die "cannot create --out directory '$out_dir'"
fi
out_dir=$(cd "$out_dir" && pwd)
# Results of an earlier run in the same DIR must not pass for this one's.
rm -f "$out_dir/guest.log" "$out_dir/exit-code" "$out_dir/exit-code.tmp" \
    "$out_dir/dmesg.txt" "$out_dir/console.log" "$out_dir/kernel-version"
: >"$out_dir/guest.log"
: >"$out_dir/console.log"

qemu_pid='' tail_pid='' result=$E_HARNESS
# Runs on every exit, error and signal: no qemu, tail or control dir outlives
# this script.
# shellcheck disable=SC2317 # invoked by the EXIT trap
cleanup() {
    # A second Ctrl-C or an error must not cut the cleanup short.
    trap '' INT TERM HUP
    set +e
    if [[ -n $qemu_pid ]] && kill -0 "$qemu_pid" 2>/dev/null; then
        kill -TERM "$qemu_pid" 2>/dev/null || true
        for _ in 1 2 3 4 5 6 7 8 9 10; do
            kill -0 "$qemu_pid" 2>/dev/null || break
            sleep 0.2
        done
        kill -KILL "$qemu_pid" 2>/dev/null || true
        wait "$qemu_pid" 2>/dev/null || true
    fi
    if [[ -n $tail_pid ]]; then
        kill "$tail_pid" 2>/dev/null || true
        wait "$tail_pid" 2>/dev/null || true
    fi
    rm -rf "$run_dir"
    if ((out_is_temp)); then
        if ((result == 0)); then
            rm -rf "$out_dir"
        else
            printf '# guest output kept in %s\n' "$out_dir" >&2
        fi
    fi
}
trap cleanup EXIT
trap 'result=130; exit 130' INT
trap 'result=143; exit 143' TERM
trap 'result=129; exit 129' HUP

# ---------------------------------------------------------------- control
cp "$here/guest/stage2.sh" "$ctl/stage2.sh"
# MRUN_* variables travel to the command; MRUN_VM_OUT is always /mnt/out.
{
    while IFS= read -r name; do
        [[ $name == MRUN_* && $name != MRUN_VM_OUT ]] || continue
        printf 'export %s=%q\n' "$name" "${!name}"
    done < <(compgen -e)
} >"$ctl/env"
# Paths the guest's own /tmp and /run tmpfs would hide (a checkout under /tmp, a
# build dir there): stage2 lays each back at its own path, as a writable overlay
# of the host's copy, so scripts that name absolute paths work wherever the
# checkout is.
{
    for p in "$repo" "$PWD" "${MRUN_BUILD_DIR:-}" "${MRUN_RESULTS_DIR:-}"; do
        case $p in
            /tmp/* | /run/*) [[ $p == /run/mrun-vm* ]] || printf '%s\n' "$p" ;;
        esac
    done
} | sort -u >"$ctl/keep-paths"
# The caller's cwd is visible through the host root (and the kept paths); the
# raw host root is the fallback.
{
    printf 'cd -- %q 2>/dev/null || cd -- %q || { echo "%s: cwd %q is not visible in the guest" >&2; exit %d; }\n' \
        "$PWD" "/run/mrun-vm/hostroot$PWD" "$PROG" "$PWD" "$E_HARNESS"
    printf 'exec'
    printf ' %q' "$@"
    printf '\n'
} >"$ctl/cmd.sh"

# ---------------------------------------------------------------- qemu
# qemu splits option values at commas; a literal comma is written twice.
qesc() { printf '%s' "${1//,/,,}"; }

# panic=-1: a panicking guest reboots at once, and -no-reboot turns that into
# qemu exiting, so a crash is reported now rather than at --timeout.
cmdline="console=ttyS0 quiet panic=-1 cgroup_no_v1=all systemd.unified_cgroup_hierarchy=1"
# acpi=noirq: setting up ACPI interrupt links costs ~0.2 s per virtio-pci
# device on TCG, and virtio uses MSI-X anyway. A caller who needs ACPI IRQ
# routing (a passthrough device with legacy INTx) passes its own acpi=/pci=.
[[ $extra_append == *acpi=* || $extra_append == *pci=* ]] || cmdline+=" acpi=noirq"
# mitigations=off: retpolines and RSB filling double the cost of a syscall
# under TCG; nothing tested here depends on speculation mitigations.
cmdline+=" mitigations=off"
[[ -z $extra_append ]] || cmdline+=" $extra_append"

qemu=(qemu-system-x86_64 -accel tcg -nographic -no-reboot -nodefaults
    -machine pc -cpu max -smp "$cpus" -m "$mem_mb"
    -kernel "$boot_image" -initrd "$initramfs" -append "$cmdline"
    -chardev "file,id=con0,path=$(qesc "$out_dir/console.log")" -serial chardev:con0
    -virtfs "local,path=/,mount_tag=hostroot,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$(qesc "$ctl"),mount_tag=mrunctl,security_model=none,readonly=on,multidevs=remap"
    -virtfs "local,path=$(qesc "$out_dir"),mount_tag=mrunout,security_model=none,multidevs=remap")
# qboot skips SeaBIOS's device probing: ~0.3 s less per boot on TCG.
if [[ -r /usr/share/qemu/qboot.rom ]]; then
    qemu+=(-bios /usr/share/qemu/qboot.rom)
fi
# For suites that need more hardware (a passthrough device, a NIC, ...):
# split on whitespace, no globbing.
read -r -a extra_qemu_args <<<"${MRUN_VM_QEMU_ARGS:-}"
qemu+=("${extra_qemu_args[@]}")

start=$SECONDS
# --pdeathsig: even if this script is SIGKILLed, qemu does not outlive it.
setpriv --pdeathsig KILL -- "${qemu[@]}" </dev/null >"$run_dir/qemu.log" 2>&1 &
qemu_pid=$!

# Stream the command's output while it runs; tail exits once qemu has, after
# a last read.
tail -n +1 -s 0.2 -f --pid="$qemu_pid" "$out_dir/guest.log" &
tail_pid=$!

hung=0 kver_printed=0
while kill -0 "$qemu_pid" 2>/dev/null; do
    if ((!kver_printed)) && [[ -s $out_dir/kernel-version ]]; then
        printf '# guest kernel: %s (booted in %ds)\n' "$(head -n 1 "$out_dir/kernel-version")" "$((SECONDS - start))" >&2
        kver_printed=1
    fi
    if ((SECONDS - start >= timeout_s)); then
        hung=1
        break
    fi
    sleep 0.2
done

qemu_rc=0
if ((hung)); then
    kill -KILL "$qemu_pid" 2>/dev/null || true
fi
wait "$qemu_pid" 2>/dev/null || qemu_rc=$?
qemu_pid=''
# tail notices within its -s interval that qemu is gone.
for _ in $(seq 50); do
    kill -0 "$tail_pid" 2>/dev/null || break
    sleep 0.1
done
kill "$tail_pid" 2>/dev/null || true
wait "$tail_pid" 2>/dev/null || true
tail_pid=''

if ((!kver_printed)) && [[ -s $out_dir/kernel-version ]]; then
    printf '# guest kernel: %s\n' "$(head -n 1 "$out_dir/kernel-version")" >&2
fi

# Kernel trouble: a failure even when the command itself passed. dmesg.txt is
# the complete log up to the end of the command; the serial console adds what
# came later (an oops in a driver's shutdown path during poweroff) or all
# there is when the guest hung or died. Console lines end in \r, and those
# already in dmesg.txt are dropped.
readonly KERNEL_TROUBLE='Oops|BUG:|WARNING:|Call Trace|general protection fault|Kernel panic|KASAN|refcount_t'
kernel_log=$out_dir/console.log
[[ -s $out_dir/dmesg.txt ]] && kernel_log=$out_dir/dmesg.txt
kernel_log_lines() {
    if [[ -s $out_dir/dmesg.txt ]]; then
        cat "$out_dir/dmesg.txt"
        tr -d '\r' <"$out_dir/console.log" | awk 'NR == FNR { seen[$0] = 1; next } !($0 in seen)' "$out_dir/dmesg.txt" -
    else
        tr -d '\r' <"$out_dir/console.log"
    fi
}
# Prints the offending lines, and after a "Call Trace" the frames that follow
# (what a developer needs first), as "# kernel: " diagnostics on stderr.
report_kernel_trouble() {
    local lines
    lines=$(kernel_log_lines | awk -v re="$KERNEL_TROUBLE" '
        $0 ~ re { print; trace = ($0 ~ /Call Trace/) ? 24 : 0; next }
        trace > 0 && /\+0x|TASK>|RIP:/ { print; trace--; next }
        { trace = 0 }' | head -n 80)
    [[ -n $lines ]] || return 1
    printf '%s\n' "$lines" | sed 's/^/# kernel: /' >&2
    return 0
}

if ((hung)); then
    report_kernel_trouble || true
    where="the command was still running"
    [[ -s $out_dir/kernel-version ]] || where="the guest never reached the command"
    result=$E_HUNG
    die "hung guest: no exit code within ${timeout_s}s ($where), qemu killed (console: $out_dir/console.log)" "$result"
fi

if [[ ! -s $out_dir/exit-code ]]; then
    if ((qemu_rc != 0)) && [[ ! -s $out_dir/console.log ]]; then
        sed 's/^/# qemu: /' "$run_dir/qemu.log" >&2
        result=$E_HARNESS
        die "qemu failed to start (exit $qemu_rc): $(head -n 1 "$run_dir/qemu.log")" "$result"
    fi
    if report_kernel_trouble; then
        result=$E_KERNEL
        die "guest kernel crashed before the command finished (console: $out_dir/console.log)" "$result"
    fi
    tail -n 20 "$out_dir/console.log" | sed 's/^/# console: /' >&2
    result=$E_HARNESS
    die "guest powered off without an exit code (qemu exit $qemu_rc; console: $out_dir/console.log)" "$result"
fi

rc=$(<"$out_dir/exit-code")
is_uint "$rc" || { result=$E_HARNESS; die "guest wrote a malformed exit code '$rc'" "$result"; }

if report_kernel_trouble; then
    result=$E_KERNEL
    die "guest kernel logged an oops/BUG/WARNING (command exit $rc; full log: $kernel_log, console: $out_dir/console.log)" "$result"
fi

result=$rc
exit "$rc"
