#!/usr/bin/env bash
# Start-to-exit latency of `mrun run --rm ROOTFS /bin/true` with the default seccomp
# profile vs `--security-opt seccomp=unconfined`, as a ratio: does building (parse the
# JSON, compile with libseccomp, export the BPF) and loading the filter dominate start-up?
# Cache the compiled filter if the ratio is above 1.2. It was (1.3 here), so
# mrun caches it (src/security/seccomp_cache.hpp); "default-cold" removes the cache
# before every run to show the price of compiling, "default" is what users get.
#
#   bench/seccomp-start.sh [RUNS]        as root (default RUNS=50); measures rootless as
#                                        MRUN_BENCH_USER (default mrun-test) and rootful
#   MRUN_BUILD_DIR   build dir with src/mrun (default: build)
#
# Also prints mrun's own debug line for the filter (rules, BPF instructions). Bench is
# never a test: it prints numbers, it does not judge them.
set -euo pipefail

runs=${1:-50}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/bench-lib.sh
source "$here/bench-lib.sh"
bench_setup hyperfine

stage=$(mktemp -d /var/tmp/mrun-bench-seccomp.XXXXXX)
trap 'rm -rf --one-file-system "$stage"' EXIT
chmod 0755 "$stage"
install -D -m 0755 "$build/src/mrun" "$stage/bin/mrun"
chown "$user" "$stage"
home=$stage/home
runuser -u "$user" -- mkdir -p "$home"
as_user() { (cd "$stage" && runuser -u "$user" -- env -i HOME="$home" PATH=/usr/local/bin:/usr/bin:/bin "$@"); }
as_user "$stage/bin/mrun" rootfs busybox "$stage/rootfs" >/dev/null

mrun=$stage/bin/mrun rootfs=$stage/rootfs
measure() {  # measure MODE CACHE_DIR RUNNER...
  local mode=$1 cache=$2; shift 2
  "$@" hyperfine -N --style basic --warmup 5 --runs "$runs" --export-json "$stage/$mode.json" \
    --prepare "rm -rf $cache" --prepare true --prepare true \
    -n default-cold "$mrun run --rm $rootfs /bin/true" \
    -n default "$mrun run --rm $rootfs /bin/true" \
    -n unconfined "$mrun run --rm --security-opt seccomp=unconfined $rootfs /bin/true" \
    >"$stage/$mode.log" 2>&1 || { cat "$stage/$mode.log" >&2; exit 1; }
}
echo "measuring $runs runs each, rootless as $user and rootful ..."
measure rootless "$home/.local/share/mrun/cache/seccomp" as_user
measure rootful /var/lib/mrun/cache/seccomp env -i HOME=/root PATH=/usr/local/bin:/usr/bin:/bin
filter=$(as_user "$mrun" --debug run --rm "$rootfs" /bin/true 2>&1 | grep -m1 'seccomp: built-in' || true)

python3 - "$stage" "$runs" "$filter" <<'PY'
import json, statistics, sys
stage, runs, filt = sys.argv[1], int(sys.argv[2]), sys.argv[3]
print(f"\nstart-to-exit of /bin/true, {runs} runs each (hyperfine -N, 5 warmup runs)\n")
print(f"{'mode':<9} {'profile':<13} {'mean ms':>8} {'median ms':>10} {'stddev':>7}")
ratios = {}
for mode in ("rootless", "rootful"):
    res = {r["command"]: [t * 1000 for t in r["times"]]
           for r in json.load(open(f"{stage}/{mode}.json"))["results"]}
    for name in ("default-cold", "default", "unconfined"):
        t = res[name]
        print(f"{mode:<9} {name:<13} {statistics.mean(t):8.2f} {statistics.median(t):10.2f} "
              f"{statistics.pstdev(t):7.2f}")
    base = statistics.mean(res["unconfined"])
    ratios[mode] = (statistics.mean(res["default-cold"]) / base, statistics.mean(res["default"]) / base)
print()
for mode, (cold, warm) in ratios.items():
    print(f"{mode}: default / unconfined = {warm:.3f} with the cached program, "
          f"{cold:.3f} compiling every time ({'above' if cold > 1.2 else 'within'} 1.2)")
if filt:
    print(f"\n{filt.strip()}")
PY
