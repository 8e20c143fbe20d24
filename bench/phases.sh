#!/usr/bin/env bash
# Where a rootless `mrun run --rm --network none ROOTFS /bin/true` spends its time: an
# instrumented build (meson -Dphase_trace=true, in build-phases/ unless
# MRUN_PHASES_BUILD_DIR says otherwise) writes a timestamp at each phase boundary
# (MRUN_PHASE in src/: the monitor's and the container's setup), RUNS starts are made,
# and the median of each step (from one boundary to the next, in time order) is
# printed with its share of the median total. Bench is never a test.
#
#   bench/phases.sh [RUNS] [-- MRUN-RUN-OPTIONS...]     as root (default RUNS=30)
#   bench/phases.sh exec [RUNS]                           `mrun exec CT /bin/true` instead
#   e.g. bench/phases.sh 30 -- --userns private
#
# "spawn" is from just before the bench's fork+exec of mrun to mrun's main(): the
# process's start (exec, dynamic linking, static constructors) plus the bench's own
# fork. Each timestamp costs about a microsecond (one write).
set -euo pipefail

runs=30 verb=run
if [ "${1:-}" = exec ]; then verb=exec; shift; fi
if [ $# -gt 0 ] && [ "$1" != "--" ]; then runs=$1; shift; fi
[ "${1:-}" = "--" ] && shift
opts=("$@")
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
user=${MRUN_BENCH_USER:-mrun-test}
build=${MRUN_PHASES_BUILD_DIR:-$repo/build-phases}
[ "$(id -u)" -eq 0 ] || { echo "bench: run as root (it measures as $user)" >&2; exit 1; }
command -v python3 >/dev/null || { echo "bench: python3 missing" >&2; exit 1; }
if [ ! -f "$build/build.ninja" ]; then
  echo "bench: configuring the instrumented build in $build (-Dphase_trace=true)" >&2
  meson setup "$build" -Dphase_trace=true -Dtests=false >/dev/null
fi
grep -q "phase_trace.*true\|-DMRUN_PHASE_TRACE" "$build/build.ninja" ||
  { echo "bench: $build is not configured with -Dphase_trace=true" >&2; exit 1; }
ninja -C "$build" src/mrun >/dev/null
bash "$repo/tests/setup-user.sh" "$user" >/dev/null

stage=$(mktemp -d /var/tmp/mrun-phases.XXXXXX)
cleanup() {
  # exec: the container it ran in. The holder of the stage's shared user namespace
  # exits by itself once its record goes with the stage.
  if [ -d "$stage/state/phases-ct" ]; then
    as_user "$stage/bin/mrun" --root "$stage/state" delete -f phases-ct >/dev/null 2>&1 || true
  fi
  rm -rf --one-file-system "$stage"
}
trap cleanup EXIT
chmod 0755 "$stage"
install -D -m 0755 "$build/src/mrun" "$stage/bin/mrun"
chown "$user" "$stage"
as_user() { (cd "$stage" && runuser -u "$user" -- env -i HOME="$stage/home" \
  PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin "$@"); }
as_user mkdir -p "$stage/home" "$stage/traces"
as_user "$stage/bin/mrun" rootfs busybox "$stage/rootfs" >/dev/null

# The measuring loop runs as the user, in Python: it takes the time right before its
# fork+exec of mrun, on the clock mrun's timestamps use (CLOCK_MONOTONIC).
as_user python3 - "$stage" "$runs" "$verb" "${opts[@]+"${opts[@]}"}" <<'PY'
import os, subprocess, sys, time
stage, runs, verb, opts = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4:]
mrun = f"{stage}/bin/mrun"
env = {"HOME": f"{stage}/home", "PATH": "/usr/local/bin:/usr/bin:/usr/sbin:/bin"}
if verb == "exec":
    subprocess.run([mrun, "--root", f"{stage}/state", "run", "-d", "--name", "phases-ct",
                    "--network", "none", f"{stage}/rootfs", "/bin/sleep", "1000"], env=env,
                   check=True, stdout=subprocess.DEVNULL)
    cmd = [mrun, "--root", f"{stage}/state", "exec", "phases-ct", "/bin/true"]
else:
    cmd = [mrun, "--root", f"{stage}/state", "run", "--rm", "--network", "none", *opts,
           f"{stage}/rootfs", "/bin/true"]
for i in range(3):  # warm-up: caches, and the shared user namespace's holder
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL)
for i in range(runs):
    trace = f"{stage}/traces/{i}.txt"
    e = dict(env, MRUN_PHASE_FILE=trace)
    t0 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    subprocess.run(cmd, env=e, check=True, stdout=subprocess.DEVNULL)
    t1 = time.clock_gettime_ns(time.CLOCK_MONOTONIC)
    with open(trace, "a") as f:
        f.write(f"bench:before-spawn {t0} 0\nbench:after-wait {t1} 0\n")
PY

what="mrun run --rm --network none ${opts[*]+"${opts[*]} "}ROOTFS /bin/true"
[ "$verb" = exec ] && what="mrun exec CT /bin/true"
python3 - "$stage/traces" "$runs" "$what" <<'PY'
import glob, statistics, sys
traces, runs, what = sys.argv[1], int(sys.argv[2]), sys.argv[3]
steps, totals, order = {}, [], []
for path in sorted(glob.glob(f"{traces}/*.txt")):
    points = []
    for line in open(path):
        name, ns, _pid = line.split()
        points.append((int(ns), name))
    points.sort()
    totals.append((points[-1][0] - points[0][0]) / 1e6)
    for (a_ns, a), (b_ns, b) in zip(points, points[1:]):
        key = f"{a} -> {b}"
        if key not in steps:
            order.append(key)
        steps.setdefault(key, []).append((b_ns - a_ns) / 1e6)
total = statistics.median(totals)
print(f"{what}: {len(totals)} runs, median total {total:.2f} ms (fork+exec to wait's return)")
print(f"{'step':<44} {'median ms':>9} {'share':>6} {'runs':>5}")
for key in order:
    v = steps[key]
    m = statistics.median(v)
    print(f"{key:<44} {m:9.3f} {100 * m / total:5.1f}% {len(v):5d}")
PY
