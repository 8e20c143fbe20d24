"""Attacks on mrun itself, each performed for real: a malicious image, the
container's command against mrun's own processes and descriptors, and another
local user against the shared /tmp fallbacks. Each test fails on an mrun without
the fix it names (the security issue's items 1-7, and the published runc/crun
escapes of the same class)."""

import collections
import contextlib
import os
import subprocess
import sys
import time

import pytest

import mrunlib as M


def _secret_file(directory, name, content):
    path = os.path.join(directory, name)
    with open(path, "w") as f:
        f.write(content)
    os.chmod(path, 0o600)
    return path


# ---- 1. masks never use the image's /dev (CVE-2025-31133) -------------------

@pytest.mark.parametrize("inside", [True, False], ids=["target-in-image", "target-only-on-host"])
def test_masks_are_mruns_dev_null_not_the_images(mrun, private_rootfs, tmp_path, name, inside):
    """The image's /dev is an absolute symlink to a host directory D holding a
    file `null`. The masks over /proc/keys and the rest must be mrun's own
    /dev/null: nothing of D/null is read, nothing appended to it."""
    host_d = tmp_path / "hostdev"
    host_d.mkdir()
    secret = _secret_file(str(host_d), "null", "HOST-SECRET\n")
    dev = os.path.join(private_rootfs, "dev")
    subprocess.run(["rm", "-rf", dev], check=True)
    os.symlink(str(host_d), dev)
    if inside:
        # The same path inside the image, so that the symlink resolves there too.
        os.makedirs(private_rootfs + str(host_d), exist_ok=True)
    r = mrun("run", "--rm", "--name", name, "--network", "none", private_rootfs, "/bin/sh", "-c",
             "cat /proc/keys /proc/timer_list; echo APPENDED >> /proc/keys; echo done")
    with open(secret) as f:
        assert f.read() == "HOST-SECRET\n", f"the container wrote to the host file {secret}\n{r!r}"
    assert "HOST-SECRET" not in r.out + r.err, f"the host file leaked through a mask\n{r!r}"
    if inside:
        assert r.rc == 0 and "done" in r.out, r
    else:
        # Nothing to mount /dev on inside the image: a clear refusal is fine too.
        assert r.rc in (0, 125), r


# ---- 2. --init: the reaper is confined --------------------------------------

def test_init_reaper_cannot_be_ptraced_or_written(mrun, rootfs, name):
    """The command attacks PID 1 (mrun's reaper): /proc/1/mem for writing and
    PTRACE_SEIZE are refused (PID 1 is not dumpable)."""
    r = mrun("run", "--rm", "--init", "--name", name, "--network", "none", rootfs,
             "/bin/mrun-probe", "inject", "1")
    assert r.rc == 0, r
    assert "mem=ok" not in r.out and "seize=ok" not in r.out, f"PID 1 is open to the command\n{r!r}"


def test_init_reaper_runs_under_the_commands_seccomp(mrun, rootfs, name):
    """Even a command allowed to ptrace (--cap-add SYS_PTRACE) gains nothing from
    PID 1: the reaper holds CAP_KILL alone and runs under the same filter, so an
    unshare(CLONE_NEWUSER) injected into it is refused like the command's own."""
    r = mrun("run", "--rm", "--init", "--cap-add", "SYS_PTRACE", "--name", name, "--network",
             "none", rootfs, "/bin/sh", "-c",
             "grep -E '^(Seccomp|CapEff|CapPrm):' /proc/1/status; /bin/mrun-probe inject 1")
    assert r.rc == 0, r
    status = dict(line.split(":\t") for line in r.lines if ":\t" in line)
    assert status.get("Seccomp") == "2", f"PID 1 runs without a seccomp filter\n{r!r}"
    assert int(status["CapEff"], 16) == 1 << 5 and int(status["CapPrm"], 16) == 1 << 5, r
    assert "injected=0" not in r.out, f"code injected into PID 1 escaped the filter\n{r!r}"
    if "seize=ok" in r.out:
        assert "injected errno=EPERM" in r.out, r


# ---- 3. rootful: the default nodes are the container's own ------------------

def test_chmod_of_dev_null_never_reaches_the_host(mrun, rootfs, name):
    """The default capabilities include CAP_CHOWN and CAP_FOWNER: chmod and
    chown of /dev/null inside must not change the host's /dev/null."""
    before = os.stat("/dev/null")
    r = mrun("run", "--rm", "--name", name, "--network", "none", rootfs, "/bin/sh", "-c",
             "chmod 600 /dev/null; chown 1:1 /dev/null; echo x > /dev/null && echo usable")
    after = os.stat("/dev/null")
    if after.st_mode != before.st_mode or after.st_uid != before.st_uid:
        os.chmod("/dev/null", before.st_mode & 0o7777) if M.ROOTFUL else None
        os.chown("/dev/null", before.st_uid, before.st_gid) if M.ROOTFUL else None
        pytest.fail(f"the container changed the host's /dev/null\n{r!r}")
    assert r.rc == 0 and "usable" in r.out, r


