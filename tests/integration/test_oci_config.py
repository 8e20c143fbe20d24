"""config.json honoured as given (issue: a complete OCI runtime): the config's mounts
in order, masked and read-only paths of any path, rootfsPropagation, namespaces new,
shared with the caller or joined by path, hostname only when given, and root.path used
as it is, with nothing of the container kept outside --root. Each test shows the
effect inside the container; rootless and rootful."""

import json
import os
import shutil
import socket
import subprocess
import tempfile

import pytest

import mrunlib as M
from test_oci import _create


def _bundle(mrun, tmp_path, rootfs, args, edit=None):
    return M.oci_bundle(mrun, tmp_path, rootfs, args, edit)


def _run(mrun, bundle, name):
    try:
        return mrun("run", "--bundle", bundle, name)
    finally:
        mrun("delete", "--force", name)


def _mountinfo_line(text, mount_point):
    for line in text.splitlines():
        fields = line.split()
        if len(fields) > 4 and fields[4] == mount_point:
            return line
    return None


def test_config_mounts_are_made_as_given_in_order(mrun, private_rootfs, name, tmp_path, host_dir):
    with open(os.path.join(host_dir, "file"), "w") as f:
        f.write("from the host\n")
    os.mkdir(os.path.join(host_dir, "inner"))  # a read-only bind takes no new mount point

    def edit(c):
        c["mounts"] += [
            # ctr's default spec has this one; mrun refused it before.
            {"destination": "/run", "type": "tmpfs", "source": "tmpfs",
             "options": ["nosuid", "strictatime", "mode=700", "size=1024k"]},
            {"destination": "/data", "type": "bind", "source": host_dir,
             "options": ["rbind", "ro", "nodev"]},
            {"destination": "/data/inner", "type": "tmpfs", "source": "inner",
             "options": ["mode=755"]},
        ]
    script = ("cat /proc/self/mountinfo; echo ---; stat -c %a /run; cat /data/file; "
              "touch /data/x 2>/dev/null && echo wrote-ro; touch /data/inner/y && echo inner-ok")
    bundle = _bundle(mrun, tmp_path, private_rootfs, ["sh", "-c", script], edit)
    r = _run(mrun, bundle, name)
    M.assert_rc(r)
    mountinfo, rest = r.out.split("---\n")
    run = _mountinfo_line(mountinfo, "/run")
    assert run and " - tmpfs inner " not in run and "size=1024k" in run and "nosuid" in run, r
    data = _mountinfo_line(mountinfo, "/data")
    assert data and "ro," in data.split()[5] + "," and "nodev" in data.split()[5], r
    # In order: /data/inner went on top of the read-only bind.
    assert _mountinfo_line(mountinfo, "/data/inner"), r
    assert rest.split("\n")[:2] == ["700", "from the host"], r
    assert "wrote-ro" not in rest and "inner-ok" in rest, r


def test_masked_and_readonly_paths_of_any_path(mrun, private_rootfs, name, tmp_path):
    os.makedirs(os.path.join(private_rootfs, "opt/secret"), exist_ok=True)
    with open(os.path.join(private_rootfs, "opt/secret/key"), "w") as f:
        f.write("hidden\n")
    with open(os.path.join(private_rootfs, "opt/token"), "w") as f:
        f.write("hidden too\n")
    os.makedirs(os.path.join(private_rootfs, "srv"), exist_ok=True)

    def edit(c):
        c["root"]["readonly"] = False
        c["linux"]["maskedPaths"] = ["/opt/secret", "/opt/token", "/does/not/exist"]
        c["linux"]["readonlyPaths"] = ["/srv"]
    script = ("ls /opt/secret | wc -l; cat /opt/token | wc -c; "
              "touch /srv/x 2>/dev/null && echo srv-writable; touch /tmp/ok && echo root-rw")
    bundle = _bundle(mrun, tmp_path, private_rootfs, ["sh", "-c", script], edit)
    r = _run(mrun, bundle, name)
    M.assert_rc(r)
    assert r.out.split() == ["0", "0", "root-rw"], r


def test_root_path_is_used_as_it_is_writes_land_in_it(mrun, private_rootfs, name, tmp_path):
    def edit(c):
        c["root"]["readonly"] = False
    bundle = _bundle(mrun, tmp_path, private_rootfs, ["sh", "-c", "echo kept > /written"], edit)
    r = _run(mrun, bundle, name)
    M.assert_rc(r)
    # The engine's rootfs took the write: no overlay of mrun's own lay over it.
    with open(os.path.join(private_rootfs, "written")) as f:
        assert f.read() == "kept\n"
    assert not os.path.exists(os.path.join(M.data_dir(), "containers", name)), r


def test_one_id_under_two_roots_shares_nothing(mrun, private_rootfs, name, tmp_path):
    bundle = _bundle(mrun, tmp_path, private_rootfs, ["sleep", "300"])
    roots = [str(tmp_path / "root-a"), str(tmp_path / "root-b")]
    try:
        for root in roots:
            r = mrun("--root", root, "run", "-d", "--bundle", bundle, name)
            M.assert_rc(r)
        r = mrun("--root", roots[0], "delete", "--force", name)
        M.assert_rc(r)
        r = mrun("--root", roots[1], "state", name)
        M.assert_rc(r)
        state = json.loads(r.out)
        assert state["status"] == "running", state
    finally:
        for root in roots:
            mrun("--root", root, "delete", "--force", name)


