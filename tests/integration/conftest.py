"""Fixtures of the mrun integration suite.

- mrun: a runner for the mrun binary ($MRUN) with the suite's environment.
- rootfs: a busybox rootfs made once per session with `mrun rootfs busybox`,
  with mrun-probe copied to /bin/mrun-probe and a non-executable /noexec.txt.
  It must never change: every test checks it afterwards.
- private_rootfs: a copy the test may let mrun modify (--overlay none).
- name: a fresh container name per call (unique per session).
- an autouse guard that fails a test which leaves container processes, host
  mounts, state dirs or upper dirs behind, and cleans them up so the next test
  starts clean.
- a per-test time limit (SIGALRM), since pytest-timeout is not installed.
"""

import itertools
import os
import shutil
import signal
import subprocess

import pytest

import mrunlib as M

TEST_TIME_LIMIT = int(os.environ.get("MRUN_IT_TEST_TIMEOUT", "120"))


def pytest_report_header(config):
    return [f"mrun: {M.MRUN}", f"mrun-probe: {M.PROBE}",
            f"mode: {M.MODE} (uid {M.UID}, user {M.USER}), state dir {M.state_dir()}, "
            f"data dir {M.data_dir()}",
            f"overlay: {M.OVERLAY or 'mrun default'} (MRUN_IT_OVERLAY)"]


def pytest_configure(config):
    if M.OVERLAY is not None and M.OVERLAY not in M.OVERLAY_CHOICES:
        pytest.exit(f"MRUN_IT_OVERLAY={M.OVERLAY} is not an overlay of `mrun run --overlay`: "
                    f"use one of {', '.join(M.OVERLAY_CHOICES)}, or unset it", returncode=2)
    for path, what in ((M.MRUN, "mrun"), (M.PROBE, "mrun-probe")):
        if not os.access(path, os.X_OK):
            pytest.exit(f"{what} not found or not executable at {path}: build it first "
                        f"(meson setup build && meson compile -C build) or set "
                        f"{'MRUN' if what == 'mrun' else 'MRUN_PROBE'}", returncode=2)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    def on_alarm(signum, frame):
        pytest.fail(f"test exceeded its time limit of {TEST_TIME_LIMIT}s", pytrace=True)

    old = signal.signal(signal.SIGALRM, on_alarm)
    signal.alarm(TEST_TIME_LIMIT)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


# ---- basic fixtures ---------------------------------------------------------

def pytest_sessionstart(session):
    _become_subreaper()


def pytest_sessionfinish(session, exitstatus):
    # The shared user namespace holders left lingering: nothing outlives the suite.
    for p in _descendants(M.list_procs(), os.getpid()):
        if M.is_userns_holder(p):
            M.kill_quietly(p.pid)
    _reap_orphans()


@pytest.fixture(scope="session")
def mrun():
    return M.Mrun()


_names = itertools.count(1)
_session_tag = f"it{os.getpid() % 100000}"


def new_name():
    return f"{_session_tag}-{next(_names)}"


@pytest.fixture
def name():
    return new_name()


@pytest.fixture
def names():
    """names() -> another fresh container name."""
    return new_name


def _fallback_rootfs(path):
    """A busybox rootfs made without mrun, used only when `mrun rootfs busybox`
    fails, so that one broken command does not hide every other result
    (test_rootfs_cmd.py reports that failure)."""
    os.makedirs(path, exist_ok=True)
    for d in ("bin", "sbin", "usr/bin", "usr/sbin", "etc", "proc", "sys", "dev", "root",
              "tmp", "run", "var"):
        os.makedirs(os.path.join(path, d), exist_ok=True)
    os.chmod(os.path.join(path, "tmp"), 0o1777)
    shutil.copy2("/bin/busybox", os.path.join(path, "bin/busybox"))
    applets = subprocess.run([os.path.join(path, "bin/busybox"), "--list-full"],
                             capture_output=True, text=True, check=True).stdout.split()
    for applet in applets:
        dst = os.path.join(path, applet)
        if not os.path.lexists(dst):
            os.symlink("/bin/busybox", dst)
    with open(os.path.join(path, "etc/passwd"), "w") as f:
        f.write("root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n")
    with open(os.path.join(path, "etc/group"), "w") as f:
        f.write("root:x:0:\nnogroup:x:65534:\n")


@pytest.fixture(scope="session")
def rootfs(tmp_path_factory):
    base = tmp_path_factory.mktemp("rootfs")
    os.chmod(base, 0o755)
    path = str(base / "busybox")
    r = M.Mrun()("rootfs", "busybox", path, timeout=60)
    M.ROOTFS_CREATION["result"] = r
    if r.rc != 0 or not os.path.exists(os.path.join(path, "bin/sh")):
        shutil.rmtree(path, ignore_errors=True)
        _fallback_rootfs(path)
        M.ROOTFS_CREATION["fallback"] = True
    shutil.copy(M.PROBE, os.path.join(path, "bin/mrun-probe"))
    os.chmod(os.path.join(path, "bin/mrun-probe"), 0o755)
    with open(os.path.join(path, "noexec.txt"), "w") as f:
        f.write("not a program\n")
    os.chmod(os.path.join(path, "noexec.txt"), 0o644)
    M.ROOTFS_CREATION["snapshot"] = M.tree_snapshot(path)
    return path


