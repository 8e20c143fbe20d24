#!/bin/bash
# integration-suite.sh - boot the VM and run a chosen part of the integration suite
# in it, on Debian's kernel (the one users have).
#
#   tests/vm/integration-suite.sh [--timeout SECONDS] [--tests "NAME..."] [--overlays "native fuse"]
#
# Host side of tests/vm/guest/integration.sh. The integration suite runs on the
# host's kernel (6.18 here); a stock Debian 12 runs 6.1, where rootless
# fuse-overlayfs once failed while it passed on the host. So the tests
# named below run in the guest through tests/integration/run.sh, rootless (as
# mrun-test, tmpfs home, a delegated cgroup v2 subtree) and rootful, once with
# MRUN_IT_OVERLAY=native and once with fuse, followed by the issue's two faults
# checked directly. Needs mrun, mrun-probe and hog in the meson build dir
# ($MRUN_BUILD_DIR, default build/). The TAP goes to stdout and, when
# MRUN_RESULTS_DIR is set, to $MRUN_RESULTS_DIR/vm-integration.tap; a VM-level
# failure (kernel oops or warning, hung guest, harness error) is a failed test of
# its own. Skips (one TAP line saying why) without qemu, busybox-static or a
# Debian kernel. Exits 0 when every test passed or skipped, 1 otherwise.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=tests/vm/suite-lib.sh
source "$here/suite-lib.sh"
[[ ${1:-} == -h || ${1:-} == --help ]] && { sed -n '2,19p' "$0" | sed 's/^# \{0,1\}//'; exit 0; }
# Four pytest runs: about 10 minutes on an idle machine, 36 on a loaded one.
SUITE_TIMEOUT=2400 suite_init integration "$@"

# The chosen tests (pytest -k, by function name: every parameter of each), 28 cases
# per mode and overlay; why these, and what they cost under TCG: tests/vm/README.md.
tests=(
    # run: arguments, exit codes, the process, namespaces and ids
    test_command_not_found_is_127
    test_user_uid_gid
    test_init_reaps_zombies
    test_tty_output_and_exit_code
    test_rootless_maps_caller_to_root_and_subids
    test_rootful_has_identity_map
    # exec, through the OCI verbs (create, start, exec, ps, kill, delete)
    test_exec_ps_kill_all_and_exec_status
    # lifecycle
    test_detach_prints_name_and_returns
    test_delete_running_needs_force
    test_rm_removes_everything_at_exit
    test_sigkill_of_foreground_mrun_cleans_up
    # filesystem
    test_the_suites_overlay_is_the_one_in_use
    test_writes_land_in_upper_dir_and_rootfs_is_unchanged
    test_volume_shows_host_dir_and_writes_through
    test_read_only_rootfs
    test_masked_files_read_empty
    test_mounts_do_not_leak_to_host
    # network
    test_tap0_address_and_default_route
    test_none_keeps_only_lo
    test_publish_tcp_reaches_httpd
    # cgroup v2 limits (the OOM kill, with each overlay)
    test_oom_kill_is_reported_and_exits_137
    test_limits_are_visible_in_the_containers_own_cgroup
    # an engine's container keeps its leaf (its OOM kills) until delete
    test_a_created_containers_leaf_outlives_its_exit_until_delete
)
overlays="native fuse"
set -- "${SUITE_ARGS[@]+"${SUITE_ARGS[@]}"}"
while (($#)); do
    case $1 in
    --tests) read -ra tests <<<"$2"; shift 2 ;;
    --overlays) overlays=$2; shift 2 ;;
    *) echo "integration-suite: unknown option $1" >&2; exit 2 ;;
    esac
done

# ---------------------------------------------------------------- prerequisites
suite_require_vm "integration suite in a VM"
for p in "$build/src/mrun" "$build/tests/probe/mrun-probe" "$build/tests/probe/hog"; do
    [[ -x $p ]] || suite_finish "not ok 1 - test programs built: missing $p (meson compile -C $build)"
done

# ---------------------------------------------------------------- run
start=$SECONDS
"$here/run-in-vm.sh" --timeout "$timeout_s" --mem 2048 --cpus 2 --out "$out" -- \
    "$here/guest/integration.sh" --build "$build" --tests "${tests[*]}" --overlays "$overlays" >&2
rc=$?
echo "integration-suite: guest run took $((SECONDS - start))s" >&2

suite_collect "$rc" "$out/integration.tap"
