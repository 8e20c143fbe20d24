#!/bin/bash
# cgroup-suite.sh - boot the VM and run the cgroup v2 limits suite in it.
#
#   tests/vm/cgroup-suite.sh [--timeout SECONDS]
#
# Host side of tests/vm/guest/cgroup.sh. This host's cgroup layout is hybrid
# (controllers on v1, an empty cgroup2), so --memory, --pids-limit and --cpus,
# an OCI bundle's linux.resources and `mrun update` are tested in a guest with a
# pure cgroup v2, as an unprivileged user with a delegated subtree, as the same
# user without one, and as root. Needs mrun and hog in the meson build dir
# ($MRUN_BUILD_DIR, default build/; run `meson compile` first). The guest's
# TAP goes to stdout and, when MRUN_RESULTS_DIR is
# set, to $MRUN_RESULTS_DIR/vm-cgroup.tap; a VM-level failure (kernel oops or
# warning, hung guest, harness error) is added as a failed test of its own.
# Skips (one TAP line saying why) without qemu, busybox-static or a Debian
# kernel. Exits 0 when every test passed or skipped, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/vm/suite-lib.sh
source "$here/suite-lib.sh"
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
SUITE_TIMEOUT=360 suite_init cgroup "$@"
((${#SUITE_ARGS[@]} == 0)) || { echo "cgroup-suite: unknown option ${SUITE_ARGS[0]}" >&2; exit 2; }

# ---------------------------------------------------------------- prerequisites
suite_require_vm "cgroup v2 limits in a VM"
mrun=$build/src/mrun hog=$build/tests/probe/hog
for p in "$mrun" "$hog"; do
    [[ -x $p ]] || suite_finish "not ok 1 - test programs built: missing $p (meson compile -C $build)"
done

# ---------------------------------------------------------------- run
start=$SECONDS
"$here/run-in-vm.sh" --timeout "$timeout_s" --mem 1024 --cpus 2 --out "$out" -- \
    "$here/guest/cgroup.sh" --mrun "$mrun" --hog "$hog" >&2
rc=$?
echo "cgroup-suite: guest run took $((SECONDS - start))s" >&2

suite_collect "$rc" "$out/cgroup.tap"
