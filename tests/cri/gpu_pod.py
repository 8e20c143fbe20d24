"""A GPU pod through containerd's CRI plugin: fakegpu0 handed to a container the way a
device plugin hands a GPU to the kubelet (tests/cri/pod_test.py --gpu-dir).

containerd 1.6's CRI predates CDI (1.7's enable_cdi), so a device plugin's Allocate
answer reaches the runtime through the kubelet's CreateContainer: its DeviceSpecs as
`devices` (host_path, container_path, permissions "rw"), its Mounts as read-only
`mounts`, its Envs as `envs`. containerd turns `devices` into linux.devices (the node's
type and numbers read on the host) and an allow rule per node in
linux.resources.devices after the deny-all; the runtime makes the nodes and enforces the
rules (on cgroup v2, a BPF device program on the container's cgroup).

Checked for each runtime handler alike: the config.json containerd wrote carries the
node and its rule; the dynamic fakegpu-client, bound read-only with libfakegpu, passes
inside; /dev/fakegpu1, bound into the container as a plain file mount (as a hostPath
volume would) but not granted, exists there and cannot be opened: EPERM, the device
filter's answer, not the file mode's (EACCES); the container's cgroup has a device
program attached (bpftool, when installed); nothing is left after removal.
"""

import json
import os
import shutil
import subprocess
import uuid

import crilib
from podlib import (CG, alive, bundle_dir, kubelet_cgroup_parent, mounts_naming, pod_labels,
                    remove_cgroup_tree, remove_pod_quietly, verbose_pid)

# Where a fakegpu device plugin would put the user-space driver: the paths of mrun's
# own --gpu and of `mrun cdi generate`'s spec (src/mount/devices.hpp).
GPU_DIR = "/opt/fakegpu"
CLIENT = f"{GPU_DIR}/bin/fakegpu-client"


def device_plugin_allocation(gpu_dir):
    """What a fakegpu device plugin's Allocate answers for device 0, as the kubelet puts
    it into CreateContainer: the node and the control node read-write, libfakegpu and the
    client read-only under /opt/fakegpu, LD_LIBRARY_PATH for the library."""
    devices = [{"host_path": p, "container_path": p, "permissions": "rw"}
               for p in ("/dev/fakegpu0", "/dev/fakegpuctl")]
    mounts = [
        {"host_path": os.path.realpath(os.path.join(gpu_dir, "libfakegpu.so.1")),
         "container_path": f"{GPU_DIR}/lib/libfakegpu.so.1", "readonly": True},
        {"host_path": os.path.join(gpu_dir, "fakegpu-client"),
         "container_path": CLIENT, "readonly": True},
    ]
    envs = [{"key": "LD_LIBRARY_PATH", "value": f"{GPU_DIR}/lib"}]
    return devices, mounts, envs


def node_numbers(path):
    st = os.stat(path)
    return os.major(st.st_rdev), os.minor(st.st_rdev)


def test_only_mounts():
    """What the test adds that no device plugin would. The busybox image has no libc: the
    node's, read-only, for the dynamic client (as tests/vm/guest/gpu.sh lends it); and
    /dev/fakegpu1 bound as a plain file, present in the container but not granted."""
    libc = [{"host_path": src, "container_path": dst, "readonly": True}
            for src, dst in (("/usr/lib", "/usr/lib"), ("/usr/lib", "/lib"),
                             ("/usr/lib64", "/lib64"))]
    return libc + [{"host_path": "/dev/fakegpu1", "container_path": "/dev/fakegpu1"}]


def config_grants(config, path):
    """(the linux.devices entry for PATH, the access of an allow rule for its numbers)."""
    linux = config.get("linux", {})
    node = next((d for d in linux.get("devices", []) if d.get("path") == path), None)
    if not node:
        return None, None
    rule = next((r for r in linux.get("resources", {}).get("devices", [])
                 if r.get("allow") and r.get("type") == node.get("type") and
                 r.get("major") == node.get("major") and r.get("minor") == node.get("minor")),
                None)
    return node, rule and rule.get("access")


