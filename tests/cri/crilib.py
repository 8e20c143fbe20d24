"""A CRI client and a containerd of the test's own with its CRI plugin.

The kubelet is not packaged for Debian 12, so the tests speak CRI themselves: the
messages of tests/cri/cri_api.proto (the project's own subset of runtime.v1), compiled
at test time with grpc_tools into a descriptor set and loaded through the protobuf
descriptor API (no generated code in the tree), called over python3-grpcio.

The daemon is Debian's containerd 1.6 with a config.toml of its own: root, state and
socket under one directory, the CRI plugin with the runtime handlers `runc` (the
control), `mrun` and `crun` (bench/pod-start.py), each io.containerd.runc.v2 with its
BinaryName, a sandbox image made of the project's static pause program
(tests/probe/pause.c), and CNI from
Debian's containernetworking-plugins (bridge + host-local on a private subnet). It runs
in a network namespace of its own (unshare --net), so the bridge, the veths and the
pods' namespaces never touch the host's network; its netns mounts stay under its state.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(REPO, "tests", "integration"))

import test_containerd  # noqa: E402  (the OCI image builder the ctr tests use)

PYTHON = "/usr/bin/python3"
CNI_BIN = "/usr/lib/cni"
SUBNET = "10.88.77.0/24"
BUSYBOX = "localhost/mrun-cri/busybox:latest"
PAUSE = "localhost/mrun-cri/pause:latest"
K8S_NS = "k8s.io"  # the containerd namespace of the CRI plugin
RUNC = os.environ.get("CRI_TEST_RUNC", "/usr/sbin/runc")


def can_lower_oom_score_adj():
    """CAP_SYS_RESOURCE (bit 24) in our effective set: without it (this host's session
    root lacks it) no runtime can give the sandbox the kubelet's -998, so containerd is
    told to clamp oomScoreAdj to its own, as for a kubelet in a user namespace."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return bool(int(line.split()[1], 16) & (1 << 24))
    return False


def load_api(workdir):
    """Compiles cri_api.proto into WORKDIR/cri.pb and returns {name: message class}."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory
    out = os.path.join(workdir, "cri.pb")
    subprocess.run([PYTHON, "-m", "grpc_tools.protoc", f"-I{HERE}",
                    f"--descriptor_set_out={out}", os.path.join(HERE, "cri_api.proto")],
                   check=True, capture_output=True, cwd=workdir)
    fds = descriptor_pb2.FileDescriptorSet()
    with open(out, "rb") as f:
        fds.ParseFromString(f.read())
    pool = descriptor_pool.DescriptorPool()
    for fd in fds.file:
        pool.Add(fd)
    fdesc = pool.FindFileByName("cri_api.proto")
    classes = {}
    for name in fdesc.message_types_by_name:
        classes[name] = message_factory.MessageFactory(pool).GetPrototype(
            fdesc.message_types_by_name[name])
    return classes, fdesc.services_by_name["RuntimeService"]


class CriClient:
    """runtime.v1.RuntimeService over the daemon's unix socket. Each call takes the
    request's fields as keyword arguments (nested messages as dicts) and an optional
    _deadline in seconds (default: the client's timeout, 300), and returns the response message; a gRPC
    error raises grpc.RpcError."""

    def __init__(self, address, workdir, timeout=300):
        import grpc
        from google.protobuf import json_format
        self.grpc, self.json_format = grpc, json_format
        self.msg, service = load_api(workdir)
        self.channel = grpc.insecure_channel("unix://" + address)
        self.timeout = timeout
        self._calls = {}
        for m in service.methods:
            req = self.msg[m.input_type.name]
            resp = self.msg[m.output_type.name]
            self._calls[m.name] = (req, self.channel.unary_unary(
                f"/runtime.v1.RuntimeService/{m.name}",
                request_serializer=req.SerializeToString,
                response_deserializer=resp.FromString))

    def __getattr__(self, name):
        if name.startswith("_") or name not in self._calls:
            raise AttributeError(name)
        req_cls, stub = self._calls[name]

        # Every keyword is a field of the request (StopContainer's and ExecSync's
        # `timeout` included); the call's own deadline is _deadline.
        def call(_deadline=None, **fields):
            req = self.json_format.ParseDict(fields, req_cls(), ignore_unknown_fields=False)
            return stub(req, timeout=_deadline or self.timeout)
        return call

    def to_dict(self, message):
        return self.json_format.MessageToDict(message, preserving_proto_field_name=True)

    def close(self):
        self.channel.close()


CONFIG = """\
version = 2
root = "{root}"
state = "{state}"
disabled_plugins = [
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

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "{pause}"
  # The pods' network namespaces are bind-mounted under the state dir, not /run/netns.
  netns_mounts_under_state_dir = true
  # No AppArmor profile is loaded: neither this host nor the VM's kernel runs AppArmor.
  disable_apparmor = true
  enable_selinux = false
  restrict_oom_score_adj = {restrict_oom}
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "{runc}"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.crun.options]
        BinaryName = "/usr/bin/crun"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.mrun]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.mrun.options]
        BinaryName = "{mrun}"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "{cni_bin}"
    conf_dir = "{cni_conf}"
