# suite-lib.sh - the host side every VM suite shares; sourced by tests/vm/*-suite.sh.
#
#   suite_init NAME "$@"     options --timeout S (default $SUITE_TIMEOUT) plus the
#                            suite's own (left in SUITE_ARGS); sets build, out, tap
#   suite_finish LINE...     write the final TAP (renumbered), publish, exit 0/1
#   suite_collect RC FILE    the guest's TAP plus a failed test for a VM-level failure
#                            (kernel oops or warning: 123, hung: 124, harness: other)
#   suite_build_module       build fakegpu.ko into $build/kmod; sets ko
#   suite_require_gpu_build  that, and mrun, the helper and src/gpu/ built
#   suite_run_gpu_guest GUEST TAP
#                            boot GUEST with the fakegpu build, collect TAP
#   suite_require_vm NAME    skip (one TAP line for test NAME, saying why) without
#                            qemu, busybox-static or a Debian kernel
#   suite_require_commands NAME CMD...
#                            skip likewise when a CMD is not installed
#
# The final TAP goes to stdout and $out/suite.tap, and, when MRUN_RESULTS_DIR is
# set, to $MRUN_RESULTS_DIR/vm-NAME.tap (scripts/test.sh adds those up).
# shellcheck shell=bash

suite_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$suite_here/../.." && pwd)

suite_init() {
    suite_name=$1; shift
    timeout_s=${SUITE_TIMEOUT:-300}
    SUITE_ARGS=()
    while (($#)); do
        case $1 in
        --timeout) timeout_s=$2; shift 2 ;;
        *) SUITE_ARGS+=("$1"); shift ;;
        esac
    done
    build=${MRUN_BUILD_DIR:-$repo/build}
    [[ -d $build ]] || {
        echo "$suite_name-suite: no build dir $build (meson setup build && meson compile -C build)" >&2
        exit 2
    }
    build=$(cd "$build" && pwd)
    out=$build/vm-$suite_name
    rm -rf "$out"
    mkdir -p "$out"
    tap=$out/suite.tap
}

suite_require_vm() {
    local name=$1
    command -v qemu-system-x86_64 >/dev/null ||
        suite_finish "ok 1 - $name # SKIP qemu-system-x86_64 is not installed (scripts/install-deps.sh)"
    [[ -x /bin/busybox || -x /usr/bin/busybox ]] ||
        suite_finish "ok 1 - $name # SKIP busybox-static is not installed (scripts/install-deps.sh)"
    compgen -G '/boot/vmlinuz-*-amd64' >/dev/null ||
        suite_finish "ok 1 - $name # SKIP no Debian kernel in /boot (apt-get install linux-image-amd64)"
}

suite_require_commands() {
    local name=$1 p
    shift
    for p in "$@"; do
        command -v "$p" >/dev/null ||
            suite_finish "ok 1 - $name # SKIP $p is not installed (scripts/install-deps.sh)"
    done
}

suite_finish() {
    local i=0 line
    : >"$tap"
    for line in "$@"; do
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
    cat "$tap"
    if [[ -n ${MRUN_RESULTS_DIR:-} ]]; then
        mkdir -p "$MRUN_RESULTS_DIR"
        cp "$tap" "$MRUN_RESULTS_DIR/vm-$suite_name.tap"
    fi
    if grep -q '^not ok' "$tap"; then
        echo "$suite_name-suite: $(grep -c '^not ok' "$tap") of $i tests failed (TAP: $tap)" >&2
        exit 1
    fi
    echo "$suite_name-suite: all $i tests passed or skipped (TAP: $tap)" >&2
    exit 0
}

suite_collect() {
    local rc=$1 guest_tap=$2 lines=()
    mapfile -t lines < <(grep -vE '^1\.\.[0-9]+$' "$guest_tap" 2>/dev/null)
    case $rc in
    0 | 1) ;; # the guest's own verdict is in its TAP
    123) lines+=("not ok 0 - guest kernel log clean (run-in-vm found an oops/BUG/WARNING: $out/dmesg.txt)") ;;
    124) lines+=("not ok 0 - guest finished within ${timeout_s}s (hung; console: $out/console.log)") ;;
    *) lines+=("not ok 0 - VM run (run-in-vm.sh exit $rc; see $out/guest.log)") ;;
    esac
    ((${#lines[@]})) || lines=("not ok 0 - guest produced TAP (exit $rc)")
    suite_finish "${lines[@]}"
}

suite_build_module() {
    if ! ko=$("$repo/kmod/build.sh" "$build/kmod" 2>"$out/kmod-build.log" | tail -n 1) || [[ ! -r $ko ]]; then
        suite_finish "not ok 1 - build fakegpu.ko" "$(sed 's/^/# /' "$out/kmod-build.log" | tail -n 20)"
    fi
}

# suite_require_gpu_build: what a guest needs to load and use the fakegpu driver.
# Builds fakegpu.ko (sets ko) and checks mrun, the helper and src/gpu/ are built; a
# failed test naming what is missing otherwise (never returns then).
suite_require_gpu_build() {
    local f
    suite_build_module
    for f in "$build/src/mrun" "$build/helpers/mrun-gpu-helper" "$build/src/gpu/libfakegpu.so.1" \
        "$build/src/gpu/fakegpu-client" "$build/src/gpu/fakegpu-client-static"; do
        [[ -r $f ]] || suite_finish "not ok 1 - built: $f (meson compile -C $build)"
    done
}

# suite_run_gpu_guest GUEST_SCRIPT GUEST_TAP: the GPU suites' common run. Builds
# fakegpu.ko and checks the build (suite_require_gpu_build), boots the VM with
# GUEST_SCRIPT --ko --mrun --helper --gpu-dir, and collects GUEST_TAP (never returns).
suite_run_gpu_guest() {
    local guest=$1 guest_tap=$2 rc
    suite_require_gpu_build
    "$suite_here/run-in-vm.sh" --timeout "$timeout_s" --mem 2048 --cpus 2 --out "$out" -- \
        "$guest" --ko "$ko" --mrun "$build/src/mrun" \
        --helper "$build/helpers/mrun-gpu-helper" --gpu-dir "$build/src/gpu" >&2
    rc=$?
    suite_collect "$rc" "$guest_tap"
}
