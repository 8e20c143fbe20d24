#!/usr/bin/env bash
# Latency of exec'ing /bin/true into an already running rootless container (started
# once, running `sleep 1000`), side by side in one hyperfine run: the floor `nsenter`
# into the container's seven namespaces, `crun exec`, `runc exec` and `mrun exec`,
# each into its own container of the same busybox rootfs; printed as ratios to crun
# exec (and to the floor). All measured as the unprivileged user (default mrun-test).
#
#   bench/exec-latency.sh [RUNS]         as root (default RUNS=50)
#   MRUN_BUILD_DIR   build dir with src/mrun (default: build)
#   MRUN_BENCH_USER  the unprivileged user (default: mrun-test)
#   MRUN_BENCH_OTHER another mrun binary (the build before a change), timed beside
#                    this one in the same run as the row mrun-other, in a container
#                    and state root of its own
#
# crun 1.8.1 refuses every container on a hybrid cgroup host; every runtime call of
# the script therefore runs in a private mount namespace where
# /sys/fs/cgroup/unified/cgroup.controllers reads empty (bench_hybrid_ns in
# bench-lib.sh; only crun reads that file). mrun uses a state root of its own in the
# stage directory (--root). Every container the script started is deleted at exit, also
# when it fails or is interrupted. Bench is never a test: it prints numbers, it does
# not judge them.
set -euo pipefail

runs=${1:-50}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/bench-lib.sh
source "$here/bench-lib.sh"
bench_setup crun nsenter hyperfine python3

stage=$(mktemp -d /var/tmp/mrun-bench-exec.XXXXXX)
path=/usr/local/bin:/usr/bin:/usr/sbin:/bin
# as_user CMD...: as the user, in the stage, in the masked namespace (if the host needs one)
as_user() { (cd "$stage" && "${hybrid_ns[@]}" runuser -u "$user" -- env -i HOME="$stage/home" PATH="$path" "$@"); }
mrun="$stage/bin/mrun --root $stage/state" rootfs=$stage/rootfs
other=${MRUN_BENCH_OTHER:-} mrun_other="$stage/bin/mrun-other --root $stage/state-other"
if [ -n "$other" ] && [ ! -x "$other" ]; then
  echo "bench: MRUN_BENCH_OTHER=$other is not an executable mrun" >&2; exit 1
fi
runc_args='' hybrid_ns=()

