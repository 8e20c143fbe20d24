"""A real image builder: buildah 1.28 running its RUN steps and `buildah run` on mrun.

`buildah bud` and `buildah run` with `--runtime`, the default isolation (oci): buildah
writes an OCI bundle under /var/tmp and calls the runtime's create, start, state and
delete (runc's verbs), as every image build on a CI machine does. mrun is registered by
name in a containers.conf of the test module's own (CONTAINERS_CONF), with a storage of
its own (CONTAINERS_STORAGE_CONF: vfs under a short temporary directory) and an image made
from the suite's busybox rootfs with `buildah from scratch` + `buildah add` of a tar (no
registry, no network). Every case runs with runc and with mrun, with the same expectation.
Rootless, buildah re-executes itself in a user namespace of its own (the user's
subordinate ids) and runs the runtime there as its root; its default network is
slirp4netns. Rootful, the default network is netavark's bridge. Skipped when buildah is
not installed.
"""

import os
import shutil
import subprocess
import tarfile
import tempfile

import pytest

import mrunlib as M

BUILDAH = shutil.which("buildah", path=M.DEFAULT_PATH)
RUNC = shutil.which("runc", path=M.DEFAULT_PATH)
IMAGE = "localhost/mrun-it-ba-busybox"
pytestmark = pytest.mark.skipif(BUILDAH is None, reason="buildah is not installed "
                                "(scripts/install-deps.sh installs it)")


class Buildah:
    """buildah with a configuration, a storage and runtime dirs of its own under BASE."""

    def __init__(self, base):
        self.base = base
        self.run_dir = os.path.join(base, "run")
        os.makedirs(self.run_dir, mode=0o700)
        conf = os.path.join(base, "containers.conf")
        storage = os.path.join(base, "storage.conf")
        with open(conf, "w") as f:
            f.write(f'[engine]\nevents_logger = "file"\n[engine.runtimes]\nmrun = ["{M.MRUN}"]\n')
        with open(storage, "w") as f:
            f.write(f'[storage]\ndriver = "vfs"\ngraphroot = "{base}/storage"\n'
                    f'runroot = "{base}/runroot"\n')
        self.env = M.base_env(HOME=base, XDG_RUNTIME_DIR=self.run_dir,
                              XDG_CONFIG_HOME=base + "/config", XDG_DATA_HOME=base + "/data",
                              CONTAINERS_CONF=conf, CONTAINERS_STORAGE_CONF=storage)

    def __call__(self, *args, timeout=60):
        p = subprocess.run([BUILDAH, *args], env=self.env, capture_output=True, text=True,
                           timeout=timeout, stdin=subprocess.DEVNULL)
        return M.Result([BUILDAH, *args], p.returncode, p.stdout, p.stderr, 0)

    def state_left(self, runtime):
        """Containers of buildah's that RUNTIME still keeps state for (it must delete
        every one): entries named buildah-* in the runtime's state dir."""
        name = os.path.basename(runtime)
        root = f"/run/{name}" if M.ROOTFUL else os.path.join(self.run_dir, name)
        return [os.path.join(d, e) for d, dirs, files in os.walk(root)
                for e in dirs + files if e.startswith("buildah-")]

    def close(self):
        self("rm", "-a")
        self("rmi", "-a", "-f")  # rootless, the vfs layers belong to subordinate ids


def owned_by_root(member):
    """An image's files belong to its root, whoever made the rootfs."""
    member.uid = member.gid = 0
    member.uname = member.gname = "root"
    return member


@pytest.fixture(scope="module")
def buildah(rootfs):
    # A short base: with a unix socket path over 107 bytes below it, engines time out.
    base = tempfile.mkdtemp(prefix="mrun-it-ba.")
    b = Buildah(base)
    tar = os.path.join(base, "busybox.tar")
    with tarfile.open(tar, "w") as t:
        t.add(rootfs, arcname=".", filter=owned_by_root)
    try:
        r = b("from", "--name", "mrun-it-ba-import", "scratch")
        M.assert_rc(r)
        M.assert_rc(b("add", "-q", "mrun-it-ba-import", tar, "/"))
        M.assert_rc(b("commit", "-q", "--rm", "mrun-it-ba-import", IMAGE))
        yield b
    finally:
        b.close()
        M.force_rmtree(base)


@pytest.fixture(params=[
    pytest.param("runc", marks=pytest.mark.skipif(RUNC is None, reason="runc is not installed")),
    "mrun",
])
def runtime(request, buildah):
    """The --runtime value: runc's path, or the name mrun has in containers.conf. Fails
    the test if the runtime kept the state of a container buildah is done with."""
    value = RUNC if request.param == "runc" else "mrun"
    yield value
    assert buildah.state_left(value) == []


@pytest.fixture
def working(buildah):
    """A fresh working container of IMAGE (`buildah from`), removed afterwards."""
    r = buildah("from", "--pull=never", IMAGE)
    M.assert_rc(r)
    name = r.out.strip()
    yield name
    buildah("rm", name)


def build(buildah, runtime, tmp_path, containerfile, *args):
    ctx = tmp_path / "ctx"
    ctx.mkdir(exist_ok=True)
    (ctx / "Containerfile").write_text(containerfile)
    return buildah("bud", "--runtime", runtime, *args, str(ctx), timeout=120)


