#!/bin/bash
# fakegpu.sh - the fakegpu.ko suite. Runs INSIDE the VM guest, as root
# (tests/vm/fakegpu-suite.sh boots the guest with tests/vm/run-in-vm.sh).
#
#   fakegpu.sh --ko PATH --client PATH --client-static PATH --bench PATH
#              --abi-test PATH --fuzz PATH --xid-test PATH [--fuzz-seconds N]
#              [--bench-jobs N]
#
# Loads the module, checks its nodes, runs fakegpu-client as root and as the
# unprivileged user mrun-test (and read-only: every write command EBADF), the
# adversarial ABI tests (read-only descriptors included), the privileged
# ioctl from an unprivileged user and from root in `unshare -Ur`, the Xid
# events (faults, poisoned contexts, injection, RESET), the fuzzer
# from several processes of both users, the benchmark, and unloads the module.
# Prints TAP (docs/DEVELOPING.md) and copies it to $MRUN_VM_OUT/fakegpu.tap;
# exits 1 if any test failed.
set -u

ko='' client='' client_static='' bench='' abi_test='' fuzz='' xid_test=''
fuzz_seconds=20 bench_jobs=200000 bench_ioctl_jobs=20000
while (($#)); do
    case $1 in
    --ko) ko=$2 ;;
    --client) client=$2 ;;
    --client-static) client_static=$2 ;;
    --bench) bench=$2 ;;
    --abi-test) abi_test=$2 ;;
    --fuzz) fuzz=$2 ;;
    --xid-test) xid_test=$2 ;;
    --fuzz-seconds) fuzz_seconds=$2 ;;
    --bench-jobs) bench_jobs=$2 ;;
    *) echo "fakegpu.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done

out=${MRUN_VM_OUT:-/tmp}
tap=$out/fakegpu.tap
: >"$tap"
user=mrun-test
stage=/tmp/fakegpu-test # world-readable copies: mrun-test cannot enter /root
n=0 failed=0

# ---------------------------------------------------------------- TAP
source "$(dirname "${BASH_SOURCE[0]}")/tap-lib.sh"
# import_results PREFIX COMMAND...: one TAP line per "PASS x"/"FAIL x: why" line.
import_results() {
    local prefix=$1 line rc results
    shift
    results=$("$@" 2>&1)
    rc=$?
    while IFS= read -r line; do
        case $line in
        "PASS "*) ok "$prefix${line#PASS }" ;;
        "FAIL "*) line=${line#FAIL }; not_ok "$prefix${line%%: *}" "${line#*: }" ;;
        "# "*) diag "${line#\# }" ;;
        esac
    done <<<"$results"
    case $rc in
    0 | 1) ;; # 1: failures already reported line by line
    *) not_ok "${prefix}ran to completion" "exit $rc" "$(tail -n 5 <<<"$results")" ;;
    esac
}
as_user() { runuser -u "$user" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp LD_LIBRARY_PATH="$stage" "$@"; }
as_root() { env LD_LIBRARY_PATH="$stage" "$@"; }
# The kernel log is followed from the start into a file: a flood of messages
# (the fuzzer) must not push an earlier warning out of the ring buffer.
klog=$out/fakegpu-dmesg.log
kernel_trouble() { grep -aE 'Oops|BUG:|WARNING:|Call Trace|general protection fault|refcount_t' "$klog"; }
# log_clean PHASE: a test that the kernel logged no trouble so far.
log_clean() {
    local trouble
    sleep 0.3 # let dmesg -w catch up
    if trouble=$(kernel_trouble); then not_ok "kernel log clean after $1" "$(head -n 30 <<<"$trouble")"; else ok "kernel log clean after $1"; fi
}

# ---------------------------------------------------------------- setup
dmesg -w >"$klog" 2>&1 &
klog_pid=$!
trap 'kill $klog_pid 2>/dev/null' EXIT
diag "guest kernel $(uname -r), $(nproc) cpus, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB"
for f in "$ko" "$client" "$client_static" "$bench" "$abi_test" "$fuzz" "$xid_test"; do
    if [[ -z $f || ! -r $f ]]; then
        not_ok "test inputs present" "missing: '${f}'"
        emit "1..$n"
        exit 1
    fi
