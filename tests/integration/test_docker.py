"""Docker, the engine most users have: Debian's docker.io 20.10 driving mrun as an extra
runtime, every case run with runc (Docker's default runtime, the reference) and with mrun,
with the same expectation.

The daemon is configured as a user would: the default configuration plus one entry in
daemon.json's "runtimes" naming mrun (what `dockerd --add-runtime mrun=PATH` does), and
`docker run --runtime mrun`. Docker's own spec is used unmodified: its device list (a
deny-all, its allows, then a deny of /dev/fuse), its masked and read-only paths, its
prestart hook into dockerd's executable (libnetwork-setkey, which plugs the container into
the default bridge), and the lifecycle containerd's runc shim drives for Docker.

So that the daemon's bridge, iptables rules and mounts never touch the host, dockerd runs
in a mount and network namespace of its own (`unshare -m -n`, private propagation), with a
data-root, exec-root, pidfile and socket of its own under temporary directories and its
containers below a cgroup parent named after the session. It starts once per module (a
start takes a minute under the VM suite's emulation, tests/vm/docker-suite.sh), with the
image imported into it from the suite's busybox rootfs (`docker import`, no registry). The
suite's leftover guard leaves the daemon's own process tree alone (M.KEPT_DAEMONS) and
still counts what leaves it: the shims, which become children of pytest, a subreaper, must
be gone after each test. After each test its containers are removed (`docker rm -f`) and
their cgroups, below the parent, must be gone with them.

Rootless, the same cases run under rootless Docker as Docker's own dockerd-rootless.sh
starts it (rootlesskit, slirp4netns), its daemon.json naming mrun the same way; mrun then
runs as root of rootlesskit's user namespace, as runc does. The cases that need cgroups
are rootful only: rootless Docker has cgroups only through systemd's cgroup driver (on
cgroup v2 with systemd running), and ignores -m or refuses pause without it, whatever the
runtime; neither this host (hybrid) nor the VM (no systemd) has that.
"""

import glob
import json
import os
import pty
import re
import shutil
import signal
import subprocess
import sys
import tarfile
import tempfile
import time

import pytest

import mrunlib as M

DOCKERD = "/usr/sbin/dockerd" if os.access("/usr/sbin/dockerd", os.X_OK) else \
    shutil.which("dockerd", path="/usr/sbin:/usr/bin")