def test_rootfs_propagation_is_set_on_the_root(mrun, rootfs, name, tmp_path):
    def edit(c):
        c["linux"]["rootfsPropagation"] = "rshared"
    bundle = _bundle(mrun, tmp_path, rootfs, ["cat", "/proc/self/mountinfo"], edit)
    r = _run(mrun, bundle, name)
    M.assert_rc(r)
    root = _mountinfo_line(r.out, "/")
    assert root and "shared:" in root, r


def test_hostname_only_when_given_domainname_when_given(mrun, rootfs, name, tmp_path):
    def edit(c):
        c.pop("hostname", None)
        c["domainname"] = "example.test"
    bundle = _bundle(mrun, tmp_path, rootfs,
                     ["sh", "-c", "hostname; cat /proc/sys/kernel/domainname"], edit)
    r = _run(mrun, bundle, name)
    M.assert_rc(r)
    # A new UTS namespace starts as a copy of the caller's: left so, as runc does.
    assert r.out.split() == [socket.gethostname(), "example.test"], r


def _ns(pid, kind):
    return os.readlink(f"/proc/{pid}/ns/{kind}")


def test_namespaces_absent_from_the_config_are_the_caller_s(mrun, rootfs, name, tmp_path):
    # Rootless, the host's IPC namespace takes no mqueue mount of a user namespace's
    # and this host has no /dev/mqueue to bind instead (the clear 125 below).
    shared = ("pid", "ipc", "uts") if M.ROOTFUL or os.path.ismount("/dev/mqueue") else ("pid", "uts")

    def edit(c):
        c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] not in shared]
        c.pop("hostname", None)
    script = f"for n in {' '.join(shared)}; do readlink /proc/self/ns/$n; done; hostname"
    bundle = _bundle(mrun, tmp_path, rootfs, ["sh", "-c", script], edit)
    r = _run(mrun, bundle, name)
    M.assert_rc(r)
    assert r.out.split() == [_ns("self", n) for n in shared] + [socket.gethostname()], r


@pytest.mark.skipif(M.ROOTFUL or os.path.ismount("/dev/mqueue"),
                    reason="rootless on a host without /dev/mqueue only")
def test_host_ipc_rootless_without_a_host_mqueue_is_a_clear_125(mrun, rootfs, name, tmp_path):
    def edit(c):
        c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"] if n["type"] != "ipc"]
    bundle = _bundle(mrun, tmp_path, rootfs, ["true"], edit)
    r = mrun("run", "--bundle", bundle, name)
    M.assert_mrun_error(r, mentions=["mqueue on /dev/mqueue", "no /dev/mqueue to bind"])
    M.assert_mrun_error(mrun("state", name), mentions=["does not exist"])


@pytest.fixture
def other_namespaces():
    """A process of its own network and IPC namespaces, as an engine's pod sandbox."""
    p = subprocess.Popen(["unshare", "--net", "--ipc", "sleep", "300"])
    try:
        M.wait_until(lambda: _ns(p.pid, "net") != _ns("self", "net"), 5)
        yield p.pid
    finally:
        p.kill()
        p.wait()


@pytest.mark.skipif(not M.ROOTFUL, reason="rootless: a namespace of another user namespace "
                    "is joined only from inside it (rootless podman's case, test_podman)")
def test_namespaces_joined_by_path(mrun, rootfs, name, tmp_path, other_namespaces):
    pid = other_namespaces

    def edit(c):
        for n in c["linux"]["namespaces"]:
            if n["type"] == "ipc":
                n["path"] = f"/proc/{pid}/ns/ipc"
        c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"]
                                    if n["type"] != "network"]
        c["linux"]["namespaces"].append({"type": "network", "path": f"/proc/{pid}/ns/net"})
    script = "readlink /proc/self/ns/net; readlink /proc/self/ns/ipc"
    bundle = _bundle(mrun, tmp_path, rootfs, ["sh", "-c", script], edit)
    r = _run(mrun, bundle, name)
    M.assert_rc(r)
    assert r.out.split() == [_ns(pid, "net"), _ns(pid, "ipc")], r
    # The monitor went back to its own: nothing of mrun stays in the joined ones.
    assert _ns("self", "net") != _ns(pid, "net")


@pytest.mark.skipif(M.ROOTFUL, reason="root has no subordinate ids for the user namespace "
                    "(unshare --map-auto); the nested case is a rootless user's")
