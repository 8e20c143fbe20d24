#!/usr/bin/env bash
# Configures (once) and builds mrun, libfakegpu and the tests under build/.
set -euo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MRUN_BUILD_DIR:-$repo/build}
cd "$repo"
if [ ! -f "$build/build.ninja" ]; then
  meson setup "$build" -Dwerror=true >/dev/null
fi
meson compile -C "$build"
