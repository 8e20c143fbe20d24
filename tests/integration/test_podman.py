"""A real engine: podman 4.3 driving mrun through the OCI verbs (issue #8).

`podman --runtime mrun` with mrun registered in a containers.conf of the test's own
(CONTAINERS_CONF), a storage of its own (CONTAINERS_STORAGE_CONF: vfs under the test's
temporary directory) and an image made by `podman import` of the suite's busybox rootfs
(no registry). Every run uses --network none and --cgroups disabled: this host's
cgroup2 has no controllers, and rootless podman cannot use cgroup v1. Podman then
calls `mrun --cgroup-manager disabled create|start|state|kill|delete`; rootless, it
runs mrun as root of the user namespace it made (mrun keeps the container there, as
crun does). Both passes; skipped when podman is not installed.
"""

import os
import shutil
import signal
import subprocess
import tarfile

import pytest

import mrunlib as M

PODMAN = shutil.which("podman")
IMAGE = "localhost/mrun-it-busybox"
pytestmark = pytest.mark.skipif(PODMAN is None, reason="podman is not installed "
                                "(scripts/install-deps.sh installs it)")


def _netns_mounted():
    # By mountinfo: os.path.ismount misses a bind of a directory onto itself.
    return any(m.point == "/run/netns" for m in M.host_mounts())


class Podman:
    def __init__(self, base):
        self.base = base
        run = os.path.join(base, "run")
        os.makedirs(run, mode=0o700, exist_ok=True)
        conf = os.path.join(base, "containers.conf")
        storage = os.path.join(base, "storage.conf")
        with open(conf, "w") as f:
            f.write('[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
                    'runtime_supports_nocgroup = ["mrun"]\n'
                    f'[engine.runtimes]\nmrun = ["{M.MRUN}"]\n')
        with open(storage, "w") as f:
            f.write(f'[storage]\ndriver = "vfs"\ngraphroot = "{base}/storage"\n'
                    f'runroot = "{base}/runroot"\n')
        self.env = M.base_env(HOME=base, XDG_RUNTIME_DIR=run, XDG_CONFIG_HOME=base + "/config",
                              XDG_DATA_HOME=base + "/data", CONTAINERS_CONF=conf,
                              CONTAINERS_STORAGE_CONF=storage)

        # Rootful podman's default network (netavark) bind-mounts /run/netns onto itself,
        # shared, for the namespaces it makes, and leaves it there: podman's, not mrun's.
        self.netns_was_mounted = _netns_mounted()

    def __call__(self, *args, timeout=60):
        p = subprocess.run([PODMAN, *args], env=self.env, capture_output=True, text=True,
                           timeout=timeout)
        return M.Result([PODMAN, *args], p.returncode, p.stdout, p.stderr, 0)

    def run_args(self, *args, network="none"):
        # Rootful podman asks for RLIMIT_NOFILE 1048576 and RLIMIT_NPROC above what it
        # leaves conmon; this machine's root lacks CAP_SYS_RESOURCE to raise a hard
        # limit (crun fails the same way): ask for less.
        net = ("--network", network) if network else ()
        return ("--runtime", "mrun", "run", *net, "--cgroups", "disabled",
                "--ulimit", "nofile=1024:1024", "--ulimit", "nproc=4096:4096", *args)

    def close(self):
        self("rm", "-af", "-t", "0")
        self("system", "reset", "-f")  # the vfs layers belong to subordinate ids
        while M.ROOTFUL and not self.netns_was_mounted and _netns_mounted():
            if subprocess.run(["umount", "-l", "/run/netns"], check=False).returncode != 0:
                break
        # Rootless podman leaves a pause process holding its user namespace; it is the
        # suite's child (the suite is a subreaper) and must go before the leftover check.
        try:
            with open(os.path.join(self.base, "run/libpod/tmp/pause.pid")) as f:
                pid = int(f.read().strip())
            os.kill(pid, signal.SIGKILL)
            M.wait_until(lambda: not os.path.exists(f"/proc/{pid}") or
                         open(f"/proc/{pid}/stat").read().split()[2] == "Z", 5)
        except (OSError, ValueError):
            pass


