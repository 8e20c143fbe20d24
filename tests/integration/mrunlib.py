"""Helpers shared by the mrun integration tests: where mrun keeps things, how
to run it with a timeout, and how to look at the host (processes, mounts)
without trusting mrun to report on itself.

The suite runs twice: rootless as an unprivileged user (mrun-test) and rootful
as root. ROOTFUL says which; tests that only make sense in one mode skip.
"""

import collections
import json
import os
import pwd
import re
import shutil
import signal
import subprocess
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))

MRUN = os.path.abspath(os.environ.get("MRUN") or os.path.join(REPO, "build/src/mrun"))
PROBE = os.path.abspath(
    os.environ.get("MRUN_PROBE") or os.path.join(REPO, "build/tests/probe/mrun-probe"))

UID = os.getuid()
GID = os.getgid()
ROOTFUL = os.geteuid() == 0
USER = pwd.getpwuid(UID).pw_name
HOME = os.environ.get("HOME") or pwd.getpwuid(UID).pw_dir
MODE = "rootful" if ROOTFUL else "rootless"

# MRUN_IT_OVERLAY=native|fuse: every `mrun run` of the suite that names no --overlay
# (and no OCI --bundle) gets this one, so the whole suite runs on either overlay.
# tests/vm/integration-suite.sh runs it with both on Debian's kernel. Unset: mrun's
# own default (auto).
OVERLAY = os.environ.get("MRUN_IT_OVERLAY") or None
OVERLAY_CHOICES = ("auto", "native", "fuse", "none")

# Default time limit of one mrun invocation; a hang is a failure, never a stall.
TIMEOUT = 30
DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
# An environment variable that exists only on the host; it must not leak in.
HOST_ONLY_VAR = "MRUN_IT_HOST_ONLY"


