#!/bin/bash
# cgroup.sh - the cgroup v2 limits suite. Runs INSIDE the VM guest, as root
# (tests/vm/cgroup-suite.sh boots it with tests/vm/run-in-vm.sh).
#
#   cgroup.sh --mrun PATH --hog PATH
#
# Delegates a subtree to mrun-test as systemd's Delegate=yes does (the
# directory and its cgroup.procs, cgroup.subtree_control and cgroup.threads
# chowned to the user; the controllers enabled in the parent, which the
# harness did at the root), then runs mrun as that user from inside the
# subtree, as the same user without one, and as root: --memory with the hog
# (OOM kill, exit 137, oom_kill counted, leaf removed), --pids-limit with a
# fork bomb, --cpus, the container's own view of /sys/fs/cgroup, `mrun stats`,
# an OCI bundle's linux.resources in the leaf's files and `mrun update` changing
# them, the same limits from `su -l` and `runuser -l` login shells that ignore
# SIGCHLD, and the errors when nothing is delegated. Prints TAP (docs/DEVELOPING.md)
# and copies it to $MRUN_VM_OUT/cgroup.tap; exits 1 if any test failed.
#
# Containers use --network none (no helper needed) and --overlay none: these
# tests are about cgroups, and the guest root is an overlay over 9p, where a
# native overlay upper lacks user xattrs and fuse-overlayfs would add a
# second or so per container under TCG. The rootfs is never written
# (--read-only).
set -u

mrun_src='' hog_src=''
while (($#)); do
    case $1 in
    --mrun) mrun_src=$2 ;;
    --hog) hog_src=$2 ;;
    *) echo "cgroup.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done

out=${MRUN_VM_OUT:-/tmp}
tap=$out/cgroup.tap
: >"$tap"
user=mrun-test
cg=/sys/fs/cgroup
deleg=$cg/user-$user # the subtree delegated to the user
stage=/tmp/cgroup-test # world-readable copies: mrun-test cannot enter /root
n=0 failed=0

# ---------------------------------------------------------------- TAP
source "$(dirname "${BASH_SOURCE[0]}")/tap-lib.sh"
finish() {
    emit "1..$n"
    exit $((failed > 0))
}

