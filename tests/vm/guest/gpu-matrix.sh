#!/bin/bash
# gpu-matrix.sh - `mrun gpu matrix` and `mrun gpu doctor`. Runs INSIDE the
# VM guest, as root (tests/vm/gpu-matrix-suite.sh boots it with tests/vm/run-in-vm.sh).
#
#   gpu-matrix.sh --ko PATH --mrun PATH --helper PATH --gpu-dir DIR [--markdown FILE]
#
# Sets up what the matrix needs: fakegpu.ko with two devices, the udev rule emulated
# (root:fakegpu 0660), mrun-test in group fakegpu, a setuid copy of the helper and a
# policy allowing group fakegpu, a cgroup delegated to mrun-test (the matrix runs from
# it). Then `mrun gpu matrix --json`: one test per row, asserting the step and errno
# of the run and of its fix run against the table below (not the program's own
# expectations), and the nodes restored afterwards. Then doctor on the healthy setup
# (exit 0, also with --container) and on each broken one, asserting the failing rung's
# exit status and fix. With --markdown FILE it only writes the matrix's Markdown to
# FILE (scripts/gen-gpu-doc.sh). TAP to stdout and $MRUN_VM_OUT/vm-gpu-matrix.tap.
set -u

ko='' mrun='' helper='' gpu_dir='' markdown=''
while (($#)); do
    case $1 in
    --ko) ko=$2 ;;
    --mrun) mrun=$2 ;;
    --helper) helper=$2 ;;
    --gpu-dir) gpu_dir=$2 ;;
    --markdown) markdown=$2 ;;
    *) echo "gpu-matrix.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done

out=${MRUN_VM_OUT:-/tmp}
tap=$out/vm-gpu-matrix.tap
: >"$tap"
user=mrun-test
nosub=mrun-nosub # a user without /etc/subuid entries (doctor's subordinate-ids rung)
stage=/var/tmp/gpu-matrix
cg=/sys/fs/cgroup
deleg=$cg/user-$user
n=0 failed=0

source "$(dirname "${BASH_SOURCE[0]}")/tap-lib.sh"
finish() { tap_finish; }

