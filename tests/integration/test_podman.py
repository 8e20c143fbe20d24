"""A real engine: podman 4.3 driving mrun through the OCI verbs.

`podman --runtime mrun` with mrun registered in a containers.conf of the test's own
(CONTAINERS_CONF), a storage of its own (CONTAINERS_STORAGE_CONF: vfs under the test's
temporary directory) and an image made by `podman import` of the suite's busybox rootfs
(no registry). Every case runs with a reference runtime and with mrun, with the same
expectation. The reference is runc: crun, podman's default, refuses this hybrid host
outright ("cgroups in hybrid mode not supported"), even rootless with --cgroups disabled.
Podman drives both with its cgroupfs manager: rootful, the containers get cgroup v1
groups; rootless, podman leaves cgroups out on v1. Rootless, podman runs the runtime as
root of the user namespace it made (mrun keeps the container there, as crun does). The
network is podman's default (rootless: slirp4netns; rootful: netavark's bridge) unless a
case says otherwise. Skipped when podman is not installed.
"""

import os
import re
import shutil
import signal
import subprocess
import tarfile
import tempfile

import pytest

import mrunlib as M

PODMAN = shutil.which("podman")
IMAGE = "localhost/mrun-it-busybox"
pytestmark = pytest.mark.skipif(PODMAN is None, reason="podman is not installed "
                                "(scripts/install-deps.sh installs it)")


def _netns_mounted():
    # By mountinfo: os.path.ismount misses a bind of a directory onto itself.
    return any(m.point == "/run/netns" for m in M.host_mounts())


REFERENCE = shutil.which("runc", path=M.DEFAULT_PATH)


class Podman:
    def __init__(self, base, runtime="mrun"):
        self.base, self.runtime = base, runtime
        run = os.path.join(base, "run")
        os.makedirs(run, mode=0o700, exist_ok=True)
        conf = os.path.join(base, "containers.conf")
        storage = os.path.join(base, "storage.conf")
        with open(conf, "w") as f:
            f.write('[engine]\ncgroup_manager = "cgroupfs"\nevents_logger = "file"\n'
                    'runtime_supports_nocgroup = ["crun", "mrun"]\n'
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
        """podman --runtime RUNTIME run [--network NETWORK] ARGS...; NETWORK None for
        podman's default."""
        # Rootful podman asks for RLIMIT_NOFILE 1048576 and RLIMIT_NPROC above what it
        # leaves conmon; this machine's root lacks CAP_SYS_RESOURCE to raise a hard
        # limit (crun fails the same way): ask for less.
        net = ("--network", network) if network else ()
        return ("--runtime", self.runtime, "run", *net,
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


@pytest.fixture(params=[
    pytest.param("reference", marks=pytest.mark.skipif(
        REFERENCE is None, reason="runc is not installed")),
    "mrun",
])
def podman(rootfs, request):
    # A short base: conmon's sockets live below it, and with a unix socket path over 107
    # bytes podman waits out conmon's 20 s timeout for every container's exit.
    base = tempfile.mkdtemp(prefix="mrun-it-pm.")
    p = Podman(base, os.path.basename(REFERENCE) if request.param == "reference" else "mrun")
    tar = os.path.join(base, "busybox.tar")
    with tarfile.open(tar, "w") as t:
        t.add(rootfs, arcname=".")
    r = p("import", "-q", tar, IMAGE)
    M.assert_rc(r)
    yield p
    p.close()
    M.force_rmtree(base)


def test_podman_detached_container_runs_stops_and_is_removed(podman):
    r = podman(*podman.run_args("-d", "--name", "mrun-it-d", IMAGE, "sleep", "300"))
    M.assert_rc(r)
    try:
        r = podman("inspect", "-f", "{{.State.Status}} {{.OCIRuntime}}", "mrun-it-d")
        M.assert_rc(r)
        assert r.out.split() == ["running", podman.runtime], r
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


def test_podman_exit_codes_of_a_command_that_cannot_run(podman):
    r = podman(*podman.run_args("--rm", IMAGE, "/etc/passwd"))
    assert r.rc == 126, r
    r = podman(*podman.run_args("--rm", IMAGE, "/no/such/program"))
    assert r.rc == 127, r


def test_podman_default_network_reaches_out(podman):
    # Rootless, slirp4netns: 10.0.2.100 with its gateway 10.0.2.2, which answers ping
    # (slirp4netns's own) and DNS at 10.0.2.3; rootful, netavark's bridge and its gateway.
    r = podman(*podman.run_args("--rm", IMAGE, "sh", "-c",
                                "ip -4 -o addr show eth0 || ip -4 -o addr show tap0; "
                                "gw=$(ip route | awk '/^default/ {print $3}'); echo gw=$gw; "
                                "ping -c1 -W5 $gw >/dev/null && echo ping-ok",
                                network=None))
    M.assert_rc(r)
    assert re.search(r"inet \d+\.\d+\.\d+\.\d+/", r.out), r
    assert "ping-ok" in r.lines, r


def test_podman_user_volume_and_capabilities(podman, host_dir):
    os.chmod(host_dir, 0o777)
    r = podman(*podman.run_args("--rm", "-u", "1000:1000", "-v", f"{host_dir}:/data", IMAGE,
                                "sh", "-c", "id -u; echo hi > /data/f && cat /data/f; "
                                "grep CapEff /proc/self/status"))
    M.assert_rc(r)
    assert r.lines[:2] == ["1000", "hi"], r
    r = podman(*podman.run_args("--rm", "--cap-drop", "all", IMAGE, "grep", "CapEff",
                                "/proc/self/status"))
    M.assert_rc(r)
    assert r.out.split() == ["CapEff:", "0000000000000000"], r


def test_podman_exec_user_logs_stop_kill_and_restart(podman):
    name = "mrun-it-l"
    r = podman(*podman.run_args("-d", "--name", name, IMAGE, "sh", "-c",
                                'echo started; trap "exit 7" TERM; '
                                "while :; do sleep 0.1; done"))
    M.assert_rc(r)
    try:
        r = podman("exec", "-u", "1000", name, "id", "-u")
        assert r.out.strip() == "1000", r
        r = podman("exec", name, "sh", "-c", "exit 4")
        assert r.rc == 4, r
        assert M.wait_until(lambda: "started" in podman("logs", name).out, 10)
        M.assert_rc(podman("stop", "-t", "10", name))
        r = podman("inspect", "-f", "{{.State.ExitCode}}", name)
        assert r.out.strip() == "7", r
        M.assert_rc(podman("restart", name))
        r = podman("inspect", "-f", "{{.State.Status}}", name)
        assert r.out.strip() == "running", r
        M.assert_rc(podman("kill", name))
        r = podman("wait", name)
        assert r.out.strip() == "137", r
    finally:
        podman("rm", "-f", "-t", "0", name)


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


def test_podman_cgroups_disabled(podman):
    # `--cgroups disabled` makes podman call the runtime with --cgroup-manager disabled,
    # which only runtimes in runtime_supports_nocgroup get (crun and mrun, not runc).
    if podman.runtime != "mrun":
        pytest.skip("runc does not take --cgroup-manager disabled")
    r = podman(*podman.run_args("--rm", "--cgroups", "disabled", IMAGE, "sh", "-c", "exit 3"))
    assert r.rc == 3, r
