#!/bin/bash
# containerd.sh - containerd 1.6 driving mrun on a pure cgroup v2. Runs INSIDE the VM
# guest, as root (tests/vm/containerd-suite.sh boots it with tests/vm/run-in-vm.sh).
#
#   containerd.sh --mrun PATH
#
# The test's own containerd (bench/containerd-lib.sh: the config.toml of
# tests/integration/test_containerd.py, root, state and socket under one directory,
# never the system service) and the busybox OCI image it makes and imports. With
# ctr's unmodified default spec and --runc-binary, first runc (the control) and then
# mrun, the same expectations: `ctr run --memory-limit` lands in the container's own
# cgroup (/NAMESPACE/ID, the cgroupsPath ctr writes) as memory.max (read on the host:
# inside, ctr's spec gives the container an empty /sys/fs/cgroup with runc as with
# mrun, as it has no cgroup namespace); `ctr task metrics` reports that cgroup's figures (pids.current of
# the three processes the container runs, non-zero memory); pause freezes the cgroup
# and resume thaws it; kill and delete leave no cgroup, task or runtime state. These
# are the parts of the containerd tests that need cgroup v2 controllers, which
# the host (hybrid) lacks. Prints TAP and copies it to $MRUN_VM_OUT/containerd.tap;
# exits 1 if any test failed.
set -u

mrun_src=''
while (($#)); do
    case $1 in
    --mrun) mrun_src=$2 ;;
    *) echo "containerd.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done

out=${MRUN_VM_OUT:-/tmp}
tap=$out/containerd.tap
: >"$tap"
n=0 failed=0
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
# shellcheck source=tests/vm/guest/tap-lib.sh
source "$here/tap-lib.sh"
# shellcheck source=bench/containerd-lib.sh
source "$repo/bench/containerd-lib.sh"

cg=/sys/fs/cgroup
stage=/tmp/containerd-test
limit=67108864 # 64 MiB: ctr run --memory-limit

diag "guest kernel $(uname -r), $(containerd --version 2>&1)"
[[ -n $mrun_src && -x $mrun_src ]] || { not_ok "mrun built" "missing: '$mrun_src'"; tap_finish; }
rm -rf "$stage"
mkdir -p "$stage"
if ! msg=$("$mrun_src" rootfs busybox "$stage/rootfs" 2>&1); then
    not_ok "a busybox rootfs for the image" "$msg"
    tap_finish
fi
if ctrd_start "$stage" 2>"$stage/start.err"; then
    ok "the test's own containerd is up (socket $ctrd_sock)"
else
    not_ok "the test's own containerd is up" "$(cat "$stage/start.err")"
    tap_finish
