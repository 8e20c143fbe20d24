#!/usr/bin/python3
"""A shareProcessNamespace pod through containerd's CRI under rootlesskit, runc and mrun.

    rootless_pod_test.py --mrun PATH --pause PATH --tap FILE [--user NAME]

Run as root on this host (no VM: the host's kernel has what rootless containerd needs).
Stages mrun, the pause program and tests/ in a world-readable directory under /var/tmp
and runs, as USER (default mrun-test), rootlesskit (slirp4netns, copy-up of /etc, /run
and /var/lib) around this file's --inner mode: containerd with the CRI plugin
(tests/cri/crilib.py) in rootlesskit's user namespace, with `disable_cgroup` (no cgroup
is delegated here) and `restrict_oom_score_adj`, as containerd advises for a user
namespace. rootlesskit's copy-up leaves /var/lib/cni and /run/containerd as symlinks to
root's directories, so they are replaced by the namespace's own first
(docs/KUBERNETES.md). For each handler, runc as the control and mrun, the kubelet's
calls for a pod with shareProcessNamespace (pid POD): RunPodSandbox, CreateContainer,
StartContainer, ExecSync, StopContainer, StopPodSandbox, RemovePodSandbox; checked
alike: the container in the sandbox's PID namespace with /pause as its PID 1, uid 0 of
rootlesskit's map, nothing left running. mrun, root of a user namespace it did not make,
joins that PID namespace through a first child (src/launch/launcher.cpp).
Prints TAP; exits 1 if any test failed.
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import uuid

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
import crilib  # noqa: E402
from podlib import (Tap, alive, readlink, remove_pod_quietly, verbose_pid,  # noqa: E402
                    wait_until)

PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"


def outer(a):
    tap = Tap(a.tap)
    missing = [c for c in ("rootlesskit", "slirp4netns", "containerd", "runc")
               if not shutil.which(c, path=PATH)]
    if missing:
        tap.ok(f"a rootless CRI pod # SKIP {', '.join(missing)} not installed "
               "(scripts/install-deps.sh)")
        return tap.finish()
    if os.geteuid() != 0:
        tap.ok("run as root (the test runs rootlesskit as the user itself)", False)
        return tap.finish()
    import pwd
    try:
        home = pwd.getpwnam(a.user).pw_dir
    except KeyError:
        tap.ok(f"the rootless user {a.user} exists (tests/setup-user.sh)", False)
        return tap.finish()
    stage = tempfile.mkdtemp(prefix="mrun-cri-rootless.", dir="/var/tmp")
    os.chmod(stage, 0o755)
    try:
        os.makedirs(os.path.join(stage, "bin"))
        for f in (a.mrun, a.pause):
            shutil.copy(f, os.path.join(stage, "bin"))
        for d in ("cri", "integration"):
            shutil.copytree(os.path.join(REPO, "tests", d), os.path.join(stage, "tests", d),
                            ignore=shutil.ignore_patterns("__pycache__"))
        shutil.copy(os.path.abspath(__file__), os.path.join(stage, "tests", "cri"))
        subprocess.run(["chmod", "-R", "a+rX", stage], check=True)
        inner_tap = os.path.join(stage, "inner.tap")
        with open(inner_tap, "w"):
            pass
        os.chmod(inner_tap, 0o666)
        script = ("rm -f /var/lib/cni /run/containerd && mkdir -p /var/lib/cni /run/containerd"
                  ' && exec /usr/bin/python3 "$0" --inner --mrun "$1" --pause "$2" --tap "$3"')
        r = subprocess.run(
            ["runuser", "-u", a.user, "--", "env", "-i", f"HOME={home}", f"PATH={PATH}",
             "LANG=C.UTF-8", "rootlesskit", "--net=slirp4netns", "--disable-host-loopback",
             "--copy-up=/etc", "--copy-up=/run", "--copy-up=/var/lib", "--propagation=rslave",
             "sh", "-c", script, os.path.join(stage, "tests", "cri", os.path.basename(__file__)),
             os.path.join(stage, "bin", os.path.basename(a.mrun)),
             os.path.join(stage, "bin", os.path.basename(a.pause)), inner_tap],
            cwd=stage, capture_output=True, text=True, timeout=600, stdin=subprocess.DEVNULL)
        with open(inner_tap) as f:
            lines = [line.rstrip("\n") for line in f]
        for line in lines:
            if line.startswith("ok ") or line.startswith("not ok "):
                tap.ok(line.split(" - ", 1)[1], line.startswith("ok "))
            elif line.startswith("# ") and " tests failed" not in line:
                tap.emit(line)
        # The inner test's failures are its own lines; without its plan line it (or
        # rootlesskit) never finished, which is a failure of its own.
        if not any(line.startswith("1..") for line in lines):
            tap.ok(f"rootlesskit and the inner test ran to the end (exit {r.returncode})",
                   False, r.stdout[-3000:], r.stderr[-3000:])
    finally:
        subprocess.run(["rm", "-rf", "--one-file-system", stage], check=False)
    return tap.finish()


def inner(a):
    """In rootlesskit's namespaces, as its uid 0."""
    tap = Tap(a.tap)
    # uid 0 here holds CAP_SYS_RESOURCE only in this user namespace: the sandbox's -998
    # cannot be set, so containerd clamps it, as for a kubelet in a user namespace.
    crilib.can_lower_oom_score_adj = lambda: False
    crilib.CONFIG = crilib.CONFIG.replace(
        "  enable_selinux = false\n", "  enable_selinux = false\n  disable_cgroup = true\n")
    work = tempfile.mkdtemp(prefix="mrun-cri-rootless.", dir="/var/tmp")
    os.chmod(work, 0o755)
    daemon = cri = None
    try:
        daemon = crilib.CriContainerd(os.path.join(work, "containerd"), a.mrun)
        crilib.make_images(daemon, a.mrun, a.pause, work)
        cri = crilib.CriClient(daemon.address, work)
        with open("/proc/self/uid_map") as f:
            uid_map = " ".join(f.read().split())
        tap.ok(f"containerd's CRI plugin answers under rootlesskit (uid_map {uid_map})",
               not uid_map.startswith("0 0 "), uid_map)
        for handler in ("runc", "mrun"):
            share_process_namespace(tap, cri, daemon, handler, work)
    except Exception as e:
        tap.ok("containerd with the CRI plugin under rootlesskit", False, str(e),
               daemon.log_tail(15) if daemon else "")
    finally:
        if cri:
            cri.close()
        if daemon:
            daemon.stop()
        subprocess.run(["rm", "-rf", "--one-file-system", work], check=False)
    return tap.finish()