done
rm -rf "$stage"
mkdir -m 0755 "$stage"
cp "$client" "$client_static" "$bench" "$abi_test" "$fuzz" "$xid_test" "$stage"/
cp -P "$(dirname "$client")"/libfakegpu.so* "$stage"/ 2>/dev/null
chmod -R a+rX "$stage"
C=$stage/fakegpu-client CS=$stage/fakegpu-client-static B=$stage/fakegpu-bench
A=$stage/fakegpu-abi-test F=$stage/fakegpu-fuzz X=$stage/fakegpu-xid-test
id "$user" >/dev/null 2>&1 || { not_ok "user $user exists in the guest"; emit "1..$n"; exit 1; }

# ---------------------------------------------------------------- load
lsmod | grep -qw fakegpu && rmmod fakegpu
expect_exit "insmod refuses ndev=0" 1 'Invalid|insmod' insmod "$ko" ndev=0
expect_exit "insmod refuses ndev=17" 1 'Invalid|insmod' insmod "$ko" ndev=17
expect_exit "insmod refuses job_timeout_ms=0" 1 'Invalid|insmod' insmod "$ko" job_timeout_ms=0
check "insmod ndev=3" insmod "$ko" ndev=3
check "ndev=3 creates fakegpu0..2" test -c /dev/fakegpu2 -a ! -e /dev/fakegpu3
check "rmmod after ndev=3" rmmod fakegpu
check "nodes removed on rmmod" test ! -e /dev/fakegpu0 -a ! -e /dev/fakegpuctl

# Small quotas so the quota tests are quick; the client reads them from INFO.
# job_timeout_ms: the hang test waits that long; the fuzzer's DELAY jobs too.
params=(ndev=2 mem_quota=$((16 << 20)) handle_quota=32 vram_size=$((48 << 20)) max_queued=256 job_timeout_ms=1000)
check "insmod ${params[*]}" insmod "$ko" "${params[@]}"

major=$(awk '$2 == "fakegpu" {print $1}' /proc/devices)
node_ok() { # node minor
    local st
    st=$(stat -c '%F %t %T %a %U %G' "$1" 2>&1) || { echo "$st"; return 1; }
    [[ $st == "character special file $(printf '%x' "$major") $(printf '%x' "$2") 600 root root" ]] || { echo "$1: $st"; return 1; }
}
check "/proc/devices lists fakegpu with its own major" test -n "$major"
check "/dev/fakegpu0: char $major:0, 0600 root:root" node_ok /dev/fakegpu0 0
check "/dev/fakegpu1: char $major:1, 0600 root:root" node_ok /dev/fakegpu1 1
check "/dev/fakegpuctl: char $major:255, 0600 root:root" node_ok /dev/fakegpuctl 255
check "no /dev/fakegpu2 with ndev=2" test ! -e /dev/fakegpu2
check "class fakegpu has 3 devices" test "$(ls /sys/class/fakegpu | tr '\n' ' ')" = "fakegpu0 fakegpu1 fakegpuctl "
check "parameters visible in sysfs" test "$(cat /sys/module/fakegpu/parameters/mem_quota)" = $((16 << 20)) -a \
    "$(cat /sys/module/fakegpu/parameters/handle_quota)" = 32
check "module refcount 0 when unused" test "$(cat /sys/module/fakegpu/refcnt)" = 0

# ---------------------------------------------------------------- client
expect_exit "client as root: all checks pass" 0 'ALL CHECKS PASSED' as_root "$C"
expect_exit "static client as root: all checks pass" 0 'ALL CHECKS PASSED' "$CS"
expect_exit "client as $user before access is granted: EACCES at open" 10 \
    '^FAIL open: open /dev/fakegpu0: EACCES' as_user "$C"
expect_exit "client --json names the errno" 10 '"errno_name":"EACCES"' as_user "$C" --json

