#!/usr/bin/env python3
"""Adds up test results from JUnit XML (*.xml) and TAP (*.tap) files.

Prints one line per suite and a closing line
    mrun-tests: N passed, N failed, N skipped
Exits 1 when anything failed or no test ran at all.

    summarize-results.py RESULTS_DIR [EXTRA_FAILURE_NAME...]
Each extra name (a suite that crashed before writing results) counts as one failure.
"""
import glob
import os
import re
import sys
import xml.etree.ElementTree as ET

TAP_LINE = re.compile(r"^(not ok|ok)\b(.*)$")


def junit_counts(path):
    passed = failed = skipped = 0
    failures = []
    for case in ET.parse(path).getroot().iter("testcase"):
        name = f"{case.get('classname', '')}::{case.get('name', '')}"
        if case.find("failure") is not None or case.find("error") is not None:
            failed += 1
            failures.append(name)
        elif case.find("skipped") is not None:
            skipped += 1
        else:
            passed += 1
    return passed, failed, skipped, failures


def tap_counts(path):
    passed = failed = skipped = 0
    failures = []
    with open(path, encoding="utf-8", errors="replace") as f:
        for line in f:
            m = TAP_LINE.match(line.rstrip("\n"))
            if not m:
                continue
            directive = m.group(2)
            if re.search(r"#\s*SKIP", directive, re.I):
                skipped += 1
            elif m.group(1) == "ok":
                passed += 1
            else:
                failed += 1
                failures.append(directive.strip())
    return passed, failed, skipped, failures


def main():
    results = sys.argv[1]
    extra = sys.argv[2:]
    total = [0, 0, 0]
    all_failures = []
    for path in sorted(glob.glob(os.path.join(results, "*.xml")) + glob.glob(os.path.join(results, "*.tap"))):
        counts = junit_counts(path) if path.endswith(".xml") else tap_counts(path)
        suite = os.path.splitext(os.path.basename(path))[0]
        print(f"  {suite:28} {counts[0]:4} passed {counts[1]:4} failed {counts[2]:4} skipped")
        for i in range(3):
            total[i] += counts[i]
        all_failures += [f"{suite}: {name}" for name in counts[3]]
    for name in extra:
        total[1] += 1
        all_failures.append(f"{name}: the suite did not complete")
    for failure in all_failures:
        print(f"  FAILED {failure}")
    print(f"mrun-tests: {total[0]} passed, {total[1]} failed, {total[2]} skipped")
    return 1 if total[1] > 0 or total[0] == 0 else 0


if __name__ == "__main__":
    sys.exit(main())
