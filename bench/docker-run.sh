#!/usr/bin/env bash
# `docker run --rm IMAGE /bin/true` with `--runtime mrun` and `--runtime runc` (dockerd's
# default), side by side in one hyperfine run, printed as the ratio mrun/runc. Rootful:
# a dockerd of the benchmark's own, started as tests/integration/test_docker.py starts
# it. What one run times is the whole engine path: the client, dockerd (the container
# record, the default bridge network and its setkey prestart hook), containerd, a new
# shim, the runtime's create, start, state and delete.
#
#   bench/docker-run.sh [RUNS]       as root (default RUNS=10)
#   MRUN_BUILD_DIR   build dir with src/mrun (default: build)
#
# dockerd runs in a mount and network namespace of its own (`unshare -m -n`, private
# propagation), so that its bridge, iptables rules and mounts never touch the host, with
# its data-root, exec-root, pidfile, socket and daemon.json (a "runtimes" entry naming
# mrun) in the stage dir, a cgroup parent of its own (removed at the end), and the image
# imported from `mrun rootfs busybox` (`docker import`: no registry). crun is not
# compared: 1.8.1 refuses this hybrid cgroup host (bench_hybrid_ns is not tried here).
# Bench is never a test: it prints numbers, it does not judge them.
set -euo pipefail

runs=${1:-10}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/bench-lib.sh
source "$here/bench-lib.sh"
bench_setup dockerd runc hyperfine python3 unshare
# Debian's client, of the daemon's own version (as test_docker.py: a newer client on
# PATH negotiates an API the 20.10 daemon does not speak for every verb).
docker=/usr/bin/docker
[ -x "$docker" ] || { echo "bench: $docker missing: run scripts/install-deps.sh" >&2; exit 1; }

stage=$(mktemp -d /tmp/mrun-bench-dkr.XXXXXX)  # short: dockerd's socket path is limited
parent=mrun-bench-docker-$$
image=mrun-bench/busybox:latest
dockerd_pid=
export DOCKER_HOST=unix://$stage/docker.sock DOCKER_CONFIG=$stage/client
remove_cgroup_parent() {  # Docker makes /sys/fs/cgroup/*/PARENT; the runtimes only below it
  local dir
  for dir in /sys/fs/cgroup/"$parent" /sys/fs/cgroup/*/"$parent"; do
    [ -d "$dir" ] && find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null
  done
  return 0
}
stop_dockerd() {
  [ -n "$dockerd_pid" ] || return 0
  local ids i
  ids=$("$docker" ps -aq 2>/dev/null) || true
  # shellcheck disable=SC2086  # a list of ids
  [ -z "$ids" ] || "$docker" rm -f $ids >/dev/null 2>&1 || true
  kill "$dockerd_pid" 2>/dev/null || true
  for ((i = 0; i < 300; i++)); do kill -0 "$dockerd_pid" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$dockerd_pid" 2>/dev/null || true
  wait "$dockerd_pid" 2>/dev/null || true
  dockerd_pid=
}
cleanup() {
  stop_dockerd
  remove_cgroup_parent
  rm -rf --one-file-system "$stage"
}
trap cleanup EXIT
chmod 0755 "$stage"
install -D -m 0755 "$build/src/mrun" "$stage/bin/mrun"
"$stage/bin/mrun" rootfs busybox "$stage/rootfs" >/dev/null
tar -C "$stage/rootfs" -cf "$stage/busybox.tar" .

python3 - "$stage" "$parent" <<'PY'
import json, sys
stage, parent = sys.argv[1:]
json.dump({"runtimes": {"mrun": {"path": f"{stage}/bin/mrun"}},
           "data-root": f"{stage}/data", "exec-root": f"{stage}/exec",
           "pidfile": f"{stage}/docker.pid", "hosts": [f"unix://{stage}/docker.sock"],
           "storage-driver": "overlay2", "cgroup-parent": parent},
          open(f"{stage}/daemon.json", "w"))
PY
# shellcheck disable=SC2016  # $0 and $1 are that sh's
unshare -m -n --propagation private sh -c 'ip link set lo up && exec "$0" --config-file "$1"' \
  "$(command -v dockerd)" "$stage/daemon.json" </dev/null >"$stage/dockerd.log" 2>&1 &
dockerd_pid=$!
for ((i = 0; i < 300; i++)); do
  "$docker" version >/dev/null 2>&1 && break
  kill -0 "$dockerd_pid" 2>/dev/null || i=300
  sleep 0.1
done
"$docker" version >/dev/null 2>&1 ||
  { echo "bench: dockerd did not start; its log:" >&2; tail -n 20 "$stage/dockerd.log" >&2; exit 1; }
"$docker" import --change 'CMD ["sh"]' "$stage/busybox.tar" "$image" >/dev/null

docker_run() { echo "$docker run --rm --runtime $1 $image /bin/true"; }
names=() cmds=()
: >"$stage/failed.txt"
for rt in runc mrun; do            # each must work before it is timed
  rc=0
  read -ra cmd <<<"$(docker_run "$rt")"  # split on blanks, as hyperfine -N splits it
  out=$("${cmd[@]}" 2>&1 </dev/null) || rc=$?
  if ((rc == 0)); then
    names+=("$rt") cmds+=("$(docker_run "$rt")")
  else
    echo "$rt exit $rc: $(echo "$out" | tail -n1)" >>"$stage/failed.txt"
  fi
done
echo "docker $("$docker" version -f '{{.Server.Version}}'), runc $(runc --version | awk 'NR==1 {print $3}')," \
  "measuring $runs runs each as root (load average before: $(cut -d' ' -f1-3 /proc/loadavg)," \
  "$(nproc) CPUs) ..."
if ((${#cmds[@]})); then
  args=()
  for i in "${!cmds[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
  hyperfine -N --style basic --warmup 2 --runs "$runs" --export-json "$stage/times.json" \
    "${args[@]}" >"$stage/hyperfine.log" 2>&1 || { cat "$stage/hyperfine.log" >&2; exit 1; }
fi

python3 - "$stage" "$runs" <<'EOF'
import json, os, statistics, sys
stage, runs = sys.argv[1], int(sys.argv[2])
times = {}
if os.path.exists(f"{stage}/times.json"):
    for r in json.load(open(f"{stage}/times.json"))["results"]:
        times[r["command"]] = [t * 1000 for t in r["times"]]
failed = dict(line.rstrip("\n").split(" ", 1) for line in open(f"{stage}/failed.txt") if line.strip())
mean = {n: statistics.mean(t) for n, t in times.items()}
print(f"\ndocker run --rm IMAGE /bin/true, {runs} runs each (hyperfine -N, 2 warmup runs), rootful:\n")
print(f"{'runtime':<8} {'mean ms':>8} {'median ms':>10} {'stddev':>7} {'x runc':>7}")
for n in ["runc", "mrun"]:
    if n in failed:
        print(f"{n:<8} not measured: docker run failed: {failed[n]}")
        continue
    t = times[n]
    xr = f"{mean[n] / mean['runc']:.2f}" if "runc" in mean else "-"
    print(f"{n:<8} {mean[n]:8.2f} {statistics.median(t):10.2f} {statistics.pstdev(t):7.2f} {xr:>7}")
print("load average after: " + " ".join(open("/proc/loadavg").read().split()[:3]) +
      " (on a busy machine trust the medians more than the means)")
EOF
