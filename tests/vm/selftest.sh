#!/bin/bash
# TAP self-test of the VM harness (tests/vm/run-in-vm.sh): what every VM
# suite relies on, checked on the real kernel under the real qemu.
#
#   tests/vm/selftest.sh
#
# TAP goes to stdout and, when MRUN_RESULTS_DIR is set, to
# $MRUN_RESULTS_DIR/vm-selftest.tap. Exit status: 0 when every test passed.
#
# Five guest runs, about 40-60 s on 2 cores (more when the host is busy):
#   main  the guest checks of guest/selftest-guest.sh, exit 0
#   fail  a command exiting 42
#   warn  a command logging a kernel WARNING line       -> 123
#   panic a command crashing the guest kernel (sysrq c) -> 123 at once
#   hung  a command sleeping past --timeout             -> 124, qemu gone
# "hung" spends most of its time idle at the timeout, so it runs in the
# background while the others run.
#
# The check functions below run through ok_if "$@", which shellcheck cannot
# follow, and cleanup through the EXIT trap:
# shellcheck disable=SC2317
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
run_in_vm=$here/run-in-vm.sh

# ---------------------------------------------------------------- TAP output
tap_file=''
if [[ -n ${MRUN_RESULTS_DIR:-} ]]; then
    mkdir -p "$MRUN_RESULTS_DIR"
    tap_file=$MRUN_RESULTS_DIR/vm-selftest.tap
    : >"$tap_file"
fi
emit() { # one TAP line (or "# " diagnostic) to stdout and the results file
    printf '%s\n' "$1"
    [[ -z $tap_file ]] || printf '%s\n' "$1" >>"$tap_file"
}
n=0 failed=0
# result PASS? NAME [DIAGNOSTIC...]: a TAP line; diagnostics only on failure.
result() {
    local pass=$1 name=$2
    shift 2
    n=$((n + 1))
    if ((pass)); then
        emit "ok $n - $name"
    else
        failed=$((failed + 1))
        emit "not ok $n - $name"
        local d
        for d in "$@"; do
            while IFS= read -r line; do
                [[ -z $line ]] || emit "#   $line"
            done <<<"$d"
        done
    fi
}
finish() {
    emit "1..$n"
    exit $((failed > 0))
}

