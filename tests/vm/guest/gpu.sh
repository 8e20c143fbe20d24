#!/bin/bash
# gpu.sh - the GPU passthrough suite. Runs INSIDE the VM
# guest, as root (tests/vm/gpu-suite.sh boots it with tests/vm/run-in-vm.sh).
#
#   gpu.sh --ko PATH --mrun PATH --helper PATH --gpu-dir DIR
#
# DIR is the build tree's src/gpu (libfakegpu.so*, fakegpu-client,
# fakegpu-client-static). With fakegpu.ko loaded: rootful `mrun run --gpu` runs the
# injected fakegpu-client to ALL CHECKS PASSED (and the privileged RESET works);
# rootless as mrun-test with the udev rule's root:fakegpu 0660 nodes: EACCES
# without --keep-groups, passes with it, RESET EPERM; root:root 0600 nodes:
# EACCES rootless, and mrun-gpu-helper (setuid copy, policy allowing mrun-test)
# makes them usable; under a caller's too small resource limit it refuses (18) with
# nothing mounted, and --filter stops at max_filters_per_user (19). Prints TAP and
# copies it to $MRUN_VM_OUT/vm-gpu.tap.
set -u

ko='' mrun='' helper='' gpu_dir=''
while (($#)); do
    case $1 in
    --ko) ko=$2 ;;
    --mrun) mrun=$2 ;;
    --helper) helper=$2 ;;
    --gpu-dir) gpu_dir=$2 ;;
    *) echo "gpu.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done

out=${MRUN_VM_OUT:-/tmp}
tap=$out/vm-gpu.tap
: >"$tap"
user=mrun-test
# mrun-test cannot enter /root or the CI clone: world-readable copies. The setuid
# copy of the helper goes to a root-owned dir on a mount without nosuid.
stage=/var/tmp/gpu-test
n=0 failed=0

source "$(dirname "${BASH_SOURCE[0]}")/tap-lib.sh"
finish() { tap_finish; }

path=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# MRUN_GPU_HELPER: never the helper `meson install` (scripts/demo.sh) put in
# <libexecdir>; a case that wants one names $H after this (env's last one wins).
no_installed_helper=MRUN_GPU_HELPER=/nonexistent/tests-use-no-installed-mrun-gpu-helper
as_user() { runuser -u "$user" -- env -i PATH=$path HOME=$stage/home LANG=C.UTF-8 "$no_installed_helper" "$@"; }
M=$stage/bin/mrun
R=$stage/rootfs
# The container's libc for the dynamic client: the guest's own, read-only.
libs=(-v /usr/lib:/usr/lib:ro -v /usr/lib:/lib:ro -v /usr/lib64:/lib64:ro)
run_opts=(run --rm --network none --cgroups disabled)

# ---------------------------------------------------------------- setup
for f in "$ko" "$mrun" "$helper" "$gpu_dir/libfakegpu.so.1" "$gpu_dir/fakegpu-client" "$gpu_dir/fakegpu-client-static"; do
    [[ -n $f && -r $f ]] || { not_ok "test inputs present" "missing: '$f'"; finish; }
done
id "$user" >/dev/null 2>&1 || { not_ok "user $user exists in the guest"; finish; }
rm -rf "$stage"
mkdir -m 0755 -p "$stage"/bin "$stage"/gpu "$stage"/sbin "$stage"/x
install -d -m 0755 -o "$user" "$stage"/home "$stage"/x
cp "$mrun" "$stage"/bin/
cp -P "$gpu_dir"/libfakegpu.so* "$gpu_dir"/fakegpu-client "$gpu_dir"/fakegpu-client-static "$stage"/gpu/
chmod -R a+rX "$stage"
check "busybox rootfs for the containers" "$M" rootfs busybox "$R"
chmod 0755 "$R"

lsmod | grep -qw fakegpu && rmmod fakegpu
check "insmod fakegpu.ko ndev=2" insmod "$ko" ndev=2
check "nodes are root:root 0600 as the driver makes them" \
    test "$(stat -c '%U:%G %a' /dev/fakegpu0 /dev/fakegpuctl | sort -u)" = "root:root 600"

# ---------------------------------------------------------------- rootful
# The build tree's mrun: --gpu finds libfakegpu and the clients next to it.
expect_exit "rootful --gpu: the injected dynamic fakegpu-client passes" 0 'ALL CHECKS PASSED' \
    "$mrun" "${run_opts[@]}" --gpu "${libs[@]}" "$R" fakegpu-client
