"""Detach, list, kill, delete, --rm, names, state dirs, and cleanup after
the foreground mrun is killed with SIGKILL."""

import json
import os
import signal
import subprocess

import pytest

import mrunlib as M


def _alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(")")[-1].split()[0] != "Z"
    except OSError:
        return False


def _catches(pid, sig):
    """Has process PID a handler for SIG (SigCgt in /proc/PID/status)?"""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("SigCgt:"):
                    return bool(int(line.split()[1], 16) & (1 << (sig - 1)))
    except OSError:
        pass
    return False


def _gone(mrun, name, env=None):
    """Asserts that container NAME left no state dir and no upper dir."""
    state = M.state_paths_of(name, M.state_dir(env))
    cdir = M.container_dir(name, env)
    left = state + ([cdir] if os.path.exists(cdir) else [])
    if left:
        listing = []
        for top in left:
            for dirpath, dirnames, filenames in os.walk(top):
                listing += [os.path.join(dirpath, f) for f in dirnames + filenames]
        raise AssertionError(f"container {name} left {left} (contents: {listing[:20]}); "
                             f"mrun list --format json now: {mrun.list_json()}")


def _cleanup(mrun, *names_):
    for n in names_:
        mrun("delete", "-f", n)


# ---- detach and list ---------------------------------------------------------

def test_detach_prints_name_and_returns(mrun, rootfs, name):
    r = mrun.detach("--name", name, rootfs, "/bin/sleep", "1000")
    try:
        M.assert_rc(r)
        assert r.out == f"{name}\n", f"mrun run -d must print the container name\n{r!r}"
        entry = mrun.entry(name)
        assert entry is not None and entry.get("status") == "running", (
            f"mrun list: {mrun.list_json()}")
    finally:
        _cleanup(mrun, name)
    _gone(mrun, name)


def test_detach_does_not_hold_the_callers_stdio(mrun, rootfs, name):
    p = mrun.popen("run", "-d", "--name", name, rootfs, "/bin/sleep", "1000")
    try:
        rc = p.wait(timeout=15)
        assert rc == 0, f"mrun run -d exited {rc}: {p.stderr.read()!r}"
        assert M.pipe_closed_within(p.stdout, 3), (
            "after mrun run -d returned, something (the container or a monitor) still holds "
            "the caller's stdout open: `x=$(mrun run -d ...)` would hang")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()
        _cleanup(mrun, name)


def test_list_table(mrun, rootfs, name):
    r = mrun.detach("--name", name, rootfs, "/bin/sleep", "1000")
    try:
        M.assert_rc(r)
        t = mrun("list")
        M.assert_rc(t)
        header = t.lines[0].split() if t.lines else []
        assert "ID" in header and "STATUS" in header, f"no ID/STATUS header:\n{t.out}"
        rows = [line.split() for line in t.lines[1:] if line.split()[:1] == [name]]
        assert len(rows) == 1 and "running" in rows[0], f"{name} not listed as running:\n{t.out}"
    finally:
        _cleanup(mrun, name)


def test_list_json(mrun, rootfs, name):
    r = mrun.detach("--name", name, rootfs, "/bin/sleep", "1000")
    try:
        M.assert_rc(r)
        entry = mrun.entry(name)
        assert entry is not None, f"{name} not in {mrun.list_json()}"
        for key in ("name", "pid", "status", "rootfs", "created"):
            assert key in entry, f"list --format json entry lacks {key!r}: {entry}"
        assert entry["status"] == "running", entry
        assert entry["rootfs"] == rootfs, entry
        assert isinstance(entry["pid"], int) and entry["pid"] > 0, entry
        assert _alive(entry["pid"]), f"pid {entry['pid']} is not a live host process"
        with open(f"/proc/{entry['pid']}/cmdline", "rb") as f:
            assert b"sleep" in f.read(), "pid is not the container's process"
        assert entry["created"], entry
    finally:
        _cleanup(mrun, name)


def test_generated_name(mrun, rootfs):
    r = mrun.detach(rootfs, "/bin/sleep", "1000")
    generated = r.out.strip()
    try:
        M.assert_rc(r)
        assert generated and "\n" not in generated, r
        entry = mrun.entry(generated)
        assert entry is not None and entry["status"] == "running", mrun.list_json()
    finally:
        if generated:
            _cleanup(mrun, generated)


# ---- kill ----------------------------------------------------------------------

@pytest.mark.parametrize("spelling", [None, "TERM", "SIGTERM", "15"],
                         ids=["default", "TERM", "SIGTERM", "15"])