@pytest.mark.skipif(not M.ROOTFUL, reason="rootful only: rootless cannot mknod")
def test_rootful_default_nodes_are_made_not_bound(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "--network", "none", rootfs, "/bin/sh", "-c",
             "grep -E ' /dev/(null|zero|tty) ' /proc/self/mountinfo; ls -ln /dev/null /dev/tty")
    assert r.rc == 0, r
    assert " /dev/null " not in r.out, f"/dev/null is a bind of the host's node\n{r!r}"
    assert "1,   3" in r.out and "5,   0" in r.out, r


# ---- 4, 5. the shared /tmp fallbacks of another user -------------------------

VICTIM = 23456  # a uid with no passwd entry and no subordinate ids: no HOME either


def _as_victim(argv, env=None):
    return subprocess.run(["setpriv", f"--reuid={VICTIM}", f"--regid={VICTIM}", "--clear-groups",
                           *argv], capture_output=True, text=True, timeout=M.TIMEOUT,
                          env=env or {"PATH": M.DEFAULT_PATH, "LANG": "C.UTF-8"}, cwd="/")


@pytest.fixture
def victim_dir():
    """A directory of the victim's, reachable by it (pytest's tmp_path is not)."""
    import tempfile
    path = tempfile.mkdtemp(prefix="mrun-it-victim.", dir="/var/tmp")
    os.chmod(path, 0o755)
    os.chown(path, VICTIM, VICTIM)
    yield path
    subprocess.run(["rm", "-rf", "--one-file-system", path], check=True)


@pytest.fixture
def attacker_dirs():
    """Directories another local user (nobody) made first in /tmp."""
    made = []

    def make(path, mode=0o755):
        subprocess.run(["rm", "-rf", "--one-file-system", path], check=True)
        os.mkdir(path, mode)
        os.chown(path, 65534, 65534)
        made.append(path)
        return path
    yield make
    for path in made:
        subprocess.run(["rm", "-rf", "--one-file-system", path], check=True)


@pytest.mark.skipif(not M.ROOTFUL, reason="needs root to play the other user")
def test_state_root_made_by_another_user_is_refused_by_every_verb(attacker_dirs):
    root = attacker_dirs(f"/tmp/mrun-{VICTIM}")
    # A forged entry: delete would remove the victim's directory and run the hook.
    forged = os.path.join(root, "c1")
    os.mkdir(forged)
    with open(os.path.join(forged, "state.json"), "w") as f:
        f.write('{"name":"c1","pid":1,"storage_dir":"/tmp/victim-data"}')
    for verb in (["list"], ["delete", "c1"], ["kill", "c1", "KILL"], ["state", "c1"],
                 ["run", "--rm", "--network", "none", "/nonexistent-rootfs", "true"]):
        p = _as_victim([M.MRUN, *verb])
        assert p.returncode == 125, (verb, p.returncode, p.stdout, p.stderr)
        assert f"/tmp/mrun-{VICTIM}" in p.stderr and "belongs to uid 65534" in p.stderr, (verb, p.stderr)
        assert "XDG_RUNTIME_DIR" in p.stderr, (verb, p.stderr)


@pytest.mark.skipif(not M.ROOTFUL, reason="needs root to play the other user")
def test_state_root_writable_by_others_is_refused(victim_dir):
    shared = os.path.join(victim_dir, "shared-root")
    os.mkdir(shared)
    os.chown(shared, VICTIM, VICTIM)
    os.chmod(shared, 0o777)
    p = _as_victim([M.MRUN, "--root", shared, "list"])
    assert p.returncode == 125 and "writable by other users" in p.stderr, (p.returncode, p.stderr)


@pytest.mark.skipif(not M.ROOTFUL, reason="needs root to play the other user")
def test_data_root_made_by_another_user_is_refused(attacker_dirs, victim_dir):
    """HOME unset and no passwd entry: the data fallback /tmp/mrun-home-UID,
    pre-made by another user with an upper dir of theirs, is refused."""
    attacker_dirs(f"/tmp/mrun-home-{VICTIM}")
    env = {"PATH": M.DEFAULT_PATH, "LANG": "C.UTF-8", "XDG_RUNTIME_DIR": victim_dir}
    p = _as_victim([M.MRUN, "run", "--rm", "--network", "none", "true"], env=env)
    assert p.returncode == 125, (p.returncode, p.stdout, p.stderr)
    assert f"/tmp/mrun-home-{VICTIM}" in p.stderr and "HOME" in p.stderr, p.stderr


