#!/usr/bin/env python3
"""Reduces `strace -f -tt -y` output of an OCI runtime to the ordered container set-up
steps, and renders several reduced runs side by side as Markdown.

Used by scripts/compare-runc.sh to write docs/COMPARE-RUNC.md; pure (reads text, returns
data), so that tests/tools/test_strace_steps.py checks it on a committed sample trace.

    strace_steps.py reduce TRACE [--sub PATH=NAME ...] > steps.json
    strace_steps.py render META.json > COMPARE-RUNC.md
        META: {"header": [lines], "notes": FILE, "modes": [{"title", "config",
               "remarks": [lines], "runs": {"mrun": "steps.json", ...}}]}

A step is one system call that sets a container up, with a tag saying what it is for
(TAGS, in the order a runtime usually goes through them). Everything else the trace
holds (library loads, state files, Go runtime threads, capability reads) is dropped;
threads are counted. Pids become P1, P2, ... in order of appearance (a thread is its
process), so that two runs of one runtime reduce to the same text.
"""

import json
import re
import sys

TAGS = [
    "process",         # fork/clone without new namespaces, PR_SET_NAME, subreaper, pdeathsig
    "keyring",         # keyctl: a new session keyring
    "namespaces",      # clone/clone3 with CLONE_NEW*, unshare, setns
    "id maps",         # /proc/PID/{uid_map,gid_map,setgroups}, newuidmap/newgidmap
    "user ids",        # setresuid/setresgid/setgroups: becoming root in the user namespace
    "propagation",     # mount(NULL, X, NULL, MS_REC|MS_PRIVATE/MS_SLAVE)
    "rootfs mounts",   # overlay, the rootfs bind, its read-only remount
    "/proc /dev /sys",  # proc, sysfs, tmpfs on /dev, devpts, mqueue, cgroup
    "devices",         # /dev/null, zero, ... bound from the host or made by mknod
    "masked paths",    # /dev/null or an empty read-only tmpfs over maskedPaths
    "readonly paths",  # read-only bind over readonlyPaths
    "pivot_root",      # pivot_root, chroot, the old root's detach
    "cwd",             # chdir
    "hostname",        # sethostname
    "capabilities",    # PR_CAPBSET_DROP, capset, ambient raise/lower, keepcaps
    "no_new_privs",    # PR_SET_NO_NEW_PRIVS
    "seccomp probe",   # libseccomp asking the kernel what it supports
    "seccomp",         # the filter load
    "bpf",             # bpf(): cgroup device filters
    "exec",            # execve of the runtime itself, its re-exec, the container process
]

# The default maskedPaths and readonlyPaths of `runc spec` and `crun spec`, plus
# /sys/firmware's neighbours some runtimes add.
MASKED = ["/proc/acpi", "/proc/asound", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
          "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
          "/sys/firmware", "/sys/dev/block", "/proc/interrupts", "/sys/devices/virtual/powercap"]
READONLY = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]
KERNEL_FS_DIRS = ["/proc", "/dev", "/dev/pts", "/dev/shm", "/dev/mqueue", "/sys",
                  "/sys/fs/cgroup"]
KERNEL_FS_TYPES = {"proc", "sysfs", "devpts", "mqueue", "cgroup", "cgroup2"}
DEVICE_NODES = ["/dev/null", "/dev/zero", "/dev/full", "/dev/tty", "/dev/random", "/dev/urandom"]

LINE = re.compile(r"^(?:\[pid\s+)?(\d+)\]?\s+(\d\d:\d\d:\d\d\.\d+)\s+(.*)$")
CALL = re.compile(r"^(\w+)\((.*)\)\s+=\s+(.*)$")
UNFINISHED = " <unfinished ...>"
RESUMED = re.compile(r"^<\.\.\. (\w+) resumed>\s?(.*)$")
FD_PATH = re.compile(r"^(-?\d+)<(.*)>$")


