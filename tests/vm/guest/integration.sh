#!/bin/bash
# integration.sh - a chosen part of the integration suite (tests/integration) on
# Debian's kernel. Runs INSIDE the VM guest, as root
# (tests/vm/integration-suite.sh boots it with tests/vm/run-in-vm.sh).
#
#   integration.sh --build DIR --tests "NAME NAME..." [--overlays "native fuse"]
#
# Runs tests/integration/run.sh (the host's runner: it stages the binaries and the
# suite, and runs pytest as the unprivileged mrun-test and as root) once per mode
# and overlay, the tests NAMEd (pytest -k), with MRUN_IT_OVERLAY set to each
# overlay. The rootless user's home is a tmpfs and the
# runs start in a cgroup v2 subtree delegated to it, so test_cgroups.py's limits,
# the OOM kill included, run too. Then, outside pytest, the two faults the issue
# found on this kernel: rootless fuse-overlayfs with a tmpfs home, and the
# fallback to it where native overlayfs is refused (the data dir on an overlayfs),
# also under --memory with an OOM kill.
#
# Prints TAP (docs/DEVELOPING.md): one line per pytest case, named
# "MODE OVERLAY: FILE::TEST[PARAMS]", then the checks; a copy goes to
# $MRUN_VM_OUT/integration.tap and the JUnit XML and logs of each run to
# $MRUN_VM_OUT/it-MODE-OVERLAY*. Exits 1 if any test failed.
set -u

build='' names='' overlays='native fuse'
while (($#)); do
    case $1 in
    --build) build=$2 ;;
    --tests) names=$2 ;;
    --overlays) overlays=$2 ;;
    *) echo "integration.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=${MRUN_VM_OUT:-/tmp}
tap=$out/integration.tap
: >"$tap"
user=mrun-test
cg=/sys/fs/cgroup
deleg=$cg/user-$user
n=0 failed=0

source "$here/tap-lib.sh"
# shellcheck source=tests/vm/guest/pytest-lib.sh
source "$here/pytest-lib.sh"
finish() { tap_finish; }

# ---------------------------------------------------------------- setup
diag "guest kernel $(uname -r), $(nproc) cpus, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB"
for f in "$build/src/mrun" "$build/tests/probe/mrun-probe" "$build/tests/probe/hog" "$repo/tests/integration/run.sh"; do
    [[ -n $build && -r $f ]] || { not_ok "test inputs present" "missing: '$f'"; finish; }
done
[[ -n $names ]] || { not_ok "tests chosen (--tests)"; finish; }
bash "$repo/tests/setup-user.sh" "$user" >/dev/null || { not_ok "tests/setup-user.sh $user"; finish; }
home=$(getent passwd "$user" | cut -d: -f6)

# The machine a user has: the home, /var/lib and /var/tmp on a local disk. The
# guest's root is an overlay over 9p, which native overlayfs refuses as an upper
# dir, so a tmpfs stands in for that disk (run.sh stages under /var/tmp; rootful
# containers keep their upper dirs in /var/lib/mrun). The home as a tmpfs is the
# issue's own report (item 16).
mkdir -p /var/lib/mrun "$home"
if mount -t tmpfs -o mode=1777 tmpfs /var/tmp && mount -t tmpfs -o mode=0700 tmpfs /var/lib/mrun &&
    mount -t tmpfs -o "mode=0755,uid=$(id -u "$user"),gid=$(id -g "$user")" tmpfs "$home"; then
    ok "tmpfs on /var/tmp, /var/lib/mrun and $user's home $home"
else
    not_ok "tmpfs on /var/tmp, /var/lib/mrun and $user's home $home"
    finish
fi

# A cgroup v2 subtree delegated to the user as systemd's Delegate=yes does (see
# cgroup.sh); its processes start in the child "shell".
if mkdir -p "$deleg/shell" &&
    chown "$user" "$deleg" "$deleg/cgroup.procs" "$deleg/cgroup.subtree_control" "$deleg/cgroup.threads" &&
    chown -R "$user" "$deleg/shell" && grep -qw memory "$deleg/cgroup.controllers"; then
    ok "delegated $deleg to $user (controllers: $(cat "$deleg/cgroup.controllers"))"
else
    not_ok "delegated $deleg to $user" "$(ls -l "$deleg" 2>&1)"
    finish
fi

# A network interface with a default route, as a user's machine has: pasta refuses
# to start without one ("No external routable interface for IPv4"), and the guest
# has only lo. A dummy link will do; no test leaves the guest.
if modprobe dummy && ip link add mrun-eth0 type dummy && ip addr add 10.0.3.15/24 dev mrun-eth0 &&
    ip link set mrun-eth0 up && ip route add default via 10.0.3.2 dev mrun-eth0; then
    ok "a dummy interface with a default route (for pasta)"
else
    not_ok "a dummy interface with a default route (for pasta)" "$(ip addr 2>&1)"
fi

# The OOM killer's report carries a stack dump ("Call Trace"), which run-in-vm.sh
# rightly takes for kernel trouble: keep it off the console while the expected
# kills happen, scan the log ourselves at the end, then clear it (as cgroup.sh).
read -r console_level _ </proc/sys/kernel/printk
dmesg -n 1

# ---------------------------------------------------------------- pytest
k_expr=$(sed -E 's/[[:space:]]+/ or /g; s/^ or //; s/ or $//' <<<"$names")

