"""A real engine: containerd 1.6 driving mrun through its runc shim.

Every case runs twice, with the same expectation: `ctr run --runtime io.containerd.runc.v2
--runc-binary BINARY` with BINARY runc (/usr/sbin/runc, the reference) and mrun. ctr's
default spec is used unmodified (no --config, no spec edits): that is what a user of
containerd gets.

The daemon is Debian's containerd, started by the test itself with a config.toml, root,
state and grpc socket of its own under temporary directories (never the system service,
/var/lib/containerd or /run/containerd/containerd.sock), without the plugins ctr run does
not need (the CRI plugin would want CNI). It runs per test: the suite's leftover guard
counts every process below pytest (a subreaper, so the shims land there too), and a daemon
starts in about 0.1 s. The image is an OCI image layout the test builds from the suite's
busybox rootfs and `ctr image import`s (no registry, no network).

containerd 1.6 hard-codes /run/containerd/s (shim sockets) and /run/containerd/fifo (ctr's
fifos), and its runc shim gives the runtime `--root /run/containerd/runc/NAMESPACE`; every
test uses containerd namespaces named after the session, and removes what they leave there
and in the cgroup hierarchies (`/NAMESPACE/ID` is the cgroupsPath ctr writes).

Rootful only: rootless containerd needs rootlesskit (its own user and mount namespaces),
which this suite does not cover.
"""

import errno
import fcntl
import glob
import hashlib
import io
import itertools
import json
import os
import platform
import pty
import re
import shutil
import struct
import subprocess
import tarfile
import tempfile
import termios
import time

import pytest

import mrunlib as M

CONTAINERD = shutil.which("containerd", path=M.DEFAULT_PATH)
CTR = shutil.which("ctr", path=M.DEFAULT_PATH)
SHIM = shutil.which("containerd-shim-runc-v2", path=M.DEFAULT_PATH)
RUNC = "/usr/sbin/runc"
IMAGE = "localhost/mrun-it/busybox:latest"
# containerd's runc shim keeps the runtime's state under this root, one directory per
# containerd namespace (the runtime gets --root RUNC_ROOT/NAMESPACE).
RUNC_ROOT = "/run/containerd/runc"
CTR_TIMEOUT = 30

pytestmark = [
    pytest.mark.skipif(not M.ROOTFUL, reason="containerd runs rootful here: rootless "
                       "containerd needs rootlesskit, which this suite does not cover"),
    pytest.mark.skipif(None in (CONTAINERD, CTR, SHIM),
                       reason="containerd, ctr or containerd-shim-runc-v2 is not installed "
                       "(scripts/install-deps.sh installs Debian's containerd)"),
]


# ---- the image ----------------------------------------------------------------

def _oci_arch():
    machine = platform.machine()
    return {"x86_64": "amd64", "aarch64": "arm64", "armv7l": "arm", "i686": "386"}.get(
        machine, machine)


def oci_image_archive(rootfs, path, ref, cmd=("sh",)):
    """Writes an OCI image layout tarball at PATH: one uncompressed layer (ROOTFS), a
    config with Cmd CMD (the CRI tests' pause image has ["/pause"]), the manifest, and
    index.json naming it REF."""
    blobs = {}

    def blob(data):
        digest = "sha256:" + hashlib.sha256(data).hexdigest()
        blobs[digest] = data
        return {"digest": digest, "size": len(data)}

    def dumps(obj):
        return json.dumps(obj, sort_keys=True).encode()

    layer = io.BytesIO()
    with tarfile.open(fileobj=layer, mode="w") as t:
        t.add(rootfs, arcname=".")
    layer_desc = blob(layer.getvalue())
    arch = _oci_arch()
    config_desc = blob(dumps({
        "architecture": arch, "os": "linux",
        "config": {"Env": [f"PATH={M.DEFAULT_PATH}"], "Cmd": list(cmd)},
        "rootfs": {"type": "layers", "diff_ids": [layer_desc["digest"]]},
    }))
    manifest_desc = blob(dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "config": {"mediaType": "application/vnd.oci.image.config.v1+json", **config_desc},
        "layers": [{"mediaType": "application/vnd.oci.image.layer.v1.tar", **layer_desc}],
    }))
    index = dumps({
        "schemaVersion": 2, "mediaType": "application/vnd.oci.image.index.v1+json",
        "manifests": [{"mediaType": "application/vnd.oci.image.manifest.v1+json",
                       **manifest_desc, "platform": {"architecture": arch, "os": "linux"},
                       "annotations": {"org.opencontainers.image.ref.name": ref}}],
    })
    with tarfile.open(path, "w") as t:
        def add(name, data):
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, int(time.time())
            t.addfile(info, io.BytesIO(data))
        add("oci-layout", b'{"imageLayoutVersion": "1.0.0"}')
        add("index.json", index)
        for digest, data in blobs.items():
            add("blobs/sha256/" + digest.split(":", 1)[1], data)


