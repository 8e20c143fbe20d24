"""--device, --keep-groups and mrun-gpu-helper(8) on the host kernel.

Runs in both passes. What needs root to set up (a node made with mknod in an image,
a setuid copy of the helper, its root-owned policy, test nodes under /dev) runs in
the rootful pass only, with the containers started as the unprivileged user
(mrun-test) through runuser: a real setuid binary and a real unprivileged caller.
The fakegpu driver itself is tested in the VM (tests/vm/guest/gpu.sh).
"""

import contextlib
import fcntl
import json
import os
import pwd
import shutil
import stat
import subprocess
import sys
import tempfile
import time

import pytest

import mrunlib as M

USER = os.environ.get("MRUN_IT_USER", "mrun-test")
HELPER = os.environ.get("MRUN_GPU_HELPER") or next(
    (p for p in (os.path.join(os.path.dirname(M.MRUN), "mrun-gpu-helper"),
                 os.path.join(M.REPO, "build/helpers/mrun-gpu-helper")) if os.path.exists(p)),
    "")
POLICY = "/etc/mrun/gpu-helper.conf"

# The helper's exit statuses (mrun-gpu-helper(8)).
TOO_BIG, NOT_SETUID, POLICY_UNSAFE, POLICY_BAD, NOT_ALLOWED = 2, 3, 4, 5, 6
DEVICE_PATH, NOT_CHAR, BLOCK, PROCESS, USERNS, MNTNS, TARGET = 7, 8, 9, 10, 11, 12, 13
USAGE, CGROUP, ATTACHED, LIMITS, FILTER_LIMIT = 1, 15, 16, 18, 19

rootful_setup = pytest.mark.skipif(
    not M.ROOTFUL, reason="needs root to set up (mknod into an image, a setuid copy, the "
    "root-owned policy); runs in the rootful pass with the container started as " + USER)


def probe(mrun, rootfs, *args, opts=()):
    return mrun("run", "--rm", "--network", "none", *opts, rootfs, "/bin/mrun-probe", *args)


def a_block_device():
    for name in sorted(os.listdir("/dev")):
        path = os.path.join("/dev", name)
        if stat.S_ISBLK(os.lstat(path).st_mode):
            return path
    return None


# ---- --device -----------------------------------------------------------------

def test_device_is_usable_under_its_container_path(mrun, rootfs):
    r = probe(mrun, rootfs, "stat", "/dev/mynull", opts=("--device", "/dev/null:/dev/mynull"))
    M.assert_rc(r)
    assert "type=c" in r.out and "rdev=1:3" in r.out, r
    r = M.run_sh(mrun, rootfs, "echo hi >/dev/mynull && echo wrote", "--network", "none",
                 "--device", "/dev/null:/dev/mynull:rw")
    M.assert_rc(r)
    assert r.out.strip() == "wrote", r


def test_device_rootful_mknod_rootless_bind(mrun, rootfs):
    """Rootful makes a node on the container's /dev tmpfs; rootless binds the host's
    (mknod is refused in a user namespace): told apart by st_dev."""
    r = probe(mrun, rootfs, "stat", "/dev/mynull", opts=("--device", "/dev/null:/dev/mynull"))
    M.assert_rc(r)
    dev = int(r.out.split("dev=")[1].split()[0])
    host = os.stat("/dev/null")
    if M.ROOTFUL:
        assert dev != host.st_dev, f"rootful: expected a node made by mknod, not a bind\n{r!r}"
        assert f"mode=0{stat.S_IMODE(host.st_mode):o}" in r.out, r
    else:
        assert dev == host.st_dev, f"rootless: expected the host node bind-mounted\n{r!r}"


def test_device_target_resolves_inside_the_rootfs(mrun, private_rootfs, name):
    """A symlink in the image on the way to the container path resolves inside the
    image (RESOLVE_IN_ROOT, as for volumes), never on the host."""
    leaf = f"mrun-dev-escape-{name}"
    os.symlink("/tmp", os.path.join(private_rootfs, "devlink"))
    r = M.run_sh(mrun, private_rootfs, f"test -c /tmp/{leaf} && echo inside", "--network", "none",
                 "--overlay", "none", "--device", f"/dev/null:/devlink/{leaf}")
    try:
        M.assert_rc(r)
        assert r.out.strip() == "inside", r
        assert not os.path.lexists(f"/tmp/{leaf}"), "the node landed on the host's /tmp"
        assert os.path.lexists(os.path.join(private_rootfs, "tmp", leaf)), r
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.remove(f"/tmp/{leaf}")


@pytest.mark.parametrize("kind", ["block", "regular", "missing", "directory"])
def test_device_refused(mrun, rootfs, name, tmp_path, kind):
    if kind == "block":
        path = a_block_device()
        if path is None:
            pytest.skip("no block device in /dev on this machine")
        words = ["block device"]
    elif kind == "regular":
        path = str(tmp_path / "file")
        open(path, "w").close()
        os.chmod(tmp_path, 0o755)
        words = ["not a device node"]
    elif kind == "missing":
        path = "/dev/mrun-no-such-device"
        words = ["does not exist"]
    else:
        path = "/dev/pts"
        words = ["not a device node"]
    r = mrun("run", "--rm", "--name", name, "--network", "none", "--device", path, rootfs, "true")
    M.assert_mrun_error(r, 125, [path, *words])
    assert not M.state_paths_of(name, M.state_dir()), "state left behind"


def test_device_malformed_spec(mrun, rootfs):
    r = mrun("run", "--rm", "--network", "none", "--device", "/dev/null:/dev/x:rx", rootfs, "true")
    M.assert_mrun_error(r, 125, ["/dev/null:/dev/x:rx", "rwm"])


