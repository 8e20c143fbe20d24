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
repo=$(cd "$here/../.." && pwd)
build=${MRUN_BUILD_DIR:-$repo/build}
fuzz_seconds=20 timeout_s=900
while (($#)); do
    case $1 in
    --fuzz-seconds) fuzz_seconds=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    -h | --help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "fakegpu-suite: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ -d $build ]] || { echo "fakegpu-suite: no build dir $build (meson setup build && meson compile -C build)" >&2; exit 2; }
build=$(cd "$build" && pwd)
out=$build/vm-fakegpu
mkdir -p "$out"
tap=$out/suite.tap

# finish TAP_LINES...: write the final TAP (guest lines + our own), publish it, exit.
finish() {
    local lines=("$@") i=0 line
    : >"$tap"
    for line in "${lines[@]}"; do
        case $line in
        "ok "* | "not ok "*)
            i=$((i + 1))
            # Renumber: our own lines come after the guest's.
            line=$(sed -E "s/^(ok|not ok) [0-9]+/\1 $i/" <<<"$line")
            ;;
        esac
        printf '%s\n' "$line" >>"$tap"
    done
    printf '1..%d\n' "$i" >>"$tap"
    if [[ -n ${MRUN_RESULTS_DIR:-} ]]; then
        mkdir -p "$MRUN_RESULTS_DIR"
        cp "$tap" "$MRUN_RESULTS_DIR/vm-fakegpu.tap"
    fi
    if grep -q '^not ok' "$tap"; then
        echo "fakegpu-suite: $(grep -c '^not ok' "$tap") of $i tests failed (TAP: $tap)" >&2
        exit 1
    fi
    echo "fakegpu-suite: all $i tests passed (TAP: $tap)" >&2
    exit 0
}

# ---------------------------------------------------------------- inputs
if ! ko=$("$repo/kmod/build.sh" "$build/kmod" 2>"$out/kmod-build.log" | tail -n 1) || [[ ! -r $ko ]]; then
    finish "not ok 1 - build fakegpu.ko" "$(sed 's/^/# /' "$out/kmod-build.log" | tail -n 20)"
fi

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
for name in fakegpu-client fakegpu-client-static fakegpu-bench fakegpu-abi-test fakegpu-fuzz; do
    prog[$name]=$(find_prog "$name")
    [[ -n ${prog[$name]} ]] || missing+=("$name")
done
if ((${#missing[@]})); then
    finish "not ok 1 - test programs built: missing ${missing[*]} in $build (meson compile -C $build; tests/kmod needs subdir('kmod') in tests/meson.build)"
fi

# ---------------------------------------------------------------- run
"$here/run-in-vm.sh" --timeout "$timeout_s" --mem 2048 --cpus 2 --out "$out" -- \
    "$here/guest/fakegpu.sh" --ko "$ko" \
    --client "${prog[fakegpu-client]}" --client-static "${prog[fakegpu-client-static]}" \
    --bench "${prog[fakegpu-bench]}" --abi-test "${prog[fakegpu-abi-test]}" --fuzz "${prog[fakegpu-fuzz]}" \
    --fuzz-seconds "$fuzz_seconds"
rc=$?

mapfile -t lines < <(grep -vE '^1\.\.[0-9]+$' "$out/fakegpu.tap" 2>/dev/null)
case $rc in
0 | 1) ;; # the guest's own verdict is in its TAP
123) lines+=("not ok 0 - guest kernel log clean (run-in-vm found an oops/BUG/WARNING: $out/dmesg.txt)") ;;
124) lines+=("not ok 0 - guest finished within ${timeout_s}s (hung; console: $out/console.log)") ;;
*) lines+=("not ok 0 - VM run (run-in-vm.sh exit $rc; see $out/guest.log)") ;;
esac
((${#lines[@]})) || lines=("not ok 0 - guest produced TAP (exit $rc)")
finish "${lines[@]}"