@pytest.fixture(scope="session")
def image_archive(rootfs, tmp_path_factory):
    path = str(tmp_path_factory.mktemp("containerd-image") / "busybox-oci.tar")
    oci_image_archive(rootfs, path, IMAGE)
    return path


# ---- the daemon and its client ------------------------------------------------

CONFIG = """\
version = 2
root = "{root}"
state = "{state}"
# Only what `ctr run` needs: no CRI (it would want CNI and a pause image), no
# snapshotters this host cannot use, no /opt/containerd (opt), no restart monitor.
disabled_plugins = [
  "io.containerd.grpc.v1.cri",
  "io.containerd.internal.v1.opt",
  "io.containerd.internal.v1.restart",
  "io.containerd.snapshotter.v1.aufs",
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.zfs",
]

[grpc]
  address = "{address}"

[ttrpc]
  address = "{address}.ttrpc"
"""


class Containerd:
    """containerd --config BASE/config.toml, root and state under BASE, its sockets in
    SOCKDIR (short: a unix socket path has at most 107 bytes)."""

    def __init__(self, base, sockdir, image_archive):
        self.base, self.sockdir, self.image_archive = base, sockdir, image_archive
        self.root = os.path.join(base, "root")
        self.state = os.path.join(base, "state")
        self.address = os.path.join(sockdir, "containerd.sock")
        self.env = M.base_env()
        self.namespaces = []
        self.container_ids = set()  # every id a ctr run was given
        config = os.path.join(base, "config.toml")
        with open(config, "w") as f:
            f.write(CONFIG.format(root=self.root, state=self.state, address=self.address))
        self.log_path = os.path.join(base, "containerd.log")
        with open(self.log_path, "w") as log:
            self.proc = subprocess.Popen([CONTAINERD, "--config", config],
                                         stdin=subprocess.DEVNULL, stdout=log,
                                         stderr=subprocess.STDOUT, env=self.env,
                                         start_new_session=True)
        if not M.wait_until(self._ready, 20, 0.05):
            self.stop()
            pytest.fail(f"containerd did not come up within 20s:\n{self.log_tail()}",
                        pytrace=False)

    def _ready(self):
        if self.proc.poll() is not None:
            pytest.fail(f"containerd exited {self.proc.returncode}:\n{self.log_tail()}",
                        pytrace=False)
        return os.path.exists(self.address) and self.ctr(None, "version").rc == 0

    def log_tail(self, lines=30):
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    def argv(self, ns, *args):
        return [CTR, "-a", self.address, *(["-n", ns] if ns else []), *map(str, args)]

    def ctr(self, ns, *args, timeout=CTR_TIMEOUT, input=None):
        return M.run_command(self.argv(ns, *args), self.env, timeout, input=input, what="ctr")

    def client(self, ns, runtime):
        """A Ctr for namespace NS (the image imported there) running RUNTIME."""
        self.namespaces.append(ns)
        r = self.ctr(ns, "image", "import", "--all-platforms", self.image_archive, timeout=60)
        assert r.rc == 0, f"ctr image import failed:\n{r!r}\n--- containerd log ---\n" \
                          f"{self.log_tail()}"
        return Ctr(self, ns, runtime)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def close(self):
        """Removes every task and container the test left (as `ctr` would), stops the
        daemon, removes what the namespaces left under RUNC_ROOT and in the cgroup
        hierarchies; returns what could not be removed that way. Shim and container
        processes that outlive it are the leftover guard's to report."""
        problems = []
        try:
            for ns in self.namespaces:
                c = Ctr(self, ns, None)
                for cid in c.task_ids(check=False):
                    c("task", "kill", "-s", "SIGKILL", cid)
                    c("task", "delete", "-f", cid)
                for cid in c.container_ids(check=False):
                    c("container", "delete", cid)
                left = c.task_ids(check=False) + c.container_ids(check=False)
                if left:
                    problems.append(f"containerd namespace {ns}: could not delete {left}")
        except AssertionError as e:  # a ctr that hung
            problems.append(str(e))
        finally:
            self.stop()

        def shims():
            return [p for p in M.procs_with_arg(self.address) if p.state != "Z"]
        M.wait_until(lambda: not shims(), 5)
        for ns in self.namespaces:
            problems += _remove_runtime_root(os.path.join(RUNC_ROOT, ns), self.container_ids)
            problems += _remove_cgroups(ns)
        shutil.rmtree(self.sockdir, ignore_errors=True)
        return problems


