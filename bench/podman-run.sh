#!/usr/bin/env bash
# `podman run --rm` of the same busybox image with `--runtime mrun`, `--runtime crun`
# (podman's default) and `--runtime runc`, side by side in one hyperfine run, as the
# unprivileged user (default mrun-test); printed as the ratios mrun/crun and mrun/runc.
# What it measures is the whole engine path: podman, conmon, the runtime's
# create/start/state/delete verbs.
#
#   bench/podman-run.sh [RUNS]       as root (default RUNS=10)
#   MRUN_BUILD_DIR   build dir with src/mrun (default: build)
#   MRUN_BENCH_USER  the unprivileged user (default: mrun-test)
#
# Podman gets a storage of its own in the stage dir (vfs driver, an image imported
# from `mrun rootfs busybox` with `podman import`: no registry), --network none and
# --cgroups disabled (rootless podman cannot use cgroup v1, and this host's cgroup2 has
# no controllers). crun 1.8.1 refuses every container on a hybrid host before it reads
# any option (see README.md, start-latency.sh): both runtimes are measured in a
# private mount namespace where /sys/fs/cgroup/unified/cgroup.controllers reads empty.
# runc, which takes this host as it is, is the reference that needs no such mask (it
# reads nothing of that file, so it runs the same in the namespace).
# Bench is never a test: it prints numbers, it does not judge them.
set -euo pipefail

runs=${1:-10}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/bench-lib.sh
source "$here/bench-lib.sh"
bench_setup podman crun runc hyperfine python3

stage=$(mktemp -d /var/tmp/mrun-bench-podman.XXXXXX)
cleanup() {  # podman's pause process (its user namespace) outlives every podman call
  local pid
  pid=$(cat "$stage/home/run/libpod/tmp/pause.pid" 2>/dev/null) && kill "$pid" 2>/dev/null
  rm -rf --one-file-system "$stage"
}
trap cleanup EXIT
chmod 0755 "$stage"
install -D -m 0755 "$build/src/mrun" "$stage/bin/mrun"
install -d -m 0700 -o "$user" "$stage/home" "$stage/home/run"
chown "$user" "$stage"
home=$stage/home
env_user=(env -i HOME="$home" XDG_RUNTIME_DIR="$home/run" XDG_CONFIG_HOME="$home/.config"
          XDG_DATA_HOME="$home/.local/share" PATH=/usr/local/bin:/usr/bin:/bin)
as_user() { (cd "$stage" && runuser -u "$user" -- "${env_user[@]}" "$@"); }
# The private mount namespace crun needs here (made by root, then dropping to the user).
: >"$stage/empty"
in_ns=()
[ -f /sys/fs/cgroup/unified/cgroup.controllers ] &&
  in_ns=(unshare -m --propagation private sh -c
         "mount --bind '$stage/empty' /sys/fs/cgroup/unified/cgroup.controllers && exec \"\$@\"" sh)

as_user mkdir -p "$home/.config/containers"
as_user sh -c "cat >'$home/.config/containers/storage.conf'" <<EOT
[storage]
driver = "vfs"
graphroot = "$home/storage"
runroot = "$home/runroot"
EOT
as_user sh -c "cat >'$home/.config/containers/containers.conf'" <<EOT
[engine]
cgroup_manager = "cgroupfs"
events_logger = "file"
runtime_supports_nocgroup = ["crun", "runc", "mrun"]
[engine.runtimes]
mrun = ["$stage/bin/mrun"]
crun = ["$(command -v crun)"]
runc = ["$(command -v runc)"]
EOT
as_user "$stage/bin/mrun" rootfs busybox "$stage/rootfs" >/dev/null
as_user tar -C "$stage/rootfs" -cf "$stage/busybox.tar" .
# Inside the masked namespace: the first podman call starts the pause process whose
# namespaces every later podman call joins.
"${in_ns[@]}" runuser -u "$user" -- "${env_user[@]}" podman import -q "$stage/busybox.tar" \
  localhost/mrun-bench-busybox >/dev/null 2>&1

# runc 1.1 has no --cgroup-manager, which podman passes for --cgroups disabled: runc runs
# with podman's default instead, a cgroup path that rootless runc on cgroup v1 leaves unmade.
cgroups() { [ "$1" = runc ] || echo "--cgroups disabled"; }
podman_run() { echo "podman --runtime $1 run --rm --network none $(cgroups "$1") localhost/mrun-bench-busybox /bin/true"; }
names=() cmds=()
: >"$stage/failed.txt"
for rt in crun runc mrun; do           # each must work before it is timed
  rc=0
  out=$("${in_ns[@]}" runuser -u "$user" -- "${env_user[@]}" $(podman_run "$rt") 2>&1) || rc=$?
  if ((rc == 0)); then
    names+=("$rt") cmds+=("$(podman_run "$rt")")
  else
    echo "$rt exit $rc: $(echo "$out" | grep -v 'is not a shared mount' | tail -n1)" >>"$stage/failed.txt"
  fi
done
echo "podman $(podman --version | awk '{print $3}'), measuring $runs runs each as $user" \
  "(load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs) ..."
if ((${#cmds[@]})); then
  args=()
  for i in "${!cmds[@]}"; do args+=(-n "${names[$i]}" "${cmds[$i]}"); done
  "${in_ns[@]}" runuser -u "$user" -- "${env_user[@]}" hyperfine -N --style basic --warmup 2 \
    --runs "$runs" --export-json "$stage/times.json" "${args[@]}" >"$stage/hyperfine.log" 2>&1 ||
    { cat "$stage/hyperfine.log" >&2; exit 1; }
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
print(f"\npodman run --rm /bin/true, {runs} runs each (hyperfine -N, 2 warmup runs), rootless:\n")
print(f"{'runtime':<8} {'mean ms':>8} {'median ms':>10} {'stddev':>7} {'x crun':>7} {'x runc':>7}")
for n in ["crun", "runc", "mrun"]:
    if n in failed:
        print(f"{n:<8} not measured: podman run failed: {failed[n]}")
        continue
    t = times[n]
    xc = f"{mean[n] / mean['crun']:.2f}" if "crun" in mean else "-"
    xr = f"{mean[n] / mean['runc']:.2f}" if "runc" in mean else "-"
    print(f"{n:<8} {mean[n]:8.2f} {statistics.median(t):10.2f} {statistics.pstdev(t):7.2f} "
          f"{xc:>7} {xr:>7}")
print("load average after: " + " ".join(open("/proc/loadavg").read().split()[:3]))
EOF