def base_env(**extra):
    """The environment mrun runs with: minimal, like CI's, plus extra
    (a value of None removes the variable)."""
    env = {
        "PATH": os.environ.get("PATH") or DEFAULT_PATH,
        "HOME": HOME,
        "LANG": "C.UTF-8",
        "TERM": "dumb-host-term",
        HOST_ONLY_VAR: "1",
        # Never the helper an install put in <libexecdir> (scripts/demo.sh does): a test
        # that wants one names its own copy.
        "MRUN_GPU_HELPER": "/nonexistent/tests-use-no-installed-mrun-gpu-helper",
    }
    for key in ("XDG_RUNTIME_DIR", "XDG_DATA_HOME"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    for key, value in extra.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


# ---- where mrun keeps its state (per the spec) ----------------------------

def state_dir(env=None):
    """Default state dir: root: /run/mrun; else $XDG_RUNTIME_DIR/mrun or, when
    unset, /run/user/<uid>/mrun where the login made that directory ours, else
    /tmp/mrun-<uid>."""
    env = base_env() if env is None else env
    if ROOTFUL:
        return "/run/mrun"
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg:
        return os.path.join(xdg, "mrun")
    try:
        st = os.lstat(f"/run/user/{UID}")
        if st.st_uid == UID and (st.st_mode & 0o022) == 0 and os.path.isdir(f"/run/user/{UID}"):
            return f"/run/user/{UID}/mrun"
    except FileNotFoundError:
        pass
    return f"/tmp/mrun-{UID}"


def data_dir(env=None):
    """Where upper dirs live: root: /var/lib/mrun; else $XDG_DATA_HOME/mrun."""
    env = base_env() if env is None else env
    if ROOTFUL:
        return "/var/lib/mrun"
    xdg = env.get("XDG_DATA_HOME") or os.path.join(env.get("HOME", HOME), ".local/share")
    return os.path.join(xdg, "mrun")


def upper_dir(name, env=None):
    return os.path.join(data_dir(env), "containers", name, "upper")


def container_dir(name, env=None):
    return os.path.join(data_dir(env), "containers", name)


def state_paths_of(name, root):
    """Paths under the state dir ROOT that belong to container NAME (any path
    with NAME as a component; the layout inside is mrun's business)."""
    found = []
    if not os.path.isdir(root):
        return found
    for dirpath, dirnames, filenames in os.walk(root):
        for entry in dirnames + filenames:
            if entry == name:
                found.append(os.path.join(dirpath, entry))
        dirnames[:] = [d for d in dirnames if d != name]
    return found


def subid_range(path, user=USER, uid=UID):
    """(start, count) of the first entry for the user in /etc/subuid-style PATH."""
    try:
        with open(path) as f:
            for line in f:
                parts = line.strip().split(":")
                if len(parts) == 3 and parts[0] in (user, str(uid)):
                    return int(parts[1]), int(parts[2])
    except FileNotFoundError:
        pass
    return None


# ---- running mrun -----------------------------------------------------------

class Result:
    def __init__(self, args, rc, out, err, elapsed):
        self.args, self.rc, self.out, self.err, self.elapsed = args, rc, out, err, elapsed

    @property
    def lines(self):
        return self.out.splitlines()

    def __repr__(self):
        return (f"$ {' '.join(map(shell_quote, self.args))}\n"
                f"exit {self.rc} after {self.elapsed:.2f}s\n"
                f"--- stdout ---\n{self.out}\n--- stderr ---\n{self.err}")


def shell_quote(s):
    s = str(s)
    return s if re.fullmatch(r"[\w@%+=:,./-]+", s) else "'" + s.replace("'", "'\\''") + "'"


def with_overlay(args):
    """ARGS of one mrun command line with --overlay $MRUN_IT_OVERLAY after `run`,
    unless it names an overlay or a bundle already (or MRUN_IT_OVERLAY is unset)."""
    # The verb: the first word that is neither a global option nor its value.
    i, valued = 0, ("--root", "--log", "--log-format", "--cgroup-manager")
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in valued else 1
    if not OVERLAY or i >= len(args) or args[i] != "run":
        return args
    rest = args[i + 1:]
    if any(a in ("--overlay", "--bundle", "-b") or a.startswith(("--overlay=", "--bundle="))
           for a in rest):
        return args
    return [*args[:i + 1], "--overlay", OVERLAY, *rest]


def run_command(argv, env, timeout, input=None, cwd=None, what=None):
    """ARGV in a session of its own, stdin INPUT or /dev/null, its output captured: a
    Result; an AssertionError with what it printed when it runs past TIMEOUT (a hang)."""
    start = time.monotonic()
    try:
        p = subprocess.run(argv, input=input, capture_output=True, text=True,
                           errors="replace", timeout=timeout, env=env, cwd=cwd,
                           stdin=None if input is not None else subprocess.DEVNULL,
                           start_new_session=True)
    except subprocess.TimeoutExpired as e:
        out = e.stdout.decode(errors="replace") if isinstance(e.stdout, bytes) else (e.stdout or "")
        err = e.stderr.decode(errors="replace") if isinstance(e.stderr, bytes) else (e.stderr or "")
        raise AssertionError(
            f"{what or argv[0]} did not finish within {timeout}s (hang):\n"
            f"$ {' '.join(map(shell_quote, argv))}\n--- stdout ---\n{out}\n--- stderr ---\n{err}"
        ) from None
    return Result(argv, p.returncode, p.stdout, p.stderr, time.monotonic() - start)


class Mrun:
    """Runs the mrun binary with a time limit and a controlled environment.

    mrun("run", "--rm", rootfs, "true") -> Result (rc, out, err)."""

    def __init__(self, env=None, global_args=()):
        self.env = env if env is not None else base_env()
        self.global_args = list(global_args)

    def argv(self, *args):
        return [MRUN, *self.global_args, *with_overlay([str(a) for a in args])]

    def __call__(self, *args, timeout=TIMEOUT, input=None, env=None, cwd=None):
        return run_command(self.argv(*args), self.env if env is None else env, timeout,
                           input=input, cwd=cwd, what="mrun")

    def popen(self, *args, env=None, **kw):
        kw.setdefault("stdin", subprocess.DEVNULL)
        kw.setdefault("stdout", subprocess.PIPE)
        kw.setdefault("stderr", subprocess.PIPE)
        kw.setdefault("start_new_session", True)
        return subprocess.Popen(self.argv(*args), env=self.env if env is None else env, **kw)

    def with_env(self, **extra):
        env = dict(self.env)
        for key, value in extra.items():
            if value is None:
                env.pop(key, None)
            else:
                env[key] = value
        return Mrun(env, self.global_args)

    def with_args(self, *global_args):
        return Mrun(self.env, [*self.global_args, *global_args])

    def detach(self, *run_args, timeout=15):
        """mrun run -d RUN_ARGS...: waits for mrun itself to exit (not for the
        pipes to close, so a monitor that keeps them open cannot hang us) and
        returns Result with what it printed so far."""
        argv = self.argv("run", "-d", *run_args)
        start = time.monotonic()
        p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, env=self.env, start_new_session=True)
        try:
            rc = p.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
            raise AssertionError(f"mrun run -d did not return within {timeout}s:\n"
                                 f"$ {' '.join(map(shell_quote, argv))}") from None
        out = read_available(p.stdout)
        err = read_available(p.stderr)
        p.stdout.close()
        p.stderr.close()
        if "--name" not in run_args and out.strip():
            GENERATED_NAMES.add(out.strip())
        return Result(argv, rc, out, err, time.monotonic() - start)

    def list_json(self):
        r = self("list", "--format", "json")
        assert r.rc == 0, f"mrun list --format json failed:\n{r!r}"
        try:
            data = json.loads(r.out)
        except ValueError as e:
            raise AssertionError(f"mrun list --format json is not JSON ({e}):\n{r!r}") from None
        assert isinstance(data, list), f"mrun list --format json is not a JSON array:\n{r!r}"
        return data

    def entry(self, name):
        """The list --format json object of container NAME, or None."""
        for obj in self.list_json():
            if isinstance(obj, dict) and obj.get("name") == name:
                return obj
        return None

    def wait_status(self, name, status, timeout=10):
        deadline = time.monotonic() + timeout
        obj = None
        while time.monotonic() < deadline:
            obj = self.entry(name)
            if obj is not None and obj.get("status") == status:
                return obj
            time.sleep(0.1)
        raise AssertionError(f"container {name} did not become {status!r} within {timeout}s; "
                             f"last mrun list entry: {obj!r}")