def test_mknod_needs_the_initial_user_namespace(mrun, rootfs):
    """CAP_MKNOD counts only in the initial user namespace: rootless, even with
    --cap-add MKNOD, mknod is EPERM; rootful with it, it works."""
    r = probe(mrun, rootfs, "mknod", "/dev/probe-null", opts=("--cap-add", "MKNOD"))
    if M.ROOTFUL:
        M.assert_rc(r)
        assert r.out.strip() == "ok", r
    else:
        assert r.rc == 1 and "errno=EPERM" in r.out, r


def test_gpu_without_the_driver_is_refused(mrun, rootfs, name):
    if any(n.startswith("fakegpu") for n in os.listdir("/dev")):
        pytest.skip("fakegpu is loaded here; the VM suite tests --gpu")
    r = mrun("run", "--rm", "--name", name, "--network", "none", "--gpu", rootfs, "true")
    M.assert_mrun_error(r, 125, ["--gpu", "modprobe fakegpu"])


# ---- --keep-groups ---------------------------------------------------------------

def groups_of(r):
    M.assert_rc(r)
    text = r.out.split("groups=")[1].strip()
    return [int(g) for g in text.split(",")] if text else []


def test_keep_groups(mrun, rootfs):
    """Without --keep-groups mrun drops the supplementary groups; with it they stay
    (rootless: unmapped ones show as the overflow gid 65534, the primary as 0)."""
    host = sorted(set(os.getgroups()))
    assert groups_of(probe(mrun, rootfs, "ids")) == []
    kept = groups_of(probe(mrun, rootfs, "ids", opts=("--keep-groups",)))
    if M.ROOTFUL:
        assert sorted(kept) == host
    else:
        assert sorted(kept) == sorted(0 if g == M.GID else 65534 for g in host)
    # id -G: the effective gid (0 in both modes) and the supplementary groups.
    for opts, want in (((), {0}), (("--keep-groups",), {0} | set(kept))):
        r = M.run_sh(mrun, rootfs, "id -G", "--network", "none", *opts)
        M.assert_rc(r)
        assert set(map(int, r.out.split())) == want, r


# ---- as the unprivileged user, set up by root ----------------------------------

@pytest.fixture
def user():
    try:
        return pwd.getpwnam(USER)
    except KeyError:
        pytest.skip(f"no user {USER} (tests/setup-user.sh makes it)")


@pytest.fixture
def world(rootfs, user):
    """A world-readable copy of the rootfs, a home and a volume dir for USER."""
    base = tempfile.mkdtemp(prefix="mrun-dev-", dir="/var/tmp")
    os.chmod(base, 0o755)
    root = os.path.join(base, "rootfs")
    shutil.copytree(rootfs, root, symlinks=True)
    os.chmod(root, 0o755)
    home = os.path.join(base, "home")
    xdir = os.path.join(base, "x")
    for d in (home, xdir):
        os.mkdir(d, 0o755)
        os.chown(d, user.pw_uid, user.pw_gid)
    yield {"base": base, "rootfs": root, "home": home, "x": xdir}
    subprocess.run(["rm", "-rf", "--one-file-system", base], timeout=30)


def as_user(world, *argv, env_extra=None, timeout=M.TIMEOUT, popen=False):
    env = ["HOME=" + world["home"], "PATH=" + M.DEFAULT_PATH, "LANG=C.UTF-8"]
    env += env_extra or []
    cmd = ["runuser", "-u", USER, "--", "env", "-i", *env, *argv]
    if popen:
        return subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True, start_new_session=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)


@rootful_setup
@pytest.mark.parametrize("overlay", ["auto", "none"])
def test_node_in_the_image(world, overlay):
    """A node shipped in the image: rootless, with the overlay (mounted in the user
    namespace, so its superblock is nodev) even a 0666 node is EACCES; with
    --overlay none the image is a bind of the host filesystem, whose superblock is
    the initial namespace's: a 0666 node then opens, and a root:root 0600 one is
    EACCES because CAP_DAC_OVERRIDE does not reach an unmapped owner."""
    os.mknod(os.path.join(world["rootfs"], "img-null-666"), stat.S_IFCHR | 0o666, os.makedev(1, 3))
    os.chmod(os.path.join(world["rootfs"], "img-null-666"), 0o666)
    os.mknod(os.path.join(world["rootfs"], "img-null-600"), stat.S_IFCHR | 0o600, os.makedev(1, 3))
    r = as_user(world, M.MRUN, "run", "--rm", "--network", "none", "--overlay", overlay,
                world["rootfs"], "/bin/sh", "-c",
                "mrun-probe write /img-null-666; mrun-probe write /img-null-600; true")
    assert r.returncode == 0, r
    lines = r.stdout.splitlines()
    assert len(lines) == 2, r
    if overlay == "auto":
        assert lines[0].startswith("errno=EACCES"), r  # nodev superblock
    else:
        assert lines[0] == "ok", r  # host superblock, world-writable node
    assert lines[1].startswith("errno=EACCES"), r  # unmapped owner, 0600


# ---- mrun-gpu-helper ---------------------------------------------------------------