expect_exit "rootful --gpu: libfakegpu comes from /opt/fakegpu/lib, read-only" 0 \
    'libfakegpu.so.1 .*ro,' "$mrun" "${run_opts[@]}" --gpu "$R" /bin/sh -c \
    'ls /opt/fakegpu/lib/libfakegpu.so.1 >/dev/null && grep " /opt/fakegpu/lib/libfakegpu.so.1 " /proc/self/mountinfo | sed "s/^/libfakegpu.so.1 /"'
expect_exit "rootful --gpu 1: only fakegpu1 and fakegpuctl" 0 '^fakegpu1 fakegpuctl $' \
    "$mrun" "${run_opts[@]}" --gpu 1 "$R" /bin/sh -c 'cd /dev && echo $(ls -d fakegpu*) ""'
# The driver checks capable(CAP_SYS_ADMIN) in the initial user namespace: rootful
# needs the capability (not in the default set); rootless never has it.
expect_exit "rootful, default capabilities: the privileged RESET ioctl is EPERM" 22 \
    '^FAIL reset: reset /dev/fakegpu0: EPERM' "$mrun" "${run_opts[@]}" --gpu "$R" fakegpu-client-static --check reset
expect_exit "rootful --cap-add SYS_ADMIN: the privileged RESET ioctl works" 0 'reset count' \
    "$mrun" "${run_opts[@]}" --gpu --cap-add SYS_ADMIN "$R" fakegpu-client-static --check reset
expect_exit "rootful --device /dev/fakegpu0 without libraries: the static client passes" 0 \
    'ALL CHECKS PASSED' "$mrun" "${run_opts[@]}" --device /dev/fakegpu0 -v "$gpu_dir/fakegpu-client-static:/c:ro" "$R" /c

# ---------------------------------------------------------------- rootless, udev group
# What helpers/70-fakegpu.rules does (there is no udev in the guest).
getent group fakegpu >/dev/null || groupadd --system fakegpu
usermod -aG fakegpu "$user"
chgrp fakegpu /dev/fakegpu0 /dev/fakegpu1 /dev/fakegpuctl
chmod 0660 /dev/fakegpu0 /dev/fakegpu1 /dev/fakegpuctl
export MRUN_FAKEGPU_LIBDIR=$stage/gpu
ul=(env MRUN_FAKEGPU_LIBDIR="$stage/gpu")
expect_exit "rootless, root:fakegpu 0660, groups dropped: EACCES at open" 10 \
    '^FAIL open: open /dev/fakegpu0: EACCES' as_user "${ul[@]}" "$M" "${run_opts[@]}" --gpu "$R" fakegpu-client-static
expect_exit "rootless, the node shows as nobody:nogroup" 0 'nobody nogroup' \
    as_user "${ul[@]}" "$M" "${run_opts[@]}" --gpu "$R" /bin/sh -c 'stat -c "%U %G" /dev/fakegpu0'
expect_exit "rootless --keep-groups: fakegpu-client-static passes" 0 'ALL CHECKS PASSED' \
    as_user "${ul[@]}" "$M" "${run_opts[@]}" --gpu --keep-groups "$R" fakegpu-client-static
expect_exit "rootless --keep-groups: the injected dynamic client passes" 0 'ALL CHECKS PASSED' \
    as_user "${ul[@]}" "$M" "${run_opts[@]}" --gpu --keep-groups "${libs[@]}" "$R" fakegpu-client
# ---------------------------------------------------------------- mrun gpu ps
# Who holds the GPU: a detached container keeps a context open on fd 3; the driver's
# fdinfo gives the context, mrun's state the container's name (mrun-gpu(1)).
hold='exec 3<>/dev/fakegpu0; echo held; sleep 120'
holder_row=' +(sh|sleep) +3 +fakegpu0 +[0-9]+ +0 B +0 +0 +-'
check "rootful: a detached --gpu container holds /dev/fakegpu0" \
    "$mrun" run -d --name gpu-holder --network none --cgroups disabled --gpu "$R" /bin/sh -c "$hold"
check "rootless: a detached --gpu container holds /dev/fakegpu0" as_user "${ul[@]}" \
    "$M" run -d --name gpu-holder-u --network none --cgroups disabled --gpu --keep-groups "$R" /bin/sh -c "$hold"