def read_available(pipe, wait=1.0):
    """Reads what PIPE holds now (waiting up to WAIT s for EOF), never blocking
    on a writer that keeps it open."""
    import select
    fd = pipe.fileno()
    os.set_blocking(fd, False)
    chunks = []
    deadline = time.monotonic() + wait
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        ready, _, _ = select.select([fd], [], [], left)
        if not ready:
            break
        try:
            data = os.read(fd, 65536)
        except BlockingIOError:
            continue
        if not data:
            break
        chunks.append(data)
    return b"".join(chunks).decode(errors="replace")


def pipe_closed_within(pipe, wait):
    """True when the write side of PIPE is closed (EOF seen) within WAIT s."""
    import select
    fd = pipe.fileno()
    os.set_blocking(fd, False)
    deadline = time.monotonic() + wait
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        ready, _, _ = select.select([fd], [], [], left)
        if ready:
            try:
                if not os.read(fd, 65536):
                    return True
            except BlockingIOError:
                pass


class LineReader:
    """Reads lines from a pipe or pty fd with deadlines (select-based)."""

    def __init__(self, fd):
        self.fd = fd.fileno() if hasattr(fd, "fileno") else fd
        self.buf = b""
        self.seen = []
        self.eof = False

    def _fill(self, left):
        import select
        ready, _, _ = select.select([self.fd], [], [], max(left, 0))
        if not ready:
            return False
        try:
            data = os.read(self.fd, 65536)
        except OSError:  # EIO on a pty whose other side closed
            data = b""
        if not data:
            self.eof = True
            return False
        self.buf += data
        return True

    def readline(self, timeout):
        deadline = time.monotonic() + timeout
        while b"\n" not in self.buf:
            if self.eof or time.monotonic() >= deadline:
                return None
            self._fill(deadline - time.monotonic())
        line, _, self.buf = self.buf.partition(b"\n")
        text = line.decode(errors="replace").rstrip("\r")
        self.seen.append(text)
        return text

    def wait_for(self, predicate, timeout, what):
        """Reads lines until predicate(line) holds; returns that line."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            line = self.readline(left) if left > 0 else None
            if line is None:
                raise AssertionError(
                    f"did not see {what} within {timeout}s (eof={self.eof}); lines so far: "
                    f"{self.seen!r}; partial: {self.buf!r}")
            if predicate(line):
                return line


# ---- mounts -----------------------------------------------------------------

Mount = collections.namedtuple("Mount", "id parent dev root point opts fstype source superopts")


def _unescape(s):
    return re.sub(r"\\([0-7]{3})", lambda m: chr(int(m.group(1), 8)), s)


def parse_mountinfo(text):
    mounts = []
    for line in text.splitlines():
        pre, sep, post = line.partition(" - ")
        if not sep:
            continue
        f = pre.split()
        p = post.split()
        mounts.append(Mount(f[0], f[1], f[2], _unescape(f[3]), _unescape(f[4]),
                            f[5].split(","), p[0] if p else "",
                            _unescape(p[1]) if len(p) > 1 else "",
                            p[2] if len(p) > 2 else ""))
    return mounts


def host_mounts():
    with open("/proc/self/mountinfo") as f:
        return parse_mountinfo(f.read())


def mount_keys(mounts):
    return collections.Counter((m.point, m.fstype, m.source) for m in mounts)


def mount_at(mounts, point):
    """The top-most mount at POINT, or None."""
    found = [m for m in mounts if m.point == point]
    return found[-1] if found else None


# ---- processes --------------------------------------------------------------

Proc = collections.namedtuple("Proc", "pid ppid uid comm state start cmdline pidns")


def _read(path, mode="r"):
    try:
        with open(path, mode) as f:
            return f.read()
    except OSError:
        return None


def list_procs():
    procs = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        pid = int(entry)
        stat = _read(f"/proc/{pid}/stat")
        status = _read(f"/proc/{pid}/status")
        if not stat or not status:
            continue
        rp = stat.rfind(")")
        comm = stat[stat.find("(") + 1:rp]
        rest = stat[rp + 2:].split()
        state, ppid, start = rest[0], int(rest[1]), int(rest[19])
        uid = None
        for line in status.splitlines():
            if line.startswith("Uid:"):
                uid = int(line.split()[1])
        raw = _read(f"/proc/{pid}/cmdline", "rb") or b""
        cmdline = [a.decode(errors="replace") for a in raw.split(b"\0") if a]
        try:
            pidns = os.readlink(f"/proc/{pid}/ns/pid")
        except OSError:
            pidns = None
        procs[(pid, start)] = Proc(pid, ppid, uid, comm, state, start, cmdline, pidns)
    return procs


def reap_orphans():
    """Reaps exited children without blocking: the suite is a subreaper, so orphans of
    everything it starts (a killed mrun's container) become its children."""
    while True:
        try:
            pid, _ = os.waitpid(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return


def process_dead(pid):
    """Gone, or a zombie (what mrun counts as dead): a process still exiting (its
    namespaces being torn down) has no command line any more but is not dead yet."""
    stat = _read(f"/proc/{pid}/stat")
    return not stat or stat[stat.rfind(")") + 2:].split()[0] in ("Z", "X")


# Pids of long-lived daemons a module's fixture started and will stop (test_docker.py's
# dockerd): the leftover guard leaves them and what runs below them alone. What they
# start that leaves their tree (containerd's shims, re-parented to the suite, a
# subreaper) is still checked.
KEPT_DAEMONS = set()


def is_userns_holder(proc):
    """A state root's shared user namespace holder (src/userns/shared_userns.hpp)."""
    return proc.comm == "mrun-userns"


def userns_holders():
    """The holders alive now, of this user: {pid: Proc}."""
    return {p.pid: p for p in list_procs().values()
            if is_userns_holder(p) and p.uid == UID and p.state != "Z"}


def procs_with_arg(marker):
    return [p for p in list_procs().values() if any(marker in a for a in p.cmdline)]


def wait_until(predicate, timeout, interval=0.05):
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value or time.monotonic() >= deadline:
            return value
        time.sleep(interval)


def ancestors():
    pids, pid = set(), os.getpid()
    while pid > 1:
        pids.add(pid)
        stat = _read(f"/proc/{pid}/stat")
        if not stat:
            break
        pid = int(stat[stat.rfind(")") + 2:].split()[1])
    return pids


# ---- files ------------------------------------------------------------------

def tree_snapshot(root):
    """{relative path: (type+mode, size, mtime_ns, uid, gid, symlink target)}"""
    snap = {}
    for dirpath, dirnames, filenames in os.walk(root):
        for entry in [""] + dirnames + filenames if dirpath == root else dirnames + filenames:
            path = os.path.join(dirpath, entry) if entry else dirpath
            try:
                st = os.lstat(path)
            except OSError:
                continue
            target = os.readlink(path) if os.path.islink(path) else None
            rel = os.path.relpath(path, root)
            snap[rel] = (st.st_mode, st.st_size if not os.path.isdir(path) else 0,
                         st.st_mtime_ns, st.st_uid, st.st_gid, target)
    return snap


def diff_snapshots(before, after):
    changes = []
    for path in sorted(set(before) | set(after)):
        if path not in after:
            changes.append(f"removed {path}")
        elif path not in before:
            changes.append(f"added {path}")
        elif before[path] != after[path]:
            changes.append(f"changed {path}: {before[path]} -> {after[path]}")
    return changes


def force_rmtree(path):
    """Removes PATH even when a rootless container left files owned by its
    subordinate ids (removed from inside a user namespace that maps them)."""
    if not os.path.lexists(path):
        return
    shutil.rmtree(path, ignore_errors=True)
    if os.path.lexists(path) and not ROOTFUL:
        subprocess.run(["unshare", "--map-root-user", "--map-auto", "rm", "-rf",
                        "--one-file-system", path],
                       stdin=subprocess.DEVNULL, capture_output=True, timeout=30)


def path_without(*tools):
    """A PATH value: a fresh directory of symlinks to every program in the
    usual PATH directories except TOOLS (a caller must remove the directory)."""
    import tempfile
    d = tempfile.mkdtemp(prefix="mrun-it-path.")
    os.chmod(d, 0o755)
    for src_dir in DEFAULT_PATH.split(":"):
        if not os.path.isdir(src_dir):
            continue
        for entry in os.listdir(src_dir):
            if entry in tools:
                continue
            dst = os.path.join(d, entry)
            if not os.path.lexists(dst):
                os.symlink(os.path.join(src_dir, entry), dst)
    return d


def kill_quietly(pid, sig=signal.SIGKILL):
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def host_root_id():
    st = os.stat("/")
    return f"{st.st_dev}:{st.st_ino}"


# ---- assertions -------------------------------------------------------------

def assert_rc(r, code=0):
    assert r.rc == code, f"expected exit {code}, got {r.rc}\n{r!r}"


def assert_mrun_error(r, code=125, mentions=()):
    """mrun's own error: exit CODE and one stderr line starting 'mrun: ' that
    names the object (MENTIONS)."""
    assert r.rc == code, f"expected exit {code}, got {r.rc}\n{r!r}"
    lines = [line for line in r.err.splitlines() if line.strip()]
    assert len(lines) == 1 and lines[0].startswith("mrun: "), (
        f"expected exactly one stderr line starting with 'mrun: ', got {len(lines)} line(s)\n{r!r}")
    for m in mentions:
        assert m in r.err, f"expected the error message to mention {m!r}\n{r!r}"


def run_sh(mrun, rootfs, script, *opts, name=None, timeout=TIMEOUT, input=None):
    """mrun run --rm [--name NAME] OPTS... ROOTFS /bin/sh -c SCRIPT"""
    args = ["run", "--rm"]
    if name:
        args += ["--name", name]
    args += [*opts, rootfs, "/bin/sh", "-c", script]
    return mrun(*args, timeout=timeout, input=input)


def container_mounts(mrun, rootfs, *opts, name=None):
    r = run_sh(mrun, rootfs, "cat /proc/self/mountinfo", *opts, name=name)
    assert_rc(r)
    return parse_mountinfo(r.out), r

# How the session rootfs was made (filled in by conftest's rootfs fixture).
ROOTFS_CREATION = {}

# Names mrun generated (no --name) during the current test: the leftover
# guard checks those too (it otherwise only looks at this session's names).
GENERATED_NAMES = set()


def oci_bundle(mrun, tmp_path, rootfs, args, edit=None, **process):
    """`mrun spec` (--rootless when not root) in a fresh TMP_PATH/bundle, pointed at
    ROOTFS, running ARGS without a terminal; PROCESS updates config["process"], then
    EDIT(config) changes anything else."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    spec_args = ["spec", "--bundle", str(bundle)] + ([] if ROOTFUL else ["--rootless"])
    assert_rc(mrun(*spec_args))
    config = json.loads((bundle / "config.json").read_text())
    config["root"]["path"] = str(rootfs)
    config["process"]["args"] = args
    config["process"]["terminal"] = False
    config["process"].update(process)
    if edit:
        edit(config)
    (bundle / "config.json").write_text(json.dumps(config))
    return bundle


def drain_pty(master, p, timeout, what):
    """Everything the pty MASTER shows until its other side is closed by all (EIO), read
    while process P runs; then P's exit status: (status, bytes). P is killed, and an
    AssertionError naming WHAT raised, when that takes longer than TIMEOUT seconds."""
    import select
    out, deadline = b"", time.monotonic() + timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            p.kill()
            p.wait()
            raise AssertionError(f"{what} did not finish within {timeout}s:\n{out!r}")
        ready, _, _ = select.select([master], [], [], left)
        if not ready:
            continue
        try:
            data = os.read(master, 65536)
        except OSError:  # EIO: the last holder of the other side exited
            data = b""
        if not data:
            break
        out += data
    return p.wait(timeout=10), out
