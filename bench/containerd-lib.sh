# containerd-lib.sh - a containerd of the benchmark's own (sourced), set up as
# tests/integration/test_containerd.py sets up its daemon, from that module itself: its
# config.toml (root, state and sockets under one directory; no CRI, opt or restart
# plugin, no snapshotter this host cannot use) and its busybox OCI image builder. Rootful.
# containerd 1.6 hard-codes /run/containerd/s and /run/containerd/fifo; its runc shim
# gives the runtime --root /run/containerd/runc/NAMESPACE and the container the cgroup
# /NAMESPACE/ID, which ctrd_stop removes.
#   ctrd_start DIR [PREFIX...]  starts containerd under DIR, as PREFIX... containerd ...
#                               (e.g. bench_hybrid_ns's command); sets ctrd_sock, ctrd_pid
#   ctrd_import ROOTFS NS       imports the test's image, made of ROOTFS, into NS; sets
#                               ctrd_image (its name)
#   ctrd_stop NS...             deletes every task and container of each NS, stops
#                               containerd, removes what each NS left in
#                               /run/containerd/runc and in the cgroup hierarchies
# The caller sets repo (bench_setup does).
# shellcheck shell=bash

ctrd_pid=

# ctrd_py CODE ARG...: runs CODE with test_containerd imported as t (Debian's python3,
# which has pytest, as tests/integration/run.sh uses it).
# shellcheck disable=SC2154  # repo is the caller's
ctrd_py() {
  local code=$1; shift
  PYTHONDONTWRITEBYTECODE=1 PYTHONPATH=$repo/tests/integration /usr/bin/python3 -c "import sys
import test_containerd as t
$code" "$@"
}

ctrd_start() {
  local dir=$1 i; shift
  ctrd_sock=$dir/containerd.sock
  ctrd_py 'a = sys.argv[1:]
open(a[0], "w").write(t.CONFIG.format(root=a[1], state=a[2], address=a[3]))' \
    "$dir/config.toml" "$dir/root" "$dir/state" "$ctrd_sock"
  "$@" containerd --config "$dir/config.toml" </dev/null >"$dir/containerd.log" 2>&1 &
  ctrd_pid=$!
  for ((i = 0; i < 200; i++)); do
    ctr -a "$ctrd_sock" version >/dev/null 2>&1 && return 0
    kill -0 "$ctrd_pid" 2>/dev/null || break
    sleep 0.1
  done
  echo "bench: containerd did not start; its log:" >&2
  tail -n 20 "$dir/containerd.log" >&2
  return 1
}

ctrd_import() {
  local tar
  tar=$(mktemp "${TMPDIR:-/tmp}/mrun-bench-image.XXXXXX")
  # shellcheck disable=SC2034  # ctrd_image is the caller's
  ctrd_image=$(ctrd_py 't.oci_image_archive(sys.argv[1], sys.argv[2], t.IMAGE); print(t.IMAGE)' \
    "$1" "$tar")
  ctr -a "$ctrd_sock" -n "$2" image import --all-platforms "$tar" >/dev/null
  rm -f "$tar"
}

ctrd_stop() {
  local ns id shims i
  [ -n "$ctrd_pid" ] || return 0
  for ns in "$@"; do
    for id in $(ctr -a "$ctrd_sock" -n "$ns" task ls -q 2>/dev/null); do
      ctr -a "$ctrd_sock" -n "$ns" task kill -s SIGKILL "$id" >/dev/null 2>&1 || true
      ctr -a "$ctrd_sock" -n "$ns" task delete -f "$id" >/dev/null 2>&1 || true
    done
    for id in $(ctr -a "$ctrd_sock" -n "$ns" container ls -q 2>/dev/null); do
      ctr -a "$ctrd_sock" -n "$ns" container delete "$id" >/dev/null 2>&1 || true
    done
  done
  kill "$ctrd_pid" 2>/dev/null || true
  wait "$ctrd_pid" 2>/dev/null || true
  ctrd_pid=
  # Shims exit once their task is deleted; one that does not is this daemon's (its
  # -address is our socket): killed by pid.
  for ((i = 0; i < 50; i++)); do
    shims=$(pgrep -f -- "-address $ctrd_sock\$") || break
    sleep 0.1
  done
  # shellcheck disable=SC2086  # a list of pids
  [ -z "${shims:-}" ] || kill -9 $shims 2>/dev/null || true
  for ns in "$@"; do
    rm -rf --one-file-system "/run/containerd/runc/$ns"
    find /sys/fs/cgroup/*/"$ns" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  return 0
}
