#!/usr/bin/env bash
# clang-format must leave every C/C++ source unchanged (style: .clang-format).
# Prints TAP, one line per file; writes it to $1 when given.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
out=${1:-/dev/null}
mapfile -t files < <(git ls-files 'src/*.cpp' 'src/*.hpp' 'src/*.h' 'src/*.c' 'tests/*.cpp' 'tests/*.c' 'helpers/*.c' 'helpers/*.h')
n=0; failed=0; tap=""
for f in "${files[@]}"; do
  n=$((n + 1))
  if clang-format --dry-run -Werror "$f" >/dev/null 2>&1; then
    tap+="ok $n - clang-format $f"$'\n'
  else
    failed=$((failed + 1))
    tap+="not ok $n - clang-format $f (run: clang-format -i $f)"$'\n'
  fi
done
printf '1..%d\n%s' "$n" "$tap" | tee "$out"
[ $failed -eq 0 ]