def run_gpu_pod(tap, cri, daemon, handler, work, capture, gpu_dir, unavailable=None):
    t = f"[{handler}] GPU pod:"
    if unavailable:
        tap.ok(f"{t} fakegpu.ko loaded in the guest", False, unavailable)
        return
    missing = [p for p in ("/dev/fakegpu0", "/dev/fakegpu1", "/dev/fakegpuctl",
                           os.path.join(gpu_dir, "libfakegpu.so.1"),
                           os.path.join(gpu_dir, "fakegpu-client")) if not os.path.exists(p)]
    if missing:
        tap.ok(f"{t} the driver's nodes (fakegpu.ko ndev=2) and the build's libfakegpu and "
               "fakegpu-client", False, "missing: " + ", ".join(missing))
        return
    uid = str(uuid.uuid4())
    name = f"gpu-{handler}"
    logs = os.path.join(work, "logs", f"default_{name}_{uid}")
    os.makedirs(logs, exist_ok=True)
    parent = kubelet_cgroup_parent(uid)
    ns = {"network": "POD", "pid": "CONTAINER", "ipc": "POD"}
    sandbox = {
        "metadata": {"name": name, "uid": uid, "namespace": "default", "attempt": 0},
        "hostname": name, "log_directory": logs,
        "labels": {"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default",
                   "io.kubernetes.pod.uid": uid},
        "linux": {"cgroup_parent": parent, "security_context": {"namespace_options": ns}},
    }
    devices, mounts, envs = device_plugin_allocation(gpu_dir)
    config = {
        "metadata": {"name": "cuda", "attempt": 0},
        "image": {"image": crilib.BUSYBOX},
        "command": ["sleep", "3600"],
        "envs": envs,
        "mounts": mounts + test_only_mounts(),
        "devices": devices,
        "labels": pod_labels("cuda", name, uid),
        "log_path": "cuda/0.log",
        "linux": {"security_context": {"namespace_options": ns}},
    }
    sandbox_id = cid = pid = None
    try:
        try:
            sandbox_id = cri.RunPodSandbox(config=sandbox,
                                           runtime_handler=handler).pod_sandbox_id
            cid = cri.CreateContainer(pod_sandbox_id=sandbox_id, config=config,
                                      sandbox_config=sandbox).container_id
            cri.StartContainer(container_id=cid)
            tap.ok(f"{t} RunPodSandbox, CreateContainer with a device plugin's devices and "
                   "mounts, StartContainer")
        except Exception as e:
            tap.ok(f"{t} RunPodSandbox, CreateContainer with a device plugin's devices and "
                   "mounts, StartContainer", False, str(e), daemon.log_tail(15))
            return
        pid = verbose_pid(cri.ContainerStatus(container_id=cid, verbose=True))

        # ---- what containerd wrote for the runtime
        path = os.path.join(bundle_dir(daemon, cid), "config.json")
        with open(path) as f:
            written = json.load(f)
        if capture:
            shutil.copy(path, os.path.join(capture, f"cri-{handler}-container-gpu.json"))
        major, minor = node_numbers("/dev/fakegpu0")
        node, access = config_grants(written, "/dev/fakegpu0")
        _, ungranted = config_grants(written, "/dev/fakegpu1")
        tap.ok(f"{t} containerd's config.json: /dev/fakegpu0 (c {major}:{minor}) in "
               f"linux.devices, allowed {access!r} after the deny-all; fakegpu1 not",
               node is not None and (node.get("type"), node.get("major"), node.get("minor")) ==
               ("c", major, minor) and access == "rw" and ungranted is None and
               written["linux"]["resources"]["devices"][0] == {"allow": False, "access": "rwm"},
               json.dumps(written.get("linux", {}).get("devices")),
               json.dumps(written.get("linux", {}).get("resources", {}).get("devices")))

        # ---- the client inside
        r = cri.ExecSync(container_id=cid, cmd=[CLIENT], timeout=120)
        out = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
        tap.ok(f"{t} fakegpu-client (dynamic, libfakegpu bound read-only) passes inside",
               r.exit_code == 0 and "ALL CHECKS PASSED" in out, f"exit {r.exit_code}", out)

        # ---- the device filter
        r = cri.ExecSync(container_id=cid, cmd=["sh", "-c", "test -c /dev/fakegpu1 && "
                                               "echo fakegpu1-present; " + CLIENT +
                                               " --device /dev/fakegpu1 --check open"],
                         timeout=60)
        out = r.stdout.decode(errors="replace") + r.stderr.decode(errors="replace")
        tap.ok(f"{t} /dev/fakegpu1, bound but not granted, is there and EPERM at open "
               "(the cgroup device filter)",
               "fakegpu1-present" in out and "FAIL open: open /dev/fakegpu1: EPERM" in out,
               f"exit {r.exit_code}", out)
        leaf = f"{CG}{parent}/{cid}"
        if shutil.which("bpftool"):
            b = subprocess.run(["bpftool", "cgroup", "show", leaf], capture_output=True,
                               text=True)
            tap.ok(f"{t} the container's cgroup {leaf} has a device program attached",
                   b.returncode == 0 and "cgroup_device" in b.stdout, b.stdout, b.stderr)
        else:
            tap.ok(f"{t} the container's cgroup has a device program # SKIP bpftool is not "
                   "installed")

        # ---- stop and remove
        cri.StopContainer(container_id=cid, timeout=5)
        cri.StopPodSandbox(pod_sandbox_id=sandbox_id)
        cri.RemovePodSandbox(pod_sandbox_id=sandbox_id)
        sandbox_id = None
        left = ([f"pid {pid}"] if alive(pid) else []) + mounts_naming(cid)
        left += [leaf] if os.path.exists(leaf) else []
        tap.ok(f"{t} stopped and removed, no process, mount or cgroup left", not left, *left)
    finally:
        remove_pod_quietly(tap, cri, sandbox_id)
        remove_cgroup_tree(parent)
