#!/bin/bash
# cri.sh - a Kubernetes pod through containerd's CRI plugin on a pure cgroup v2. Runs
# INSIDE the VM guest, as root (tests/vm/cri-suite.sh boots it with run-in-vm.sh).
#
#   cri.sh --mrun PATH --pause PATH [--ko PATH --gpu-dir DIR]
#
# Loads the bridge module (the guest's kernel has it as a module; CNI's bridge plugin
# needs it) and runs tests/cri/pod_test.py: the test's own containerd with the CRI
# plugin and the runtime handlers runc (the control) and mrun, the kubelet's calls for a
# pod of two containers, a hostNetwork/hostPID/hostIPC pod, streaming Exec and Attach,
# each check for both runtimes. With --ko, fakegpu.ko is loaded
# (two devices) and pod_test.py also runs the GPU pod with the node and DIR's libfakegpu
# and fakegpu-client; a module that does not load is a failed GPU pod test for each
# runtime, with insmod's message. Work and containerd's root are under the guest's /tmp
# (tmpfs: the overlayfs snapshotter cannot put an upper layer on the guest's root,
# itself an overlay). Its TAP goes to stdout and $MRUN_VM_OUT/cri.tap, the config.json
# files containerd wrote to $MRUN_VM_OUT/configs, `mrun cdi generate`'s spec of the
# loaded nodes to $MRUN_VM_OUT/cdi.
set -u

mrun='' pause='' ko='' gpu_dir=''
while (($#)); do
    case $1 in
    --mrun) mrun=$2 ;;
    --pause) pause=$2 ;;
    --ko) ko=$2 ;;
    --gpu-dir) gpu_dir=$2 ;;
    *) echo "cri.sh: unknown option $1" >&2; exit 2 ;;
    esac
    shift 2
done
out=${MRUN_VM_OUT:-/tmp}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../../.." && pwd)
tap=$out/cri.tap n=0 failed=0
# shellcheck source=tests/vm/guest/tap-lib.sh
source "$here/tap-lib.sh"

if ! msg=$(modprobe bridge 2>&1); then
    : >"$tap"
    not_ok "modprobe bridge (CNI's bridge plugin)" "$msg"
    tap_finish
fi
gpu=()
if [[ -n $ko ]]; then
    lsmod | grep -qw fakegpu && rmmod fakegpu
    if msg=$(insmod "$ko" ndev=2 2>&1); then
        gpu=(--gpu-dir "$gpu_dir")
        # The CDI spec of these nodes, for docs/KUBERNETES.md (containerd 1.7's way; 1.6
        # here cannot read it): kept, not tested here (tests/vm/guest/gpu.sh tests it).
        "$mrun" cdi generate --spec-dir "$out/cdi" >&2 || echo "cri.sh: mrun cdi generate failed" >&2
    else
        gpu=(--gpu-unavailable "insmod $ko ndev=2: $msg")
    fi
fi
mkdir -p "$out/configs"
/usr/bin/python3 "$repo/tests/cri/pod_test.py" --mrun "$mrun" --pause "$pause" \
    --tap "$tap" --capture "$out/configs" --workdir-base /tmp "${gpu[@]}"
rc=$?
lsmod | grep -qw fakegpu && rmmod fakegpu
exit "$rc"
