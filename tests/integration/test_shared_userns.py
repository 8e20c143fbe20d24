"""Rootless containers of a state root share one user namespace, kept by a holder
process (src/userns/shared_userns.hpp): newuidmap/newgidmap run once per holder.
What is shared is what each test below checks: the map, nothing of the caller, a
holder that goes away when idle or replaced, and a record that is never trusted
blindly."""

import json
import os
import subprocess
import time

import pytest

import mrunlib as M

pytestmark = pytest.mark.skipif(M.ROOTFUL, reason="rootless only: rootful makes no user namespace")


@pytest.fixture
def state(tmp_path):
    """A state root of the test's own, so that its holder is the test's alone."""
    d = tmp_path / "state"
    d.mkdir(mode=0o700)
    return str(d)


def _holder_pid(state):
    with open(os.path.join(state, ".userns")) as f:
        return int(f.read().split()[0])


def _userns_of_container(m, rootfs, *opts):
    r = m("run", "--rm", "--network", "none", *opts, rootfs, "/bin/sh", "-c",
          "readlink /proc/self/ns/user; cat /proc/self/uid_map")
    M.assert_rc(r)
    ns, _, uid_map = r.out.partition("\n")
    return ns.strip(), uid_map


def _stop_holders(state):
    try:
        M.kill_quietly(_holder_pid(state))
    except (OSError, ValueError):
        pass


def test_containers_share_one_user_namespace_with_the_full_map(mrun, rootfs, state):
    m = mrun.with_args("--root", state)
    try:
        first, uid_map = _userns_of_container(m, rootfs)
        second, _ = _userns_of_container(m, rootfs)
        host = os.readlink("/proc/self/ns/user")
        assert first == second != host, (
            f"two containers of one state root: {first} and {second} (host {host})")
        rng = M.subid_range("/etc/subuid")
        assert [tuple(map(int, l.split())) for l in uid_map.splitlines()] == [
            (0, M.UID, 1), (1, rng[0], min(65535, rng[1]))], uid_map
        holder = _holder_pid(state)
        assert holder in M.userns_holders(), f"the record names {holder}, no holder"
        assert os.readlink(f"/proc/{holder}/ns/user") == first
    finally:
        _stop_holders(state)


def test_userns_private_is_a_namespace_of_its_own(mrun, rootfs, state, names):
    """Each --userns private container has a user namespace of its own, apart from the
    shared one. Compared while all of them live: a namespace's inode number is reused
    once it is gone, so two that ran one after the other may show the same number."""
    m = mrun.with_args("--root", state)
    kept = []
    try:
        seen = []
        for opts in ((), ("--userns", "private"), ("--userns", "private")):
            name = names()
            M.assert_rc(m("run", "-d", "--name", name, "--network", "none", *opts, rootfs,
                          "sleep", "300"))
            kept.append(name)
            r = m("exec", name, "readlink", "/proc/self/ns/user")
            M.assert_rc(r)
            seen.append(r.out.strip())
        assert len(set(seen)) == 3, seen
    finally:
        for name in kept:
            m("delete", "--force", name)
        _stop_holders(state)


def test_the_holder_has_nothing_of_the_caller(mrun, rootfs, state):
    """No fd of mrun's (an engine reading mrun's stdout would never see end-of-file),
    cwd /, a session of its own, and one holder however many containers start."""
    m = mrun.with_args("--root", state)
    try:
        before = set(M.userns_holders())
        for _ in range(3):
            _userns_of_container(m, rootfs)
        new = set(M.userns_holders()) - before
        holder = _holder_pid(state)
        assert new == {holder}, f"expected one new holder, {holder}: {new}"
        fds = {fd: os.readlink(f"/proc/{holder}/fd/{fd}") for fd in os.listdir(f"/proc/{holder}/fd")}
        assert {fds.get(str(i)) for i in range(3)} == {"/dev/null"}, fds
        # Its own: the record's watch, the socket it hands spare network namespaces out
        # on (bound in the state root), its home network namespace and the spare.
        others = sorted(t.split(":[")[0] for fd, t in fds.items() if int(fd) > 2)
        assert others == ["anon_inode:inotify", "net", "net", "socket"], f"holder fds: {fds}"
        sock = next(t for t in fds.values() if t.startswith("socket:["))
        assert _unix_socket_path(sock) == os.path.join(state, ".userns.sock"), fds
        assert os.readlink(f"/proc/{holder}/cwd") == "/"
        assert os.getsid(holder) == holder, "the holder has no session of its own"
        # A pipe as mrun's stdout sees end-of-file when mrun exits, holder or not.
        start = time.monotonic()
        p = subprocess.run(f"{M.MRUN} --root {state} run --rm --network none {rootfs} "
                           f"/bin/echo hi | cat", shell=True, capture_output=True, text=True,
                           env=m.env, timeout=20)
        assert p.stdout == "hi\n" and time.monotonic() - start < 10, p
    finally:
        _stop_holders(state)