sleep 2
expect_exit "gpu ps (root): the rootful container's holder, its context and memory" 0 \
    "gpu-holder$holder_row" "$mrun" gpu ps
expect_exit "gpu ps (root): the rootless container's process too (no name: not root's container)" 0 \
    "[0-9]+ \\([0-9]+\\) +- +(sh|sleep) +3 +fakegpu0" "$mrun" gpu ps
expect_exit "gpu ps --json: the container, the context, the memory" 0 \
    '"container": "gpu-holder",' "$mrun" gpu ps --json
expect_exit "gpu ps (rootless): its own container's holder, named" 0 \
    "gpu-holder-u$holder_row" as_user "$M" gpu ps
expect_exit "gpu ps (rootless): root's processes are not readable, and it says so" 0 \
    'processes of other users not readable' as_user "$M" gpu ps
if command -v python3 >/dev/null; then
    check "gpu ps --json (rootless) parses: a holder in gpu-holder-u, with a context" bash -c \
        "runuser -u $user -- env -i PATH=$path HOME=$stage/home $M gpu ps --json | python3 -c 'import json,sys; h=json.load(sys.stdin)[\"holders\"]; sys.exit(0 if any(x[\"container\"] == \"gpu-holder-u\" and x[\"context\"] for x in h) else 1)'"
fi
"$mrun" delete -f gpu-holder >/dev/null 2>&1
as_user "$M" delete -f gpu-holder-u >/dev/null 2>&1
expect_exit "gpu ps after the containers are gone: nobody holds the GPU" 0 \
    'no process holds a fakegpu device' "$mrun" gpu ps

# ---------------------------------------------------------------- CDI (mrun-cdi(1))
# The spec of this boot's nodes, written where engines look for generated specs; mrun
# resolves fakegpu.example/gpu=N itself, podman (crun) through its CDI library.
check "cdi generate --spec-dir /var/run/cdi" "$M" cdi generate --spec-dir /var/run/cdi
expect_exit "cdi list: devices 0, 1 and all of fakegpu.example/gpu" 0 \
    'fakegpu.example/gpu=0.*fakegpu.example/gpu=1.*fakegpu.example/gpu=all' \
    sh -c "'$M' cdi list | tr '\n' ' '"
expect_exit "rootful --device fakegpu.example/gpu=0: the injected dynamic client passes" 0 \
    'ALL CHECKS PASSED' "$M" "${run_opts[@]}" --device fakegpu.example/gpu=0 "${libs[@]}" "$R" fakegpu-client
expect_exit "--device fakegpu.example/gpu=1: only fakegpu1 and fakegpuctl" 0 '^fakegpu1 fakegpuctl $' \
    "$M" "${run_opts[@]}" --device fakegpu.example/gpu=1 "$R" /bin/sh -c 'cd /dev && echo $(ls -d fakegpu*) ""'
expect_exit "rootless --device fakegpu.example/gpu=all --keep-groups: the static client passes" 0 \
    'ALL CHECKS PASSED' as_user "$M" "${run_opts[@]}" --device fakegpu.example/gpu=all --keep-groups \
    "$R" fakegpu-client-static
expect_exit "--device fakegpu.example/gpu=7: refused, naming the devices there are" 125 \
    'its devices: 0, 1, all' "$M" "${run_opts[@]}" --device fakegpu.example/gpu=7 "$R" true