@pytest.fixture
def podman(rootfs, tmp_path):
    base = str(tmp_path / "podman")
    os.makedirs(base, mode=0o700)
    p = Podman(base)
    tar = os.path.join(base, "busybox.tar")
    with tarfile.open(tar, "w") as t:
        t.add(rootfs, arcname=".")
    r = p("import", "-q", tar, IMAGE)
    M.assert_rc(r)
    yield p
    p.close()


def test_podman_detached_container_runs_stops_and_is_removed(podman):
    r = podman(*podman.run_args("-d", "--name", "mrun-it-d", IMAGE, "sleep", "300"))
    M.assert_rc(r)
    try:
        r = podman("inspect", "-f", "{{.State.Status}} {{.OCIRuntime}}", "mrun-it-d")
        M.assert_rc(r)
        assert r.out.split() == ["running", "mrun"], r
        r = podman("inspect", "-f", "{{.State.Pid}}", "mrun-it-d")  # from mrun's --pid-file
        M.assert_rc(r)
        with open(f"/proc/{int(r.out)}/cmdline") as f:
            assert f.read().split("\0")[:2] == ["sleep", "300"], r
        r = podman("stop", "-t", "2", "mrun-it-d")
        M.assert_rc(r)
        r = podman("inspect", "-f", "{{.State.Status}}", "mrun-it-d")
        assert r.out.strip() in ("exited", "stopped"), r
    finally:
        r = podman("rm", "-f", "mrun-it-d")
    M.assert_rc(r)
    r = podman("ps", "-aq")
    assert r.out.strip() == "", r


def test_podman_run_rm_prints_the_output(podman):
    # mrun create hands the container conmon's pipes; the exit status is the next test.
    r = podman(*podman.run_args("--rm", IMAGE, "echo", "hi from mrun"))
    assert r.out.strip() == "hi from mrun", r


def test_podman_run_passes_the_exit_status(podman):
    r = podman(*podman.run_args("--rm", IMAGE, "sh", "-c", "exit 7"))
    assert r.rc == 7, r


def test_podman_exec_into_a_running_container(podman):
    r = podman(*podman.run_args("-d", "--name", "mrun-it-x", IMAGE, "sleep", "300"))
    M.assert_rc(r)
    try:
        r = podman("exec", "mrun-it-x", "sh", "-c", "echo exec; cat /proc/1/cmdline")
        M.assert_rc(r)
        assert r.out.startswith("exec\nsleep"), r
    finally:
        podman("rm", "-f", "-t", "0", "mrun-it-x")


def test_podman_default_network_joins_the_namespace_podman_made(podman):
    # Podman's default network (rootless: slirp4netns; rootful: netavark's bridge): podman
    # makes the network namespace and passes it as linux.namespaces[].path, which mrun
    # joins; the container then has podman's interface, not only lo.
    r = podman(*podman.run_args("--rm", IMAGE, "sh", "-c",
                                "readlink /proc/self/ns/net; cat /proc/net/dev", network=None))
    M.assert_rc(r)
    lines = r.out.split("\n")
    assert lines[0] != os.readlink("/proc/self/ns/net"), r  # not the host's
    interfaces = [ln.split(":")[0].strip() for ln in lines[3:] if ":" in ln]
    assert "lo" in interfaces, r
    assert [i for i in interfaces if i != "lo"], r


def test_podman_read_only_with_its_tmpfs_mounts(podman):
    """`podman run --read-only`: the root read-only, and podman's tmpfs on /run, /tmp and
    /var/tmp with its tmpcopyup option (the image's files copied up), writable."""
    r = podman(*podman.run_args("--rm", "--read-only", IMAGE, "sh", "-c",
                                "touch /x 2>/dev/null || echo root-ro; "
                                "echo w > /tmp/t && cat /tmp/t; "
                                "grep -E ' /(run|tmp|var/tmp) ' /proc/self/mountinfo | "
                                "grep -c ' - tmpfs '"))
    M.assert_rc(r)
    assert r.lines == ["root-ro", "w", "3"], r