def _unix_socket_path(link):
    """The path a unix socket ("socket:[INODE]") is bound to, from /proc/net/unix."""
    inode = link[len("socket:["):-1]
    with open("/proc/net/unix") as f:
        for line in f.readlines()[1:]:
            fields = line.split()
            if fields[6] == inode:
                return fields[7] if len(fields) > 7 else None
    return None


def _spare_of(holder):
    """The network namespace the holder keeps to hand out: of its two, not its own."""
    own = os.readlink(f"/proc/{holder}/ns/net")
    nets = [os.readlink(f"/proc/{holder}/fd/{fd}") for fd in os.listdir(f"/proc/{holder}/fd")]
    spares = [n for n in nets if n.startswith("net:[") and n != own]
    assert len(spares) == 1, (own, nets)
    return spares[0]


def test_a_container_is_born_in_the_holders_spare_network_namespace(mrun, rootfs, state, names):
    """The holder hands its spare to exactly one container and makes the next; the
    holder itself is never in a namespace it handed out (userns/spare_netns.hpp)."""
    m = mrun.with_args("--root", state)
    kept = []
    try:
        _userns_of_container(m, rootfs)
        holder = _holder_pid(state)
        seen = []
        for _ in range(3):
            spare = _spare_of(holder)
            name = names()
            M.assert_rc(m("run", "-d", "--name", name, "--network", "none", rootfs, "sleep", "300"))
            kept.append(name)
            r = m("exec", name, "readlink", "/proc/self/ns/net")
            M.assert_rc(r)
            seen.append(r.out.strip())
            assert seen[-1] == spare, f"container in {seen[-1]}, the holder's spare was {spare}"
            assert M.wait_until(lambda: _spare_of(holder) != spare, 5), "no next spare made"
        assert len(set(seen)) == 3, f"containers living side by side share a namespace: {seen}"
        assert os.readlink(f"/proc/{holder}/ns/net") not in seen
        assert os.readlink("/proc/self/ns/net") not in seen
    finally:
        for name in kept:
            m("delete", "-f", name)
        _stop_holders(state)


def test_a_spare_network_namespace_is_as_new_as_a_fresh_one(mrun, rootfs, state):
    """What one container did to its network namespace (an address on lo) is not in the
    next one's; the next has only a loopback device, brought up by mrun."""
    m = mrun.with_args("--root", state)
    try:
        r = m("run", "--rm", "--network", "none", "--cap-add", "NET_ADMIN", rootfs, "/bin/sh",
              "-c", "ip addr add 10.99.0.1/32 dev lo && ip addr show lo")
        M.assert_rc(r)
        assert "10.99.0.1" in r.out, r.out
        for _ in range(2):
            r = m("run", "--rm", "--network", "none", rootfs, "/bin/sh", "-c",
                  "ip -o link; ip -o addr")
            M.assert_rc(r)
            assert "10.99.0.1" not in r.out, r.out
            links = [l.split(":")[1].strip() for l in r.out.splitlines() if ": <" in l]
            assert links == ["lo"], r.out
            assert "UP" in r.out.splitlines()[0], r.out
    finally:
        _stop_holders(state)