_TAKE_SPARE = r"""
import array, os, socket, sys
s = socket.socket(socket.AF_UNIX, socket.SOCK_SEQPACKET)
s.settimeout(5)
try:
    s.connect(sys.argv[1])
except OSError as e:
    print("refused", e.errno)
    sys.exit()
msg, anc, _, _ = s.recvmsg(1, socket.CMSG_SPACE(4))
fds = [array.array("i", d)[0] for _, t, d in anc if t == socket.SCM_RIGHTS]
print(os.readlink(f"/proc/self/fd/{fds[0]}") if fds else "none " + repr(msg))
"""


@pytest.mark.skipif(not M.ROOTFUL, reason="needs root to play the other user")
def test_another_user_gets_no_network_namespace_from_a_holder():
    """A user's holder hands spare network namespaces (userns/spare_netns.hpp) to its
    own uid only: with the state root traversable and the socket made writable for
    all (a umask of 0), nobody connects and gets nothing; the owner gets one."""
    import pwd
    import tempfile
    try:
        owner = pwd.getpwnam("mrun-test")
    except KeyError:
        pytest.skip("no mrun-test user (tests/setup-user.sh makes it)")
    base = tempfile.mkdtemp(prefix="mrun-it-spare.", dir="/var/tmp")
    os.chmod(base, 0o755)
    os.chown(base, owner.pw_uid, owner.pw_gid)
    state = os.path.join(base, "state")

    def as_uid(uid, gid, argv):
        return subprocess.run(["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups",
                               *argv], capture_output=True, text=True, timeout=M.TIMEOUT, cwd=base,
                              env={"PATH": M.DEFAULT_PATH, "LANG": "C.UTF-8", "HOME": base})
    try:
        as_owner = lambda argv: as_uid(owner.pw_uid, owner.pw_gid, argv)
        r = as_owner([M.MRUN, "--root", state, "rootfs", "busybox", os.path.join(base, "rootfs")])
        assert r.returncode == 0, r.stderr
        r = as_owner([M.MRUN, "--root", state, "run", "--rm", "--network", "none",
                      os.path.join(base, "rootfs"), "/bin/true"])
        assert r.returncode == 0, r.stderr
        sock = os.path.join(state, ".userns.sock")
        os.chmod(state, 0o755)
        os.chmod(sock, 0o777)
        take = ["/usr/bin/python3", "-c", _TAKE_SPARE, sock]
        stranger = as_uid(65534, 65534, take)
        assert stranger.stdout.strip() in ("none b''", "refused 104"), (stranger.stdout,
                                                                        stranger.stderr)
        mine = as_owner(take)
        assert mine.stdout.startswith("net:["), (mine.stdout, mine.stderr)
    finally:
        try:
            with open(os.path.join(state, ".userns")) as f:
                M.kill_quietly(int(f.read().split()[0]))
        except (OSError, ValueError):
            pass
        subprocess.run(["rm", "-rf", "--one-file-system", base], check=False)


# ---- 6. --preserve-fds hands over the caller's descriptors only -------------

def _fds_seen(argv, pass_fds=(), shell=None):
    cmd = [M.MRUN, *argv] if shell is None else ["/bin/bash", "-c", shell, "bash", M.MRUN, *argv]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=M.TIMEOUT,
                       env=M.base_env(), pass_fds=pass_fds, stdin=subprocess.DEVNULL,
                       start_new_session=True)
    fds = {}
    for line in p.stdout.splitlines():
        if " -> " in line:
            fd, target = line.split(" -> ", 1)
            fds[int(fd)] = target
    return p, fds


def test_preserve_fds_passes_nothing_of_mruns_own(rootfs, name):
    """The caller has only 0-2 open: --preserve-fds 4 must give the container
    no fd 3-6 at all (before the fix: mrun's pidfd, setup socket, /dev/null)."""
    p, fds = _fds_seen(["run", "--rm", "--name", name, "--network", "none", "--preserve-fds",
                        "4", rootfs, "/bin/mrun-probe", "fds"])
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert sorted(fds) == [0, 1, 2], f"the container got descriptors of mrun's own: {fds}"


def test_preserve_fds_passes_exactly_the_callers(rootfs, name):
    """Fd 4 is the caller's pipe, fd 3 and 5 are not open: the container sees
    4 (the same pipe) and neither 3 nor 5. (bash puts the pipe at 4 for
    mrun: this process's own 4 may be pytest's.)"""
    r, w = os.pipe()
    try:
        pipe_id = os.readlink(f"/proc/self/fd/{r}")
        shell = f"exec 4<&{r} {r}<&-; exec 3<&- 5<&-; exec \"$@\""
        p, fds = _fds_seen(["run", "--rm", "--name", name, "--network", "none",
                            "--preserve-fds", "3", rootfs, "/bin/mrun-probe", "fds"],
                           pass_fds=(r,), shell=shell)
    finally:
        os.close(r)
        os.close(w)
    assert p.returncode == 0, (p.returncode, p.stderr)
    assert 3 not in fds and 5 not in fds, f"descriptors the caller did not pass: {fds}"
    assert fds.get(4) == pipe_id, f"the caller's fd 4 ({pipe_id}) did not arrive: {fds}"


