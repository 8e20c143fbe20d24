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
repo=$(cd "$here/../.." && pwd)
build=${MRUN_BUILD_DIR:-$repo/build}
timeout_s=300
while (($#)); do
    case $1 in
    --timeout) timeout_s=$2; shift 2 ;;
    -h | --help) sed -n '2,12p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "gpu-suite: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ -d $build ]] || { echo "gpu-suite: no build dir $build (meson setup build && meson compile -C build)" >&2; exit 2; }
build=$(cd "$build" && pwd)
out=$build/vm-gpu
mkdir -p "$out"
tap=$out/suite.tap

finish() {
    local lines=("$@") i=0 line
    : >"$tap"
    for line in "${lines[@]}"; do
        case $line in
        "ok "* | "not ok "*)
            i=$((i + 1))
            line=$(sed -E "s/^(ok|not ok) [0-9]+/\1 $i/" <<<"$line")
            ;;
        esac
        printf '%s\n' "$line" >>"$tap"
    done
    printf '1..%d\n' "$i" >>"$tap"
    if [[ -n ${MRUN_RESULTS_DIR:-} ]]; then
        mkdir -p "$MRUN_RESULTS_DIR"
        cp "$tap" "$MRUN_RESULTS_DIR/vm-gpu.tap"
    fi
    if grep -q '^not ok' "$tap"; then
        echo "gpu-suite: $(grep -c '^not ok' "$tap") of $i tests failed (TAP: $tap)" >&2
        exit 1
    fi
    echo "gpu-suite: all $i tests passed (TAP: $tap)" >&2
    exit 0
}

if ! ko=$("$repo/kmod/build.sh" "$build/kmod" 2>"$out/kmod-build.log" | tail -n 1) || [[ ! -r $ko ]]; then
    finish "not ok 1 - build fakegpu.ko" "$(sed 's/^/# /' "$out/kmod-build.log" | tail -n 20)"
fi
for f in "$build/src/mrun" "$build/helpers/mrun-gpu-helper" "$build/src/gpu/libfakegpu.so.1" \
    "$build/src/gpu/fakegpu-client" "$build/src/gpu/fakegpu-client-static"; do
    [[ -r $f ]] || finish "not ok 1 - built: $f (meson compile -C $build)"
done

"$here/run-in-vm.sh" --timeout "$timeout_s" --mem 2048 --cpus 2 --out "$out" -- \
    "$here/guest/gpu.sh" --ko "$ko" --mrun "$build/src/mrun" \
    --helper "$build/helpers/mrun-gpu-helper" --gpu-dir "$build/src/gpu"
rc=$?

mapfile -t lines < <(grep -vE '^1\.\.[0-9]+$' "$out/vm-gpu.tap" 2>/dev/null)
case $rc in
0 | 1) ;;
123) lines+=("not ok 0 - guest kernel log clean (run-in-vm found an oops/BUG/WARNING: $out/dmesg.txt)") ;;
124) lines+=("not ok 0 - guest finished within ${timeout_s}s (hung; console: $out/console.log)") ;;
*) lines+=("not ok 0 - VM run (run-in-vm.sh exit $rc; see $out/guest.log)") ;;
esac
((${#lines[@]})) || lines=("not ok 0 - guest produced TAP (exit $rc)")
finish "${lines[@]}"