def test_the_holder_shows_as_mrun_userns_with_nothing_of_the_first_container(
        mrun, rootfs, state):
    """ps shows `mrun-userns UID`, not the command line of the mrun run that started it
    (arguments that may hold secrets, and that read as a container that never exited);
    its environment is empty."""
    m = mrun.with_args("--root", state)
    marker = f"secret-marker-{os.getpid()}"
    try:
        r = m("run", "--rm", "--network", "none", "-e", f"TOKEN={marker}", rootfs,
              "/bin/echo", marker)
        M.assert_rc(r)
        holder = _holder_pid(state)
        with open(f"/proc/{holder}/cmdline", "rb") as f:
            assert f.read().split(b"\0")[:-1] == [b"mrun-userns", str(M.UID).encode()]
        with open(f"/proc/{holder}/environ", "rb") as f:
            assert f.read() == b"", "the holder kept an environment"
        assert not M.procs_with_arg(marker), M.procs_with_arg(marker)
        ps = subprocess.run(["ps", "-o", "args=", "-p", str(holder)], capture_output=True,
                            text=True, timeout=10)
        assert ps.stdout.strip() == f"mrun-userns {M.UID}", ps
    finally:
        _stop_holders(state)


def test_mrun_userns_shows_and_stops_the_holder(mrun, rootfs, state, name):
    """`mrun userns` names the holder and its maps; --stop ends it without touching a
    running container; the next container starts a new one."""
    m = mrun.with_args("--root", state)
    r = m("userns", "--format", "json")
    M.assert_rc(r)
    assert json.loads(r.out) is None, r
    r = m.detach("--name", name, "--network", "none", rootfs, "/bin/sleep", "1000")
    try:
        M.assert_rc(r)
        holder = _holder_pid(state)
        r = m("userns", "--format", "json")
        M.assert_rc(r)
        shown = json.loads(r.out)
        assert shown["pid"] == holder, r
        assert shown["userNamespace"] == os.readlink(f"/proc/{holder}/ns/user"), r
        assert shown["uidMappings"][0] == {"containerID": 0, "hostID": M.UID, "size": 1}, r
        table = m("userns")
        M.assert_rc(table)
        assert table.lines[1].split("\t")[0] == str(holder), table
        stop = m("userns", "--stop")
        M.assert_rc(stop)
        assert stop.out == f"stopped mrun-userns {holder}\n", stop
        assert holder not in M.userns_holders(), "the holder is still there after --stop"
        assert not os.path.exists(os.path.join(state, ".userns")), "the record stayed"
        M.assert_rc(m("exec", name, "/bin/true"))
        M.assert_rc(m("userns", "--stop"))  # none left: not an error
        _userns_of_container(m, rootfs)
        assert _holder_pid(state) != holder
    finally:
        m("delete", "-f", name)
        _stop_holders(state)


def test_mrun_userns_by_hand_refuses(tmp_path):
    """The holder program is mrun's alone: started by hand (a link named mrun-userns)
    it says so and exits 125, holding nothing."""
    link = tmp_path / "mrun-userns"
    link.symlink_to(M.MRUN)
    p = subprocess.run([str(link), "1000"], capture_output=True, text=True, timeout=10,
                       stdin=subprocess.DEVNULL)
    assert p.returncode == 125, p
    assert p.stderr.startswith("mrun-userns: started by mrun only"), p


def test_the_holder_exits_once_idle(mrun, rootfs, state):
    m = mrun.with_args("--root", state).with_env(MRUN_USERNS_LINGER="1")
    _userns_of_container(m, rootfs)
    holder = _holder_pid(state)
    assert M.wait_until(lambda: holder not in M.userns_holders(), 10), (
        f"holder {holder} still there 10 s after its 1 s linger")


