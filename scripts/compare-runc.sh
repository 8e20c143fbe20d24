#!/usr/bin/env bash
# Writes docs/COMPARE-RUNC.md: what mrun, runc and crun each do, system call by system
# call, to start the same container from the same OCI bundle.
#
#   sudo scripts/compare-runc.sh [OUT]      (default OUT: docs/COMPARE-RUNC.md)
#   MRUN_BUILD_DIR   build dir with src/mrun (default: build)
#   MRUN_BENCH_USER  the unprivileged user for the rootless runs (default: mrun-test;
#                    made with tests/setup-user.sh)
#   MRUN_COMPARE_KEEP=1  keep the stage dir (traces, reduced steps) and print its path
#
# One bundle: a busybox rootfs from `mrun rootfs busybox` and the config.json of
# `runc spec --rootless` (rootless) or `runc spec` (rootful), changed only to run
# /bin/true without a terminal and to carry a small seccomp profile (keyctl, add_key,
# request_key -> EPERM) so that every runtime loads a filter. Each runtime runs it
# once under `strace -f -tt -y`: rootless as the unprivileged user (strace -u, so that
# newuidmap keeps its privilege under a root tracer), rootful as root.
# scripts/strace_steps.py reduces each trace to its set-up steps and renders the
# tables; the annotations are scripts/compare-runc-notes.md, hand-written against a
# real run: read them again when the tables change.
#
# crun 1.8.1 refuses to start on a hybrid cgroup host ("cgroups in hybrid mode not
# supported"); as bench/start-latency.sh does, it then runs in a private mount
# namespace in which /sys/fs/cgroup/unified/cgroup.controllers reads empty, and the
# document says so.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/bench-lib.sh
source "$here/../bench/bench-lib.sh"
bench_setup strace runc crun python3
out=${1:-$repo/docs/COMPARE-RUNC.md}

stage=$(mktemp -d /var/tmp/mrun-compare.XXXXXX)
cleanup() {
  if [ "${MRUN_COMPARE_KEEP:-0}" = 1 ]; then echo "compare-runc: kept $stage"; return; fi
  rm -rf --one-file-system "$stage"
}
trap cleanup EXIT
chmod 0755 "$stage"
install -D -m 0755 "$build/src/mrun" "$stage/bin/mrun"
chown "$user" "$stage"
uid=$(id -u "$user")
path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
as_user() { (cd "$stage" && env -i HOME="$stage/home" PATH="$path" runuser -u "$user" -- "$@"); }
install -d -o "$user" "$stage/home" "$stage/user"
mkdir -p "$stage/root" "$stage/root-home"

# The system calls compared: namespaces, mounts, id maps, identity, capabilities,
# seccomp, keyring, hostname, devices, exec. openat/openat2/write are traced so that
# /proc/PID/uid_map writes and the targets of fd-based mounts (/proc/self/fd/N) can be
# told apart; the reducer drops every other open and write.
calls=clone,clone3,fork,vfork,unshare,setns,mount,umount2,pivot_root,chroot,chdir,fchdir
calls+=,open_tree,move_mount,fsopen,fsconfig,fsmount,mount_setattr,mknod,mknodat
calls+=,execve,execveat,seccomp,prctl,capset,keyctl,add_key,sethostname,setdomainname,bpf
calls+=,setgroups,setresuid,setresgid,setuid,setgid,open,openat,openat2,write

# ---- the bundle -----------------------------------------------------------------------
make_bundle() {  # make_bundle DIR OWNER-RUN-PREFIX... : rootfs + config.json in DIR
  local dir=$1; shift
  "$@" mkdir -p "$dir"
  "$@" "$stage/bin/mrun" rootfs busybox "$dir/rootfs" >/dev/null
  "$@" runc spec $spec_args --bundle "$dir"
  "$@" python3 - "$dir/config.json" <<'EOF'
import json, sys
path = sys.argv[1]
c = json.load(open(path))
c["process"]["args"] = ["/bin/true"]
c["process"]["terminal"] = False
c["linux"]["seccomp"] = {
    "defaultAction": "SCMP_ACT_ALLOW",
    "architectures": ["SCMP_ARCH_X86_64"],
    "syscalls": [{"names": ["keyctl", "add_key", "request_key"],
                  "action": "SCMP_ACT_ERRNO", "errnoRet": 1}],
}
json.dump(c, open(path, "w"), indent=2)
EOF
}

# A private mount namespace where crun's hybrid-cgroup check reads no controllers.
bench_hybrid_ns "$stage"

# in_mode MODE CMD...: bench-lib.sh.

