#!/bin/bash
# containerd-suite.sh - boot the VM and run the containerd-on-cgroup-v2 suite in it.
#
#   tests/vm/containerd-suite.sh [--timeout SECONDS]
#
# Host side of tests/vm/guest/containerd.sh: Debian's containerd 1.6 with ctr's
# default spec and --runc-binary mrun (runc as the control, same expectations) where
# the host cannot: `ctr run --memory-limit` in memory.max, `ctr task metrics`, pause
# and resume, which need cgroup v2 controllers (this host's layout is hybrid). Needs
# mrun in the meson build dir ($MRUN_BUILD_DIR, default build/). The guest's TAP goes
# to stdout and, when MRUN_RESULTS_DIR is set, to $MRUN_RESULTS_DIR/vm-containerd.tap;
# a VM-level failure is added as a failed test of its own. Skips (one TAP line saying
# why) without qemu, busybox-static, a Debian kernel or containerd. Exits 0 when every
# test passed or skipped, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/vm/suite-lib.sh
source "$here/suite-lib.sh"
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
SUITE_TIMEOUT=600 suite_init containerd "$@"
((${#SUITE_ARGS[@]} == 0)) || { echo "containerd-suite: unknown option ${SUITE_ARGS[0]}" >&2; exit 2; }

name="containerd on cgroup v2 in a VM"
suite_require_vm "$name"
suite_require_commands "$name" containerd ctr containerd-shim-runc-v2 runc
[[ -x $build/src/mrun ]] || suite_finish "not ok 1 - mrun built: missing $build/src/mrun (meson compile -C $build)"

start=$SECONDS
"$here/run-in-vm.sh" --timeout "$timeout_s" --mem 1536 --cpus 2 --out "$out" -- \
    "$here/guest/containerd.sh" --mrun "$build/src/mrun" >&2
rc=$?
echo "containerd-suite: guest run took $((SECONDS - start))s" >&2

suite_collect "$rc" "$out/containerd.tap"