def _remove_runtime_root(path, container_ids):
    """Removes the runtime's --root of one containerd namespace; what it still held of a
    container (a path naming its id) is a problem, whatever else it keeps is its own."""
    if not os.path.isdir(path):
        return []
    left = sorted(p for cid in container_ids for p in M.state_paths_of(cid, path))
    problems = [f"the runtime's state left under {path}: {left}"] if left else []
    subprocess.run(["rm", "-rf", "--one-file-system", path], capture_output=True, timeout=30)
    return problems


def _remove_cgroups(ns):
    """rmdir of /sys/fs/cgroup/*/NS (and what is below it), deepest first."""
    problems = []
    for top in sorted(set(os.path.realpath(p) for p in glob.glob(f"/sys/fs/cgroup/*/{ns}"))):
        for dirpath, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
            for attempt in range(20):
                try:
                    os.rmdir(dirpath)
                    break
                except FileNotFoundError:
                    break
                except OSError as e:
                    if e.errno != errno.EBUSY or attempt == 19:
                        problems.append(f"cgroup {dirpath} left: {e.strerror}")
                        break
                    time.sleep(0.1)
    return problems


class Ctr:
    """ctr -a SOCKET -n NS ..., with RUNTIME as the runc shim's binary."""

    def __init__(self, daemon, ns, runtime):
        self.daemon, self.ns, self.runtime = daemon, ns, runtime
        self._exec_ids = itertools.count(1)

    def __call__(self, *args, timeout=CTR_TIMEOUT, input=None):
        return self.daemon.ctr(self.ns, *args, timeout=timeout, input=input)

    def run_args(self, cid, *cmd, opts=()):
        self.daemon.container_ids.add(cid)
        return ["run", "--runtime", "io.containerd.runc.v2", "--runc-binary", self.runtime,
                *opts, IMAGE, cid, *cmd]

    def run(self, cid, *cmd, opts=(), timeout=CTR_TIMEOUT):
        """ctr run --rm [OPTS] IMAGE CID CMD... in the foreground."""
        return self(*self.run_args(cid, *cmd, opts=("--rm", *opts)), timeout=timeout)

    def detach(self, cid, *cmd, opts=()):
        """ctr run -d [OPTS] IMAGE CID CMD...; asserts that it started."""
        r = self(*self.run_args(cid, *cmd, opts=("-d", *opts)))
        M.assert_rc(r)
        return r

    def exec(self, cid, *cmd, opts=()):
        return self("task", "exec", "--exec-id", f"exec{next(self._exec_ids)}", *opts, cid,
                    *cmd)

    def exec_tty(self, cid, *cmd, rows=24, cols=80, timeout=CTR_TIMEOUT):
        """ctr task exec -t with ctr on a pty of ROWS x COLS: (rc, what the pty showed)."""
        argv = self.daemon.argv(self.ns, "task", "exec", "-t", "--exec-id",
                                f"exec{next(self._exec_ids)}", cid, *cmd)
        master, slave = pty.openpty()
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))
        try:
            p = subprocess.Popen(argv, stdin=slave, stdout=slave, stderr=slave,
                                 env=self.daemon.env, start_new_session=True)
        finally:
            os.close(slave)
        try:
            rc, out = M.drain_pty(master, p, timeout, "ctr task exec -t\n$ " +
                                  " ".join(map(M.shell_quote, argv)))
        finally:
            os.close(master)
        return rc, out.decode(errors="replace").replace("\r", "").replace("\0", "")

    def _table(self, *args, check=True):
        r = self(*args)
        if r.rc != 0 and not check:
            return []
        assert r.rc == 0, r
        return [line.split() for line in r.lines[1:] if line.strip()]

    def task_ids(self, check=True):
        return [row[0] for row in self._table("task", "ls", check=check)]

    def container_ids(self, check=True):
        return [row[0] for row in self._table("container", "ls", check=check)]

    def task_status(self, cid):
        for row in self._table("task", "ls"):
            if row[0] == cid:
                return row[2]
        return None

    def task_pid(self, cid):
        for row in self._table("task", "ls"):
            if row[0] == cid:
                return int(row[1])
        return None

    def wait_stopped(self, cid, timeout=10):
        return M.wait_until(lambda: self.task_status(cid) in ("STOPPED", None), timeout, 0.1)

    def remove(self, cid):
        """SIGKILL, wait, ctr task delete, ctr container delete: what a finally does
        (nothing asserted)."""
        self("task", "kill", "-s", "SIGKILL", cid)
        self.wait_stopped(cid)
        self("task", "delete", cid)
        self("container", "delete", cid)


