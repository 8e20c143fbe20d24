#!/bin/bash
# gen-trace-doc.sh - write docs/TRACE-SIDE-BY-SIDE.md from a real `strace -f` of
# fakegpu-client in the VM (Debian's kernel with fakegpu.ko; tests/vm/run-in-vm.sh).
#
#   scripts/gen-trace-doc.sh [--timeout SECONDS]
#
# Builds fakegpu.ko, boots the VM, loads the module and traces, as root:
#   strace -f fakegpu-client --check ring              (every call: the phases)
#   strace -f -c fakegpu-bench --path ring --jobs N    (the steady state: calls per job)
# then scripts/trace_phases.py splits the first trace into phases, counts the calls of
# each, and writes the document with the phases of a CUDA program's start beside them.
# Needs a build (meson compile -C build). One command regenerates it; nothing is
# edited by hand in the output.
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
timeout_s=300
[[ ${1:-} == --timeout ]] && timeout_s=$2
build=${MRUN_BUILD_DIR:-$repo/build}
gpu=$build/src/gpu
for f in "$gpu/fakegpu-client" "$gpu/fakegpu-bench" "$gpu/libfakegpu.so.1"; do
    [[ -r $f ]] || { echo "gen-trace-doc: $f is not built (meson compile -C $build)" >&2; exit 1; }
done
command -v strace >/dev/null || { echo "gen-trace-doc: strace is not installed (apt-get install strace)" >&2; exit 1; }
out=$build/vm-trace-doc
rm -rf "$out"
mkdir -p "$out"
ko=$("$repo/kmod/build.sh" "$build/kmod" | tail -n 1)
jobs=100000
"$repo/tests/vm/run-in-vm.sh" --timeout "$timeout_s" --mem 1024 --cpus 2 --out "$out" -- \
    bash -c 'set -e
        insmod "$1"
        export LD_LIBRARY_PATH=$2
        strace -f -o /mnt/out/client.strace "$2/fakegpu-client" --check ring >/mnt/out/client.out
        strace -f -c -o /mnt/out/bench.strace-c "$2/fakegpu-bench" --path ring --jobs "$3" --repeat 1 >/mnt/out/bench.out
        uname -rv >/mnt/out/uname
        rmmod fakegpu' trace "$ko" "$gpu" "$jobs" >&2
for f in client.strace client.out bench.strace-c uname; do
    [[ -s $out/$f ]] || { echo "gen-trace-doc: the VM wrote no $f ($out)" >&2; exit 1; }
done
python3 "$repo/scripts/trace_phases.py" --trace "$out/client.strace" --client-output "$out/client.out" \
    --bench-summary "$out/bench.strace-c" --bench-jobs "$jobs" --kernel "$(cat "$out/uname")" \
    --output "$repo/docs/TRACE-SIDE-BY-SIDE.md"
echo "gen-trace-doc: wrote $repo/docs/TRACE-SIDE-BY-SIDE.md" >&2
