"""Streaming Exec and Attach through the shim, as kubectl exec and kubectl attach use
them (tests/cri/pod_test.py; the client is tests/cri/streamlib.py).

A pod of one container started with stdin and a tty (`kubectl run -it`: stdin, tty,
command sh). For each runtime handler alike: CRI Exec of echo, its stdout and a Success
status; a failing command, its stderr and its exit code in the channel-3 status; an Exec
with stdin (cat) echoing back what is sent; an Exec with a tty (the command's stdin and
stdout a terminal, the output with its CRLF); Attach to the container's own shell: a
command sent on stdin, its output read back; then stop and removal leave no process or
mount. The shim runs each exec as `RUNTIME exec --process FILE --detach` (with
--console-socket for a tty) and the container itself with --console-socket, so these
are the runtime's terminal and stdio paths under containerd's streaming server.
"""

import os
import uuid

import crilib
import streamlib
from podlib import (alive, kubelet_cgroup_parent, mounts_naming, pod_labels, remove_cgroup_tree,
                    remove_pod_quietly, verbose_pid, wait_until)


def open_exec(cri, daemon, cid, cmd, stdin=False, tty=False):
    url = cri.Exec(container_id=cid, cmd=cmd, stdin=stdin, stdout=True, stderr=not tty,
                   tty=tty).url
    return streamlib.Stream(url, daemon.netns)


def report(s):
    return {"protocol": s.protocol, "closed": s.closed, "frames": s.data}


def run_stream_pod(tap, cri, daemon, handler, work):
    t = f"[{handler}] streaming:"
    uid = str(uuid.uuid4())
    name = f"stream-{handler}"
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
    config = {
        "metadata": {"name": "shell", "attempt": 0},
        "image": {"image": crilib.BUSYBOX},
        "command": ["sh"],
        "stdin": True, "tty": True,
        "labels": pod_labels("shell", name, uid),
        "log_path": "shell/0.log",
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
            tap.ok(f"{t} a pod whose container runs sh with stdin and a tty")
        except Exception as e:
            tap.ok(f"{t} a pod whose container runs sh with stdin and a tty", False, str(e),
                   daemon.log_tail(15))
            return
        pid = verbose_pid(cri.ContainerStatus(container_id=cid, verbose=True))

        # ---- Exec: stdout and a Success status
        s = open_exec(cri, daemon, cid, ["echo", "hello-exec"])
        s.read_to_end()
        s.close()
        tap.ok(f"{t} Exec echo over {streamlib.PROTOCOL}: its stdout and a Success status",
               s.protocol == streamlib.PROTOCOL and s.text(streamlib.STDOUT) == "hello-exec\n"
               and s.exit_code() == 0, report(s))

        # ---- Exec: a failing command's stderr and exit code
        s = open_exec(cri, daemon, cid, ["sh", "-c", "echo oops >&2; exit 7"])
        s.read_to_end()
        s.close()
        st = s.status() or {}
        tap.ok(f"{t} Exec of a failing command: its stderr, exit code 7 in the status "
               f"({st.get('reason')})",
               s.text(streamlib.STDERR) == "oops\n" and s.text(streamlib.STDOUT) == "" and
               st.get("status") == "Failure" and s.exit_code() == 7, report(s))

        # ---- Exec with stdin: cat echoes what is sent, and ends when the client leaves
        s = open_exec(cri, daemon, cid, ["cat"], stdin=True)
        s.send(b"ping-stdin 1\n")
        s.send(b"ping-stdin 2\n")
        got = s.read_until(lambda x: x.text(streamlib.STDOUT).count("\n") >= 2, 20)
        s.close()
        tap.ok(f"{t} Exec cat with stdin: what is sent comes back on stdout", got,
               report(s))
        left = wait_until(lambda: cri.ExecSync(container_id=cid, cmd=["pidof", "cat"],
                                               timeout=20).exit_code != 0, 20, 0.5)
        tap.ok(f"{t} the exec'd cat ends once the client closes (its stdin closed)", left,
               cri.ExecSync(container_id=cid, cmd=["ps"], timeout=20).stdout.decode())

        # ---- Exec with a tty, as kubectl exec -it (stdin too: containerd 1.6 streams
        # no output of a tty exec without stdin, whatever the runtime)
        s = open_exec(cri, daemon, cid, ["sh", "-c", "tty; test -t 1 && echo tty-ok"],
                      stdin=True, tty=True)
        s.read_to_end()
        s.close()
        out = s.text(streamlib.STDOUT)
        tap.ok(f"{t} Exec with a tty: stdin and stdout are /dev/pts/N, CRLF output, Success",
               out.startswith("/dev/pts/") and "tty-ok\r\n" in out and s.exit_code() == 0,
               report(s))

        # ---- Attach to the container's own shell (kubectl attach -it)
        url = cri.Attach(container_id=cid, stdin=True, stdout=True, stderr=False,
                         tty=True).url
        s = streamlib.Stream(url, daemon.netns)
        s.send(b"echo attached-$((6*7))\n")
        got = s.read_until(lambda x: "attached-42" in x.text(streamlib.STDOUT), 20)
        s.close()
        tap.ok(f"{t} Attach -it: a command sent to the container's sh, its output read back",
               got, report(s))
        r = cri.ContainerStatus(container_id=cid).status
        tap.ok(f"{t} the container still runs after the client detaches", r.state == 1,
               (r.state, r.exit_code, r.reason))

        # ---- stop and remove
        cri.StopContainer(container_id=cid, timeout=5)
        cri.StopPodSandbox(pod_sandbox_id=sandbox_id)
        cri.RemovePodSandbox(pod_sandbox_id=sandbox_id)
        sandbox_id = None
        left = ([f"pid {pid}"] if alive(pid) else []) + mounts_naming(cid)
        tap.ok(f"{t} stopped and removed, no process or mount left", not left, *left)
    finally:
        remove_pod_quietly(tap, cri, sandbox_id)
        remove_cgroup_tree(parent)