def test_nested_container_joins_a_pid_namespace_by_path(mrun, rootfs, tmp_path):
    """Root of a user namespace mrun did not make (rootlesskit's, where containerd runs
    a rootless pod): a container joins a sandbox's PID namespace by path, as each
    container of a shareProcessNamespace pod does through the CRI. setns moves only the
    children and the monitor could not come back, so a first child enters it and clones
    the container there: the sandbox's process is PID 1 inside."""
    def nested(c):
        # As rootless podman's configs and the CRI's under rootlesskit: no user namespace
        # entry (the container stays in the caller's), no cgroup (none is delegated).
        c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"]
                                    if n["type"] not in ("user", "cgroup")]
        for key in ("uidMappings", "gidMappings", "resources", "cgroupsPath"):
            c["linux"].pop(key, None)

    def joins_sandbox(c):
        nested(c)
        _with_namespaces(c, pid="/proc/SANDBOX/ns/pid")
    for d in ("sandbox", "container"):
        (tmp_path / d).mkdir()
    sandbox = M.oci_bundle(mrun, tmp_path / "sandbox", rootfs, ["sleep", "300"], nested)
    container = M.oci_bundle(mrun, tmp_path / "container", rootfs, [
        "sh", "-c", "tr '\\0' ' ' </proc/1/cmdline; echo; readlink /proc/self/ns/pid"],
        joins_sandbox)
    script = """set -u
    m() { "$MRUN" --root "$STATE" "$@"; }
    m create --bundle "$SANDBOX" sandbox && m start sandbox || exit 90
    pid=$(m state sandbox | sed -n 's/.*"pid": *\\([0-9]*\\).*/\\1/p')
    readlink /proc/$pid/ns/pid
    sed -i "s|/proc/SANDBOX/|/proc/$pid/|" "$CONTAINER/config.json"
    m run --bundle "$CONTAINER" joiner
    rc=$?
    m delete --force joiner >/dev/null 2>&1
    m delete --force sandbox
    exit $rc"""
    env = dict(M.base_env(), MRUN=M.MRUN, STATE=str(tmp_path / "state"),
               SANDBOX=str(sandbox), CONTAINER=str(container))
    # As rootlesskit maps: the user as root and its subordinate ids, setgroups allowed.
    r = subprocess.run(["unshare", "--user", "--map-root-user", "--map-auto", "--mount", "--",
                        "sh", "-c", script], env=env, capture_output=True, text=True,
                       timeout=120, stdin=subprocess.DEVNULL)
    lines = r.stdout.splitlines()
    assert r.returncode == 0 and len(lines) == 3, (r.returncode, r.stdout, r.stderr)
    sandbox_ns, pid1, joined_ns = lines
    assert pid1.strip() == "sleep 300" and joined_ns == sandbox_ns, (r.stdout, r.stderr)


def test_joining_a_namespace_that_cannot_be_joined_is_a_clear_125(mrun, rootfs, name, tmp_path):
    def edit(c):
        c["linux"]["namespaces"] = [n for n in c["linux"]["namespaces"]
                                    if n["type"] != "network"]
        c["linux"]["namespaces"].append({"type": "network", "path": "/proc/self/ns/ipc"})
    bundle = _bundle(mrun, tmp_path, rootfs, ["true"], edit)
    r = mrun("run", "--bundle", bundle, name)
    M.assert_mrun_error(r, mentions=["linux.namespaces (network)", "/proc/self/ns/ipc"])
    M.assert_mrun_error(mrun("state", name), mentions=["does not exist"])


def test_linux_devices_are_made_with_the_configs_numbers(mrun, private_rootfs, name, tmp_path):
    """linux.devices as `ctr run --privileged` sends them: a block device, a character
    device, a FIFO, each with its mode and owner. Rootful they are made (mknod) with the
    config's numbers, whether or not the host has such a node; rootless the character
    device comes from the host's node at the same path and the FIFO is made."""
    devices = [{"path": "/dev/net/tun", "type": "c", "major": 10, "minor": 200,
                "fileMode": 0o620, "uid": 0, "gid": 5},
               {"path": "/run/mrun-fifo", "type": "p", "fileMode": 0o640}]
    if M.ROOTFUL:
        devices.append({"path": "/dev/mrun-loop", "type": "b", "major": 7, "minor": 9,
                        "fileMode": 0o660, "uid": 0, "gid": 6})

    def edit(c):
        c["linux"]["devices"] = devices
    script = ("for d in /dev/net/tun /run/mrun-fifo /dev/mrun-loop; do "
              "stat -c '%n %F %t:%T %a %u:%g' $d 2>&1; done; true")
    # root.path as it is: the FIFO is made in the image's /run, so a copy of it.
    r = _run(mrun, _bundle(mrun, tmp_path, private_rootfs, ["sh", "-c", script], edit), name)
    M.assert_rc(r)
    lines = r.out.splitlines()
    assert "/run/mrun-fifo fifo 0:0 640 0:0" in lines, r
    if M.ROOTFUL:
        assert "/dev/net/tun character special file a:c8 620 0:5" in lines, r
        assert "/dev/mrun-loop block special file 7:9 660 0:6" in lines, r
    else:
        # The host's node, bound: its own mode and owner (root's, unmapped: nobody).
        assert any(line.startswith("/dev/net/tun character special file a:c8 ") for line in lines), r


def test_rootless_linux_device_the_host_lacks_is_a_clear_125(mrun, rootfs, name, tmp_path):
    if M.ROOTFUL:
        pytest.skip("rootful makes any node with mknod (the case above)")

    def edit(c):
        c["linux"]["devices"] = [{"path": "/dev/mrun-absent", "type": "c", "major": 1, "minor": 3}]
    r = _run(mrun, _bundle(mrun, tmp_path, rootfs, ["true"], edit), name)
    assert r.rc == 125, r
    assert "linux.devices (/dev/mrun-absent" in r.err and "no node at" in r.err, r


# ---- user, mount and time namespaces; the config's own id mappings --------------

def _with_namespaces(config, **kinds):
    """linux.namespaces with KIND=None (drop it), KIND=True (new) or KIND=PATH (join)."""
    ns = [n for n in config["linux"]["namespaces"] if n["type"] not in kinds]
    for kind, value in kinds.items():
        if value is True:
            ns.append({"type": kind})
        elif value:
            ns.append({"type": kind, "path": value})
    config["linux"]["namespaces"] = ns


