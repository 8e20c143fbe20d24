#!/bin/bash
# fakegpu-container.sh - the data path at full speed rootless: fakegpu-bench's ring
# jobs/s on the host and inside a rootless `mrun run --gpu` container, in one VM run.
#
#   bench/fakegpu-container.sh [--jobs N] [--repeat N] [--timeout SECONDS]
#
# Boots the VM (tests/vm/run-in-vm.sh: Debian's kernel, fakegpu.ko loaded, nodes
# root:fakegpu 0660 as the udev rule makes them), then runs, as the unprivileged user
# mrun-test, alternately REPEAT times: fakegpu-bench --path ring on the host, and the
# same binary bound into a rootless container (--gpu --keep-groups: the nodes and
# the host's libfakegpu; the host's libc bound read-only). Both pinned to guest CPU 0 with the engine's workqueue (as the fakegpu
# suite does: under TCG a cross-vCPU wake-up measures QEMU, not the driver). Prints
# each run and the ratio container/host of the medians (and of the best runs); writes
# $MRUN_BUILD_DIR/vm-fakegpu-container/result.json. Exits 1 if the medians' ratio is
# below 0.98.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/.." && pwd)
jobs=200000 repeat=9 timeout_s=600
while (($#)); do
    case $1 in
    --jobs) jobs=$2; shift 2 ;;
    --repeat) repeat=$2; shift 2 ;;
    --timeout) timeout_s=$2; shift 2 ;;
    *) echo "fakegpu-container: unknown option $1" >&2; exit 2 ;;
    esac
done
build=${MRUN_BUILD_DIR:-$repo/build}
for f in "$build/src/mrun" "$build/src/gpu/fakegpu-bench" "$build/src/gpu/libfakegpu.so.1"; do
    [[ -r $f ]] || { echo "fakegpu-container: $f is not built (meson compile -C $build)" >&2; exit 2; }
done
out=$build/vm-fakegpu-container
rm -rf "$out"
mkdir -p "$out"
ko=$("$repo/kmod/build.sh" "$build/kmod" | tail -n 1)

"$repo/tests/vm/run-in-vm.sh" --timeout "$timeout_s" --mem 2048 --cpus 2 --out "$out" -- \
    bash -c 'set -eu
    ko=$1 build=$2 jobs=$3 repeat=$4 user=mrun-test stage=/var/tmp/fakegpu-container
    insmod "$ko"
    getent group fakegpu >/dev/null || groupadd --system fakegpu
    usermod -aG fakegpu "$user"
    chgrp fakegpu /dev/fakegpu*; chmod 0660 /dev/fakegpu*
    rm -rf "$stage"; mkdir -p -m 0755 "$stage"/gpu "$stage"/home
    chown "$user" "$stage"/home
    cp "$build/src/mrun" "$stage"/
    g=$build/src/gpu
    cp -P "$g"/libfakegpu.so "$g"/libfakegpu.so.1 "$g"/libfakegpu.so.1.0.0 "$g"/fakegpu-bench "$g"/fakegpu-client "$g"/fakegpu-client-static "$stage"/gpu/
    chmod -R a+rX "$stage"
    "$stage"/mrun rootfs busybox "$stage"/rootfs >/dev/null; chmod 0755 "$stage"/rootfs
    echo 1 >/sys/devices/virtual/workqueue/cpumask
    as_user() { runuser -u "$user" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=$stage/home \
        MRUN_FAKEGPU_LIBDIR=$stage/gpu LD_LIBRARY_PATH=$stage/gpu "$@"; }
    bench=(fakegpu-bench --path ring --jobs "$jobs" --repeat 1 --json)
    for i in $(seq "$repeat"); do
        as_user taskset -c 0 "$stage/gpu/${bench[0]}" "${bench[@]:1}" | sed "s/^/host /" >>/mnt/out/runs.txt
        as_user taskset -c 0 "$stage"/mrun run --rm --network none --cgroups disabled --gpu --keep-groups \
            -v /usr/lib:/usr/lib:ro -v /usr/lib:/lib:ro -v /usr/lib64:/lib64:ro \
            -v "$stage/gpu/fakegpu-bench:/fakegpu-bench:ro" \
            "$stage"/rootfs /fakegpu-bench "${bench[@]:1}" | sed "s/^/container /" >>/mnt/out/runs.txt
    done
    uname -rv >/mnt/out/uname' bench "$ko" "$build" "$jobs" "$repeat" >&2

python3 - "$out/runs.txt" "$out/uname" "$out/result.json" <<'PY'
import json, re, sys
runs, uname, result = sys.argv[1:]
best = {}
for line in open(runs):
    where, _, rest = line.partition(" ")
    m = re.search(r'"jobs_per_s":([0-9.]+)', rest)
    if m:
        best.setdefault(where, []).append(float(m.group(1)))
for where in ("host", "container"):
    if where not in best:
        sys.exit(f"fakegpu-container: no {where} run in {runs}")
import statistics
host, cont = max(best["host"]), max(best["container"])
# The verdict is the medians' ratio: under TCG one run in ten is far off either way
# (an idle run saw the host at 1.14M once and 0.64-0.77M otherwise), and best-of
# ratios follow that one run, not the data path.
median_host = statistics.median(best["host"])
median_cont = statistics.median(best["container"])
ratio = median_cont / median_host
doc = {"kernel": open(uname).read().strip(), "host_jobs_per_s": best["host"],
       "container_jobs_per_s": best["container"], "best_host": host, "best_container": cont,
       "best_ratio_container_over_host": round(cont / host, 4),
       "median_host": median_host, "median_container": median_cont,
       "ratio_container_over_host": round(ratio, 4)}
json.dump(doc, open(result, "w"), indent=1)
print(json.dumps(doc, indent=1))
print(f"ring jobs/s, rootless container / host (medians of {len(best['host'])} runs each): "
      f"{ratio:.3f} (best/best {cont / host:.3f})", file=sys.stderr)
sys.exit(0 if ratio >= 0.98 else 1)
PY