@pytest.fixture
def helper(world, user):
    """A setuid-root copy of the helper in a root-owned directory, test nodes under
    /dev, and a policy allowing USER those nodes; everything restored afterwards."""
    if not HELPER:
        pytest.skip("mrun-gpu-helper not built (meson compile -C build)")
    bindir = os.path.join(world["base"], "sbin")
    os.mkdir(bindir, 0o755)
    if os.statvfs(bindir).f_flag & os.ST_NOSUID:
        pytest.skip(f"{bindir} is on a nosuid mount: a setuid copy would not run as root")
    path = os.path.join(bindir, "mrun-gpu-helper")
    shutil.copy(HELPER, path)
    os.chown(path, 0, 0)
    os.chmod(path, 0o4755)
    devdir = f"/dev/mrun-helper-test-{os.getpid()}"
    os.mkdir(devdir, 0o755)
    os.mknod(devdir + "/null0", stat.S_IFCHR | 0o600, os.makedev(1, 3))
    os.chmod(devdir + "/null0", 0o600)
    os.mknod(devdir + "/blk", stat.S_IFBLK | 0o600, os.makedev(7, 0))
    # A 0666 node of a major no driver has: ENXIO when opened, EPERM under a filter.
    os.mknod(devdir + "/nodev0", stat.S_IFCHR | 0o666, os.makedev(240, 99))
    os.chmod(devdir + "/nodev0", 0o666)
    open(devdir + "/file", "w").close()
    os.symlink("null0", devdir + "/link")
    saved = None
    made_dir = not os.path.isdir("/etc/mrun")
    if os.path.exists(POLICY):
        with open(POLICY) as f:
            saved = f.read()
    os.makedirs("/etc/mrun", exist_ok=True)
    saved_dir = os.stat("/etc/mrun")

    def write_policy(text, mode=0o644, owner=0):
        # A fresh file: a test may have left a symlink or a FIFO there.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(POLICY)
        with open(POLICY, "x") as f:
            f.write(text)
        os.chown(POLICY, owner, 0)
        os.chmod(POLICY, mode)

    write_policy(f"# test policy ({__file__})\n{devdir}/* user:{USER}\n")
    try:
        yield {"path": path, "dev": devdir, "write_policy": write_policy}
    finally:
        shutil.rmtree(devdir, ignore_errors=True)
        os.chown("/etc/mrun", saved_dir.st_uid, saved_dir.st_gid)
        os.chmod("/etc/mrun", stat.S_IMODE(saved_dir.st_mode))
        if saved is not None:
            write_policy(saved)
        else:
            with contextlib.suppress(FileNotFoundError):
                os.remove(POLICY)
            if made_dir:
                os.rmdir("/etc/mrun")


def run_helper(world, helper, *args, env_extra=None, path=None):
    return as_user(world, path or helper["path"], *map(str, args), env_extra=env_extra)


@contextlib.contextmanager
def user_container(world, helper, name, node="null0", before="errno=EACCES"):
    """A rootless container of USER with the test node NODE bound at /dev/null0
    (null0: root:root 0600, EACCES inside), a symlink /dev/evil -> /etc/passwd, writing
    whether it can open /dev/null0 before (/x/before) and after /x/go appears
    (/x/after). mrun is pointed at no helper: the tests run the helper themselves."""
    script = ("ln -s /etc/passwd /dev/evil; mrun-probe write /dev/null0 >/x/before; "
              "touch /x/ready; i=0; while [ ! -e /x/go ] && [ $i -lt 300 ]; do sleep 0.1; "
              "i=$((i+1)); done; mrun-probe write /dev/null0 >/x/after; true")
    p = as_user(world, M.MRUN, "run", "--rm", "--name", name, "--network", "none",
                "--device", helper["dev"] + "/" + node + ":/dev/null0", "-v", world["x"] + ":/x",
                world["rootfs"], "/bin/sh", "-c", script, popen=True,
                env_extra=["MRUN_GPU_HELPER=/nonexistent/mrun-gpu-helper"])
    x = world["x"]
    try:
        assert M.wait_until(lambda: os.path.exists(x + "/ready") or p.poll() is not None, 20)
        assert p.poll() is None, f"container exited early: {p.communicate()}"
        listing = as_user(world, M.MRUN, "list", "--format", "json")
        pid = next(c["pid"] for c in json.loads(listing.stdout) if c["name"] == name)
        with open(x + "/before") as f:
            assert f.read().startswith(before), f"before the helper: want {before}"
        result = {"pid": pid}
        yield result
    finally:
        open(x + "/go", "w").close()
        try:
            out, err = p.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, 9)
            out, err = p.communicate()
        result_after = open(x + "/after").read() if os.path.exists(x + "/after") else ""
        if "result" in locals():
            result["after"] = result_after
            result["rc"] = p.returncode
            result["output"] = out + err


def assert_refused(r, status, words):
    assert r.returncode == status, f"expected helper exit {status}, got {r.returncode}: {r}"
    assert r.stderr.startswith("mrun-gpu-helper: "), r
    for w in words:
        assert w in r.stderr, f"expected {w!r} in the message: {r}"


HOSTILE = os.path.join(M.HERE, "hostile_exec.py")
# What a caller may leave a setuid program (hostile_exec.py): none may make it fail
# half-way or grant more; the limits it cannot work under are its documented refusal.
HELPER_STATES = ["sigchld-ignored", "sigpipe-ignored", "signals-blocked", "stdin-closed",
                 "stdio-closed", "stdout-closed-pipe", "umask-0000", "umask-0777", "nofile-16",
                 "nproc-at-count", "cwd-deleted", "env-1mib", "tmpdir-missing"]


