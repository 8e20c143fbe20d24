#!/bin/bash
# docker-suite.sh - boot the VM and run the Docker integration test in it, on a pure
# cgroup v2 with fakegpu.ko loaded.
#
#   tests/vm/docker-suite.sh [--timeout SECONDS] [--rootful-tests "NAME..."]
#                            [--rootless-tests "NAME..."]
#
# Host side of tests/vm/guest/docker.sh: tests/integration/test_docker.py (Debian's
# docker.io 20.10, every case with runc and with mrun) through tests/integration/run.sh
# in the guest, rootful and rootless (an empty list leaves a mode out), the cases named
# below: the host's cgroup layout is hybrid, so Docker's cgroup cases (-m with an OOM
# kill, pause and unpause, update -m, stats) and --device /dev/fakegpu0 run here. Needs
# mrun and mrun-probe in the meson build dir ($MRUN_BUILD_DIR, default build/) and
# builds fakegpu.ko. The TAP goes to stdout and, when MRUN_RESULTS_DIR is set, to
# $MRUN_RESULTS_DIR/vm-docker.tap; a VM-level failure is a failed test of its own.
# Skips (one TAP line saying why) without qemu, busybox-static, a Debian kernel,
# docker.io, runc or containerd. Exits 0 when every test passed or skipped, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/vm/suite-lib.sh
source "$here/suite-lib.sh"
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
SUITE_TIMEOUT=1500 suite_init docker "$@"

# The chosen tests (pytest -k, by function name: both runtimes of each); why these,
# and what they cost under TCG: tests/vm/README.md.
rootful_tests=(
    # cgroup v2: what the host (hybrid) cannot show
    test_docker_oom_kill_with_a_memory_limit
    test_docker_pause_and_unpause
    test_docker_memory_limit_update_and_stats
    test_docker_rm_force_of_a_running_container
    test_docker_top
    # devices: Docker's list as a BPF program, and a node passed with --device
    test_docker_default_device_list
    test_docker_device_fakegpu
)
rootless_tests=(
    # skipped, saying why: no cgroups for rootless Docker without systemd
    test_docker_oom_kill_with_a_memory_limit
    test_docker_pause_and_unpause
    test_docker_memory_limit_update_and_stats
    # runc ps finds the container's processes in a v2 group, unlike on the host's v1
    test_docker_top
    # the node bind-mounted into rootlesskit's user namespace
    test_docker_device_fakegpu
)
set -- "${SUITE_ARGS[@]+"${SUITE_ARGS[@]}"}"
while (($#)); do
    case $1 in
    --rootful-tests) read -ra rootful_tests <<<"$2"; shift 2 ;;
    --rootless-tests) read -ra rootless_tests <<<"$2"; shift 2 ;;
    *) echo "docker-suite: unknown option $1" >&2; exit 2 ;;
    esac
done

# ---------------------------------------------------------------- prerequisites
name="Docker on cgroup v2 in a VM"
suite_require_vm "$name"
suite_require_commands "$name" dockerd runc containerd containerd-shim-runc-v2 mkfs.ext4
[[ -x /usr/bin/docker ]] || suite_finish "ok 1 - $name # SKIP Debian's docker.io is not installed (scripts/install-deps.sh)"
for p in "$build/src/mrun" "$build/tests/probe/mrun-probe"; do
    [[ -x $p ]] || suite_finish "not ok 1 - test programs built: missing $p (meson compile -C $build)"
done
suite_build_module

# ---------------------------------------------------------------- run
# apparmor=0: Debian's kernel enables AppArmor, and dockerd, seeing it, loads its
# docker-default profile with apparmor_parser before every container; the host (whose
# kernel has no AppArmor) has no apparmor package, so every `docker run` would fail.
start=$SECONDS
"$here/run-in-vm.sh" --timeout "$timeout_s" --mem 2048 --cpus 2 --out "$out" --append apparmor=0 -- \
    "$here/guest/docker.sh" --build "$build" --ko "$ko" \
    --rootful-tests "${rootful_tests[*]}" --rootless-tests "${rootless_tests[*]}" >&2
rc=$?
echo "docker-suite: guest run took $((SECONDS - start))s" >&2

suite_collect "$rc" "$out/docker.tap"
