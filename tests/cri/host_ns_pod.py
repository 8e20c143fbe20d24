"""A hostNetwork, hostPID, hostIPC pod (tests/cri/pod_test.py): namespace_options NODE
for network, pid and ipc in the sandbox's and the container's security context, as the
kubelet sends them for such a pod.

containerd then leaves those namespaces out of both config.json files (and, for the host
network, the uts namespace too), and the runtime must run the sandbox and the container
in the node's own. The node is containerd's: its network namespace is the one the test
gives the daemon (crilib.py's unshare --net, which keeps the test off the machine's real
network), its pid and ipc namespaces are the machine's (the VM guest's). Checked for each
runtime handler alike: what containerd wrote; the container's /proc/self/ns/{net,pid,
ipc} links, read inside through ExecSync, are the node's; it sees the node's interfaces
and the node's processes (containerd's own pid, the machine's PID 1); a SysV shared
memory segment made on the node is listed inside; stop and removal leave no process
(a background process an exec left included), mount, cgroup or state.
"""

import json
import os
import shutil
import subprocess
import uuid

import crilib
from podlib import (CG, V2, alive, bundle_dir, kubelet_cgroup_parent, mounts_naming, pod_labels,
                    read, readlink, remove_cgroup_tree, remove_pod_quietly, verbose_pid)

HOST = {"network": "NODE", "pid": "NODE", "ipc": "NODE"}


def namespaces_of(bundle):
    with open(os.path.join(bundle, "config.json")) as f:
        return json.load(f).get("linux", {}).get("namespaces", [])


def new_namespaces(namespaces):
    """The types of NAMESPACES the runtime must make (no path to join)."""
    return {n["type"] for n in namespaces if not n.get("path")}


def interfaces(dev_file_text):
    return sorted(line.split(":", 1)[0].strip()
                  for line in dev_file_text.splitlines()[2:] if ":" in line)


