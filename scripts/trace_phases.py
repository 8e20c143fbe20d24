#!/usr/bin/env python3
"""trace_phases.py - split an `strace -f` of fakegpu-client into the phases of a GPU
program's life and write docs/TRACE-SIDE-BY-SIDE.md (scripts/gen-trace-doc.sh runs it).

Phases, found from the trace itself:
  start     everything before the first open of a fakegpu node (loader, libraries)
  open      the opens of /dev/fakegpu*
  init      from there to the first mmap of the device (INFO, ALLOC, MAP ioctls)
  map       from the first mmap of the device to the first DOORBELL (fence page,
            buffers, the submission ring)
  steady    from the first DOORBELL to the last DOORBELL or WAIT (jobs in flight)
  teardown  the rest (FREE, munmap, close, exit)
"""
import argparse
import collections
import re
import sys

# _IOC_NR of the fakegpu ioctls (kmod/uapi/fakegpu.h).
IOCTL_NAMES = {0x0: "INFO", 0x1: "ALLOC", 0x2: "FREE", 0x3: "MAP", 0x4: "SUBMIT",
               0x5: "WAIT", 0x6: "DOORBELL", 0x10: "RESET"}
PHASES = ["start", "open", "init", "map", "steady", "teardown"]

CALL = re.compile(r"^(?P<pid>\d+)\s+(?:<\.\.\. (?P<resumed>\w+) resumed>|(?P<name>\w+)\()(?P<rest>.*)$")
FAKEGPU_IOCTL = re.compile(r"_IOC\([^,]*,\s*0xf6,\s*(0x[0-9a-f]+|\d+),")


def parse(path):
    """[(name, args_and_result)] in order; a call split by -f is counted once, where it starts."""
    calls = []
    for line in open(path, encoding="utf-8", errors="replace"):
        m = CALL.match(line.rstrip("\n"))
        if not m or m.group("resumed"):
            continue  # signals, exits, and the second half of an interrupted call
        calls.append((m.group("name"), m.group("rest")))
    return calls


def ioctl_name(rest):
    m = FAKEGPU_IOCTL.search(rest)
    return IOCTL_NAMES.get(int(m.group(1), 0), "fakegpu ioctl") if m else None


def split_phases(calls):
    device_fds = set()
    phase_of = []
    phase = "start"
    for name, rest in calls:
        if name == "openat" and "/dev/fakegpu" in rest:
            m = re.search(r"=\s*(\d+)", rest)
            if m:
                device_fds.add(m.group(1))
            if phase == "start":
                phase = "open"
        elif phase == "open":
            phase = "init"
        fd = re.match(r"\s*(\d+),", rest) if name in ("ioctl", "close") else None
        if name == "mmap":
            args = rest.split(",")
            fd = re.match(r"\s*(\d+)", args[4]) if len(args) > 4 else None
        on_device = fd is not None and fd.group(1) in device_fds
        if name == "mmap" and on_device and phase in ("init", "open"):
            phase = "map"
        if name == "ioctl" and ioctl_name(rest) == "DOORBELL" and phase in ("map", "init"):
            phase = "steady"
        phase_of.append(phase)
    # steady ends at its last DOORBELL or WAIT; what follows is teardown.
    last = max((i for i, (n, r) in enumerate(calls)
                if n == "ioctl" and ioctl_name(r) in ("DOORBELL", "WAIT") and phase_of[i] == "steady"),
               default=None)
    if last is not None:
        for i in range(last + 1, len(calls)):
            phase_of[i] = "teardown"
    return phase_of


def label(name, rest):
    if name == "ioctl":
        n = ioctl_name(rest)
        return f"ioctl {n}" if n else "ioctl (other)"
    if name == "mmap" and "/dev/" not in rest:
        args = rest.split(",")
        if len(args) > 5:
            off = args[5].split(")")[0].strip()
            if "MAP_SHARED" in rest and not args[4].strip().startswith("-1"):
                kind = {"0": "fence page", "0x10000": "ring"}.get(off, "buffer" if off.startswith("0x") and len(off) > 8 else None)
                if kind:
                    return f"mmap {kind}"
    if name == "openat" and "/dev/fakegpu" in rest:
        return "openat " + re.search(r'"(/dev/fakegpu[^"]*)"', rest).group(1)
    return name


def summarize(calls, phase_of):
    per = {p: collections.Counter() for p in PHASES}
    for (name, rest), p in zip(calls, phase_of):
        per[p][label(name, rest)] += 1
    return per


def bench_total(path):
    for line in open(path, encoding="utf-8"):
        parts = line.split()
        if parts and parts[-1] == "total":
            return int(parts[3])  # % time, seconds, usecs/call, calls, [errors,] total
    raise SystemExit(f"trace_phases: no total line in {path}")