def _holder(*unshare_args):
    """A process in namespaces of its own (`unshare ARGS sleep 300`); its pid."""
    p = subprocess.Popen(["unshare", *unshare_args, "sleep", "300"], stdin=subprocess.DEVNULL)
    assert M.wait_until(lambda: _ns(p.pid, "mnt") != _ns("self", "mnt") or
                        _ns(p.pid, "user") != _ns("self", "user") or
                        _ns(p.pid, "time") != _ns("self", "time"), 5)
    return p


@pytest.fixture
def userns_stage(rootfs):
    """A world-searchable directory in /var/tmp (pytest's own temporary directories are
    its owner's alone, out of reach of a user namespace's other ids) holding a copy of the
    rootfs, `image`, and an empty directory to bind, `data` (mode 1777). `owned_by(uid)`
    chowns the image to one id, as an engine prepares a rootfs for a user namespace."""
    base = tempfile.mkdtemp(prefix="mrun-it-userns.", dir="/var/tmp")
    os.chmod(base, 0o755)

    class Stage:
        image = os.path.join(base, "rootfs")
        data = os.path.join(base, "data")

        def owned_by(self, uid):
            for top, dirs, files in os.walk(self.image):
                for entry in [top] + [os.path.join(top, e) for e in dirs + files]:
                    os.lchown(entry, uid, uid)

    shutil.copytree(rootfs, Stage.image, symlinks=True)
    os.mkdir(Stage.data)
    os.chmod(Stage.data, 0o1777)
    try:
        yield Stage()
    finally:
        shutil.rmtree(base, ignore_errors=True)


def test_user_namespace_with_the_configs_own_mappings(mrun, userns_stage, name, tmp_path):
    """linux.uidMappings and gidMappings as given: rootful, written by mrun (a range of
    no one's ids); rootless, container root the caller plus the caller's subordinate
    range, written through newuidmap/newgidmap. The container's uid_map is the config's,
    and a file its uid 1000 makes in a bound host directory belongs to the mapped id."""
    if M.ROOTFUL:
        uids = [{"containerID": 0, "hostID": 300000, "size": 65536}]
        gids = [{"containerID": 0, "hostID": 300000, "size": 65536}]
        owner = 300000 + 1000
        userns_stage.owned_by(300000)
    else:
        sub = M.subid_range("/etc/subuid")
        subg = M.subid_range("/etc/subgid")
        if not sub or not subg:
            pytest.skip(f"no subordinate ids for {M.USER}")
        uids = [{"containerID": 0, "hostID": M.UID, "size": 1},
                {"containerID": 1, "hostID": sub[0], "size": min(sub[1], 65535)}]
        gids = [{"containerID": 0, "hostID": os.getgid(), "size": 1},
                {"containerID": 1, "hostID": subg[0], "size": min(subg[1], 65535)}]
        owner = sub[0] + 999
    data = userns_stage.data

    def edit(c):
        _with_namespaces(c, user=True)
        c["linux"]["uidMappings"], c["linux"]["gidMappings"] = uids, gids
        c["mounts"].append({"destination": "/data", "type": "bind", "source": data,
                            "options": ["rbind"]})
    script = "cat /proc/self/uid_map /proc/self/gid_map; touch /data/made-by-1000"
    bundle = M.oci_bundle(mrun, tmp_path, userns_stage.image, ["sh", "-c", script], edit,
                          user={"uid": 1000, "gid": 1000})
    r = _run(mrun, bundle, name)
    M.assert_rc(r)
    table = [line.split() for line in r.lines]
    want = [[str(m["containerID"]), str(m["hostID"]), str(m["size"])] for m in uids + gids]
    assert table == want, r
    assert os.stat(os.path.join(data, "made-by-1000")).st_uid == owner, r


def test_mappings_beyond_the_callers_ids_are_a_clear_125(mrun, rootfs, name, tmp_path):
    if M.ROOTFUL:
        pytest.skip("root may map any ids")

    def edit(c):
        _with_namespaces(c, user=True)
        c["linux"]["uidMappings"] = [{"containerID": 0, "hostID": 0, "size": 1}]
        c["linux"]["gidMappings"] = [{"containerID": 0, "hostID": 0, "size": 1}]
    r = _run(mrun, _bundle(mrun, tmp_path, rootfs, ["true"], edit), name)
    assert r.rc == 125, r
    assert "newuidmap" in r.err and "subuid" in r.err, r


def test_a_new_user_namespace_without_mappings_is_refused_rootful(mrun, rootfs, name, tmp_path):
    if not M.ROOTFUL:
        pytest.skip("rootless, mrun maps container root to the caller itself")

    def edit(c):
        _with_namespaces(c, user=True)
    r = _run(mrun, _bundle(mrun, tmp_path, rootfs, ["true"], edit), name)
    assert r.rc == 125, r
    assert "linux.uidMappings" in r.err, r


def test_user_and_mount_namespaces_joined_by_path(mrun, rootfs, name, tmp_path):
    """A process's user and mount namespaces (`unshare --user --map-root-user --mount`,
    which any user may make), joined by path: the container is in both (the user
    namespace first, as the spec orders it, so that the mount namespace it owns can be
    joined), with the holder's id map, and sets its rootfs up in the joined mount
    namespace."""
    holder = _holder("--user", "--map-root-user", "--mount")
    try:
        def edit(c):
            _with_namespaces(c, user=f"/proc/{holder.pid}/ns/user",
                             mount=f"/proc/{holder.pid}/ns/mnt")
            c["linux"].pop("uidMappings", None)
            c["linux"].pop("gidMappings", None)
        script = "readlink /proc/self/ns/user; readlink /proc/self/ns/mnt; cat /proc/self/uid_map"
        r = _run(mrun, _bundle(mrun, tmp_path, rootfs, ["sh", "-c", script], edit), name)
        M.assert_rc(r)
        assert r.lines[0] == _ns(holder.pid, "user"), r
        assert r.lines[1] == _ns(holder.pid, "mnt"), r
        assert r.lines[2].split() == ["0", str(M.UID), "1"], r
    finally:
        holder.kill()
        holder.wait()


