#!/bin/bash
# gen-gpu-doc.sh - write docs/GPU-IN-CONTAINER.md from a real `mrun gpu matrix` run in
# the VM (Debian's kernel with fakegpu.ko; tests/vm/run-in-vm.sh).
#
#   scripts/gen-gpu-doc.sh [--timeout SECONDS]
#
# Builds fakegpu.ko, boots the VM with the same setup as the gpu-matrix suite
# (tests/vm/guest/gpu-matrix.sh --markdown), and puts the matrix's Markdown (kernel
# version included) between the hand-written parts of the document, which live in
# docs/GPU-IN-CONTAINER.md.in. Needs a build (meson compile -C build).
set -euo pipefail

repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
timeout_s=420
[[ ${1:-} == --timeout ]] && timeout_s=$2
build=${MRUN_BUILD_DIR:-$repo/build}
out=$build/vm-gpu-doc
rm -rf "$out"
mkdir -p "$out"
ko=$("$repo/kmod/build.sh" "$build/kmod" | tail -n 1)
"$repo/tests/vm/run-in-vm.sh" --timeout "$timeout_s" --mem 2048 --cpus 2 --out "$out" -- \
    "$repo/tests/vm/guest/gpu-matrix.sh" --ko "$ko" --mrun "$build/src/mrun" \
    --helper "$build/helpers/mrun-gpu-helper" --gpu-dir "$build/src/gpu" \
    --markdown /mnt/out/matrix.md >&2
[[ -s $out/matrix.md ]] || { echo "gen-gpu-doc: the VM wrote no matrix ($out)" >&2; exit 1; }
[[ -s $out/controllers.txt ]] || { echo "gen-gpu-doc: the VM wrote no cgroup controllers ($out)" >&2; exit 1; }

template=$repo/docs/GPU-IN-CONTAINER.md.in
doc=$repo/docs/GPU-IN-CONTAINER.md
python3 - "$template" "$out/matrix.md" "$out/controllers.txt" "$out/kernel-version" "$doc" <<'PY'
import sys
template, matrix, controllers, kernel, doc = sys.argv[1:]
text = open(template, encoding="utf-8").read()
table = open(matrix, encoding="utf-8").read().strip()
for mark in ("@MATRIX@", "@CONTROLLERS@", "@KERNEL@"):
    assert mark in text, "the template has no " + mark
text = text.replace("@MATRIX@", table)
text = text.replace("@CONTROLLERS@", open(controllers, encoding="utf-8").read().strip())
text = text.replace("@KERNEL@", open(kernel, encoding="utf-8").read().strip())
open(doc, "w", encoding="utf-8").write(text)
PY
echo "gen-gpu-doc: wrote $doc" >&2
