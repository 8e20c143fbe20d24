#!/usr/bin/env bash
# Start-to-exit latency of a rootless `mrun run --rm --network none ROOTFS /bin/true`,
# side by side in one hyperfine run with crun (rootless bundle of the same
# rootfs), bubblewrap, and the floor `unshare -Urmpf /bin/true`; plus the peak
# RSS of each. All measured as the unprivileged user (default mrun-test).
#
#   bench/start-latency.sh [RUNS]        as root (default RUNS=50)
#   MRUN_BUILD_DIR   build dir with src/mrun (default: build)
#   MRUN_BENCH_USER  the unprivileged user (default: mrun-test)
#
# crun 1.8.1 refuses every container on a hybrid cgroup host ("cgroups in
# hybrid mode not supported, drop all controllers from cgroupv2": it reads
# /sys/fs/cgroup/unified/cgroup.controllers before it looks at any option).
# The script tries the documented knobs first and prints what each says; if
# none works and it runs as root, it measures crun in a private mount
# namespace where that one file reads empty, and says so in the table.
# Bench is never a test: it prints numbers, it does not judge them.
set -euo pipefail

if [ "${1:-}" = "--as-user" ]; then
  # ---- the measuring half, run as the unprivileged user -------------------
  stage=$2 runs=$3 crun_args=$4
  cd "$stage"
  mrun=$stage/bin/mrun rootfs=$stage/rootfs
  names=(unshare bwrap mrun)
  cmds=("unshare -Urmpf /bin/true"
        "bwrap --unshare-all --ro-bind $rootfs / --proc /proc --dev /dev /bin/true"
        "$mrun run --rm --network none $rootfs /bin/true")
  if [ -n "$crun_args" ]; then
    names+=(crun)
    cmds+=("crun --root $stage/crun-state $crun_args run --bundle $stage/bundle bench-$$")
  fi
  okn=() okc=()
  : >"$stage/failed.txt"
  for i in "${!cmds[@]}"; do      # each must work before it is timed
    if out=$(${cmds[$i]} 2>&1); then
      okn+=("${names[$i]}") okc+=("${cmds[$i]}")
    else
      echo "${names[$i]} $(echo "$out" | tail -n1)" >>"$stage/failed.txt"
    fi
  done
  names=("${okn[@]}") cmds=("${okc[@]}")
  if command -v hyperfine >/dev/null; then
    args=()
    for i in "${!cmds[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
    hyperfine -N --style basic --warmup 3 --runs "$runs" --export-json "$stage/times.json" \
      "${args[@]}" >"$stage/hyperfine.log" 2>&1 || { cat "$stage/hyperfine.log" >&2; exit 1; }
  else
    # date +%s%N loop: one line per run, "name ns"
    for i in "${!cmds[@]}"; do
      for ((r = 0; r < runs; r++)); do
        t0=$(date +%s%N); ${cmds[$i]} >/dev/null 2>&1; t1=$(date +%s%N)
        echo "${names[$i]} $((t1 - t0))"
      done
    done >"$stage/times.txt"
  fi
  for i in "${!cmds[@]}"; do      # peak RSS (KiB), the largest of 5 runs
    peak=0
    for r in 1 2 3 4 5; do
      /usr/bin/time -f %M -o "$stage/rss.one" ${cmds[$i]} >/dev/null 2>&1 || true
      kb=$(tail -n1 "$stage/rss.one")
      [ "$kb" -gt "$peak" ] && peak=$kb
    done
    echo "${names[$i]} $peak"
  done >"$stage/rss.txt"
  exit 0
fi

runs=${1:-50}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/bench-lib.sh
source "$here/bench-lib.sh"
bench_setup crun bwrap unshare /usr/bin/time python3

stage=$(mktemp -d /var/tmp/mrun-bench.XXXXXX)
trap 'rm -rf --one-file-system "$stage"' EXIT
chmod 0755 "$stage"
install -D -m 0755 "$build/src/mrun" "$stage/bin/mrun"
chown "$user" "$stage"
as_user() { (cd "$stage" && runuser -u "$user" -- env -i HOME="$(getent passwd "$user" | cut -d: -f6)" \
  PATH=/usr/local/bin:/usr/bin:/bin "$@"); }

# The rootfs every runtime starts: made by mrun, or by hand if that fails.
if ! as_user "$stage/bin/mrun" rootfs busybox "$stage/rootfs" >/dev/null 2>&1; then
  echo "bench: mrun rootfs busybox failed; making the busybox rootfs by hand" >&2
  as_user sh -c "rm -rf '$stage/rootfs' && mkdir -p '$stage/rootfs/bin' '$stage/rootfs/proc' \
    '$stage/rootfs/dev' '$stage/rootfs/sys' '$stage/rootfs/tmp' && cp /bin/busybox '$stage/rootfs/bin/' \
    && '$stage/rootfs/bin/busybox' --install -s '$stage/rootfs/bin'"
fi

# ---- crun: a rootless bundle, and which knob (if any) lets it start -------
as_user sh -c "mkdir -p '$stage/bundle' && cd '$stage/bundle' && crun spec --rootless"
as_user python3 - "$stage/bundle/config.json" "$stage/rootfs" <<'EOF'
import json, sys
path, rootfs = sys.argv[1:]
c = json.load(open(path))
c["root"]["path"] = rootfs
c["process"]["args"] = ["/bin/true"]
c["process"]["terminal"] = False
json.dump(c, open(path, "w"), indent=2)
EOF
edit_bundle() {  # edit_bundle DIR cgroupsPath|nocgroupns
  as_user python3 - "$1/config.json" "$2" <<'EOF'
import json, sys
path, what = sys.argv[1:]
c = json.load(open(path))
if what == "cgroupsPath":
    c["linux"]["cgroupsPath"] = ""
elif what == "nocgroupns":
    c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "cgroup"]