# cleanup: delete every container this script started (each runtime's delete -f), then
# SIGKILL any of their init processes still there (pids recorded at start, checked to
# be our `sleep 1000`), then remove the stage. Runs at exit, whatever the exit.
cleanup() {
  set +e
  as_user crun --root "$stage/crun-state" delete -f bench-crun >/dev/null 2>&1
  if command -v runc >/dev/null; then
    # shellcheck disable=SC2086  # runc_args: zero or two words
    as_user runc --root "$stage/runc-state" $runc_args delete -f bench-runc >/dev/null 2>&1
  fi
  # shellcheck disable=SC2086  # $mrun: the binary and its --root
  as_user $mrun delete -f bench-mrun >/dev/null 2>&1
  # shellcheck disable=SC2086
  [ -z "$other" ] || as_user $mrun_other delete -f bench-mrun-other >/dev/null 2>&1
  if [ -f "$stage/pids" ]; then
    local name pid left=()
    while read -r name pid; do
      if [ -r "/proc/$pid/cmdline" ] && [ "$(tr '\0' ' ' <"/proc/$pid/cmdline")" = "sleep 1000 " ] \
         && [ "$(stat -c %U "/proc/$pid")" = "$user" ]; then
        kill -KILL "$pid" 2>/dev/null && left+=("$name:$pid")
      fi
    done <"$stage/pids"
    [ ${#left[@]} -eq 0 ] || echo "bench: killed what delete -f left running: ${left[*]}" >&2
  fi
  rm -rf --one-file-system "$stage"
}
trap cleanup EXIT
trap 'exit 130' INT TERM
chmod 0755 "$stage"
install -D -m 0755 "$build/src/mrun" "$stage/bin/mrun"
[ -z "$other" ] || install -D -m 0755 "$other" "$stage/bin/mrun-other"
chown "$user" "$stage"
runuser -u "$user" -- mkdir -p "$stage/home"
bench_hybrid_ns "$stage"
as_user "$stage/bin/mrun" rootfs busybox "$rootfs" >/dev/null
for rt in crun runc; do           # rootless bundles, each runtime's own spec --rootless
  command -v "$rt" >/dev/null || continue
  as_user sh -c "mkdir -p '$stage/$rt-bundle' && cd '$stage/$rt-bundle' && $rt spec --rootless"
  as_user python3 - "$stage/$rt-bundle/config.json" "$rootfs" <<'EOF'
import json, sys
path, rootfs = sys.argv[1:]
c = json.load(open(path))
c["root"]["path"] = rootfs
c["process"]["args"] = ["sleep", "1000"]
c["process"]["terminal"] = False
json.dump(c, open(path, "w"), indent=2)
EOF
done

# ---- the three containers, started once -------------------------------------------
: >"$stage/failed.txt" ; : >"$stage/pids"
started() {  # started NAME: records the init pid of NAME's container (JSON on stdin)
  local pid
  pid=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["pid"])')
  echo "$1 $pid" >>"$stage/pids"
}
# A detached runtime's container keeps its stdio: never from a $(...) pipe.
start_one() {  # start_one NAME STATE_CMD... -- START_CMD...
  local name=$1 err=$stage/start-$1.err; shift
  local state=()
  while [ "$1" != -- ]; do state+=("$1"); shift; done; shift
  if as_user "$@" </dev/null >/dev/null 2>"$err"; then
    as_user "${state[@]}" | started "$name"
    return 0
  fi
  echo "$name could not start its container: $(tail -n1 "$err")" >>"$stage/failed.txt"
  return 1
}
echo "starting one container per runtime (sleep 1000) as $user ..."
start_one crun crun --root "$stage/crun-state" state bench-crun -- \
  crun --root "$stage/crun-state" run -d --bundle "$stage/crun-bundle" bench-crun || true
if command -v runc >/dev/null; then
  if ! start_one runc runc --root "$stage/runc-state" state bench-runc -- \
         runc --root "$stage/runc-state" run -d --bundle "$stage/runc-bundle" bench-runc; then
    as_user runc --root "$stage/runc-state" delete -f bench-runc >/dev/null 2>&1 || true
    sed -i '/^runc /d' "$stage/failed.txt"
    runc_args="--rootless true"
    # shellcheck disable=SC2086
    start_one runc runc --root "$stage/runc-state" $runc_args state bench-runc -- \
      runc --root "$stage/runc-state" $runc_args run -d --bundle "$stage/runc-bundle" bench-runc || true
  fi
else
  echo "runc not installed" >>"$stage/failed.txt"
fi
# shellcheck disable=SC2086  # $mrun: the binary and its --root
start_one mrun $mrun state bench-mrun -- \
  $mrun run -d --name bench-mrun --network none "$rootfs" sleep 1000 || true
if [ -n "$other" ]; then
  # shellcheck disable=SC2086
  start_one mrun-other $mrun_other state bench-mrun-other -- \
    $mrun_other run -d --name bench-mrun-other --network none "$rootfs" sleep 1000 || true
fi

# ---- what is timed: each must work once first ------------------------------------
names=() cmds=()
target=
for n in mrun crun runc; do       # nsenter's target: mrun's container, else another
  target=$(awk -v n="$n" '$1 == n { print $2 }' "$stage/pids")
  [ -n "$target" ] && { target_of=$n; break; }
done
if [ -n "$target" ]; then
  # the namespaces the container has of its own (nsenter cannot setns into the host's)
  flags='' joined=''
  for ns in user:U mnt:m uts:u ipc:i net:n pid:p cgroup:C; do
    if [ "$(readlink "/proc/$target/ns/${ns%%:*}")" != "$(readlink "/proc/$$/ns/${ns%%:*}")" ]; then
      flags+=" -${ns#*:}" joined+="${joined:+,}${ns%%:*}"
    fi
  done
  names+=(nsenter) cmds+=("nsenter -t $target$flags --preserve-credentials /bin/true")
else
  echo "nsenter no container is running to enter" >>"$stage/failed.txt"
fi
grep -q '^crun ' "$stage/failed.txt" || { names+=(crun) cmds+=("crun --root $stage/crun-state exec bench-crun /bin/true"); }
if ! grep -q '^runc ' "$stage/failed.txt"; then
  names+=(runc) cmds+=("runc --root $stage/runc-state${runc_args:+ $runc_args} exec bench-runc /bin/true")
fi
grep -q '^mrun ' "$stage/failed.txt" || { names+=(mrun) cmds+=("$mrun exec bench-mrun /bin/true"); }
if [ -n "$other" ] && ! grep -q '^mrun-other ' "$stage/failed.txt"; then
  names+=(mrun-other) cmds+=("$mrun_other exec bench-mrun-other /bin/true")
fi
okn=() okc=()
for i in "${!cmds[@]}"; do
  # shellcheck disable=SC2086
  if out=$(as_user ${cmds[$i]} 2>&1 </dev/null); then
    okn+=("${names[$i]}") okc+=("${cmds[$i]}")
  else
    echo "${names[$i]} it failed: $(echo "$out" | tail -n1)" >>"$stage/failed.txt"
  fi
done
args=()
for i in "${!okc[@]}"; do
  args+=(-n "${okn[$i]}" "${okc[$i]}")
  echo "${okn[$i]} ${okc[$i]}"
done >"$stage/commands.txt"
echo "measuring $runs runs each as $user (load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs) ..."
if [ ${#args[@]} -gt 0 ]; then
  as_user hyperfine -N --style basic --warmup 3 --runs "$runs" --export-json "$stage/times.json" \
    "${args[@]}" >"$stage/hyperfine.log" 2>&1 || cat "$stage/hyperfine.log" >&2
fi

python3 - "$stage" "$runs" "${target_of:-}" "${#hybrid_ns[@]}" "$runc_args" "${joined:-}" <<'EOF'
import json, os, statistics, sys
stage, runs, target_of, masked, runc_args, joined = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4] != "0", sys.argv[5], sys.argv[6]
def pairs(path):
    return dict(l.rstrip("\n").split(" ", 1) for l in open(path) if l.strip())
failed, cmds = pairs(f"{stage}/failed.txt"), pairs(f"{stage}/commands.txt")
times = {}
if os.path.exists(f"{stage}/times.json"):
    for r in json.load(open(f"{stage}/times.json"))["results"]:
        times[r["command"]] = [t * 1000 for t in r["times"]]
mean = {n: statistics.mean(t) for n, t in times.items()}
floor, crun = mean.get("nsenter"), mean.get("crun")
print(f"\nexec of /bin/true into a running container (sleep 1000), {runs} runs each "
      f"(hyperfine -N, 3 warmup runs), rootless:\n")
print(f"{'runtime':<10} {'mean ms':>8} {'median ms':>10} {'stddev':>7} {'× crun':>7} {'× nsenter':>10}")
for n in ("nsenter", "crun", "runc", "mrun") + (("mrun-other",) if "mrun-other" in cmds or "mrun-other" in failed else ()):
    if n not in times:
        print(f"{n:<10} not measured: {failed.get(n, 'no times (see hyperfine above)')}")
        continue
    t = times[n]
    xc = f"{mean[n] / crun:.2f}" if crun else "-"
    xf = f"{mean[n] / floor:.2f}" if floor else "-"
    print(f"{n:<10} {mean[n]:8.2f} {statistics.median(t):10.2f} {statistics.pstdev(t):7.2f} {xc:>7} {xf:>10}")
print("\ncommands (ratios are of the means):")
for n, c in cmds.items():
    print(f"  {n:<10} {' '.join(c.replace(stage, '$STAGE').split())}")
if target_of:
    print(f"note: nsenter enters {target_of}'s container (its init process; namespaces {joined})")
if runc_args:
    print(f"note: runc needed {runc_args} to start the rootless bundle")
if masked:
    print("note: every runtime call ran in a private mount namespace where "
          "/sys/fs/cgroup/unified/cgroup.controllers reads empty (crun refuses a hybrid "
          "cgroup host otherwise)")
print("load average after: " + " ".join(open("/proc/loadavg").read().split()[:3]) +
      " (on a busy machine trust the medians more than the means)")
EOF