"""

CNI_CONFLIST = {
    "cniVersion": "0.4.0",
    "name": "mrun-cri",
    "plugins": [{
        "type": "bridge",
        "bridge": "mrun-cri0",
        "isGateway": True,
        "ipMasq": False,
        "ipam": {"type": "host-local", "ranges": [[{"subnet": SUBNET}]],
                 "routes": [{"dst": "0.0.0.0/0"}]},
    }],
}


class CriContainerd:
    """containerd with the CRI plugin, in a network namespace of its own, everything
    under BASE (sockets in a short temporary directory)."""

    def __init__(self, base, mrun, log=None):
        self.base, self.mrun = base, mrun
        self.sockdir = tempfile.mkdtemp(prefix="mrun-cri.")
        self.address = os.path.join(self.sockdir, "containerd.sock")
        self.root = os.path.join(base, "root")
        self.state = os.path.join(base, "state")
        cni_conf = os.path.join(base, "cni")
        os.makedirs(cni_conf, exist_ok=True)
        conflist = json.loads(json.dumps(CNI_CONFLIST))
        conflist["plugins"][0]["ipam"]["dataDir"] = os.path.join(base, "ipam")
        with open(os.path.join(cni_conf, "10-mrun-cri.conflist"), "w") as f:
            json.dump(conflist, f, indent=2)
        self.config = os.path.join(base, "config.toml")
        with open(self.config, "w") as f:
            f.write(CONFIG.format(root=self.root, state=self.state, address=self.address,
                                  pause=PAUSE, runc=RUNC, mrun=mrun, cni_bin=CNI_BIN,
                                  cni_conf=cni_conf,
                                  restrict_oom=str(not can_lower_oom_score_adj()).lower()))
        self.log_path = os.path.join(base, "containerd.log")
        self.log = open(self.log_path, "w")
        # unshare --net: the daemon's own network namespace, lo up (the CRI plugin's
        # streaming server listens on 127.0.0.1), then containerd itself as that pid.
        self.proc = subprocess.Popen(
            ["unshare", "--net", "--", "sh", "-c", 'ip link set lo up && exec "$@"', "sh",
             "containerd", "--config", self.config],
            stdin=subprocess.DEVNULL, stdout=self.log, stderr=subprocess.STDOUT,
            start_new_session=True)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"containerd exited {self.proc.returncode}:\n"
                                   f"{self.log_tail()}")
            if os.path.exists(self.address) and self.ctr("version").returncode == 0:
                break
            time.sleep(0.2)
        else:
            self.stop()
            raise RuntimeError(f"containerd did not come up in 60s:\n{self.log_tail()}")

    @property
    def netns(self):
        return f"/proc/{self.proc.pid}/ns/net"

    def log_tail(self, lines=30):
        with open(self.log_path, errors="replace") as f:
            return "".join(f.readlines()[-lines:])

    def ctr(self, *args, timeout=60):
        return subprocess.run(["ctr", "-a", self.address, "-n", K8S_NS, *args],
                              capture_output=True, text=True, timeout=timeout,
                              stdin=subprocess.DEVNULL)

    def import_image(self, rootfs, ref, cmd):
        tar = os.path.join(self.base, ref.rsplit("/", 1)[1].replace(":", "-") + ".tar")
        test_containerd.oci_image_archive(rootfs, tar, ref, cmd=cmd)
        r = self.ctr("image", "import", "--all-platforms", tar, timeout=120)
        if r.returncode != 0:
            raise RuntimeError(f"ctr image import {ref}: {r.stderr}")
        os.unlink(tar)

    def stop(self):
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        shutil.rmtree(self.sockdir, ignore_errors=True)


def make_images(daemon, mrun, pause_bin, workdir):
    """The busybox image (Cmd sh) and the pause image (/pause alone) in k8s.io."""
    busybox = os.path.join(workdir, "busybox-rootfs")
    subprocess.run([mrun, "rootfs", "busybox", busybox], check=True, capture_output=True)
    daemon.import_image(busybox, BUSYBOX, ["sh"])
    pause = os.path.join(workdir, "pause-rootfs")
    os.makedirs(pause)
    shutil.copy(pause_bin, os.path.join(pause, "pause"))
    os.chmod(os.path.join(pause, "pause"), 0o755)
    daemon.import_image(pause, PAUSE, ["/pause"])
