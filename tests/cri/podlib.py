"""What the CRI tests read and make on the host around a pod: TAP output, /proc and
cgroup files, the kubelet's cgroup parent, containerd's bundle directory. Shared by
tests/cri/pod_test.py's pods (the two-container pod, the GPU, host-namespace and
streaming pods)."""

import json
import os
import time

import crilib

CG = "/sys/fs/cgroup"
V2 = os.path.exists(f"{CG}/cgroup.controllers")
MIB = 1024 * 1024


class Tap:
    def __init__(self, path):
        self.f = open(path, "w")
        self.n = self.failed = 0

    def emit(self, line):
        print(line, flush=True)
        self.f.write(line + "\n")
        self.f.flush()

    def diag(self, *lines):
        for text in lines:
            for line in str(text).splitlines():
                self.emit("# " + line)

    def ok(self, name, cond=True, *diag):
        self.n += 1
        if cond:
            self.emit(f"ok {self.n} - {name}")
        else:
            self.failed += 1
            self.emit(f"not ok {self.n} - {name}")
            self.diag(*diag)
        return cond

    def finish(self):
        self.emit(f"1..{self.n}")
        self.diag(f"{self.failed} of {self.n} tests failed")
        self.f.close()
        return 1 if self.failed else 0


def readlink(path):
    try:
        return os.readlink(path)
    except OSError as e:
        return f"({e.strerror})"


def read(path):
    try:
        with open(path) as f:
            return f.read().strip()
    except OSError as e:
        return f"({e.strerror})"


def alive(pid):
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


def wait_until(cond, timeout, step=0.2):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return cond()


def kubelet_cgroup_parent(uid):
    """Makes /kubepods/burstable/pod<uid> as the kubelet's cgroupfs driver does on cgroup
    v2 (each level with the controllers enabled for its children); returns its path."""
    rel = f"/kubepods/burstable/pod{uid}"
    if V2:
        path = CG
        for part in rel.strip("/").split("/"):
            controllers = read(f"{path}/cgroup.controllers").split()
            with open(f"{path}/cgroup.subtree_control", "w") as f:
                f.write(" ".join("+" + c for c in controllers))
            path = f"{path}/{part}"
            os.makedirs(path, exist_ok=True)
        controllers = read(f"{path}/cgroup.controllers").split()
        with open(f"{path}/cgroup.subtree_control", "w") as f:
            f.write(" ".join("+" + c for c in controllers))
    return rel


def remove_cgroup_tree(rel):
    for top in ([f"{CG}{rel}"] if V2 else [f"{CG}/{h}{rel}" for h in os.listdir(CG)]):
        if not os.path.isdir(top):
            continue
        for dirpath, _, _ in sorted(os.walk(top), key=lambda w: -w[0].count("/")):
            try:
                os.rmdir(dirpath)
            except OSError:
                pass


def leaf_of(rel_parent, cid):
    return f"{CG}{rel_parent}/{cid}" if V2 else None


def bundle_dir(daemon, cid):
    return os.path.join(daemon.state, "io.containerd.runtime.v2.task", crilib.K8S_NS, cid)


def mounts_naming(word):
    with open("/proc/self/mountinfo") as f:
        return [line.strip() for line in f if word in line]


def pod_labels(container, pod, uid):
    """The labels the kubelet puts on a pod's container."""
    return {"io.kubernetes.container.name": container, "io.kubernetes.pod.name": pod,
            "io.kubernetes.pod.namespace": "default", "io.kubernetes.pod.uid": uid}


def verbose_pid(status):
    """The host pid in a verbose PodSandboxStatus or ContainerStatus answer."""
    return json.loads(status.info["info"])["pid"]


def remove_pod_quietly(tap, cri, sandbox_id):
    """A test's cleanup: StopPodSandbox and RemovePodSandbox, each failure a diagnostic."""
    if not sandbox_id:
        return
    for call in (cri.StopPodSandbox, cri.RemovePodSandbox):
        try:
            call(pod_sandbox_id=sandbox_id)
        except Exception as e:
            tap.diag(f"cleanup: {e}")
