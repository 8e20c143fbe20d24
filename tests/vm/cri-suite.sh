#!/bin/bash
# cri-suite.sh - boot the VM and run the CRI pod suite in it.
#
#   tests/vm/cri-suite.sh [--timeout SECONDS]
#
# Host side of tests/vm/guest/cri.sh: a Kubernetes pod through containerd 1.6's CRI
# plugin with the runtime handler mrun (io.containerd.runc.v2, BinaryName the built
# mrun) and runc as the control, on a pure cgroup v2 (tests/cri/pod_test.py says
# what is checked), a GPU pod: fakegpu.ko built here (kmod/build.sh) and loaded in
# the guest, its node and libfakegpu handed to a container as a device plugin does,
# a hostNetwork/hostPID/hostIPC pod, and streaming Exec and Attach. Needs mrun,
# tests/probe/pause and src/gpu/ in the meson build dir ($MRUN_BUILD_DIR, default
# build/), linux-headers-amd64, and Debian's containerd, containernetworking-plugins,
# python3-grpcio, python3-grpc-tools and python3-websocket. The guest's TAP goes to
# stdout and, when MRUN_RESULTS_DIR is set, to $MRUN_RESULTS_DIR/vm-cri.tap; the
# config.json files containerd wrote are kept in $build/vm-cri/configs. Skips (one
# TAP line saying why) when a package is missing; a module or build that fails is a
# failed test. Exits 0 when every test passed or skipped, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/vm/suite-lib.sh
source "$here/suite-lib.sh"
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,18p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
SUITE_TIMEOUT=900 suite_init cri "$@"
((${#SUITE_ARGS[@]} == 0)) || { echo "cri-suite: unknown option ${SUITE_ARGS[0]}" >&2; exit 2; }

name="a CRI pod in a VM"
suite_require_vm "$name"
suite_require_commands "$name" containerd ctr containerd-shim-runc-v2 runc
[[ -x /usr/lib/cni/bridge && -x /usr/lib/cni/host-local && -x /usr/lib/cni/loopback ]] ||
    suite_finish "ok 1 - $name # SKIP containernetworking-plugins is not installed (scripts/install-deps.sh)"
/usr/bin/python3 -c 'import grpc, grpc_tools, websocket' 2>/dev/null ||
    suite_finish "ok 1 - $name # SKIP python3-grpcio, python3-grpc-tools or python3-websocket is not installed (scripts/install-deps.sh)"
for f in "$build/src/mrun" "$build/tests/probe/pause"; do
    [[ -x $f ]] || suite_finish "not ok 1 - built: $f (meson compile -C $build)"
done
suite_require_gpu_build

start=$SECONDS
"$here/run-in-vm.sh" --timeout "$timeout_s" --mem 2048 --cpus 2 --out "$out" -- \
    "$here/guest/cri.sh" --mrun "$build/src/mrun" --pause "$build/tests/probe/pause" \
    --ko "$ko" --gpu-dir "$build/src/gpu" >&2
rc=$?
echo "cri-suite: guest run took $((SECONDS - start))s" >&2

suite_collect "$rc" "$out/cri.tap"
