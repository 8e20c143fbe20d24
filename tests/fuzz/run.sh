#!/usr/bin/env bash
# The fuzz suite: builds the libFuzzer targets of tests/fuzz/ (clang, meson option
# `fuzz`) in a build directory of their own, replays every input committed under
# regressions/TARGET/ (a crash there is a failure), then fuzzes each target for a
# bounded time on a copy of corpus/TARGET/ in a temporary directory.
#
#   tests/fuzz/run.sh [TARGET...]      # default: every target
#
#   MRUN_FUZZ_SECONDS    fuzzing time per target (default 20)
#   MRUN_FUZZ_JOBS       targets fuzzed at once (default: the number of CPUs)
#   MRUN_FUZZ_BUILD_DIR  the clang build (default: ${MRUN_BUILD_DIR:-build}-fuzz)
#   MRUN_RESULTS_DIR     where fuzz.tap goes (default: build/test-results), and
#                        fuzz-artifacts/, the inputs that crashed
#
# TAP to stdout and $MRUN_RESULTS_DIR/fuzz.tap, two lines a target:
#   ok N - fuzz-regressions TARGET (K inputs)
#   ok N - fuzz TARGET (M runs in S s)
#   not ok N - fuzz TARGET: crash, input fuzz-artifacts/TARGET-crash-... (then the report)
# Exits 1 on any crash or build failure. Without clang or its fuzzer runtime
# (Debian: libclang-rt-14-dev) every target is skipped, saying why.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
cd "$repo" || exit 2