def test_time_namespace_with_offsets(mrun, rootfs, name, tmp_path):
    """A new time namespace with linux.timeOffsets: boottime a day ahead, monotonic an
    hour; the container's uptime (boottime) and its time namespace show them."""
    def edit(c):
        _with_namespaces(c, time=True)
        c["linux"]["timeOffsets"] = {"boottime": {"secs": 86400, "nanosecs": 0},
                                     "monotonic": {"secs": 3600, "nanosecs": 5}}
    script = "readlink /proc/self/ns/time; cut -d' ' -f1 /proc/uptime"
    with open("/proc/uptime") as f:
        before = f.read().split()[0]
    r = _run(mrun, _bundle(mrun, tmp_path, rootfs, ["sh", "-c", script], edit), name)
    M.assert_rc(r)
    with open("/proc/uptime") as f:
        after = f.read().split()[0]
    assert r.lines[0] != _ns("self", "time"), r
    # In hundredths, as /proc/uptime prints them: 13162.21 + 86400 is 99562.20999... as
    # a float, below the 99562.21 a container started within that hundredth reads.
    def centis(text):
        return round(float(text) * 100)
    day = 86400 * 100
    assert centis(before) + day <= centis(r.lines[1]) <= centis(after) + day, (before, after, r)


def test_time_namespace_joined_by_path(mrun, rootfs, name, tmp_path):
    holder = _holder(*(["--user", "--map-root-user"] if not M.ROOTFUL else []), "--time",
                     "--boottime", "100000")
    try:
        def edit(c):
            kinds = {"time": f"/proc/{holder.pid}/ns/time"}
            if not M.ROOTFUL:  # a time namespace its user namespace owns
                kinds["user"] = f"/proc/{holder.pid}/ns/user"
                c["linux"].pop("uidMappings", None)
                c["linux"].pop("gidMappings", None)
            _with_namespaces(c, **kinds)
        r = _run(mrun, _bundle(mrun, tmp_path, rootfs, ["readlink", "/proc/self/ns/time"], edit),
                 name)
        M.assert_rc(r)
        assert r.out.strip() == _ns(holder.pid, "time"), r
    finally:
        holder.kill()
        holder.wait()


def test_time_offsets_without_a_new_time_namespace_are_a_clear_125(mrun, rootfs, name, tmp_path):
    def edit(c):
        c["linux"]["timeOffsets"] = {"boottime": {"secs": 1, "nanosecs": 0}}
    r = _run(mrun, _bundle(mrun, tmp_path, rootfs, ["true"], edit), name)
    assert r.rc == 125, r
    assert "linux.timeOffsets" in r.err and "time" in r.err, r


# ---- personality, memoryPolicy, intelRdt ------------------------------------------

def test_personality_and_memory_policy_reach_the_command_and_exec(mrun, rootfs, name, tmp_path):
    """linux.personality LINUX32 (uname -m answers as a 32-bit kernel would) and
    linux.memoryPolicy MPOL_BIND to node 0 (numa_maps shows bind:0), for the
    container's command and for a process `mrun exec` starts in it."""
    def edit(c):
        c["linux"]["personality"] = {"domain": "LINUX32"}
        c["linux"]["memoryPolicy"] = {"mode": "MPOL_BIND", "nodes": "0"}
    report = "uname -m; grep -c ' bind:0 ' /proc/self/numa_maps"
    bundle = _bundle(mrun, tmp_path, rootfs, ["sh", "-c", report + "; exec sleep 300"], edit)
    p = mrun.popen("run", "--bundle", bundle, name, text=True)
    try:
        assert M.wait_until(lambda: '"running"' in mrun("state", name).out, 10)
        r = mrun("exec", name, "sh", "-c", report)
        M.assert_rc(r)
        for lines in (r.lines,):
            assert lines[0] in ("i686", "i386"), r
            assert int(lines[1]) > 0, r
    finally:
        mrun("kill", name, "KILL")
        out, err = p.communicate(timeout=10)
        mrun("delete", "--force", name)
    lines = out.splitlines()
    assert lines[0] in ("i686", "i386") and int(lines[1]) > 0, (out, err)


def test_personality_and_memory_policy_errors_name_the_field(mrun, rootfs, name, tmp_path):
    cases = [({"personality": {"domain": "LINUX64"}}, "linux.personality.domain"),
             ({"personality": {"domain": "LINUX", "flags": ["x"]}}, "linux.personality.flags"),
             ({"memoryPolicy": {"mode": "MPOL_BIND"}}, "linux.memoryPolicy.nodes"),
             ({"memoryPolicy": {"mode": "MPOL_NONE"}}, "linux.memoryPolicy.mode"),
             ({"memoryPolicy": {"mode": "MPOL_BIND", "nodes": "4095"}}, "linux.memoryPolicy"),
             ({"intelRdt": {"closID": "c1"}}, "linux.intelRdt")]
    for i, (fields, field) in enumerate(cases):
        def edit(c, fields=fields):
            c["linux"].update(fields)
        (tmp_path / str(i)).mkdir()
        r = _run(mrun, M.oci_bundle(mrun, tmp_path / str(i), rootfs, ["true"], edit),
                 f"{name}-{i}")
        assert r.rc == 125 and field in r.err, (fields, r)


