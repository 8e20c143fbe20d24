#!/bin/bash
# gpu-matrix-suite.sh - build fakegpu.ko, boot the VM, run `mrun gpu matrix` and
# `mrun gpu doctor` in it (tests/vm/guest/gpu-matrix.sh).
#
#   tests/vm/gpu-matrix-suite.sh [--timeout SECONDS]
#
# Takes mrun, mrun-gpu-helper and src/gpu/ from the meson build dir ($MRUN_BUILD_DIR,
# default build/; run `meson compile` first). The guest's TAP goes to stdout and, when
# MRUN_RESULTS_DIR is set, to $MRUN_RESULTS_DIR/vm-gpu-matrix.tap; a VM-level failure
# is a failed test of its own. Exits 0 when every test passed, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/vm/suite-lib.sh
source "$here/suite-lib.sh"
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
SUITE_TIMEOUT=420 suite_init gpu-matrix "$@"
((${#SUITE_ARGS[@]} == 0)) || { echo "gpu-matrix-suite: unknown option ${SUITE_ARGS[0]}" >&2; exit 2; }

suite_run_gpu_guest "$here/guest/gpu-matrix.sh" "$out/vm-gpu-matrix.tap"
