"""Namespaces: pid, mount, uts, ipc, net, cgroup (and user, rootless)."""

import os
import shutil
import socket
import subprocess

import pytest

import mrunlib as M


def _ns_inside(mrun, rootfs, name, *opts):
    script = ("for n in pid mnt uts ipc net cgroup user; do "
              "echo $n $(readlink /proc/self/ns/$n); done")
    r = M.run_sh(mrun, rootfs, script, *opts, name=name)
    M.assert_rc(r)
    return dict(line.split(" ", 1) for line in r.lines if " " in line)


@pytest.mark.parametrize("ns", ["pid", "mnt", "uts", "ipc", "net", "cgroup"])
def test_new_namespace(mrun, rootfs, name, ns):
    inside = _ns_inside(mrun, rootfs, name)
    host = os.readlink(f"/proc/self/ns/{ns}")
    assert inside.get(ns), f"no /proc/self/ns/{ns} inside: {inside}"
    assert inside[ns] != host, f"container shares the host's {ns} namespace ({host})"


def test_user_namespace_rootless_only(mrun, rootfs, name):
    inside = _ns_inside(mrun, rootfs, name)
    host = os.readlink("/proc/self/ns/user")
    if M.ROOTFUL:
        assert inside["user"] == host, "rootful mrun must not create a user namespace"
    else:
        assert inside["user"] != host, "rootless container shares the host user namespace"


def test_network_host_shares_net_namespace(mrun, rootfs, name):
    inside = _ns_inside(mrun, rootfs, name, "--network", "host")
    assert inside["net"] == os.readlink("/proc/self/ns/net"), inside


def test_command_is_pid_1(mrun, rootfs, name):
    r = M.run_sh(mrun, rootfs, "echo $$", name=name)
    M.assert_rc(r)
    assert r.out.strip() == "1", r


def test_only_container_processes_visible(mrun, rootfs, name):
    """The probe as PID 1 lists /proc: it must be the only process."""
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/mrun-probe", "procs")
    M.assert_rc(r)
    assert r.lines == ["1 R mrun-probe"], f"processes visible inside:\n{r.out}"


def test_host_processes_invisible_to_ps(mrun, rootfs, name):
    marker = f"4242.{os.getpid()}"
    host = subprocess.Popen(["sleep", marker], stdin=subprocess.DEVNULL)
    try:
        r = M.run_sh(mrun, rootfs, "ps; echo; ls /proc", name=name)
        M.assert_rc(r)
        assert marker not in r.out, f"host process visible inside:\n{r.out}"
        assert str(host.pid) not in r.out.split(), f"host pid {host.pid} visible:\n{r.out}"
        pids = sorted(int(w) for w in r.out.split() if w.isdigit() and int(w) < 1000)
        assert pids and max(pids) < 20, f"unexpected pids inside:\n{r.out}"
    finally:
        host.kill()
        host.wait()


def test_proc_is_a_fresh_procfs(mrun, rootfs, name):
    mounts, r = M.container_mounts(mrun, rootfs, name=name)
    proc = M.mount_at(mounts, "/proc")
    assert proc is not None and proc.fstype == "proc", f"/proc is not a procfs mount:\n{r.out}"
    r = mrun("run", "--rm", "--name", name + "x", rootfs, "/bin/cat", "/proc/1/cmdline")
    M.assert_rc(r)
    assert r.out.split("\0")[0] == "/bin/cat", f"/proc/1 is not the container command: {r.out!r}"


# ---- uts -----------------------------------------------------------------------

def test_hostname_defaults_to_container_name(mrun, rootfs, name):
    before = os.uname().nodename
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/hostname")
    M.assert_rc(r)
    assert r.out.strip() == name, r
    assert os.uname().nodename == before, "the host's hostname changed"


def test_hostname_option(mrun, rootfs, name):
    before = os.uname().nodename
    r = mrun("run", "--rm", "--name", name, "--hostname", "box.example", rootfs,
             "/bin/sh", "-c", "hostname; echo $HOSTNAME")
    M.assert_rc(r)
    assert r.lines == ["box.example", "box.example"], r
    assert os.uname().nodename == before, "the host's hostname changed"


def test_hostname_change_inside_does_not_reach_host(mrun, rootfs, name):
    """Container root may or may not keep CAP_SYS_ADMIN (podman's default set
    drops it, so sethostname fails with EPERM); either way the host's
    hostname must not change."""
    before = os.uname().nodename
    r = M.run_sh(mrun, rootfs, "hostname changed-inside; echo rc=$?; hostname", name=name)
    assert r.lines[:1] in (["rc=0"], ["rc=1"]), r
    if r.lines[0] == "rc=0":
        assert r.lines[1] == "changed-inside", r
    else:
        assert "Operation not permitted" in r.err, r
    assert os.uname().nodename == before, "the host's hostname changed"