RUNTIMES = {"runc": RUNC, "mrun": M.MRUN}


@pytest.fixture(params=[
    pytest.param("runc", marks=pytest.mark.skipif(not os.access(RUNC, os.X_OK),
                                                  reason=f"{RUNC} is not installed")),
    "mrun",
])
def runtime(request):
    return RUNTIMES[request.param]


@pytest.fixture
def containerd(image_archive, tmp_path):
    base = tmp_path / "containerd"
    base.mkdir()
    sockdir = tempfile.mkdtemp(prefix="mrun-it-ctrd.")
    daemon = Containerd(str(base), sockdir, image_archive)
    yield daemon
    problems = daemon.close()
    if problems:
        pytest.fail("[rootful] after the test: " + "\n".join(problems), pytrace=False)


@pytest.fixture
def ctr(containerd, runtime, names):
    """A containerd namespace of this test's own with the image in it."""
    return containerd.client(names(), runtime)


def _procs_naming(word):
    """Command lines of live processes with WORD as one argument (a shim's -id WORD)."""
    return [p.cmdline for p in M.list_procs().values() if word in p.cmdline and p.state != "Z"]


def _host_interfaces():
    with open("/proc/net/dev") as f:
        return sorted(line.split(":")[0].strip() for line in f.readlines()[2:])


# ---- foreground runs ------------------------------------------------------------

def test_ctr_run_passes_the_exit_status(ctr, name):
    r = ctr.run(name, "sh", "-c", "exit 3")
    assert r.rc == 3, r
    assert name not in ctr.container_ids(), r


def test_ctr_run_stdout_and_stderr_reach_ctr(ctr, name):
    r = ctr.run(name, "sh", "-c", "echo out from the container; echo err from it >&2")
    M.assert_rc(r)
    assert "out from the container" in r.out, r
    assert "err from it" in r.err, r


def test_ctr_run_sets_home_from_the_image_passwd(ctr, name):
    # ctr's spec has no HOME; runc sets it from the rootfs's passwd entry of uid 0.
    r = ctr.run(name, "sh", "-c", 'echo "HOME=$HOME"')
    M.assert_rc(r)
    assert r.out.strip() == "HOME=/root", r