@rootful_setup
@pytest.mark.parametrize("state", HELPER_STATES)
def test_helper_under_inherited_state(world, helper, name, state):
    """The grant under each hostile state: it works (the node opens afterwards and the
    host node is unchanged) or is refused with its documented status, nothing granted."""
    before = os.stat(helper["dev"] + "/null0")
    with user_container(world, helper, name) as c:
        r = as_user(world, sys.executable, HOSTILE, state, helper["path"], str(c["pid"]),
                    helper["dev"] + "/null0", "/dev/null0")
    after = os.stat(helper["dev"] + "/null0")
    assert (after.st_mode, after.st_uid, after.st_gid) == (before.st_mode, 0, 0)
    # Its documented refusals (mrun-gpu-helper(8)): limits it cannot work under, and an
    # environment past 256 KiB, which a setuid program never takes in.
    refusals = {"nproc-at-count": LIMITS, "nofile-16": LIMITS, "env-1mib": TOO_BIG}
    if r.returncode != 0 and r.returncode == refusals.get(state):
        assert r.stderr.startswith("mrun-gpu-helper: "), r
        assert c["after"].startswith("errno=EACCES"), c
        return
    assert r.returncode == 0, f"under {state}: {r}"
    assert c["after"].strip() == "ok", c


@rootful_setup
def test_helper_grants_a_root_only_node(world, helper, name):
    """The success path: a root:root 0600 node is EACCES in the rootless container;
    after the helper it opens, and the host node is unchanged."""
    before = os.stat(helper["dev"] + "/null0")
    with user_container(world, helper, name) as c:
        r = run_helper(world, helper, c["pid"], helper["dev"] + "/null0", "/dev/null0")
        assert r.returncode == 0, r
    assert c["rc"] == 0, c
    assert c["after"].strip() == "ok", c
    after = os.stat(helper["dev"] + "/null0")
    assert (after.st_mode, after.st_uid, after.st_gid) == (before.st_mode, 0, 0)


REFUSALS = {
    # name: (device (relative to the test dir, or absolute), target, status, words)
    "device not in the policy": ("/dev/zero", "/dev/null0", NOT_ALLOWED, ["not allowed"]),
    "not a device": ("file", "/dev/null0", NOT_CHAR, ["not a character device"]),
    "block device": ("blk", "/dev/null0", BLOCK, ["block device"]),
    "symlink as the device path": ("link", "/dev/null0", DEVICE_PATH, ["symlinks are never followed"]),
    "target is a symlink out": ("null0", "/dev/evil", TARGET, ["symlinks are never followed"]),
    "target outside /dev": ("null0", "/etc/passwd", TARGET, ["under /dev/"]),
    "target with ..": ("null0", "/dev/../etc/passwd", TARGET, ["under /dev/"]),
    "missing target": ("null0", "/dev/nothing-here", TARGET, ["No such file"]),
}


@rootful_setup
@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_helper_refuses(world, helper, name, case):
    device, target, status, words = REFUSALS[case]
    if not device.startswith("/"):
        device = helper["dev"] + "/" + device
    with user_container(world, helper, name) as c:
        r = run_helper(world, helper, c["pid"], device, target)
        assert_refused(r, status, words)
    assert c["after"].startswith("errno=EACCES"), f"nothing may be granted: {c}"


@rootful_setup
@pytest.mark.parametrize("case", ["not setuid", "policy owned by the user",
                                  "policy writable by others", "no policy", "policy malformed",
                                  "huge argv", "huge env", "too many arguments",
                                  "bad max_filters_per_user"])
def test_helper_refuses_setup_and_input(world, helper, user, name, case):
    dev = helper["dev"] + "/null0"
    args, env_extra, path = [os.getpid(), dev, "/dev/null0"], None, None
    if case == "not setuid":
        path = os.path.join(os.path.dirname(helper["path"]), "not-setuid")
        shutil.copy(HELPER, path)
        os.chmod(path, 0o755)
        status, words = NOT_SETUID, ["setuid root"]
    elif case == "policy owned by the user":
        helper["write_policy"](f"{helper['dev']}/* user:{USER}\n", owner=user.pw_uid)
        status, words = POLICY_UNSAFE, ["owned by root"]
    elif case == "policy writable by others":
        helper["write_policy"](f"{helper['dev']}/* user:{USER}\n", mode=0o666)
        status, words = POLICY_UNSAFE, ["not writable by group or others"]
    elif case == "no policy":
        os.remove(POLICY)
        status, words = POLICY_UNSAFE, ["nothing is allowed"]
    elif case == "policy malformed":
        helper["write_policy"](f"{helper['dev']}/* person:{USER}\n")
        status, words = POLICY_BAD, [":1:"]
    elif case == "bad max_filters_per_user":
        helper["write_policy"](f"{helper['dev']}/* user:{USER}\nmax_filters_per_user -1\n")
        status, words = POLICY_BAD, [":2:", "max_filters_per_user"]
    elif case == "huge argv":
        args = [os.getpid(), dev, "/dev/" + "x" * 100000]
        status, words = TOO_BIG, ["longer than"]
    elif case == "huge env":
        env_extra = [f"BIG{i}=" + "x" * 100000 for i in range(3)]
        status, words = TOO_BIG, ["environment"]
    else:
        args = [os.getpid(), dev] + ["/dev/null0"] * 40
        status, words = TOO_BIG, ["too many arguments"]
    r = run_helper(world, helper, *args, env_extra=env_extra, path=path)
    assert_refused(r, status, words)


@rootful_setup
@pytest.mark.parametrize("case", ["symlink", "fifo", "over 64 KiB", "directory writable by others",
                                  "directory owned by the user"])