chgrp "$user" /dev/fakegpu0 /dev/fakegpu1 /dev/fakegpuctl
chmod 0660 /dev/fakegpu0 /dev/fakegpu1 /dev/fakegpuctl
expect_exit "client as $user after chgrp+chmod 0660: all checks pass" 0 'ALL CHECKS PASSED' as_user "$C"
expect_exit "static client as $user: all checks pass" 0 'ALL CHECKS PASSED' as_user "$CS"
if [[ -x /usr/bin/python3 ]]; then
    check "client --json is valid JSON and says passed" bash -c \
        "LD_LIBRARY_PATH=$stage $C --json | /usr/bin/python3 -c 'import json,sys; d=json.load(sys.stdin); sys.exit(0 if d[\"passed\"] and len(d[\"checks\"]) == 12 else 1)'"
else
    skip "client --json is valid JSON" "no python3 in the guest"
fi
expect_exit "FAKEGPU_VISIBLE_DEVICES=1 selects fakegpu1" 0 'device 1 of 2' \
    env FAKEGPU_VISIBLE_DEVICES=1 LD_LIBRARY_PATH="$stage" "$C" --check info
expect_exit "FAKEGPU_VISIBLE_DEVICES=none: exit 3" 3 'no visible device' \
    env FAKEGPU_VISIBLE_DEVICES=none LD_LIBRARY_PATH="$stage" "$C"
expect_exit "client --device 1 as $user" 0 'ALL CHECKS PASSED' as_user "$C" --device 1
# A read-only descriptor may look, not act (fakegpu(4), ACCESS MODE).
expect_exit "client --read-only as $user: open and INFO pass" 0 'ALL CHECKS PASSED' \
    as_user "$C" --read-only --check info
expect_exit "client --read-only as $user: ALLOC is EBADF, and the client says why" 12 \
    '^FAIL alloc: alloc [0-9]+ bytes \(opened read-only: ALLOC needs a descriptor open for writing\): EBADF' \
    as_user "$C" --read-only
expect_exit "static client --read-only as root: RESET is EBADF despite CAP_SYS_ADMIN" 22 \
    '^FAIL reset: reset /dev/fakegpu0 \(opened read-only: RESET needs a descriptor open for writing\): EBADF' \
    "$CS" --read-only --check reset

# ---------------------------------------------------------------- ABI
import_results "abi (root): " "$A"
import_results "abi ($user): " as_user "$A" numbers info alloc handles submit mmap ring readonly quota
log_clean "the ABI tests"

# ---------------------------------------------------------------- privilege
expect_exit "privileged reset as root" 0 'reset count' as_root "$C" --check reset
expect_exit "privileged reset as $user: EPERM" 22 '^FAIL reset: reset /dev/fakegpu0: EPERM' as_user "$C" --check reset
expect_exit "privileged reset as root in unshare -Ur: EPERM" 22 '^FAIL reset: reset /dev/fakegpu0: EPERM' \
    unshare -Ur -- env LD_LIBRARY_PATH="$stage" "$C" --check reset
expect_exit "privileged reset as $user in unshare -Ur (root in the userns): EPERM" 22 'EPERM' \
    as_user unshare -Ur -- "$CS" --check reset
import_results "abi ($user): " as_user "$A" reset-eperm
import_results "abi (root in unshare -Ur): " unshare -Ur -- "$A" reset-eperm

# ---------------------------------------------------------------- refcount
# chrdev_open takes two module references per open file: the cdev's and the fops'.
exec 3<>/dev/fakegpu0
check "an open fd holds the module (refcnt 2: cdev + fops)" test "$(cat /sys/module/fakegpu/refcnt)" = 2
expect_exit "rmmod refuses while a device is open" 1 'in use' rmmod fakegpu
exec 3>&-
check "closing drops the module reference" test "$(cat /sys/module/fakegpu/refcnt)" = 0