# ---------------------------------------------------------------- who runs mrun
M=$stage/mrun ROOTFS=$stage/rootfs
common=(--network none --overlay none --read-only)
# runuser_in CGROUP CMD...: CMD as mrun-test, started from CGROUP.
runuser_in() {
    local where=$1
    shift
    # shellcheck disable=SC2016
    sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$where" \
        runuser -u "$user" -- env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin HOME=/tmp/cg-home \
        XDG_RUNTIME_DIR=/tmp/cg-run XDG_DATA_HOME=/tmp/cg-data "$@"
}
as_delegated() { (cd /tmp && runuser_in "$deleg/shell" "$@"); }
# as_delegated_own CMD...: the same, with nothing of root's left in the subtree:
# setpriv executes the command itself where runuser stays behind as a root-owned
# parent, and the kernel enables cpuset only above processes the user may reschedule
# (systemd/systemd#18293).
as_delegated_own() {
    # shellcheck disable=SC2016
    (cd /tmp && sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$deleg/shell" \
        setpriv --reuid="$user" --regid="$user" --init-groups env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin \
        HOME=/tmp/cg-home XDG_RUNTIME_DIR=/tmp/cg-run XDG_DATA_HOME=/tmp/cg-data "$@")
}
# as_plain CMD...: as mrun-test from the root cgroup: nothing delegated.
as_plain() { (cd /tmp && runuser_in "$cg" "$@"); }
as_root() { (cd /tmp && "$@"); }

oom_kills() { awk '$1 == "oom_kill" {print $2}' "$1/memory.events" 2>/dev/null || echo 0; }
leaves() { find "$1" -mindepth 1 -maxdepth 1 -type d -name 'mrun-*' 2>/dev/null; }

# ---------------------------------------------------------------- setup
diag "guest kernel $(uname -r), $(nproc) cpus, $(awk '/MemTotal/ {print $2}' /proc/meminfo) kB"
for f in "$mrun_src" "$hog_src"; do
    [[ -n $f && -r $f ]] || { not_ok "test inputs present" "missing: '$f'"; finish; }
done
id "$user" >/dev/null 2>&1 || { not_ok "user $user exists in the guest"; finish; }
rm -rf "$stage" /tmp/cg-home /tmp/cg-run /tmp/cg-data
mkdir -m 0755 "$stage"
cp "$mrun_src" "$stage/mrun"
if out_rootfs=$("$M" rootfs busybox "$ROOTFS" 2>&1) && cp "$hog_src" "$ROOTFS/bin/hog"; then
    chmod -R a+rX "$stage"
    ok "staged mrun, hog and a busybox rootfs in $stage"
else
    not_ok "staged mrun, hog and a busybox rootfs in $stage" "$out_rootfs"
    finish
fi
install -d -m 0700 -o "$user" /tmp/cg-home /tmp/cg-run /tmp/cg-data

# Delegation as systemd's Delegate=yes does it: the parent (the root) enables
# the controllers; the user gets the directory and the three files that let it
# make children, move its processes and enable controllers for them. Its own
# processes live in a child ("shell"), as the kernel refuses controllers in a
# cgroup that holds processes.
if mkdir -p "$deleg/shell" &&
    chown "$user" "$deleg" "$deleg/cgroup.procs" "$deleg/cgroup.subtree_control" "$deleg/cgroup.threads" &&
    chown -R "$user" "$deleg/shell" &&
    grep -qw memory "$deleg/cgroup.controllers" && grep -qw pids "$deleg/cgroup.controllers" &&
    grep -qw cpu "$deleg/cgroup.controllers"; then
    ok "delegated $deleg to $user (controllers: $(cat "$deleg/cgroup.controllers"))"
else
    not_ok "delegated $deleg to $user" "$(ls -l "$deleg" 2>&1)" "$(cat "$cg/cgroup.subtree_control")"
    finish
fi

# The OOM killer's report includes a stack dump ("Call Trace"), which the
# harness rightly treats as kernel trouble. Keep it off the console while the
# expected OOM kills happen, check that log ourselves for real trouble, then
# clear the ring buffer so the harness scans only what follows.
read -r console_level _ </proc/sys/kernel/printk
dmesg -n 1

# ---------------------------------------------------------------- per user
# suite WHO RUNNER PARENT: the limit tests as WHO (run through RUNNER), whose
# leaves go in PARENT.
suite() {
    local who=$1 runner=$2 parent=$3 name output rc kills_before kills_after last start
    name=oom-$who
    kills_before=$(oom_kills "$parent")
    [[ -d $parent ]] || kills_before=0
    start=$SECONDS
    output=$("$runner" "$M" run --rm --name "$name" "${common[@]}" --memory 100M "$ROOTFS" /bin/hog 200 2>&1)
    rc=$?
    last=$(grep -oE '^touched [0-9]+' <<<"$output" | tail -n 1 | awk '{print $2}')
    if [[ $rc == 137 && -n $last && $last -ge 50 && $last -lt 100 ]] && grep -q "OOM killer" <<<"$output" &&
        ! grep -q '^done' <<<"$output"; then
        ok "$who: --memory 100M: hog 200 is OOM-killed after touching $last MB, exit 137, mrun says so ($((SECONDS - start))s)"
    else
        not_ok "$who: --memory 100M: hog 200 is OOM-killed near 100 MB with exit 137" "exit $rc, last 'touched' $last" "$(tail -n 5 <<<"$output")"
    fi
    # The same with fuse-overlayfs serving the rootfs (the fallback where native
    # overlay is refused): the daemon stays outside the leaf, the OOM path is the same.
    output=$("$runner" "$M" run --rm --name "$name-fuse" --network none --overlay fuse --memory 100M \
        "$ROOTFS" /bin/hog 200 2>&1)
    rc=$?
    if [[ $rc == 137 ]] && grep -q "OOM killer" <<<"$output" && ! grep -q '^done' <<<"$output"; then
        ok "$who: --overlay fuse --memory 100M: OOM-killed, exit 137, mrun says so"
    else
        not_ok "$who: --overlay fuse --memory 100M: OOM-killed with exit 137" "exit $rc" "$(tail -n 5 <<<"$output")"
    fi
    kills_after=$(oom_kills "$parent")
    if ((kills_after > kills_before)); then
        ok "$who: oom_kill counted in memory.events ($kills_before -> $kills_after in $parent)"
    else
        not_ok "$who: oom_kill counted in memory.events" "$parent: $kills_before -> $kills_after"
    fi
    if [[ -z $(leaves "$parent") ]]; then
        ok "$who: leaf cgroup removed after the OOM kill"
    else
        not_ok "$who: leaf cgroup removed after the OOM kill" "$(leaves "$parent")"
    fi
    output=$("$runner" "$M" run --rm "${common[@]}" "$ROOTFS" /bin/echo alive 2>&1)
    avail=$(awk '/MemAvailable/ {print int($2 / 1024)}' /proc/meminfo)
    if [[ $output == alive ]] && ((avail > 300)); then
        ok "$who: guest healthy after the OOM kill (a container runs; ${avail} MB available)"
    else
        not_ok "$who: guest healthy after the OOM kill" "output: $output" "MemAvailable ${avail} MB"
    fi

    output=$("$runner" "$M" run --rm "${common[@]}" --pids-limit 20 "$ROOTFS" /bin/hog --forks 3 2>&1)
    rc=$?
    if [[ $rc == 0 ]] && grep -qx 'pids.current 20' <<<"$output" && grep -qx 'pids.max 20' <<<"$output" &&
        grep -qE '^fork failures [1-9]' <<<"$output"; then
        ok "$who: --pids-limit 20 holds a fork bomb at 20 ($(grep '^fork failures' <<<"$output"))"
    else
        not_ok "$who: --pids-limit 20 holds a fork bomb at 20" "exit $rc" "$output"
    fi

    # shellcheck disable=SC2016
    output=$("$runner" "$M" run --rm "${common[@]}" --cpus 0.5 "$ROOTFS" /bin/sh -c \
        'cat /sys/fs/cgroup/cpu.max; cat /proc/self/cgroup; ls /sys/fs/cgroup | grep -cE "^(mrun-|user-)"; grep " /sys/fs/cgroup ro," /proc/self/mountinfo | grep -c " - cgroup2 "' 2>&1)
    rc=$?
    if [[ $rc == 0 && $(sed -n 1p <<<"$output") == "50000 100000" ]]; then
        ok "$who: --cpus 0.5 gives cpu.max \"50000 100000\""
    else
        not_ok "$who: --cpus 0.5 gives cpu.max \"50000 100000\"" "exit $rc" "$output"
    fi
    if [[ $rc == 0 && $(sed -n 2p <<<"$output") == "0::/" && $(sed -n 3p <<<"$output") == 0 && $(sed -n 4p <<<"$output") == 1 ]]; then
        ok "$who: the container's cgroup namespace is rooted at its leaf; /sys/fs/cgroup (cgroup2, ro) shows only it"
    else
        not_ok "$who: the container's cgroup namespace is rooted at its leaf; /sys/fs/cgroup shows only it" "$output"
    fi

    # The default overlay with a limit: the storage is on the guest's tmpfs; native
    # overlayfs, or fuse-overlayfs where the kernel refuses it (diagnostic says which).
    output=$("$runner" "$M" --debug run --rm --network none --memory 64M "$ROOTFS" /bin/sh -c 'echo w >/written && cat /written' 2>&1)
    rc=$?
    if [[ $rc == 0 ]] && grep -qx w <<<"$output"; then
        ok "$who: --overlay auto with --memory: the container writes its rootfs ($(grep -o 'overlay: [a-z]*' <<<"$output" | tail -n 1))"
    else
        not_ok "$who: --overlay auto with --memory: the container writes its rootfs" "exit $rc" "$output"
    fi

    if output=$("$runner" "$M" run -d --name "stats-$who" "${common[@]}" --memory 64M --pids-limit 50 "$ROOTFS" /bin/sleep 30 2>&1); then
        output=$("$runner" "$M" stats "stats-$who" 2>&1)
        json=$("$runner" "$M" stats --format json "stats-$who" 2>&1)
        if grep -qE "stats-$who +[0-9.]+[KMG]?i?B / 64\.0MiB +[0-9]+ / 50 " <<<"$output" &&
            grep -q '"memory_max": 67108864' <<<"$json" && grep -qE '"pids_current": [1-9]' <<<"$json"; then
            ok "$who: mrun stats shows memory.current/max, pids and CPU time"
        else
            not_ok "$who: mrun stats shows memory.current/max, pids and CPU time" "$output" "$json"
        fi
    else
        not_ok "$who: mrun stats shows memory.current/max, pids and CPU time" "run -d failed: $output"
    fi
    # events --stats (mrun-oci(1)): runc's JSON, from the leaf's files.
    json=$("$runner" "$M" events --stats "stats-$who" 2>&1)
    if grep -q '"type":"stats"' <<<"$json" && grep -q '"limit":67108864' <<<"$json" &&
        grep -q '"pids":{"current":[1-9][0-9]*,"limit":50}' <<<"$json" &&
        grep -qE '"usage":\{"kernel":[0-9]+,"total":[1-9]' <<<"$json"; then
        ok "$who: events --stats prints runc's stats JSON (memory limit, pids, cpu usage)"
    else
        not_ok "$who: events --stats prints runc's stats JSON (memory limit, pids, cpu usage)" "$json"
    fi
    # events (streaming): an oom event when a process of the container is OOM-killed; the
    # container lives on (its init is not the one killed) and events goes on until it stops.
    if "$runner" "$M" run -d --name "events-$who" "${common[@]}" --memory 64M "$ROOTFS" /bin/sh -c \
        'sleep 1; /bin/hog 200; sleep 2' >/dev/null 2>&1; then
        json=$("$runner" timeout 30 "$M" events --interval 1s "events-$who" 2>&1)
        if grep -q '{"id":"events-'"$who"'","type":"oom"}' <<<"$json" && grep -q '"type":"stats"' <<<"$json"; then
            ok "$who: events streams stats and an oom event, and ends with the container"
        else
            not_ok "$who: events streams stats and an oom event, and ends with the container" "$json"
        fi
    else
        not_ok "$who: events streams stats and an oom event" "run -d failed"
    fi
    "$runner" "$M" delete -f "events-$who" >/dev/null 2>&1
    # pause/resume (mrun-oci(1)): the cgroup v2 freezer of the leaf; ps reads cgroup.procs.
    local leaf=$parent/mrun-stats-$who pids
    pids=$("$runner" "$M" ps --format json "stats-$who" 2>&1)
    if "$runner" "$M" pause "stats-$who" >/dev/null 2>&1 && [[ $(cat "$leaf/cgroup.freeze" 2>/dev/null) == 1 ]] &&
        "$runner" "$M" state "stats-$who" 2>/dev/null | grep -q '"status": "paused"' &&
        "$runner" "$M" resume "stats-$who" >/dev/null 2>&1 && [[ $(cat "$leaf/cgroup.freeze" 2>/dev/null) == 0 ]] &&
        "$runner" "$M" state "stats-$who" 2>/dev/null | grep -q '"status": "running"' &&
        grep -qE '^\[[0-9]+\]$' <<<"$pids"; then
        ok "$who: pause freezes the leaf (state paused), resume thaws it; ps lists cgroup.procs"
    else
        not_ok "$who: pause freezes the leaf (state paused), resume thaws it; ps lists cgroup.procs" \
            "ps: $pids" "freeze: $(cat "$leaf/cgroup.freeze" 2>&1)" "$("$runner" "$M" pause "stats-$who" 2>&1)"
    fi
    "$runner" "$M" delete -f "stats-$who" >/dev/null 2>&1
    if [[ -z $(leaves "$parent") ]]; then
        ok "$who: no leaf left after all runs"
    else
        not_ok "$who: no leaf left after all runs" "$(leaves "$parent")"
    fi
}

suite rootless as_delegated "$deleg"
suite rootful as_root "$cg/mrun"

# ---------------------------------------------------------------- from a login shell
# The way a user starts mrun, not the way this harness does: `su -l` and `runuser -l`
# (PAM, a login's environment: HOME from passwd, no XDG_RUNTIME_DIR), in the delegated
# subtree, from a shell that ran `trap '' CHLD` first, as job runners and some daemons
# leave it (an ignored SIGCHLD once made every run exit 125 here).
# as_login SU CMD...: CMD as mrun-test through SU (su or runuser).
as_login() {
    local su=$1 cmd
    shift
    printf -v cmd '%q ' "$@"
    # shellcheck disable=SC2016
    (cd /tmp && sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$deleg/shell" \
        "$su" -l "$user" -c "cd /tmp && trap '' CHLD && $cmd")
}
login_suite() {
    local su=$1 output rc
    output=$(as_login "$su" "$M" run --rm "${common[@]}" "$ROOTFS" /bin/sh -c 'exit 7' 2>&1)
    rc=$?
    if [[ $rc == 7 && -z $output ]]; then
        ok "$su -l, SIGCHLD ignored: run returns the container's exit status (7)"
    else
        not_ok "$su -l, SIGCHLD ignored: run returns the container's exit status (7)" "exit $rc" "$output"
    fi
    for overlay in none fuse; do
        output=$(as_login "$su" "$M" run --rm --network none --overlay "$overlay" --memory 100M \
            "$ROOTFS" /bin/hog 200 2>&1)
        rc=$?
        if [[ $rc == 137 ]] && grep -q "OOM killer" <<<"$output"; then
            ok "$su -l, SIGCHLD ignored: --overlay $overlay --memory 100M: OOM-killed, exit 137"
        else
            not_ok "$su -l, SIGCHLD ignored: --overlay $overlay --memory 100M: OOM-killed, exit 137" \
                "exit $rc" "$(tail -n 5 <<<"$output")"
        fi
    done
    output=$(as_login "$su" "$M" run -d --name "login-$su" "${common[@]}" "$ROOTFS" /bin/sleep 60 2>&1 &&
        as_login "$su" "$M" exec "login-$su" /bin/sh -c 'exit 4' 2>&1)
    rc=$?
    as_login "$su" "$M" delete -f "login-$su" >/dev/null 2>&1
    if [[ $rc == 4 ]]; then
        ok "$su -l, SIGCHLD ignored: exec returns the process's exit status (4)"
    else
        not_ok "$su -l, SIGCHLD ignored: exec returns the process's exit status (4)" "exit $rc" "$output"
    fi
    if [[ -z $(leaves "$deleg") ]]; then
        ok "$su -l: no leaf left after the login-shell runs"
    else
        not_ok "$su -l: no leaf left after the login-shell runs" "$(leaves "$deleg")"
    fi
}
login_suite su
login_suite runuser

# ---------------------------------------------------------------- OCI linux.resources, update
# A real block device for io.max: a loop device over a file (its numbers from sysfs).
loop_mm=''
if truncate -s 16M /tmp/cg-disk.img && loopdev=$(losetup -f --show /tmp/cg-disk.img 2>/dev/null); then
    loop_mm=$(cat "/sys/class/block/${loopdev#/dev/}/dev")
fi
huge=no
[[ -d /sys/kernel/mm/hugepages/hugepages-2048kB ]] && grep -qw hugetlb "$cg/cgroup.controllers" && huge=yes
diag "OCI resources: loop device ${loopdev:-none} (${loop_mm:-no io.max check}), hugetlb 2MB: $huge"

# oci_bundle RUNNER DIR SPEC_FLAG ARGS_JSON RESOURCES_PY: `mrun spec` as the runner (the
# rootless spec maps its own uid), pointed at the busybox rootfs, read-only, with the
# process ARGS_JSON and linux.resources set by the Python expression RESOURCES_PY.
oci_bundle() {
    local runner=$1 dir=$2 spec_flag=$3 args=$4 resources=$5
    rm -rf "$dir"
    install -d -m 0755 -o "$([[ $runner == as_root ]] && echo root || echo "$user")" "$dir"
    "$runner" "$M" spec ${spec_flag:+"$spec_flag"} --bundle "$dir" >/dev/null 2>&1 || return 1
    python3 - "$dir/config.json" "$ROOTFS" "$args" "$loop_mm" "$huge" "$resources" <<'PY'
import json, sys
path, rootfs, args, loop, huge, resources = sys.argv[1:7]
c = json.load(open(path))
c["root"] = {"path": rootfs, "readonly": True}
c["process"]["terminal"] = False
c["process"]["args"] = json.loads(args)
r = c["linux"].setdefault("resources", {})
r.update(eval(resources))
json.dump(c, open(path, "w"), indent=1)
PY
}

# The full set: every conversion whose file the guest has.
full_resources='dict({
  "memory": {"limit": 67108864, "reservation": 16777216, "swap": 100663296},
  "cpu": {"shares": 2048, "quota": 30000, "period": 100000, "burst": 1000, "cpus": "0", "mems": "0"},
  "pids": {"limit": 40},
  "unified": {"memory.high": "62914560"},
}, **({"blockIO": {"weight": 200,
     "throttleReadBpsDevice": [{"major": int(loop.split(":")[0]), "minor": int(loop.split(":")[1]), "rate": 1048576}],
     "throttleWriteIOPSDevice": [{"major": int(loop.split(":")[0]), "minor": int(loop.split(":")[1]), "rate": 120}]}}
    if loop else {}),
   **({"hugepageLimits": [{"pageSize": "2MB", "limit": 4194304}]} if huge == "yes" else {}))'

