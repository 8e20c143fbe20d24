#!/bin/bash
# Guest half of tests/vm/selftest.sh: run inside the VM by run-in-vm.sh, as
# root. Prints one line per check, "ok - NAME" or "not ok - NAME" followed by
# "#   " lines saying what was seen; selftest.sh numbers them into TAP.
#
# Expectations come from the host through the MRUN_* variables run-in-vm.sh
# passes through: MRUN_SELFTEST_KVER (kernel version), MRUN_SELFTEST_CPUS,
# MRUN_SELFTEST_MEM_MB, MRUN_SELFTEST_APPEND, MRUN_SELFTEST_CWD.
set -uo pipefail

user=mrun-test

# check NAME FUNCTION: a check passes when FUNCTION returns 0; its output is
# shown only when it fails. Checks prefer bash builtins to external commands:
# under TCG every exec of a dynamically linked binary costs ~100 ms.
check() {
    local name=$1 fn=$2 out
    if out=$("$fn" 2>&1); then
        echo "ok - $name"
    else
        echo "not ok - $name"
        printf '%s\n' "$out" | sed 's/^/#   /'
    fi
}

# as_user CMD: run CMD with sh as the unprivileged test user. setpriv, not
# su: PAM makes su ~0.2 s slower, and su gets its own check below.
as_user() {
    setpriv --reuid="$user" --regid="$user" --init-groups --reset-env sh -c "$1"
}

# want WHAT GOT EXPECTED: fails with a message unless GOT == EXPECTED.
want() {
    [[ $2 == "$3" ]] && return 0
    echo "$1: got '$2', want '$3'"
    return 1
}

# has WORD LIST: LIST (space-separated) contains WORD.
has() { [[ " $2 " == *" $1 "* ]]; }

# Mount table, read once: fstype[mountpoint] (the last mount wins).
declare -A fstype=()
while read -r _ mp fs _; do fstype[$mp]=$fs; done </proc/mounts

# The user's subordinate id range, from the same /etc the host has.
sub_start='' sub_count=''
while IFS=: read -r name start count; do
    [[ $name == "$user" ]] && sub_start=$start sub_count=$count
done </etc/subuid

kernel_is_debian() {
    local r v
    read -r r </proc/sys/kernel/osrelease
    read -r v </proc/sys/kernel/version
    want "kernel release" "$r" "$MRUN_SELFTEST_KVER" || return 1
    [[ $v == *Debian* ]] || { echo "kernel version '$v' is not a Debian build"; return 1; }
}

