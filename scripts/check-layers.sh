#!/usr/bin/env bash
# The layering rules the build cannot see, checked over the sources. Prints TAP, one
# line per rule; writes it to $1 when given.
#
#   1. Only src/sys/ makes the system calls that change what a process sees of the
#      machine: mount, umount, pivot_root, the new mount API, setns, unshare, clone3.
#      Every other file goes through sys/'s wrappers (errors named one way, one place to
#      audit), or through a sys::Syscalls (sys/seam.hpp), which is sys/'s too. The
#      setuid helper (helpers/) is a separate C program and keeps its own.
#   2. src/oci/ (the spec's parsing and its conversion) uses of the runtime only the
#      types it converts to (runtime/config.hpp, runtime/process_spec.hpp): never the
#      state store, the launch or the host checks, so that a config converts the same
#      on any machine.
#   3. The stages a container goes through are folders, each built only on those
#      before it: runtime/ (the shared model) < state/ < init/ and monitor/ < exec/ and
#      launch/ < lifecycle/. A folder includes none above it or beside it, so what a
#      container's setup (init/) runs cannot reach the launch or the state store.
set -uo pipefail
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
cd "$repo"
out=${1:-/dev/null}
n=0 failed=0 tap=""

# check NAME COMMAND...: ok when COMMAND prints nothing; what it prints is the failure.
check() {
    local name=$1 found
    shift
    n=$((n + 1))
    found=$("$@")
    if [[ -z $found ]]; then
        tap+="ok $n - $name"$'\n'
    else
        failed=$((failed + 1))
        tap+="not ok $n - $name"$'\n'"$(sed 's/^/# /' <<<"$found")"$'\n'
    fi
}

namespace_and_mount_calls_outside_sys() {
    git ls-files 'src/*.cpp' 'src/*.hpp' 'src/*.c' 'src/*.h' | grep -v '^src/sys/' |
        xargs grep -nE '(::|\b)(mount|umount2?|pivot_root|setns|unshare|mount_setattr|move_mount|open_tree|fsopen|fsmount|fsconfig)\(|SYS_(mount_setattr|move_mount|open_tree|fsopen|fsmount|fsconfig|pivot_root|clone3|setns|unshare)\b' |
        grep -vE '^[^:]+:[0-9]+:\s*//' |
        grep -vE '(sys|mount)::[a-z_]*(mount|setns|unshare)' |
        grep -vE '(->|\.)setns\(' || true  # through a sys::Syscalls (sys/seam.hpp)
}
check "mount, setns, unshare and clone3 only in src/sys" namespace_and_mount_calls_outside_sys

runtime_includes_in_oci() {
    git ls-files 'src/oci/*' | xargs grep -nE '#include "runtime/' |
        grep -vE '#include "runtime/(config|process_spec).hpp"' || true
}
check "src/oci includes of the runtime only its types (config.hpp, process_spec.hpp)" \
    runtime_includes_in_oci

# allowed[FOLDER]: the stage folders FOLDER may include, itself first.
declare -A allowed=(
    [runtime]="runtime"
    [state]="state runtime"
    [init]="init runtime"
    [monitor]="monitor runtime"
    [exec]="exec init monitor state runtime"
    [launch]="launch init monitor state runtime"
    [lifecycle]="lifecycle launch init monitor state runtime"
)
stage_includes_out_of_order() {
    local folder stage
    for folder in "${!allowed[@]}"; do
        for stage in "${!allowed[@]}"; do
            [[ " ${allowed[$folder]} " == *" $stage "* ]] && continue
            git ls-files "src/$folder/*" | xargs -r grep -nE "#include \"$stage/" || true
        done
    done
}
check "each stage folder includes only the stages before it" stage_includes_out_of_order

printf '1..%d\n%s' "$n" "$tap" | tee "$out"
[ $failed -eq 0 ]