json.dump(c, open(path, "w"), indent=2)
EOF
}
crun_try() {  # crun_try LABEL GLOBAL_ARGS EDIT -> prints "LABEL: ok" or the error
  local label=$1 gargs=$2 edit=$3 dir=$stage/try-$RANDOM out
  as_user cp -r "$stage/bundle" "$dir"
  [ -n "$edit" ] && edit_bundle "$dir" "$edit"
  if out=$(as_user crun --root "$stage/crun-state" $gargs run --bundle "$dir" "try-$RANDOM" 2>&1); then
    echo "  crun $label: starts"
    return 0
  fi
  echo "  crun $label: fails: $(echo "$out" | tail -n1)"
  return 1
}
cgroupns=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))
print("present" if any(n["type"] == "cgroup" for n in c["linux"]["namespaces"]) else "absent")' \
  "$stage/bundle/config.json")
echo "crun $(crun --version | head -n1 | awk '{print $3}'), rootless bundle (cgroup namespace $cgroupns in 'crun spec --rootless'):"
crun_args=
crun_note=
if crun_try "as is" "" ""; then crun_args=" "
elif crun_try "--cgroup-manager=disabled" "--cgroup-manager=disabled" ""; then crun_args="--cgroup-manager=disabled"
elif crun_try "--cgroup-manager=disabled, cgroupsPath \"\"" "--cgroup-manager=disabled" cgroupsPath; then
  crun_args="--cgroup-manager=disabled"; edit_bundle "$stage/bundle" cgroupsPath
elif crun_try "--cgroup-manager=disabled, no cgroup namespace" "--cgroup-manager=disabled" nocgroupns; then
  crun_args="--cgroup-manager=disabled"; edit_bundle "$stage/bundle" nocgroupns
fi

in_ns=()
if [ -z "$crun_args" ] && [ -f /sys/fs/cgroup/unified/cgroup.controllers ]; then
  # Workaround: a private mount namespace in which the hybrid check reads an
  # empty controller list. Only crun reads that file; the others run there too
  # so that all four stay in one hyperfine run.
  : >"$stage/empty"
  in_ns=(unshare -m --propagation private sh -c
         "mount --bind '$stage/empty' /sys/fs/cgroup/unified/cgroup.controllers && exec \"\$@\"" sh)
  if "${in_ns[@]}" runuser -u "$user" -- crun --root "$stage/crun-state" --cgroup-manager=disabled \
       run --bundle "$stage/bundle" try-ns >/dev/null 2>&1; then
    crun_args="--cgroup-manager=disabled"
    crun_note="crun measured in a private mount namespace where /sys/fs/cgroup/unified/cgroup.controllers reads empty (no knob gets past its hybrid-mode check)"
    echo "  crun with that file masked in a private mount namespace: starts (used below)"
  else
    in_ns=()
    echo "  crun cannot run on this host: not measured"
  fi
fi

echo "measuring $runs runs each as $user (load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs) ..."
as_user mkdir -p "$stage/home"
"${in_ns[@]}" runuser -u "$user" -- env -i HOME="$stage/home" PATH=/usr/local/bin:/usr/bin:/bin \
  bash "$here/start-latency.sh" --as-user "$stage" "$runs" "$crun_args"

python3 - "$stage" "$runs" "$crun_note" <<'EOF'
import json, os, statistics, sys
stage, runs, note = sys.argv[1], int(sys.argv[2]), sys.argv[3]
times = {}
if not os.path.exists(f"{stage}/rss.txt"):
    sys.exit("bench: the measuring run failed; see above")
if os.path.exists(f"{stage}/times.json"):
    for r in json.load(open(f"{stage}/times.json"))["results"]:
        times[r["command"]] = [t * 1000 for t in r["times"]]
    how = "hyperfine -N, 3 warmup runs"
else:
    for line in open(f"{stage}/times.txt"):
        n, ns = line.split()
        times.setdefault(n, []).append(int(ns) / 1e6)
    how = "date +%s%N loop"
rss = dict(line.split() for line in open(f"{stage}/rss.txt"))
failed = dict(line.rstrip("\n").split(" ", 1) for line in open(f"{stage}/failed.txt") if line.strip())
mean = {n: statistics.mean(t) for n, t in times.items()}
floor, crun = mean.get("unshare"), mean.get("crun")
print(f"\nstart-to-exit of /bin/true, {runs} runs each ({how}), rootless:\n")
print(f"{'runtime':<9} {'mean ms':>8} {'median ms':>10} {'stddev':>7} {'x unshare':>10} {'x crun':>7} {'peak RSS KiB':>13}")
for n in ["unshare", "bwrap", "crun", "mrun"]:
    if n in failed:
        print(f"{n:<9} not measured: it failed: {failed[n]}")
        continue
    if n not in times:
        print(f"{n:<9} not measured: crun cannot start a container on this host")
        continue
    t = times[n]
    xc = f"{mean[n] / crun:.2f}" if crun else "-"
    xf = f"{mean[n] / floor:.2f}" if floor else "-"
    print(f"{n:<9} {mean[n]:8.2f} {statistics.median(t):10.2f} {statistics.pstdev(t):7.2f} "
          f"{xf:>10} {xc:>7} {rss.get(n, '?'):>13}")
if note:
    print(f"\nnote: {note}")
print("load average after: " + " ".join(open("/proc/loadavg").read().split()[:3]) +
      " (on a busy machine trust the medians more than the means)")
EOF