def test_a_holder_with_another_map_is_replaced_and_exits(mrun, rootfs, state, tmp_path):
    rng_u, rng_g = M.subid_range("/etc/subuid"), M.subid_range("/etc/subgid")
    if not rng_u or not rng_g or rng_u[1] < 1000 or rng_g[1] < 1000:
        pytest.skip(f"{M.USER} needs subuid/subgid ranges of at least 1000")
    m = mrun.with_args("--root", state)
    try:
        first, _ = _userns_of_container(m, rootfs)
        old = _holder_pid(state)
        fu, fg = tmp_path / "subuid", tmp_path / "subgid"
        fu.write_text(f"{M.USER}:{rng_u[0]}:1000\n")
        fg.write_text(f"{M.USER}:{rng_g[0]}:1000\n")
        os.chmod(tmp_path, 0o755)
        small = m.with_env(MRUN_SUBUID_FILE=str(fu), MRUN_SUBGID_FILE=str(fg))
        second, uid_map = _userns_of_container(small, rootfs)
        assert second != first, "a container with another map joined the old namespace"
        assert uid_map.split("\n")[1].split() == ["1", str(rng_u[0]), "1000"], uid_map
        assert M.wait_until(lambda: old not in M.userns_holders(), 10), (
            f"the replaced holder {old} did not exit")
    finally:
        _stop_holders(state)


def test_a_stale_or_forged_record_is_not_joined(mrun, rootfs, state):
    """The record names a live process of the caller that is no holder (in the host's
    user namespace), or a dead one: a fresh holder is started, the namespace is never
    the host's."""
    m = mrun.with_args("--root", state)
    record = os.path.join(state, ".userns")
    decoy = subprocess.Popen(["sleep", "100"])
    try:
        start = int(open(f"/proc/{decoy.pid}/stat").read().rsplit(")", 1)[1].split()[19])
        host = os.readlink("/proc/self/ns/user")
        for forged in (f"{decoy.pid} {start}\n", f"{decoy.pid} {start + 1}\n", "999999 1\n"):
            with open(record, "w") as f:
                f.write(forged)
            ns, _ = _userns_of_container(m, rootfs)
            assert ns != host, f"record {forged!r}: the container got the host's namespace"
            assert _holder_pid(state) != decoy.pid, f"record {forged!r} was trusted"
            _stop_holders(state)
    finally:
        decoy.kill()
        decoy.wait()
        _stop_holders(state)


def test_killing_the_holder_leaves_running_containers_alone(mrun, rootfs, state, name):
    m = mrun.with_args("--root", state)
    r = m.detach("--name", name, "--network", "none", rootfs, "/bin/sleep", "1000")
    try:
        M.assert_rc(r)
        holder = _holder_pid(state)
        M.kill_quietly(holder)
        assert M.wait_until(lambda: holder not in M.userns_holders(), 5)
        e = m("exec", name, "/bin/true")
        M.assert_rc(e)
        again, _ = _userns_of_container(m, rootfs)
        assert _holder_pid(state) != holder, "no new holder after the old one was killed"
        assert again != os.readlink("/proc/self/ns/user")
    finally:
        m("delete", "-f", name)
        _stop_holders(state)


def test_without_newuidmap_a_new_holder_is_125_and_leaves_nothing(mrun, rootfs, state, name):
    path = M.path_without("newuidmap", "newgidmap")
    try:
        r = mrun.with_args("--root", state).with_env(PATH=path)(
            "run", "--rm", "--name", name, "--network", "none", rootfs, "/bin/true")
        M.assert_mrun_error(r, 125, mentions=["newuidmap"])
        assert not os.path.exists(os.path.join(state, ".userns")), "a record without a holder"
        assert not os.path.exists(os.path.join(state, name))
    finally:
        import shutil
        shutil.rmtree(path, ignore_errors=True)


def test_delete_removes_subordinate_files_in_the_shared_namespace(mrun, rootfs, state, name):
    """Files of a container's non-root user are removed from inside the living
    holder's namespace: no newuidmap needed (PATH has none here)."""
    m = mrun.with_args("--root", state)
    path = M.path_without("newuidmap", "newgidmap")
    r = m("run", "--name", name, "--network", "none", "-u", "1000:1000", rootfs, "/bin/sh",
          "-c", "mkdir /tmp/private && echo x > /tmp/private/f && chmod 700 /tmp/private")
    try:
        M.assert_rc(r)
        M.assert_rc(m.with_env(PATH=path)("delete", name))
        assert not os.path.exists(M.container_dir(name)), "the upper dir is still there"
    finally:
        m("delete", "-f", name)
        _stop_holders(state)
        import shutil
        shutil.rmtree(path, ignore_errors=True)