def test_buildah_bud_runs_every_step_and_commits_what_they_wrote(buildah, runtime, tmp_path):
    tag = "localhost/mrun-it-ba-built-" + os.path.basename(runtime)
    r = build(buildah, runtime, tmp_path,
              f"FROM {IMAGE}\n"
              "ARG GREETING=unset\n"
              "ENV WHO=world\n"
              "WORKDIR /work\n"
              'RUN echo "$GREETING $WHO" > greeting.txt && echo "cwd=$(pwd)"\n'
              "RUN mkdir -m 0777 /owned\n"
              "USER 1000:1000\n"
              'RUN echo "uid=$(id -u) gid=$(id -g)" && touch /owned/by-user\n',
              "--build-arg", "GREETING=hello", "-t", tag)
    M.assert_rc(r)
    assert "cwd=/work" in r.lines and "uid=1000 gid=1000" in r.lines, r
    try:
        r = buildah("from", "--name", "mrun-it-ba-check", "--pull=never", tag)
        M.assert_rc(r)
        r = buildah("run", "--runtime", runtime, "mrun-it-ba-check", "sh", "-c",
                    "cat greeting.txt; id -u; stat -c %u /owned/by-user")
        M.assert_rc(r)
        assert r.lines == ["hello world", "1000", "1000"], r  # WORKDIR and USER kept
    finally:
        buildah("rm", "mrun-it-ba-check")
        buildah("rmi", "-f", tag)


def test_buildah_bud_stops_at_a_failing_run_step(buildah, runtime, tmp_path):
    tag = "localhost/mrun-it-ba-failed"
    r = build(buildah, runtime, tmp_path,
              f"FROM {IMAGE}\nRUN echo before; exit 3\nRUN echo after\n", "-t", tag)
    assert r.rc == 3, r
    assert "before" in r.lines and "after" not in r.lines, r
    assert 'building at STEP "RUN echo before; exit 3"' in r.err, r
    assert "exit status 3" in r.err, r
    assert buildah("inspect", "--type", "image", tag).rc != 0  # nothing was committed


def test_buildah_run_passes_stdout_and_the_exit_status(buildah, runtime, working):
    r = buildah("run", "--runtime", runtime, working, "echo", "hi from", runtime)
    M.assert_rc(r)
    assert r.out == f"hi from {runtime}\n", r
    r = buildah("run", "--runtime", runtime, working, "sh", "-c", "echo partial; exit 7")
    assert r.rc == 7 and r.out == "partial\n", r


def test_buildah_run_as_another_user(buildah, runtime, working):
    r = buildah("run", "--runtime", runtime, "--user", "1000:1000", working, "id")
    M.assert_rc(r)
    assert r.out.strip() == "uid=1000 gid=1000 groups=1000", r
    r = buildah("run", "--runtime", runtime, "--user", "nobody", working, "sh", "-c",
                "id -u; touch /root/x 2>/dev/null || echo denied")
    M.assert_rc(r)
    assert r.lines == ["65534", "denied"], r


def test_buildah_run_that_cannot_exec_reports_the_runtime_error(buildah, runtime, working):
    # The runtime's create fails; buildah says so and exits 1, whatever the runtime's code.
    for program, error in (("/etc/passwd", "permission denied"),
                           ("/no/such/program", "no such file or directory")):
        r = buildah("run", "--runtime", runtime, working, program)
        assert r.rc == 1, r
        assert f"creating container for [{program}]" in r.err and error in r.err, r


def interfaces(proc_net_dev):
    return [line.split(":")[0].strip() for line in proc_net_dev.splitlines()[2:]]


def test_buildah_run_with_network_none_has_only_loopback(buildah, runtime, working):
    r = buildah("run", "--runtime", runtime, "--network", "none", working, "sh", "-c",
                "readlink /proc/self/ns/net; cat /proc/net/dev")
    M.assert_rc(r)
    assert r.lines[0] != os.readlink("/proc/self/ns/net"), r
    assert interfaces("\n".join(r.lines[1:])) == ["lo"], r


def test_buildah_run_default_network_reaches_its_gateway(buildah, runtime, working):
    # Rootless: slirp4netns's tap0 and its gateway 10.0.2.2; rootful: netavark's bridge.
    r = buildah("run", "--runtime", runtime, working, "sh", "-c",
                "gw=$(ip route | awk '/^default/ {print $3}'); "
                "ping -c1 -W5 $gw >/dev/null && echo ping-ok; cat /proc/net/dev")
    M.assert_rc(r)
    assert r.lines[0] == "ping-ok", r
    assert [i for i in interfaces("\n".join(r.lines[1:])) if i != "lo"], r


def test_buildah_run_with_bind_volumes(buildah, runtime, working, host_dir):
    with open(os.path.join(host_dir, "in"), "w") as f:
        f.write("from the host\n")
    r = buildah("run", "--runtime", runtime, "-v", f"{host_dir}:/vol", "-v",
                f"{host_dir}:/vol-ro:ro", working, "sh", "-c",
                "cat /vol/in; echo from the container > /vol/out; "
                "touch /vol-ro/x 2>/dev/null || echo ro-denied")
    M.assert_rc(r)
    assert r.lines == ["from the host", "ro-denied"], r
    with open(os.path.join(host_dir, "out")) as f:
        assert f.read() == "from the container\n"
    assert sorted(os.listdir(host_dir)) == ["in", "out"]