# ---------------------------------------------------------------- Xid events
# fakegpu(4), XID EVENTS. The faults, the poisoned context beside a working one,
# the log lines and RESET are checked by fakegpu-xid-test itself (as root: it
# injects); here, what only a second user or the shell can see.
inject=/sys/kernel/debug/fakegpu/inject
check "debugfs: inject exists, mode 0200" test "$(stat -c %a "$inject" 2>&1)" = 200
if as_user sh -c "echo '0 79' >$inject" 2>/dev/null; then
    not_ok "debugfs: $user cannot inject"
else
    ok "debugfs: $user cannot inject"
fi
expect_exit "the device is not lost after the refused injection" 0 'ALL CHECKS PASSED' as_root "$C" --check info
import_results "xid: " as_root "$X" --device /dev/fakegpu0 --other /dev/fakegpu1
expect_exit "client passes after the Xid tests (RESET recovered the device)" 0 'ALL CHECKS PASSED' as_user "$C"
# libfakegpu turns ENODEV/EIO into the fault and its fix (INFO still answers).
echo "1 79" >"$inject"
expect_exit "client on a lost device: ALLOC fails, libfakegpu names Xid 79 and the fix" 12 \
    'device lost to Xid 79 \(GPU has fallen off the bus\).*reset the device' as_user "$C" --device 1
expect_exit "fakegpu-client --check reset recovers the lost device" 0 'reset count' as_root "$C" --device 1 --check reset
expect_exit "client passes on the reset device" 0 'ALL CHECKS PASSED' as_user "$C" --device 1
exec 3<>/dev/fakegpu0
ctx_line=$(grep -E "^fakegpu0 [0-9]+ $$ " /sys/kernel/debug/fakegpu/contexts)
check "debugfs contexts lists this shell's context ($ctx_line)" test -n "$ctx_line"
check "fdinfo of the descriptor names the same context" \
    grep -qx "fakegpu-ctx:[[:space:]]*$(awk '{print $2}' <<<"$ctx_line")" /proc/$$/fdinfo/3
exec 3>&-
log_clean "the Xid tests"
diag "$(grep -a 'Xid' "$klog" | tail -n 12)"

# ---------------------------------------------------------------- fuzz
diag "fuzzing for ${fuzz_seconds}s: 3 root processes and 2 $user processes"
seed=${MRUN_FAKEGPU_FUZZ_SEED:-$(date +%s)}
nodes=(/dev/fakegpu0 /dev/fakegpu1 /dev/fakegpuctl)
as_root "$F" --seconds "$fuzz_seconds" --procs 3 --seed "$seed" "${nodes[@]}" >"$out/fuzz-root.log" 2>&1 &
fuzz_root=$!
as_user "$F" --seconds "$fuzz_seconds" --procs 2 --seed "$((seed + 1))" "${nodes[@]}" >"$out/fuzz-user.log" 2>&1
fuzz_user_rc=$?
wait "$fuzz_root"
fuzz_root_rc=$?
diag "$(cat "$out/fuzz-root.log" "$out/fuzz-user.log")"
check "fuzzer (root, seed $seed) ran to its deadline" test "$fuzz_root_rc" = 0
check "fuzzer ($user, seed $((seed + 1))) ran to its deadline" test "$fuzz_user_rc" = 0
log_clean "fuzzing"
check "module refcount back to 0 after fuzzing" test "$(cat /sys/module/fakegpu/refcnt)" = 0
expect_exit "device memory all returned after fuzzing" 0 'vram 0 of' as_root "$C" --check info
expect_exit "client still passes after fuzzing" 0 'ALL CHECKS PASSED' as_user "$C"

