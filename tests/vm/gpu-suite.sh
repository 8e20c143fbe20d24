#!/bin/bash
# gpu-suite.sh - build fakegpu.ko, boot the VM, run the GPU passthrough suite in it.
#
#   tests/vm/gpu-suite.sh [--timeout SECONDS]
#
# Host side of tests/vm/guest/gpu.sh: builds the module (kmod/build.sh into
# $MRUN_BUILD_DIR/kmod), takes mrun, mrun-gpu-helper and src/gpu/ from the meson
# build dir ($MRUN_BUILD_DIR, default build/; run `meson compile` first), and runs
# the guest script under tests/vm/run-in-vm.sh. The guest's TAP goes to stdout and,
# when MRUN_RESULTS_DIR is set, to $MRUN_RESULTS_DIR/vm-gpu.tap; a VM-level failure
# (kernel oops or warning, hung guest, harness error) is a failed test of its own.
# Exits 0 when every test passed, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/vm/suite-lib.sh
source "$here/suite-lib.sh"
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
SUITE_TIMEOUT=480 suite_init gpu "$@"
((${#SUITE_ARGS[@]} == 0)) || { echo "gpu-suite: unknown option ${SUITE_ARGS[0]}" >&2; exit 2; }

suite_run_gpu_guest "$here/guest/gpu.sh" "$out/vm-gpu.tap"