def test_exec_preserve_fds_passes_nothing_of_mruns_own(mrun, rootfs, name):
    d = mrun.detach("--name", name, "--network", "none", rootfs, "/bin/sleep", "30")
    assert d.rc == 0, d
    try:
        p, fds = _fds_seen(["exec", "--preserve-fds", "4", name, "/bin/mrun-probe", "fds"])
        assert p.returncode == 0, (p.returncode, p.stderr)
        assert sorted(fds) == [0, 1, 2], f"exec handed over mrun's own descriptors: {fds}"
    finally:
        mrun("kill", name, "KILL")
        mrun.wait_status(name, "stopped")
        mrun("delete", name)


# ---- 7. mrun reads nothing of the image on the host --------------------------

@pytest.mark.parametrize("kind", ["symlink-to-host-file", "fifo", "dev-zero"])
def test_user_without_gid_reads_the_images_passwd_inside(mrun, private_rootfs, tmp_path, name,
                                                         kind):
    """-u UID without GID: the image's /etc/passwd is a symlink to a host file
    listing the uid (its gid must not leak), a FIFO (mrun must not hang), or a
    link to /dev/zero (mrun must not read forever)."""
    passwd = os.path.join(private_rootfs, "etc/passwd")
    os.unlink(passwd)
    if kind == "symlink-to-host-file":
        secret = _secret_file(str(tmp_path), "host-passwd", "spy:x:4321:7777::/:/bin/sh\n")
        os.symlink(secret, passwd)
    elif kind == "fifo":
        os.mkfifo(passwd)
    else:
        os.symlink("/dev/zero", passwd)
    start = time.monotonic()
    r = mrun("run", "--rm", "--name", name, "--network", "none", "-u", "4321", private_rootfs,
             "/bin/sh", "-c", "id -g", timeout=20)
    assert time.monotonic() - start < 15, r
    assert r.rc == 0, r
    assert r.out.strip() != "7777", f"the host file's gid leaked into the container\n{r!r}"
    assert r.out.strip() == "0", r


def test_user_without_gid_takes_the_images_group(mrun, private_rootfs, name):
    with open(os.path.join(private_rootfs, "etc/passwd"), "a") as f:
        f.write("app:x:4321:4322::/:/bin/sh\n")
    r = mrun("run", "--rm", "--name", name, "--network", "none", "-u", "4321", private_rootfs,
             "/bin/sh", "-c", "id -u; id -g")
    assert r.rc == 0 and r.lines == ["4321", "4322"], r


# ---- CVE-2024-21626: a working directory through a leaked descriptor ---------

@pytest.mark.parametrize("fd", range(3, 10))
def test_workdir_through_proc_self_fd_stays_inside(mrun, rootfs, name, fd):
    r = mrun("run", "--rm", "--name", name, "--network", "none", "-w", f"/proc/self/fd/{fd}",
             rootfs, "/bin/sh", "-c", "pwd")
    if r.rc == 0:
        assert r.out.startswith("/") and "unreachable" not in r.out, r
    else:
        assert r.rc == 125, r


# ---- CVE-2019-16884: nothing over /proc --------------------------------------

def test_volume_over_proc_is_refused(mrun, rootfs, host_dir, name):
    r = mrun("run", "--rm", "--name", name, "--network", "none", "-v", f"{host_dir}:/proc",
             rootfs, "true")
    assert r.rc == 125 and "covers the container's /proc" in r.err, r


# ---- 8. rootful on a v1/hybrid host: the v1 devices controller ---------------

def _a_host_block_device():
    for entry in sorted(os.listdir("/sys/dev/block")):
        major, minor = entry.split(":")
        return int(major), int(minor)
    return None


def _v1_devices_mounted():
    with open("/proc/self/mountinfo") as f:
        for line in f:
            pre, _, post = line.partition(" - ")
            fields = post.split()
            if len(fields) >= 3 and fields[0] == "cgroup" and "devices" in fields[2].split(","):
                return True
    return False


def _has_v2_leaf():
    with open("/proc/self/mountinfo") as f:
        return any(" - cgroup2 " in line and " /sys/fs/cgroup " in line for line in f)


@pytest.mark.skipif(not M.ROOTFUL, reason="rootful only: rootless cannot mknod")
@pytest.mark.skipif(_has_v2_leaf() or not _v1_devices_mounted(),
                    reason="needs a v1/hybrid host with the v1 devices controller (the v2 "
                           "filter is tested in the VM)")