# ---------------------------------------------------------------- skips
skip_all() {
    emit "ok 1 - vm harness selftest # SKIP $1"
    emit "1..1"
    exit 0
}
command -v qemu-system-x86_64 >/dev/null || skip_all "qemu-system-x86_64 is not installed (apt-get install qemu-system-x86)"
[[ -x /bin/busybox ]] || skip_all "busybox-static is not installed"
# The same choice run-in-vm.sh makes: the newest Debian kernel with modules.
kver=${MRUN_VM_KERNEL_VERSION:-$(
    for f in /boot/vmlinuz-*-amd64; do
        [[ -e $f && -r /lib/modules/${f#/boot/vmlinuz-}/modules.dep ]] && printf '%s\n' "${f#/boot/vmlinuz-}"
    done | sort -V | tail -n 1
)}
[[ -n $kver ]] || skip_all "no Debian kernel with modules in /boot and /lib/modules (apt-get install linux-image-amd64)"
[[ -r /boot/vmlinuz-$kver ]] || skip_all "/boot/vmlinuz-$kver is not readable by $(id -un)"

# ---------------------------------------------------------------- work dir
cache=${MRUN_VM_CACHE:-$repo/build/vm}
mkdir -p "$cache"
work=$(mktemp -d "$(cd "$cache" && pwd)/selftest.XXXXXX")
hung_pid=''
cleanup() {
    # The background run owns a qemu: TERM makes its trap kill that qemu.
    if [[ -n $hung_pid ]] && kill -0 "$hung_pid" 2>/dev/null; then
        kill -TERM "$hung_pid" 2>/dev/null
        wait "$hung_pid" 2>/dev/null
    fi
    if ((failed == 0)); then
        rm -rf "$work"
    else
        printf '# selftest files kept in %s\n' "$work"
    fi
}
trap cleanup EXIT

# vm NAME [run-in-vm options] -- COMMAND...: run one guest with --out
# $work/NAME; stdout, stderr, exit status and seconds taken land in
# $work/NAME.{stdout,stderr,rc,secs}.
vm() {
    local name=$1 t0=$SECONDS rc=0
    shift
    "$run_in_vm" --out "$work/$name" "$@" >"$work/$name.stdout" 2>"$work/$name.stderr" || rc=$?
    echo "$rc" >"$work/$name.rc"
    echo "$((SECONDS - t0))" >"$work/$name.secs"
}
rc_of() { cat "$work/$1.rc"; }

emit "# vm harness selftest: kernel $kver, work dir $work"
t_start=$SECONDS

# ---------------------------------------------------------------- hung (background)
# Started directly, not through vm(): $! must be run-in-vm.sh itself, so
# that cleanup's TERM reaches the trap that kills its qemu.
hung_timeout=30
hung_t0=$EPOCHSECONDS
"$run_in_vm" --out "$work/hung" --timeout "$hung_timeout" -- sh -c 'echo sleeping; exec sleep 600' \
    >"$work/hung.stdout" 2>"$work/hung.stderr" &
hung_pid=$!

# ---------------------------------------------------------------- main
# The guest checks run from this directory, by a relative path: the cwd is
# what run-in-vm.sh guarantees to be visible in the guest.
cd "$here"
MRUN_SELFTEST_KVER=$kver MRUN_SELFTEST_CPUS=2 MRUN_SELFTEST_MEM_MB=1536 \
    MRUN_SELFTEST_APPEND=mrun_selftest=1 MRUN_SELFTEST_CWD=$here \
    vm main --timeout 240 --cpus 2 --mem 1536 --append mrun_selftest=1 -- bash guest/selftest-guest.sh
emit "# main guest run: $(cat "$work/main.secs")s"

result "$(($(rc_of main) == 0))" "run-in-vm.sh boots the guest and the command exits 0" \
    "exit $(rc_of main)" "$(tail -n 20 "$work/main.stderr")"

# The guest's own checks, numbered into this TAP stream.
guest_checks=0
pending_name='' pending_pass=0 pending_diag=''
flush_pending() {
    [[ -n $pending_name ]] || return 0
    result "$pending_pass" "guest: $pending_name" "$pending_diag"
    pending_name=''
}
while IFS= read -r line; do
    case $line in
    'ok - '*) flush_pending; pending_name=${line#ok - } pending_pass=1 pending_diag='' ;;
    'not ok - '*) flush_pending; pending_name=${line#not ok - } pending_pass=0 pending_diag='' ;;
    '#   '*) pending_diag+="${line#\#   }"$'\n' ;;
    *) continue ;;
    esac
    guest_checks=$((guest_checks + 1))
done < <([[ ! -f $work/main/guest.log ]] || cat "$work/main/guest.log")
flush_pending
if ((guest_checks == 0)); then
    result 0 "guest checks ran" "no check results in $work/main/guest.log" "$(tail -n 20 "$work/main.stderr")"
fi

# ok_if COMMAND...: "1" when COMMAND succeeds, else "0" (for result).
ok_if() { if "$@"; then echo 1; else echo 0; fi; }

streamed() { [[ -s $work/main.stdout ]] && cmp -s "$work/main.stdout" "$work/main/guest.log"; }
result "$(ok_if streamed)" "the command's output streams to stdout and to \$OUT/guest.log" \
    "$(diff "$work/main.stdout" "$work/main/guest.log" 2>&1 | head -n 10)"

kver_once() { (($(grep -c "^# guest kernel: $kver " "$work/main.stderr") == 1)); }
result "$(ok_if kver_once)" "the guest kernel version is printed once as a '# ' diagnostic" \
    "$(head -n 5 "$work/main.stderr")"

out_files() {
    [[ $(cat "$work/main/exit-code") == 0 && -s $work/main/dmesg.txt && -e $work/main/console.log &&
        $(cat "$work/main/selftest-probe") == "written by the guest" ]]
}
result "$(ok_if out_files)" "\$OUT holds exit-code (0), dmesg.txt and console.log; /mnt/out writes reach the host" \
    "$(ls -l "$work/main" 2>&1)"

# ---------------------------------------------------------------- fail
vm fail --timeout 120 -- sh -c 'echo failing on purpose; exit 42'
result "$(($(rc_of fail) == 42))" "a failing command's exit code (42) is run-in-vm.sh's exit code" \
    "exit $(rc_of fail)" "$(tail -n 5 "$work/fail.stderr")"
fail_files() { [[ $(cat "$work/fail/exit-code") == 42 ]] && grep -qx "failing on purpose" "$work/fail.stdout"; }
result "$(ok_if fail_files)" "its exit code is in \$OUT/exit-code and its output on stdout" \
    "exit-code: $(cat "$work/fail/exit-code" 2>&1)" "stdout: $(cat "$work/fail.stdout")"

# ---------------------------------------------------------------- /tmp
# A checkout under the host's /tmp (which the guest hides under its own tmpfs):
# a script there, named by its absolute path from a cwd there, runs in the guest
# and may write beside itself without reaching the host.
tmpdir=$(mktemp -d /tmp/mrun-vm-selftest.XXXXXX)
printf '#!/bin/sh\necho "ran $0 in $(pwd)"; echo guest >"$(dirname "$0")/written"; cat "$(dirname "$0")/written"\n' \
    >"$tmpdir/script.sh"
chmod 0755 "$tmpdir" "$tmpdir/script.sh"
(cd "$tmpdir" && vm tmp --timeout 120 -- "$tmpdir/script.sh")
tmp_ran() {
    [[ $(rc_of tmp) == 0 ]] && grep -qx "ran $tmpdir/script.sh in $tmpdir" "$work/tmp.stdout" &&
        grep -qx guest "$work/tmp.stdout" && [[ ! -e $tmpdir/written ]]
}
result "$(ok_if tmp_ran)" "a script under the host's /tmp runs at its own path in the guest (a checkout anywhere works)" \
    "exit $(rc_of tmp)" "$(cat "$work/tmp.stdout")" "$(tail -n 5 "$work/tmp.stderr")"
rm -rf "$tmpdir"

# ---------------------------------------------------------------- warn
# Root may write to the kernel log: the same text a WARN_ON() splat starts
# with, which the harness must treat as a failure although the command passed.
vm warn --timeout 120 -- sh -c 'echo "WARNING: CPU: 0 PID: 1 at mrun-vm-selftest injected" >/dev/kmsg'
result "$(($(rc_of warn) == 123))" "a WARNING in the guest kernel log fails the run (exit 123)" \
    "exit $(rc_of warn)" "$(tail -n 5 "$work/warn.stderr")"
warn_named() {
    grep -q "^# kernel: .*WARNING: CPU: 0 PID: 1 at mrun-vm-selftest injected" "$work/warn.stderr" &&
        grep -q "^run-in-vm: guest kernel logged an oops/BUG/WARNING" "$work/warn.stderr"
}
result "$(ok_if warn_named)" "the offending kernel line is printed with a one-line cause" \
    "$(cat "$work/warn.stderr")"

# ---------------------------------------------------------------- panic
vm panic --timeout 120 -- sh -c 'echo c >/proc/sysrq-trigger; sleep 600'
result "$(($(rc_of panic) == 123))" "a guest kernel panic is reported as it happens (exit 123, not the timeout)" \
    "exit $(rc_of panic) after $(cat "$work/panic.secs")s" "$(tail -n 5 "$work/panic.stderr")"
panic_named() {
    grep -q "^# kernel: .*Kernel panic" "$work/panic.stderr" &&
        grep -q "^run-in-vm: guest kernel crashed" "$work/panic.stderr"
}
result "$(ok_if panic_named)" "the panic is named on stderr" "$(cat "$work/panic.stderr")"

# ---------------------------------------------------------------- hung
hung_rc=0
wait "$hung_pid" || hung_rc=$?
hung_pid=''
echo "$hung_rc" >"$work/hung.rc"
# It finished while the other runs went on: its last stderr write (the
# "hung guest" line) marks when.
hung_secs=$(($(stat -c %Y "$work/hung.stderr") - hung_t0))
result "$(($(rc_of hung) == 124))" "a command sleeping past --timeout $hung_timeout is a hung guest (exit 124)" \
    "exit $(rc_of hung) after ${hung_secs}s" "$(tail -n 5 "$work/hung.stderr")"
hung_named() {
    grep -q "^run-in-vm: hung guest: .*the command was still running" "$work/hung.stderr" &&
        grep -qx sleeping "$work/hung/guest.log" && ((hung_secs < hung_timeout + 15))
}
result "$(ok_if hung_named)" "the hang is named on stderr, after the command had started, within the timeout" \
    "took ${hung_secs}s" "$(cat "$work/hung.stderr")" "guest.log: $(cat "$work/hung/guest.log")"
# Every qemu of this selftest had an --out under $work on its command line.
no_qemu_left() { ! pgrep -f -- "path=$work/" >/dev/null; }
result "$(ok_if no_qemu_left)" "no qemu process is left behind" "$(pgrep -af -- "path=$work/")"

emit "# selftest total: $((SECONDS - t_start))s"
finish
