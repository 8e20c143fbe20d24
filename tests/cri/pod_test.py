#!/usr/bin/python3
"""A Kubernetes pod through containerd's CRI plugin, runc as the control, then mrun.

    pod_test.py --mrun PATH --pause PATH --tap FILE [--runtimes runc,mrun]
                [--pods pod,hostns,stream] [--capture DIR] [--no-resources]
                [--workdir-base DIR]
                [--gpu-dir DIR | --gpu-unavailable REASON]

Run as root: tests/vm/guest/cri.sh in the cgroup v2 VM, and scripts/test.sh on the host
(cgroup v1 or hybrid there) in a mount and network namespace of its own, so that CNI's
bridge and iptables rules never reach the host's network.
Starts the test's own containerd with its CRI plugin (tests/cri/crilib.py) and, for
each runtime handler, makes the calls the kubelet makes for a pod, in its order, with
the configs it sends for a real pod: a pod (runAsUser 1000, fsGroup 2000,
shareProcessNamespace, seccomp RuntimeDefault) of two containers (capabilities
dropped but NET_BIND_SERVICE, readOnlyRootFilesystem, allowPrivilegeEscalation false,
the kubelet's masked and read-only /proc paths, an emptyDir, /etc/hosts and
/dev/termination-log, burstable resources), a web server and a client:

  RunPodSandbox, PodSandboxStatus, CreateContainer, StartContainer, ContainerStatus,
  ExecSync, UpdateContainerResources, ContainerStats, StopContainer, StopPodSandbox,
  RemovePodSandbox

and checks, each for runc and mrun alike: the containers share the sandbox's net, ipc,
uts and pid namespaces (read on the host from /proc), the client reaches the server on
localhost, the pause process is PID 1 of both, ExecSync's exit statuses and streams,
the security context inside, resources updated in the container's own cgroup files,
stats that are that cgroup's, the log file, and nothing left after removal (process,
mount, cgroup, runtime state). --no-resources sends no linux.resources (a BestEffort
pod without the kubelet's cpu shares). --capture copies every config.json containerd writes to DIR.
--gpu-dir (the build's src/gpu, fakegpu.ko loaded with two devices) adds a GPU pod per
runtime after its pod (tests/cri/gpu_pod.py); --gpu-unavailable makes that a failed
test saying why. Then, per runtime, a hostNetwork/hostPID/hostIPC pod
(tests/cri/host_ns_pod.py) and streaming Exec and Attach (tests/cri/stream_pod.py);
--pods picks among pod, hostns and stream.
Prints TAP; exits 1 if any test failed.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import traceback
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import crilib  # noqa: E402
import gpu_pod  # noqa: E402
import host_ns_pod  # noqa: E402
import stream_pod  # noqa: E402
from podlib import (CG, MIB, V2, Tap, alive, bundle_dir, kubelet_cgroup_parent,  # noqa: E402
                    leaf_of, mounts_naming, read, readlink, remove_cgroup_tree,
                    remove_pod_quietly, verbose_pid, wait_until)

# The kubelet's defaults for a pod's procMount "Default" (pkg/securitycontext).
MASKED = ["/proc/acpi", "/proc/kcore", "/proc/keys", "/proc/latency_stats",
          "/proc/timer_list", "/proc/timer_stats", "/proc/sched_debug", "/proc/scsi",
          "/sys/firmware"]
READONLY = ["/proc/asound", "/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys",
            "/proc/sysrq-trigger"]


class Pod:
    """One pod's lifecycle through the CRI, with the kubelet's configs."""

    def __init__(self, cri, daemon, handler, work, resources):
        self.cri, self.daemon, self.handler = cri, daemon, handler
        self.uid = str(uuid.uuid4())
        self.name = f"web-{handler}"
        self.dir = os.path.join(work, "pods", self.uid)
        self.logs = os.path.join(work, "logs", f"default_{self.name}_{self.uid}")
        self.resources = resources
        os.makedirs(self.logs, exist_ok=True)
        # An emptyDir as the kubelet makes it, group fsGroup and setgid.
        self.empty_dir = os.path.join(self.dir, "volumes/kubernetes.io~empty-dir/data")
        os.makedirs(self.empty_dir)
        os.chown(self.empty_dir, 0, 2000)
        os.chmod(self.empty_dir, 0o2777)
        self.hosts = os.path.join(self.dir, "etc-hosts")
        with open(self.hosts, "w") as f:
            f.write(f"127.0.0.1\tlocalhost\n::1\tlocalhost\n# Kubernetes-managed hosts file.\n")
        self.cgroup_parent = kubelet_cgroup_parent(self.uid)
        self.sandbox_id = None
        self.containers = {}

    def sandbox_config(self):
        return {
            "metadata": {"name": self.name, "uid": self.uid, "namespace": "default",
                         "attempt": 0},
            "hostname": self.name,
            "log_directory": self.logs,
            "dns_config": {"servers": ["10.88.77.1"],
                           "searches": ["default.svc.cluster.local", "svc.cluster.local"],
                           "options": ["ndots:5"]},
            "labels": {"io.kubernetes.pod.name": self.name,
                       "io.kubernetes.pod.namespace": "default",
                       "io.kubernetes.pod.uid": self.uid},
            "annotations": {"kubernetes.io/config.source": "api",
                            "kubernetes.io/config.seen": "2026-01-01T00:00:00Z"},
            "linux": {
                "cgroup_parent": self.cgroup_parent,
                "security_context": {
                    "namespace_options": {"network": "POD", "pid": "POD", "ipc": "POD"},
                    "run_as_user": {"value": 1000},
                    "run_as_group": {"value": 1000},
                    "supplemental_groups": [2000],
                    "seccomp": {"profile_type": "RuntimeDefault"},
                },
            },
        }

    def container_config(self, name, command, cpu_shares):
        term = os.path.join(self.dir, "containers", name, "termination-log")
        os.makedirs(os.path.dirname(term), exist_ok=True)
        open(term, "w").close()
        resources = {
            "cpu_period": 100000, "cpu_quota": 50000, "cpu_shares": cpu_shares,
            "memory_limit_in_bytes": 128 * MIB, "oom_score_adj": 968,
        }
        config = {
            "metadata": {"name": name, "attempt": 0},
            "image": {"image": crilib.BUSYBOX},
            "command": command,
            "envs": [{"key": "KUBERNETES_SERVICE_HOST", "value": "10.96.0.1"},
                     {"key": "KUBERNETES_SERVICE_PORT", "value": "443"}],
            "mounts": [
                {"container_path": "/data", "host_path": self.empty_dir},
                {"container_path": "/etc/hosts", "host_path": self.hosts},
                {"container_path": "/dev/termination-log", "host_path": term},
            ],
            "labels": {"io.kubernetes.container.name": name,
                       "io.kubernetes.pod.name": self.name,
                       "io.kubernetes.pod.namespace": "default",
                       "io.kubernetes.pod.uid": self.uid},
            "annotations": {"io.kubernetes.container.restartCount": "0",
                            "io.kubernetes.container.terminationMessagePath":
                                "/dev/termination-log"},
            "log_path": f"{name}/0.log",
            "linux": {
                "security_context": {
                    "capabilities": {"add_capabilities": ["NET_BIND_SERVICE"],
                                     "drop_capabilities": ["ALL"]},
                    "namespace_options": {"network": "POD", "pid": "POD", "ipc": "POD"},
                    "run_as_user": {"value": 1000},
                    "run_as_group": {"value": 1000},
                    "readonly_rootfs": True,
                    "supplemental_groups": [2000],
                    "no_new_privs": True,
                    "masked_paths": MASKED,
                    "readonly_paths": READONLY,
                    "seccomp": {"profile_type": "RuntimeDefault"},
                },
            },
        }
        if self.resources:
            config["linux"]["resources"] = resources
        return config

    def pid_of_sandbox(self):
        return verbose_pid(self.cri.PodSandboxStatus(pod_sandbox_id=self.sandbox_id,
                                                     verbose=True))

    def pid_of(self, cid):
        return verbose_pid(self.cri.ContainerStatus(container_id=cid, verbose=True))

    def exec(self, cid, *cmd, timeout=60):
        r = self.cri.ExecSync(container_id=cid, cmd=list(cmd), timeout=timeout)
        return r.exit_code, r.stdout.decode(errors="replace"), r.stderr.decode(errors="replace")


def update_server(cri, server):
    """The kubelet's UpdateContainerResources for the server (96Mi, 20% of a CPU, shares
    512); the error's text, "" when it worked."""
    try:
        cri.UpdateContainerResources(container_id=server, linux={
            "cpu_period": 100000, "cpu_quota": 20000, "cpu_shares": 512,
            "memory_limit_in_bytes": 96 * MIB})
        return ""
    except Exception as e:
        return str(e)