def test_ctr_run_leaves_the_hostname_when_the_spec_has_none(ctr, name):
    # A new UTS namespace but no "hostname" in the spec: it keeps the host's name.
    r = ctr.run(name, "hostname")
    M.assert_rc(r)
    assert r.out.strip() == platform.node(), r


# ---- detached tasks ---------------------------------------------------------------

def test_ctr_task_exec_with_user_and_cwd(ctr, name):
    ctr.detach(name, "sleep", "300")
    try:
        r = ctr.exec(name, "sh", "-c", "id -u; id -g; id -G; pwd",
                     opts=("--user", "1000:1000", "--cwd", "/tmp"))
        M.assert_rc(r)
        assert r.lines == ["1000", "1000", "1000", "/tmp"], r
        # A user name is resolved by ctr in the image's /etc/passwd.
        r = ctr.exec(name, "sh", "-c", "id -u; id -g", opts=("--user", "nobody"))
        M.assert_rc(r)
        assert r.lines == ["65534", "65534"], r
        r = ctr.exec(name, "sh", "-c", "exit 5")
        assert r.rc == 5, r
    finally:
        ctr.remove(name)


def test_ctr_task_exec_with_a_tty(ctr, name):
    ctr.detach(name, "sleep", "300")
    try:
        # ctr sets the pty's size (its own, 24x80) through the shim once the process runs.
        rc, out = ctr.exec_tty(name, "sh", "-c",
                               "tty; [ -t 0 ] && [ -t 1 ] && echo both-ttys; i=0; "
                               'while [ "$(stty size 2>/dev/null)" != "24 80" ] && [ $i -lt 50 ]; '
                               "do sleep 0.1; i=$((i + 1)); done; stty size")
        lines = [line for line in out.splitlines() if line.strip()]
        assert rc == 0, out
        assert re.fullmatch(r"/dev/pts/\d+", lines[0]), out
        assert "both-ttys" in lines, out
        assert "24 80" in lines, out
    finally:
        ctr.remove(name)


def test_ctr_task_ps_lists_the_container_processes(ctr, name):
    ctr.detach(name, "sh", "-c", "sleep 301 & exec sleep 300")
    try:
        def ps():
            r = ctr("task", "ps", name)
            assert r.rc == 0, r
            return [int(row.split()[0]) for row in r.lines[1:] if row.strip()]
        pids = M.wait_until(lambda: len(ps()) == 2 and ps(), 10)
        assert pids, f"ctr task ps {name} never listed two processes: {ps()}"
        cmdlines = sorted(" ".join(p.cmdline) for p in M.list_procs().values() if p.pid in pids)
        assert cmdlines == ["sleep 300", "sleep 301"], (pids, cmdlines)
        assert ctr.task_pid(name) in pids
    finally:
        ctr.remove(name)


def test_ctr_task_kill_sigterm_and_the_foreground_run_returns_its_status(ctr, name):
    argv = ctr.daemon.argv(ctr.ns, *ctr.run_args(
        name, "sh", "-c", 'trap "exit 7" TERM; echo ready; while :; do sleep 0.1; done',
        opts=("--rm",)))
    p = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=ctr.daemon.env, start_new_session=True)
    try:
        try:
            M.LineReader(p.stdout).wait_for(lambda line: line == "ready", 20, "the ready line")
        except AssertionError as e:
            try:
                p.wait(timeout=5)
            except subprocess.TimeoutExpired:
                raise e from None
            raise AssertionError(f"{e}\nctr run exited {p.returncode}:\n"
                                 f"{p.stderr.read().decode(errors='replace')}") from None
        r = ctr("task", "kill", name)
        M.assert_rc(r)
        rc = p.wait(timeout=20)
        assert rc == 7, (rc, p.stderr.read().decode(errors="replace"))
    finally:
        if p.poll() is None:
            ctr.remove(name)
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()
    assert name not in ctr.container_ids()


