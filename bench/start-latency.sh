#!/usr/bin/env bash
# Start-to-exit latency of a rootless `mrun run --rm --network none ROOTFS /bin/true`,
# side by side in one hyperfine run with the floor `unshare -Urmpf /bin/true`, the
# floor with mrun's seven namespaces and subordinate id maps, bubblewrap, crun and
# runc (rootless bundles of the same rootfs), and mrun on crun's bundle; plus the peak
# RSS of each. All measured as the unprivileged user (default mrun-test).
#
#   bench/start-latency.sh [RUNS]        as root (default RUNS=50)
#   MRUN_BUILD_DIR   build dir with src/mrun (default: build)
#   MRUN_BENCH_USER  the unprivileged user (default: mrun-test)
#   MRUN_BENCH_ORDER=reverse  time the rows in the reverse order (one hyperfine run
#                    times its rows one after the other, and what a row leaves behind,
#                    such as ext4 inodes freed by the row before, costs the next one)
#   MRUN_BENCH_EXTRA more rows, 'NAME=COMMAND[;NAME=COMMAND...]'; in COMMAND the word
#                    mrun is the mrun under test (with the bench's --root) and ROOTFS
#                    the busybox rootfs, e.g.
#                    'mrun-single=mrun run --rm --network none --userns single ROOTFS /bin/true'
#                    (words are split on blanks; no quoting)
#
# crun 1.8.1 refuses every container on a hybrid cgroup host ("cgroups in
# hybrid mode not supported, drop all controllers from cgroupv2": it reads
# /sys/fs/cgroup/unified/cgroup.controllers before it looks at any option).
# The script tries the documented knobs first and prints what each says; if
# none works, it measures every row in a private mount namespace where that
# one file reads empty, and says so under the table. runc is tried as is, with
# `--rootless true`, and in that namespace; a runtime that cannot start is listed
# as "not measured" with the reason. mrun uses a state root of its own in the
# stage directory (--root), so no container of the user's is looked at.
# Bench is never a test: it prints numbers, it does not judge them.
set -euo pipefail