def test_helper_refuses_an_untrusted_policy(world, helper, user, case):
    """The trust checks of the policy (src/gpupolicy/gpu_policy_load.c, the loader
    `mrun gpu doctor` uses too) in the real setuid helper: a symlink to a good
    policy, a FIFO (refused at once: opening it would wait for a writer), a file over
    64 KiB, and a directory someone else could write (they could replace the file)."""
    dev = helper["dev"] + "/null0"
    good = f"{helper['dev']}/* user:{USER}\n"
    real = POLICY + ".real"
    try:
        if case == "symlink":
            with open(real, "w") as f:
                f.write(good)
            os.unlink(POLICY)
            os.symlink(os.path.basename(real), POLICY)
            status, words = POLICY_UNSAFE, [POLICY + ": a symbolic link"]
        elif case == "fifo":
            os.unlink(POLICY)
            os.mkfifo(POLICY, 0o644)
            status, words = POLICY_UNSAFE, [POLICY + ": not a regular file"]
        elif case == "over 64 KiB":
            helper["write_policy"](good + "#" * 65536 + "\n")
            status, words = POLICY_BAD, ["larger than 64 KiB"]
        elif case == "directory writable by others":
            os.chmod("/etc/mrun", 0o777)
            status, words = POLICY_UNSAFE, ["/etc/mrun: owner uid 0, mode 0777",
                                            "not writable by group or others"]
        else:
            os.chown("/etc/mrun", user.pw_uid, 0)
            status, words = POLICY_UNSAFE, [f"/etc/mrun: owner uid {user.pw_uid}",
                                            "must be owned by root"]
        r = run_helper(world, helper, os.getpid(), dev, "/dev/null0")
        assert_refused(r, status, words)
    finally:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(real)
        os.chown("/etc/mrun", 0, 0)
        os.chmod("/etc/mrun", 0o755)
        helper["write_policy"](good)


@rootful_setup
@pytest.mark.parametrize("case", ["pid of another user", "no such pid", "host process",
                                  "userns without its own mount namespace"])
def test_helper_refuses_processes(world, helper, case):
    dev = helper["dev"] + "/null0"
    p = None
    try:
        if case == "pid of another user":
            pid, status, words = 1, PROCESS, ["does not belong"]
        elif case == "no such pid":
            pid, status, words = 2**22 + 1, PROCESS, ["No such process"]
        else:
            argv = ["sleep", "30"] if case == "host process" else ["unshare", "-U", "sleep", "30"]
            p = as_user(world, *argv, popen=True)
            # runuser forks; the user's process is its child.
            assert M.wait_until(lambda: any(pr.ppid == p.pid and pr.comm == "sleep"
                                            for pr in M.list_procs().values()), 10)
            pid = next(pr.pid for pr in M.list_procs().values()
                       if pr.ppid == p.pid and pr.comm == "sleep")
            status, words = ((USERNS, ["not in a user namespace owned"]) if case == "host process"
                             else (MNTNS, ["mount namespace"]))
        r = run_helper(world, helper, pid, dev, "/dev/null0")
        assert_refused(r, status, words)
    finally:
        if p is not None:
            os.killpg(p.pid, 9)
            p.wait()


# ---- the helper under the caller's resource limits and signal state ---------------
# A setuid program inherits them from its caller. Each case must either finish (and
# say so with 0) or do nothing and say so with its own status (LIMITS): never a grant
# reported as a failure, never a failure after a grant.

def helper_mounts(pid):
    """The mounts the helper made in the mount namespace of PID (its tmpfs's source)."""
    with open(f"/proc/{pid}/mountinfo") as f:
        return [line for line in f if " - tmpfs mrun-gpu-helper " in line]


def sh_wrapper(script):
    """argv words that run `sh -c SCRIPT` with the helper's argv as "$@"."""
    return ["sh", "-c", script, "sh"]


LIMIT_REFUSALS = {
    # name: (wrapper argv before the helper's, words)
    "RLIMIT_NOFILE 3 (no descriptor free)": (["prlimit", "--nofile=3:3"], ["RLIMIT_NOFILE"]),
    "RLIMIT_NOFILE 6": (["prlimit", "--nofile=6:6"], ["RLIMIT_NOFILE", "hard limit 6"]),
    "RLIMIT_NOFILE 10": (["prlimit", "--nofile=10:10"], ["RLIMIT_NOFILE"]),
    "RLIMIT_FSIZE 0, stdout a file": (
        sh_wrapper('exec prlimit --fsize=0 "$@" >"$HOME/report"'), ["RLIMIT_FSIZE"]),
    "RLIMIT_FSIZE 0, SIGXFSZ ignored by the caller": (
        sh_wrapper('trap "" XFSZ; exec prlimit --fsize=0 "$@" >"$HOME/report"'), ["RLIMIT_FSIZE"]),
    "RLIMIT_STACK 64 KiB": (["prlimit", "--stack=65536:65536"], ["RLIMIT_STACK"]),
    "RLIMIT_AS 32 MiB": (["prlimit", "--as=33554432:33554432"], ["RLIMIT_AS"]),
    "RLIMIT_CPU 1 s": (["prlimit", "--cpu=1:1"], ["RLIMIT_CPU"]),
    "RLIMIT_NPROC 1 (the walk's fork)": (["prlimit", "--nproc=1:1"], ["fork", "RLIMIT_NPROC"]),
}


@rootful_setup
@pytest.mark.parametrize("case", sorted(LIMIT_REFUSALS))
def test_helper_refuses_under_limits(world, helper, name, case):
    """A hard limit below what the helper needs: LIMITS, before anything was done (no
    mount in the container, the node still EACCES there)."""
    wrapper, words = LIMIT_REFUSALS[case]
    with user_container(world, helper, name) as c:
        r = as_user(world, *wrapper, helper["path"], str(c["pid"]), helper["dev"] + "/null0",
                    "/dev/null0")
        assert_refused(r, LIMITS, words + ["nothing done"])
        assert helper_mounts(c["pid"]) == [], "a refused grant left a mount"
    assert c["after"].startswith("errno=EACCES"), f"nothing may be granted: {c}"