def test_ctr_task_kill_delete_and_container_delete_remove_everything(ctr, name):
    ctr.detach(name, "sleep", "300")
    try:
        pid = ctr.task_pid(name)
        assert ctr.task_status(name) == "RUNNING"
        r = ctr("task", "kill", "-s", "SIGKILL", name)
        M.assert_rc(r)
        assert ctr.wait_stopped(name), f"task {name} status {ctr.task_status(name)}"
        assert M.wait_until(lambda: not os.path.exists(f"/proc/{pid}"), 5), pid
        r = ctr("task", "delete", name)
        M.assert_rc(r)
        assert "exit code 137" in r.err, r  # containerd's report of the SIGKILL
        assert name not in ctr.task_ids(), r
        r = ctr("container", "delete", name)
        M.assert_rc(r)
        assert name not in ctr.container_ids(), r
        r = ctr("snapshot", "ls")
        assert name not in [row.split()[0] for row in r.lines[1:] if row.strip()], r
        root = os.path.join(RUNC_ROOT, ctr.ns)
        assert M.state_paths_of(name, root) == [], f"the runtime's state under {root}"
        bundle = os.path.join(ctr.daemon.state, "io.containerd.runtime.v2.task", ctr.ns, name)
        assert not os.path.exists(bundle)
        # The shim (-id NAME) exits once its last task is deleted.
        assert M.wait_until(lambda: not _procs_naming(name), 5), _procs_naming(name)
    finally:
        ctr.remove(name)


# ---- mounts and the root filesystem -------------------------------------------------

def test_ctr_run_bind_mounts_ro_and_rw(ctr, name, host_dir):
    ro = os.path.join(host_dir, "ro")
    rw = os.path.join(host_dir, "rw")
    for d in (ro, rw):
        os.mkdir(d, 0o755)
    with open(os.path.join(ro, "hello"), "w") as f:
        f.write("from the host\n")
    r = ctr.run(name, "sh", "-c",
                "cat /ro/hello; touch /ro/new; echo ro-touch=$?; "
                "echo from the container > /rw/written; echo rw-write=$?",
                opts=("--mount", f"type=bind,src={ro},dst=/ro,options=rbind:ro",
                      "--mount", f"type=bind,src={rw},dst=/rw,options=rbind:rw"))
    M.assert_rc(r)
    assert "from the host" in r.out, r
    assert "ro-touch=1" in r.out and "Read-only file system" in r.err, r
    assert "rw-write=0" in r.out, r
    assert sorted(os.listdir(ro)) == ["hello"], r
    with open(os.path.join(rw, "written")) as f:
        assert f.read() == "from the container\n", r


def test_ctr_run_read_only_rootfs(ctr, name):
    r = ctr.run(name, "sh", "-c", "touch /x; echo root-touch=$?; touch /run/x; echo run-touch=$?",
                opts=("--read-only",))
    M.assert_rc(r)
    assert "root-touch=1" in r.out and "Read-only file system" in r.err, r
    assert "run-touch=0" in r.out, r  # /run is a tmpfs of ctr's spec


def test_ctr_run_privileged_gets_the_hosts_devices(ctr, name):
    """`ctr run --privileged`: every capability, no seccomp filter, and linux.devices with
    every node of the host's /dev, block devices included (mrun refused them before),
    each made with the host's numbers, mode and owner."""
    blocks = sorted(os.path.basename(p) for p in glob.glob("/dev/*")
                    if os.path.exists(p) and os.stat(p).st_mode & 0o170000 == 0o060000)
    script = ("grep -E 'CapEff|Seccomp:' /proc/self/status; "
              "for d in /dev/*; do [ -b $d ] && stat -c 'block %n %t:%T %a %u:%g' $d; done; "
              "cat /proc/self/cgroup | head -1; true")
    r = ctr.run(name, "sh", "-c", script, opts=("--privileged",))
    M.assert_rc(r)
    assert "Seccomp:\t0" in r.out, r
    inside = {line.split()[1]: line for line in r.lines if line.startswith("block ")}
    assert blocks, "this host has no block device in /dev to check with"
    for b in blocks:
        st = os.stat(f"/dev/{b}")
        want = (f"block /dev/{b} {os.major(st.st_rdev):x}:{os.minor(st.st_rdev):x} "
                f"{st.st_mode & 0o7777:o} {st.st_uid}:{st.st_gid}")
        assert inside.get(f"/dev/{b}") == want, f"{b}: {inside.get(f'/dev/{b}')} != {want}\n{r!r}"