# ---- ipc -----------------------------------------------------------------------

def test_ipc_namespace_hides_host_sysv_objects(mrun, rootfs, name):
    made = subprocess.run(["ipcmk", "-Q"], capture_output=True, text=True)
    qid = made.stdout.strip().split(":")[-1].strip() if made.returncode == 0 else None
    try:
        r = mrun("run", "--rm", "--name", name, rootfs, "/bin/cat", "/proc/sysvipc/shm",
                 "/proc/sysvipc/sem", "/proc/sysvipc/msg")
        M.assert_rc(r)
        rows = [line for line in r.lines if line.strip() and not line.lstrip().startswith("key")]
        assert rows == [], f"SysV IPC objects visible inside:\n{r.out}"
    finally:
        if qid:
            subprocess.run(["ipcrm", "-q", qid], capture_output=True)


# ---- net -----------------------------------------------------------------------

def _ifaces(lines):
    return {line.split()[0]: line.split()[1:] for line in lines if line.strip()}


def test_network_none_has_only_lo_up(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "--network", "none", rootfs,
             "/bin/mrun-probe", "ifaces")
    M.assert_rc(r)
    ifs = _ifaces(r.lines)
    assert list(ifs) == ["lo"], f"interfaces inside: {r.out}"
    assert ifs["lo"][0] == "up", f"lo is not up: {r.out}"


def test_default_network_is_slirp4netns(mrun, rootfs, name):
    """Default: slirp4netns when installed (test_network.py covers the case
    without it): lo and tap0, nothing of the host's."""
    if shutil.which("slirp4netns") is None:
        pytest.skip("slirp4netns is not installed: the default is none (test_network.py)")
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/mrun-probe", "ifaces")
    M.assert_rc(r)
    assert sorted(_ifaces(r.lines)) == ["lo", "tap0"], f"interfaces inside: {r.out}"


def test_loopback_works(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/mrun-probe", "loopback")
    M.assert_rc(r)
    assert r.out.startswith("loopback=ok"), r


def test_network_host_sees_host_interfaces(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "--network", "host", rootfs,
             "/bin/mrun-probe", "ifaces")
    M.assert_rc(r)
    host = sorted(n for _, n in socket.if_nameindex())
    assert sorted(_ifaces(r.lines)) == host, f"inside: {r.out}\nhost: {host}"


# ---- user namespace and id maps ----------------------------------------------

def _map(text):
    return [tuple(int(x) for x in line.split()) for line in text.splitlines() if line.strip()]


def test_rootful_has_identity_map(mrun, rootfs, name):
    if not M.ROOTFUL:
        pytest.skip("rootful only: rootless containers always get a user namespace")
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/cat", "/proc/self/uid_map",
             "/proc/self/gid_map")
    M.assert_rc(r)
    assert _map(r.out) == [(0, 0, 4294967295)] * 2, r


def _full_map(idfile, host_id):
    rng = M.subid_range(idfile)
    assert rng, f"{M.USER} has no entry in {idfile} (tests/setup-user.sh makes one)"
    return [(0, host_id, 1), (1, rng[0], min(65535, rng[1]))]


def test_rootless_maps_caller_to_root_and_subids(mrun, rootfs, name):
    if M.ROOTFUL:
        pytest.skip("rootless only: rootful mrun makes no user namespace")
    r = M.run_sh(mrun, rootfs, "cat /proc/self/uid_map; echo --; cat /proc/self/gid_map",
                 name=name)
    M.assert_rc(r)
    uid_text, _, gid_text = r.out.partition("--\n")
    assert _map(uid_text) == _full_map("/etc/subuid", M.UID), f"uid_map:\n{uid_text}"
    assert _map(gid_text) == _full_map("/etc/subgid", M.GID), f"gid_map:\n{gid_text}"


def test_rootless_userns_auto_is_the_default(mrun, rootfs, name):
    if M.ROOTFUL:
        pytest.skip("rootless only")
    r = mrun("run", "--rm", "--name", name, "--userns", "auto", rootfs, "/bin/cat",
             "/proc/self/uid_map")
    M.assert_rc(r)
    assert _map(r.out) == _full_map("/etc/subuid", M.UID), r


