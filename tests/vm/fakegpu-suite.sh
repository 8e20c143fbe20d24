#!/bin/bash
# fakegpu-suite.sh - build fakegpu.ko, boot the VM, run the fakegpu suite in it.
#
#   tests/vm/fakegpu-suite.sh [--fuzz-seconds N] [--timeout SECONDS]
#
# Host side of tests/vm/guest/fakegpu.sh: builds the module out of tree
# (kmod/build.sh into $MRUN_BUILD_DIR/kmod), finds the user-space programs in
# the meson build dir ($MRUN_BUILD_DIR, default build/; run `meson compile`
# first), and runs the guest script under tests/vm/run-in-vm.sh. The guest's
# TAP goes to stdout and, when MRUN_RESULTS_DIR is set, to
# $MRUN_RESULTS_DIR/vm-fakegpu.tap; a VM-level failure (kernel oops or
# warning, hung guest, harness error) is added as a failed test of its own.
# Exits 0 when every test passed, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/vm/suite-lib.sh
source "$here/suite-lib.sh"
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
SUITE_TIMEOUT=900 suite_init fakegpu "$@"
fuzz_seconds=20
set -- "${SUITE_ARGS[@]+"${SUITE_ARGS[@]}"}"
while (($#)); do
    case $1 in
    --fuzz-seconds) fuzz_seconds=$2; shift 2 ;;
    *) echo "fakegpu-suite: unknown option $1" >&2; exit 2 ;;
    esac
done

# ---------------------------------------------------------------- inputs
suite_build_module

# find NAME: the program in the standard meson layout, or anywhere in the build dir.
find_prog() {
    local p
    for p in "$build/src/gpu/$1" "$build/tests/kmod/$1"; do
        [[ -x $p ]] && { echo "$p"; return 0; }
    done
    p=$(find "$build" -maxdepth 4 -name "$1" -type f -perm -u+x 2>/dev/null | head -n 1)
    [[ -n $p ]] && echo "$p"
}
declare -A prog
missing=()
for name in fakegpu-client fakegpu-client-static fakegpu-bench fakegpu-abi-test fakegpu-fuzz fakegpu-xid-test; do
    prog[$name]=$(find_prog "$name")
    [[ -n ${prog[$name]} ]] || missing+=("$name")
done
if ((${#missing[@]})); then
    suite_finish "not ok 1 - test programs built: missing ${missing[*]} in $build (meson compile -C $build; tests/kmod needs subdir('kmod') in tests/meson.build)"
fi

# ---------------------------------------------------------------- run
"$here/run-in-vm.sh" --timeout "$timeout_s" --mem 2048 --cpus 2 --out "$out" -- \
    "$here/guest/fakegpu.sh" --ko "$ko" \
    --client "${prog[fakegpu-client]}" --client-static "${prog[fakegpu-client-static]}" \
    --bench "${prog[fakegpu-bench]}" --abi-test "${prog[fakegpu-abi-test]}" --fuzz "${prog[fakegpu-fuzz]}" \
    --xid-test "${prog[fakegpu-xid-test]}" \
    --fuzz-seconds "$fuzz_seconds" >&2
rc=$?

suite_collect "$rc" "$out/fakegpu.tap"
