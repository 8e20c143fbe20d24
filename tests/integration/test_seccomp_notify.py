"""linux.seccomp as the runtime spec has it: every action seen from inside the container
(the probe's own syscalls), and SCMP_ACT_NOTIFY with a real agent: this test's own
Python agent listens on the profile's listenerPath, receives the container process
state and the listener fd, and answers the container's syscalls through
SECCOMP_IOCTL_NOTIF_RECV / SECCOMP_IOCTL_NOTIF_SEND; the container must see exactly
the answer. Refusals are 125 with nothing left behind. Rootless and rootful."""

import errno
import fcntl
import json
import os
import platform
import select
import shutil
import socket
import struct
import subprocess
import tempfile
import threading

import pytest

import mrunlib as M

pytestmark = pytest.mark.skipif(platform.machine() != "x86_64",
                                reason="syscall numbers and struct layouts of x86-64")

# x86-64 syscall numbers (asm/unistd_64.h).
NR = {"getppid": 110, "getpgid": 121, "mkdirat": 258}

# linux/seccomp.h: struct seccomp_notif is 80 bytes (id, pid, flags, seccomp_data {nr,
# arch, instruction_pointer, args[6]}), struct seccomp_notif_resp 24 (id, val, error,
# flags); SECCOMP_IOCTL_NOTIF_RECV = _IOWR('!', 0, struct seccomp_notif),
# SECCOMP_IOCTL_NOTIF_SEND = _IOWR('!', 1, struct seccomp_notif_resp).
NOTIF = struct.Struct("=QIIiIQ6Q")
RESP = struct.Struct("=QqiI")
IOC_READ_WRITE = 3


def _iowr(nr, size):
    return (IOC_READ_WRITE << 30) | (size << 16) | (ord("!") << 8) | nr


NOTIF_RECV = _iowr(0, NOTIF.size)
NOTIF_SEND = _iowr(1, RESP.size)
USER_NOTIF_FLAG_CONTINUE = 1
assert (NOTIF.size, RESP.size, NOTIF_RECV, NOTIF_SEND) == (80, 24, 0xc0502100, 0xc0182101)


class SeccompAgent:
    """An engine's seccomp agent: one container process state (JSON) and one listener
    fd per connection; each listener's notifications answered from ANSWERS, {syscall
    number: ("value", N) | ("errno", E)}; any other syscall goes on (CONTINUE)."""

    def __init__(self, answers):
        self.dir = tempfile.mkdtemp(prefix="mrun-agent.", dir="/tmp")
        os.chmod(self.dir, 0o755)
        self.path = os.path.join(self.dir, "agent.sock")
        self.answers = answers
        self.states = []         # the JSON objects received, in order
        self.notifications = []  # (pid, syscall number) of each notification answered
        self.errors = []
        self.stopping = False
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.bind(self.path)
        self.sock.listen(8)
        self.lock = threading.Lock()
        self.threads = [threading.Thread(target=self._accept, daemon=True)]
        self.threads[0].start()

    def _accept(self):
        while not self.stopping:
            ready, _, _ = select.select([self.sock], [], [], 0.1)
            if not ready or self.stopping:
                continue
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                data, fds, _, _ = socket.recv_fds(conn, 65536, 1)
                while True:  # one state per connection, then the runtime closes it
                    more = conn.recv(65536)
                    if not more:
                        break
                    data += more
            try:
                state = json.loads(data)
            except ValueError as e:
                self.errors.append(f"not JSON ({e}): {data!r}")
                continue
            if len(fds) != 1:
                self.errors.append(f"expected one fd, got {fds}")
                continue
            with self.lock:
                self.states.append(state)
            t = threading.Thread(target=self._serve, args=(fds[0],), daemon=True)
            self.threads.append(t)
            t.start()

    def _serve(self, fd):
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        try:
            while not self.stopping:
                for _, events in poller.poll(100):
                    if events & select.POLLIN:
                        self._answer_one(fd)
                    elif events & (select.POLLHUP | select.POLLERR):
                        return  # every process of the filter is gone
        finally:
            os.close(fd)

    def _answer_one(self, fd):
        buf = bytearray(NOTIF.size)
        try:
            fcntl.ioctl(fd, NOTIF_RECV, buf, True)
        except OSError as e:
            if e.errno not in (errno.ENOENT, errno.EINTR):
                self.errors.append(f"SECCOMP_IOCTL_NOTIF_RECV: {e}")
            return
        notif_id, pid, _, nr, *_ = NOTIF.unpack(buf)
        with self.lock:
            self.notifications.append((pid, nr))
        kind, value = self.answers.get(nr, ("continue", 0))
        if kind == "value":
            resp = RESP.pack(notif_id, value, 0, 0)
        elif kind == "errno":
            resp = RESP.pack(notif_id, 0, -value, 0)
        else:
            resp = RESP.pack(notif_id, 0, 0, USER_NOTIF_FLAG_CONTINUE)
        try:
            fcntl.ioctl(fd, NOTIF_SEND, resp)
        except OSError as e:
            if e.errno != errno.ENOENT:  # the process died meanwhile
                self.errors.append(f"SECCOMP_IOCTL_NOTIF_SEND: {e}")

    def stop_listening(self):
        """No agent at the path any more (the listeners taken so far are still served)."""
        self.sock.close()
        os.unlink(self.path)

    def close(self):
        self.stopping = True
        for t in self.threads:
            t.join(timeout=5)
        if self.sock.fileno() >= 0:
            self.sock.close()
        shutil.rmtree(self.dir, ignore_errors=True)


