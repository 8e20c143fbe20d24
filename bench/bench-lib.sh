# bench-lib.sh - what every benchmark does first (sourced): find the build, check that
# it runs as root (it measures as the unprivileged user, default mrun-test, made with
# tests/setup-user.sh) and that the tools it compares against are installed.
#   bench_setup TOOL...      sets repo, build, user
# shellcheck shell=bash

bench_setup() {
    repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
    build=${MRUN_BUILD_DIR:-$repo/build}
    case $build in /*) ;; *) build=$repo/$build ;; esac
    user=${MRUN_BENCH_USER:-mrun-test}
    [ "$(id -u)" -eq 0 ] || { echo "bench: run as root (it measures as $user)" >&2; exit 1; }
    [ -x "$build/src/mrun" ] || { echo "bench: $build/src/mrun not built (scripts/build.sh)" >&2; exit 1; }
    local tool
    for tool in "$@"; do
        command -v "$tool" >/dev/null || { echo "bench: $tool missing: run scripts/install-deps.sh" >&2; exit 1; }
    done
    bash "$repo/tests/setup-user.sh" "$user" >/dev/null
}

# bench_hybrid_ns DIR: sets the array hybrid_ns to a command prefix that runs its
# command in a private mount namespace where /sys/fs/cgroup/unified/cgroup.controllers
# reads empty (DIR/empty bound over it), or to nothing on a host without that file.
# crun 1.8.1 refuses every container on a hybrid cgroup host ("cgroups in hybrid mode
# not supported"); only crun reads the file, so the others run the same there.
# shellcheck disable=SC2034  # hybrid_ns is the caller's
bench_hybrid_ns() {
    hybrid_ns=()
    [ -f /sys/fs/cgroup/unified/cgroup.controllers ] || return 0
    : >"$1/empty"
    hybrid_ns=(unshare -m --propagation private sh -c
               "mount --bind '$1/empty' /sys/fs/cgroup/unified/cgroup.controllers && exec \"\$@\"" sh)
}

# in_mode MODE CMD...: CMD in $stage with a clean environment (PATH=$path), as $user
# (MODE user, HOME=$stage/home) or as root (MODE root, HOME=$stage/root-home); HOME
# is per mode so that mrun's data dir is known. The caller sets stage, path and user.
# shellcheck disable=SC2154  # stage, path and user are the caller's
in_mode() {
  local mode=$1; shift
  if [ "$mode" = user ]; then
    (cd "$stage" && env -i HOME="$stage/home" PATH="$path" runuser -u "$user" -- "$@")
  else
    (cd "$stage" && env -i HOME="$stage/root-home" PATH="$path" "$@")
  fi
}
