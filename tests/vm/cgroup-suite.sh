#!/bin/bash
# cgroup-suite.sh - boot the VM and run the cgroup v2 limits suite in it.
#
#   tests/vm/cgroup-suite.sh [--timeout SECONDS]
#
# Host side of tests/vm/guest/cgroup.sh. This host's cgroup layout is hybrid
# (controllers on v1, an empty cgroup2), so --memory, --pids-limit and --cpus
# are tested in a guest with a pure cgroup v2, as an unprivileged user with a
# delegated subtree, as the same user without one, and as root. Needs mrun and
# hog in the meson build dir ($MRUN_BUILD_DIR, default build/; run `meson
# compile` first). The guest's TAP goes to stdout and, when MRUN_RESULTS_DIR is
# set, to $MRUN_RESULTS_DIR/vm-cgroup.tap; a VM-level failure (kernel oops or
# warning, hung guest, harness error) is added as a failed test of its own.
# Skips (one TAP line saying why) without qemu, busybox-static or a Debian
# kernel. Exits 0 when every test passed or skipped, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${MRUN_BUILD_DIR:-$repo/build}
timeout_s=240
while (($#)); do
    case $1 in
    --timeout) timeout_s=$2; shift 2 ;;
    -h | --help) sed -n '2,16p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "cgroup-suite: unknown option $1" >&2; exit 2 ;;
    esac
done
[[ -d $build ]] || { echo "cgroup-suite: no build dir $build (meson setup build && meson compile -C build)" >&2; exit 2; }
build=$(cd "$build" && pwd)
out=$build/vm-cgroup
rm -rf "$out"
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
            line=$(sed -E "s/^(ok|not ok) [0-9]+/\1 $i/" <<<"$line")
            ;;
        esac
        printf '%s\n' "$line" >>"$tap"
    done
    printf '1..%d\n' "$i" >>"$tap"
    cat "$tap"
    if [[ -n ${MRUN_RESULTS_DIR:-} ]]; then
        mkdir -p "$MRUN_RESULTS_DIR"
        cp "$tap" "$MRUN_RESULTS_DIR/vm-cgroup.tap"
    fi
    if grep -q '^not ok' "$tap"; then
        echo "cgroup-suite: $(grep -c '^not ok' "$tap") of $i tests failed (TAP: $tap)" >&2
        exit 1
    fi
    echo "cgroup-suite: all $i tests passed or skipped (TAP: $tap)" >&2
    exit 0
}

# ---------------------------------------------------------------- prerequisites
command -v qemu-system-x86_64 >/dev/null ||
    finish "ok 1 - cgroup v2 limits in a VM # SKIP qemu-system-x86_64 is not installed (scripts/install-deps.sh)"
[[ -x /bin/busybox || -x /usr/bin/busybox ]] ||
    finish "ok 1 - cgroup v2 limits in a VM # SKIP busybox-static is not installed (scripts/install-deps.sh)"
compgen -G '/boot/vmlinuz-*-amd64' >/dev/null ||
    finish "ok 1 - cgroup v2 limits in a VM # SKIP no Debian kernel in /boot (apt-get install linux-image-amd64)"
mrun=$build/src/mrun hog=$build/tests/probe/hog
for p in "$mrun" "$hog"; do
    [[ -x $p ]] || finish "not ok 1 - test programs built: missing $p (meson compile -C $build)"
done

# ---------------------------------------------------------------- run
start=$SECONDS
"$here/run-in-vm.sh" --timeout "$timeout_s" --mem 1024 --cpus 2 --out "$out" -- \
    "$here/guest/cgroup.sh" --mrun "$mrun" --hog "$hog" >&2
rc=$?
echo "cgroup-suite: guest run took $((SECONDS - start))s" >&2

mapfile -t lines < <(grep -vE '^1\.\.[0-9]+$' "$out/cgroup.tap" 2>/dev/null)
case $rc in
0 | 1) ;; # the guest's own verdict is in its TAP
123) lines+=("not ok 0 - guest kernel log clean (run-in-vm found an oops/BUG/WARNING: $out/dmesg.txt)") ;;
124) lines+=("not ok 0 - guest finished within ${timeout_s}s (hung; console: $out/console.log)") ;;
*) lines+=("not ok 0 - VM run (run-in-vm.sh exit $rc; see $out/guest.log)") ;;
esac
((${#lines[@]})) || lines=("not ok 0 - guest produced TAP (exit $rc)")
finish "${lines[@]}"