# podman reads the same spec through its own CDI library and hands the runtime plain
# config.json edits (linux.devices, mounts, env): crun shows the spec is accepted,
# mrun that its OCI layer applies what podman made of it.
if command -v podman >/dev/null; then
    pm=$stage/podman
    # podman's bolt database on a tmpfs of its own: on the guest's overlay root one
    # run panicked in bbolt ("page 4 already freed").
    mkdir -p "$pm" && mount -t tmpfs -o size=512m tmpfs "$pm" && mkdir -p "$pm"/run
    printf '[storage]\ndriver = "vfs"\ngraphroot = "%s/storage"\nrunroot = "%s/runroot"\n' \
        "$pm" "$pm" >"$pm"/storage.conf
    printf '[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\nruntime_supports_nocgroup = ["crun", "mrun"]\n[engine.runtimes]\nmrun = ["%s"]\n' \
        "$M" >"$pm"/containers.conf
    podman=(env CONTAINERS_CONF="$pm"/containers.conf CONTAINERS_STORAGE_CONF="$pm"/storage.conf
            XDG_RUNTIME_DIR="$pm"/run podman)
    tar -C "$R" -cf "$pm"/busybox.tar .
    check "podman import of the busybox rootfs" "${podman[@]}" import -q "$pm"/busybox.tar localhost/busybox
    pm_run() {  # pm_run RUNTIME: the static client through podman's CDI
        timeout 120 "${podman[@]}" --runtime "$1" run --rm --network none --cgroups disabled \
            --device fakegpu.example/gpu=0 localhost/busybox fakegpu-client-static
    }
    expect_exit "podman --runtime crun --device fakegpu.example/gpu=0: fakegpu-client-static passes" 0 \
        'ALL CHECKS PASSED' pm_run crun
    # podman's exit status is the client's: conmon reaps mrun's created container.
    expect_exit "podman --runtime mrun --device fakegpu.example/gpu=0: fakegpu-client-static passes" 0 \
        'ALL CHECKS PASSED' pm_run mrun
    "${podman[@]}" rm -af >/dev/null 2>&1
    umount -l "$pm"
else
    skip "podman --device fakegpu.example/gpu=0" "podman is not installed (scripts/install-deps.sh)"
fi

expect_exit "rootless --cap-add SYS_ADMIN: the privileged RESET ioctl is still EPERM" 22 \
    '^FAIL reset: reset /dev/fakegpu0: EPERM' as_user "${ul[@]}" "$M" "${run_opts[@]}" --gpu \
    --keep-groups --cap-add SYS_ADMIN "$R" fakegpu-client-static --check reset
expect_exit "rootless: mknod of the fakegpu node is EPERM even with CAP_MKNOD" 1 'errno=EPERM|Operation not permitted' \
    as_user "${ul[@]}" "$M" "${run_opts[@]}" --cap-add MKNOD "$R" /bin/sh -c \
    "mknod /dev/fakegpu0 c $(awk '$2 == "fakegpu" {print $1}' /proc/devices) 0"

# ---------------------------------------------------------------- rootless, root:root 0600
chgrp root /dev/fakegpu0 /dev/fakegpu1 /dev/fakegpuctl
chmod 0600 /dev/fakegpu0 /dev/fakegpu1 /dev/fakegpuctl
expect_exit "rootless, root:root 0600: EACCES even as container root with --keep-groups" 10 \
    '^FAIL open: open /dev/fakegpu0: EACCES' as_user "${ul[@]}" "$M" "${run_opts[@]}" --gpu --keep-groups "$R" fakegpu-client-static

install -m 4755 -o root -g root "$helper" "$stage"/sbin/mrun-gpu-helper
# The same binary without the setuid bit, where mrun-test can run it (the build
# dir may sit under /root): the helper must refuse to work when it is not setuid root.
install -m 0755 "$helper" "$stage"/mrun-gpu-helper-plain
mkdir -p /etc/mrun
printf '/dev/fakegpu[0-9]* user:%s\n/dev/fakegpuctl user:%s\n' "$user" "$user" >/etc/mrun/gpu-helper.conf
chmod 0644 /etc/mrun/gpu-helper.conf
H=$stage/sbin/mrun-gpu-helper
if findmnt -no OPTIONS -T "$stage"/sbin | grep -qw nosuid; then
    skip "helper makes root:root 0600 nodes usable" "$stage is on a nosuid mount"