def _lsm_enabled(name):
    if name == "apparmor":
        try:
            with open("/sys/module/apparmor/parameters/enabled") as f:
                return f.read().strip().startswith("Y")
        except OSError:
            return False
    return os.path.exists("/sys/fs/selinux/enforce")


@pytest.mark.parametrize("field,value,lsm", [("apparmorProfile", "mrun-test-profile", "apparmor"),
                                             ("selinuxLabel", "system_u:system_r:container_t:s0",
                                              "selinux")])
def test_lsm_label_where_the_module_is_off_is_refused(mrun, rootfs, name, tmp_path, field, value,
                                                      lsm):
    """A label whose security module this host does not run means nothing: refused, as
    runc refuses an SELinux label there (never silently dropped)."""
    if _lsm_enabled(lsm):
        pytest.skip(f"{lsm} is enabled here: the label would be put on")
    r = _run(mrun, M.oci_bundle(mrun, tmp_path, rootfs, ["true"], **{field: value}), name)
    assert r.rc == 125, r
    assert f"process.{field}" in r.err and "not" in r.err, r


def test_tmpcopyup_copies_the_images_files_into_the_tmpfs(mrun, private_rootfs, name, tmp_path):
    """A tmpfs with tmpcopyup (podman's --read-only tmpfs mounts carry it) starts with
    what the image has there: files with their modes, directories, symlinks as links;
    writes go to the tmpfs, never to the image."""
    etc = os.path.join(private_rootfs, "etc")
    os.makedirs(os.path.join(etc, "sub"), exist_ok=True)
    with open(os.path.join(etc, "sub", "secret"), "w") as f:
        f.write("kept\n")
    os.chmod(os.path.join(etc, "sub", "secret"), 0o640)
    os.symlink("/etc/passwd", os.path.join(etc, "link-to-passwd"))

    def edit(c):
        c["root"]["readonly"] = True
        c["mounts"].append({"destination": "/etc", "type": "tmpfs", "source": "tmpfs",
                            "options": ["nosuid", "nodev", "tmpcopyup"]})
    script = ("grep -c root /etc/passwd; cat /etc/sub/secret; stat -c %a /etc/sub/secret; "
              "readlink /etc/link-to-passwd; echo new > /etc/written && cat /etc/written; "
              "grep ' /etc ' /proc/self/mountinfo | grep -c ' - tmpfs '")
    r = _run(mrun, _bundle(mrun, tmp_path, private_rootfs, ["sh", "-c", script], edit), name)
    M.assert_rc(r)
    assert r.lines == ["1", "kept", "640", "/etc/passwd", "new", "1"], r
    assert not os.path.exists(os.path.join(etc, "written")), "the write reached the image"


# ---- idmapped mounts ---------------------------------------------------------------

def test_idmapped_bind_shows_host_owners_as_the_containers(mrun, userns_stage, name, tmp_path):
    """A bind with the idmap option, in a container with a user namespace of its own
    (0 -> 300000): the host directory's root-owned file shows as owned by the container's
    root (without idmap: nobody), and a file the container's root makes lands on disk as
    uid 0. With the mount's own uidMappings/gidMappings those are used instead. Rootless,
    mrun holds no CAP_SYS_ADMIN over the host's filesystem: a clear 125."""
    data = userns_stage.data
    with open(os.path.join(data, "owned"), "w") as f:
        f.write("x\n")
    if M.ROOTFUL:
        os.chown(os.path.join(data, "owned"), 0, 0)
        userns_stage.owned_by(300000)

    def edit(c):
        _with_namespaces(c, user=True)
        maps = [{"containerID": 0, "hostID": 300000, "size": 65536}]
        if M.ROOTFUL:
            c["linux"]["uidMappings"], c["linux"]["gidMappings"] = maps, maps
        c["mounts"] += [
            {"destination": "/idmapped", "type": "bind", "source": data,
             "options": ["rbind", "idmap"]},
            {"destination": "/own-maps", "type": "bind", "source": data,
             "options": ["rbind", "idmap"],
             "uidMappings": [{"containerID": 0, "hostID": 301000, "size": 1}],
             "gidMappings": [{"containerID": 0, "hostID": 301000, "size": 1}]},
            {"destination": "/plain", "type": "bind", "source": data, "options": ["rbind"]}]
    script = "stat -c %u /idmapped/owned /own-maps/owned /plain/owned; touch /idmapped/made-inside"
    r = _run(mrun, M.oci_bundle(mrun, tmp_path, userns_stage.image, ["sh", "-c", script], edit),
             name)
    if not M.ROOTFUL:
        assert r.rc == 125 and "idmapped mount" in r.err and "rootful" in r.err, r
        return
    M.assert_rc(r)
    # 0 on disk -> 300000 through the container's maps -> root in the container;
    # through the mount's own maps -> 301000, which the container does not map.
    assert r.lines == ["0", "1000", "65534"], r
    assert os.stat(os.path.join(data, "made-inside")).st_uid == 0, r