@rootful_setup
@pytest.mark.parametrize("case", ["soft RLIMIT_NOFILE 3, hard 64: raised",
                                  "RLIMIT_NOFILE 32: enough", "RLIMIT_CPU 60 s: enough",
                                  "descriptors 0, 1 and 2 closed",
                                  "signals blocked and ignored by the caller"])
def test_helper_grants_under_limits_it_can_live_with(world, helper, name, case):
    wrapper = {
        "soft RLIMIT_NOFILE 3, hard 64: raised": ["prlimit", "--nofile=3:64"],
        "RLIMIT_NOFILE 32: enough": ["prlimit", "--nofile=32:32"],
        "RLIMIT_CPU 60 s: enough": ["prlimit", "--cpu=60:60"],
        # Its report and any message go nowhere; the status still says what happened.
        "descriptors 0, 1 and 2 closed": sh_wrapper('exec "$@" <&- >&- 2>&-'),
        # SIGCHLD ignored (it would auto-reap the walk's child), SIGCHLD and SIGALRM
        # blocked, a SIGTERM left pending (it survives execve), an ITIMER_REAL armed.
        "signals blocked and ignored by the caller": [
            "python3", "-c", "import os, signal, sys; signal.signal(signal.SIGCHLD, signal.SIG_IGN); "
            "signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGALRM, signal.SIGCHLD, "
            "signal.SIGTERM}); os.kill(os.getpid(), signal.SIGTERM); "
            "signal.setitimer(signal.ITIMER_REAL, 0.05); os.execv(sys.argv[1], sys.argv[1:])"],
    }[case]
    with user_container(world, helper, name) as c:
        r = as_user(world, *wrapper, helper["path"], str(c["pid"]), helper["dev"] + "/null0",
                    "/dev/null0")
        assert r.returncode == 0, r
        assert len(helper_mounts(c["pid"])) == 1, "expected the node's mount"
    assert c["after"].strip() == "ok", c


@rootful_setup
def test_helper_grant_is_not_undone_by_a_closed_stdout(world, helper, name):
    """The report goes to a pipe nobody reads: the write fails with EPIPE (SIGPIPE is
    ignored), the grant stands and the status is 0, not a death by SIGPIPE."""
    with user_container(world, helper, name) as c:
        rfd, wfd = os.pipe()
        os.close(rfd)
        env = ["HOME=" + world["home"], "PATH=" + M.DEFAULT_PATH, "LANG=C.UTF-8"]
        r = subprocess.run(["runuser", "-u", USER, "--", "env", "-i", *env, helper["path"],
                            str(c["pid"]), helper["dev"] + "/null0", "/dev/null0"],
                           stdin=subprocess.DEVNULL, stdout=wfd, stderr=subprocess.PIPE,
                           text=True, timeout=M.TIMEOUT)
        os.close(wfd)
        assert r.returncode == 0, r
        assert len(helper_mounts(c["pid"])) == 1
    assert c["after"].strip() == "ok", c


# ---- the device cgroup filter (--device-filter, mrun-gpu-helper --filter) ----------

NO_DRIVER = "errno=other (No such device or address)"  # ENXIO, as mrun-probe prints it

def test_device_filter_required_fails_cleanly(mrun, rootfs, name):
    """--device-filter=required that cannot be met: exit 125, one line naming the
    bpf(2) step and the errno (rootless: unprivileged BPF is off on this host), nothing
    left behind. `mrun gpu matrix` parses BPF_PROG_LOAD and the errno name."""
    r = mrun("run", "--rm", "--name", name, "--network", "none", "--device-filter", "required",
             "--device", "/dev/null", rootfs, "true")
    if M.ROOTFUL and r.rc == 0:
        pytest.skip("the rootful container got its device restriction here (a cgroup v2 leaf "
                    "with the filter, or the v1 devices controller)")
    words = ["device filter for container " + name]
    if not M.ROOTFUL:
        words += ["BPF_PROG_LOAD: EPERM", "unprivileged_bpf_disabled"]
    else:
        words += ["no cgroup"]
    M.assert_mrun_error(r, 125, words)
    assert not M.state_paths_of(name, M.state_dir()), "state left behind"


def test_device_filter_bogus_mode(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "--device-filter", "bogus", rootfs, "true")
    M.assert_mrun_error(r, 125, ["--device-filter", "bogus"])
    assert not M.state_paths_of(name, M.state_dir()), "state left behind"


def test_device_filter_state_says_why_not(mrun, rootfs, name):
    """Without a cgroup leaf of its own (this hybrid host, or --cgroups disabled) no
    filter: the state says so, and --device-filter=off says that."""
    for opts, want in ((["--cgroups", "disabled"], "none: no cgroup of its own"),
                       (["--device-filter", "off"], "none: --device-filter=off")):
        r = mrun("run", "--name", name, "--network", "none", *opts, rootfs, "true")
        M.assert_rc(r)
        listing = json.loads(mrun("list", "--format", "json").out)
        entry = next(c for c in listing if c["name"] == name)
        assert entry["device_filter"].startswith(want), entry
        M.assert_rc(mrun("delete", name))


def cgroup2_root():
    for path in ("/sys/fs/cgroup", "/sys/fs/cgroup/unified"):
        if os.path.exists(path + "/cgroup.procs") and os.path.exists(path + "/cgroup.subtree_control"):
            return path
    pytest.skip("no cgroup2 hierarchy mounted")