path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
M=$stage/bin/mrun
H=$stage/sbin/mrun-gpu-helper
# as USER CMD...: CMD as USER from the delegated cgroup, with the helper and the driver.
as() {
    local who=$1
    shift
    # shellcheck disable=SC2016
    (cd /tmp && sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$deleg/shell" \
        runuser -u "$who" -- env -i PATH=$path HOME=$stage/home LANG=C.UTF-8 \
        MRUN_FAKEGPU_LIBDIR=$stage/gpu MRUN_GPU_HELPER=$H "$@")
}
# as_root_delegated CMD...: root, started from the delegated cgroup (the matrix's
# rootless rows inherit it).
as_root_delegated() {
    # shellcheck disable=SC2016
    (cd /tmp && sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$deleg/shell" \
        env MRUN_FAKEGPU_LIBDIR=$stage/gpu MRUN_GPU_HELPER=$H "$@")
}
nodes_state() { stat -c '%n %U:%G %a' /dev/fakegpu0 /dev/fakegpu1 /dev/fakegpuctl; }
udev_rule() { chgrp fakegpu /dev/fakegpu*; chmod 0660 /dev/fakegpu*; }
write_policy() { printf '%s\n' "$@" >/etc/mrun/gpu-helper.conf; chmod 0644 /etc/mrun/gpu-helper.conf; }

# ---------------------------------------------------------------- setup
diag "guest kernel: $(uname -rv)"
for f in "$ko" "$mrun" "$helper" "$gpu_dir/libfakegpu.so.1" "$gpu_dir/fakegpu-client" "$gpu_dir/fakegpu-client-static"; do
    [[ -n $f && -r $f ]] || { not_ok "test inputs present" "missing: '$f'"; finish; }
done
id "$user" >/dev/null 2>&1 || { not_ok "user $user exists in the guest"; finish; }
rm -rf "$stage"
mkdir -m 0755 -p "$stage"/bin "$stage"/gpu "$stage"/sbin
install -d -m 0755 -o "$user" "$stage"/home
cp "$mrun" "$stage"/bin/
cp -P "$gpu_dir"/libfakegpu.so* "$gpu_dir"/fakegpu-client "$gpu_dir"/fakegpu-client-static "$stage"/gpu/
# Row 13's libfakegpu built for a newer driver (src/gpu/fakegpu-skew).
mkdir -p "$stage"/gpu/fakegpu-skew &&
    cp -P "$gpu_dir"/fakegpu-skew/libfakegpu.so.1 "$gpu_dir"/fakegpu-skew/libfakegpu.so.1.0.0 "$stage"/gpu/fakegpu-skew/
chmod -R a+rX "$stage"
install -m 4755 -o root -g root "$helper" "$H"
lsmod | grep -qw fakegpu && rmmod fakegpu
check "insmod fakegpu.ko ndev=2" insmod "$ko" ndev=2
getent group fakegpu >/dev/null || groupadd --system fakegpu
usermod -aG fakegpu "$user"
id "$nosub" >/dev/null 2>&1 || useradd --no-create-home --home-dir /nonexistent -G fakegpu "$nosub"
# useradd gives new users subordinate ranges: take them away.
sed -i "/^$nosub:/d" /etc/subuid /etc/subgid
udev_rule
mkdir -p /etc/mrun
write_policy '/dev/fakegpu* group:fakegpu'
if mkdir -p "$deleg/shell" &&
    chown "$user" "$deleg" "$deleg/cgroup.procs" "$deleg/cgroup.subtree_control" "$deleg/cgroup.threads" &&
    chown -R "$user" "$deleg/shell"; then
    ok "delegated $deleg to $user"
else
    not_ok "delegated $deleg to $user"
    finish
fi
export MRUN_FAKEGPU_LIBDIR=$stage/gpu MRUN_GPU_HELPER=$H

if [[ -n $markdown ]]; then
    # The evidence for docs/GPU-IN-CONTAINER.md: what cgroup v2 offers on this kernel.
    cat /sys/fs/cgroup/cgroup.controllers >"$(dirname "$markdown")/controllers.txt"
    as_root_delegated "$M" gpu matrix --rootless-user "$user" --output "$markdown"
    rc=$?
    if ((rc == 0)); then ok "mrun gpu matrix wrote $markdown"; else not_ok "mrun gpu matrix wrote $markdown" "exit $rc"; fi
    finish
fi

# ---------------------------------------------------------------- the matrix
before=$(nodes_state)
json=$out/matrix.json
as_root_delegated "$M" gpu matrix --rootless-user "$user" --json --output "$json" 2>"$out/matrix.err"
rc=$?
if [[ $rc == 0 && -s $json ]]; then
    ok "mrun gpu matrix --json: exit 0, every run as its row expects"
else
    not_ok "mrun gpu matrix --json: exit 0, every run as its row expects" "exit $rc" "$(tail -n 20 "$out/matrix.err")"
fi
check "the nodes' owner and mode are restored after the matrix" test "$(nodes_state)" = "$before"
check "the matrix prints the kernel version" grep -qF "\"kernel\": \"$(uname -rv)\"" "$json"

# id | run: step errno | fix run: step errno ('-' for none)
expected='
1  open ENOENT              passed -
2  load-libraries ENOENT    passed -
3  passed -                 none -
4  open EPERM               passed -
5  passed -                 open EPERM
6  mknod EPERM              passed -
7  open EACCES              passed -
8  open EACCES              passed -
9  open EACCES              passed -
10 BPF_PROG_LOAD EPERM      open EPERM
11 reset EPERM              passed -
12 passed -                 passed -
13 open EPROTO              passed -
'
while read -r id step err fstep ferr; do
    [[ -n $id ]] || continue
    got=$(python3 - "$json" "$id" <<'PY'
import json, sys
rows = {r["id"]: r for r in json.load(open(sys.argv[1]))["rows"]}
r = rows.get(int(sys.argv[2]))
def show(x):
    if x is None:
        return "none -"
    if x.get("skipped"):
        return "skipped -"
    return f'{x["step"].replace(" ", "-")} {x["errno"] or "-"}'
print("missing" if r is None else f'{show(r)} {show(r["fix"])}')
PY
)
    want="$step $err $fstep $ferr"
    if [[ $got == "$want" ]]; then
        ok "matrix row $id: $step $err; with the fix: $fstep $ferr"
    else
        not_ok "matrix row $id: $step $err; with the fix: $fstep $ferr" "got: $got" \
            "$(python3 -c 'import json,sys; r=[r for r in json.load(open(sys.argv[1]))["rows"] if r["id"]==int(sys.argv[2])]; print(json.dumps(r, indent=1)[:3000])' "$json" "$id" 2>&1)"
    fi
done <<<"$expected"

# ---------------------------------------------------------------- doctor
R=$stage/rootfs
"$M" rootfs busybox "$R" >/dev/null && chmod 0755 "$R"
expect_exit "doctor, healthy (as $user): every rung ok" 0 'ok   subordinate ids' as "$user" "$M" gpu doctor

as "$user" "$M" run -d --name doc-ok --network none --gpu --keep-groups "$R" sleep 60 >/dev/null 2>&1
expect_exit "doctor --container, healthy: node, groups, filter, libraries ok" 0 \
    'ok   user-space library found: /opt/fakegpu/lib/libfakegpu.so.1 ' as "$user" "$M" gpu doctor --container doc-ok
as "$user" "$M" kill doc-ok KILL >/dev/null 2>&1; as "$user" "$M" delete --force doc-ok >/dev/null 2>&1

as "$user" env MRUN_GPU_HELPER=/nonexistent "$M" run -d --name doc-groups --network none --gpu \
    --device-filter off "$R" sleep 60 >/dev/null 2>&1
expect_exit "doctor --container, groups dropped: rung 22, --keep-groups" 22 'fix: .*--keep-groups' \
    as "$user" "$M" gpu doctor --container doc-groups
as "$user" "$M" kill doc-groups KILL >/dev/null 2>&1; as "$user" "$M" delete --force doc-groups >/dev/null 2>&1

as "$user" "$M" run -d --name doc-filter --network none --gpu --keep-groups --device-filter off \
    "$R" sleep 60 >/dev/null 2>&1
expect_exit "doctor --container, --device-filter off: rung 23" 23 'fix: none: --device-filter=off: restart it without' \
    as "$user" "$M" gpu doctor --container doc-filter
as "$user" "$M" kill doc-filter KILL >/dev/null 2>&1; as "$user" "$M" delete --force doc-filter >/dev/null 2>&1

"$M" run -d --name doc-libs --network none --device /dev/fakegpu0 --device /dev/fakegpuctl "$R" sleep 60 >/dev/null 2>&1
expect_exit "doctor --container, rootful without --gpu: rung 24, libraries" 24 'fix: .*run it with --gpu' \
    "$M" gpu doctor --container doc-libs
"$M" kill doc-libs KILL >/dev/null 2>&1; "$M" delete --force doc-libs >/dev/null 2>&1

# Version skew: the image's own libfakegpu, built for driver 1.2, first on its
# LD_LIBRARY_PATH; the doctor reads the version marker in the file it would load.
skew_lib=$(readlink -f "$stage"/gpu/fakegpu-skew/libfakegpu.so.1)
image_lib=(-e LD_LIBRARY_PATH=/image/lib -v "$skew_lib:/image/lib/libfakegpu.so.1:ro")
"$M" run -d --name doc-skew --network none --device /dev/fakegpu0 --device /dev/fakegpuctl "${image_lib[@]}" \
    "$R" sleep 60 >/dev/null 2>&1
expect_exit "doctor --container, the image's own library for a newer driver: rung 25, the skew and the fix" 25 \
    'driver version is insufficient for library version: libfakegpu 1.2.0 \(/image/lib/libfakegpu.so.1\), driver 1.1.0.*run it with --gpu' \
    "$M" gpu doctor --container doc-skew
"$M" kill doc-skew KILL >/dev/null 2>&1; "$M" delete --force doc-skew >/dev/null 2>&1
"$M" run -d --name doc-skew-gpu --network none --gpu "${image_lib[@]}" "$R" sleep 60 >/dev/null 2>&1
expect_exit "doctor --container, the same image with --gpu: the host's library first, rung 25 ok" 0 \
    'ok   its libfakegpu serves the host.s driver: libfakegpu 1.1.0 \(/opt/fakegpu/lib/libfakegpu.so.1\), driver 1.1.0' \
    "$M" gpu doctor --container doc-skew-gpu
"$M" kill doc-skew-gpu KILL >/dev/null 2>&1; "$M" delete --force doc-skew-gpu >/dev/null 2>&1

expect_exit "doctor, no container of that name: 125" 125 'container does not exist' "$M" gpu doctor --container nope

write_policy '/dev/fakegpu* user:nobody'
expect_exit "doctor, policy does not allow the user: rung 13" 13 "fix: .*does not allow $user" \
    as "$user" "$M" gpu doctor
write_policy '/dev/fakegpu* group:fakegpu'

# The doctor loads the policy with the helper's own code (src/gpupolicy/): a policy
# directory others can write (they could replace the file) fails rung 13, and its fix
# is the helper's own refusal, word for word. (The doctor used to stat the file only.)
chmod 0777 /etc/mrun
expect_exit "doctor, policy directory writable by others: rung 13" 13 \
    "fix: /etc/mrun: owner uid 0, mode 0777: the policy's directory must be owned by root" \
    as "$user" "$M" gpu doctor
doctor_fix=$(as "$user" "$M" gpu doctor 2>&1 | sed -n 's/^ *fix: //p')
helper_says=$(as "$user" "$H" --filter 1 2>&1 >/dev/null; echo "status $?")
check "the helper refuses it too (status 4), in the doctor's words" \
    test "$helper_says" = "mrun-gpu-helper: $doctor_fix"$'\n'"status 4"
chmod 0755 /etc/mrun

chmod 0755 "$H"
expect_exit "doctor, helper not setuid: rung 13, chmod 4755" 13 'fix: .*chmod 4755' as "$user" "$M" gpu doctor
chmod 4755 "$H"

chgrp root /dev/fakegpu*; chmod 0600 /dev/fakegpu*
expect_exit "doctor, root:root 0600 and no helper: rung 12, group fakegpu 0660" 12 'fix: /dev/fakegpu0 is root:root 0600: .*chmod 0660' \
    as "$user" env MRUN_GPU_HELPER=/nonexistent "$M" gpu doctor
expect_exit "doctor, root:root 0600 with the helper: the helper grants it" 0 'mrun-gpu-helper grants it' \
    as "$user" "$M" gpu doctor
udev_rule

expect_exit "doctor, user without subordinate ids: rung 14" 14 "fix: no /etc/subuid entry for $nosub" \
    as "$nosub" "$M" gpu doctor

mv /dev/fakegpuctl /dev/fakegpuctl.away
expect_exit "doctor, node missing: rung 11" 11 'fix: /dev/fakegpuctl is missing' as "$user" "$M" gpu doctor
mv /dev/fakegpuctl.away /dev/fakegpuctl

# Xid events: the doctor (root reads the kernel log) names each, its meaning and fix.
echo "1 79" >/sys/kernel/debug/fakegpu/inject
expect_exit "doctor after an injected Xid 79: rung 15 names it: pid, context, device" 15 \
    'fix: Xid 79 \(GPU has fallen off the bus\), pid [0-9]+ \([^)]*\), ctx 0: fakegpu1: ' "$M" gpu doctor
expect_exit "doctor after an injected Xid 79: what it means and the fix" 15 \
    '^ +fix: reset the device as root' "$M" gpu doctor

check "rmmod fakegpu" rmmod fakegpu
rm -f /dev/fakegpu*  # devtmpfs removes them; a leftover would make the next rung lie
expect_exit "doctor, module not loaded: rung 10, modprobe" 10 'fix: load the driver: `modprobe fakegpu`' \
    as "$user" "$M" gpu doctor
finish