if [ "${1:-}" = "--as-user" ]; then
  # ---- the measuring half, run as the unprivileged user -------------------
  stage=$2 runs=$3 crun_args=$4 runc_args=$5 extra=$6 order=${7:-}
  cd "$stage"
  mrun="$stage/bin/mrun --root $stage/state" rootfs=$stage/rootfs
  : >"$stage/failed.txt"
  names=(unshare) cmds=("unshare -Urmpf /bin/true")
  # mrun's namespaces (user, mount, pid, uts, ipc, net, cgroup) and its id maps:
  # 0 -> the user, 1..65535 -> the first subordinate range, written by newuidmap and
  # newgidmap (util-linux 2.38: --map-auto; with -r the user is 0, as in mrun).
  if unshare --help 2>&1 | grep -q -- --map-auto; then
    names+=(unshare+maps) cmds+=("unshare -r --map-auto -mpuinCf /bin/true")
  else
    echo "unshare+maps this unshare ($(unshare --version | head -n1)) has no --map-auto" \
      "(util-linux 2.38 or later); -r plus newuidmap by hand is not one command" >>"$stage/failed.txt"
  fi
  names+=(bwrap) cmds+=("bwrap --unshare-all --ro-bind $rootfs / --proc /proc --dev /dev /bin/true")
  if [ -n "$crun_args" ]; then
    names+=(crun) cmds+=("crun --root $stage/crun-state $crun_args run --bundle $stage/bundle bench-$$")
  fi
  if [ -n "$runc_args" ]; then
    names+=(runc) cmds+=("runc --root $stage/runc-state $runc_args run --bundle $stage/runc-bundle bench-runc-$$")
  fi
  names+=(mrun) cmds+=("$mrun run --rm --network none $rootfs /bin/true")
  # The same bundle crun runs, as `runc run` users run it: created, run, deleted.
  names+=(mrun-bundle) cmds+=("$mrun run --bundle $stage/bundle bench-mrun-$$")
  if [ -n "$extra" ]; then        # MRUN_BENCH_EXTRA, checked by the root half
    IFS=';' read -ra entries <<<"$extra"
    for e in "${entries[@]}"; do
      [ -n "${e//[[:space:]]/}" ] || continue
      n=${e%%=*} n=${n//[[:space:]]/}
      read -ra words <<<"${e#*=}"
      c=
      for w in "${words[@]}"; do
        [ "$w" = mrun ] && w=$mrun
        c+="${c:+ }${w//ROOTFS/$rootfs}"
      done
      names+=("$n") cmds+=("$c")
    done
  fi
  printf '%s\n' "${names[@]}" >"$stage/names.txt"
  okn=() okc=()
  for i in "${!cmds[@]}"; do      # each must work before it is timed
    if out=$(${cmds[$i]} 2>&1); then
      okn+=("${names[$i]}") okc+=("${cmds[$i]}")
    else
      echo "${names[$i]} it failed: $(echo "$out" | tail -n1)" >>"$stage/failed.txt"
    fi
  done
  names=("${okn[@]}") cmds=("${okc[@]}")
  if [ "$order" = reverse ]; then # MRUN_BENCH_ORDER=reverse: the last row first
    rn=() rc=()
    for ((i = ${#names[@]} - 1; i >= 0; i--)); do rn+=("${names[$i]}") rc+=("${cmds[$i]}"); done
    names=("${rn[@]}") cmds=("${rc[@]}")
  fi
  for i in "${!cmds[@]}"; do echo "${names[$i]} ${cmds[$i]}"; done >"$stage/commands.txt"
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
extra=${MRUN_BENCH_EXTRA:-}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/bench-lib.sh
source "$here/bench-lib.sh"
bench_setup crun bwrap unshare /usr/bin/time python3

if [ -n "$extra" ]; then          # NAME=COMMAND entries: a bad one is a usage error
  IFS=';' read -ra entries <<<"$extra"
  seen=" unshare unshare+maps bwrap crun runc mrun "
  for e in "${entries[@]}"; do
    [ -n "${e//[[:space:]]/}" ] || continue
    n=${e%%=*} n=${n//[[:space:]]/}
    if [ "$n" = "$e" ] || [ -z "$n" ] || [ -z "${e#*=}" ]; then
      echo "bench: MRUN_BENCH_EXTRA: '$e' is not NAME=COMMAND" >&2; exit 1
    fi
    case $seen in *" $n "*) echo "bench: MRUN_BENCH_EXTRA: row name '$n' is taken" >&2; exit 1 ;; esac
    seen+="$n "
  done
fi

stage=$(mktemp -d /var/tmp/mrun-bench.XXXXXX)
trap 'rm -rf --one-file-system "$stage"' EXIT
chmod 0755 "$stage"
install -D -m 0755 "$build/src/mrun" "$stage/bin/mrun"
chown "$user" "$stage"
runuser -u "$user" -- mkdir -p "$stage/home"
as_user() { (cd "$stage" && runuser -u "$user" -- env -i HOME="$stage/home" \
  PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin "$@"); }

# The rootfs every runtime starts: made by mrun, or by hand if that fails.
if ! as_user "$stage/bin/mrun" rootfs busybox "$stage/rootfs" >/dev/null 2>&1; then
  echo "bench: mrun rootfs busybox failed; making the busybox rootfs by hand" >&2
  as_user sh -c "rm -rf '$stage/rootfs' && mkdir -p '$stage/rootfs/bin' '$stage/rootfs/proc' \
    '$stage/rootfs/dev' '$stage/rootfs/sys' '$stage/rootfs/tmp' && cp /bin/busybox '$stage/rootfs/bin/' \
    && '$stage/rootfs/bin/busybox' --install -s '$stage/rootfs/bin'"
fi

# ---- crun and runc: rootless bundles (each one's own spec --rootless) ------
make_bundle() {  # make_bundle DIR RUNTIME
  as_user sh -c "mkdir -p '$1' && cd '$1' && $2 spec --rootless"
  as_user python3 - "$1/config.json" "$stage/rootfs" <<'EOF'
import json, sys
path, rootfs = sys.argv[1:]
c = json.load(open(path))
c["root"]["path"] = rootfs
c["process"]["args"] = ["/bin/true"]
c["process"]["terminal"] = False
json.dump(c, open(path, "w"), indent=2)
EOF
}
make_bundle "$stage/bundle" crun
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
notes=()
: >"$stage/notmeasured.txt"
if crun_try "as is" "" ""; then crun_args=" "
elif crun_try "--cgroup-manager=disabled" "--cgroup-manager=disabled" ""; then crun_args="--cgroup-manager=disabled"
elif crun_try "--cgroup-manager=disabled, cgroupsPath \"\"" "--cgroup-manager=disabled" cgroupsPath; then
  crun_args="--cgroup-manager=disabled"; edit_bundle "$stage/bundle" cgroupsPath
elif crun_try "--cgroup-manager=disabled, no cgroup namespace" "--cgroup-manager=disabled" nocgroupns; then
  crun_args="--cgroup-manager=disabled"; edit_bundle "$stage/bundle" nocgroupns
fi

# in_ns: where every row is measured. Workaround for crun: a private mount namespace
# (bench_hybrid_ns) in which the hybrid check reads an empty controller list. Only crun
# reads that file; the others run there too so that all stay in one hyperfine run.
in_ns=()
if [ -z "$crun_args" ] && [ -f /sys/fs/cgroup/unified/cgroup.controllers ]; then
  bench_hybrid_ns "$stage"
  if out=$("${hybrid_ns[@]}" runuser -u "$user" -- crun --root "$stage/crun-state" --cgroup-manager=disabled \
       run --bundle "$stage/bundle" try-ns 2>&1); then
    in_ns=("${hybrid_ns[@]}")
    crun_args="--cgroup-manager=disabled"
    notes+=("every row measured in a private mount namespace where /sys/fs/cgroup/unified/cgroup.controllers reads empty (crun: no knob gets past its hybrid-mode check)")
    echo "  crun with that file masked in a private mount namespace: starts (used below)"
  else
    echo "crun cannot start a container on this host, even with the hybrid check masked: $(echo "$out" | tail -n1)" \
      >>"$stage/notmeasured.txt"
    echo "  crun cannot run on this host: not measured"
  fi
elif [ -z "$crun_args" ]; then
  echo "crun no knob lets crun start a container on this host" >>"$stage/notmeasured.txt"
fi

runc_args=
if command -v runc >/dev/null; then
  make_bundle "$stage/runc-bundle" runc
  runc_try() {  # runc_try LABEL GLOBAL_ARGS NS... -> prints the outcome; sets runc_err
    local label=$1 gargs=$2 out; shift 2
    if out=$("$@" runuser -u "$user" -- env -i HOME="$stage/home" PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin \
         runc --root "$stage/runc-state" $gargs run --bundle "$stage/runc-bundle" "try-$RANDOM" 2>&1); then
      echo "  runc $label: starts"
      return 0
    fi
    runc_err=$(echo "$out" | tail -n1)
    echo "  runc $label: fails: $runc_err"
    return 1
  }
  echo "runc $(runc --version | head -n1 | awk '{print $3}'), rootless bundle ('runc spec --rootless'):"
  where=
  [ ${#in_ns[@]} -gt 0 ] && where=", in the masked namespace"
  if runc_try "as is$where" "" "${in_ns[@]}"; then runc_args=" "
  elif runc_try "--rootless true$where" "--rootless true" "${in_ns[@]}"; then runc_args="--rootless true"
  elif [ ${#in_ns[@]} -eq 0 ] && [ -f /sys/fs/cgroup/unified/cgroup.controllers ]; then
    bench_hybrid_ns "$stage"
    if runc_try "as is, hybrid check masked" "" "${hybrid_ns[@]}"; then runc_args=" "
    elif runc_try "--rootless true, hybrid check masked" "--rootless true" "${hybrid_ns[@]}"; then
      runc_args="--rootless true"
    fi
    if [ -n "$runc_args" ]; then
      in_ns=("${hybrid_ns[@]}")
      notes+=("every row measured in a private mount namespace where /sys/fs/cgroup/unified/cgroup.controllers reads empty (runc starts only there)")
    fi
  fi
  [ -n "$runc_args" ] || echo "runc $runc_err" >>"$stage/notmeasured.txt"
  [ "$runc_args" = "--rootless true" ] && notes+=("runc measured with --rootless true (it refuses the rootless bundle without)")
else
  echo "runc not installed" >>"$stage/notmeasured.txt"
fi

echo "measuring $runs runs each as $user (load average before: $(cut -d' ' -f1-3 /proc/loadavg), $(nproc) CPUs) ..."
"${in_ns[@]}" runuser -u "$user" -- env -i HOME="$stage/home" PATH=/usr/local/bin:/usr/bin:/usr/sbin:/bin \
  bash "$here/start-latency.sh" --as-user "$stage" "$runs" "$crun_args" "$runc_args" "$extra" \
  "${MRUN_BENCH_ORDER:-}"

note=$(printf '%s\n' "${notes[@]}")
python3 - "$stage" "$runs" "$note" <<'EOF'
import json, os, statistics, sys
stage, runs, notes = sys.argv[1], int(sys.argv[2]), [n for n in sys.argv[3].split("\n") if n]
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
def pairs(path):
    return dict(l.rstrip("\n").split(" ", 1) for l in open(path) if l.strip())
rss, failed, notmeasured = pairs(f"{stage}/rss.txt"), pairs(f"{stage}/failed.txt"), pairs(f"{stage}/notmeasured.txt")
order = [l.strip() for l in open(f"{stage}/names.txt") if l.strip()]
rows = ["unshare", "unshare+maps", "bwrap", "crun", "runc", "mrun"]
rows += [n for n in order if n not in rows]
mean = {n: statistics.mean(t) for n, t in times.items()}
floor, crun = mean.get("unshare"), mean.get("crun")
w = max(len(n) for n in rows) + 1
print(f"\nstart-to-exit of /bin/true, {runs} runs each ({how}), rootless:\n")
print(f"{'runtime':<{w}} {'mean ms':>8} {'median ms':>10} {'stddev':>7} {'× crun':>7} {'× unshare':>10} {'peak RSS KiB':>13}")
for n in rows:
    if n in failed or n in notmeasured or n not in times:
        print(f"{n:<{w}} not measured: {failed.get(n) or notmeasured.get(n) or 'no times'}")
        continue
    t = times[n]
    xc = f"{mean[n] / crun:.2f}" if crun else "-"
    xf = f"{mean[n] / floor:.2f}" if floor else "-"
    print(f"{n:<{w}} {mean[n]:8.2f} {statistics.median(t):10.2f} {statistics.pstdev(t):7.2f} "
          f"{xc:>7} {xf:>10} {rss.get(n, '?'):>13}")
print("\ncommands (ratios are of the means):")
for n, c in pairs(f"{stage}/commands.txt").items():
    print(f"  {n:<{w}} {' '.join(c.replace(stage, '$STAGE').split())}")
for note in notes:
    print(f"note: {note}")
print("load average after: " + " ".join(open("/proc/loadavg").read().split()[:3]) +
      " (on a busy machine trust the medians more than the means)")
EOF