@pytest.fixture
def agent():
    agents = []

    def start(answers):
        a = SeccompAgent(answers)
        agents.append(a)
        return a
    yield start
    for a in agents:
        a.close()
    for a in agents:
        assert not a.errors, a.errors


def notify_profile(listener_path, names, metadata=None, **extra):
    profile = {
        "defaultAction": "SCMP_ACT_ALLOW",
        "listenerPath": listener_path,
        "syscalls": [{"names": names, "action": "SCMP_ACT_NOTIFY"}],
        **extra,
    }
    if metadata is not None:
        profile["listenerMetadata"] = metadata
    return profile


def bundle_with(mrun, tmp_path, rootfs, args, profile):
    def edit(c):
        c["linux"]["seccomp"] = profile
    return M.oci_bundle(mrun, tmp_path, rootfs, args, edit)


def run_bundle(mrun, bundle, name):
    try:
        return mrun("run", "--bundle", bundle, name)
    finally:
        mrun("delete", "--force", name)


def gone(mrun, name):
    M.assert_mrun_error(mrun("state", name), mentions=["does not exist"])


# ---- SCMP_ACT_NOTIFY with an agent ------------------------------------------------

@pytest.mark.parametrize("args,answer,expected", [
    (["getppid"], ("value", 4242), "rc=4242"),
    (["mkdirat", "/tmp/made-by-agent"], ("errno", errno.EXDEV), "errno=EXDEV"),
], ids=["value", "errno"])
def test_notify_the_agent_answers_for_the_kernel(mrun, rootfs, name, tmp_path, agent, args,
                                                 answer, expected):
    a = agent({NR[args[0]]: answer})
    profile = notify_profile(a.path, [args[0]], metadata=f"meta of {name}")
    bundle = bundle_with(mrun, tmp_path, rootfs, ["/bin/mrun-probe", "sys", *args], profile)
    r = run_bundle(mrun, bundle, name)
    M.assert_rc(r)
    assert r.out.split() == [expected], r
    # The container process state, as runc sends it: the process made the syscall.
    assert len(a.states) == 1, a.states
    state = a.states[0]
    assert state["fds"] == ["seccompFd"] and state["ociVersion"], state
    assert state["metadata"] == f"meta of {name}", state
    assert state["state"]["id"] == name and state["state"]["status"] == "creating", state
    assert state["state"]["bundle"] == str(bundle), state
    assert (state["pid"], NR[args[0]]) in a.notifications, (state, a.notifications)
    assert state["state"]["pid"] == state["pid"], state  # the command is the init