def test_kill_sends_sigterm(mrun, rootfs, name, spelling):
    r = mrun.detach("--name", name, rootfs, "/bin/mrun-probe", "sigwait", "60")
    try:
        M.assert_rc(r)
        pid = mrun.wait_status(name, "running")["pid"]
        assert M.wait_until(lambda: _catches(pid, signal.SIGTERM), 10), (
            f"pid {pid} from mrun list never installed the probe's SIGTERM handler "
            f"(is it the container's PID 1?)")
        k = mrun("kill", name, *([spelling] if spelling else []))
        M.assert_rc(k)
        mrun.wait_status(name, "stopped")
        assert not _alive(pid), f"container pid {pid} still alive after it was listed stopped"
    finally:
        _cleanup(mrun, name)


def test_kill_with_sigkill(mrun, rootfs, name):
    r = mrun.detach("--name", name, rootfs, "/bin/sleep", "1000")
    try:
        M.assert_rc(r)
        M.assert_rc(mrun("kill", name, "KILL"))
        mrun.wait_status(name, "stopped")
    finally:
        _cleanup(mrun, name)


def test_kill_unknown_container_is_125(mrun, name):
    M.assert_mrun_error(mrun("kill", name), 125, mentions=[name])


def test_kill_bad_signal_is_125(mrun, rootfs, name):
    r = mrun.detach("--name", name, rootfs, "/bin/sleep", "1000")
    try:
        M.assert_rc(r)
        M.assert_mrun_error(mrun("kill", name, "NOTASIGNAL"), 125, mentions=["NOTASIGNAL"])
        assert mrun.entry(name)["status"] == "running"
    finally:
        _cleanup(mrun, name)


# ---- delete ------------------------------------------------------------------

def test_delete_running_needs_force(mrun, rootfs, name):
    r = mrun.detach("--name", name, rootfs, "/bin/sleep", "1000")
    try:
        M.assert_rc(r)
        pid = mrun.wait_status(name, "running")["pid"]
        d = mrun("delete", name)
        M.assert_mrun_error(d, 125, mentions=[name])
        assert mrun.entry(name)["status"] == "running", "a refused delete changed the container"
        M.assert_rc(mrun("delete", "--force", name))
        assert mrun.entry(name) is None, "deleted container still listed"
        assert M.wait_until(lambda: not _alive(pid), 5), f"pid {pid} survived delete --force"
    finally:
        _cleanup(mrun, name)
    _gone(mrun, name)


def test_delete_short_force_flag(mrun, rootfs, name):
    r = mrun.detach("--name", name, rootfs, "/bin/sleep", "1000")
    M.assert_rc(r)
    M.assert_rc(mrun("delete", "-f", name))
    _gone(mrun, name)


def test_stopped_container_stays_until_deleted(mrun, rootfs, name):
    r = mrun("run", "--name", name, rootfs, "/bin/sh", "-c", "echo data > /kept; exit 3")
    try:
        M.assert_rc(r, 3)
        entry = mrun.entry(name)
        assert entry is not None and entry["status"] == "stopped", (
            f"without --rm a finished container must stay listed as stopped: {mrun.list_json()}")
        assert os.path.exists(os.path.join(M.upper_dir(name), "kept"))
        M.assert_rc(mrun("delete", name))
        assert mrun.entry(name) is None
    finally:
        _cleanup(mrun, name)
    _gone(mrun, name)


def test_delete_unknown_is_125(mrun, name):
    M.assert_mrun_error(mrun("delete", name), 125, mentions=[name])


def test_rm_removes_everything_at_exit(mrun, rootfs, name):
    r = M.run_sh(mrun, rootfs, "echo x > /y", name=name)
    M.assert_rc(r)
    assert mrun.entry(name) is None, "--rm container still listed after exit"
    _gone(mrun, name)


def test_detached_rm_is_removed_when_it_exits(mrun, rootfs, name):
    r = mrun.detach("--rm", "--name", name, rootfs, "/bin/sleep", "1")
    M.assert_rc(r)
    M.wait_until(lambda: mrun.entry(name) is None, 10)
    assert mrun.entry(name) is None, "a -d --rm container was not removed after it exited"
    _gone(mrun, name)


# ---- names ---------------------------------------------------------------------