@contextlib.contextmanager
def moved_to_cgroup(pid, owner):
    """A fresh cgroup (owned by OWNER, as a delegated one) holding PID; removed after."""
    path = os.path.join(cgroup2_root(), f"mrun-it-filter-{os.getpid()}")
    os.mkdir(path)
    try:
        os.chown(path, owner, -1)
        with open(path + "/cgroup.procs", "w") as f:
            f.write(str(pid))
        yield path
    finally:
        # The container is gone by then (its user_container exited), or moved back.
        with contextlib.suppress(OSError):
            with open(path + "/cgroup.procs") as f:
                for p in f.read().split():
                    with open(os.path.join(os.path.dirname(path), "cgroup.procs"), "w") as up:
                        up.write(p)
        assert M.wait_until(lambda: not _rmdir_failed(path), 10), f"could not remove {path}"


def _rmdir_failed(path):
    try:
        os.rmdir(path)
        return False
    except FileNotFoundError:
        return False
    except OSError:
        return True


@rootful_setup
def test_helper_filter_attaches_and_refuses_a_second(world, helper, user, name):
    """The helper's --filter on the host kernel: the rootless container in a cgroup
    the user owns; before, the bound 0666 node of a driverless major opens to ENXIO
    (the driver's answer); after the filter, EPERM (the cgroup's); a second --filter on
    the same cgroup is refused."""
    with user_container(world, helper, name, node="nodev0", before=NO_DRIVER) as c:
        with moved_to_cgroup(c["pid"], user.pw_uid):
            r = run_helper(world, helper, "--filter", c["pid"])
            assert r.returncode == 0, r
            assert "attached" in r.stdout, r
            r = run_helper(world, helper, "--filter", c["pid"])
            assert_refused(r, ATTACHED, ["already has a device filter"])
            open(world["x"] + "/go", "w").close()
            assert M.wait_until(lambda: os.path.exists(world["x"] + "/after"), 20)
            time.sleep(0.2)
    assert c["after"].startswith("errno=EPERM"), c


@rootful_setup
def test_helper_filter_allows_a_named_device(world, helper, user, name):
    with user_container(world, helper, name, node="nodev0", before=NO_DRIVER) as c:
        with moved_to_cgroup(c["pid"], user.pw_uid):
            r = run_helper(world, helper, "--filter", c["pid"], helper["dev"] + "/nodev0:rw")
            assert r.returncode == 0, r
            open(world["x"] + "/go", "w").close()
            assert M.wait_until(lambda: os.path.exists(world["x"] + "/after"), 20)
            time.sleep(0.2)
    assert c["after"].startswith(NO_DRIVER), c


FILTER_REFUSALS = {
    # name: (device args, cgroup owner ("user", "root", None: stay in its own), status, words)
    "device not in the policy": (["/dev/zero"], "user", NOT_ALLOWED, ["not allowed"]),
    "block device": (["blk"], "user", BLOCK, ["block device"]),
    "bad access": (["nodev0:rx"], "user", USAGE, ["rwm"]),
    "cgroup not the caller's": ([], "root", CGROUP, ["not a directory owned by uid"]),
}


@rootful_setup
@pytest.mark.parametrize("case", sorted(FILTER_REFUSALS))
def test_helper_filter_refuses(world, helper, user, name, case):
    devices, owner, status, words = FILTER_REFUSALS[case]
    devices = [d if d.startswith("/") else helper["dev"] + "/" + d for d in devices]
    with user_container(world, helper, name, node="nodev0", before=NO_DRIVER) as c:
        with moved_to_cgroup(c["pid"], user.pw_uid if owner == "user" else 0):
            r = run_helper(world, helper, "--filter", c["pid"], *devices)
            assert_refused(r, status, words)
            open(world["x"] + "/go", "w").close()
            assert M.wait_until(lambda: os.path.exists(world["x"] + "/after"), 20)
            time.sleep(0.2)
    assert c["after"].startswith(NO_DRIVER), f"no filter may be attached: {c}"


@rootful_setup
def test_helper_filter_refuses_the_root_cgroup(world, helper, name):
    """A container left in the host's root cgroup (no delegated leaf): refused."""
    with open("/proc/self/cgroup") as f:
        if "0::/\n" not in f.read():
            pytest.skip("this test runs in a cgroup of its own, not the root")
    with user_container(world, helper, name, node="nodev0", before=NO_DRIVER) as c:
        r = run_helper(world, helper, "--filter", c["pid"])
        assert_refused(r, CGROUP, ["root cgroup"])


@rootful_setup
@pytest.mark.parametrize("case", ["RLIMIT_NOFILE 6", "RLIMIT_FSIZE 0, stdout a file"])
def test_helper_filter_refuses_under_limits(world, helper, user, name, case):
    wrapper = {"RLIMIT_NOFILE 6": ["prlimit", "--nofile=6:6"],
               "RLIMIT_FSIZE 0, stdout a file": sh_wrapper(
                   'exec prlimit --fsize=0 "$@" >"$HOME/report"')}[case]
    with user_container(world, helper, name, node="nodev0", before=NO_DRIVER) as c:
        with moved_to_cgroup(c["pid"], user.pw_uid):
            r = as_user(world, *wrapper, helper["path"], "--filter", str(c["pid"]))
            assert_refused(r, LIMITS, ["RLIMIT_", "nothing done"])
            open(world["x"] + "/go", "w").close()
            assert M.wait_until(lambda: os.path.exists(world["x"] + "/after"), 20)
            time.sleep(0.2)
    assert c["after"].startswith(NO_DRIVER), f"no filter may be attached: {c}"