def share_process_namespace(tap, cri, daemon, handler, work):
    t = f"[{handler}] rootless, shareProcessNamespace:"
    uid = str(uuid.uuid4())
    ns = {"network": "POD", "pid": "POD", "ipc": "POD"}
    logs = os.path.join(work, "logs", uid)
    os.makedirs(logs)
    sandbox = {"metadata": {"name": f"share-{handler}", "uid": uid, "namespace": "default"},
               "hostname": f"share-{handler}", "log_directory": logs,
               "linux": {"security_context": {"namespace_options": ns}}}
    sid = None
    try:
        try:
            sid = cri.RunPodSandbox(config=sandbox, runtime_handler=handler).pod_sandbox_id
            cid = cri.CreateContainer(pod_sandbox_id=sid, sandbox_config=sandbox, config={
                "metadata": {"name": "c"}, "image": {"image": crilib.BUSYBOX},
                "command": ["sleep", "3600"], "log_path": "c.log",
                "linux": {"security_context": {"namespace_options": ns}}}).container_id
            cri.StartContainer(container_id=cid)
            tap.ok(f"{t} RunPodSandbox, CreateContainer (pid POD) and StartContainer")
        except Exception as e:
            tap.ok(f"{t} RunPodSandbox, CreateContainer (pid POD) and StartContainer", False,
                   e.details() if hasattr(e, "details") else str(e), daemon.log_tail(10))
            return
        spid = verbose_pid(cri.PodSandboxStatus(pod_sandbox_id=sid, verbose=True))
        cpid = verbose_pid(cri.ContainerStatus(container_id=cid, verbose=True))
        want, got = readlink(f"/proc/{spid}/ns/pid"), readlink(f"/proc/{cpid}/ns/pid")
        tap.ok(f"{t} the container is in the sandbox's PID namespace ({want})",
               want == got and want != readlink("/proc/self/ns/pid"), f"container {got}")
        # StartContainer returns once the runtime let the process go, which may still be
        # on its way to exec sleep (runc's init, mrun's setup): wait for the exec.
        def execd_sleep():
            try:
                with open(f"/proc/{cpid}/cmdline", "rb") as f:
                    return f.read().split(b"\0")[0] == b"sleep"
            except OSError:
                return False
        wait_until(execd_sleep, 10)
        r = cri.ExecSync(container_id=cid, cmd=[
            "sh", "-c", "tr '\\0' ' ' </proc/1/cmdline; echo; pidof sleep; id -u"], timeout=60)
        out = r.stdout.decode(errors="replace").splitlines()
        tap.ok(f"{t} ExecSync: /pause is PID 1, the container's sleep beside it, uid 0",
               r.exit_code == 0 and len(out) == 3 and out[0].strip() == "/pause" and
               out[1].strip().isdigit() and out[2] == "0",
               r.exit_code, out, r.stderr.decode(errors="replace"))
        cri.StopContainer(container_id=cid, timeout=5)
        cri.StopPodSandbox(pod_sandbox_id=sid)
        cri.RemovePodSandbox(pod_sandbox_id=sid)
        sid = None
        left = [f"pid {p}" for p in (spid, cpid) if alive(p)]
        tap.ok(f"{t} StopContainer, StopPodSandbox, RemovePodSandbox: nothing left running",
               not left, *left)
    finally:
        remove_pod_quietly(tap, cri, sid)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--mrun", required=True)
    ap.add_argument("--pause", required=True)
    ap.add_argument("--tap", required=True)
    ap.add_argument("--user", default="mrun-test")
    ap.add_argument("--inner", action="store_true")
    a = ap.parse_args()
    a.mrun, a.pause = os.path.abspath(a.mrun), os.path.abspath(a.pause)
    return inner(a) if a.inner else outer(a)


if __name__ == "__main__":
    sys.exit(main())
