#!/bin/bash
# docker.sh - tests/integration/test_docker.py on a pure cgroup v2 with fakegpu.ko
# loaded. Runs INSIDE the VM guest, as root (tests/vm/docker-suite.sh boots it with
# tests/vm/run-in-vm.sh).
#
#   docker.sh --build DIR --ko PATH --rootful-tests "NAME..." --rootless-tests "NAME..."
#
# Debian's docker.io 20.10 with runc and with mrun in the same test, as on the host,
# through tests/integration/run.sh, once per mode, the tests NAMEd for it (pytest -k;
# none: the mode is left out). The host's layout is hybrid; here Docker's cgroup cases
# (-m with an OOM kill, pause and unpause, update -m, stats) meet cgroup v2 and the
# device filter is BPF, and /dev/fakegpu0 exists for `docker run --device
# /dev/fakegpu0`. The guest boots with apparmor=0 (docker-suite.sh). Rootless starts in a
# cgroup v2 subtree delegated to mrun-test, as a systemd login would; rootless
# Docker 20.10 still has no cgroups without systemd (its "none" driver), so the
# needs_cgroups cases skip there, saying so.
#
# Prints TAP (docs/DEVELOPING.md): one line per pytest case, named
# "MODE: FILE::TEST[PARAMS]"; a copy goes to $MRUN_VM_OUT/docker.tap, the JUnit XML
# and the run's log to $MRUN_VM_OUT/it-MODE/. Exits 1 if any test failed.
set -u

build='' ko=''
declare -A names=([rootful]='' [rootless]='')
while (($#)); do
    case $1 in
    --build) build=$2 ;;
    --ko) ko=$2 ;;
    --rootful-tests) names[rootful]=$2 ;;
    --rootless-tests) names[rootless]=$2 ;;
    *) echo "docker.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
out=${MRUN_VM_OUT:-/tmp}
tap=$out/docker.tap
: >"$tap"
user=mrun-test
cg=/sys/fs/cgroup
deleg=$cg/user-$user
n=0 failed=0

# shellcheck source=tests/vm/guest/tap-lib.sh
source "$here/tap-lib.sh"
# shellcheck source=tests/vm/guest/pytest-lib.sh
source "$here/pytest-lib.sh"
finish() { tap_finish; }

# ---------------------------------------------------------------- setup
diag "guest kernel $(uname -r), $(nproc) cpus, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB" \
    "$(/usr/sbin/dockerd --version 2>&1), $(/usr/sbin/runc --version 2>&1 | head -n 1)"
for f in "$build/src/mrun" "$build/tests/probe/mrun-probe" "$ko" "$repo/tests/integration/run.sh"; do
    [[ -n $build && -n $f && -r $f ]] || { not_ok "test inputs present" "missing: '$f'"; finish; }
done
[[ -n ${names[rootful]}${names[rootless]} ]] || { not_ok "tests chosen (--rootful-tests, --rootless-tests)"; finish; }
bash "$repo/tests/setup-user.sh" "$user" >/dev/null || { not_ok "tests/setup-user.sh $user"; finish; }
home=$(getent passwd "$user" | cut -d: -f6)

# A local disk for /var/tmp (where run.sh stages and pytest keeps Docker's data-root)
# and the user's home: the guest's root is an overlay over 9p, which overlayfs refuses
# as an upper dir, and tmpfs has no user xattrs on 6.1 (rootless overlay2 needs them):
# an ext4 image on a loop device, as a user's disk is.
img=/run/docker-disk.img
mkdir -p "$home"
if truncate -s 1G "$img" && mkfs.ext4 -q -F -E lazy_itable_init=1,lazy_journal_init=1 "$img" &&
    mount -o loop,noinit_itable "$img" /var/tmp && chmod 1777 /var/tmp &&
    install -d -m 0755 -o "$user" -g "$(id -g "$user")" /var/tmp/home &&
    mount --bind /var/tmp/home "$home"; then
    ok "ext4 on a loop device for /var/tmp and $user's home $home"
else
    not_ok "ext4 on a loop device for /var/tmp and $user's home $home" "$(dmesg | tail -n 5)"
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

# fakegpu.ko for test_docker_device_fakegpu. The driver makes its nodes root:root 0600;
# rootless Docker's root is the user's own uid, which may open a node only through
# its other bits (Docker has no --group-add keep-groups), so the guest makes them 0666,
# as a site does for a render node everyone may use.
lsmod | grep -qw fakegpu && rmmod fakegpu
if msg=$(insmod "$ko" 2>&1) && [[ -c /dev/fakegpu0 ]] && chmod 0666 /dev/fakegpu0 /dev/fakegpuctl; then
    ok "insmod fakegpu.ko: $(stat -c '%n %t:%T %U:%G %a' /dev/fakegpu0)"
else
    not_ok "insmod fakegpu.ko" "$msg"
fi

# The OOM killer's report carries a stack dump ("Call Trace"), which run-in-vm.sh
# rightly takes for kernel trouble: keep it off the console while the expected
# kills happen, scan the log ourselves at the end, then clear it (as cgroup.sh).
read -r console_level _ </proc/sys/kernel/printk
dmesg -n 1

# ---------------------------------------------------------------- pytest
# run_pytest MODE: run.sh for MODE and its chosen tests; rootless from the delegated
# subtree, rootful from the root cgroup.
run_pytest() {
    local mode=$1
    local results=$out/it-$mode rc start=$SECONDS xml k_expr
    k_expr=$(sed -E 's/[[:space:]]+/ or /g; s/^ or //; s/ or $//' <<<"${names[$mode]}")
    mkdir -p "$results"
    (
        [[ $mode == rootless ]] && echo "$BASHPID" >"$deleg/shell/cgroup.procs"
        cd "$repo" && exec env MRUN_IT_MODES="$mode" MRUN_IT_TEST_TIMEOUT=300 \
            MRUN_BUILD_DIR="$build" MRUN_RESULTS_DIR="$results" \
            bash tests/integration/run.sh -k "$k_expr"
    ) >"$results/run.log" 2>&1
    rc=$?
    xml=$results/integration-$mode.xml
    diag "$mode: pytest exit $rc after $((SECONDS - start))s ($(tail -n 3 "$results/run.log" | grep -E 'passed|failed|error' | tail -n 1))"
    if [[ -r $xml ]]; then
        tap_import < <(junit_tap "$xml" "$mode: " "${names[$mode]}")
    fi
    # 0: all passed; 1: failures, each in the XML. Anything else (no XML, nothing
    # collected, an internal error) is a failure of its own.
    if [[ ! -r $xml ]] || ((rc > 1)); then
        not_ok "$mode: pytest ran the chosen tests (exit $rc)" "$(tail -n 20 "$results/run.log")"
    fi
}

for mode in rootful rootless; do
    [[ -n ${names[$mode]} ]] && run_pytest "$mode"
done

# ---------------------------------------------------------------- kernel log
trouble=$(dmesg | grep -aE 'Oops|BUG:|WARNING:|general protection fault|refcount_t|KASAN')
dmesg >"$out/docker-dmesg.txt"
if [[ -z $trouble ]]; then
    ok "kernel log: no trouble beyond the expected OOM kills ($(dmesg | grep -ac 'Memory cgroup out of memory'))"
else
    not_ok "kernel log: no trouble beyond the expected OOM kills" "$trouble"
fi
dmesg -C
dmesg -n "$console_level"
finish