fi
C() { ctr -a "$ctrd_sock" -n "$ns" "$@"; }
# task_status ID: the STATUS column of `ctr task ls`.
task_status() { C task ls 2>/dev/null | awk -v id="$1" '$1 == id {print $3}'; }
# wait_status ID STATUS: up to 10 s.
wait_status() {
    local i
    for ((i = 0; i < 100; i++)); do
        [[ $(task_status "$1") == "$2" ]] && return 0
        sleep 0.1
    done
    return 1
}
# metric NAME: a value of `ctr task metrics --format json` (cgroup v2's Metrics, e.g.
# pids.current, memory.usage), by its dotted path.
metric() { python3 -c 'import json, sys
d = json.load(sys.stdin)
for k in sys.argv[1].split("."):
    d = d.get(k, {}) if isinstance(d, dict) else {}
print(d if d != {} else "")' "$1"; }

declare -A binary=([runc]=/usr/sbin/runc [mrun]=$mrun_src)
for rt in runc mrun; do
    ns=vm-$rt id=c-$rt
    leaf=$cg/$ns/$id
    # Not in a $(...): ctrd_import sets ctrd_image.
    if ! ctrd_import "$stage/rootfs" "$ns" >"$stage/import.log" 2>&1; then
        not_ok "[$rt] image imported into namespace $ns" "$(cat "$stage/import.log")"
        continue
    fi
    # Three processes (sh and two sleeps), so pids.current is the container's own
    # figure and not a parent's.
    if ! msg=$(C run -d --runtime io.containerd.runc.v2 --runc-binary "${binary[$rt]}" \
        --memory-limit "$limit" "$ctrd_image" "$id" \
        sh -c 'sleep 300 & sleep 301 & wait' 2>&1) || ! wait_status "$id" RUNNING; then
        not_ok "[$rt] ctr run -d --memory-limit $limit starts the task" "$msg" \
            "$(C task ls 2>&1)" "$(tail -n 20 "$stage/containerd.log")"
        continue
    fi
    ok "[$rt] ctr run -d --memory-limit $limit starts the task"
    pid=$(C task ls | awk -v id="$id" '$1 == id {print $2}')

    # --memory-limit: in the container's own cgroup, read on the host.
    own=$(sed -n 's/^0:://p' "/proc/$pid/cgroup")
    check "[$rt] the task's cgroup is /$ns/$id (ctr's cgroupsPath)" test "$own" = "/$ns/$id"
    check "[$rt] memory.max of $leaf is $limit" grep -qx "$limit" "$leaf/memory.max"
    # ctr task metrics: the shim's figures of that cgroup.
    for ((i = 0; i < 50; i++)); do
        [[ $(cat "$leaf/pids.current" 2>/dev/null) == 3 ]] && break
        sleep 0.1
    done
    json=$(C task metrics --format json "$id" 2>&1)
    pids=$(metric pids.current <<<"$json" 2>/dev/null)
    mem=$(metric memory.usage <<<"$json" 2>/dev/null)
    if [[ $pids == 3 && $pids == $(cat "$leaf/pids.current") && $mem =~ ^[0-9]+$ ]] && ((mem > 0)); then
        ok "[$rt] ctr task metrics: pids.current 3 as in $leaf, memory usage $mem"
    else
        not_ok "[$rt] ctr task metrics: the container's own cgroup figures" \
            "pids '$pids' (leaf: $(cat "$leaf/pids.current" 2>&1)), memory '$mem'" "$json"
    fi

    # pause/resume: the cgroup freezer, and the processes stopped in the kernel.
    if msg=$(C task pause "$id" 2>&1) && wait_status "$id" PAUSED &&
        grep -qx 'frozen 1' "$leaf/cgroup.events"; then
        ok "[$rt] ctr task pause: PAUSED, $leaf frozen"
    else
        not_ok "[$rt] ctr task pause: PAUSED, $leaf frozen" "$msg" "$(C task ls 2>&1)" \
            "$(cat "$leaf/cgroup.events" 2>&1)"
    fi
    if msg=$(C task resume "$id" 2>&1) && wait_status "$id" RUNNING &&
        grep -qx 'frozen 0' "$leaf/cgroup.events" &&
        r=$(C task exec --exec-id after "$id" echo alive 2>&1) && [[ $r == alive ]]; then
        ok "[$rt] ctr task resume: RUNNING, thawed, exec works"
    else
        not_ok "[$rt] ctr task resume: RUNNING, thawed, exec works" "$msg" "${r:-}" \
            "$(C task ls 2>&1)" "$(cat "$leaf/cgroup.events" 2>&1)"
    fi

    # kill, delete: no task, no cgroup, no runtime state.
    C task kill -s SIGKILL "$id" >/dev/null 2>&1
    wait_status "$id" STOPPED
    msg=$(C task delete "$id" 2>&1)
    C container delete "$id" >/dev/null 2>&1
    left=$(find /run/containerd/runc/"$ns" -name "*$id*" 2>/dev/null)
    if [[ ! -d $leaf && -z $(task_status "$id") && -z $left ]] && ! kill -0 "$pid" 2>/dev/null; then
        ok "[$rt] kill and delete leave no process, cgroup or runtime state"
    else
        not_ok "[$rt] kill and delete leave no process, cgroup or runtime state" "$msg" \
            "leaf exists: $([[ -d $leaf ]] && echo yes || echo no); state: $left" "$(C task ls 2>&1)"
    fi
done

ctrd_stop vm-runc vm-mrun
tap_finish
