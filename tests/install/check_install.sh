#!/usr/bin/env bash
# `meson install` installs a stripped binary (meson.build's strip=true): the build tree
# keeps ~90 MB of debug information, an install carries none. Installs into a scratch
# DESTDIR, never onto the host. Writes TAP to RESULTS (default: stdout only).
#
#   tests/install/check_install.sh BUILD_DIR [RESULTS.tap]
set -uo pipefail
build=${1:?usage: check_install.sh BUILD_DIR [RESULTS.tap]}
results=${2:-/dev/null}
dest=$(mktemp -d /tmp/mrun-install.XXXXXX) || exit 2
trap 'rm -rf "$dest"' EXIT

n=0 failed=0
tap=()
ok() { n=$((n + 1)); tap+=("ok $n - $1"); }
not_ok() { n=$((n + 1)); failed=$((failed + 1)); tap+=("not ok $n - $1"); }

if out=$(meson install -C "$build" --destdir "$dest" --quiet 2>&1); then
  ok "meson install -C $build --destdir DIR"
else
  not_ok "meson install -C $build --destdir DIR: $(echo "$out" | tail -n1)"
fi
bin=$(find "$dest" -path '*/bin/mrun' -type f | head -n1)
if [ -n "$bin" ]; then ok "it installs bin/mrun"; else not_ok "it installs bin/mrun"; fi
if [ -n "$bin" ]; then
  debug=$(readelf -S -W "$bin" 2>/dev/null | grep -cE '\.debug_|\.symtab' || true)
  if [ "$debug" -eq 0 ]; then
    ok "the installed mrun is stripped ($(stat -c %s "$bin") bytes)"
  else
    not_ok "the installed mrun has $debug debug/symbol sections (strip=false in $build? meson configure $build -Dstrip=true)"
  fi
  if "$bin" --version >/dev/null 2>&1; then ok "the installed mrun runs"; else not_ok "the installed mrun runs"; fi
fi
{ echo "1..$n"; printf '%s\n' "${tap[@]}"; } | tee "$results"
[ "$failed" -eq 0 ]
