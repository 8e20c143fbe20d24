#!/usr/bin/env bash
# `ctr run --rm IMAGE ID /bin/true` through containerd 1.6's runc shim
# (io.containerd.runc.v2) with --runc-binary mrun, runc and crun, side by side in one
# hyperfine run, printed as ratios to runc (containerd's default) and to crun. ctr's
# default spec, unmodified. Rootful: containerd runs as root here (rootless containerd
# needs rootlesskit).
#
#   bench/ctr-run.sh [RUNS]          as root (default RUNS=20)
#   MRUN_BUILD_DIR   build dir with src/mrun (default: build)
#
# containerd is the benchmark's own (bench/containerd-lib.sh: the config.toml and the
# busybox OCI image of tests/integration/test_containerd.py, root, state and socket in
# the stage dir). What one run times is the whole engine path: ctr, containerd (a
# snapshot, the container record, the task), a new shim, the runtime's create, start,
# delete and delete --force, the snapshot's removal.
#
# crun 1.8.1 refuses every container on this hybrid cgroup host ("cgroups in hybrid mode
# not supported, drop all controllers from cgroupv2"). The script tries it as is; if
# that is the error, it restarts containerd in a private mount namespace where
# /sys/fs/cgroup/unified/cgroup.controllers reads empty (bench_hybrid_ns), so that the
# shim and every runtime run there, and says so under the table.
# Bench is never a test: it prints numbers, it does not judge them.
set -euo pipefail

runs=${1:-20}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/bench-lib.sh
source "$here/bench-lib.sh"
# shellcheck source=bench/containerd-lib.sh
source "$here/containerd-lib.sh"
bench_setup containerd ctr containerd-shim-runc-v2 runc crun hyperfine python3
/usr/bin/python3 -c 'import pytest' 2>/dev/null ||
  { echo "bench: python3-pytest missing (containerd-lib.sh imports the test module): run scripts/install-deps.sh" >&2; exit 1; }

stage=$(mktemp -d /var/tmp/mrun-bench-ctr.XXXXXX)
ns=mrun-bench-$$
cleanup() {
  ctrd_stop "$ns" || true
  rm -rf --one-file-system "$stage"
}
trap cleanup EXIT
chmod 0755 "$stage"
install -D -m 0755 "$build/src/mrun" "$stage/bin/mrun"
"$stage/bin/mrun" rootfs busybox "$stage/rootfs" >/dev/null

declare -A binary=([mrun]=$stage/bin/mrun [runc]=$(command -v runc) [crun]=$(command -v crun))
ctr_run() {  # the command line hyperfine runs for runtime $1
  echo "ctr -a $ctrd_sock -n $ns run --rm --runtime io.containerd.runc.v2 --runc-binary ${binary[$1]} $ctrd_image bench-$1 /bin/true"
}
try() {  # try RUNTIME: runs it once; prints ctr's last error line on failure
  local out cmd
  read -ra cmd <<<"$(ctr_run "$1")"  # split on blanks, as hyperfine -N splits it
  out=$("${cmd[@]}" 2>&1 </dev/null) && return 0
  echo "$out" | tail -n1
  return 1
}

ctrd_start "$stage"
ctrd_import "$stage/rootfs" "$ns"
note=
if ! err=$(try crun) && [[ $err == *"hybrid mode not supported"* ]]; then
  echo "crun as is: $err"
  bench_hybrid_ns "$stage"
  ctrd_stop "$ns"
  ctrd_start "$stage" "${hybrid_ns[@]}"  # the same root: the image is there
  note="containerd (and with it the shim and every runtime) ran in a private mount namespace where /sys/fs/cgroup/unified/cgroup.controllers reads empty: crun 1.8.1 refuses this hybrid cgroup host otherwise"
  if err=$(try crun); then echo "crun with that file masked: starts"
  else echo "crun with that file masked: fails: $err"; fi
fi

names=() cmds=()
: >"$stage/failed.txt"
for rt in runc crun mrun; do       # each must work before it is timed
  if err=$(try "$rt"); then
    names+=("$rt") cmds+=("$(ctr_run "$rt")")
  else
    echo "$rt $err" >>"$stage/failed.txt"
  fi
done
echo "containerd $(containerd --version | awk '{print $3}'), measuring $runs runs each as root" \
  "(load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs) ..."
if ((${#cmds[@]})); then
  args=()
  for i in "${!cmds[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
  hyperfine -N --style basic --warmup 3 --runs "$runs" --export-json "$stage/times.json" \
    "${args[@]}" >"$stage/hyperfine.log" 2>&1 || { cat "$stage/hyperfine.log" >&2; exit 1; }
fi

python3 - "$stage" "$runs" "$note" <<'EOF'
import json, os, statistics, sys
stage, runs, note = sys.argv[1], int(sys.argv[2]), sys.argv[3]
times = {}
if os.path.exists(f"{stage}/times.json"):
    for r in json.load(open(f"{stage}/times.json"))["results"]:
        times[r["command"]] = [t * 1000 for t in r["times"]]
failed = dict(line.rstrip("\n").split(" ", 1) for line in open(f"{stage}/failed.txt") if line.strip())
mean = {n: statistics.mean(t) for n, t in times.items()}
print(f"\nctr run --rm IMAGE ID /bin/true, {runs} runs each (hyperfine -N, 3 warmup runs), rootful:\n")
print(f"{'runtime':<8} {'mean ms':>8} {'median ms':>10} {'stddev':>7} {'x runc':>7} {'x crun':>7}")
for n in ["runc", "crun", "mrun"]:
    if n in failed:
        print(f"{n:<8} not measured: ctr run failed: {failed[n]}")
        continue
    t = times[n]
    xr = f"{mean[n] / mean['runc']:.2f}" if "runc" in mean else "-"
    xc = f"{mean[n] / mean['crun']:.2f}" if "crun" in mean else "-"
    print(f"{n:<8} {mean[n]:8.2f} {statistics.median(t):10.2f} {statistics.pstdev(t):7.2f} "
          f"{xr:>7} {xc:>7}")
if note:
    print(f"\nnote: {note}")
print("load average after: " + " ".join(open("/proc/loadavg").read().split()[:3]) +
      " (on a busy machine trust the medians more than the means)")
EOF