def test_name_clash_with_running_container(mrun, rootfs, name):
    r = mrun.detach("--name", name, rootfs, "/bin/sleep", "1000")
    try:
        M.assert_rc(r)
        again = mrun("run", "--rm", "--name", name, rootfs, "/bin/true")
        M.assert_mrun_error(again, 125, mentions=[name, "already in use"])
        assert mrun.entry(name)["status"] == "running", "the clash disturbed the first container"
    finally:
        _cleanup(mrun, name)


def test_name_clash_with_stopped_container(mrun, rootfs, name):
    r = mrun("run", "--name", name, rootfs, "/bin/true")
    try:
        M.assert_rc(r)
        again = mrun("run", "--rm", "--name", name, rootfs, "/bin/true")
        M.assert_mrun_error(again, 125, mentions=[name, "already in use"])
        assert mrun.entry(name) is not None, "the clash removed the stopped container"
    finally:
        _cleanup(mrun, name)


def test_name_reusable_after_delete(mrun, rootfs, name):
    M.assert_rc(mrun("run", "--name", name, rootfs, "/bin/true"))
    M.assert_rc(mrun("delete", name))
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/echo", "second")
    M.assert_rc(r)
    assert r.out == "second\n", r


# ---- state dirs ----------------------------------------------------------------

def test_default_state_dir(mrun, rootfs, name):
    """rootless: $XDG_RUNTIME_DIR/mrun, else /tmp/mrun-<uid>; root: /run/mrun."""
    r = mrun.detach("--name", name, rootfs, "/bin/sleep", "1000")
    try:
        M.assert_rc(r)
        where = M.state_dir()
        assert M.state_paths_of(name, where), (
            f"no state for {name} under {where} (XDG_RUNTIME_DIR="
            f"{os.environ.get('XDG_RUNTIME_DIR')!r})")
    finally:
        _cleanup(mrun, name)
    _gone(mrun, name)


def test_state_dir_follows_xdg_runtime_dir(mrun, rootfs, name, tmp_path):
    if M.ROOTFUL:
        pytest.skip("rootless only: root's state dir is /run/mrun")
    xdg = tmp_path / "xdg-runtime"
    xdg.mkdir(mode=0o700)
    m = mrun.with_env(XDG_RUNTIME_DIR=str(xdg))
    r = m.detach("--name", name, rootfs, "/bin/sleep", "1000")
    try:
        M.assert_rc(r)
        assert M.state_paths_of(name, str(xdg / "mrun")), (
            f"no state for {name} under {xdg}/mrun: {list(xdg.rglob('*'))}")
        assert not M.state_paths_of(name, f"/tmp/mrun-{M.UID}"), (
            "state went to /tmp/mrun-<uid> although XDG_RUNTIME_DIR is set")
        assert m.entry(name) is not None
        assert mrun.with_env(XDG_RUNTIME_DIR=None).entry(name) is None
    finally:
        m("delete", "-f", name)
    assert not M.state_paths_of(name, str(xdg / "mrun"))


def test_root_option(mrun, rootfs, name, host_dir):
    state = os.path.join(host_dir, "state")
    m = mrun.with_args("--root", state)
    r = m.detach("--name", name, rootfs, "/bin/sleep", "1000")
    try:
        M.assert_rc(r)
        assert M.state_paths_of(name, state), f"no state for {name} under --root {state}"
        assert m.entry(name) is not None, "mrun --root DIR list does not show it"
        assert mrun.entry(name) is None, "the default state dir shows a --root container"
        assert not M.state_paths_of(name, M.state_dir())
    finally:
        m("delete", "-f", name)
    assert not M.state_paths_of(name, state)


def test_root_not_writable_is_125(mrun, rootfs, name, tmp_path):
    if M.ROOTFUL:
        # root ignores permission bits: use a path below a regular file.
        blocker = tmp_path / "a-file"
        blocker.write_text("")
        state = str(blocker / "state")
    else:
        ro = tmp_path / "ro"
        ro.mkdir()
        os.chmod(ro, 0o555)
        state = str(ro / "state")
    try:
        r = mrun("--root", state, "run", "--rm", "--name", name, rootfs, "/bin/true")
        M.assert_mrun_error(r, 125)
        assert state in r.err or os.path.dirname(state) in r.err, (
            f"the error names neither {state} nor its parent\n{r!r}")
        assert "--root" in r.err, f"the error does not say the fix (--root DIR)\n{r!r}"
        assert not os.path.exists(state)
        assert not os.path.exists(M.container_dir(name)), "left an upper dir behind"
    finally:
        if not M.ROOTFUL:
            os.chmod(tmp_path / "ro", 0o755)


# ---- the foreground mrun killed with SIGKILL ---------------------------------