@pytest.fixture
def private_rootfs(rootfs, tmp_path):
    """A copy of the session rootfs that the test may modify."""
    path = str(tmp_path / "private-rootfs")
    shutil.copytree(rootfs, path, symlinks=True)
    os.chmod(tmp_path, 0o755)
    return path


@pytest.fixture
def host_dir(tmp_path):
    """A fresh host directory (mode 0755) for volumes and state dirs."""
    d = tmp_path / "host"
    d.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(d, 0o755)
    return str(d)


# ---- the leftover guard -----------------------------------------------------

def _watched_dirs():
    dirs = [M.state_dir(), os.path.join(M.data_dir(), "containers")]
    return [d for d in dirs if d]


def _dir_entries(d):
    try:
        return set(os.listdir(d))
    except OSError:
        return set()


def _become_subreaper():
    """Orphans of everything this process starts (a detached container's
    monitor, a container that outlives a killed mrun) are re-parented to us
    instead of init, so "left behind" is simply "still our descendant"; and
    other users' or sessions' processes never count."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    PR_SET_CHILD_SUBREAPER = 36
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


def _reap_orphans():
    """Reaps exited re-parented orphans (no test has a child running now)."""
    M.reap_orphans()


def _descendants(procs, root):
    children = {}
    for p in procs.values():
        children.setdefault(p.ppid, []).append(p)
    found, todo = [], [root]
    while todo:
        for child in children.get(todo.pop(), []):
            found.append(child)
            todo.append(child.pid)
    return found


def _is_ours(name):
    return name.startswith(_session_tag + "-")


def _leftovers(before):
    problems, procs, mounts, states = [], [], [], []
    _reap_orphans()
    # A state root's shared user namespace holder stays by design (it exits once idle
    # for MRUN_USERNS_LINGER seconds); test_shared_userns.py holds it to its contract.
    everything = M.list_procs()
    kept = {pid for daemon in M.KEPT_DAEMONS
            for pid in [daemon, *(p.pid for p in _descendants(everything, daemon))]}
    procs = [p for p in _descendants(everything, os.getpid())
             if p.state != "Z" and not M.is_userns_holder(p) and p.pid not in kept]
    if procs:
        problems.append("processes left running:\n" + "\n".join(
            f"  pid {p.pid} uid {p.uid} state {p.state} ppid {p.ppid} {p.comm}: "
            f"{' '.join(p.cmdline)}" for p in procs))
    now = M.host_mounts()
    new = M.mount_keys(now) - before["mounts"]
    if new:
        mounts = [m for m in now if (m.point, m.fstype, m.source) in new]
        problems.append("host mounts left:\n" + "\n".join(
            f"  {m.point} type {m.fstype} source {m.source}" for m in mounts))
    for d in _watched_dirs():
        added = _dir_entries(d) - before["dirs"].get(d, set())
        for entry in sorted(added):
            if _is_ours(entry) or entry in M.GENERATED_NAMES:
                states.append(os.path.join(d, entry))
    if states:
        problems.append("state or upper dirs left:\n" + "\n".join(f"  {s}" for s in states))
    return problems, procs, mounts, states


def _cleanup(procs, mounts, states):
    for p in procs:
        M.kill_quietly(p.pid)
    for m in reversed(mounts):
        if M.ROOTFUL:
            subprocess.run(["umount", "-l", m.point], capture_output=True, timeout=10)
        elif m.fstype.startswith("fuse"):
            subprocess.run(["fusermount3", "-u", "-z", m.point], capture_output=True, timeout=10)
    names = {os.path.basename(s) for s in states}
    for n in names:
        try:
            M.Mrun()("delete", "-f", n, timeout=15)
        except AssertionError:
            pass
    for s in states:
        M.force_rmtree(s)


@pytest.fixture(autouse=True)
def no_leftovers(request):
    """Fails the test if it left processes, host mounts or state behind, and
    if it changed the session rootfs; cleans up either way."""
    before = {
        "mounts": M.mount_keys(M.host_mounts()),
        "dirs": {d: _dir_entries(d) for d in _watched_dirs()},
    }
    M.GENERATED_NAMES.clear()
    yield
    M.wait_until(lambda: not _leftovers(before)[0], 5)
    problems, procs, mounts, states = _leftovers(before)
    rootfs_changes = []
    snap = M.ROOTFS_CREATION.get("snapshot")
    if snap is not None and "rootfs" in request.fixturenames:
        path = request.getfixturevalue("rootfs")
        rootfs_changes = M.diff_snapshots(snap, M.tree_snapshot(path))
        if rootfs_changes:
            M.ROOTFS_CREATION["snapshot"] = M.tree_snapshot(path)
    if problems:
        _cleanup(procs, mounts, states)
    if rootfs_changes:
        problems.append("the shared ROOTFS (a lower layer) was modified:\n" +
                        "\n".join(f"  {c}" for c in rootfs_changes[:20]))
    if problems:
        pytest.fail(f"[{M.MODE}] after the test: " + "\n".join(problems), pytrace=False)


def pytest_collection_modifyitems(config, items):
    # Keep the rootfs command's own tests first: later tests depend on it.
    items.sort(key=lambda item: 0 if "test_rootfs_cmd" in item.nodeid else 1)
