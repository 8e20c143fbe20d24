#!/usr/bin/env bash
# kmod/build.sh [OUTDIR] - build fakegpu.ko out of tree.
#
# Copies the module sources to OUTDIR (default: build/kmod at the top of the
# repository) and runs Kbuild there, so no build product lands in kmod/.
# Prints the path of the built fakegpu.ko on its last line.
# Environment: KVER or KDIR select the kernel (see kmod/Makefile).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
out=${1:-$here/../build/kmod}
mkdir -p "$out/uapi"
out=$(cd "$out" && pwd)

# Copy only what differs, so repeated builds stay incremental.
sync_file() { cmp -s "$1" "$2" || cp "$1" "$2"; }
for f in "$here"/Kbuild "$here"/Makefile "$here"/*.c "$here"/*.h; do
  sync_file "$f" "$out/$(basename "$f")"
done
sync_file "$here"/uapi/fakegpu.h "$out"/uapi/fakegpu.h

make -C "$out" --no-print-directory -j"$(nproc)" modules >&2
echo "$out/fakegpu.ko"