@pytest.mark.skipif(shutil.which("runc") is None, reason="runc is not installed")
def test_bind_with_a_filesystems_options_runs_as_under_runc(mrun, private_rootfs, name,
                                                            tmp_path, host_dir):
    """Engines and test suites write a tmpfs's options on binds too (mode=755, size=1k):
    a bind makes no filesystem, the kernel ignores them, and runc runs such a config."""
    with open(os.path.join(host_dir, "f"), "w") as f:
        f.write("from-the-host\n")

    def edit(c):
        c["mounts"].append({"destination": "/mnt/x", "type": "bind", "source": host_dir,
                            "options": ["rbind", "ro", "mode=755", "size=1k"]})
    # The mount point is made in root.path, as runc does: a private copy of the image.
    bundle = _bundle(mrun, tmp_path, private_rootfs,
                     ["/bin/sh", "-c", "cat /mnt/x/f; touch /mnt/x/g"], edit)
    runc_root = str(tmp_path / "runc-root")
    try:
        theirs = subprocess.run(["runc", "--root", runc_root, "run", "-b", str(bundle), name],
                                capture_output=True, text=True, timeout=M.TIMEOUT,
                                stdin=subprocess.DEVNULL)
    finally:
        subprocess.run(["runc", "--root", runc_root, "delete", "--force", name],
                       capture_output=True, timeout=M.TIMEOUT)
    r = _run(mrun, bundle, name)
    assert (r.rc, r.out) == (theirs.returncode, theirs.stdout), f"mrun:\n{r!r}\nrunc:\n{theirs}"
    assert r.out == "from-the-host\n" and r.rc != 0 and "Read-only" in r.err, r
    assert not os.path.exists(os.path.join(host_dir, "g"))


@pytest.mark.skipif(not M.ROOTFUL, reason="rootful: mrun maps a user namespace of its choice "
                    "only as root")
@pytest.mark.skipif(shutil.which("runc") is None, reason="runc is not installed")
def test_user_namespace_mapping_root_to_another_host_id_as_runc(mrun, rootfs, name, tmp_path):
    """Container root on host id 200000 while mrun runs as root: that id cannot traverse
    mrun's state dir, so what create needs there is opened before the maps (as runc does).
    create, start and the process's view, beside runc."""
    def edit(c):
        c["linux"]["namespaces"].append({"type": "user"})
        c["linux"]["uidMappings"] = [{"containerID": 0, "hostID": 200000, "size": 65536}]
        c["linux"]["gidMappings"] = [{"containerID": 0, "hostID": 200000, "size": 65536}]
    # Host id 200000 must reach the image: a copy on a path anyone may traverse.
    world = tempfile.mkdtemp(prefix="mrun-userns-", dir="/var/tmp")
    os.chmod(world, 0o755)
    image = os.path.join(world, "rootfs")
    shutil.copytree(rootfs, image, symlinks=True)
    try:
        _run_as_runc_and_mrun(mrun, image, name, tmp_path, edit)
    finally:
        shutil.rmtree(world, ignore_errors=True)


def _run_as_runc_and_mrun(mrun, image, name, tmp_path, edit):
    bundle = _bundle(mrun, tmp_path, image, ["/bin/sh", "-c", "id -u; cat /proc/self/uid_map"],
                     edit)
    runc_root = str(tmp_path / "runc-root")
    out = {}
    for who, argv0 in (("runc", ["runc", "--root", runc_root]), ("mrun", [M.MRUN])):
        # create's stdio become the container's (as runc's): files, not pipes.
        log, err = tmp_path / f"{who}.out", tmp_path / f"{who}.err"
        with open(log, "w") as f, open(err, "w") as e:
            created = subprocess.run([*argv0, "create", "--bundle", str(bundle), name],
                                     stdin=subprocess.DEVNULL, stdout=f, stderr=e,
                                     timeout=M.TIMEOUT, env=mrun.env)
        try:
            assert created.returncode == 0, f"{who} create: {err.read_text()}"
            started = subprocess.run([*argv0, "start", name], capture_output=True, text=True,
                                     timeout=M.TIMEOUT, env=mrun.env)
            assert started.returncode == 0, f"{who} start: {started.stderr}"
            assert M.wait_until(lambda: log.read_text().count("\n") >= 2, 10), log.read_text()
            out[who] = log.read_text().split()
        finally:
            subprocess.run([*argv0, "delete", "--force", name], capture_output=True,
                           timeout=M.TIMEOUT, env=mrun.env)
    assert out["mrun"] == out["runc"] == ["0", "0", "200000", "65536"], out


# ---- the caller's mount namespace: no mount entry in linux.namespaces ------------

RUNC = "/usr/sbin/runc"
needs_runc = pytest.mark.skipif(not os.access(RUNC, os.X_OK), reason=f"{RUNC} is not installed")


def _shares_callers_mount_namespace(c):
    """linux.namespaces less its mount entry, and without the masked and read-only paths
    runc refuses there ("unable to restrict sys entries without a private MNT
    namespace"): a config both runtimes run."""
    _with_namespaces(c, mount=None)
    c["linux"].pop("maskedPaths", None)
    c["linux"].pop("readonlyPaths", None)


def _mounts_under(path):
    return [m for m in M.host_mounts() if m.point == path or m.point.startswith(path + "/")]