def test_rootful_mknod_of_a_host_disk_is_denied_on_a_v1_host(mrun, rootfs, name):
    """--cap-add MKNOD and a node of the host's block device: the v1 devices group
    refuses the open (EPERM), as runc's does; with --device-filter=off it opens."""
    major, minor = _a_host_block_device()
    script = f"mknod /tmp/disk b {major} {minor} && head -c 16 /tmp/disk >/dev/null; echo rc=$?"
    r = mrun("run", "--rm", "--name", name, "--network", "none", "--cap-add", "MKNOD", rootfs,
             "/bin/sh", "-c", script)
    assert r.rc == 0 and "rc=1" in r.out and "Operation not permitted" in r.err, r
    off = mrun("run", "--rm", "--name", name, "--network", "none", "--cap-add", "MKNOD",
               "--device-filter", "off", rootfs, "/bin/sh", "-c", script)
    assert off.rc == 0 and "Operation not permitted" not in off.err, off
    groups = [d for d in os.listdir("/sys/fs/cgroup/devices") if name in d]
    assert groups == [], f"device cgroups left behind: {groups}"


def test_volume_through_an_image_symlink_to_proc_is_refused(mrun, private_rootfs, host_dir, name):
    """/foo -> /proc in the image: -v X:/foo passes the check by name, but the
    descriptor mrun opened lands in procfs, and the bind is refused."""
    os.symlink("/proc", os.path.join(private_rootfs, "foo"))
    r = mrun("run", "--rm", "--name", name, "--network", "none", "-v", f"{host_dir}:/foo",
             private_rootfs, "cat", "/proc/self/status")
    assert r.rc == 125 and "resolves into the container's /proc" in r.err, r


# ---- racing a host directory the container shares ------------------------------
# "Another container with the same shared volume" is, to mrun, any process of the same
# user that changes the volume's directory while mrun sets the container up. The racer
# below is that process: a python running as the test's user, swapping directory
# entries with renameat2(RENAME_EXCHANGE) (atomic: the name is always one of the two)
# in a tight loop until it is told to stop (SIGTERM); it prints how many swaps it did.

_RACER = r"""
import ctypes, os, signal, sys
libc = ctypes.CDLL(None, use_errno=True)
AT_FDCWD, RENAME_EXCHANGE = -100, 2
directory, name, others = sys.argv[1], sys.argv[2].encode(), [o.encode() for o in sys.argv[3:]]
os.chdir(directory)
swaps = 0
def stop(*_):
    print(swaps, flush=True)
    os._exit(0)
signal.signal(signal.SIGTERM, stop)
print("ready", flush=True)
while True:
    for other in others:
        for _ in range(2):  # there and back: NAME is itself again after each pair
            if libc.renameat2(AT_FDCWD, name, AT_FDCWD, other, RENAME_EXCHANGE) != 0:
                e = ctypes.get_errno()
                print(f"renameat2 {name!r} {other!r}: {os.strerror(e)}", file=sys.stderr)
                os._exit(1)
            swaps += 1
"""


class _Racer:
    """Swaps DIRECTORY/NAME with each of OTHERS in turn, from another process."""

    def __init__(self, directory, name, *others):
        self.p = subprocess.Popen([sys.executable, "-c", _RACER, str(directory), name, *others],
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  start_new_session=True)
        assert self.p.stdout.readline().strip() == "ready", self.p.communicate()

    def stop(self):
        """Stops it; returns how many swaps it did (it must still have been running)."""
        still_running = self.p.poll() is None
        if still_running:
            self.p.terminate()
        out, err = self.p.communicate(timeout=10)
        assert still_running, f"the racer died early: {err}"
        return int(out.split()[-1])


def _mountinfo_root(path):
    """PATH as the root field of a bind mount of it shows it in mountinfo: its path
    inside the filesystem it is on (the host mount holding it, by device and prefix)."""
    path = os.path.realpath(path)
    dev = os.stat(path).st_dev
    holders = [m for m in M.host_mounts()
               if m.dev == f"{os.major(dev)}:{os.minor(dev)}"
               and (path == m.point or path.startswith(m.point.rstrip("/") + "/"))]
    m = max(holders, key=lambda m: len(m.point))
    rest = path[len(m.point.rstrip("/")):]
    return (m.root.rstrip("/") + rest) or "/"


def _single_error_line(r):
    lines = [line for line in r.err.splitlines() if line.strip()]
    return len(lines) == 1 and lines[0].startswith("mrun: ")


# ---- CVE-2021-30465: a volume target raced with a symlink ----------------------