def burn_cpu(pod, server):
    """A little CPU used in the server's cgroup, so that its usage is not zero."""
    pod.exec(server, "sh", "-c", "i=0; while [ $i -lt 5000 ]; do i=$((i+1)); done", timeout=120)


def check_update_and_stats_v1(tap, t, cri, pod, server):
    """UpdateContainerResources and ContainerStats on a cgroup v1 (or hybrid) host: the
    limits in the server's own groups of the memory and cpu hierarchies, as runc writes
    them there, and its stats from those groups."""
    memory = f"{CG}/memory{pod.cgroup_parent}/{server}"
    cpu = f"{CG}/cpu{pod.cgroup_parent}/{server}"
    cpuacct = f"{CG}/cpuacct{pod.cgroup_parent}/{server}"
    before = (read(f"{memory}/memory.limit_in_bytes"), read(f"{cpu}/cpu.cfs_quota_us"),
              read(f"{cpu}/cpu.cfs_period_us"))
    tap.ok(f"{t} the server's v1 groups ({memory}, {cpu}) have its limits from CreateContainer",
           before == (str(128 * MIB), "50000", "100000"), before)
    err = update_server(cri, server)
    after = (read(f"{memory}/memory.limit_in_bytes"), read(f"{cpu}/cpu.cfs_quota_us"),
             read(f"{cpu}/cpu.shares"))
    tap.ok(f"{t} UpdateContainerResources on v1: memory.limit_in_bytes 96Mi, "
           "cpu.cfs_quota_us 20000, cpu.shares 512",
           not err and after == (str(96 * MIB), "20000", "512"), err, after)
    burn_cpu(pod, server)
    usage0 = int(read(f"{cpuacct}/cpuacct.usage"))
    stats = cri.ContainerStats(container_id=server).stats
    usage1 = int(read(f"{cpuacct}/cpuacct.usage"))
    used = stats.cpu.usage_core_nano_seconds.value
    mem = stats.memory.working_set_bytes.value
    tap.ok(f"{t} ContainerStats on v1: the server's own groups (cpu {used} ns within "
           f"[{usage0}, {usage1}], working set {mem} bytes)",
           stats.attributes.id == server and usage0 <= used <= usage1 and used > 0 and mem > 0,
           cri.to_dict(stats))