# trace MODE RUNTIME: runs RUNTIME on MODE's bundle once under strace
trace() {
  local mode=$1 rt=$2 dir=$stage/$1 id=cmp-$2 wrap=() who=() cmd=()
  [ "$mode" = user ] && who=(-u "$user")
  case $rt in
    mrun) cmd=("$stage/bin/mrun" --root "$dir/state-mrun" run --bundle "$dir/bundle" "$id") ;;
    runc) cmd=(runc --root "$dir/state-runc" run --bundle "$dir/bundle" "$id") ;;
    crun) cmd=(crun --root "$dir/state-crun" run --bundle "$dir/bundle" "$id") ;;
  esac
  if [ "$rt" = crun ] && ! in_mode "$mode" "${cmd[@]}" >"$dir/crun.plain" 2>&1; then
    in_mode "$mode" crun --root "$dir/state-crun" delete -f "$id" >/dev/null 2>&1 || true
    if grep -q 'hybrid mode' "$dir/crun.plain" && [ ${#hybrid_ns[@]} -gt 0 ]; then
      wrap=("${hybrid_ns[@]}")
      echo "crun ran in a private mount namespace where /sys/fs/cgroup/unified/cgroup.controllers reads empty: without it, it refuses this host (\`$(tail -n1 "$dir/crun.plain" | cut -c1-120)\`)" >>"$dir/notes"
    fi
  fi
  local rc=0
  # strace runs as root in both modes: with -u it drops to the user for the runtime, and
  # a root tracer leaves newuidmap's privilege intact (an unprivileged one would not).
  (cd "$stage" && env -i HOME="$([ "$mode" = user ] && echo "$stage/home" || echo "$stage/root-home")" \
     PATH="$path" "${wrap[@]}" strace "${who[@]}" -f -tt -y -s 256 -qq \
     -o "$dir/$rt.trace" -e trace="$calls" "${cmd[@]}") >"$dir/$rt.out" 2>&1 || rc=$?
  if [ $rc -ne 0 ]; then
    echo "$rt FAILED (exit $rc): \`$(grep -v '^$' "$dir/$rt.out" | tail -n1 | cut -c1-200)\`" >>"$dir/notes"
    echo "  $mode $rt: failed (exit $rc): $(tail -n1 "$dir/$rt.out")"
  else
    echo "  $mode $rt: ok"
  fi
  if [ "$rt" = mrun ]; then
    in_mode "$mode" "$stage/bin/mrun" --root "$dir/state-mrun" delete -f "$id" >/dev/null 2>&1 || true
  fi
  return 0
}

reduce() {  # reduce MODE RUNTIME -> MODE/RUNTIME.json
  local dir=$stage/$1 data=$stage/home/.local/share/mrun
  [ "$1" = root ] && data=/var/lib/mrun
  python3 "$here/strace_steps.py" reduce "$dir/$2.trace" \
    --sub "$dir/bundle/rootfs=\$ROOTFS" --sub "$dir/bundle=\$BUNDLE" \
    --sub "$dir/state-$2=\$STATE" --sub "$data=\$DATA" --sub "$stage=\$STAGE" >"$dir/$2.json"
}

spec_args=--rootless
make_bundle "$stage/user/bundle" as_user
spec_args=
make_bundle "$stage/root/bundle" env
echo "compare-runc: tracing (stage $stage)"
for mode in user root; do
  : >"$stage/$mode/notes"
  for rt in mrun runc crun; do
    trace "$mode" "$rt"
    [ -s "$stage/$mode/$rt.trace" ] && reduce "$mode" "$rt"
  done
done

# ---- the document -----------------------------------------------------------------
versions() {
  echo "- kernel: \`$(uname -srm)\`; $(. /etc/os-release && echo "$PRETTY_NAME"); cgroups: $(
    if [ -f /sys/fs/cgroup/cgroup.controllers ]; then echo "v2"
    elif [ -d /sys/fs/cgroup/unified ]; then echo "hybrid (cgroup2 at /sys/fs/cgroup/unified)"
    else echo "v1"; fi)"
  echo "- mrun: \`$("$stage/bin/mrun" --version | head -n1)\` ($(git -C "$repo" rev-parse --short HEAD 2>/dev/null || echo "no git"))"
  echo "- runc: \`$(runc --version | head -n1)\`, $(runc --version | grep -i '^spec' || true)"
  echo "- crun: \`$(crun --version | head -n1)\`, $(crun --version | grep -i '^spec' || true)"
  echo "- strace: \`$(strace -V | head -n1)\`; generated $(date -u +%Y-%m-%d) by \`sudo scripts/compare-runc.sh\`"
}
versions >"$stage/versions.md"
python3 - "$stage" "$here/compare-runc-notes.md" "$user" "$uid" >"$stage/meta.json" <<'EOF'
import json, os, sys
stage, notes, user, uid = sys.argv[1:]
def notes_of(mode):
    return [l.rstrip("\n") for l in open(f"{stage}/{mode}/notes") if l.strip()]
def runs(mode):
    return {rt: f"{stage}/{mode}/{rt}.json" for rt in ("mrun", "runc", "crun")
            if os.path.exists(f"{stage}/{mode}/{rt}.json")}
json.dump({
    "header": open(f"{stage}/versions.md").read().splitlines(),
    "notes": notes,
    "modes": [
        {"title": f"Rootless: as the unprivileged user {user} (uid {uid})",
         "config": "`runc spec --rootless` (user namespace mapping the caller to root, "
                   "no network namespace, /sys bound from the host)",
         "runs": runs("user"), "remarks": notes_of("user")},
        {"title": "Rootful: as root",
         "config": "`runc spec` (no user namespace, a network namespace, sysfs)",
         "runs": runs("root"), "remarks": notes_of("root")},
    ],
}, sys.stdout, indent=1)
EOF
python3 "$here/strace_steps.py" render "$stage/meta.json" >"$stage/out.md"
install -m 0644 "$stage/out.md" "$out"
echo "compare-runc: wrote $out"