def test_nested_volume_target_raced_with_a_symlink_stays_inside(mrun, rootfs, tmp_path, name):
    """runc's CVE-2021-30465: volumes SHARED:/vol and OTHER:/vol/a/LEAF, while another
    process swaps SHARED/a between a directory and a symlink to "/" (or to
    "../../../../../../../../"). runc resolved the target, then mounted by path: the
    swapped-in link sent OTHER onto the host's /LEAF. mrun opens every target with
    openat2(RESOLVE_IN_ROOT) and mounts onto that descriptor, so "/" and ".." stop at
    the container's root: OTHER lands in SHARED's directory or at the container's
    /LEAF, nowhere else, and a run either succeeds or fails cleanly (125, one line)."""
    leaf = f"mrun-race-{name}"  # unique: the host's /LEAF must never appear
    assert not os.path.lexists("/" + leaf)
    shared, other = tmp_path / "shared", tmp_path / "other"
    shared.mkdir()
    other.mkdir()
    (shared / "a").mkdir()
    os.symlink("/", shared / "to-root")
    os.symlink("../../../../../../../../", shared / "to-dotdot")
    marker = f"marker-{name}"
    (other / marker).write_text("OTHER\n")
    for d in (tmp_path, shared, shared / "a", other):
        os.chmod(d, 0o755)
    host_mounts = M.mount_keys(M.host_mounts())
    # Where OTHER may show up: SHARED's directory "a" (under whichever of the three names
    # it has when the container reads its mount table), or the container's own /LEAF.
    allowed = {f"/vol/{n}/{leaf}" for n in ("a", "to-root", "to-dotdot")} | {"/" + leaf}
    other_root = _mountinfo_root(other)
    outcomes, landings = collections.Counter(), collections.Counter()
    racer = _Racer(shared, "a", "to-root", "to-dotdot")
    try:
        deadline = time.monotonic() + 20
        for run in range(40):
            if time.monotonic() > deadline:
                break
            r = mrun("run", "--rm", "--name", f"{name}-{run}", "--network", "none",
                     "-v", f"{shared}:/vol", "-v", f"{other}:/vol/a/{leaf}", rootfs,
                     "cat", "/proc/self/mountinfo")
            assert not os.path.lexists("/" + leaf), f"run {run} made the host's /{leaf}\n{r!r}"
            if r.rc == 125:
                assert _single_error_line(r), f"run {run}: not a clean refusal\n{r!r}"
                outcomes["refused: " + r.err.strip()[:80]] += 1
                continue
            assert r.rc == 0, f"run {run}\n{r!r}"
            outcomes["ran"] += 1
            points = [m.point for m in M.parse_mountinfo(r.out) if m.root == other_root]
            # Exactly once, inside: a mount made outside the container's root (on the
            # host's /LEAF in mrun's namespace) would be missing from its table.
            assert len(points) == 1 and points[0] in allowed, (
                f"run {run}: OTHER mounted at {points}, allowed {sorted(allowed)}\n{r!r}")
            landings[points[0].replace(leaf, "LEAF")] += 1
    finally:
        swaps = racer.stop()
    summary = f"{dict(outcomes)}, OTHER at {dict(landings)}, {swaps} swaps"
    assert outcomes["ran"] > 0, f"no run got through: nothing was shown\n{summary}"
    assert swaps > 1000, f"the racer hardly ran\n{summary}"
    assert M.mount_keys(M.host_mounts()) == host_mounts, f"the host's mounts changed\n{summary}"
    assert not os.path.lexists("/" + leaf) and not os.path.lexists(tmp_path / leaf), summary
    assert sorted(os.listdir(other)) == [marker], f"OTHER changed\n{summary}"
    print(summary)


# ---- CVE-2025-52565: /dev/console -------------------------------------------------
# runc bound the terminal's pty onto /dev/console by path, before the masks and the
# read-only paths: an image whose /dev/console is a symlink to a procfs file, or one
# swapped in during setup, got the pty mounted over that file. mrun binds the pty
# (from its descriptor) onto /dev/console opened without following any link
# (mount/console.hpp), and refuses a link there.

CORE_PATTERN = "/proc/sys/kernel/core_pattern"
# readlink first, once: a racer may swap the entry between two tests of it.
_CONSOLE_SCRIPT = ("cat /proc/self/mountinfo; echo ---; "
                   "if l=$(readlink /dev/console); then echo console=link:$l; "
                   "elif [ -c /dev/console ]; then echo console=char; "
                   "elif [ -f /dev/console ]; then echo console=file; "
                   "elif [ -e /dev/console ]; then echo console=other; "
                   "else echo console=absent; fi; "
                   "echo tty=$(tty)")


def _run_on_pty(mrun, *args, timeout=30):
    """mrun ARGS with its standard input, output and error on a new pty, as a user at a
    terminal runs `mrun run -t`: (exit status, what the pty showed, without \\r)."""
    import pty
    master, slave = pty.openpty()
    try:
        p = mrun.popen(*args, stdin=slave, stdout=slave, stderr=slave)
    finally:
        os.close(slave)
    try:
        rc, out = M.drain_pty(master, p, timeout, f"mrun {' '.join(map(str, args))}")
    finally:
        os.close(master)
    return rc, out.decode(errors="replace").replace("\r", "")