def test_notify_under_init_names_the_command_not_pid_1(mrun, rootfs, name, tmp_path, agent):
    """mrun run --init --security-opt seccomp=PATH: the profile's listener is the
    command's (PID 2); the state's pid is the container's init, the reaper, whose own
    filter makes no listener."""
    a = agent({NR["getppid"]: ("value", 4242)})
    path = tmp_path / "profile.json"
    path.write_text(json.dumps(notify_profile(a.path, ["getppid"])))
    os.chmod(tmp_path, 0o755)
    os.chmod(path, 0o644)
    r = mrun("run", "--rm", "--init", "--name", name, "--security-opt", f"seccomp={path}", rootfs,
             "/bin/mrun-probe", "sys", "getppid")
    M.assert_rc(r)
    assert r.out.split() == ["rc=4242"], r
    assert len(a.states) == 1, a.states
    state = a.states[0]
    assert "metadata" not in state, state
    assert (state["pid"], NR["getppid"]) in a.notifications, (state, a.notifications)
    assert state["state"]["pid"] != state["pid"], state


def test_notify_for_exec_sends_the_exec_process_listener(mrun, rootfs, name, tmp_path, agent):
    a = agent({NR["getppid"]: ("value", 4242)})
    profile = notify_profile(a.path, ["getppid"], metadata="m")
    bundle = bundle_with(mrun, tmp_path, rootfs, ["sleep", "300"], profile)
    try:
        M.assert_rc(mrun.detach("--bundle", bundle, name))
        init_pid = json.loads(mrun("state", name).out)["pid"]
        r = mrun("exec", name, "/bin/mrun-probe", "sys", "getppid")
        M.assert_rc(r)
        assert r.out.split() == ["rc=4242"], r
        assert M.wait_until(lambda: len(a.states) == 2, 5), a.states
        run_state, exec_state = a.states
        assert run_state["pid"] == init_pid and run_state["state"]["status"] == "creating"
        assert exec_state["state"]["status"] == "running", exec_state
        assert exec_state["state"]["pid"] == init_pid and exec_state["pid"] != init_pid
        assert exec_state["metadata"] == "m" and exec_state["state"]["id"] == name
        assert (exec_state["pid"], NR["getppid"]) in a.notifications, a.notifications
    finally:
        mrun("delete", "--force", name)


def _create(mrun, bundle, name, out, err):
    """mrun create, waited for until mrun exits: the container keeps its stdio, which
    are files here (runc's pass-through), as does the monitor that stays with it."""
    p = mrun.popen("create", "--bundle", bundle, name, stdout=out, stderr=err)
    try:
        rc = p.wait(timeout=30)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()
        raise AssertionError("mrun create did not return within 30s") from None
    err.seek(0)
    assert rc == 0, err.read().decode()


def _read(f):
    f.seek(0)
    return f.read().decode(errors="replace")


def _wait_stopped(mrun, name):
    return M.wait_until(lambda: json.loads(mrun("state", name).out)["status"] == "stopped", 10)


def test_notify_create_then_start_hands_over_at_start(mrun, rootfs, name, tmp_path, agent):
    """OCI create/start: the filter is loaded once `start` released the process (mrun
    loads it last, after the wait for start), so the agent hears of it then."""
    a = agent({NR["getppid"]: ("value", 4242)})
    bundle = bundle_with(mrun, tmp_path, rootfs, ["/bin/mrun-probe", "sys", "getppid"],
                         notify_profile(a.path, ["getppid"]))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            _create(mrun, bundle, name, out, err)
            assert a.states == [], "the listener exists only once the filter is loaded"
            M.assert_rc(mrun("start", name))
            assert _wait_stopped(mrun, name), mrun("state", name)
            assert _read(out).split() == ["rc=4242"], _read(err)
            assert len(a.states) == 1 and a.states[0]["state"]["id"] == name, a.states
        finally:
            mrun("delete", "--force", name)