def test_ctr_run_writes_land_in_containerds_snapshot(ctr, name):
    ctr.detach(name, "sleep", "300")
    try:
        r = ctr.exec(name, "sh", "-c", "echo written in the container > /written-by-test")
        M.assert_rc(r)
        r = ctr("snapshot", "mounts", "/mnt", name)
        M.assert_rc(r)
        m = re.search(r"upperdir=([^,\s]+)", r.out)
        assert m, f"no overlay upperdir in ctr snapshot mounts:\n{r!r}"
        upper = m.group(1)
        assert upper.startswith(ctr.daemon.root + "/"), upper
        path = os.path.join(upper, "written-by-test")
        with open(path) as f:
            assert f.read() == "written in the container\n"
        # The snapshot, not the task, holds it: still there once the task is gone.
        r = ctr("task", "kill", "-s", "SIGKILL", name)
        M.assert_rc(r)
        assert ctr.wait_stopped(name)
        M.assert_rc(ctr("task", "delete", name))
        assert os.path.exists(path), path
    finally:
        ctr.remove(name)


# ---- namespaces ---------------------------------------------------------------------------

def test_ctr_run_net_host_sees_the_host_interfaces(ctr, name, names):
    r = ctr.run(name, "sh", "-c", "readlink /proc/self/ns/net; cat /proc/net/dev",
                opts=("--net-host",))
    M.assert_rc(r)
    assert r.lines[0] == os.readlink("/proc/self/ns/net"), r
    inside = sorted(line.split(":")[0].strip() for line in r.lines[3:])
    assert inside == _host_interfaces(), r
    # Without it: a network namespace of its own, with lo only.
    r = ctr.run(names(), "sh", "-c", "readlink /proc/self/ns/net; cat /proc/net/dev")
    M.assert_rc(r)
    assert r.lines[0] != os.readlink("/proc/self/ns/net"), r
    assert [line.split(":")[0].strip() for line in r.lines[3:]] == ["lo"], r


def test_ctr_run_with_ns_joins_a_network_namespace(ctr, name):
    holder = subprocess.Popen(["unshare", "-n", "sleep", "300"], stdin=subprocess.DEVNULL,
                              start_new_session=True)
    try:
        path = f"/proc/{holder.pid}/ns/net"
        assert M.wait_until(lambda: os.readlink(path) != os.readlink("/proc/self/ns/net"), 5)
        r = ctr.run(name, "readlink", "/proc/self/ns/net", opts=("--with-ns", f"network:{path}"))
        M.assert_rc(r)
        assert r.out.strip() == os.readlink(path), r
    finally:
        holder.kill()
        holder.wait()


def test_same_container_id_in_two_containerd_namespaces_stays_isolated(containerd, runtime,
                                                                       names, name):
    a = containerd.client(names(), runtime)
    b = containerd.client(names(), runtime)
    a.detach(name, "sleep", "300")
    try:
        b.detach(name, "sleep", "300")
        try:
            M.assert_rc(a.exec(name, "sh", "-c", "echo a > /only-in-a"))
            M.assert_rc(b.exec(name, "sh", "-c", "echo b > /only-in-b"))
            r = b.exec(name, "sh", "-c", "test -e /only-in-a && echo SHARED || echo isolated")
            M.assert_rc(r)
            assert r.out.strip() == "isolated", r
            a.remove(name)
            assert name not in a.container_ids()
            assert b.task_status(name) == "RUNNING", b("task", "ls")
            r = b.exec(name, "cat", "/only-in-b")
            M.assert_rc(r)
            assert r.out == "b\n", r
        finally:
            b.remove(name)
    finally:
        a.remove(name)