def _check_console_run(text, what, allowed_console):
    """The container's report (_CONSOLE_SCRIPT): nothing mounted over core_pattern or any
    procfs file, a mount on /dev/console only ever a devpts node, the console as
    ALLOWED_CONSOLE (None: any), and the command on a pty."""
    table, sep, rest = text.partition("\n---\n")
    assert sep, f"{what}: no report\n{text}"
    mounts = M.parse_mountinfo(table)
    over_proc = [m for m in mounts if m.point.startswith("/proc/sys")]
    assert all(m.point != CORE_PATTERN for m in mounts), f"{what}: a mount on {CORE_PATTERN}\n{text}"
    # /proc/sys may be made read-only by a bind onto itself (procfs), nothing else.
    assert all(m.fstype == "proc" for m in over_proc), f"{what}: {over_proc}\n{text}"
    console = [m for m in mounts if m.point == "/dev/console"]
    assert all(m.fstype == "devpts" for m in console), f"{what}: /dev/console is {console}\n{text}"
    fields = dict(line.split("=", 1) for line in rest.splitlines() if "=" in line)
    if allowed_console is not None:
        assert fields.get("console") in allowed_console, f"{what}: {fields}\n{text}"
    assert fields.get("tty", "").startswith("/dev/pts/"), f"{what}: not on a pty\n{text}"


def _binds_dev_from(devdir):
    """A config edit: /dev bound from the host directory DEVDIR (the engine's own /dev)."""
    def edit(config):
        mounts = [m for m in config["mounts"] if m["destination"] != "/dev"]
        mounts.insert(1, {"destination": "/dev", "type": "bind", "source": str(devdir),
                          "options": ["rbind", "rw"]})
        config["mounts"] = mounts
    return edit


def _read_core_pattern():
    with open(CORE_PATTERN) as f:
        return f.read()


@pytest.mark.parametrize("overlay", ["none", "auto"])
def test_image_console_symlink_to_core_pattern_is_not_mounted_on(mrun, private_rootfs, name,
                                                                 overlay):
    """The image's /dev/console is a symlink to /proc/sys/kernel/core_pattern (in the
    image itself with --overlay none, in the overlay's lower layer by default). With
    -t, nothing is mounted over core_pattern, the image's /dev is hidden by mrun's
    tmpfs (its link is not even seen), /dev/console is the pty (the runtime spec's
    default device), and the host's core_pattern is unchanged."""
    before = _read_core_pattern()
    dev = os.path.join(private_rootfs, "dev")
    os.makedirs(dev, exist_ok=True)
    os.symlink(CORE_PATTERN, os.path.join(dev, "console"))
    rc, out = _run_on_pty(mrun, "run", "--rm", "-t", "--name", name, "--network", "none",
                          "--overlay", overlay, private_rootfs, "/bin/sh", "-c", _CONSOLE_SCRIPT)
    assert rc == 0, out
    _check_console_run(out, f"--overlay {overlay}", {"char"})
    assert _read_core_pattern() == before
    assert os.readlink(os.path.join(dev, "console")) == CORE_PATTERN, "the image was changed"


