#!/usr/bin/env bash
# Is this mrun's start slower than another build's? Times a rootless
# `mrun run --rm --network none ROOTFS /bin/true` with two mrun binaries, in ROUNDS
# hyperfine runs whose order alternates (A then B, B then A, ...), because one hyperfine
# run times its commands one after the other and a machine's load drifts between them;
# prints each round and the ratio B/A of the medians pooled over all rounds.
#
#   bench/compare-builds.sh OLD_MRUN [NEW_MRUN] [ROUNDS] [RUNS]   as root
#     NEW_MRUN defaults to $MRUN_BUILD_DIR/src/mrun (build/), ROUNDS to 6, RUNS to 40
#   MRUN_BENCH_STAGE_PARENT  where the stage (state roots, storage, rootfs) lives:
#     default /var/tmp (ext4 here); /dev/shm for tmpfs
#   MRUN_BENCH_COLD=1  every run is a user's first container: before each one (hyperfine
#     --prepare, not timed) the shared user namespace's holder is stopped and the state
#     root and storage removed, so the run starts the holder, maps its ids and makes
#     its directories; by default the holder lives and spares are kept (warm)
#   e.g. the pre-redesign build:
#     git worktree add --detach /var/tmp/mrun-old e21d33a && (cd /var/tmp/mrun-old && scripts/build.sh)
#     bench/compare-builds.sh /var/tmp/mrun-old/build/src/mrun
#
# Each binary has its own state root in the stage directory; both start the same
# busybox rootfs. Bench is never a test: it prints numbers, it does not judge them.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/bench-lib.sh
source "$here/bench-lib.sh"
bench_setup hyperfine python3
old=${1:?usage: bench/compare-builds.sh OLD_MRUN [NEW_MRUN] [ROUNDS] [RUNS]}
new=${2:-$build/src/mrun} rounds=${3:-6} runs=${4:-40}
for f in "$old" "$new"; do [ -x "$f" ] || { echo "bench: $f is not an executable mrun" >&2; exit 1; }; done

stage=$(mktemp -d "${MRUN_BENCH_STAGE_PARENT:-/var/tmp}/mrun-bench-ab.XXXXXX")
cold=${MRUN_BENCH_COLD:-0}
trap 'rm -rf --one-file-system "$stage"' EXIT
chmod 0755 "$stage"
install -D -m 0755 "$old" "$stage/bin/A"
install -D -m 0755 "$new" "$stage/bin/B"
chown "$user" "$stage"
as_user() { (cd "$stage" && runuser -u "$user" -- env -i HOME="$stage" PATH=/usr/bin:/usr/sbin:/bin "$@"); }
as_user "$stage/bin/B" rootfs busybox "$stage/rootfs" >/dev/null
cmd() { echo "$stage/bin/$1 --root $stage/state-$1 run --rm --network none $stage/rootfs /bin/true"; }
# What a cold run starts from: no holder, no state root, no storage (HOME is the stage).
fresh() {
  # rm in a user namespace of the user's subordinate ids: overlayfs's work/work of a kept
  # storage belongs to the container's root.
  echo "sh -c '$stage/bin/$1 --root $stage/state-$1 userns --stop >/dev/null && unshare -r --map-auto rm -rf $stage/state-$1 $stage/.local/share/mrun'"
}
for who in A B; do as_user $(cmd $who) || { echo "bench: mrun $who cannot start a container" >&2; exit 1; }; done

echo "A = $old"
echo "B = $new"
echo "$rounds rounds of $runs runs each, order alternating, $([ "$cold" = 1 ] && echo cold || echo warm), stage on $(stat -f -c %T "$stage") (load average before: $(cut -d' ' -f1-3 /proc/loadavg))"
for ((r = 1; r <= rounds; r++)); do
  if ((r % 2)); then order=(A B); else order=(B A); fi
  args=()
  for who in "${order[@]}"; do args+=(-n "$who" "$(cmd "$who")"); done
  if [ "$cold" = 1 ]; then
    for who in "${order[@]}"; do args+=(--prepare "$(fresh "$who")"); done
  fi
  as_user hyperfine -N --style none --warmup 3 --runs "$runs" \
    --export-json "$stage/round$r.json" "${args[@]}" >/dev/null 2>"$stage/hyperfine.err" ||
    { cat "$stage/hyperfine.err" >&2; exit 1; }
done
/usr/bin/python3 - "$stage" "$rounds" <<'PY'
import json, statistics, sys
stage, rounds = sys.argv[1], int(sys.argv[2])
pooled = {"A": [], "B": []}
print(f"{'round':>5} {'order':>5} {'A median ms':>12} {'B median ms':>12} {'B/A':>6}")
for r in range(1, rounds + 1):
    res = {x["command"]: x["times"] for x in json.load(open(f"{stage}/round{r}.json"))["results"]}
    med = {k: statistics.median(v) * 1000 for k, v in res.items()}
    for k in pooled:
        pooled[k] += res[k]
    order = "AB" if r % 2 else "BA"
    print(f"{r:>5} {order:>5} {med['A']:>12.2f} {med['B']:>12.2f} {med['B'] / med['A']:>6.3f}")
a, b = (statistics.median(pooled[k]) * 1000 for k in ("A", "B"))
print(f"pooled medians: A {a:.2f} ms, B {b:.2f} ms, B/A = {b / a:.3f}")
PY
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"