@pytest.mark.parametrize("overlay", ["native", "fuse"])
def test_sigkill_of_foreground_mrun_cleans_up(mrun, rootfs, name, overlay):
    marker = f"marker-{name}"
    mounts_before = M.mount_keys(M.host_mounts())
    procs_before = set(M.list_procs())
    p = mrun.popen("run", "--name", name, "--overlay", overlay, rootfs,
                   "/bin/mrun-probe", "hold", "300", marker)

    def container_procs():
        # The container's command, not mrun (whose own argv holds the marker too).
        return [q for q in M.procs_with_arg(marker) if q.cmdline[:1] == ["/bin/mrun-probe"]]

    try:
        assert M.wait_until(container_procs, 15), (
            f"the container process never appeared; stderr: {M.read_available(p.stderr)!r}")
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=5)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()

    M.wait_until(lambda: not container_procs(), 5)
    assert not container_procs(), f"container process survived SIGKILL of mrun: {container_procs()}"
    # Its command line goes first; the process is dead once its namespaces are torn
    # down (the overlay unmounted): only then may `mrun list` call it stopped.
    state_file = os.path.join(M.state_dir(), name, "state.json")
    if os.path.exists(state_file):
        with open(state_file) as f:
            pid = json.load(f).get("pid") or 0
        assert pid <= 0 or M.wait_until(lambda: M.process_dead(pid), 10), (
            f"container pid {pid} still exiting 10 s after mrun's SIGKILL")
    def fuse_running():
        # Exited orphans are re-parented to the suite (a subreaper): zombies
        # here are dead processes, not leftovers.
        return [q for k, q in M.list_procs().items()
                if k not in procs_before and q.comm == "fuse-overlayfs" and q.state != "Z"]
    M.wait_until(lambda: not fuse_running(), 5)
    fuse = fuse_running()
    assert not fuse, f"fuse-overlayfs left running: {fuse}"
    new_mounts = M.mount_keys(M.host_mounts()) - mounts_before
    assert not new_mounts, f"mounts left on the host: {sorted(new_mounts)}"

    entry = mrun.entry(name)
    assert entry is not None or not M.state_paths_of(name, M.state_dir()), (
        f"mrun list does not show {name} but its state is still there: "
        f"{M.state_paths_of(name, M.state_dir())}")
    assert entry is None or entry.get("status") != "running", (
        f"mrun list shows the killed container as running: {entry}")
    if entry is not None:
        M.assert_rc(mrun("delete", name))
    _gone(mrun, name)
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/echo", "again")
    M.assert_rc(r)
    assert r.out == "again\n", r


def test_the_next_start_removes_a_killed_rm_container(mrun, rootfs, names):
    """--rm whose mrun was SIGKILLed: the next `mrun run` (not only `mrun list`)
    removes its state and upper dir, through the --rm index, with kept containers
    beside it left alone."""
    killed, kept, other = names(), names(), names()
    M.assert_rc(mrun("run", "--name", kept, rootfs, "/bin/true"))
    marker = f"marker-{killed}"
    p = mrun.popen("run", "--rm", "--name", killed, rootfs, "/bin/mrun-probe", "hold", "300",
                   marker)
    try:
        assert M.wait_until(lambda: [q for q in M.procs_with_arg(marker)
                                     if q.cmdline[:1] == ["/bin/mrun-probe"]], 15)
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=5)
        with open(os.path.join(M.state_dir(), killed, "state.json")) as f:
            container = json.load(f).get("pid") or 0  # 0: killed before "running"
        # The container dies with its monitor (parent-death signal) and, orphaned, is
        # this suite's child (a subreaper): reaped here, as init would, or it would
        # still count as alive and rightly not be swept.
        def container_gone():
            M.reap_orphans()
            return container <= 0 or M.process_dead(container) and (
                M.reap_orphans() or not os.path.exists(f"/proc/{container}"))
        assert M.wait_until(container_gone, 10), f"container pid {container} outlived mrun"
        assert M.state_paths_of(killed, M.state_dir()), "no state left to sweep: test broken"
        M.assert_rc(mrun("run", "--rm", "--name", other, rootfs, "/bin/true"))
        assert not M.state_paths_of(killed, M.state_dir()), (
            f"the next start left the killed --rm container's state: "
            f"{M.state_paths_of(killed, M.state_dir())}")
        assert not os.path.exists(M.container_dir(killed)), "its upper dir is still there"
        assert mrun.entry(kept) is not None, "the kept container was swept too"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()
        mrun("delete", "-f", kept)
        mrun("delete", "-f", killed)


