"""The start-up machinery kept for speed, attacked: the shared user namespace's holder
(userns/shared_userns.hpp), the spare network namespace it hands each container, and
the spare storage directories one container leaves for the next
(state/storage.hpp). Each test is an attack a container (or its image) can make
with what the user lets it have, and what must stop it.

Out of reach by construction, and so not attacked here: the holder's socket and record
lie in the caller's private state root (another user's forgeries are refused by
test_escapes.py, a stale record by test_shared_userns.py); a process of the same user
outside any container can ptrace the holder as it can any of the user's processes
(rootless, the user is the trust boundary).
"""

import json
import os

import pytest

import mrunlib as M
# A state root of the test's own, and its holder's pid and end (test_shared_userns.py).
from test_shared_userns import _holder_pid, _stop_holders, state  # noqa: F401

rootless_only = pytest.mark.skipif(M.ROOTFUL, reason="rootless only: rootful makes no "
                                   "shared user namespace and no spare network namespace")


def _pid_of(mrun, name):
    r = mrun("list", "--format", "json")
    M.assert_rc(r)
    return next(c["pid"] for c in json.loads(r.out) if c["name"] == name)


def _holders():
    return sorted(M.userns_holders())


@rootless_only
def test_a_container_cannot_reach_the_holder_or_a_sibling(mrun, rootfs, names):
    """Every container of the user shares the holder's user namespace, so its root has
    capabilities over the holder and its siblings (given CAP_SYS_PTRACE here, as a
    user may): what stops it is that neither is visible, a PID namespace of its own."""
    sibling, attacker = names(), names()
    r = mrun("run", "-d", "--name", sibling, "--network", "none", rootfs, "sleep", "300")
    try:
        M.assert_rc(r)
        targets = [*_holders(), _pid_of(mrun, sibling)]
        assert len(targets) >= 2, targets
        script = "; ".join(
            f"kill -0 {p} 2>/dev/null; echo kill={p}:$?; mrun-probe inject {p}" for p in targets)
        script += "; ls /proc | grep -c '^[0-9]'"
        r = M.run_sh(mrun, rootfs, script, "--cap-add", "SYS_PTRACE", "--network", "none",
                     name=attacker)
        M.assert_rc(r)
        for p in targets:
            assert f"kill={p}:1" in r.out, f"signal 0 reached host pid {p}\n{r!r}"
        assert "mem=ok" not in r.out and "seize=ok" not in r.out, r
        assert r.out.count("seize errno=ESRCH") == len(targets), r
        assert int(r.lines[-1]) <= 4, f"the attacker sees more than its own processes\n{r!r}"
    finally:
        mrun("delete", "--force", sibling)


NETWORK_MARKERS = "ip -4 addr; ip route; cat /proc/sys/net/ipv4/ip_unprivileged_port_start; " \
                  "cat /proc/sys/net/ipv4/ping_group_range; cat /proc/net/unix"


@rootless_only
def test_a_running_containers_network_never_reaches_the_next_one(mrun, rootfs, names):
    """A --privileged container leaves everything it can in its network namespace while
    it runs (an address, a route, a sysctl, a listening abstract socket); containers
    started after it, each born in the holder's next spare, see a network namespace
    like one made for a --userns private container from clone."""
    attacker = names()
    marker = f"mrun-attack-{os.getpid()}"
    # /proc/sys is read-only even then: a proc of its own to write the sysctl through.
    script = ("ip addr add 10.99.99.99/32 dev lo && ip route add 10.98.0.0/16 dev lo && "
              "mkdir -p /tmp/p && mount -t proc proc /tmp/p && "
              "echo 7 >/tmp/p/sys/net/ipv4/ip_unprivileged_port_start && "
              f"exec mrun-probe abstract {marker} 300")
    r = mrun("run", "-d", "--name", attacker, "--privileged", "--network", "none", rootfs,
             "/bin/sh", "-c", script)
    try:
        M.assert_rc(r)
        assert M.wait_until(lambda: _in_container_unix(mrun, attacker, marker), 10), \
            "the attacker's socket never appeared"
        r = mrun("exec", attacker, "cat", "/proc/sys/net/ipv4/ip_unprivileged_port_start")
        assert r.out.strip() == "7", r
        seen = [M.run_sh(mrun, rootfs, NETWORK_MARKERS, "--network", "none") for _ in range(3)]
        fresh = M.run_sh(mrun, rootfs, NETWORK_MARKERS, "--network", "none",
                         "--userns", "private")
        for r in [*seen, fresh]:
            M.assert_rc(r)
            for leaked in ("10.99.99.99", "10.98.0.0", marker):
                assert leaked not in r.out, f"{leaked} reached a later container\n{r!r}"
        for r in seen:
            assert _without_inodes(r.out) == _without_inodes(fresh.out), (
                f"a spare differs from a fresh namespace\n{r!r}\n{fresh!r}")
    finally:
        mrun("delete", "--force", attacker)