def test_notify_create_then_start_without_agent_never_runs_the_command(mrun, rootfs, name,
                                                                       tmp_path, agent):
    a = agent({})
    bundle = bundle_with(mrun, tmp_path, rootfs, ["/bin/mrun-probe", "sys", "getppid"],
                         notify_profile(a.path, ["getppid"]))
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        try:
            _create(mrun, bundle, name, out, err)
            a.stop_listening()
            M.assert_rc(mrun("start", name))
            assert _wait_stopped(mrun, name), mrun("state", name)
            assert "rc=" not in _read(out), _read(out)
            # The monitor says why, in its log (the container's stdio are the engine's).
            log = os.path.join(M.state_dir(), name, "container.log")
            assert M.wait_until(lambda: f"seccomp listenerPath {a.path}" in (M._read(log) or ""),
                                5), M._read(log)
        finally:
            mrun("delete", "--force", name)


# ---- refusals: 125, one line, nothing left behind -----------------------------------

def test_notify_without_listener_path_is_refused(mrun, rootfs, name, tmp_path):
    profile = {"defaultAction": "SCMP_ACT_ALLOW",
               "syscalls": [{"names": ["getppid"], "action": "SCMP_ACT_NOTIFY"}]}
    bundle = bundle_with(mrun, tmp_path, rootfs, ["/bin/mrun-probe", "sys", "getppid"], profile)
    r = mrun("run", "--bundle", bundle, name)
    M.assert_mrun_error(r, mentions=["linux.seccomp", "syscalls[0]",
                                     "listenerPath is not set"])
    assert "rc=" not in r.out, r
    gone(mrun, name)


def test_notify_with_nobody_listening_is_a_125_naming_listener_path(mrun, rootfs, name,
                                                                     tmp_path):
    nobody = tempfile.mkdtemp(prefix="mrun-agent.", dir="/tmp")
    try:
        path = os.path.join(nobody, "agent.sock")
        bundle = bundle_with(mrun, tmp_path, rootfs, ["/bin/mrun-probe", "sys", "getppid"],
                             notify_profile(path, ["getppid"]))
        r = mrun("run", "--bundle", bundle, name)
        M.assert_mrun_error(r, mentions=[f"seccomp listenerPath {path}", "connect"])
        assert "rc=" not in r.out, r
        gone(mrun, name)
    finally:
        shutil.rmtree(nobody)


def test_a_profile_that_denies_sendmsg_cannot_hand_over_and_says_so(mrun, rootfs, name, tmp_path,
                                                                    agent):
    """The hand-over is one sendmsg under the filter already: denied, the process cannot
    even report its error; the monitor says what happened."""
    a = agent({})
    profile = notify_profile(a.path, ["getppid"])
    profile["syscalls"].append({"names": ["sendmsg"], "action": "SCMP_ACT_ERRNO"})
    bundle = bundle_with(mrun, tmp_path, rootfs, ["/bin/mrun-probe", "sys", "getppid"], profile)
    r = mrun("run", "--bundle", bundle, name)
    M.assert_mrun_error(r, mentions=["seccomp notification listener", a.path,
                                     "must allow sendmsg"])
    assert "rc=" not in r.out and a.states == [], r
    gone(mrun, name)


def test_exec_with_nobody_listening_is_a_125_and_the_container_lives_on(mrun, rootfs, name,
                                                                       tmp_path, agent):
    a = agent({})
    bundle = bundle_with(mrun, tmp_path, rootfs, ["sleep", "300"],
                         notify_profile(a.path, ["getppid"]))
    try:
        M.assert_rc(mrun.detach("--bundle", bundle, name))
        a.stop_listening()
        r = mrun("exec", name, "/bin/mrun-probe", "sys", "getppid")
        M.assert_mrun_error(r, mentions=[f"seccomp listenerPath {a.path}"])
        assert "rc=" not in r.out, r
        # The exec'd process is gone; the container is not.
        ps = mrun("ps", name)
        M.assert_rc(ps)
        assert "mrun-probe" not in ps.out, ps
        assert json.loads(mrun("state", name).out)["status"] == "running"
    finally:
        mrun("delete", "--force", name)


# ---- every action, from inside --------------------------------------------------------