def test_bundle_dev_console_raced_with_a_symlink_to_core_pattern(mrun, private_rootfs, tmp_path,
                                                                name):
    """An OCI bundle whose config binds /dev from a host directory D the test controls,
    with process.terminal true (the pty's master goes to --console-socket), while
    another process swaps D/console between a regular file and a symlink to
    core_pattern. Over repeated `mrun run --bundle` starts: each exits 0 with the pty on
    /dev/console (the regular file was there), or 125 with one line (the link was);
    core_pattern is never a mount point in the container (nor a mount over /proc/sys
    other than its own read-only bind); the host's core_pattern, its mount table and
    both entries of D are unchanged."""
    import socket
    import threading
    devdir = tmp_path / "dev"
    devdir.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(devdir, 0o755)
    (devdir / "console").write_text("REGULAR\n")
    os.symlink(CORE_PATTERN, devdir / "console-link")
    # A /dev of the engine's own gets nothing from the runtime (runc's rule, and mrun's):
    # the pty comes from the devpts on /dev/pts, through the engine's ptmx link.
    os.symlink("pts/ptmx", devdir / "ptmx")

    bundle = M.oci_bundle(mrun, tmp_path, private_rootfs, ["/bin/sh", "-c", _CONSOLE_SCRIPT],
                          edit=_binds_dev_from(devdir), terminal=True)
    sock_path = tmp_path / "console.sock"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(str(sock_path))
    server.listen(1)
    server.settimeout(20)
    before, host_mounts = _read_core_pattern(), M.mount_keys(M.host_mounts())
    outcomes = collections.Counter()
    racer = _Racer(devdir, "console", "console-link")
    try:
        deadline = time.monotonic() + 20
        for run in range(20):
            if time.monotonic() > deadline:
                break
            got = {}

            def pty_output():
                try:
                    conn, _ = server.accept()
                except OSError as e:  # mrun refused before it made the pty
                    got["error"] = e
                    return
                with conn:
                    _, fds, _, _ = socket.recv_fds(conn, 1024, 1)
                if not fds:  # our own wake-up call
                    return
                out = b""
                try:
                    while True:
                        try:
                            data = os.read(fds[0], 65536)
                        except OSError:  # EIO: the container's side is closed
                            break
                        if not data:
                            break
                        out += data
                finally:
                    os.close(fds[0])
                got["out"] = out.decode(errors="replace").replace("\r", "")

            reader = threading.Thread(target=pty_output)
            reader.start()
            r = mrun("run", "--bundle", bundle, "--console-socket", sock_path, f"{name}-{run}")
            mrun("delete", "--force", f"{name}-{run}")  # run --bundle keeps it, as runc run
            if r.rc != 0:
                # Refused before the pty was sent: wake the reader up.
                with contextlib.suppress(OSError), socket.socket(socket.AF_UNIX) as poke:
                    poke.connect(str(sock_path))
            reader.join(20)
            assert not reader.is_alive(), f"run {run}: the pty never closed\n{r!r}"
            if r.rc == 125:
                assert _single_error_line(r), f"run {run}: not a clean refusal\n{r!r}"
                outcomes["refused: " + r.err.strip()[:80]] += 1
                continue
            assert r.rc == 0, f"run {run}\n{r!r}"
            # The pty, bound onto the regular file (never through the link). What the
            # name shows afterwards is the racer's business: it renames the file away
            # and back while the container looks.
            _check_console_run(got.get("out", ""), f"run {run}", None)
            outcomes["ran"] += 1
    finally:
        swaps = racer.stop()
        server.close()
    summary = f"{dict(outcomes)}, {swaps} swaps"
    assert outcomes["ran"] > 0, f"no run got through\n{summary}"
    assert swaps > 1000, f"the racer hardly ran\n{summary}"
    assert _read_core_pattern() == before, summary
    assert M.mount_keys(M.host_mounts()) == host_mounts, f"the host's mounts changed\n{summary}"
    entries = {n: os.readlink(devdir / n) if os.path.islink(devdir / n) else
               (devdir / n).read_text() for n in ("console", "console-link")}
    assert sorted(entries.values()) == sorted(["REGULAR\n", CORE_PATTERN]), entries
    print(summary)


def test_bundle_dev_console_symlink_is_refused_and_left_alone(mrun, private_rootfs, tmp_path,
                                                              name):
    """The same /dev bound from a host directory, its console a symlink to core_pattern
    and no racer: mrun refuses to bind the terminal through the link (125, one line
    naming /dev/console), removes nothing of the host's directory, and mounts nothing."""
    devdir = tmp_path / "dev"
    devdir.mkdir()
    os.chmod(tmp_path, 0o755)
    os.chmod(devdir, 0o755)
    os.symlink(CORE_PATTERN, devdir / "console")
    os.symlink("pts/ptmx", devdir / "ptmx")

    bundle = M.oci_bundle(mrun, tmp_path, private_rootfs, ["/bin/true"],
                          edit=_binds_dev_from(devdir),
                          terminal=True)
    host_mounts = M.mount_keys(M.host_mounts())
    rc, out = _run_on_pty(mrun, "run", "--bundle", bundle, name)
    mrun("delete", "--force", name)
    assert rc == 125, out
    assert "/dev/console" in out and "symlink" in out, out
    assert os.readlink(devdir / "console") == CORE_PATTERN
    assert M.mount_keys(M.host_mounts()) == host_mounts


# ---- CVE-2025-52881: a /proc write that lands elsewhere ---------------------------
# runc's writes to /proc files (apparmor's attr, sysctls) followed whatever a config's
# mounts put at /proc. mrun writes sysctls through the host's /proc/sys (procfs checked,
# no link, no mount crossed) and the container's oom_score_adj through /proc/<pid> of a
# /proc it checks is procfs (sys::open_own_proc_file).

def test_oom_score_adj_refuses_a_proc_that_is_not_procfs(mrun, private_rootfs, tmp_path, name):
    """A config whose /proc is a tmpfs and that asks for process.oomScoreAdj: 125 naming
    /proc, not a write into the tmpfs that leaves the score unset without a word."""
    def tmpfs_proc(config):
        for m in config["mounts"]:
            if m["destination"] == "/proc":
                m.update({"type": "tmpfs", "source": "tmpfs", "options": ["nosuid", "nodev"]})

    bundle = M.oci_bundle(mrun, tmp_path, private_rootfs, ["/bin/true"], edit=tmpfs_proc,
                          oomScoreAdj=500)
    r = mrun("run", "--bundle", bundle, name)
    mrun("delete", "--force", name)
    assert r.rc == 125, r
    assert "/proc is not procfs" in r.err and "oomScoreAdj" in r.err, r
    assert _single_error_line(r), r