def _in_container_unix(mrun, name, marker):
    r = mrun("exec", name, "cat", "/proc/net/unix")
    return r.rc == 0 and marker in r.out


def _without_inodes(text):
    """/proc/net/unix's own lines carry inode numbers; the rest is compared as is."""
    return [line for line in text.splitlines() if not line.startswith(("0000", "Num"))]


@pytest.mark.parametrize("attack", ["chmod 700 /", "chown 5:5 /", "touch -d @1000 /",
                                    "chmod 1777 /"])
def test_a_containers_root_never_reaches_the_next_one(mrun, rootfs, name, attack):
    """A container that changes its own / (the upper layer's root directory: no entry
    is left in the layer) must not hand that / to the next container, which may get
    the spare storage it leaves."""
    before = M.run_sh(mrun, rootfs, "stat -c %a:%u:%g:%Y /", "--network", "none")
    M.assert_rc(before)
    r = M.run_sh(mrun, rootfs, f"{attack} && stat -c %a:%u:%g:%Y /", "--network", "none",
                 name=name)
    M.assert_rc(r)
    assert r.out != before.out, f"the attack changed nothing\n{r!r}"
    for _ in range(3):  # the first takes the attacker's storage if anything does
        after = M.run_sh(mrun, rootfs, "stat -c %a:%u:%g:%Y /", "--network", "none")
        M.assert_rc(after)
        assert after.out.split(":")[:3] == before.out.split(":")[:3], (
            f"{attack} reached a later container\n{after!r}")
        assert after.out.strip().split(":")[3] != "1000", after


@rootless_only
def test_a_stopped_and_flooded_holder_does_not_hang_a_start(mrun, rootfs, state):
    """The holder stopped (SIGSTOP) with its request queue full of connections no one
    reads: the next container still starts, in a network namespace of its own, within
    the second mrun waits for a spare."""
    import signal
    import socket
    m = mrun.with_args("--root", state)
    M.assert_rc(m("run", "--rm", "--network", "none", rootfs, "true"))
    holder = _holder_pid(state)
    flood = []
    os.kill(holder, signal.SIGSTOP)
    try:
        for _ in range(4096):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
            s.setblocking(False)
            flood.append(s)
            try:
                s.connect(os.path.join(state, ".userns.sock"))
            except (BlockingIOError, InterruptedError):
                break  # the backlog is full
        else:
            pytest.fail("4096 connections and the holder's backlog is not full")
        r = m("run", "--rm", "--network", "none", rootfs, "/bin/sh", "-c",
              "readlink /proc/self/ns/net", timeout=15)
        M.assert_rc(r)
        assert r.elapsed < 10, f"a start waited {r.elapsed:.1f}s on a stopped holder\n{r!r}"
    finally:
        for s in flood:
            s.close()
        os.kill(holder, signal.SIGCONT)
        _stop_holders(state)


@rootless_only
def test_starts_racing_the_holders_idle_exit_all_work(mrun, rootfs, state):
    """With a one-second linger, containers started around the moment the holder
    gives up: each either joins it (the namespace fd it opened keeps the namespace)
    or starts the next one; none fails."""
    import time
    m = mrun.with_args("--root", state).with_env(MRUN_USERNS_LINGER="1")
    try:
        for delay in (0.9, 1.0, 1.05, 1.1, 0.95, 1.0):
            r = m("run", "--rm", "--network", "none", rootfs, "true")
            M.assert_rc(r)
            time.sleep(delay)
    finally:
        _stop_holders(state)