def run_pod(tap, cri, daemon, handler, work, capture, resources):
    t = f"[{handler}]"
    pod = Pod(cri, daemon, handler, work, resources)
    sandbox = pod.sandbox_config()
    ids = []
    try:
        # ---- RunPodSandbox, PodSandboxStatus
        try:
            r = cri.RunPodSandbox(config=sandbox, runtime_handler=handler)
            pod.sandbox_id = r.pod_sandbox_id
            ids.append(pod.sandbox_id)
            tap.ok(f"{t} RunPodSandbox")
        except Exception as e:  # grpc.RpcError: the daemon's message says why
            tap.ok(f"{t} RunPodSandbox", False, str(e), daemon.log_tail(15))
            return
        st = cri.PodSandboxStatus(pod_sandbox_id=pod.sandbox_id, verbose=True)
        ip = st.status.network.ip
        tap.ok(f"{t} PodSandboxStatus: SANDBOX_READY with an IP of {crilib.SUBNET} ({ip})",
               st.status.state == 0 and ip.startswith("10.88.77."), cri.to_dict(st.status))
        spid = pod.pid_of_sandbox()
        if capture:
            shutil.copy(os.path.join(bundle_dir(daemon, pod.sandbox_id), "config.json"),
                        os.path.join(capture, f"cri-{handler}-sandbox.json"))

        # ---- CreateContainer, StartContainer, ContainerStatus
        specs = {
            "server": pod.container_config("server", [
                "sh", "-c", "mkdir -p /data/www && echo hello-from-server > "
                "/data/www/index.html && echo server listening && "
                "exec httpd -f -p 8080 -h /data/www"], 256),
            "client": pod.container_config("client", ["sleep", "3600"], 102),
        }
        for name, config in specs.items():
            try:
                r = cri.CreateContainer(pod_sandbox_id=pod.sandbox_id, config=config,
                                        sandbox_config=sandbox)
                pod.containers[name] = r.container_id
                ids.append(r.container_id)
                cri.StartContainer(container_id=r.container_id)
                tap.ok(f"{t} CreateContainer and StartContainer {name}")
            except Exception as e:
                tap.ok(f"{t} CreateContainer and StartContainer {name}", False, str(e),
                       daemon.log_tail(15))
                return
            if capture:
                shutil.copy(os.path.join(bundle_dir(daemon, r.container_id), "config.json"),
                            os.path.join(capture, f"cri-{handler}-container-{name}.json"))
        server, client = pod.containers["server"], pod.containers["client"]
        states = {n: cri.ContainerStatus(container_id=c).status.state
                  for n, c in pod.containers.items()}
        tap.ok(f"{t} ContainerStatus: both CONTAINER_RUNNING", set(states.values()) == {1},
               states)
        pids = {n: pod.pid_of(c) for n, c in pod.containers.items()}

        # ---- the pod's namespaces, as the host sees them
        for ns in ("net", "ipc", "uts", "pid"):
            want = readlink(f"/proc/{spid}/ns/{ns}")
            got = {n: readlink(f"/proc/{p}/ns/{ns}") for n, p in pids.items()}
            tap.ok(f"{t} both containers are in the sandbox's {ns} namespace ({want})",
                   set(got.values()) == {want} and want != readlink(f"/proc/self/ns/{ns}"),
                   f"sandbox {want}, containers {got}, host {readlink(f'/proc/self/ns/{ns}')}")

        # ---- ExecSync: localhost, shareProcessNamespace, statuses
        body = wait_until(lambda: pod.exec(client, "wget", "-qO-",
                                           "http://127.0.0.1:8080/index.html")[1].strip(), 20, 0.5)
        tap.ok(f"{t} the client reaches the server on localhost:8080", body == "hello-from-server",
               repr(body))
        rc, out, err = pod.exec(client, "sh", "-c", "cat /proc/1/cmdline; echo; pidof httpd")
        tap.ok(f"{t} shareProcessNamespace: /pause is PID 1, the server's httpd is visible",
               rc == 0 and out.splitlines()[0].strip("\0") == "/pause" and
               out.splitlines()[1].strip().isdigit(), (rc, out, err))
        rc, out, err = pod.exec(client, "sh", "-c", "echo to-out; echo to-err >&2; exit 3")
        tap.ok(f"{t} ExecSync: exit status 3, stdout and stderr apart",
               (rc, out, err) == (3, "to-out\n", "to-err\n"), (rc, out, err))
        rc, out, err = pod.exec(client, "true")
        tap.ok(f"{t} ExecSync: exit status 0", rc == 0, (rc, out, err))
        # A binary that is not there: the runtime's exec fails, and containerd's answer
        # is an error carrying the runtime's message (from its --log), which names it.
        try:
            rc, out, err = pod.exec(client, "/no/such/binary")
            tap.ok(f"{t} ExecSync of a missing binary: an error naming it", False,
                   "answered", (rc, out, err))
        except Exception as e:
            details = e.details() if hasattr(e, "details") else str(e)
            tap.ok(f"{t} ExecSync of a missing binary: an error naming it",
                   "/no/such/binary" in details.split("OCI runtime exec failed", 1)[-1],
                   details)

        # ---- the security context inside
        # /proc/keys, of the kubelet's masked list, exists on every kernel here: a mount
        # over it (/dev/null) inside.
        rc, out, err = pod.exec(client, "sh", "-c",
                                "id -u; id -g; id -G; hostname; "
                                "grep -E '^(CapBnd|CapEff|NoNewPrivs|Seccomp):' /proc/self/status;"
                                " touch /x 2>/dev/null && echo root-rw || echo root-ro;"
                                " touch /data/x && echo data-rw;"
                                " echo masked=$(grep -c ' /proc/keys ' /proc/self/mountinfo);"
                                " touch /proc/sys/kernel/x 2>/dev/null || echo procsys-ro")
        lines = out.splitlines()
        status = dict(line.split(":\t", 1) for line in lines if ":\t" in line)
        want = {"CapBnd": "0000000000000400", "CapEff": "0000000000000000",
                "NoNewPrivs": "1", "Seccomp": "2"}
        cond = (rc == 0 and lines[:4] == ["1000", "1000", "1000 2000", pod.name] and
                {k: status.get(k) for k in want} == want and "root-ro" in lines and
                "data-rw" in lines and "masked=1" in lines and "procsys-ro" in lines)
        tap.ok(f"{t} security context: uid/gid 1000, fsGroup 2000, hostname, NET_BIND_SERVICE "
               "only, no_new_privs, seccomp, read-only root, masked and read-only /proc",
               cond, (rc, out, err))

        # ---- logs
        log = os.path.join(pod.logs, "server", "0.log")
        text = wait_until(lambda: os.path.exists(log) and read(log), 10)
        tap.ok(f"{t} the server's stdout is in its CRI log {log}",
               bool(text) and " stdout F server listening" in text, repr(text))

        # ---- UpdateContainerResources, ContainerStats
        if resources and V2:
            leaf = leaf_of(pod.cgroup_parent, server)
            before = (read(f"{leaf}/memory.max"), read(f"{leaf}/cpu.max"))
            tap.ok(f"{t} the server's cgroup {leaf} has its limits from CreateContainer",
                   before == (str(128 * MIB), "50000 100000"), before)
            err = update_server(cri, server)
            after = (read(f"{leaf}/memory.max"), read(f"{leaf}/cpu.max"),
                     read(f"{leaf}/cpu.weight"))
            rc, inside, _ = pod.exec(server, "cat", "/sys/fs/cgroup/memory.max")
            # cpu.weight from shares 512: 20 by runc 1.1's linear conversion
            # (1 + (s-2)*9999/262142, Debian's runc), 59 by the one crun 1.23 and runc 1.3
            # use (a quadratic in log2(shares) that maps 1024 to 100; mrun's).
            tap.ok(f"{t} UpdateContainerResources: memory.max 96Mi, cpu.max 20000 100000, "
                   f"cpu.weight {after[2]} (20 or 59), seen inside too",
                   not err and after[:2] == (str(96 * MIB), "20000 100000") and
                   after[2] in ("20", "59") and
                   inside.strip() == str(96 * MIB), err, after, inside)
            burn_cpu(pod, server)
            usec0 = int(read(f"{leaf}/cpu.stat").split()[1]) * 1000
            stats = cri.ContainerStats(container_id=server).stats
            usec1 = int(read(f"{leaf}/cpu.stat").split()[1]) * 1000
            cpu = stats.cpu.usage_core_nano_seconds.value
            mem = stats.memory.working_set_bytes.value
            tap.ok(f"{t} ContainerStats: the server's own cgroup (cpu {cpu} ns within "
                   f"[{usec0}, {usec1}], working set {mem} bytes)",
                   stats.attributes.id == server and usec0 <= cpu <= usec1 and cpu > 0 and mem > 0,
                   cri.to_dict(stats))
        elif resources:
            check_update_and_stats_v1(tap, t, cri, pod, server)
        else:
            stats = cri.ContainerStats(container_id=server).stats
            tap.ok(f"{t} ContainerStats answers for the server",
                   stats.attributes.id == server, cri.to_dict(stats))

        # ---- StopContainer, StopPodSandbox, RemovePodSandbox
        for name, cid in pod.containers.items():
            cri.StopContainer(container_id=cid, timeout=5)
        states = {n: cri.ContainerStatus(container_id=c).status
                  for n, c in pod.containers.items()}
        tap.ok(f"{t} StopContainer: both CONTAINER_EXITED, their processes gone",
               all(s.state == 2 for s in states.values()) and
               not any(alive(p) for p in pids.values()),
               {n: (s.state, s.exit_code, s.reason) for n, s in states.items()})
        cri.StopPodSandbox(pod_sandbox_id=pod.sandbox_id)
        cri.RemovePodSandbox(pod_sandbox_id=pod.sandbox_id)
        pod.sandbox_id = None
        leftovers = []
        if alive(spid):
            leftovers.append(f"sandbox pid {spid}")
        for i in ids:
            leftovers += mounts_naming(i)
            state = os.path.join("/run/containerd/runc", crilib.K8S_NS, i)
            if os.path.exists(state):
                leftovers.append(state)
            if os.path.exists(bundle_dir(daemon, i)):
                leftovers.append(bundle_dir(daemon, i))
            if V2 and os.path.exists(f"{CG}{pod.cgroup_parent}/{i}"):
                leftovers.append(f"cgroup {pod.cgroup_parent}/{i}")
        if V2:
            top = f"{CG}{pod.cgroup_parent}"
            leftovers += [f"cgroup {top}/{d}" for d in os.listdir(top)
                          if os.path.isdir(f"{top}/{d}")]
        r = daemon.ctr("container", "ls", "-q")
        leftovers += [c for c in r.stdout.split() if c in ids]
        tap.ok(f"{t} StopPodSandbox and RemovePodSandbox leave no process, mount, cgroup "
               "or state", not leftovers, *leftovers)
    finally:
        remove_pod_quietly(tap, cri, pod.sandbox_id)
        remove_cgroup_tree(pod.cgroup_parent)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mrun", required=True)
    ap.add_argument("--pause", required=True)
    ap.add_argument("--tap", required=True)
    ap.add_argument("--runtimes", default="runc,mrun")
    # The pods run for each runtime: the two-container pod, a hostNetwork/hostPID/
    # hostIPC pod (tests/cri/host_ns_pod.py), streaming Exec and Attach
    # (tests/cri/stream_pod.py); the GPU pod comes with --gpu-dir.
    ap.add_argument("--pods", default="pod,hostns,stream")
    ap.add_argument("--capture")
    ap.add_argument("--no-resources", action="store_true")
    # The GPU pod (tests/cri/gpu_pod.py): the build's src/gpu, with fakegpu.ko loaded;
    # --gpu-unavailable REASON when it could not be (a failed test per runtime).
    ap.add_argument("--gpu-dir")
    ap.add_argument("--gpu-unavailable")
    # containerd's overlayfs snapshotter needs a directory that can be an overlay's
    # upper layer: the VM's /tmp (tmpfs), not its root (itself an overlay).
    ap.add_argument("--workdir-base", default="/var/tmp")
    a = ap.parse_args()
    # containerd's shim runs BinaryName from the bundle's directory: absolute paths only.
    a.mrun, a.pause = os.path.abspath(a.mrun), os.path.abspath(a.pause)
    tap = Tap(a.tap)
    work = tempfile.mkdtemp(prefix="mrun-cri-test.", dir=a.workdir_base)
    os.chmod(work, 0o755)
    daemon = cri = None
    try:
        daemon = crilib.CriContainerd(os.path.join(work, "containerd"), a.mrun)
        crilib.make_images(daemon, a.mrun, a.pause, work)
        cri = crilib.CriClient(daemon.address, work)
        v = cri.Version(version="v1")
        tap.ok(f"containerd's CRI plugin answers ({v.runtime_name} {v.runtime_version}, "
               f"CRI {v.runtime_api_version}); cgroup {'v2' if V2 else 'v1/hybrid'}")
        pods = a.pods.split(",")
        for handler in a.runtimes.split(","):
            runs = []
            if "pod" in pods:
                runs.append(("pod", lambda: run_pod(tap, cri, daemon, handler, work,
                                                    a.capture, not a.no_resources)))
            if a.gpu_dir or a.gpu_unavailable:
                runs.append(("GPU pod", lambda: gpu_pod.run_gpu_pod(
                    tap, cri, daemon, handler, work, a.capture,
                    a.gpu_dir and os.path.abspath(a.gpu_dir), a.gpu_unavailable)))
            if "hostns" in pods:
                runs.append(("hostNetwork/hostPID/hostIPC pod", lambda: host_ns_pod.
                             run_host_ns_pod(tap, cri, daemon, handler, work, a.capture)))
            if "stream" in pods:
                runs.append(("streaming pod", lambda: stream_pod.run_stream_pod(
                    tap, cri, daemon, handler, work)))
            for what, run in runs:
                try:
                    run()
                except Exception:
                    tap.ok(f"[{handler}] the {what}'s calls", False, traceback.format_exc(),
                           daemon.log_tail(15))
    except Exception:
        tap.ok("containerd with the CRI plugin, its images and the client", False,
               traceback.format_exc(), daemon.log_tail(15) if daemon else "")
    finally:
        if cri:
            cri.close()
        if daemon:
            daemon.stop()
        subprocess.run(["rm", "-rf", "--one-file-system", work,
                        os.path.join("/run/containerd/runc", crilib.K8S_NS)], check=False)
        remove_cgroup_tree("/kubepods")
    return tap.finish()


if __name__ == "__main__":
    sys.exit(main())