def parse(lines):
    """strace lines -> [(pid, seconds, name, args, ret)], unfinished calls joined with
    their resumption, signals and exits dropped. ret keeps the -y decoration."""
    calls, pending = [], {}
    for raw in lines:
        m = LINE.match(raw.rstrip("\n"))
        if not m:
            continue
        pid, clock, rest = int(m.group(1)), m.group(2), m.group(3)
        h, mi, s = clock.split(":")
        t = int(h) * 3600 + int(mi) * 60 + float(s)
        if rest.startswith("---") or rest.startswith("+++"):
            continue
        if rest.endswith(UNFINISHED):
            pending[pid] = (t, rest[: -len(UNFINISHED)])
            continue
        r = RESUMED.match(rest)
        if r:
            if pid not in pending:
                continue
            t, head = pending.pop(pid)
            rest = head + r.group(2)
        c = CALL.match(rest)
        if c:
            calls.append((pid, t, c.group(1), c.group(2), c.group(3)))
    return calls


def split_args(args):
    """Top-level comma split that respects quotes, brackets and braces."""
    out, depth, cur, quote, esc = [], 0, [], False, False
    for ch in args:
        if quote:
            cur.append(ch)
            if esc:
                esc = False
            elif ch == "\\":
                esc = True
            elif ch == '"':
                quote = False
            continue
        if ch == '"':
            quote = True
        elif ch in "[{(":
            depth += 1
        elif ch in "]})":
            depth -= 1
        elif ch == "," and depth == 0:
            out.append("".join(cur).strip())
            cur = []
            continue
        cur.append(ch)
    if cur or out:
        out.append("".join(cur).strip())
    return out


def unquote(arg):
    arg = arg.strip()
    if arg.endswith("..."):
        arg = arg[:-3]
    if len(arg) >= 2 and arg[0] == '"' and arg[-1] == '"':
        return arg[1:-1]
    return arg


def strip_fd(arg):
    """'6</proc/1/uid_map>' -> ('6', '/proc/1/uid_map'); 'AT_FDCWD</x>' -> ('AT_FDCWD', '/x')."""
    m = re.match(r"^([-\w]+)<(.*)>(?:\(deleted\))?$", arg.strip())
    return (m.group(1), m.group(2)) if m else (arg.strip(), None)


def ends_with_dir(path, dirs):
    """The entry of dirs that path ends with (as whole components), longest first."""
    for d in sorted(dirs, key=len, reverse=True):
        if path == d or path.endswith(d):
            return d
    return None


def exec_name(name, args):
    """What an execve makes of a process: argv[0]'s basename ("runc init" for runc's
    re-exec), marked "(memfd)" when it runs a sealed copy of the runtime."""
    a = split_args(args)
    argv = a[2 if name == "execveat" else 1] if len(a) > 2 else "[]"
    words = [unquote(w) for w in split_args(argv.strip()[1:-1])] if argv.startswith("[") else []
    base = words[0].rsplit("/", 1)[-1] if words else unquote(a[0]).rsplit("/", 1)[-1]
    if len(words) > 1 and words[1] == "init":
        base += " init"
    if name == "execveat" or "memfd:" in a[0]:
        base += " (memfd)"
    return base


def failed(ret):
    return ret.startswith("-1 ")