def run_host_ns_pod(tap, cri, daemon, handler, work, capture):
    t = f"[{handler}] hostNetwork/hostPID/hostIPC pod:"
    uid = str(uuid.uuid4())
    name = f"hostns-{handler}"
    logs = os.path.join(work, "logs", f"default_{name}_{uid}")
    os.makedirs(logs, exist_ok=True)
    parent = kubelet_cgroup_parent(uid)
    sandbox = {
        "metadata": {"name": name, "uid": uid, "namespace": "default", "attempt": 0},
        # No hostname: the kubelet sends none for a hostNetwork pod (the node's is kept;
        # containerd would put it into a spec without a uts namespace).
        "log_directory": logs,
        "labels": {"io.kubernetes.pod.name": name, "io.kubernetes.pod.namespace": "default",
                   "io.kubernetes.pod.uid": uid},
        "linux": {"cgroup_parent": parent,
                  "security_context": {"namespace_options": HOST}},
    }
    config = {
        "metadata": {"name": "agent", "attempt": 0},
        "image": {"image": crilib.BUSYBOX},
        "command": ["sleep", "3600"],
        "labels": pod_labels("agent", name, uid),
        "log_path": "agent/0.log",
        "linux": {"security_context": {"namespace_options": HOST}},
    }
    sandbox_id = cid = None
    pids = []
    shm = None
    try:
        try:
            sandbox_id = cri.RunPodSandbox(config=sandbox,
                                           runtime_handler=handler).pod_sandbox_id
            cid = cri.CreateContainer(pod_sandbox_id=sandbox_id, config=config,
                                      sandbox_config=sandbox).container_id
            cri.StartContainer(container_id=cid)
            tap.ok(f"{t} RunPodSandbox, CreateContainer, StartContainer")
        except Exception as e:
            tap.ok(f"{t} RunPodSandbox, CreateContainer, StartContainer", False, str(e),
                   daemon.log_tail(15))
            return
        spid = verbose_pid(cri.PodSandboxStatus(pod_sandbox_id=sandbox_id, verbose=True))
        pid = verbose_pid(cri.ContainerStatus(container_id=cid, verbose=True))
        pids = [spid, pid]

        # ---- what containerd wrote: no network, pid or ipc namespace in either
        written = {"sandbox": namespaces_of(bundle_dir(daemon, sandbox_id)),
                   "container": namespaces_of(bundle_dir(daemon, cid))}
        if capture:
            for what, i in (("sandbox", sandbox_id), ("container", cid)):
                shutil.copy(os.path.join(bundle_dir(daemon, i), "config.json"),
                            os.path.join(capture, f"cri-{handler}-hostns-{what}.json"))
        # containerd 1.6 leaves them out of the sandbox's, and the container joins the
        # sandbox's by path (/proc/SANDBOX/ns/*, the node's) as in any pod.
        sandbox_types = {n["type"] for n in written["sandbox"]}
        tap.ok(f"{t} containerd's config.json: the sandbox has no network, pid or ipc "
               f"namespace ({sorted(sandbox_types)}), the container joins the sandbox's",
               not {"network", "pid", "ipc"} & sandbox_types and
               not {"network", "pid", "ipc"} & new_namespaces(written["container"]),
               json.dumps(written))

        # ---- the node's namespaces, read inside
        node = {"net": readlink(daemon.netns), "pid": readlink("/proc/self/ns/pid"),
                "ipc": readlink("/proc/self/ns/ipc")}
        r = cri.ExecSync(container_id=cid, cmd=["sh", "-c", "for n in net pid ipc; do "
                                                "readlink /proc/self/ns/$n; done"],
                         timeout=30)
        inside = dict(zip(("net", "pid", "ipc"), r.stdout.decode().split()))
        on_host = {ns: readlink(f"/proc/{pid}/ns/{ns}") for ns in node}
        tap.ok(f"{t} the container's net, pid and ipc namespaces are the node's, read "
               f"inside and on the node ({node})",
               r.exit_code == 0 and inside == node and on_host == node,
               f"inside {inside}", f"on the node {on_host}", r.stderr.decode())

        # ---- what that means inside: the node's interfaces, processes, SysV IPC
        r = cri.ExecSync(container_id=cid, cmd=["cat", "/proc/net/dev"], timeout=30)
        got, want = interfaces(r.stdout.decode()), interfaces(read(f"/proc/{daemon.proc.pid}"
                                                                   "/net/dev"))
        tap.ok(f"{t} the container sees the node's interfaces {want}",
               r.exit_code == 0 and got == want, f"inside {got}")
        r = cri.ExecSync(container_id=cid, cmd=["sh", "-c", "cat /proc/1/comm; cat "
                                                f"/proc/{daemon.proc.pid}/comm"], timeout=30)
        want = [read("/proc/1/comm"), "containerd"]
        tap.ok(f"{t} the container sees the node's processes (PID 1 {want[0]}, "
               f"containerd as {daemon.proc.pid})",
               r.exit_code == 0 and r.stdout.decode().split() == want, r.stdout.decode(),
               r.stderr.decode())
        made = subprocess.run(["/usr/bin/python3", "-c",
                               "import ctypes; print(ctypes.CDLL(None).shmget(0, 4096, "
                               "0o1600))"], capture_output=True, text=True)
        shm = made.stdout.strip()
        r = cri.ExecSync(container_id=cid, cmd=["cat", "/proc/sysvipc/shm"], timeout=30)
        ids = [line.split()[1] for line in r.stdout.decode().splitlines()[1:]]
        tap.ok(f"{t} a SysV shm segment made on the node ({shm}) is listed inside",
               shm.isdigit() and shm in ids, made.stderr, r.stdout.decode())

        # ---- a process an exec leaves behind: with no pid namespace of its own, nothing
        # ends it with the container's init; the shim's `kill --all` (from the runtime, on
        # every process of the container's cgroup) must
        r = cri.ExecSync(container_id=cid, cmd=["sh", "-c", "sleep 3601 </dev/null "
                                                ">/dev/null 2>&1 & echo $!"], timeout=30)
        stray = r.stdout.decode().strip()
        tap.ok(f"{t} an exec'd background sleep runs as node pid {stray}",
               stray.isdigit() and read(f"/proc/{stray}/comm") == "sleep", r.stdout.decode(),
               r.stderr.decode())
        pids += [int(stray)] if stray.isdigit() else []

        # ---- stop and remove
        ids = [sandbox_id, cid]
        cri.StopContainer(container_id=cid, timeout=5)
        cri.StopPodSandbox(pod_sandbox_id=sandbox_id)
        cri.RemovePodSandbox(pod_sandbox_id=sandbox_id)
        sandbox_id = None
        left = [f"pid {p}" for p in pids if alive(p)]
        for i in ids:
            left += mounts_naming(i)
            for path in (os.path.join("/run/containerd/runc", crilib.K8S_NS, i),
                         bundle_dir(daemon, i)):
                left += [path] if os.path.exists(path) else []
            if V2 and os.path.exists(f"{CG}{parent}/{i}"):
                left.append(f"cgroup {parent}/{i}")
        left += [c for c in daemon.ctr("container", "ls", "-q").stdout.split() if c in ids]
        tap.ok(f"{t} stopped and removed, no process, mount, cgroup or state left",
               not left, *left)
    finally:
        if shm and shm.isdigit():
            subprocess.run(["ipcrm", "-m", shm], capture_output=True)
        remove_pod_quietly(tap, cri, sandbox_id)
        remove_cgroup_tree(parent)