# leaf_has LEAF FILE WANT...: FILE of LEAF reads one of WANT (first line); else says what.
leaf_has() {
    local leaf=$1 file=$2 got
    shift 2
    got=$(head -n 1 "$leaf/$file" 2>&1)
    for want in "$@"; do [[ $got == "$want" ]] && return 0; done
    echo "$file: \"$got\", want \"$*\""
    return 1
}

# oci_suite WHO RUNNER PARENT SPEC_FLAG: an OCI bundle's linux.resources land in the
# leaf's files; `mrun update` changes a running container's.
oci_suite() {
    local who=$1 runner=$2 parent=$3 spec_flag=$4 id=oci-$1 dir=$stage/bundle-$1 leaf rc bad=()
    leaf=$parent/mrun-$id
    if ! oci_bundle "$runner" "$dir" "$spec_flag" '["/bin/sleep", "300"]' "$full_resources"; then
        not_ok "$who: OCI bundle with linux.resources" "mrun spec or the edit failed"
        return
    fi
    # create holds the container before exec, its leaf made and written; its stdio
    # are the caller's (runc's pass-through), so they go to a file, not a pipe.
    "$runner" "$M" create --bundle "$dir" "$id" >"$stage/create-$who.log" 2>&1 </dev/null
    rc=$?
    if [[ $rc != 0 || ! -d $leaf ]]; then
        not_ok "$who: create makes the leaf with linux.resources" "exit $rc" "$(cat "$stage/create-$who.log")"
        "$runner" "$M" delete -f "$id" >/dev/null 2>&1
        return
    fi
    leaf_has "$leaf" cpu.weight 174 || bad+=("shares 2048")
    leaf_has "$leaf" cpu.max "30000 100000" || bad+=("quota/period")
    leaf_has "$leaf" cpu.max.burst 1000 || bad+=("burst")
    leaf_has "$leaf" cpuset.cpus 0 || bad+=("cpus")
    leaf_has "$leaf" cpuset.mems 0 || bad+=("mems")
    leaf_has "$leaf" memory.max 67108864 || bad+=("memory.limit")
    leaf_has "$leaf" memory.low 16777216 || bad+=("memory.reservation")
    leaf_has "$leaf" memory.swap.max 33554432 || bad+=("memory.swap: 96M - 64M")
    leaf_has "$leaf" memory.high 62914560 || bad+=("unified memory.high")
    leaf_has "$leaf" pids.max 40 || bad+=("pids.limit")
    if [[ -n $loop_mm ]]; then
        grep -qx "$loop_mm rbps=1048576 wbps=max riops=max wiops=120" "$leaf/io.max" ||
            bad+=("io.max: $(cat "$leaf/io.max" 2>&1)")
        if [[ -e $leaf/io.bfq.weight ]]; then
            leaf_has "$leaf" io.bfq.weight "default 200" || bad+=("blkio weight (bfq)")
        else
            leaf_has "$leaf" io.weight "default 1920" || bad+=("blkio weight 200 -> io.weight 1920")
        fi
    fi
    local huge_note=''
    if [[ $huge == yes ]]; then
        leaf_has "$leaf" hugetlb.2MB.max 4194304 || bad+=("hugetlb")
        huge_note=', hugetlb.2MB.max'
    fi
    if ((${#bad[@]} == 0)); then
        ok "$who: create writes linux.resources to the leaf (cpu.weight 174, cpu.max, burst, cpuset, memory.max/low/high, memory.swap.max = swap - limit, pids.max${loop_mm:+, io.max $loop_mm, io weight}${huge_note})"
    else
        not_ok "$who: create writes linux.resources to the leaf" "${bad[@]}"
    fi

    # update, on the running container: flags and --resources -.
    bad=()
    "$runner" "$M" start "$id" >/dev/null 2>&1 || bad+=("start failed")
    output=$("$runner" "$M" update --memory 128M --memory-swap 160M --cpu-quota 50000 "$id" 2>&1) ||
        bad+=("update flags: $output")
    leaf_has "$leaf" memory.max 134217728 || bad+=("memory.max after update")
    leaf_has "$leaf" memory.swap.max 33554432 || bad+=("memory.swap.max after update")
    leaf_has "$leaf" cpu.max "50000 100000" || bad+=("cpu.max after update (period kept)")
    output=$(echo '{"pids": {"limit": 50}, "cpu": {"shares": 512}, "devices": []}' |
        "$runner" "$M" update --resources - "$id" 2>&1) || bad+=("update --resources -: $output")
    leaf_has "$leaf" pids.max 50 || bad+=("pids.max after update")
    leaf_has "$leaf" cpu.weight 59 || bad+=("cpu.weight after update (512 -> 59)")
    if ((${#bad[@]} == 0)); then
        ok "$who: update changes the running container's memory.max, memory.swap.max, cpu.max (period kept), pids.max and cpu.weight"
    else
        not_ok "$who: update changes the running container's limits" "${bad[@]}"
    fi
    output=$("$runner" "$M" update --memory 300M "$id" 2>&1)
    rc=$?
    if [[ $rc == 125 ]] && grep -q "memory+swap total" <<<"$output" && leaf_has "$leaf" memory.max 134217728 >/dev/null; then
        ok "$who: update --memory above today's memory+swap total is a 125, nothing changed (as runc)"
    else
        not_ok "$who: update --memory above today's memory+swap total is a 125" "exit $rc" "$output"
    fi
    "$runner" "$M" kill "$id" KILL >/dev/null 2>&1
    "$runner" "$M" delete -f "$id" >/dev/null 2>&1
    if [[ ! -d $leaf ]]; then
        ok "$who: the OCI container's leaf is removed by delete"
    else
        not_ok "$who: the OCI container's leaf is removed by delete" "$leaf"
    fi
}

oci_suite rootless as_delegated_own "$deleg" --rootless
oci_suite rootful as_root "$cg/mrun" ""
[[ -n $loop_mm ]] && losetup -d "$loopdev"

# ---------------------------------------------------------------- not delegated
before=$(find "$cg" -type d | sort)
output=$(as_plain "$M" run --name nodeleg "${common[@]}" --memory 100M "$ROOTFS" /bin/true 2>&1)
rc=$?
if [[ $rc == 125 ]] && grep -q 'no cgroup v2 subtree is delegated' <<<"$output" && grep -q 'Delegate=yes' <<<"$output" &&
    grep -q 'chown' <<<"$output"; then
    ok "not delegated: --memory fails with 125 and says how to delegate"
else
    not_ok "not delegated: --memory fails with 125 and says how to delegate" "exit $rc" "$output"
fi
after=$(find "$cg" -type d | sort)
listed=$(as_plain "$M" list -q 2>&1)
left=$(find /tmp/cg-data /tmp/cg-run -name '*nodeleg*' 2>&1)
if [[ $before == "$after" && -z $listed && -z $left ]]; then
    ok "not delegated: nothing left behind (no cgroup, no state, no storage)"
else
    not_ok "not delegated: nothing left behind" "list: $listed" "files: $left" "$(diff <(echo "$before") <(echo "$after"))"
fi
output=$(as_plain "$M" --debug run --rm "${common[@]}" "$ROOTFS" /bin/echo fine 2>&1)
rc=$?
if [[ $rc == 0 ]] && grep -qx fine <<<"$output" && grep -q 'debug: no cgroup: no cgroup v2 subtree is delegated' <<<"$output"; then
    ok "not delegated, no limits: runs without a cgroup and says so under --debug"
else
    not_ok "not delegated, no limits: runs without a cgroup and says so under --debug" "exit $rc" "$output"
fi
# ctr's and CRI's cpu.shares 1024 asks for nothing beyond a fresh cgroup's default:
# accepted where there is no cgroup; 2048 is not.
if oci_bundle as_plain "$stage/bundle-plain" --rootless '["/bin/echo", "ran"]' '{"cpu": {"shares": 1024}}'; then
    output=$(as_plain "$M" --debug run --bundle "$stage/bundle-plain" plain-1024 2>&1)
    rc=$?
    as_plain "$M" delete -f plain-1024 >/dev/null 2>&1
    if [[ $rc == 0 ]] && grep -qx ran <<<"$output" && grep -q 'cpu.shares (cpu.weight 100).*accepted without a cgroup' <<<"$output"; then
        ok "not delegated: a bundle with cpu.shares 1024 runs without a cgroup, said under --debug"
    else
        not_ok "not delegated: a bundle with cpu.shares 1024 runs without a cgroup" "exit $rc" "$output"
    fi
else
    not_ok "not delegated: a bundle with cpu.shares 1024 runs without a cgroup" "bundle not made"
fi
if oci_bundle as_plain "$stage/bundle-plain" --rootless '["/bin/true"]' '{"cpu": {"shares": 2048}}'; then
    output=$(as_plain "$M" run --bundle "$stage/bundle-plain" plain-2048 2>&1)
    rc=$?
    as_plain "$M" delete -f plain-2048 >/dev/null 2>&1
    if [[ $rc == 125 ]] && grep -q 'linux.resources.cpu.shares needs a cgroup' <<<"$output"; then
        ok "not delegated: a bundle with cpu.shares 2048 is a 125 naming linux.resources.cpu.shares"
    else
        not_ok "not delegated: a bundle with cpu.shares 2048 is a 125 naming the field" "exit $rc" "$output"
    fi
fi
output=$(as_plain "$M" run --rm "${common[@]}" --cgroups=disabled --pids-limit 5 "$ROOTFS" /bin/true 2>&1)
if [[ $? == 125 ]] && grep -q 'cgroups=disabled' <<<"$output"; then
    ok "--cgroups=disabled with a limit is refused (125)"
else
    not_ok "--cgroups=disabled with a limit is refused (125)" "$output"
fi

# ---------------------------------------------------------------- kernel log
trouble=$(dmesg | grep -aE 'Oops|BUG:|WARNING:|general protection fault|refcount_t|KASAN')
ooms=$(dmesg | grep -ac 'Memory cgroup out of memory: Killed process .*(hog)')
dmesg >"$out/cgroup-dmesg.txt"
if [[ -z $trouble ]] && ((ooms >= 2)); then
    ok "kernel log: $ooms memory-cgroup OOM kills of the hog and no other trouble"
else
    not_ok "kernel log: memory-cgroup OOM kills of the hog and no other trouble" "OOM kills: $ooms" "$trouble"
fi
dmesg -C
dmesg -n "$console_level"
finish