@contextlib.contextmanager
def user_processes_in_cgroups(world, user, count):
    """COUNT processes of USER, each in a user and mount namespace of its own (as a
    rootless container's) and in a fresh cgroup owned by USER: [(pid, cgroup, Popen)]."""
    root = cgroup2_root()
    procs, paths = [], []
    try:
        for i in range(count):
            path = os.path.join(root, f"mrun-it-bound-{os.getpid()}-{i}")
            os.mkdir(path)
            paths.append(path)
            os.chown(path, user.pw_uid, -1)
            p = as_user(world, "unshare", "-Urm", "sleep", "120", popen=True)
            procs.append((None, path, p))
            # runuser forks; the user's process is its child.
            assert M.wait_until(lambda: any(pr.ppid == p.pid and pr.comm == "sleep"
                                            for pr in M.list_procs().values()), 10)
            pid = next(pr.pid for pr in M.list_procs().values()
                       if pr.ppid == p.pid and pr.comm == "sleep")
            with open(path + "/cgroup.procs", "w") as f:
                f.write(str(pid))
            procs[-1] = (pid, path, p)
        yield procs
    finally:
        for _, _, p in procs:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(p.pid, 9)
            p.wait()
        for path in paths:
            assert M.wait_until(lambda: not _rmdir_failed(path), 10), f"could not remove {path}"


def filter_until_not_bounded(world, helper, pid, timeout=10):
    """--filter on PID, retried while the bound refuses it: a removed cgroup's program
    is freed by the kernel shortly after, not at once."""
    deadline = time.monotonic() + timeout
    while True:
        r = run_helper(world, helper, "--filter", pid)
        if r.returncode != FILTER_LIMIT or time.monotonic() > deadline:
            return r
        time.sleep(0.2)


@rootful_setup
@pytest.mark.parametrize("bound", [None, 2], ids=["default 8", "max_filters_per_user 2"])
def test_helper_filter_bound_per_user(world, helper, user, bound):
    """One user cannot make root load a program for every cgroup it owns: beyond
    max_filters_per_user (default 8) --filter is refused, counted from the programs the
    kernel holds for that uid; removing a cgroup frees its program and makes room."""
    if bound is not None:
        helper["write_policy"](f"{helper['dev']}/* user:{USER}\nmax_filters_per_user {bound}\n")
    limit = bound or 8
    with user_processes_in_cgroups(world, user, limit + 1) as procs:
        # Programs of earlier tests' removed cgroups may still be being freed.
        r = filter_until_not_bounded(world, helper, procs[0][0])
        assert r.returncode == 0, r
        for pid, _, _ in procs[1:limit]:
            r = run_helper(world, helper, "--filter", pid)
            assert r.returncode == 0, r
        r = run_helper(world, helper, "--filter", procs[limit][0])
        assert_refused(r, FILTER_LIMIT, [f"holds {limit} device filters", "max_filters_per_user"])
        # Nothing was attached there: a second try is not ATTACHED but bounded again.
        r = run_helper(world, helper, "--filter", procs[limit][0])
        assert r.returncode == FILTER_LIMIT, r
        # The first container goes away with its cgroup: its program is freed.
        _, path0, p0 = procs[0]
        os.killpg(p0.pid, 9)
        p0.wait()
        assert M.wait_until(lambda: not _rmdir_failed(path0), 10)
        r = filter_until_not_bounded(world, helper, procs[limit][0])
        assert r.returncode == 0, r


@rootful_setup
def test_helper_filter_bound_zero_turns_it_off(world, helper, user):
    helper["write_policy"](f"{helper['dev']}/* user:{USER}\nmax_filters_per_user 0\n")
    with user_processes_in_cgroups(world, user, 1) as procs:
        r = run_helper(world, helper, "--filter", procs[0][0])
        assert_refused(r, FILTER_LIMIT, ["max_filters_per_user 0"])


CAP_NET_ADMIN, CAP_SYS_ADMIN, CAP_PERFMON, CAP_BPF = 12, 21, 38, 39


@rootful_setup
def test_helper_filter_holds_only_its_capabilities(world, helper, user):
    """Least privilege, seen from outside: held at its per-user lock (root holds it
    here), the helper has nothing effective, only CAP_BPF, CAP_PERFMON, CAP_NET_ADMIN
    and CAP_SYS_ADMIN permitted, nothing inheritable or ambient; its effective uid and fsuid
    are the caller's, only the saved uid root's."""
    lockdir = "/run/mrun-gpu-helper"
    if not os.path.isdir(lockdir):
        os.mkdir(lockdir, 0o700)
    lock = os.open(f"{lockdir}/filters-{user.pw_uid}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        with user_processes_in_cgroups(world, user, 1) as procs:
            fcntl.flock(lock, fcntl.LOCK_EX)
            p = as_user(world, helper["path"], "--filter", str(procs[0][0]), popen=True)
            try:
                def waiting():
                    return next((pr.pid for pr in M.list_procs().values()
                                 if pr.comm == "mrun-gpu-helper"[:15] and pr.uid == user.pw_uid
                                 and open("/proc/locks").read().count("->") > 0), None)
                assert M.wait_until(lambda: waiting() is not None, 10), "the helper never waited"
                with open(f"/proc/{waiting()}/status") as f:
                    status = dict(line.split(":\t", 1) for line in f.read().splitlines())
                assert int(status["CapEff"], 16) == 0, status
                assert int(status["CapPrm"], 16) == (1 << CAP_BPF | 1 << CAP_PERFMON
                                                     | 1 << CAP_NET_ADMIN
                                                     | 1 << CAP_SYS_ADMIN), status
                assert int(status["CapInh"], 16) == 0 and int(status["CapAmb"], 16) == 0, status
                real, effective, saved, fs = map(int, status["Uid"].split())
                assert (real, effective, saved, fs) == (user.pw_uid, user.pw_uid, 0,
                                                        user.pw_uid), status
            finally:
                fcntl.flock(lock, fcntl.LOCK_UN)
                out, err = p.communicate(timeout=30)
            assert p.returncode == 0, (out, err)
    finally:
        os.close(lock)