SIGSYS_EXIT = 128 + 31


@pytest.mark.parametrize("default,rule,probe,rc,expected", [
    ("SCMP_ACT_ALLOW", {"action": "SCMP_ACT_ERRNO", "errnoRet": errno.EXDEV}, ["getppid"], 0,
     ["errno=EXDEV"]),
    # No tracer: the kernel answers ENOSYS.
    ("SCMP_ACT_ALLOW", {"action": "SCMP_ACT_TRACE", "errnoRet": 5}, ["getppid"], 0,
     ["errno=ENOSYS"]),
    ("SCMP_ACT_ALLOW", {"action": "SCMP_ACT_TRAP"}, ["trap", "getppid"], 0, None),
    ("SCMP_ACT_ALLOW", {"action": "SCMP_ACT_KILL_PROCESS"}, ["getppid"], SIGSYS_EXIT, []),
    ("SCMP_ACT_ALLOW", {"action": "SCMP_ACT_KILL_THREAD"}, ["getppid"], SIGSYS_EXIT, []),
    ("SCMP_ACT_ALLOW", {"action": "SCMP_ACT_KILL"}, ["getppid"], SIGSYS_EXIT, []),
    # Allowed, and logged (the audit log is the host's; the call must work).
    ("SCMP_ACT_ALLOW", {"action": "SCMP_ACT_LOG"}, ["getppid"], 0, ["rc=0"]),
    ("SCMP_ACT_LOG", {"action": "SCMP_ACT_ALLOW"}, ["getppid"], 0, ["rc=0"]),
], ids=["errno", "trace", "trap", "kill-process", "kill-thread", "kill", "log", "allow"])
def test_every_action_as_the_command_sees_it(mrun, rootfs, name, tmp_path, default, rule, probe,
                                             rc, expected):
    profile = {"defaultAction": default, "syscalls": [{"names": ["getppid"], **rule}]}
    bundle = bundle_with(mrun, tmp_path, rootfs, ["/bin/mrun-probe", "sys", *probe], profile)
    r = run_bundle(mrun, bundle, name)
    M.assert_rc(r, rc)
    if expected is None:  # SCMP_ACT_TRAP: SIGSYS, caught, names the syscall
        assert r.out.split()[:2] == ["sigsys", f"syscall={NR['getppid']}"], r
    else:
        # The parent of the container's init is outside its PID namespace: 0.
        assert r.out.split() == expected, r


# ---- mrun features -----------------------------------------------------------------

def test_features_lists_what_seccomp_honours(mrun):
    r = mrun("features")
    M.assert_rc(r)
    seccomp = json.loads(r.out)["linux"]["seccomp"]
    assert seccomp["enabled"] is True
    assert set(seccomp["actions"]) == {
        "SCMP_ACT_KILL", "SCMP_ACT_KILL_PROCESS", "SCMP_ACT_KILL_THREAD", "SCMP_ACT_TRAP",
        "SCMP_ACT_ERRNO", "SCMP_ACT_TRACE", "SCMP_ACT_ALLOW", "SCMP_ACT_LOG",
        "SCMP_ACT_NOTIFY"}, seccomp
    assert set(seccomp["operators"]) == {
        "SCMP_CMP_NE", "SCMP_CMP_LT", "SCMP_CMP_LE", "SCMP_CMP_EQ", "SCMP_CMP_GE",
        "SCMP_CMP_GT", "SCMP_CMP_MASKED_EQ"}, seccomp
    flags = ["SECCOMP_FILTER_FLAG_TSYNC", "SECCOMP_FILTER_FLAG_LOG",
             "SECCOMP_FILTER_FLAG_SPEC_ALLOW", "SECCOMP_FILTER_FLAG_WAIT_KILLABLE_RECV"]
    assert seccomp["knownFlags"] == flags, seccomp
    # This kernel (5.19 or later) takes them all.
    assert seccomp["supportedFlags"] == flags, seccomp
    assert "SCMP_ARCH_X86_64" in seccomp["archs"] and "SCMP_ARCH_X86" in seccomp["archs"]