all_targets=(config seccomp cdi gpu_policy subid volume open_in_root)
targets=("$@")
[ ${#targets[@]} -gt 0 ] || targets=("${all_targets[@]}")
seconds=${MRUN_FUZZ_SECONDS:-20}
jobs=${MRUN_FUZZ_JOBS:-$(nproc)}
build=${MRUN_FUZZ_BUILD_DIR:-${MRUN_BUILD_DIR:-$repo/build}-fuzz}
results=${MRUN_RESULTS_DIR:-$repo/build/test-results}
case $build in /*) ;; *) build=$repo/$build ;; esac
case $results in /*) ;; *) results=$repo/$results ;; esac
mkdir -p "$results"
tap_file=$results/fuzz.tap
: >"$tap_file"

emit() { printf '%s\n' "$1" | tee -a "$tap_file"; }
n=0
failed=0
ok() { n=$((n + 1)); emit "ok $n - $1"; }
not_ok() {
  n=$((n + 1))
  failed=$((failed + 1))
  emit "not ok $n - $1"
}
skip_all() {
  emit "1..$((2 * ${#targets[@]}))"
  for t in "${targets[@]}"; do
    ok "fuzz-regressions $t # SKIP $1"
    ok "fuzz $t # SKIP $1"
  done
  exit 0
}
bin_of() { echo "$build/tests/fuzz/fuzz-${1//_/-}"; }
for t in "${targets[@]}"; do
  [[ " ${all_targets[*]} " == *" $t "* ]] || {
    echo "fuzz: unknown target $t (targets: ${all_targets[*]})" >&2
    exit 2
  }
done

# ------------------------------------------------------------------ build
command -v clang++ >/dev/null || skip_all "no clang++ (scripts/install-deps.sh installs clang)"
fuzzer_rt=$(clang++ -print-file-name=libclang_rt.fuzzer-x86_64.a 2>/dev/null)
[ -f "$fuzzer_rt" ] ||
  skip_all "no libFuzzer runtime for clang (scripts/install-deps.sh installs libclang-rt-14-dev)"
build_start=$SECONDS
if [ ! -f "$build/build.ninja" ]; then
  CC=clang CXX=clang++ meson setup "$build" -Dfuzz=true -Dtests=false >"$results/fuzz-build.log" 2>&1
elif ! grep -q "fuzz-config" "$build/build.ninja"; then
  meson configure "$build" -Dfuzz=true >"$results/fuzz-build.log" 2>&1
fi
build_targets=()
for t in "${targets[@]}"; do build_targets+=("fuzz-${t//_/-}"); done
if ! meson compile -C "$build" "${build_targets[@]}" >>"$results/fuzz-build.log" 2>&1; then
  emit "1..1"
  not_ok "fuzz build in $build (log: $results/fuzz-build.log)"
  tail -n 20 "$results/fuzz-build.log" | sed 's/^/# /' | tee -a "$tap_file"
  exit 1
fi
emit "# fuzz targets built in $((SECONDS - build_start)) s ($build)"

# ------------------------------------------------------------------ run
work=$(mktemp -d "${TMPDIR:-/tmp}/mrun-fuzz.XXXXXX") || exit 2
trap 'rm -rf "$work"' EXIT
artifacts=$results/fuzz-artifacts
rm -rf "$artifacts"

# run_one TARGET: replays its regressions, then fuzzes; leaves status files in $work/T.
run_one() {
  local t=$1 bin dir rc start
  bin=$(bin_of "$t")
  dir=$work/$t
  mkdir -p "$dir/corpus" "$dir/artifacts" "$dir/tmp"
  # Regressions: each input once (libFuzzer runs the files it is given, no fuzzing).
  local inputs=()
  if [ -d "$here/regressions/$t" ]; then
    mapfile -t inputs < <(find "$here/regressions/$t" -type f | sort)
  fi
  echo "${#inputs[@]}" >"$dir/regressions.count"
  local bad=()
  for f in "${inputs[@]+"${inputs[@]}"}"; do
    if ! TMPDIR=$dir/tmp timeout 60 "$bin" "$f" >>"$dir/regressions.log" 2>&1; then
      bad+=("${f#"$repo"/}")
    fi
  done
  printf '%s\n' "${bad[@]+"${bad[@]}"}" >"$dir/regressions.bad"
  # Fuzzing, on a copy of the corpus (new inputs stay in the temporary directory).
  cp -r "$here/corpus/$t/." "$dir/corpus/" 2>/dev/null
  local dict=()
  [ -f "$here/dict/$t.dict" ] && dict=("-dict=$here/dict/$t.dict")
  start=$SECONDS
  TMPDIR=$dir/tmp timeout $((seconds * 2 + 120)) "$bin" -max_total_time="$seconds" -timeout=10 \
    -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$dir/artifacts/" \
    "${dict[@]+"${dict[@]}"}" "$dir/corpus" >"$dir/fuzz.log" 2>&1
  rc=$?
  echo "$rc $((SECONDS - start))" >"$dir/fuzz.status"
}

running=0
for t in "${targets[@]}"; do
  if [ "$running" -ge "$jobs" ]; then
    wait -n
    running=$((running - 1))
  fi
  run_one "$t" &
  running=$((running + 1))
done
wait

emit "1..$((2 * ${#targets[@]}))"
for t in "${targets[@]}"; do
  dir=$work/$t
  count=$(cat "$dir/regressions.count" 2>/dev/null || echo 0)
  mapfile -t bad < <(grep -v '^$' "$dir/regressions.bad" 2>/dev/null)
  if [ ${#bad[@]} -eq 0 ]; then
    ok "fuzz-regressions $t ($count inputs)"
  else
    not_ok "fuzz-regressions $t: ${#bad[@]} of $count inputs crash: ${bad[*]}"
    grep -E 'ERROR|SUMMARY|property failed|what\(\)|runtime error' "$dir/regressions.log" |
      head -n 10 | sed 's/^/# /' | tee -a "$tap_file"
  fi

  read -r rc took <"$dir/fuzz.status" 2>/dev/null || { rc=1 took=0; }
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$dir/fuzz.log" | tail -n 1)
  if [ "$rc" -eq 0 ] && [ -n "$runs" ]; then
    ok "fuzz $t (${runs} runs in ${took} s)"
    continue
  fi
  # A crash: keep the input where the results are, and say where it went.
  mkdir -p "$artifacts"
  kept=()
  for a in "$dir"/artifacts/*; do
    [ -f "$a" ] || continue
    cp "$a" "$artifacts/$t-$(basename "$a")"
    kept+=("${artifacts#"$results"/}/$t-$(basename "$a")")
  done
  cp "$dir/fuzz.log" "$artifacts/$t.log"
  why="exit $rc"
  [ "$rc" -eq 124 ] && why="did not stop within $((seconds * 2 + 120)) s"
  not_ok "fuzz $t: $why, input ${kept[*]:-(none written)} in $results (fix it, then add the input to tests/fuzz/regressions/$t/)"
  grep -E 'ERROR|SUMMARY|property failed|what\(\)|runtime error|^ *#[0-9]+ .* in (mrun|LLVMFuzzer|policy)' \
    "$dir/fuzz.log" | head -n 20 | sed 's/^/# /' | tee -a "$tap_file"
done
[ $failed -eq 0 ]