# run_pytest MODE OVERLAY: run.sh for MODE with MRUN_IT_OVERLAY=OVERLAY; rootless
# from the delegated subtree, rootful from the root cgroup.
run_pytest() {
    local mode=$1 overlay=$2
    local results=$out/it-$mode-$overlay rc start=$SECONDS xml
    mkdir -p "$results"
    (
        [[ $mode == rootless ]] && echo "$BASHPID" >"$deleg/shell/cgroup.procs"
        cd "$repo" && exec env MRUN_IT_MODES="$mode" MRUN_IT_OVERLAY="$overlay" MRUN_IT_TEST_TIMEOUT=300 \
            MRUN_BUILD_DIR="$build" MRUN_RESULTS_DIR="$results" \
            bash tests/integration/run.sh -k "$k_expr"
    ) >"$results/run.log" 2>&1
    rc=$?
    xml=$results/integration-$mode.xml
    diag "$mode $overlay: pytest exit $rc after $((SECONDS - start))s ($(tail -n 3 "$results/run.log" | grep -E 'passed|failed|error' | tail -n 1))"
    if [[ -r $xml ]]; then
        tap_import < <(junit_tap "$xml" "$mode $overlay: " "$names")
    fi
    # 0: all passed; 1: failures, each in the XML. Anything else (no XML, nothing
    # collected, an internal error) is a failure of its own.
    if [[ ! -r $xml ]] || ((rc > 1)); then
        not_ok "$mode $overlay: pytest ran the chosen tests (exit $rc)" "$(tail -n 20 "$results/run.log")"
    fi
}

for overlay in $overlays; do
    run_pytest rootless "$overlay"
    run_pytest rootful "$overlay"
done

# ---------------------------------------------------------------- the issue's faults
# As the user a stock Debian 12 has: a tmpfs home, from the delegated subtree.
stage=/var/tmp/it-faults
rm -rf "$stage"
mkdir -m 0755 "$stage"
M=$stage/mrun ROOTFS=$stage/rootfs
cp "$build/src/mrun" "$M"
if out_rootfs=$("$M" rootfs busybox "$ROOTFS" 2>&1) && cp "$build/tests/probe/hog" "$ROOTFS/bin/hog"; then
    chmod -R a+rX "$stage"
else
    not_ok "a busybox rootfs for the fault checks" "$out_rootfs"
    finish
fi
# The data dir on the guest's root, an overlayfs: native overlayfs refuses it as an
# upper dir, so mrun must fall back to fuse-overlayfs (NFS and the like do the same).
ovl_data=/srv/mrun-it-data
install -d -m 0700 -o "$user" "$ovl_data"
as_user() {
    # shellcheck disable=SC2016
    (cd /tmp && sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$deleg/shell" \
        runuser -u "$user" -- env -i PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
        HOME="$home" LANG=C.UTF-8 "$@")
}

output=$(as_user "$M" run --rm --network none --overlay fuse "$ROOTFS" /bin/echo ok 2>&1)
rc=$?
if [[ $rc == 0 && $output == ok ]]; then
    ok "rootless, tmpfs home: --overlay fuse runs /bin/echo ok"
else
    not_ok "rootless, tmpfs home: --overlay fuse runs /bin/echo ok" "exit $rc" "$output"
fi

output=$(as_user env XDG_DATA_HOME="$ovl_data" "$M" --debug run --rm --network none "$ROOTFS" \
    /bin/sh -c 'echo w >/written && cat /written' 2>&1)
rc=$?
if [[ $rc == 0 ]] && grep -qx w <<<"$output" && grep -q 'overlay: fuse' <<<"$output"; then
    ok "rootless, data dir on an overlayfs: auto falls back to fuse-overlayfs and the container writes its rootfs"
else
    not_ok "rootless, data dir on an overlayfs: auto falls back to fuse-overlayfs" "exit $rc" "$output"
fi

output=$(as_user env XDG_DATA_HOME="$ovl_data" "$M" run --rm --network none --memory 100M "$ROOTFS" \
    /bin/hog 300 2>&1)
rc=$?
if [[ $rc == 137 ]] && grep -q "OOM killer" <<<"$output" && ! grep -q '^done' <<<"$output"; then
    ok "rootless, delegated, data dir on an overlayfs (fuse): --memory 100M hog 300 is OOM-killed, exit 137"
else
    not_ok "rootless, delegated, data dir on an overlayfs (fuse): --memory 100M hog 300 exits 137" \
        "exit $rc" "$(tail -n 5 <<<"$output")"
fi
# (containers/.spare: empty storage --rm keeps for the next container, mrun-run(1);
# what is in a kept one's upper layer would be left behind.)
left=$(find "$ovl_data/mrun/containers" "$home/.local/share/mrun/containers" "$deleg" \
    -mindepth 1 -maxdepth 1 \( -path '*/containers/*' -o -name 'mrun-*' \) \
    ! -path '*/containers/.spare' 2>/dev/null
    find "$ovl_data/mrun/containers/.spare" "$home/.local/share/mrun/containers/.spare" \
    -mindepth 3 -path '*/upper/*' 2>/dev/null)
if [[ -z $left ]]; then
    ok "nothing left behind: no container dir, no leaf cgroup"
else
    not_ok "nothing left behind: no container dir, no leaf cgroup" "$left"
fi

# ---------------------------------------------------------------- kernel log
trouble=$(dmesg | grep -aE 'Oops|BUG:|WARNING:|general protection fault|refcount_t|KASAN')
dmesg >"$out/integration-dmesg.txt"
if [[ -z $trouble ]]; then
    ok "kernel log: no trouble beyond the expected OOM kills ($(dmesg | grep -ac 'Memory cgroup out of memory'))"
else
    not_ok "kernel log: no trouble beyond the expected OOM kills" "$trouble"
fi
dmesg -C
dmesg -n "$console_level"
finish
