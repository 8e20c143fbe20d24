# tap-lib.sh - TAP output for the guest scripts (sourced; the caller sets $tap, the file
# that keeps a copy of every line, and the counters n=0 failed=0).
# shellcheck shell=bash

emit() { printf '%s\n' "$*" | tee -a "$tap"; }
diag() { printf '%s\n' "$@" | sed 's/^/# /' | tee -a "$tap"; }
ok() { n=$((n + 1)); emit "ok $n - $1"; }
not_ok() {
    n=$((n + 1)) failed=$((failed + 1))
    emit "not ok $n - $1"
    shift
    (($#)) && diag "$@"
}
skip() { n=$((n + 1)); emit "ok $n - $1 # SKIP $2"; }
# check NAME COMMAND...: ok if COMMAND succeeds; its output becomes diagnostics on failure.
check() {
    local name=$1 output
    shift
    if output=$("$@" 2>&1); then ok "$name"; else not_ok "$name" "$output"; fi
}
# expect_exit NAME CODE PATTERN COMMAND...: COMMAND exits CODE and prints PATTERN (grep -E).
expect_exit() {
    local name=$1 want=$2 pattern=$3 output rc
    shift 3
    output=$("$@" 2>&1)
    rc=$?
    if [[ $rc == "$want" ]] && grep -qE -- "$pattern" <<<"$output"; then
        ok "$name"
    else
        not_ok "$name" "exit $rc (want $want), output must match /$pattern/:" "$output"
    fi
}

# tap_finish: the plan line and the count of failures, then exit 0 only if none failed.
tap_finish() {
    emit "1..$n"
    diag "$failed of $n tests failed"
    ((failed == 0))
    exit
}