def test_upper_dir_follows_xdg_data_home(mrun, rootfs, name, tmp_path):
    """rootless: upper dirs live under $XDG_DATA_HOME/mrun/containers/NAME/upper."""
    if M.ROOTFUL:
        pytest.skip("rootless only: root's upper dirs are under /var/lib/mrun")
    data = tmp_path / "xdg-data"
    data.mkdir()
    m = mrun.with_env(XDG_DATA_HOME=str(data))
    r = m("run", "--name", name, rootfs, "/bin/sh", "-c", "echo xdg > /in-upper")
    try:
        M.assert_rc(r)
        upper = data / "mrun/containers" / name / "upper"
        assert (upper / "in-upper").read_text() == "xdg\n", (
            f"write not under {upper}; {data} holds {[str(p) for p in data.rglob('*')][:10]}")
        assert not os.path.exists(M.container_dir(name)), (
            "upper dir went to ~/.local/share although XDG_DATA_HOME is set")
    finally:
        m("delete", "-f", name)
    assert not (data / "mrun/containers" / name).exists(), "mrun delete left the upper dir"


def _spares(root, tag=""):
    try:
        return {os.stat(os.path.join(root, n)).st_ino: os.path.join(root, n)
                for n in os.listdir(root) if n.startswith(tag)}
    except FileNotFoundError:
        return {}


def _gone_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_an_rm_containers_empty_storage_is_a_later_ones(mrun, rootfs, names, tmp_path):
    """--rm keeps the storage a container left empty (state/storage.hpp) as it was
    left ("kept-", overlayfs's work tree still in it); the next container's monitor
    empties its work/ while that container runs ("ready-"), and the one after
    runs in it. Storage a container wrote into is removed, never handed on; at most 4
    are kept; what an mrun killed while tidying left is finished by another."""
    if M.ROOTFUL:
        m, containers = mrun, os.path.join(M.data_dir(), "containers")
        subprocess.run(["rm", "-rf", os.path.join(containers, ".spare")], check=True)
    else:
        data = tmp_path / "xdg-data"
        data.mkdir()
        m, containers = mrun.with_env(XDG_DATA_HOME=str(data)), str(data / "mrun/containers")
    spare_root = os.path.join(containers, ".spare")
    M.assert_rc(m("run", "--rm", "--network", "none", rootfs, "/bin/true"))
    kept = _spares(spare_root)
    assert len(kept) == 1 and set(kept) == set(_spares(spare_root, "kept-")), os.listdir(spare_root)
    first = next(iter(kept))
    for layer in ("upper", "merged"):
        assert os.listdir(os.path.join(kept[first], layer)) == [], layer

    def run_sleeping(name):
        return m.popen("run", "--rm", "--name", name, "--network", "none", rootfs, "/bin/sh",
                       "-c", "sleep 1")

    # The next container gets new storage (a kept spare is not ready to be taken), and
    # its monitor readies the kept one meanwhile.
    name = names()
    p = run_sleeping(name)
    try:
        storage = os.path.join(containers, name)
        assert M.wait_until(lambda: os.path.exists(storage), 5), "no storage for the container"
        assert os.stat(storage).st_ino != first, "a spare not yet tidied was taken"
        assert M.wait_until(lambda: first in _spares(spare_root, "ready-"), 5), \
            os.listdir(spare_root)
        for layer in ("upper", "work", "merged"):
            assert os.listdir(os.path.join(_spares(spare_root)[first], layer)) == [], layer
    finally:
        out, err = p.communicate(timeout=M.TIMEOUT)
        assert p.returncode == 0, err
    # The one after runs in the readied one (same inode); taken, it is offered no more.
    name = names()
    p = run_sleeping(name)
    try:
        storage = os.path.join(containers, name)
        assert M.wait_until(lambda: os.path.exists(storage), 5), "no storage for the container"
        assert os.stat(storage).st_ino == first, "the readied storage was not the next one's"
        assert first not in _spares(spare_root), "the spare was still offered while in use"
    finally:
        out, err = p.communicate(timeout=M.TIMEOUT)
        assert p.returncode == 0, err
    assert first in _spares(spare_root, "kept-"), "not kept again after the third container"
    # A container that writes to its root: its storage goes, and nothing of it reaches
    # a later container.
    M.assert_rc(m("run", "--rm", "--network", "none", rootfs, "/bin/sh", "-c",
                  "echo secret > /written"))
    for _ in range(2):
        r = m("run", "--rm", "--network", "none", rootfs, "/bin/sh", "-c", "ls /written")
        assert r.rc != 0 and "written" not in r.out, r
    for spare in _spares(spare_root).values():
        assert os.listdir(os.path.join(spare, "upper")) == [], spare
    # Bounded: six at once leave no more than four.
    procs = [m.popen("run", "--rm", "--network", "none", rootfs, "/bin/sh", "-c", "sleep 1")
             for _ in range(6)]
    assert [q.wait(timeout=M.TIMEOUT) for q in procs] == [0] * 6
    assert 1 <= len(_spares(spare_root)) <= 4, _spares(spare_root)
    # An mrun killed while it tidied left .tidy-PID-N: the next start finishes the job.
    # (overlayfs makes its work/work directories 0000: chmod before rm, as the owner.)
    subprocess.run(["chmod", "-R", "u+rwx", spare_root], check=True)
    subprocess.run(["rm", "-rf", spare_root], check=True)
    abandoned = os.path.join(spare_root, ".tidy-%d-0" % _gone_pid())
    for sub in ("upper", "merged", "work/work/incompat"):
        os.makedirs(os.path.join(abandoned, sub))
    ino = os.stat(abandoned).st_ino
    M.assert_rc(m("run", "--rm", "--network", "none", rootfs, "/bin/true"))
    ready = _spares(spare_root, "ready-")
    assert ino in ready and os.listdir(os.path.join(ready[ino], "work")) == [], \
        os.listdir(spare_root)
    assert not [n for n in os.listdir(spare_root) if n.startswith(".tidy-")]


