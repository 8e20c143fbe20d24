#!/bin/bash
# Stage 2 of the mrun test VM: PID 1 after switch_root, running the host's
# bash over 9p. run-in-vm.sh copies this file into the per-run control share,
# so editing it needs no initramfs rebuild. Stage 1 (guest/init) already set
# up every mount, cgroup v2 and loopback.
#
# It runs the caller's command (ctl/cmd.sh) as root with stdout+stderr
# appended to /mnt/out/guest.log (the host streams that file), then writes
# dmesg.txt and finally exit-code (the host takes its presence as "the
# command finished"), and powers off.
#
# Kept to bash builtins and the static busybox: on TCG every exec of a
# dynamically linked binary over 9p costs ~80 ms.
#
# No `set -e`: this is PID 1, and if PID 1 exits the kernel panics. Every
# failure is reported on the console and the guest powers off; the host turns
# a missing exit-code into a clear error.
set -u

OUT=/mnt/out
CTL=/run/mrun-vm/ctl
BB=/bin/busybox

log() { echo "mrun-vm stage2: $*" >/dev/console; }

shutdown_now() {
    "$BB" sync
    # -f: no init system to ask, just reboot(2). sysrq o is the fallback.
    "$BB" poweroff -f
    echo o >/proc/sysrq-trigger
    while :; do "$BB" sleep 1; done
}

# Facts for the host: the guest kernel version, printed once as a diagnostic.
read -r osrelease </proc/sys/kernel/osrelease
read -r kversion </proc/sys/kernel/version
echo "$osrelease $kversion" >"$OUT/kernel-version" || {
    log "FATAL: cannot write to $OUT"
    shutdown_now
}

# Host paths under /tmp and /run that the guest's tmpfs hides (the host listed
# them in ctl/keep-paths): each becomes an overlay of the host's copy (through
# the raw host root) with a tmpfs upper, at its own path. Longest last, so a
# path inside another one lands on top of it.
keep_n=0
if [[ -r $CTL/keep-paths ]]; then
    while IFS= read -r keep; do
        [[ -n $keep && -d /run/mrun-vm/hostroot$keep ]] || continue
        keep_n=$((keep_n + 1))
        layer=/run/mrun-vm/keep/$keep_n
        "$BB" mkdir -p "$layer/upper" "$layer/work" "$keep"
        "$BB" mount -t overlay overlay \
            -o "lowerdir=/run/mrun-vm/hostroot$keep,upperdir=$layer/upper,workdir=$layer/work" \
            "$keep" || log "cannot lay $keep back over the guest's tmpfs"
    done < <("$BB" awk '{ print length($0) "\t" $0 }' "$CTL/keep-paths" | "$BB" sort -n | "$BB" cut -f2-)
fi

rc=125
if [[ -r $CTL/cmd.sh && -r $CTL/env ]]; then
    # A subshell with a clean environment (PID 1 inherited the kernel's):
    # a root login's basics, MRUN_VM_OUT, and the MRUN_* variables the host
    # passed through in ctl/env. cmd.sh cds to the caller's cwd and execs the
    # command, so no extra shell stays around.
    (
        set +u
        for v in $(compgen -e); do unset -v "$v"; done
        export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
        export HOME=/root USER=root LOGNAME=root SHELL=/bin/bash TERM=dumb LANG=C.UTF-8
        # shellcheck source=/dev/null
        . "$CTL/env"
        export MRUN_VM=1 MRUN_VM_OUT=$OUT
        # shellcheck source=/dev/null
        . "$CTL/cmd.sh"
    ) </dev/null >>"$OUT/guest.log" 2>&1
    rc=$?
else
    log "no command in $CTL"
fi

# dmesg first, exit-code last: the host reads exit-code as "done".
"$BB" dmesg >"$OUT/dmesg.txt" 2>&1 || log "dmesg failed"
echo "$rc" >"$OUT/exit-code" || log "cannot write exit code"
shutdown_now