class Reducer:
    def __init__(self, subs=()):
        # (value, placeholder), longest value first so that a bundle's rootfs wins over
        # the bundle itself
        self.subs = sorted(subs, key=lambda s: len(s[0]), reverse=True)
        self.label = {}       # host pid -> "P<n>"
        self.proc_of = {}     # thread id -> its process's pid
        self.name = {}        # process pid -> what it currently is (exec'd binary, comm)
        self.history = {}     # process pid -> every name it had, in order
        self.fds = {}         # process pid -> {fd: path}, from -y decorations
        self.pivoted = set()  # process pids that called pivot_root
        self.threads = 0

    # -- pids ---------------------------------------------------------------------
    def proc(self, pid):
        return self.proc_of.get(pid, pid)

    def lab(self, pid):
        p = self.proc(pid)
        if p not in self.label:
            self.label[p] = f"P{len(self.label) + 1}"
        return self.label[p]

    def norm(self, text):
        for value, name in self.subs:
            text = text.replace(value, name)
        # pids in /proc paths and in new[ug]idmap's first argument
        text = re.sub(r"/proc/(\d+)(?=[/>\"]|$)",
                      lambda m: "/proc/" + self.pid_word(int(m.group(1))), text)
        text = re.sub(r"(new[ug]idmap\", \")(\d+)",
                      lambda m: m.group(1) + self.pid_word(int(m.group(2))), text)
        text = re.sub(r"0x[0-9a-f]{6,}", "0x…", text)
        text = re.sub(r"socket:\[\d+\]", "socket", text)
        text = re.sub(r"AT_FDCWD<[^>]*>", "AT_FDCWD", text)
        text = re.sub(r"/\* \d+ vars \*/", "/* env */", text)
        return text

    def pid_word(self, pid):
        return self.lab(pid) if self.proc(pid) in self.label else "PID"

    # -- classification -----------------------------------------------------------
    def target(self, pid, path):
        """A mount target as a host path: /proc/self/fd/N resolved through the fds this
        process opened."""
        m = re.match(r"^/proc/(?:self|thread-self|\d+)/fd/(\d+)$", path)
        if m:
            return self.fds.get(self.proc(pid), {}).get(m.group(1), path)
        return path

    def classify(self, pid, name, args, ret):
        a = split_args(args)
        p = self.proc(pid)
        if name in ("clone", "clone3", "fork", "vfork"):
            if "CLONE_THREAD" in args:
                return "thread"
            return "namespaces" if "CLONE_NEW" in args else "process"
        if name in ("unshare", "setns"):
            return "namespaces"
        if name in ("execve", "execveat"):
            path = unquote(a[0]) if a else ""
            if path.endswith(("/newuidmap", "/newgidmap")):
                return "id maps"
            return "exec"
        if name in ("open", "openat", "openat2"):
            path = unquote(a[1] if name != "open" and len(a) > 1 else a[0] if a else "")
            if re.search(r"(^|/)(uid_map|gid_map|setgroups)$", path) and "O_RDONLY" not in args:
                return "id maps"
            return None
        if name == "write":
            _, path = strip_fd(a[0]) if a else ("", None)
            if path and re.search(r"/(uid_map|gid_map|setgroups)$", path):
                return "id maps"
            return None
        if name in ("setgroups", "setresuid", "setresgid", "setuid", "setgid", "setreuid",
                    "setregid"):
            return "user ids"
        if name == "mount":
            return self.classify_mount(pid, a)
        if name in ("umount2", "umount"):
            return "pivot_root" if p in self.pivoted else "rootfs mounts"
        if name in ("open_tree", "move_mount", "fsopen", "fsmount", "fsconfig", "fspick",
                    "mount_setattr"):
            paths = [self.target(pid, unquote(x)) for x in a if x.startswith('"')]
            for tags, dirs in (("masked paths", MASKED), ("readonly paths", READONLY),
                               ("/proc /dev /sys", KERNEL_FS_DIRS)):
                if any(ends_with_dir(x, dirs) for x in paths):
                    return tags
            return "rootfs mounts"
        if name in ("pivot_root", "chroot"):
            return "pivot_root"
        if name in ("chdir", "fchdir"):
            return "cwd"
        if name in ("mknod", "mknodat"):
            # a FIFO is runc's exec.fifo, which `start` opens to release the container
            return "process" if "S_IFIFO" in args else "devices"
        if name in ("sethostname", "setdomainname"):
            return "hostname"
        if name in ("keyctl", "add_key", "request_key"):
            return "keyring"
        if name == "capset":
            return "capabilities"
        if name == "bpf":
            return "bpf"
        if name == "seccomp":
            if "SECCOMP_SET_MODE_FILTER" in args and "filter=" in args and not failed(ret):
                return "seccomp"
            return "seccomp probe"
        if name == "prctl":
            op = a[0] if a else ""
            if op == "PR_SET_NO_NEW_PRIVS":
                return "no_new_privs"
            if op == "PR_SET_SECCOMP":
                return "seccomp"
            if op in ("PR_CAPBSET_DROP", "PR_SET_KEEPCAPS", "PR_SET_SECUREBITS"):
                return "capabilities"
            if op == "PR_CAP_AMBIENT":
                return None if "PR_CAP_AMBIENT_IS_SET" in args else "capabilities"
            if op in ("PR_SET_NAME", "PR_SET_CHILD_SUBREAPER", "PR_SET_PDEATHSIG",
                      "PR_SET_DUMPABLE"):
                return "process"
            return None  # PR_GET_*, PR_CAPBSET_READ: questions, not steps
        return None

    def classify_mount(self, pid, a):
        if len(a) < 4:
            return "rootfs mounts"
        source, fstype, flags = unquote(a[0]), unquote(a[2]), a[3]
        if source == "/proc/self/exe":
            return "exec"  # a read-only bind of the runtime's binary (CVE-2019-5736)
        target = self.target(pid, unquote(a[1]))
        source = self.target(pid, source)
        if (a[0] == "NULL" or source == "") and re.fullmatch(
                r"(MS_REC\|)?MS_(PRIVATE|SLAVE|SHARED|UNBINDABLE)", flags):
            return "propagation"
        if ends_with_dir(target, MASKED):
            return "masked paths"
        if ends_with_dir(target, READONLY):
            return "readonly paths"
        if fstype in KERNEL_FS_TYPES:
            return "/proc /dev /sys"
        if source in DEVICE_NODES or ends_with_dir(target, DEVICE_NODES):
            return "devices"
        if ends_with_dir(target, KERNEL_FS_DIRS) or re.search(r"/sys/fs/cgroup(/|$)", target):
            return "/proc /dev /sys"
        return "rootfs mounts"

    # -- bookkeeping that changes later classification ------------------------------
    def observe(self, pid, name, args, ret):
        p = self.proc(pid)
        r = ret.split()[0] if ret else ""
        if name in ("clone", "clone3", "fork", "vfork") and re.fullmatch(r"\d+", r):
            child = int(r)
            if "CLONE_THREAD" in args:
                self.threads += 1
            else:
                self.lab(p)
                self.lab(child)
                if child not in self.name:
                    self.rename(child, self.name.get(p, "?"))
                    self.fds[child] = dict(self.fds.get(p, {}))
        fd, path = strip_fd(ret.split(" ", 1)[0]) if ret else (None, None)
        if path and re.fullmatch(r"\d+", fd or ""):
            self.fds.setdefault(p, {})[fd] = path
        if name in ("execve", "execveat") and not failed(ret):
            self.rename(p, exec_name(name, args))
        if name == "prctl" and args.startswith("PR_SET_NAME"):
            self.rename(p, unquote(split_args(args)[1]))
        if name == "pivot_root" and not failed(ret):
            self.pivoted.add(p)

    def rename(self, p, new):
        self.name[p] = new
        h = self.history.setdefault(p, [])
        if not h or h[-1] != new:
            h.append(new)

    def reduce(self, lines):
        calls = parse(lines)
        # Parents first: a new thread's or process's first call may come before its
        # clone returns.
        parent = {}
        for pid, _, name, args, ret in calls:
            r = ret.split()[0] if ret else ""
            if name in ("clone", "clone3", "fork", "vfork") and r.isdigit():
                if "CLONE_THREAD" in args:
                    self.proc_of[int(r)] = self.proc(pid)
                else:
                    parent[int(r)] = self.proc(pid)
        steps = []
        t0 = calls[0][1] if calls else 0.0
        for pid, t, name, args, ret in calls:
            p = self.proc(pid)
            if p in parent:
                self.lab(parent[p])  # a parent is numbered before its child
            self.lab(pid)
            if p not in self.name and p in parent:  # running before its clone returned
                self.rename(p, self.name.get(parent[p], "?"))
                self.fds[p] = dict(self.fds.get(parent[p], {}))
            tag = self.classify(pid, name, args, ret)
            self.observe(pid, name, args, ret)
            if tag is None or tag == "thread":
                continue
            p = self.proc(pid)
            if name in ("clone", "clone3", "fork", "vfork") and ret.isdigit():
                ret = self.lab(int(ret))
            text = self.norm(f"{name}({args}) = {ret}")
            steps.append({"tag": tag, "proc": self.lab(p), "name": self.name.get(p, "?"),
                          "call": name, "text": text, "ms": round((t - t0) * 1000, 1),
                          "failed": failed(ret)})
        return {"steps": steps, "threads": self.threads,
                "processes": {lab: " → ".join(self.history.get(p, ["?"]))
                              for p, lab in self.label.items()}}


