#!/usr/bin/env python3
"""Every option a command accepts must be documented in its man page.

Reads each subcommand's --help (the source of truth is the CLI itself), pulls out its
option names, and checks that the scdoc source of the page mentions each one.
Prints TAP; exits 1 when an option is missing from its page.

    check_options.py MRUN_BINARY MAN_DIR [RESULTS.tap]
"""
import re
import subprocess
import sys

# (page, argv prefix whose --help lists the options documented on that page)
PAGES = [
    ("mrun.1.scd", []),
    ("mrun.1.scd", ["list"]),
    ("mrun.1.scd", ["kill"]),
    ("mrun.1.scd", ["delete"]),
    ("mrun.1.scd", ["stats"]),
    ("mrun-run.1.scd", ["run"]),
    ("mrun-rootfs.1.scd", ["rootfs", "busybox"]),
    ("mrun-oci.1.scd", ["spec"]),
    ("mrun-oci.1.scd", ["create"]),
    ("mrun-oci.1.scd", ["start"]),
    ("mrun-oci.1.scd", ["state"]),
    ("mrun-oci.1.scd", ["features"]),
    ("mrun-oci.1.scd", ["exec"]),
    ("mrun-oci.1.scd", ["ps"]),
    ("mrun-oci.1.scd", ["pause"]),
    ("mrun-oci.1.scd", ["resume"]),
    ("mrun-oci.1.scd", ["update"]),
    ("mrun-oci.1.scd", ["events"]),
    ("mrun-oci.1.scd", ["kill"]),
    ("mrun-oci.1.scd", ["delete"]),
    ("mrun-gpu.1.scd", ["gpu", "matrix"]),
    ("mrun-gpu.1.scd", ["gpu", "doctor"]),
    ("mrun-cdi.1.scd", ["cdi", "generate"]),
    ("mrun-cdi.1.scd", ["cdi", "list"]),
]

OPTION = re.compile(r"^\s+((?:-\w|--[\w-]+)(?:,(?:-\w|--[\w-]+))*)", re.M)


def options_of(mrun, argv):
    out = subprocess.run([mrun, *argv, "--help"], capture_output=True, text=True, check=True).stdout
    names = []
    for match in OPTION.finditer(out):
        names.extend(match.group(1).split(","))
    return names


def main():
    mrun, man_dir = sys.argv[1], sys.argv[2]
    lines, failed, n = [], 0, 0
    for page, argv in PAGES:
        with open(f"{man_dir}/{page}", encoding="utf-8") as f:
            text = f.read()
        for name in options_of(mrun, argv):
            n += 1
            # scdoc bold: *--name*; also accept the name inside a combined entry.
            documented = f"*{name}*" in text or re.search(rf"(^|[\s*,]){re.escape(name)}([\s*,=]|$)", text, re.M)
            label = f"{' '.join(['mrun', *argv])} {name} is documented in {page}"
            if documented:
                lines.append(f"ok {n} - {label}")
            else:
                failed += 1
                lines.append(f"not ok {n} - {label}")
    tap = f"1..{n}\n" + "\n".join(lines) + "\n"
    sys.stdout.write(tap)
    if len(sys.argv) > 3:
        with open(sys.argv[3], "w", encoding="utf-8") as f:
            f.write(tap)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