def test_rootless_userns_single(mrun, rootfs, name):
    if M.ROOTFUL:
        pytest.skip("rootless only")
    r = M.run_sh(mrun, rootfs,
                 "cat /proc/self/uid_map; echo --; cat /proc/self/gid_map; echo --; id -u",
                 "--userns", "single", name=name)
    M.assert_rc(r)
    uid_text, gid_text, ident = r.out.split("--\n")
    assert _map(uid_text) == [(0, M.UID, 1)], r
    assert _map(gid_text) == [(0, M.GID, 1)], r
    assert ident.strip() == "0", r


def test_rootless_no_newuidmap_in_path_is_125(mrun, rootfs, name):
    """The user has a subuid entry but newuidmap is missing: a clear error
    naming newuidmap and the fix, and nothing left behind."""
    if M.ROOTFUL:
        pytest.skip("rootless only: rootful writes its id maps itself")
    path = M.path_without("newuidmap", "newgidmap")
    try:
        # --userns private maps every container itself (a new holder of the shared
        # namespace needs newuidmap too: test_shared_userns.py).
        r = mrun.with_env(PATH=path)("run", "--rm", "--name", name, "--userns", "private",
                                     rootfs, "/bin/true")
        M.assert_mrun_error(r, 125, mentions=["newuidmap"])
        assert "--userns" in r.err or "uidmap" in r.err.replace("newuidmap", ""), (
            f"the message does not say the fix (install uidmap, or --userns single):\n{r!r}")
    finally:
        import shutil
        shutil.rmtree(path, ignore_errors=True)


def test_rootless_no_newuidmap_but_single_works(mrun, rootfs, name):
    if M.ROOTFUL:
        pytest.skip("rootless only")
    path = M.path_without("newuidmap", "newgidmap")
    try:
        r = mrun.with_env(PATH=path)("run", "--rm", "--name", name, "--userns", "single",
                                     rootfs, "/bin/cat", "/proc/self/uid_map")
        M.assert_rc(r)
        assert _map(r.out) == [(0, M.UID, 1)], r
    finally:
        import shutil
        shutil.rmtree(path, ignore_errors=True)


def _alt_subid(tmp_path, content):
    f = tmp_path / "subids"
    f.write_text(content)
    os.chmod(tmp_path, 0o755)
    return str(f)


def test_rootless_no_subuid_entry_falls_back_with_warning(mrun, rootfs, name, tmp_path):
    """No subuid/subgid entry (MRUN_SUBUID_FILE / MRUN_SUBGID_FILE point at
    files without one): single-ID map and a one-line warning on stderr."""
    if M.ROOTFUL:
        pytest.skip("rootless only")
    empty = _alt_subid(tmp_path, "someoneelse:300000:65536\n")
    m = mrun.with_env(MRUN_SUBUID_FILE=empty, MRUN_SUBGID_FILE=empty)
    r = m("run", "--rm", "--name", name, rootfs, "/bin/cat", "/proc/self/uid_map")
    M.assert_rc(r)
    assert _map(r.out) == [(0, M.UID, 1)], (
        f"expected a single-ID map without a subuid entry (is MRUN_SUBUID_FILE honoured?)\n{r!r}")
    warn = [line for line in r.err.splitlines() if line.strip()]
    assert len(warn) == 1 and warn[0].startswith("mrun: "), f"expected one warning line\n{r!r}"


def test_rootless_small_subuid_range_is_mapped_as_is(mrun, rootfs, name, tmp_path):
    """A range smaller than 65535 maps 1..count (count = the range)."""
    if M.ROOTFUL:
        pytest.skip("rootless only")
    uid_rng = M.subid_range("/etc/subuid")
    gid_rng = M.subid_range("/etc/subgid")
    if not uid_rng or not gid_rng or uid_rng[1] < 1000 or gid_rng[1] < 1000:
        pytest.skip(f"{M.USER} needs subuid/subgid ranges of at least 1000")
    fu = tmp_path / "subuid"
    fu.write_text(f"{M.USER}:{uid_rng[0]}:1000\n")
    fg = tmp_path / "subgid"
    fg.write_text(f"{M.USER}:{gid_rng[0]}:1000\n")
    os.chmod(tmp_path, 0o755)
    m = mrun.with_env(MRUN_SUBUID_FILE=str(fu), MRUN_SUBGID_FILE=str(fg))
    r = m("run", "--rm", "--name", name, rootfs, "/bin/cat", "/proc/self/uid_map",
          "/proc/self/gid_map")
    M.assert_rc(r)
    assert _map(r.out) == [(0, M.UID, 1), (1, uid_rng[0], 1000),
                           (0, M.GID, 1), (1, gid_rng[0], 1000)], (
        f"expected 1..1000 mapped from the MRUN_SUBUID_FILE range\n{r!r}")
