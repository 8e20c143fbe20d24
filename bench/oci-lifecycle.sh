#!/usr/bin/env bash
# Latency of one container's whole life through the OCI verbs, as an engine drives a
# runtime: `create --bundle B ID`, `start ID`, `state ID` until it says stopped, and
# `delete ID`, for mrun, crun and runc on the same bundle (busybox rootfs from
# `mrun rootfs busybox`, config.json from `runc spec [--rootless]`, process /bin/true),
# in one hyperfine run per mode, printed as ratios to crun. Rootless as the
# unprivileged user (default mrun-test), then rootful as root.
#
#   bench/oci-lifecycle.sh [RUNS]        as root (default RUNS=30)
#   MRUN_BUILD_DIR   build dir with src/mrun (default: build)
#   MRUN_BENCH_USER  the unprivileged user (default: mrun-test)
#
# Every cycle is one `bash oci-lifecycle.sh --cycle ...`, so the shell's start is in all
# three numbers alike. crun runs in a private mount namespace that hides the hybrid
# cgroup layout from it (bench_hybrid_ns in bench-lib.sh); the other two run there too,
# so that all three stay in one hyperfine run. Bench is never a test: it prints
# numbers, it does not judge them.
set -euo pipefail

if [ "${1:-}" = "--cycle" ]; then
  # ---- one life: RUNTIME STATE_ROOT BUNDLE ID ------------------------------------
  rt=$2 root=$3 bundle=$4 id=$5
  "$rt" --root "$root" create --bundle "$bundle" "$id" >/dev/null
  "$rt" --root "$root" start "$id"
  for ((i = 0; i < 2000; i++)); do      # /bin/true: usually stopped at the first look
    case $("$rt" --root "$root" state "$id") in *'"stopped"'*) break ;; esac
  done
  "$rt" --root "$root" delete "$id"
  exit 0
fi

if [ "${1:-}" = "--measure" ]; then
  # ---- one mode's hyperfine run, as the user (rootless) or root --------------------
  stage=$2 mode=$3 runs=$4
  dir=$stage/$mode
  names=() cmds=()
  : >"$dir/failed.txt"
  for rt in crun mrun runc; do
    bin=$rt
    [ "$rt" = mrun ] && bin=$stage/bin/mrun
    cmd="bash $stage/oci-lifecycle.sh --cycle $bin $dir/state-$rt $dir/bundle bench-$rt"
    if out=$($cmd 2>&1); then             # each must work before it is timed
      names+=("$rt") cmds+=("$cmd")
    else
      echo "$rt $(echo "$out" | tail -n1)" >>"$dir/failed.txt"
      $bin --root "$dir/state-$rt" delete -f "bench-$rt" >/dev/null 2>&1 || true
    fi
  done
  args=()
  for i in "${!cmds[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
  [ ${#args[@]} -gt 0 ] || exit 0
  hyperfine -N --style basic --warmup 3 --runs "$runs" --export-json "$dir/times.json" \
    "${args[@]}" >"$dir/hyperfine.log" 2>&1 || { cat "$dir/hyperfine.log" >&2; exit 1; }
  exit 0
fi

runs=${1:-30}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/bench-lib.sh
source "$here/bench-lib.sh"
bench_setup crun runc hyperfine python3

stage=$(mktemp -d /var/tmp/mrun-bench.XXXXXX)
trap 'rm -rf --one-file-system "$stage"' EXIT
chmod 0755 "$stage"
install -D -m 0755 "$build/src/mrun" "$stage/bin/mrun"
install -m 0755 "$here/oci-lifecycle.sh" "$stage/oci-lifecycle.sh"
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
install -d -o "$user" "$stage/user" "$stage/home"
mkdir -p "$stage/root" "$stage/root-home"
bench_hybrid_ns "$stage"

# in_mode MODE CMD...: bench-lib.sh.

for mode in user root; do
  spec=()
  [ "$mode" = user ] && spec=(--rootless)
  in_mode "$mode" "$stage/bin/mrun" rootfs busybox "$stage/$mode/bundle/rootfs" >/dev/null
  in_mode "$mode" runc spec "${spec[@]}" --bundle "$stage/$mode/bundle"
  in_mode "$mode" python3 -c '
import json, sys
p = sys.argv[1]; c = json.load(open(p))
c["process"]["args"] = ["/bin/true"]; c["process"]["terminal"] = False
json.dump(c, open(p, "w"), indent=2)' "$stage/$mode/bundle/config.json"
done

echo "measuring $runs lives each (load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs) ..."
for mode in user root; do
  if [ "$mode" = user ]; then
    (cd "$stage" && env -i HOME="$stage/home" PATH="$path" "${hybrid_ns[@]}" \
       runuser -u "$user" -- bash "$stage/oci-lifecycle.sh" --measure "$stage" user "$runs")
  else
    (cd "$stage" && env -i HOME="$stage/root-home" PATH="$path" "${hybrid_ns[@]}" \
       bash "$stage/oci-lifecycle.sh" --measure "$stage" root "$runs")
  fi
done

python3 - "$stage" "$runs" "$user" "${#hybrid_ns[@]}" <<'EOF'
import json, os, statistics, sys
stage, runs, user, masked = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] != "0"
print(f"\ncreate + start + state until stopped + delete of /bin/true, {runs} runs each "
      f"(hyperfine -N, 3 warmup runs):")
for mode, title in (("user", f"rootless (as {user})"), ("root", "rootful (as root)")):
    d = f"{stage}/{mode}"
    failed = dict(l.rstrip("\n").split(" ", 1) for l in open(f"{d}/failed.txt") if l.strip())
    times = {}
    if os.path.exists(f"{d}/times.json"):
        for r in json.load(open(f"{d}/times.json"))["results"]:
            times[r["command"]] = [t * 1000 for t in r["times"]]
    print(f"\n{title}:\n")
    print(f"{'runtime':<8} {'mean ms':>8} {'median ms':>10} {'stddev':>7} {'x crun':>7} {'x crun (median)':>16}")
    crun = times.get("crun")
    for n in ("crun", "mrun", "runc"):
        if n in failed:
            print(f"{n:<8} not measured: it failed: {failed[n]}")
            continue
        if n not in times:
            continue
        t = times[n]
        x = f"{statistics.mean(t) / statistics.mean(crun):.2f}" if crun else "-"
        xm = f"{statistics.median(t) / statistics.median(crun):.2f}" if crun else "-"
        print(f"{n:<8} {statistics.mean(t):8.2f} {statistics.median(t):10.2f} "
              f"{statistics.pstdev(t):7.2f} {x:>7} {xm:>16}")
if masked:
    print("\nnote: all three ran in a private mount namespace where "
          "/sys/fs/cgroup/unified/cgroup.controllers reads empty (crun refuses a hybrid "
          "cgroup host otherwise)")
print("load average after: " + " ".join(open("/proc/loadavg").read().split()[:3]) +
      " (on a busy machine trust the medians more than the means)")
EOF