CUDA = {
    "start": "The loader maps libcuda.so (tens of MB), libc, libstdc++; cuInit reads "
             "/proc/driver/nvidia/params and /sys to find the GPUs.",
    "open": "openat /dev/nvidiactl, /dev/nvidia-uvm (and -tools), /dev/nvidia0 per GPU - "
            "often more than one descriptor per node.",
    "init": "A flurry of ioctls: NV_ESC_CARD_INFO, NV_ESC_REGISTER_FD, then hundreds to "
            "thousands of resource-manager calls (NV_ESC_RM_ALLOC, NV_ESC_RM_CONTROL) creating "
            "the client, device, context, channels; UVM_INITIALIZE on nvidia-uvm.",
    "map": "mmap of /dev/nvidia0 for the channel's USERD page (its doorbell) and of "
           "/dev/nvidiactl or anonymous memory for pushbuffers and the GPFIFO ring; cuMemAlloc "
           "adds UVM ioctls and mappings.",
    "steady": "A kernel launch writes methods into the pushbuffer and an entry into the "
              "GPFIFO ring in mapped memory, then stores to the mapped doorbell: no syscall "
              "per launch. A synchronize spins on a semaphore in mapped memory, then may sleep "
              "in an ioctl or poll.",
    "teardown": "munmap and close; the driver tears the channels down when the last "
                "descriptor closes.",
}
FAKEGPU = {
    "start": "The loader maps the client, libfakegpu.so.1 and the C/C++ runtime.",
    "open": "One openat of the node: one context.",
    "init": "INFO (ABI and driver version checked by libfakegpu), then ALLOC and MAP of "
            "buffers.",
    "map": "mmap of the buffers (handle << 32), the fence page (offset 0, read-only) and the "
           "submission ring (offset 0x10000).",
    "steady": "Jobs are written into the mapped ring; one DOORBELL per batch; completion is "
              "read from the mapped fence page, WAIT only if it is not done yet.",
    "teardown": "FREE of the handles, munmap, close: release() frees what is left.",
}


def render(per, calls, jobs_line, bench_calls, bench_jobs, kernel):
    out = []
    w = out.append
    w("# The trace side by side: fakegpu-client and a CUDA program's start\n")
    w("Generated by `scripts/gen-trace-doc.sh` (do not edit): a real `strace -f` of "
      "`fakegpu-client --check ring` as root in the VM, on " + kernel + ", with `fakegpu.ko` "
      "loaded, split into phases by `scripts/trace_phases.py`. The CUDA column is the "
      "well-known shape of a CUDA program's start (NVIDIA's open kernel modules name the "
      "ioctls), annotated, **not measured here**: no NVIDIA GPU was lent to this task.\n")
    w(f"The client's ring check: `{jobs_line}`.\n")
    w("| phase | fakegpu-client: syscalls (measured) | what happens | a CUDA program |")
    w("|---|---|---|---|")
    for p in PHASES:
        c = per[p]
        total = sum(c.values())
        top = ", ".join(f"{k} {v}" for k, v in c.most_common(6))
        w(f"| {p} | **{total}**: {top or '-'} | {FAKEGPU[p]} | {CUDA[p]} |")
    w("")
    steady = per["steady"]
    w("## The steady state\n")
    w(f"In the client's steady phase: {sum(steady.values())} syscall(s) for the ring check's "
      f"jobs ({', '.join(f'{k} {v}' for k, v in steady.most_common()) or 'none'}).\n")
    w(f"`strace -f -c fakegpu-bench --path ring --jobs {bench_jobs}` (setup included): "
      f"**{bench_calls} syscalls for {bench_jobs} jobs, {bench_calls / bench_jobs:.4f} per "
      "job**. As with a GPU's pushbuffer and doorbell page, the data path is memory, "
      "not system calls; the syscalls are setup and the occasional doorbell or wait.\n")
    w("## Reading the phases\n")
    w("- **open and init** are where a container's configuration shows: a missing node is "
      "ENOENT at the openat, a refused one EACCES or EPERM (`mrun gpu matrix`), a library "
      "built for another driver fails right after, at INFO (`fakegpu(4)`, VERSIONS).")
    w("- **map** needs the descriptor open for writing for the ring; a read-only node "
      "(`--device ...:r`) stops here with EACCES.")
    w("- **steady** has no syscall per job, rootless or rootful: the kernel is not "
      "involved, so a user namespace cannot slow it.")
    w("")
    w(f"Total: {len(calls)} syscalls in the client's trace.")
    return "\n".join(out) + "\n"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--trace", required=True)
    ap.add_argument("--client-output", required=True)
    ap.add_argument("--bench-summary", required=True)
    ap.add_argument("--bench-jobs", type=int, required=True)
    ap.add_argument("--kernel", required=True)
    ap.add_argument("--output", required=True)
    a = ap.parse_args()
    calls = parse(a.trace)
    phase_of = split_phases(calls)
    per = summarize(calls, phase_of)
    for p in ("open", "init", "map", "steady"):
        if not per[p]:
            raise SystemExit(f"trace_phases: no {p} phase in {a.trace}: not a fakegpu-client trace?")
    ring = [l.strip() for l in open(a.client_output, encoding="utf-8") if l.startswith("ok ring")]
    text = render(per, calls, ring[0] if ring else "?", bench_total(a.bench_summary), a.bench_jobs,
                  a.kernel.strip())
    open(a.output, "w", encoding="utf-8").write(text)


if __name__ == "__main__":
    sys.exit(main())