# Debian's client, of the daemon's own version (a newer client elsewhere on PATH would
# negotiate an API the 20.10 daemon does not speak for every verb).
DOCKER = "/usr/bin/docker"
RUNC = "/usr/sbin/runc"
IMAGE = "mrun-it/busybox:latest"
# Seconds for one docker command and for dockerd to come up: more where a test may take
# longer (MRUN_IT_TEST_TIMEOUT, 300 in the VM suites, whose TCG is ten times slower).
_TEST_LIMIT = int(os.environ.get("MRUN_IT_TEST_TIMEOUT", "120"))
DOCKER_TIMEOUT = max(60, _TEST_LIMIT // 3)
DOCKERD_START_TIMEOUT = max(30, _TEST_LIMIT // 2)

pytestmark = [
    pytest.mark.skipif(DOCKERD is None or not os.access(DOCKER, os.X_OK),
                       reason="Debian's docker.io is not installed "
                       "(scripts/install-deps.sh installs it)"),
    pytest.mark.skipif(not M.ROOTFUL and None in (shutil.which("rootlesskit"),
                                                  shutil.which("slirp4netns")),
                       reason="rootless Docker needs rootlesskit and slirp4netns "
                       "(scripts/install-deps.sh installs them)"),
]
# Rootless dockerd 20.10 takes its "none" cgroup driver unless it drives systemd's
# (native.cgroupdriver=systemd, its default on a cgroup v2 host that runs systemd):
# a subtree delegated to the user without a systemd to ask does not do (the VM suite's).
needs_cgroups = pytest.mark.skipif(
    not M.ROOTFUL, reason="rootless Docker has cgroups only through systemd's cgroup driver "
    "(cgroup v2 and a running systemd); without, its 'none' driver drops -m and refuses "
    "pause with any runtime")


def _cgroup_parent():
    return f"mrun-docker-{os.getpid() % 100000}"


ROOTLESS_SCRIPT = "/usr/share/docker.io/contrib/dockerd-rootless.sh"


class Dockerd:
    """dockerd with DATA as its data-root and everything else (config, exec-root, pidfile,
    socket) under a short temporary directory. Rootful, in a mount and network namespace
    of its own; rootless, as Docker's dockerd-rootless.sh starts it (inside rootlesskit's
    user, mount and network namespaces, slirp4netns connecting them), with HOME and
    XDG_RUNTIME_DIR of its own."""

    def __init__(self, data, cgroup_parent):
        self.dir = tempfile.mkdtemp(prefix="mrun-it-dkr.")
        os.chmod(self.dir, 0o755)
        self.socket = os.path.join(self.dir, "docker.sock")
        self.pidfile = os.path.join(self.dir, "docker.pid")
        self.cgroup_parent = cgroup_parent if M.ROOTFUL else None
        self.env = M.base_env(DOCKER_HOST="unix://" + self.socket,
                              DOCKER_CONFIG=os.path.join(self.dir, "client"))
        settings = {
            "runtimes": {"mrun": {"path": M.MRUN}},
            "data-root": data,
            "exec-root": os.path.join(self.dir, "exec"),
            "pidfile": self.pidfile,
            "hosts": ["unix://" + self.socket],
            "storage-driver": "overlay2",
        }
        if M.ROOTFUL:
            settings["cgroup-parent"] = cgroup_parent
        config = os.path.join(self.dir, "daemon.json")
        with open(config, "w") as f:
            json.dump(settings, f)
        self.log_path = os.path.join(self.dir, "dockerd.log")
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen(self._command(config), stdin=subprocess.DEVNULL,
                                         stdout=log, stderr=subprocess.STDOUT,
                                         env=self._daemon_env(), start_new_session=True)
        if not M.wait_until(self._ready, DOCKERD_START_TIMEOUT, 0.1):
            self.close()
            pytest.fail(f"dockerd did not come up within {DOCKERD_START_TIMEOUT}s:\n"
                        f"{self.log_tail()}", pytrace=False)
        M.KEPT_DAEMONS.add(self.proc.pid)

    def _command(self, config):
        if M.ROOTFUL:
            return ["unshare", "-m", "-n", "--propagation", "private", "sh", "-c",
                    'ip link set lo up && exec "$0" --config-file "$1"', DOCKERD, config]
        return ["sh", ROOTLESS_SCRIPT, "--config-file", config]

    def _daemon_env(self):
        if M.ROOTFUL:
            return self.env
        xdg, home = os.path.join(self.dir, "xdg"), os.path.join(self.dir, "home")
        os.mkdir(xdg, 0o700)
        os.mkdir(home, 0o700)
        return {**self.env, "XDG_RUNTIME_DIR": xdg, "HOME": home}

    def _ready(self):
        if self.proc.poll() is not None:
            pytest.fail(f"dockerd exited {self.proc.returncode}:\n{self.log_tail()}",
                        pytrace=False)
        return os.path.exists(self.socket) and self("version").rc == 0

    def log_tail(self, lines=30):
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    def argv(self, *args):
        return [DOCKER, *map(str, args)]

    def __call__(self, *args, timeout=DOCKER_TIMEOUT, input=None):
        return M.run_command(self.argv(*args), self.env, timeout, input=input, what="docker")

    def daemon_pid(self):
        with open(self.pidfile) as f:
            return int(f.read())

    def nsenter_net(self, *argv):
        """ARGV run in the daemon's network namespace (where its bridge is); rootless,
        through rootlesskit's user namespace, which owns it."""
        userns = [] if M.ROOTFUL else ["-U", "--preserve-credentials"]
        return ["nsenter", "-t", str(self.daemon_pid()), *userns, "-n", *argv]

    def remove_containers(self):
        """Removes every container (as `docker rm -f` would); returns what could not be
        removed, and the containers' cgroups still below the parent."""
        if self.proc.poll() is not None:
            return [f"dockerd exited {self.proc.returncode}:\n{self.log_tail()}"]
        problems = []
        try:
            r = self("ps", "-aq")
            ids = r.out.split() if r.rc == 0 else []
            if ids:
                self("rm", "-f", *ids)
            left = self("ps", "-aq").out.split()
            if left:
                problems.append(f"docker rm -f could not remove {left}")
        except AssertionError as e:  # a docker command that hung
            problems.append(str(e))
        if self.cgroup_parent:
            M.wait_until(lambda: not _cgroup_leaves(self.cgroup_parent), 10)
            problems += [f"cgroup {d} left by a container"
                         for d in _cgroup_leaves(self.cgroup_parent)]
        return problems

    def close(self):
        """Removes every container, stops the daemon and removes its cgroup parent and
        directories; returns what could not be removed."""
        problems = []
        M.KEPT_DAEMONS.discard(self.proc.pid)
        if self.proc.poll() is None:
            problems += self.remove_containers()
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                problems.append("dockerd did not exit within 30s of SIGTERM")
                os.killpg(self.proc.pid, signal.SIGKILL)
                self.proc.wait()
        M.wait_until(lambda: not M.procs_with_arg(self.dir), 10)
        if self.cgroup_parent:
            problems += _remove_cgroups(self.cgroup_parent)
        M.force_rmtree(self.dir)
        return problems


def _cgroup_tops(parent):
    """PARENT in every hierarchy: /sys/fs/cgroup/PARENT (v2), /sys/fs/cgroup/*/PARENT (v1)."""
    return sorted({os.path.realpath(p) for p in
                   [f"/sys/fs/cgroup/{parent}", *glob.glob(f"/sys/fs/cgroup/*/{parent}")]
                   if os.path.isdir(p)})


def _cgroup_leaves(parent):
    """The groups below PARENT: a container's, which the runtime removes with it."""
    return [os.path.join(top, d) for top in _cgroup_tops(parent)
            for d in sorted(next(os.walk(top), (None, []))[1])]


def _remove_cgroups(parent):
    """rmdir of /sys/fs/cgroup/*/PARENT (and what is below it), deepest first: the groups
    are Docker's to create, and gone with their containers only for the runtime's leaf."""
    problems = []
    for top in _cgroup_tops(parent):
        for dirpath, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
            if dirpath != top:
                problems.append(f"cgroup {dirpath} left by a container")
            for attempt in range(20):
                try:
                    os.rmdir(dirpath)
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    if attempt == 19:
                        problems.append(f"cgroup {dirpath} left: {e.strerror}")
                        break
                    time.sleep(0.1)
    return problems


class Docker:
    """The docker client of one daemon, running containers with RUNTIME."""

    def __init__(self, daemon, runtime):
        self.daemon, self.runtime = daemon, runtime

    def __call__(self, *args, timeout=DOCKER_TIMEOUT, input=None):
        return self.daemon(*args, timeout=timeout, input=input)

    def run(self, *args, opts=(), timeout=DOCKER_TIMEOUT, input=None):
        """docker run --rm --runtime RUNTIME [OPTS] IMAGE ARGS... in the foreground."""
        return self("run", "--rm", "--runtime", self.runtime, *opts, IMAGE, *args,
                    timeout=timeout, input=input)

    def detach(self, name, *args, opts=()):
        """docker run -d --name NAME ...; asserts that it started."""
        r = self("run", "-d", "--name", name, "--runtime", self.runtime, *opts, IMAGE, *args)
        M.assert_rc(r)
        return r.out.strip()

    def inspect(self, name, template):
        r = self("inspect", "-f", template, name)
        M.assert_rc(r)
        return r.out.strip()

    def pid(self, name):
        return int(self.inspect(name, "{{.State.Pid}}"))

    def wait_exited(self, name, timeout=30):
        r = self("wait", name, timeout=timeout)
        M.assert_rc(r)
        return int(r.out.strip())

    def on_pty(self, *args, input=b"", timeout=DOCKER_TIMEOUT):
        """docker ARGS with the client on a pty (as from a terminal), INPUT typed into it:
        (rc, what the pty showed)."""
        argv = self.daemon.argv(*args)
        master, slave = pty.openpty()
        try:
            p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                 env=self.daemon.env, start_new_session=True)
        finally:
            os.close(slave)
        try:
            if input:
                time.sleep(0.5)
                os.write(master, input)
            rc, out = M.drain_pty(master, p, timeout, "docker on a pty\n$ " +
                                  " ".join(map(M.shell_quote, argv)))
        finally:
            os.close(master)
        return rc, out.decode(errors="replace").replace("\r", "")


RUNTIMES = ("runc", "mrun")


@pytest.fixture(scope="module")
def docker_daemon(rootfs, tmp_path_factory):
    """The module's dockerd, with IMAGE imported into its data-root."""
    base = tmp_path_factory.mktemp("docker")
    data = str(base / "data")
    layer = str(base / "busybox.tar")
    with tarfile.open(layer, "w") as t:
        t.add(rootfs, arcname=".")
    daemon = Dockerd(data, _cgroup_parent())
    try:
        r = daemon("import", "--change", 'CMD ["sh"]', layer, IMAGE)
        assert r.rc == 0, f"docker import failed:\n{r!r}\n--- dockerd log ---\n" \
                          f"{daemon.log_tail()}"
        yield daemon
    finally:
        problems = daemon.close()
        M.force_rmtree(data)
    assert not problems, problems


@pytest.fixture
def dockerd(docker_daemon):
    """The module's dockerd, with no container left after the test."""
    if docker_daemon.proc.poll() is not None:
        pytest.fail(f"dockerd exited {docker_daemon.proc.returncode} in an earlier test:\n"
                    f"{docker_daemon.log_tail()}", pytrace=False)
    yield docker_daemon
    problems = docker_daemon.remove_containers()
    if problems:
        pytest.fail(f"[{M.MODE}] after the test: " + "\n".join(problems), pytrace=False)


@pytest.fixture(params=[
    pytest.param("runc", marks=pytest.mark.skipif(not os.access(RUNC, os.X_OK),
                                                  reason=f"{RUNC} is not installed")),
    "mrun",
])
def docker(request, dockerd):
    return Docker(dockerd, request.param)


def _v1_memory_hierarchy():
    return os.path.isfile("/sys/fs/cgroup/memory/memory.limit_in_bytes")


def _cgroup_dir(pid, controller):
    """PID's group of CONTROLLER on the host: the v1 hierarchy's, or its v2 group."""
    with open(f"/proc/{pid}/cgroup") as f:
        lines = [line.rstrip("\n").split(":", 2) for line in f]
    for _, controllers, path in lines:
        if controller in controllers.split(","):
            return f"/sys/fs/cgroup/{controller}{path}"
    for hid, controllers, path in lines:
        if hid == "0" and controllers == "":
            return f"/sys/fs/cgroup{path}"
    raise AssertionError(f"pid {pid} has no {controller} cgroup: {lines}")


def _memory_limit(pid):
    d = _cgroup_dir(pid, "memory")
    if os.path.exists(os.path.join(d, "memory.limit_in_bytes")):
        with open(os.path.join(d, "memory.limit_in_bytes")) as f:
            return int(f.read())
    with open(os.path.join(d, "memory.max")) as f:
        value = f.read().strip()
        return None if value == "max" else int(value)


# ---- foreground runs ------------------------------------------------------------

def test_docker_run_passes_the_exit_status(docker):
    r = docker.run("sh", "-c", "echo out; echo err >&2; exit 3")
    assert r.rc == 3, r
    assert r.out == "out\n" and "err" in r.err, r


def test_docker_run_cannot_execute_and_not_found(docker):
    # Docker's own codes: 126 when the file cannot be executed, 127 when there is none.
    r = docker.run("/etc/passwd")
    assert r.rc == 126, r
    r = docker.run("/no/such/program")
    assert r.rc == 127, r


def test_docker_default_bridge_through_the_setkey_hook(docker, dockerd):
    # The default network: libnetwork's prestart hook (dockerd's own executable, by
    # /proc/PID/exe) gives eth0 an address on docker0, whose address is the gateway. (Read
    # on docker0 itself: `network inspect` leaves IPAM's Gateway empty until the daemon
    # restarts where its first start made the bridge: the module's daemon, whose fresh
    # network namespace has no docker0.)
    r = M.run_command(dockerd.nsenter_net("ip", "-4", "-o", "addr", "show", "docker0"),
                      dockerd.env, DOCKER_TIMEOUT, what="ip addr in dockerd's namespace")
    M.assert_rc(r)
    found = re.search(r"inet (\d+\.\d+\.\d+\.\d+)/", r.out)
    assert found, r
    gateway = found.group(1)
    server = subprocess.Popen(dockerd.nsenter_net(sys.executable, "-c", (
        "import socket, sys\n"
        "s = socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)\n"
        f"s.bind(({gateway!r}, 0)); s.listen(1); print(s.getsockname()[1], flush=True)\n"
        "s.settimeout(30); c, _ = s.accept(); c.sendall(b'hello from the gateway\\n')\n"
        "c.close()\n")), stdout=subprocess.PIPE, text=True, start_new_session=True)
    try:
        port = int(server.stdout.readline())
        r = docker.run("sh", "-c", "ip -4 -o addr show eth0; ping -c1 -W5 " + gateway +
                       f" >/dev/null && echo ping-ok; nc -w 5 {gateway} {port}")
        M.assert_rc(r)
        prefix = gateway.rsplit(".", 1)[0] + "."
        assert re.search(r"inet " + re.escape(prefix) + r"\d+/", r.out), r
        assert "ping-ok" in r.lines, r
        assert "hello from the gateway" in r.lines, r
        assert server.wait(timeout=10) == 0
    finally:
        if server.poll() is None:
            server.kill()
            server.wait()
        server.stdout.close()


def test_docker_network_none_and_host(docker):
    r = docker.run("sh", "-c", "ls /sys/class/net", opts=("--network", "none"))
    M.assert_rc(r)
    assert r.out.split() == ["lo"], r
    # The host network is the daemon's namespace here: its bridge is there.
    r = docker.run("sh", "-c", "ls /sys/class/net", opts=("--network", "host"))
    M.assert_rc(r)
    assert "docker0" in r.out.split(), r


def test_docker_run_as_a_user(docker):
    r = docker.run("sh", "-c", "id -u; id -g", opts=("-u", "1000:1000"))
    M.assert_rc(r)
    assert r.lines == ["1000", "1000"], r


def test_docker_hostname_and_etc_files(docker, name):
    r = docker("run", "--rm", "--name", name, "--runtime", docker.runtime,
               "--hostname", "box1", "--add-host", "gw.example:10.9.8.7", IMAGE,
               "sh", "-c", "hostname; cat /etc/hostname; grep gw.example /etc/hosts")
    M.assert_rc(r)
    assert r.lines[:2] == ["box1", "box1"], r
    assert "10.9.8.7" in r.lines[2], r


def test_docker_read_only_root_with_a_tmpfs(docker):
    r = docker.run("sh", "-c", "touch /x 2>&1; touch /scratch/y && echo scratch-ok",
                   opts=("--read-only", "--tmpfs", "/scratch"))
    M.assert_rc(r)
    assert "Read-only file system" in r.out, r
    assert "scratch-ok" in r.lines, r


def test_docker_volume_bind(docker, host_dir):
    with open(os.path.join(host_dir, "in"), "w") as f:
        f.write("from the host\n")
    r = docker.run("sh", "-c", "cat /data/in; echo from the container > /data/out",
                   opts=("-v", f"{host_dir}:/data"))
    M.assert_rc(r)
    assert r.out == "from the host\n", r
    with open(os.path.join(host_dir, "out")) as f:
        assert f.read() == "from the container\n"


def test_docker_capabilities_default_and_cap_drop_all(docker):
    # Docker's default set (14 capabilities, CAP_NET_RAW among them), and none.
    r = docker.run("sh", "-c", "grep CapEff /proc/self/status")
    M.assert_rc(r)
    assert r.out.split() == ["CapEff:", "00000000a80425fb"], r
    r = docker.run("sh", "-c", "grep CapEff /proc/self/status", opts=("--cap-drop", "ALL"))
    M.assert_rc(r)
    assert r.out.split() == ["CapEff:", "0000000000000000"], r


def test_docker_default_device_list(docker):
    # Docker's list: deny all, allow its nodes (and mknod of any), then deny /dev/fuse.
    # The allowed nodes work; /dev/fuse and nodes never allowed cannot be opened.
    r = docker.run("sh", "-c",
                   "head -c 4 /dev/zero | wc -c; echo x > /dev/null && echo null-ok; "
                   "mknod /tmp/fuse c 10 229 && cat /tmp/fuse; "
                   "mknod /tmp/mem c 1 1 && head -c 1 /tmp/mem")
    assert r.lines[:2] == ["4", "null-ok"], r
    assert re.search(r"/tmp/fuse'?: Operation not permitted", r.err), r
    assert re.search(r"/tmp/mem'?: Operation not permitted", r.err), r


def test_docker_masked_and_read_only_paths(docker):
    r = docker.run("sh", "-c", "wc -c < /proc/kcore; echo 1 > /proc/sys/kernel/domainname; "
                   "ls /sys/firmware | wc -l")
    assert r.lines[0] == "0", r
    assert "Read-only file system" in r.err, r
    assert r.lines[-1] == "0", r


def test_docker_init(docker):
    r = docker.run("sh", "-c", "cat /proc/1/cmdline | tr '\\0' ' '; echo; echo $$",
                   opts=("--init",))
    M.assert_rc(r)
    assert "docker-init" in r.lines[0], r
    assert r.lines[1] != "1", r


def test_docker_run_with_a_tty(docker):
    r = docker("run", "--rm", "-t", "--runtime", docker.runtime, IMAGE, "sh", "-c",
               "tty; stty size")
    M.assert_rc(r)
    lines = r.out.replace("\r", "").split("\n")
    assert re.fullmatch(r"/dev/pts/\d+", lines[0]), r


def test_docker_run_interactive_with_a_tty(docker):
    rc, out = docker.on_pty("run", "--rm", "-it", "--runtime", docker.runtime, IMAGE,
                            "sh", "-c", "[ -t 0 ] && echo stdin-tty; read x; "
                            "echo got-$x; exit 4", input=b"abc\n")
    assert rc == 4, out
    assert "stdin-tty" in out and "got-abc" in out, out


@needs_cgroups
def test_docker_oom_kill_with_a_memory_limit(docker, name):
    r = docker("run", "--name", name, "--runtime", docker.runtime, "-m", "32m",
               "--memory-swap", "32m", IMAGE, "sh", "-c", "tail /dev/zero")
    assert r.rc == 137, r
    assert docker.inspect(name, "{{.State.OOMKilled}}") == "true", r
    M.assert_rc(docker("rm", name))


# ---- detached containers ----------------------------------------------------------

def test_docker_exec_status_user_and_tty(docker, name):
    docker.detach(name, "sleep", "300")
    r = docker("exec", name, "sh", "-c", "exit 5")
    assert r.rc == 5, r
    r = docker("exec", "-u", "1000:1000", "-w", "/tmp", name, "sh", "-c", "id -u; pwd")
    M.assert_rc(r)
    assert r.lines == ["1000", "/tmp"], r
    r = docker("exec", "-t", name, "tty")
    M.assert_rc(r)
    assert re.fullmatch(r"/dev/pts/\d+", r.out.strip()), r
    rc, out = docker.on_pty("exec", "-it", name, "sh", "-c", "read x; echo got-$x; exit 6",
                            input=b"xyz\n")
    assert rc == 6 and "got-xyz" in out, out


def test_docker_logs(docker, name):
    docker.detach(name, "sh", "-c", "echo to stdout; echo to stderr >&2")
    assert docker.wait_exited(name) == 0
    r = docker("logs", name)
    M.assert_rc(r)
    assert r.out == "to stdout\n" and r.err == "to stderr\n", r


def test_docker_top(docker, name):
    docker.detach(name, "sh", "-c", "sleep 301 & exec sleep 300")
    if docker.runtime == "runc" and not M.ROOTFUL and \
            not os.path.exists("/sys/fs/cgroup/cgroup.controllers"):
        # runc ps lists the processes of the container's cgroup, and rootless Docker on
        # cgroup v1 gives it none (on v2 the group it starts in will do); mrun lists them
        # from its own record of the container.
        r = docker("top", name)
        assert r.rc != 0 and "unable to get all container pids" in r.err, r
        return
    r = M.wait_until(lambda: (lambda r: "sleep 301" in r.out and r)(docker("top", name)), 10)
    assert r, docker("top", name)
    assert "sleep 300" in r.out, r


def test_docker_stop_delivers_sigterm(docker, name):
    docker.detach(name, "sh", "-c", 'trap "exit 7" TERM; while :; do sleep 0.1; done')
    r = docker("stop", "-t", "20", name)
    M.assert_rc(r)
    assert docker.inspect(name, "{{.State.ExitCode}}") == "7"


def test_docker_kill_default_and_with_a_signal(docker, names):
    first, second = names(), names()
    docker.detach(first, "sleep", "300")
    M.assert_rc(docker("kill", first))
    assert docker.wait_exited(first) == 137
    docker.detach(second, "sh", "-c", 'trap "exit 9" USR1; while :; do sleep 0.1; done')
    time.sleep(0.3)
    M.assert_rc(docker("kill", "-s", "USR1", second))
    assert docker.wait_exited(second) == 9


def test_docker_restart(docker, name):
    docker.detach(name, "sleep", "300")
    before = docker.pid(name)
    M.assert_rc(docker("restart", "-t", "1", name))
    assert docker.inspect(name, "{{.State.Running}}") == "true"
    after = docker.pid(name)
    assert after != before and M.process_dead(before)
    r = docker("exec", name, "echo", "alive")
    assert r.out == "alive\n", r


def test_docker_rm_force_of_a_running_container(docker, dockerd, name):
    cid = docker.detach(name, "sleep", "300")
    pid = docker.pid(name)
    # The container's own group (v1's memory hierarchy, or its v2 group), named after
    # it below the cgroup parent, which the runtime must remove with it.
    leaf = _cgroup_dir(pid, "memory") if dockerd.cgroup_parent else None
    if leaf:
        assert f"/{dockerd.cgroup_parent}/" in leaf and cid in leaf, leaf
    M.assert_rc(docker("rm", "-f", name))
    assert M.wait_until(lambda: M.process_dead(pid), 10)
    assert docker("ps", "-aq").out.split() == []
    if leaf:
        assert M.wait_until(lambda: not os.path.exists(leaf), 10), f"{leaf} left"


def test_docker_events(docker, name):
    since = int(time.time()) - 1
    M.assert_rc(docker("run", "--name", name, "--runtime", docker.runtime, IMAGE, "true"))
    until = int(time.time()) + 1
    r = docker("events", "--since", str(since), "--until", str(until), "--filter",
               f"container={name}", "--format", "{{.Action}}")
    M.assert_rc(r)
    assert {"create", "start", "die"} <= set(r.lines), r
    M.assert_rc(docker("rm", name))


@needs_cgroups
def test_docker_pause_and_unpause(docker, name, host_dir):
    docker.detach(name, "sh", "-c", "i=0; while :; do i=$((i+1)); echo $i > /out/n; "
                  "sleep 0.05; done", opts=("-v", f"{host_dir}:/out"))

    def count():
        try:
            with open(os.path.join(host_dir, "n")) as f:
                return int(f.read() or 0)
        except (OSError, ValueError):
            return 0
    assert M.wait_until(lambda: count() > 0, 10)
    r = docker("pause", name)
    M.assert_rc(r)
    assert docker.inspect(name, "{{.State.Paused}}") == "true"
    frozen = count()
    time.sleep(0.5)
    assert count() == frozen, "the counter went on while paused"
    M.assert_rc(docker("unpause", name))
    assert M.wait_until(lambda: count() > frozen + 2, 10), "no progress after unpause"


@needs_cgroups
def test_docker_memory_limit_update_and_stats(docker, name):
    docker.detach(name, "sleep", "300", opts=("-m", "64m"))
    pid = docker.pid(name)
    assert _memory_limit(pid) == 64 << 20
    r = docker("update", "-m", "128m", "--memory-swap", "256m", name)
    M.assert_rc(r)
    assert _memory_limit(pid) == 128 << 20
    r = docker("stats", "--no-stream", "--format", "{{.MemUsage}}", name)
    M.assert_rc(r)
    usage, limit = [part.strip() for part in r.out.split("/")]
    assert limit == "128MiB", r
    assert re.fullmatch(r"[\d.]+(KiB|MiB|B)", usage) and not usage.startswith("0B"), r


@pytest.mark.skipif(not os.path.exists("/dev/fakegpu0"),
                    reason="no /dev/fakegpu0 (the module is loaded in the cgroup v2 VM)")
def test_docker_device_fakegpu(docker):
    r = docker.run("sh", "-c", "ls -l /dev/fakegpu0 && head -c 0 /dev/fakegpu0 && echo open-ok",
                   opts=("--device", "/dev/fakegpu0"))
    M.assert_rc(r)
    assert "open-ok" in r.lines, r
