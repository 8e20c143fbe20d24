# pytest-lib.sh - pytest's JUnit XML as TAP lines, for the guest scripts that run
# tests/integration/run.sh (sourced after tap-lib.sh: uses ok, not_ok, skip, diag).
#
#   junit_tap XML PREFIX NAMES | tap_import
#
# One TAP line per test case of XML, named PREFIX + FILE::TEST[PARAMS], the last 40
# lines of a failure's message as diagnostics; then a failure for each of NAMES (test
# function names, space-separated) that matched no case, so that a renamed test
# cannot drop out of a chosen list silently.
# shellcheck shell=bash

# junit_tap XML PREFIX NAMES: one record per test case of XML for tap_import, then an
# "F" record for each of NAMES that matched no case.
junit_tap() {
    /usr/bin/python3 - "$@" <<'PY'
import sys
import xml.etree.ElementTree as ET
path, prefix, names = sys.argv[1], sys.argv[2], sys.argv[3].split()
seen = set()
for case in ET.parse(path).getroot().iter("testcase"):
    test = case.get("name", "")
    seen.add(test.split("[")[0])
    name = f"{prefix}{case.get('classname', '').rsplit('.', 1)[-1]}::{test}"
    bad = case.find("failure")
    if bad is None:
        bad = case.find("error")
    skipped = case.find("skipped")
    if bad is not None:
        print(f"F\t{name}")
        text = (bad.get("message", "") + "\n" + (bad.text or "")).strip().splitlines()
        for line in text[-40:]:
            print(f"#\t{line}")
    elif skipped is not None:
        reason = " ".join((skipped.get("message") or "skipped").split())
        print(f"S\t{name}\t{reason}")
    else:
        print(f"P\t{name}")
for want in names:
    if want not in seen:
        print(f"F\t{prefix}{want}: chosen, but no test of that name ran (renamed or removed?)")
PY
}

# tap_import: the records of junit_tap as TAP lines.
tap_import() {
    local kind name reason diags=()
    flush() { ((${#diags[@]})) && diag "${diags[@]}"; diags=(); }
    while IFS=$'\t' read -r kind name reason; do
        case $kind in
        P) flush; ok "$name" ;;
        S) flush; skip "$name" "$reason" ;;
        F) flush; not_ok "$name" ;;
        "#") diags+=("  $name") ;;
        esac
    done
    flush
}