def reduce_trace(lines, subs=()):
    return Reducer(subs).reduce(lines)


# ---- rendering ----------------------------------------------------------------------


def runs_of(steps):
    """Consecutive steps with the same tag and process -> [(tag, proc, name, [steps])]."""
    out = []
    for s in steps:
        if out and out[-1][0] == s["tag"] and out[-1][1] == s["proc"]:
            out[-1][3].append(s)
        else:
            out.append((s["tag"], s["proc"], s["name"], [s]))
    return out


def calls_summary(steps):
    counts = {}
    for s in steps:
        counts[s["call"]] = counts.get(s["call"], 0) + 1
    return ", ".join(f"{c}×{n}" if n > 1 else c for c, n in counts.items())


def summary_table(reduced, names):
    rows = ["| step | " + " | ".join(names) + " |",
            "| --- | " + " | ".join("---" for _ in names) + " |"]
    first = {}
    for n in names:
        order = []
        for s in reduced[n]["steps"]:
            if s["tag"] not in order:
                order.append(s["tag"])
        first[n] = {tag: i + 1 for i, tag in enumerate(order)}
    for tag in TAGS:
        cells, any_ = [], False
        for n in names:
            st = [s for s in reduced[n]["steps"] if s["tag"] == tag]
            if not st:
                cells.append("–")
                continue
            any_ = True
            procs = sorted({s["proc"] for s in st}, key=lambda p: int(p[1:]))
            bad = sum(s["failed"] for s in st)
            cell = f"#{first[n][tag]} · {len(st)}× · {','.join(procs)} · {calls_summary(st)}"
            if bad:
                cell += f" ({bad} failed)"
            cells.append(cell)
        if any_:
            rows.append(f"| {tag} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


MOUNT_TAGS = {"propagation", "rootfs mounts", "/proc /dev /sys", "devices", "masked paths",
              "readonly paths"}


def phases(steps):
    """runs_of, with consecutive mount runs of one process merged into one phase:
    [(label, proc, name, [steps])]; a mount phase's label counts its tags."""
    out = []
    for tag, proc, name, st in runs_of(steps):
        if (tag in MOUNT_TAGS and out and out[-1][1] == proc
                and out[-1][4]):
            out[-1][3].extend(st)
        else:
            out.append([tag, proc, name, list(st), tag in MOUNT_TAGS])
    result = []
    for tag, proc, name, st, is_mount in out:
        if is_mount and len({s["tag"] for s in st}) > 1:
            counts = {}
            for s in st:
                counts[s["tag"]] = counts.get(s["tag"], 0) + 1
            tag = "mounts: " + ", ".join(f"{t} {n}" for t, n in counts.items())
            result.append((tag, proc, name, st, True))
        else:
            result.append((tag, proc, name, st, False))
    return result


def sequence_table(reduced, names):
    cols = {n: phases(reduced[n]["steps"]) for n in names}
    depth = max(len(c) for c in cols.values())
    rows = ["| # | " + " | ".join(names) + " |", "| ---: | " + " | ".join("---" for _ in names) + " |"]
    for i in range(depth):
        cells = []
        for n in names:
            if i < len(cols[n]):
                tag, proc, pname, st, merged = cols[n][i]
                count = "" if merged else f" ×{len(st)}"
                cells.append(f"{tag}{count} ({proc} {pname.replace('|', '/')}, "
                             f"{st[0]['ms']:.0f} ms)")
            else:
                cells.append("")
        rows.append(f"| {i + 1} | " + " | ".join(cells) + " |")
    return "\n".join(rows)


def detail(reduced, name, limit=160):
    """One line per step; repeated capability and seccomp-probe calls of one process
    folded into their first line with a count."""
    groups = []  # [key, line, count]
    for s in reduced[name]["steps"]:
        line = f"{s['ms']:8.1f} {s['proc']:<3} {s['tag']:<15} {s['text']}"
        key = (s["proc"], s["tag"], s["call"])
        if groups and groups[-1][0] == key and s["tag"] in ("capabilities", "seccomp probe"):
            groups[-1][2] += 1
            continue
        groups.append([key, line, 1])
    out = []
    for _, line, count in groups:
        line = line if len(line) <= limit else line[: limit - 1] + "…"
        out.append(line + (f"   (×{count})" if count > 1 else ""))
    return "\n".join(out)


def render_mode(mode, reduced):
    names = list(reduced)
    md = [f"## {mode['title']}", "", f"config.json: {mode.get('config', '')}.", ""]
    for remark in mode.get("remarks", []):
        md.append(f"- {remark}")
    if mode.get("remarks"):
        md.append("")
    if not names:
        return md + ["No runtime produced a trace in this mode.", ""]
    md += ["### Steps side by side", "",
           "Each cell: `#order` (when the step first comes, counting steps) · calls · "
           "processes · which system calls (failed calls included). `–`: never done.", "",
           summary_table(reduced, names), "", "Processes (each name it had, in order):", ""]
    for n in names:
        procs = "; ".join(f"{lab} {nm}" for lab, nm in reduced[n]["processes"].items())
        md.append(f"- **{n}**: {procs}; {reduced[n]['threads']} threads (their calls count "
                  f"as their process's)")
    md += ["", "### Order", "",
           "Consecutive steps of one process as one row (consecutive mount steps merged), "
           "with the time since the runtime's own execve. strace slows every call: "
           "compare orders, not milliseconds.", "", sequence_table(reduced, names), "",
           "### Every step", "",
           "Paths replaced by `$ROOTFS`, `$BUNDLE`, `$STATE` (the runtime's --root), "
           "`$DATA` (mrun's data dir), `$STAGE` (the script's scratch dir); pids by P1, "
           "P2, ...; pointers by `0x…`. Repeated capability and seccomp-probe calls are "
           "folded (×N).", ""]
    for n in names:
        md += [f"<details><summary>{n}: {len(reduced[n]['steps'])} steps</summary>", "",
               "```", detail(reduced, n), "```", "", "</details>", ""]
    return md


def render(meta, modes, notes=""):
    """meta: header lines, intro; modes: [{title, config, remarks, runs: {name: reduced}}]."""
    md = [f"# {meta.get('title', 'mrun, runc and crun: one container, system call by system call')}",
          "", "<!-- generated by scripts/compare-runc.sh; do not edit by hand -->", ""]
    md += meta.get("header", []) + [""]
    if notes:
        md += [notes.strip(), ""]
    for mode in modes:
        md += render_mode(mode, mode["runs"])
    return "\n".join(md).rstrip("\n") + "\n"


def main(argv):
    if len(argv) >= 2 and argv[0] == "reduce":
        subs = []
        rest = argv[2:]
        while rest:
            if rest[0] == "--sub" and len(rest) > 1:
                value, _, name = rest[1].rpartition("=")
                subs.append((value, name))
                rest = rest[2:]
            else:
                sys.exit(f"strace_steps: unknown argument {rest[0]}")
        with open(argv[1], errors="replace") as f:
            json.dump(reduce_trace(f, subs), sys.stdout, indent=1)
        return 0
    if len(argv) == 2 and argv[0] == "render":
        meta = json.load(open(argv[1]))
        notes = open(meta["notes"]).read() if meta.get("notes") else ""
        modes = [dict(m, runs={n: json.load(open(p)) for n, p in m["runs"].items()})
                 for m in meta["modes"]]
        sys.stdout.write(render(meta, modes, notes))
        return 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
