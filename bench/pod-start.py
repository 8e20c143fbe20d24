#!/usr/bin/python3
"""Pod start through containerd's CRI plugin: mrun vs runc vs crun, as ratios in one run.

    bench/pod-start.py [RUNS] [--mrun PATH] [--pause PATH]     (root; default RUNS 10)

One round is what the kubelet does to start a pod of one container: RunPodSandbox,
CreateContainer, StartContainer, and the ContainerStatus that says it runs; timed from
the first call to that answer, then the pod is stopped and removed (not timed). The
handlers runc, mrun and crun (each io.containerd.runc.v2 with its BinaryName) take turns
round by round in one containerd of the bench's own (tests/cri/crilib.py: its root,
state, socket, pause and busybox images, CNI bridge in a network namespace of its own).
Prints each handler's mean and median and the ratios of its median to runc's and crun's
(the medians: under TCG a round in ten is far off either way). A handler
whose first round fails is listed as not measured with its error. Needs cgroup v2 for
mrun (every CRI sandbox asks for cpu.shares; mrun sets no cgroup v1 limits): run it in
the cgroup v2 VM, e.g.

    bench/pod-start-vm.sh 10

where the numbers are TCG's and only the ratios mean something. A benchmark is never a
test: it prints numbers, it does not judge them.
"""

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(REPO, "tests", "cri"))
import crilib  # noqa: E402


def one_pod(cri, handler, work):
    uid = str(uuid.uuid4())
    logs = os.path.join(work, "logs", uid)
    os.makedirs(logs)
    sandbox = {"metadata": {"name": f"bench-{handler}", "uid": uid, "namespace": "default"},
               "hostname": "bench", "log_directory": logs,
               "linux": {"security_context": {
                   "namespace_options": {"network": "POD", "pid": "CONTAINER", "ipc": "POD"}}}}
    start = time.monotonic()
    sid = cri.RunPodSandbox(config=sandbox, runtime_handler=handler).pod_sandbox_id
    try:
        cid = cri.CreateContainer(pod_sandbox_id=sid, sandbox_config=sandbox, config={
            "metadata": {"name": "c"}, "image": {"image": crilib.BUSYBOX},
            "command": ["sleep", "3600"], "log_path": "c.log"}).container_id
        cri.StartContainer(container_id=cid)
        if cri.ContainerStatus(container_id=cid).status.state != 1:
            raise RuntimeError("the container is not running after StartContainer")
        return time.monotonic() - start
    finally:
        cri.StopPodSandbox(pod_sandbox_id=sid)
        cri.RemovePodSandbox(pod_sandbox_id=sid)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("runs", nargs="?", type=int, default=10)
    build = os.environ.get("MRUN_BUILD_DIR", os.path.join(REPO, "build"))
    ap.add_argument("--mrun", default=os.path.join(build, "src/mrun"))
    ap.add_argument("--pause", default=os.path.join(build, "tests/probe/pause"))
    a = ap.parse_args()
    base = "/tmp" if os.environ.get("MRUN_VM") else "/var/tmp"
    work = tempfile.mkdtemp(prefix="mrun-bench-pod.", dir=base)
    os.chmod(work, 0o755)
    handlers = ["runc", "mrun"] + (["crun"] if shutil.which("crun") else [])
    daemon = cri = None
    times = {h: [] for h in handlers}
    failed = {}
    try:
        daemon = crilib.CriContainerd(os.path.join(work, "containerd"),
                                      os.path.abspath(a.mrun))
        crilib.make_images(daemon, os.path.abspath(a.mrun), os.path.abspath(a.pause), work)
        cri = crilib.CriClient(daemon.address, work)
        for h in handlers:  # one untimed round each: it must work before it is timed
            try:
                one_pod(cri, h, work)
            except Exception as e:
                failed[h] = (e.details() if hasattr(e, "details") else str(e)).splitlines()[0]
        for _ in range(a.runs):
            for h in handlers:
                if h not in failed:
                    times[h].append(one_pod(cri, h, work))
    finally:
        if cri:
            cri.close()
        if daemon:
            daemon.stop()
        shutil.rmtree(work, ignore_errors=True)
    mean = {h: statistics.mean(t) for h, t in times.items() if t}
    median = {h: statistics.median(t) for h, t in times.items() if t}
    print(f"pod start (RunPodSandbox .. container running), {a.runs} runs each, "
          f"containerd 1.6 CRI, cgroup {'v2' if os.path.exists('/sys/fs/cgroup/cgroup.controllers') else 'v1/hybrid'}")
    print(f"{'handler':8} {'mean ms':>9} {'median ms':>10} {'x runc':>7} {'x crun':>7}")
    for h in handlers:
        if h in failed:
            print(f"{h:8} not measured: {failed[h]}")
            continue
        ratio = {r: f"{median[h] / median[r]:.2f}" if r in median else "-"
                 for r in ("runc", "crun")}
        print(f"{h:8} {mean[h] * 1000:9.1f} {median[h] * 1000:10.1f} "
              f"{ratio['runc']:>7} {ratio['crun']:>7}")


if __name__ == "__main__":
    main()