def _runc_run(bundle, name, tmp_path, rootfs):
    """`runc run` of BUNDLE; then what it left mounted on the host under ROOTFS (runc
    makes the config's mounts in the host's namespace there and never removes them),
    which is unmounted before returning: (result, leftover mount points)."""
    root = str(tmp_path / "runc-root")
    try:
        r = subprocess.run([RUNC, "--root", root, "run", "-b", str(bundle), name],
                           capture_output=True, text=True, timeout=M.TIMEOUT,
                           stdin=subprocess.DEVNULL)
    finally:
        subprocess.run([RUNC, "--root", root, "delete", "--force", name],
                       capture_output=True, timeout=M.TIMEOUT)
        left = [m.point for m in _mounts_under(rootfs)]
        if left:
            subprocess.run(["umount", "-R", rootfs], check=True, timeout=M.TIMEOUT)
    return r, left


@needs_runc
@pytest.mark.skipif(not M.ROOTFUL, reason="rootful: rootless, both refuse (test below)")
def test_callers_mount_namespace_as_runc_and_nothing_left_on_the_host(mrun, private_rootfs,
                                                                       name, tmp_path):
    """The same bundle under runc and mrun: the command's exit code and what it sees (/,
    /dev of the config's tmpfs, its own /proc of a new PID namespace, the host's mount
    namespace) are runc's. runc leaves the config's mounts on the host; mrun none. Its
    /proc/self/mountinfo lists nothing: the root lies in no namespace's tree
    (mrun-oci(1), NAMESPACES)."""
    # /dev/core: mrun links it whether or not the kernel has /proc/kcore, runc only when
    # it has (this host's has not), with a mount namespace or without.
    script = ("ls /; ls /dev | grep -vx core; tr '\\0' ' ' </proc/1/cmdline; echo; "
              "readlink /proc/self/ns/mnt; test -w /dev/null && echo dev-ok; "
              "wc -l </proc/self/mountinfo; exit 3")
    bundle = _bundle(mrun, tmp_path, private_rootfs, ["sh", "-c", script],
                     _shares_callers_mount_namespace)
    theirs, runc_left = _runc_run(bundle, name, tmp_path, private_rootfs)
    ours = _run(mrun, bundle, name)
    assert theirs.returncode == 3, theirs
    assert ours.rc == 3, ours
    *seen, mountinfo_lines = ours.lines
    assert seen == theirs.stdout.splitlines()[:-1], f"mrun:\n{ours!r}\nrunc:\n{theirs}"
    assert _ns("self", "mnt") in seen and "dev-ok" in seen, ours
    assert sorted(os.listdir(private_rootfs))[0] == seen[0], ours
    assert mountinfo_lines == "0", ours
    assert runc_left, "runc left nothing mounted: mrun-oci(1) says it does"
    assert not _mounts_under(private_rootfs), M.host_mounts()


@pytest.mark.skipif(not M.ROOTFUL, reason="rootful: rootless is refused (test below)")
def test_callers_mount_namespace_while_running_exec_and_masked_paths(mrun, private_rootfs,
                                                                     name, tmp_path):
    """While the container runs the host has no mount of it either; `mrun exec` gets the
    container's root (runc's exec keeps the host's), in the caller's mount namespace; the
    masked and read-only paths runc refuses there are applied."""
    def edit(c):
        _with_namespaces(c, mount=None)
        c["linux"]["maskedPaths"] = ["/proc/timer_list"]
        c["linux"]["readonlyPaths"] = ["/proc/sys"]
    bundle = _bundle(mrun, tmp_path, private_rootfs, ["sleep", "300"], edit)
    try:
        M.assert_rc(_create(mrun, "--bundle", bundle, name))
        M.assert_rc(mrun("start", name))
        assert not _mounts_under(private_rootfs), M.host_mounts()
        script = ("ls /; readlink /proc/self/ns/mnt; wc -c </proc/timer_list; "
                  "echo 1 2>/dev/null >/proc/sys/kernel/ns_last_pid || echo sys-ro")
        r = mrun("exec", name, "sh", "-c", script)
        M.assert_rc(r)
        entries = sorted(os.listdir(private_rootfs))
        assert r.lines == entries + [_ns("self", "mnt"), "0", "sys-ro"], r
    finally:
        mrun("delete", "--force", name)
    assert not _mounts_under(private_rootfs), M.host_mounts()


@needs_runc
def test_callers_mount_namespace_in_a_new_user_namespace_is_refused(mrun, private_rootfs, name,
                                                                    tmp_path):
    """A process in a new user namespace may not enter the host's mount namespace:
    rootless (mrun always makes one) and rootful with linux.uidMappings. runc fails at
    its first mount (exit 1); mrun refuses before anything is made, with its 125 naming
    the fix. Neither leaves a mount."""
    def edit(c):
        _shares_callers_mount_namespace(c)
        if M.ROOTFUL:
            _with_namespaces(c, user=True)
            c["linux"]["uidMappings"] = [{"containerID": 0, "hostID": 0, "size": 65536}]
            c["linux"]["gidMappings"] = [{"containerID": 0, "hostID": 0, "size": 65536}]
    bundle = _bundle(mrun, tmp_path, private_rootfs, ["true"], edit)
    theirs, runc_left = _runc_run(bundle, name, tmp_path, private_rootfs)
    assert theirs.returncode == 1 and "operation not permitted" in theirs.stderr, theirs
    assert not runc_left, runc_left
    r = mrun("run", "--bundle", bundle, name)
    M.assert_mrun_error(r, mentions=["linux.namespaces", "caller's mount namespace",
                                     '{"type": "mount"}'])
    M.assert_mrun_error(mrun("state", name), mentions=["does not exist"])
    assert not _mounts_under(private_rootfs), M.host_mounts()
