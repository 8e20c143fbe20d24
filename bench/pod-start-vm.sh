#!/bin/bash
# pod-start-vm.sh - bench/pod-start.py in the cgroup v2 VM, where all three handlers run.
#
#   bench/pod-start-vm.sh [RUNS] [--timeout SECONDS]     (root; default RUNS 10)
#
# On this hybrid host every CRI sandbox's cpu.shares stops mrun and crun (bench/README.md),
# so the pod start is measured in the VM (tests/vm/run-in-vm.sh: Debian's kernel, a
# pure cgroup v2): the bridge module loaded for CNI, then pod-start.py with the build's
# mrun and pause program, runc, mrun and crun taking turns in one containerd. Prints
# pod-start.py's table and keeps it in $MRUN_BUILD_DIR/vm-pod-start/pod-start.txt.
# Under TCG the times are many times a real machine's; only the ratios mean something.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
runs=10 timeout_s=1500
while (($#)); do
    case $1 in
    --timeout) timeout_s=$2; shift 2 ;;
    [0-9]*) runs=$1; shift ;;
    *) echo "pod-start-vm: unknown option $1" >&2; exit 2 ;;
    esac
done
build=${MRUN_BUILD_DIR:-$repo/build}
build=$(cd "$build" && pwd)
for f in "$build/src/mrun" "$build/tests/probe/pause"; do
    [[ -x $f ]] || { echo "pod-start-vm: $f is not built (meson compile -C $build)" >&2; exit 2; }
done
out=$build/vm-pod-start
rm -rf "$out"
mkdir -p "$out"

# shellcheck disable=SC2016 # expanded by the guest's bash
"$repo/tests/vm/run-in-vm.sh" --timeout "$timeout_s" --mem 2048 --cpus 2 --out "$out" -- \
    bash -c 'set -eo pipefail
    modprobe bridge
    echo "# guest: $(uname -r), crun: $(crun --version 2>&1 | head -n 1), runc: $(runc --version | head -n 1)"
    /usr/bin/python3 "$1/bench/pod-start.py" "$2" --mrun "$3/src/mrun" \
        --pause "$3/tests/probe/pause" | tee /mnt/out/pod-start.txt' \
    pod-start "$repo" "$runs" "$build"