# ---------------------------------------------------------------- bench
# The bench and the engine (an unbound workqueue) share guest CPU 0. Under TCG a
# wake-up across vCPUs costs up to milliseconds whenever the host is busy, which
# would measure the emulator's scheduling, not the driver; on one vCPU both
# paths run under the same conditions. An unpinned run is printed for reference.
diag "unpinned (for reference, not asserted):" "$(as_root "$B" --jobs 100000 --ioctl-jobs 10000 --repeat 1 2>&1)"
wq_mask=/sys/devices/virtual/workqueue/cpumask
saved_mask=$(cat "$wq_mask")
echo 1 >"$wq_mask"
bench_json=$out/fakegpu-bench.json
if as_root taskset -c 0 "$B" --jobs "$bench_jobs" --ioctl-jobs "$bench_ioctl_jobs" --json >"$bench_json" 2>&1; then
    ok "fakegpu-bench runs"
    diag "$(cat "$bench_json")"
    field() { sed -n "s/.*\"path\":\"$1\".*\"$2\":\([0-9.]*\).*/\1/p" "$bench_json"; }
    ioctl_rate=$(field ioctl jobs_per_s) ring_rate=$(field ring jobs_per_s)
    ioctl_per_job=$(field ioctl ioctls_per_job) ring_per_job=$(field ring ioctls_per_job)
    ratio=$(awk -v r="$ring_rate" -v i="$ioctl_rate" 'BEGIN { printf "%.1f", (i > 0 ? r / i : 0) }')
    diag "ioctl path: $ioctl_rate jobs/s, $ioctl_per_job ioctls/job; ring: $ring_rate jobs/s, $ring_per_job ioctls/job; ratio ${ratio}x"
    check "bench: ring >= 10x the ioctl path's jobs/s (${ratio}x)" awk -v x="$ratio" 'BEGIN { exit !(x >= 10) }'
    check "bench: ring needs < 0.01 ioctls/job ($ring_per_job)" awk -v x="$ring_per_job" 'BEGIN { exit !(x < 0.01) }'
    check "bench: ioctl path needs >= 1 ioctl/job ($ioctl_per_job)" awk -v x="$ioctl_per_job" 'BEGIN { exit !(x >= 1) }'
else
    not_ok "fakegpu-bench runs" "$(cat "$bench_json")"
fi
# strace counts every syscall of the process, setup included.
syscalls_per_job() { # path jobs
    local log=$out/strace-$1.txt total
    strace -f -c -o "$log" env LD_LIBRARY_PATH="$stage" taskset -c 0 "$B" --path "$1" --jobs "$2" --repeat 1 >/dev/null 2>&1 || return 1
    total=$(awk '$NF == "total" {print $4}' "$log") # %time seconds usecs/call calls [errors] total
    awk -v t="$total" -v j="$2" 'BEGIN { printf "%.5f %d", t / j, t }'
}
if command -v strace >/dev/null; then
    read -r ring_sc ring_total < <(syscalls_per_job ring 100000)
    read -r ioctl_sc ioctl_total < <(syscalls_per_job ioctl 2000)
    diag "strace -c: ring ${ring_sc:-?} syscalls/job (${ring_total:-?} for 100000 jobs), ioctl ${ioctl_sc:-?} syscalls/job (${ioctl_total:-?} for 2000 jobs)"
    check "strace: ring path < 0.01 syscalls/job, setup included (${ring_sc:-none})" \
        awk -v x="${ring_sc:-1}" 'BEGIN { exit !(x < 0.01) }'
    check "strace: ioctl path >= 1 syscall/job (${ioctl_sc:-none})" awk -v x="${ioctl_sc:-0}" 'BEGIN { exit !(x >= 1) }'
    printf 'ring_syscalls_per_job %s\nioctl_syscalls_per_job %s\n' "${ring_sc:-}" "${ioctl_sc:-}" >"$out/fakegpu-strace.txt"
else
    skip "strace: syscalls per job" "strace not installed"
fi
echo "$saved_mask" >"$wq_mask"

# ---------------------------------------------------------------- unload
check "rmmod" rmmod fakegpu
check "module gone" test ! -e /sys/module/fakegpu -a ! -e /dev/fakegpu0
check "reload with defaults" insmod "$ko"
expect_exit "client passes after reload" 0 'ALL CHECKS PASSED' as_root "$C"
check "second rmmod" rmmod fakegpu
log_clean "unload"
diag "$(grep -a fakegpu "$klog" | tail -n 5)"

emit "1..$n"
diag "$failed of $n tests failed"
((failed == 0))