# ---- edges ---------------------------------------------------------------------

@pytest.mark.parametrize("bad", ["../evil", "a/b", "x" * 65, ".hidden"],
                         ids=["dotdot", "slash", "too-long", "leading-dot"])
def test_invalid_names_are_rejected(mrun, rootfs, bad):
    """Names become paths under the state and data dirs: one that could
    escape them must be refused before anything is made. (An empty --name
    means "generate one", as in podman.)"""
    r = mrun("run", "--rm", "--name", bad, rootfs, "/bin/true")
    M.assert_mrun_error(r, 125)
    assert not os.path.exists(os.path.join(os.path.dirname(M.state_dir()), "evil"))
    assert not os.path.exists(os.path.join(M.data_dir(), "evil"))


def test_list_with_a_fresh_state_dir(mrun, tmp_path):
    r = mrun("--root", str(tmp_path / "never-used"), "list", "--format", "json")
    M.assert_rc(r)
    assert r.out.strip() == "[]", r


def test_detach_with_a_missing_command_fails(mrun, rootfs, name):
    """run -d returns 0 only once the container runs: a command that is not
    there is reported (127) by the run -d itself."""
    r = mrun.detach("--name", name, rootfs, "/nonexistent")
    try:
        M.assert_mrun_error(r, 127, mentions=["/nonexistent"])
    finally:
        mrun("delete", "-f", name)


def test_delete_removes_files_of_container_users(mrun, rootfs, name):
    """Files a container user (not root) wrote land in the upper dir owned by
    a subordinate id; delete must still remove them (rootless: from inside
    the user namespace)."""
    r = mrun("run", "--name", name, "-u", "1000:1000", rootfs, "/bin/sh", "-c",
             "mkdir /tmp/private && echo x > /tmp/private/f && chmod 700 /tmp/private")
    try:
        M.assert_rc(r)
        M.assert_rc(mrun("delete", name))
    finally:
        mrun("delete", "-f", name)
    _gone(mrun, name)


def test_events_need_a_cgroup_of_the_containers_own(mrun, rootfs, name):
    """`mrun events` reads the container's cgroup v2 leaf: without one (this host's
    hybrid layout, or rootless without delegation) it is a 125 that says so; a bad
    --interval is named; a missing container is runc's error."""
    M.assert_rc(mrun("run", "-d", "--name", name, "--network", "none", rootfs, "sleep", "300"))
    try:
        r = mrun("events", "--stats", name)
        if r.rc == 0:
            assert '"type":"stats"' in r.out, r
        else:
            assert r.rc == 125 and "has no cgroup of its own" in r.err, r
        r = mrun("events", "--interval", "5x", name)
        assert r.rc == 125 and "--interval" in r.err, r
    finally:
        mrun("delete", "--force", name)
    r = mrun("events", "--stats", name)
    assert r.rc == 125 and "container does not exist" in r.err, r