vm_shape() {
    local online cpus=0 r kb cmdline k v _
    # Count /sys/devices/system/cpu/online ("0-1", "0,2-3") without an exec.
    read -r online </sys/devices/system/cpu/online
    for r in ${online//,/ }; do cpus=$((cpus + ${r#*-} - ${r%-*} + 1)); done
    want "online cpus" "$cpus" "$MRUN_SELFTEST_CPUS" || return 1
    while read -r k v _; do [[ $k == MemTotal: ]] && kb=$v; done </proc/meminfo
    # MemTotal is RAM minus what the kernel reserves: within 15% of --mem.
    ((kb > MRUN_SELFTEST_MEM_MB * 1024 * 85 / 100 && kb <= MRUN_SELFTEST_MEM_MB * 1024)) \
        || { echo "MemTotal ${kb} kB for --mem $MRUN_SELFTEST_MEM_MB"; return 1; }
    read -r cmdline </proc/cmdline
    has "$MRUN_SELFTEST_APPEND" "$cmdline" \
        || { echo "--append '$MRUN_SELFTEST_APPEND' missing from: $cmdline"; return 1; }
}

environment() {
    want "cwd" "$PWD" "$MRUN_SELFTEST_CWD" || return 1
    want "MRUN_VM_OUT" "${MRUN_VM_OUT:-}" /mnt/out || return 1
    want "HOME" "$HOME" /root || return 1
    want "EUID" "$EUID" 0 || return 1
    [[ :$PATH: == *:/usr/sbin:* && :$PATH: == *:/usr/bin:* ]] || { echo "PATH=$PATH"; return 1; }
}

root_fs() {
    want "fstype of /" "${fstype[/]:-}" overlay || return 1
    want "fstype of the host root" "${fstype[/run/mrun-vm/hostroot]:-}" 9p || return 1
    # The overlay's tmpfs upper takes writes that never reach the host.
    echo probe >/etc/mrun-vm-selftest-probe || return 1
    [[ ! -e /run/mrun-vm/hostroot/etc/mrun-vm-selftest-probe ]] || { echo "a write reached the host root"; return 1; }
}

kernel_filesystems() {
    local m flags
    for m in /proc:proc /sys:sysfs /dev:devtmpfs /dev/pts:devpts /dev/shm:tmpfs /tmp:tmpfs /run:tmpfs /mnt/out:9p; do
        want "fstype of ${m%%:*}" "${fstype[${m%%:*}]:-none}" "${m#*:}" || return 1
    done
    [[ -k /tmp && -w /tmp ]] || { echo "/tmp is not sticky and world-writable"; return 1; }
    read -r flags </sys/class/net/lo/flags
    ((flags & 1)) || { echo "lo is down (flags $flags)"; return 1; }
}

cgroup2_pure() {
    local fs avail enabled c
    want "fstype of /sys/fs/cgroup" "${fstype[/sys/fs/cgroup]:-none}" cgroup2 || return 1
    for fs in "${fstype[@]}"; do
        [[ $fs != cgroup ]] || { echo "a cgroup v1 hierarchy is mounted"; return 1; }
    done
    read -r avail </sys/fs/cgroup/cgroup.controllers
    read -r enabled </sys/fs/cgroup/cgroup.subtree_control
    for c in cpu memory pids io cpuset; do
        has "$c" "$avail" || { echo "controller $c not available: $avail"; return 1; }
        has "$c" "$enabled" || { echo "controller $c not enabled: $enabled"; return 1; }
    done
}

# The limits bite: memory.max takes a value, pids.max refuses a fork.
cgroup2_limits() {
    local cg=/sys/fs/cgroup/mrun-vm-selftest rc v k events=0
    mkdir "$cg" || return 1
    if ! { echo 64M >"$cg/memory.max" && echo 2 >"$cg/pids.max"; }; then
        rmdir "$cg"
        return 1
    fi
    read -r v <"$cg/memory.max"
    # The shell and one child fit; the third process must be refused.
    # busybox sh, not bash: bash retries a refused fork for ~15 s.
    /bin/busybox sh -c 'echo $$ >'"$cg"'/cgroup.procs; sleep 0.2 & sleep 0.2 || exit 1; wait' 2>/dev/null
    rc=$?
    while read -r k v2; do [[ $k == max ]] && events=$v2; done <"$cg/pids.events"
    rmdir "$cg" || true
    want "memory.max" "$v" 67108864 || return 1
    [[ $rc -ne 0 && $events -ge 1 ]] || { echo "fork beyond pids.max: rc=$rc pids.events max=$events"; return 1; }
}

modules_and_devices() {
    local m modes
    for m in overlay fuse tun veth loop 9p; do
        [[ -d /sys/module/$m ]] || { echo "module $m not loaded"; return 1; }
    done
    [[ -c /dev/fuse && -c /dev/net/tun ]] || { echo "/dev/fuse or /dev/net/tun missing"; return 1; }
    modes=$(stat -c '%a' /dev/fuse /dev/net/tun)
    want "modes of /dev/fuse /dev/net/tun" "${modes//$'\n'/ }" "666 666" || return 1
    # Suites load more from the host's /lib/modules with the real modprobe.
    modprobe dummy numdummies=0 || return 1
    [[ -d /sys/module/dummy ]] || { echo "modprobe dummy did not load it"; return 1; }
}

user_exists() {
    local name u uid=""
    while IFS=: read -r name _ u _; do [[ $name == "$user" ]] && uid=$u; done </etc/passwd
    [[ -n $uid ]] || { echo "$user is not in /etc/passwd"; return 1; }
    ((uid != 0)) || { echo "$user is uid 0"; return 1; }
    [[ -n $sub_start && -n $sub_count ]] || { echo "no /etc/subuid entry for $user"; return 1; }
}

user_userns() {
    want "su $user -c 'unshare -Ur id -u'" "$(su "$user" -c 'unshare -Ur id -u')" 0
}

# newuidmap/newgidmap are setuid root: the bit must survive the 9p export,
# and they must map the user's whole subordinate range (util-linux calls them
# for --map-users/--map-groups).
user_newuidmap() {
    [[ -u /usr/bin/newuidmap && -u /usr/bin/newgidmap ]] || { ls -l /usr/bin/newuidmap /usr/bin/newgidmap; return 1; }
    local maps
    maps=$(as_user "unshare --user --map-users=$sub_start,0,$sub_count --map-groups=$sub_start,0,$sub_count \
        sh -c 'read -r a b c </proc/self/uid_map; read -r d e f </proc/self/gid_map; echo \$a \$b \$c / \$d \$e \$f'")
    want "uid_map / gid_map" "$maps" "0 $sub_start $sub_count / 0 $sub_start $sub_count"
}

# One scratch tree per filesystem check, owned by the user.
scratch() {
    mkdir -p "$1/l" "$1/u" "$1/w" "$1/m" && echo "$2" >"$1/l/f" && chown -R "$user:" "$1"
}

user_overlay() {
    local d=/tmp/selftest-ovl
    scratch "$d" x || return 1
    want "file through native overlayfs" "$(as_user "unshare -Urm sh -c 'mount -t overlay -o lowerdir=$d/l,upperdir=$d/u,workdir=$d/w none $d/m && read -r x <$d/m/f && echo \$x'")" x
}

user_fuse_overlayfs() {
    local d=/tmp/selftest-fuse
    command -v fuse-overlayfs >/dev/null || { echo "fuse-overlayfs is not installed"; return 1; }
    scratch "$d" y || return 1
    want "file through fuse-overlayfs" "$(as_user "unshare -Urm sh -c 'fuse-overlayfs -o lowerdir=$d/l,upperdir=$d/u,workdir=$d/w $d/m && read -r y <$d/m/f && echo \$y; umount $d/m'")" y
}

user_tun() {
    local out
    out=$(as_user "unshare -Urn sh -c 'ip tuntap add dev tap0 mode tap && ip -o link show tap0'") || { echo "$out"; return 1; }
    [[ $out == *tap0* ]] || { echo "$out"; return 1; }
}

out_share() {
    local back
    echo "written by the guest" >"$MRUN_VM_OUT/selftest-probe" || return 1
    read -r back <"$MRUN_VM_OUT/selftest-probe"
    want "readback" "$back" "written by the guest"
}

check "guest runs Debian's kernel $MRUN_SELFTEST_KVER" kernel_is_debian
check "--cpus, --mem and --append reach the guest" vm_shape
check "command runs as root in the caller's cwd with MRUN_VM_OUT, PATH, HOME" environment
check "root is an overlay with a tmpfs upper over the read-only 9p host root" root_fs
check "proc, sysfs, devtmpfs, devpts, /dev/shm, /tmp (1777), /run mounted; loopback up" kernel_filesystems
check "cgroup2 is pure v2 with cpu, memory, pids, io, cpuset enabled" cgroup2_pure
check "cgroup v2 limits work (memory.max set, pids.max refuses a fork)" cgroup2_limits
check "overlay, fuse, tun, veth loaded; /dev/fuse, /dev/net/tun 0666; modprobe works" modules_and_devices
check "$user exists with a subuid range" user_exists
check "$user creates a user namespace (su $user -c 'unshare -Ur id')" user_userns
check "newuidmap/newgidmap (setuid over 9p) map $user's subuid range" user_newuidmap
check "$user mounts native overlayfs in a user namespace" user_overlay
check "$user mounts fuse-overlayfs in a user namespace" user_fuse_overlayfs
check "$user creates a tap device in a user+net namespace" user_tun
check "/mnt/out is writable" out_share
