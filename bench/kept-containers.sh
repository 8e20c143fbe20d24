#!/usr/bin/env bash
# Does mrun slow down with the number of stopped containers it keeps? Times a rootless
# `mrun run --rm --network none ROOTFS /bin/true` and a `mrun exec` of /bin/true into a
# running container (sleep 1000), each with a state root that keeps no other container
# and with one that keeps KEPT stopped ones (made by `mrun run --name keptN --network
# none ROOTFS /bin/true`, no --rm), all four in one hyperfine run, and prints the ratio
# kept/none for each. The bar: within 5% (a ratio of at most 1.05).
#
#   bench/kept-containers.sh [RUNS] [KEPT]   as root (default RUNS=30, KEPT=300)
#   MRUN_BUILD_DIR   build dir with src/mrun (default: build)
#   MRUN_BENCH_USER  the unprivileged user (default: mrun-test)
#
# Both state roots (--root) are the bench's own, in the stage directory, so no container
# of the user's is looked at or touched; the data directory (HOME) is the stage's too
# and is shared by the two, so both use the same seccomp cache. Every container the
# script made is deleted at the end, also when it fails or is interrupted. Bench is never
# a test: it prints numbers, it does not judge them.
set -euo pipefail

runs=${1:-30}
kept=${2:-300}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/bench-lib.sh
source "$here/bench-lib.sh"
bench_setup hyperfine python3

stage=$(mktemp -d /var/tmp/mrun-bench-kept.XXXXXX)
path=/usr/local/bin:/usr/bin:/usr/sbin:/bin
as_user() { (cd "$stage" && runuser -u "$user" -- env -i HOME="$stage/home" PATH="$path" "$@"); }
none="$stage/bin/mrun --root $stage/state-none" many="$stage/bin/mrun --root $stage/state-kept"
rootfs=$stage/rootfs

# delete_all: every container in both state roots (the running ones with -f), in one
# `mrun delete` per root; prints how many are left (0 unless a delete failed).
# shellcheck disable=SC2086  # $none, $many: the binary and its --root
delete_all() {
  local m names left=0
  for m in "$none" "$many"; do
    [ -x "$stage/bin/mrun" ] || continue
    mapfile -t names < <(as_user $m list -q 2>/dev/null)
    [ ${#names[@]} -eq 0 ] || as_user $m delete -f "${names[@]}" >/dev/null 2>&1 || true
    left=$((left + $(as_user $m list -q 2>/dev/null | wc -l)))
  done
  echo "$left"
}
cleanup() {
  set +e
  local left
  left=$(delete_all)
  [ "$left" = 0 ] || echo "bench: $left containers could not be deleted; see $stage" >&2
  [ "$left" = 0 ] && rm -rf --one-file-system "$stage"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
chmod 0755 "$stage"
install -D -m 0755 "$build/src/mrun" "$stage/bin/mrun"
chown "$user" "$stage"
runuser -u "$user" -- mkdir -p "$stage/home"
as_user "$stage/bin/mrun" rootfs busybox "$rootfs" >/dev/null

ms() { echo $(( $(date +%s%N) / 1000000 )); }
echo "making $kept stopped containers (kept1..kept$kept) in one state root, as $user ..."
t0=$(ms)
for ((i = 1; i <= kept; i++)); do
  # shellcheck disable=SC2086
  as_user $many run --name "kept$i" --network none "$rootfs" /bin/true
done
made_ms=$(( $(ms) - t0 ))
# One running container per root, to exec into (detached: its stdio is not a pipe).
# shellcheck disable=SC2086
as_user $none run -d --name exec-none --network none "$rootfs" sleep 1000 </dev/null >/dev/null
# shellcheck disable=SC2086
as_user $many run -d --name exec-kept --network none "$rootfs" sleep 1000 </dev/null >/dev/null
# shellcheck disable=SC2086
stopped=$(as_user $many list --format json | python3 -c \
  'import json,sys; print(sum(1 for c in json.load(sys.stdin) if c["status"] == "stopped"))')

names=(run-none run-kept exec-none exec-kept)
cmds=("$none run --rm --network none $rootfs /bin/true"
      "$many run --rm --network none $rootfs /bin/true"
      "$none exec exec-none /bin/true"
      "$many exec exec-kept /bin/true")
args=()
for i in "${!cmds[@]}"; do
  # shellcheck disable=SC2086
  as_user ${cmds[$i]} </dev/null || { echo "bench: ${cmds[$i]} fails; nothing timed" >&2; exit 1; }
  args+=(-n "${names[$i]}" "${cmds[$i]}")
done
echo "measuring $runs runs each as $user (load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs) ..."
as_user hyperfine -N --style basic --warmup 3 --runs "$runs" --export-json "$stage/times.json" \
  "${args[@]}" >"$stage/hyperfine.log" 2>&1 || { cat "$stage/hyperfine.log" >&2; exit 1; }

t0=$(ms)
left=$(delete_all)
deleted_ms=$(( $(ms) - t0 ))

python3 - "$stage" "$runs" "$kept" "$stopped" "$made_ms" "$deleted_ms" "$left" <<'EOF'
import json, statistics, sys
stage, runs, kept, stopped, made, deleted, left = sys.argv[1], *map(int, sys.argv[2:])
times = {r["command"]: [t * 1000 for t in r["times"]]
         for r in json.load(open(f"{stage}/times.json"))["results"]}
print(f"\n{runs} runs each (hyperfine -N, 3 warmup runs), rootless; \"none\": a state root with "
      f"no other container, \"kept\": one with {stopped} stopped containers:\n")
print(f"{'what':<10} {'mean ms':>8} {'median ms':>10} {'stddev':>7}")
for n in ("run-none", "run-kept", "exec-none", "exec-kept"):
    t = times[n]
    print(f"{n:<10} {statistics.mean(t):8.2f} {statistics.median(t):10.2f} {statistics.pstdev(t):7.2f}")
print(f"\n{'ratio':<26} {'mean':>6} {'median':>7}")
for what, cmd in (("run", "mrun run --rm"), ("exec", "mrun exec")):
    a, b = times[f"{what}-kept"], times[f"{what}-none"]
    print(f"{cmd + ': kept / none':<26} {statistics.mean(a) / statistics.mean(b):6.3f} "
          f"{statistics.median(a) / statistics.median(b):7.3f}")
print(f"\nmaking the {kept} kept containers took {made / 1000:.1f} s ({made / kept:.1f} ms each, "
      f"one `mrun run` and runuser each); deleting them all in one `mrun delete`: "
      f"{deleted / 1000:.1f} s; containers left in the state roots: {left}")
print("load average after: " + " ".join(open("/proc/loadavg").read().split()[:3]) +
      " (on a busy machine trust the medians more than the means)")
EOF