else
    rm -f "$stage"/x/*
    as_user "${ul[@]}" "$M" "${run_opts[@]}" --name gpu-helper --gpu -v "$stage/x:/x" "$R" /bin/sh -c \
        'fakegpu-client-static --check open >/x/before 2>&1; touch /x/ready; i=0
         while [ ! -e /x/go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done
         fakegpu-client-static >/x/after 2>&1; echo "exit $?" >>/x/after' &
    container=$!
    for _ in $(seq 200); do [[ -e $stage/x/ready ]] && break; sleep 0.1; done
    pid=$(as_user "$M" list --format json | python3 -c \
        'import json,sys; print(next(c["pid"] for c in json.load(sys.stdin) if c["name"] == "gpu-helper"))')
    expect_exit "before the helper: EACCES in the container" 0 'EACCES' cat "$stage"/x/before
    expect_exit "helper refuses a device the policy does not name (/dev/null)" 6 'not allowed' \
        as_user "$H" "$pid" /dev/null /dev/fakegpu0
    expect_exit "helper refuses a copy without the setuid bit" 3 'setuid root' as_user "$stage"/mrun-gpu-helper-plain "$pid" /dev/fakegpu0
    # The caller's resource limits: a hard limit below what the helper needs is its own
    # status (18) before anything is done, never a grant reported as a failure.
    expect_exit "helper under RLIMIT_NOFILE 6: refused (18), nothing done" 18 'RLIMIT_NOFILE.*nothing done' \
        as_user prlimit --nofile=6:6 "$H" "$pid" /dev/fakegpu0
    # shellcheck disable=SC2016
    expect_exit "helper under RLIMIT_FSIZE 0, report to a file: refused (18), not killed by SIGXFSZ" 18 \
        'RLIMIT_FSIZE.*nothing done' as_user sh -c 'exec prlimit --fsize=0 "$@" >"$HOME/report"' sh \
        "$H" "$pid" /dev/fakegpu0
    check "no helper mount in the container after the refusals" \
        test "$(grep -c ' - tmpfs mrun-gpu-helper ' "/proc/$pid/mountinfo")" = 0
    expect_exit "helper: /dev/fakegpu0 into the container" 0 'fakegpu0 .* -> /dev/fakegpu0' \
        as_user "$H" "$pid" /dev/fakegpu0
    expect_exit "helper: /dev/fakegpuctl into the container" 0 'fakegpuctl' as_user "$H" "$pid" /dev/fakegpuctl
    touch "$stage"/x/go
    wait "$container"
    expect_exit "after the helper: fakegpu-client passes in the rootless container" 0 \
        'ALL CHECKS PASSED' cat "$stage"/x/after
    check "the host nodes are still root:root 0600" \
        test "$(stat -c '%U:%G %a' /dev/fakegpu0 /dev/fakegpuctl | sort -u)" = "root:root 600"
fi

# ---------------------------------------------------------------- device filter, rootful
# cgroup v2 is pure here: with cgroups enabled every container gets a leaf and mrun
# attaches its BPF device filter to it. One container per property.
chmod 0666 /dev/fakegpu1
fr=(run --rm --network none)
expect_exit "rootful --gpu 0 with the filter: the client passes, /dev/fakegpu1 bound with -v is EPERM" 0 \
    'ALL CHECKS PASSED.*FAIL open: open /dev/fakegpu1: EPERM' "$mrun" run --name filt --network none \
    --gpu 0 -v /dev/fakegpu1:/dev/fakegpu1 "$R" /bin/sh -c \
    'fakegpu-client-static | tail -1 | tr "\n" " "; fakegpu-client-static --device /dev/fakegpu1 --check open; true'
expect_exit "rootful: the state says the filter is mrun's own (bpf)" 0 '"bpf"' sh -c \
    "'$mrun' list --format json | python3 -c 'import json,sys; print(json.dumps(next(c[\"device_filter\"] for c in json.load(sys.stdin) if c[\"name\"] == \"filt\")))'"
"$mrun" delete filt >/dev/null 2>&1
expect_exit "rootful --device /dev/fakegpu0:/dev/fakegpu0:r: a read-write open is EPERM" 0 \
    'FAIL open: open /dev/fakegpu0: EPERM' "$mrun" "${fr[@]}" --device /dev/fakegpu0:/dev/fakegpu0:r \
    -v "$gpu_dir/fakegpu-client-static:/c:ro" "$R" /bin/sh -c '/c --check open; head -c 0 /dev/fakegpu0 && echo read-ok; true'
# What :r still lets it open, O_RDONLY, may only look: the driver refuses ALLOC and
# SUBMIT on it (EBADF), so the container cannot run work on the GPU (fakegpu(4)).
expect_exit "rootful --device /dev/fakegpu0:/dev/fakegpu0:r: opened read-only, the client cannot allocate or submit (EBADF)" 14 \
    '^FAIL fill: alloc [0-9]+ bytes \(opened read-only: ALLOC needs a descriptor open for writing\): EBADF' \
    "$mrun" "${fr[@]}" --device /dev/fakegpu0:/dev/fakegpu0:r \
    -v "$gpu_dir/fakegpu-client-static:/c:ro" "$R" /c --read-only --check info,fill
expect_exit "rootful --cgroups disabled: no filter, the bound node opens" 0 '^ok open' \
    "$mrun" "${fr[@]}" --cgroups disabled -v /dev/fakegpu1:/dev/fakegpu1 \
    -v "$gpu_dir/fakegpu-client-static:/c:ro" "$R" /c --device /dev/fakegpu1 --check open
expect_exit "rootful --privileged: every device allowed" 0 '^ok open' \
    "$mrun" "${fr[@]}" --privileged -v /dev/fakegpu1:/dev/fakegpu1 \
    -v "$gpu_dir/fakegpu-client-static:/c:ro" "$R" /c --device /dev/fakegpu1 --check open
# An OCI bundle's device list is ordered, the last matching rule deciding (the runtime
# spec; Docker's own list ends with a deny of /dev/fuse): all of fakegpu's minors
# allowed, then fakegpu1 denied, then Docker's deny of /dev/fuse.
gpu_major=$(stat -c '%t' /dev/fakegpu0) gpu_major=$((16#$gpu_major))
ordered=$stage/bundle-ordered
rm -rf "$ordered" && mkdir -p "$ordered" && "$mrun" spec --bundle "$ordered" &&
    python3 - "$ordered/config.json" "$R" "$gpu_major" <<'PY'
import json, sys
path, rootfs, major = sys.argv[1], sys.argv[2], int(sys.argv[3])
c = json.load(open(path))
c["root"] = {"path": rootfs, "readonly": True}
c["process"]["terminal"] = False
c["process"]["args"] = ["/bin/sh", "-c", "for d in fakegpu0 fakegpu1 fuse null; do "
                        "(: </dev/$d) 2>/dev/null && echo $d=open || echo $d=denied; done"]
node = lambda name, maj, mi: {"path": "/dev/" + name, "type": "c", "major": maj, "minor": mi,
                              "fileMode": 0o666, "uid": 0, "gid": 0}
c["linux"]["devices"] = [node("fakegpu0", major, 0), node("fakegpu1", major, 1),
                         node("fuse", 10, 229)]
c["linux"]["resources"] = {"devices": [
    {"allow": False, "access": "rwm"},
    {"allow": True, "type": "c", "major": major, "access": "rw"},
    {"allow": False, "type": "c", "major": major, "minor": 1, "access": "rwm"},
    {"allow": True, "type": "c", "major": 10, "minor": 200, "access": "rwm"},
    {"allow": False, "type": "c", "major": 10, "minor": 229, "access": "rwm"}]}
json.dump(c, open(path, "w"))
PY
expect_exit "rootful bundle, ordered rules: fakegpu0 opens, fakegpu1 (denied after its major's allow) and /dev/fuse do not" 0 \
    'fakegpu0=open fakegpu1=denied fuse=denied null=open' sh -c \
    "'$mrun' run --bundle '$ordered' ordered | tr '\\n' ' '; '$mrun' delete -f ordered >/dev/null 2>&1"

# ---------------------------------------------------------------- device filter, rootless
# A subtree delegated to the user (as systemd's Delegate=yes), the user's shell in it:
# mrun makes its leaf there. Unprivileged BPF is refused by the kernel, so the filter
# comes from mrun-gpu-helper --filter; the root:root 0600 fakegpu0 from its node grant.
cg=/sys/fs/cgroup deleg=/sys/fs/cgroup/user-$user
mkdir -p "$deleg/shell" && chown "$user" "$deleg" "$deleg/cgroup.procs" \
    "$deleg/cgroup.subtree_control" "$deleg/cgroup.threads" && chown -R "$user" "$deleg/shell"
# shellcheck disable=SC2016
in_deleg() { sh -c 'echo $$ >"$0/cgroup.procs" && exec "$@"' "$deleg/shell" runuser -u "$user" -- \
    env -i PATH=$path HOME=$stage/home LANG=C.UTF-8 "$no_installed_helper" MRUN_FAKEGPU_LIBDIR="$stage/gpu" "$@"; }
# sleeper_in CGROUP: a process of $user in a user and mount namespace of its own (as a
# rootless container's) in CGROUP, made and given to $user; prints its pid.
sleeper_in() {
    mkdir -p "$1" && chown "$user" "$1"
    # shellcheck disable=SC2016
    sh -c 'echo $$ >"$0/cgroup.procs" && exec runuser -u "$1" -- unshare -Urm sleep 120' "$1" "$user" \
        >/dev/null 2>&1 &
    local _ p
    for _ in $(seq 100); do
        while read -r p; do
            [[ $(cat "/proc/$p/comm" 2>/dev/null) == sleep ]] && { echo "$p"; return 0; }
        done <"$1/cgroup.procs"
        sleep 0.1
    done
    return 1
}
expect_exit "rootless, delegated, no helper: --device-filter required is 125 BPF_PROG_LOAD EPERM" 125 \
    'device filter for container .*BPF_PROG_LOAD: EPERM' in_deleg MRUN_GPU_HELPER=/nonexistent "$M" \
    run --rm --network none --device-filter required --gpu 0 "$R" true
check "rootless, required refused: no leaf left behind" test -z "$(find "$deleg" -mindepth 1 -maxdepth 1 -name 'mrun-*')"
if findmnt -no OPTIONS -T "$stage"/sbin | grep -qw nosuid; then
    skip "rootless filter and node grant through the helper" "$stage is on a nosuid mount"
else
    rm -f "$stage"/x/*
    in_deleg MRUN_GPU_HELPER="$H" "$M" run --name rlf --network none --device-filter required --gpu 0 \
        -v /dev/fakegpu1:/dev/fakegpu1 -v "$stage/x:/x" "$R" /bin/sh -c \
        'fakegpu-client-static >/x/client 2>&1; fakegpu-client-static --device /dev/fakegpu1 --check open >/x/other 2>&1
         touch /x/ready; i=0; while [ ! -e /x/go ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i+1)); done' \
        >"$stage/rlf.out" 2>&1 &
    container=$!
    for _ in $(seq 300); do [[ -e $stage/x/ready ]] && break; sleep 0.1; done
    pid=$(as_user "$M" list --format json | python3 -c \
        'import json,sys; print(next(c["pid"] for c in json.load(sys.stdin) if c["name"] == "rlf"))' 2>/dev/null)
    state=$(as_user "$M" list --format json | python3 -c \
        'import json,sys; print(next(c["device_filter"] for c in json.load(sys.stdin) if c["name"] == "rlf"))' 2>&1)
    check "rootless: the helper attached the filter (state: helper)" test "$state" = helper
    expect_exit "rootless: root:root 0600 fakegpu0 made usable by mrun through the helper; the client passes" 0 \
        'ALL CHECKS PASSED' cat "$stage"/x/client
    expect_exit "rootless: /dev/fakegpu1 bound with -v (0666) is EPERM under the filter" 0 \
        'FAIL open: open /dev/fakegpu1: EPERM' cat "$stage"/x/other
    expect_exit "helper --filter refuses a second filter on the same cgroup" 16 'already has a device filter' \
        as_user "$H" --filter "$pid"
    expect_exit "helper --filter refuses a device the policy does not name" 6 'not allowed' \
        as_user "$H" --filter "$pid" /dev/null
    expect_exit "helper --filter refuses a copy without the setuid bit" 3 'setuid root' \
        as_user "$stage"/mrun-gpu-helper-plain --filter "$pid"
    # One program per cgroup, and at most max_filters_per_user per uid, counted in the
    # kernel: rlf's filter is one; a second cgroup of the user's is within 2, a third not.
    printf 'max_filters_per_user 2\n' >>/etc/mrun/gpu-helper.conf
    s1=$(sleeper_in "$deleg/bound-1") s2=$(sleeper_in "$deleg/bound-2")
    expect_exit "helper --filter on a second cgroup of the user: within max_filters_per_user 2" 0 \
        'attached .*2 of 2' as_user "$H" --filter "$s1"
    expect_exit "helper --filter on a third cgroup: refused beyond max_filters_per_user (19)" 19 \
        'holds 2 device filters already' as_user "$H" --filter "$s2"
    kill -9 "$s1" "$s2" 2>/dev/null
    sed -i '/^max_filters_per_user/d' /etc/mrun/gpu-helper.conf
    touch "$stage"/x/go
    wait "$container"
    rc=$?
    if ((rc == 0)); then ok "rootless filtered container exited 0"; else not_ok "rootless filtered container exited 0" "exit $rc" "$(cat "$stage/rlf.out")"; fi
    as_user "$M" delete rlf >/dev/null 2>&1
fi
chmod 0600 /dev/fakegpu1

check "rmmod fakegpu (no container holds a node)" rmmod fakegpu
finish
