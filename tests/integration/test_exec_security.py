"""CVE-2019-5736 against `mrun exec` (see src/exec/cloned_binary.hpp): a process of
the container tries to reach the runtime's binary through /proc/PID/exe of the exec'ing
mrun process, hold it open and write it once no mrun runs it any more. The binary used
for exec is a copy owned by whoever the container's root is on the host (the test user
rootless, root rootful), so without the protection the write succeeds and the copy's
hash changes.

The window (mrun in the container before its execve) lasts microseconds; strace makes
it observable by delaying every execve of the exec'ing mrun by 2s."""

import errno
import hashlib
import json
import os
import shutil
import subprocess
import time

import pytest

import mrunlib as M
from test_oci import _bundle, _state

DELAY_US = 2_000_000

# The container's process. It waits for a process whose command line holds $TARGET
# (mrun exec's arguments before its execve; the script's after), then reports what it
# could do with /proc/PID/exe: read the link, open it, open it for writing now, and,
# once the test says mrun is gone (/dev/shm/go), write through the fd it kept (the CVE's
# reopen through /proc/self/fd). Its own command line does not hold $TARGET.
ATTACKER = r"""
echo ready
while :; do
  for d in /proc/[0-9]*; do
    case " $(tr '\0' ' ' < $d/cmdline 2>/dev/null) " in *" $TARGET "*) ;; *) continue ;; esac
    echo "exe=$(readlink $d/exe)"
    if ( : < $d/exe ) 2>/dev/null; then
      exec 3< $d/exe
      echo open=ok
      echo "held=$(readlink /proc/self/fd/3)"
      if ( : >> $d/exe ) 2>/dev/null; then echo write-now=ok; else echo write-now=refused; fi
      while [ ! -e /dev/shm/go ]; do sleep 0.05; done
      if ( echo PWNED >> /proc/self/fd/3 ) 2>/dev/null; then echo write-later=ok
      else echo write-later=refused; fi
    else
      echo open=refused
    fi
    echo done
    exec sleep 1000
  done
  sleep 0.02
done
"""


def _give_every_capability_set(bundle, cap):
    """Adds CAP to all five of the bundle's process capability sets."""
    config = json.loads((bundle / "config.json").read_text())
    for caps in config["process"]["capabilities"].values():
        caps.append(cap)
    (bundle / "config.json").write_text(json.dumps(config))


def _sha256(path):
    with open(path, "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def _host_uid_of_container_root(pid):
    """The host uid the container's uid 0 is (its init's uid_map)."""
    with open(f"/proc/{pid}/uid_map") as f:
        for line in f:
            inside, outside, count = map(int, line.split())
            if inside == 0:
                return outside
    pytest.skip("the container has no uid 0")


def _wait_for_line(path, word, timeout):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        text = path.read_text(errors="replace")
        if word in text.split():
            return text
        time.sleep(0.05)
    raise AssertionError(f"the container never said {word!r}; it said:\n{path.read_text()}")


@pytest.mark.parametrize("ptrace", [False, True], ids=["default-caps", "cap-sys-ptrace"])
def test_exec_never_lets_the_container_write_the_runtime_binary(mrun, private_rootfs, name,
                                                                 tmp_path, ptrace):
    """`mrun exec CT /bin/true TARGET`, seen by the container before its execve.

    default-caps: non-dumpable, the exec'ing mrun's /proc/PID/exe cannot be opened.
    cap-sys-ptrace (rootful: the container's root then has CAP_SYS_PTRACE on the host,
    which overrides non-dumpable): it opens, and finds the sealed memfd copy.

    (The other classic, exec'ing a script whose interpreter is /proc/self/exe, cannot be
    tried here: kernel 6.18 refuses, ENOENT, an interpreter reached through the magic
    link of a binary outside the container's mount namespace.)"""
    if ptrace and not M.ROOTFUL:
        pytest.skip("rootless, the container's capabilities are its user namespace's: "
                    "CAP_SYS_PTRACE there does not reach a host process")
    strace = shutil.which("strace")
    if not strace:
        pytest.skip("strace is missing (scripts/install-deps.sh installs it): "
                    "it makes the microsecond window observable")
    target = f"target-{name}"
    rootfs = private_rootfs
    with open(os.path.join(rootfs, "attack.sh"), "w") as f:
        f.write(ATTACKER)
    bundle = _bundle(mrun, tmp_path, rootfs, ["/bin/sh", "/attack.sh"],
                     env=["PATH=/bin:/usr/bin", f"TARGET={target}"])
    if ptrace:
        _give_every_capability_set(bundle, "CAP_SYS_PTRACE")
    out = tmp_path / "container.out"
    try:
        # create's stdio become the container's (as runc's): a file we can read.
        with open(out, "wb") as stdout:
            p = mrun.popen("create", "--bundle", bundle, name, stdout=stdout,
                           stderr=subprocess.STDOUT)
            assert p.wait(timeout=30) == 0, out.read_text()
        M.assert_rc(mrun("start", name))
        _wait_for_line(out, "ready", 10)

        # The binary exec runs from: a copy the container's root owns on the host.
        copy = _binary_for("writable", tmp_path)
        owner = _host_uid_of_container_root(_state(mrun, name)["pid"])
        if owner != M.UID:
            if not M.ROOTFUL:
                pytest.skip(f"the container's root is host uid {owner}, not us: it could "
                            "never write a binary of ours")
            os.chown(copy, owner, -1)
        before = _sha256(copy)

        argv = [strace, "-f", "-qq", "-o", "/dev/null",
                "-e", f"inject=execve:delay_enter={DELAY_US}",
                str(copy), *mrun.global_args, "exec", name, "/bin/true", target]
        r = subprocess.run(argv, env=mrun.env, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 0, (r.stdout, r.stderr)
        M.assert_rc(mrun("exec", name, "/bin/touch", "/dev/shm/go"))
        report = _wait_for_line(out, "done", 15)
        lines = dict(line.split("=", 1) for line in report.split() if "=" in line)
        detail = f"what the container managed:\n{report}\nmrun exec said:\n{r.stderr}"

        exe = lines.get("exe", "")
        assert "busybox" not in exe, f"the window was missed (saw the exec'd program)\n{detail}"
        assert lines.get("write-now") != "ok" and lines.get("write-later") != "ok", detail
        assert _sha256(copy) == before, f"the container rewrote the runtime binary\n{detail}"
        if ptrace:
            assert lines.get("open") == "ok" and exe.startswith("/memfd:"), detail
        else:
            assert lines.get("open") == "refused", f"non-dumpable, yet opened\n{detail}"
    finally:
        mrun("delete", "--force", name)


def _binary_for(kind, tmp_path):
    """writable: a copy of mrun the container's root owns on the host (the caller
    rootless: a build tree's binary); installed: the suite's own root-owned 0755 one."""
    if kind == "installed":
        st = os.stat(M.MRUN)
        if st.st_uid != 0 or st.st_mode & 0o022:
            pytest.skip(f"{M.MRUN} is not root-owned and write-protected as an install is")
        return M.MRUN
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.chmod(tmp_path, 0o755)
    copy = bindir / "mrun"
    shutil.copy(M.MRUN, copy)
    os.chmod(copy, 0o755)
    return str(copy)


@pytest.mark.parametrize("binary", ["writable", "installed"])
def test_exec_runs_from_a_sealed_copy_where_the_container_could_write_mrun(
        mrun, rootfs, name, tmp_path, binary):
    """Without strace: the supervising `mrun exec` runs from a sealed memfd (its exe link,
    and a write through it fails) whenever some id of the container could write mrun's
    binary: rootful always (its root is host root), rootless when the binary is the
    caller's. Rootless with an installed, root-owned binary, which no id of the
    container can write, it runs from the binary itself: a copy would protect nothing
    (and the container cannot open it for writing either). Re-executing does not eat a
    --process /dev/stdin."""
    if binary == "installed" and M.ROOTFUL:
        pytest.skip("rootful: the container's root may write any binary, it is always copied")
    exe_path = _binary_for(binary, tmp_path)
    bundle = _bundle(mrun, tmp_path, rootfs, ["/bin/sleep", "1000"])

    def mrun_exec(*args, **kw):
        return subprocess.Popen([exe_path, *mrun.global_args, "exec", *args], env=mrun.env,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw)
    try:
        with open(tmp_path / "create.out", "wb") as stdout:
            p = mrun.popen("create", "--bundle", bundle, name, stdout=stdout,
                           stderr=subprocess.STDOUT)
            assert p.wait(timeout=30) == 0, (tmp_path / "create.out").read_text()
        M.assert_rc(mrun("start", name))
        process = json.dumps({"args": ["/bin/echo", "from-stdin"], "cwd": "/",
                              "env": ["PATH=/bin"]})
        p = mrun_exec("--process", "/dev/stdin", name, stdin=subprocess.PIPE)
        out, err = p.communicate(process, timeout=30)
        assert p.returncode == 0 and out.strip() == "from-stdin", (out, err)

        p = mrun_exec(name, "/bin/sleep", "30", stdin=subprocess.DEVNULL)
        try:
            if binary == "writable":
                exe = ""
                deadline = time.monotonic() + 10
                while not exe.startswith("/memfd:") and time.monotonic() < deadline:
                    exe = os.readlink(f"/proc/{p.pid}/exe")
                    time.sleep(0.02)
                assert exe.startswith("/memfd:mrun"), f"mrun exec runs from {exe!r}"
            else:
                # Settled: the exec'd sleep is running in the container.
                assert M.wait_until(lambda: any(q.cmdline[:2] == ["/bin/sleep", "30"]
                                                for q in M.list_procs().values()), 10)
                exe = os.readlink(f"/proc/{p.pid}/exe")
                assert exe == os.path.realpath(exe_path), (
                    f"rootless with a root-owned binary mrun exec still copied itself: {exe!r}")
            with pytest.raises(OSError) as err:
                with open(f"/proc/{p.pid}/exe", "ab") as f:
                    f.write(b"PWNED")
            assert err.value.errno in (errno.ETXTBSY, errno.EPERM, errno.EACCES), err.value
        finally:
            p.kill()
            # The exec'd sleep keeps mrun exec's stdout open: it goes with the container's
            # PID namespace, not with mrun exec.
            mrun("delete", "--force", name)
            p.communicate(timeout=30)
    finally:
        mrun("delete", "--force", name)


@pytest.mark.parametrize("ptrace", [False, True], ids=["default-caps", "cap-sys-ptrace"])
def test_a_container_joining_a_pid_namespace_never_lets_it_write_the_runtime_binary(
        mrun, private_rootfs, name, tmp_path, ptrace):
    """A pod's shareProcessNamespace: container B joins container A's PID namespace by
    path, so A sees B's setup, and mrun runs in it until B's execve. The same attacker
    as above runs in A and looks for B's init (its command line is `mrun create ...
    TARGET`, B's name); strace delays each execve of the `mrun create` by 2s. mrun
    re-executes from a sealed memfd before it sets B up, so A finds the memfd or nothing,
    and the binary `mrun create` was started from stays as it was."""
    if not M.ROOTFUL:
        pytest.skip("rootless, B could join A's PID namespace only with A's user namespace "
                    "too, from a user namespace mrun did not make (tests/cri/"
                    "rootless_pod_test.py runs that under rootlesskit)")
    strace = shutil.which("strace")
    if not strace:
        pytest.skip("strace is missing (scripts/install-deps.sh installs it): "
                    "it makes the microsecond window observable")
    target = f"target-{name}"
    attacker = f"{name}-a"
    with open(os.path.join(private_rootfs, "attack.sh"), "w") as f:
        f.write(ATTACKER)
    (tmp_path / "a").mkdir()
    bundle_a = _bundle(mrun, tmp_path / "a", private_rootfs, ["/bin/sh", "/attack.sh"],
                       env=["PATH=/bin:/usr/bin", f"TARGET={target}"])
    if ptrace:
        _give_every_capability_set(bundle_a, "CAP_SYS_PTRACE")
    out = tmp_path / "attacker.out"
    copy = _binary_for("writable", tmp_path)
    before = _sha256(copy)
    try:
        with open(out, "wb") as stdout:
            p = mrun.popen("create", "--bundle", bundle_a, attacker, stdout=stdout,
                           stderr=subprocess.STDOUT)
            assert p.wait(timeout=30) == 0, out.read_text()
        M.assert_rc(mrun("start", attacker))
        _wait_for_line(out, "ready", 10)
        a_pid = _state(mrun, attacker)["pid"]

        (tmp_path / "b").mkdir()
        bundle_b = _bundle(mrun, tmp_path / "b", private_rootfs, ["/bin/true"])
        config = json.loads((bundle_b / "config.json").read_text())
        for ns in config["linux"]["namespaces"]:
            if ns["type"] == "pid":
                ns["path"] = f"/proc/{a_pid}/ns/pid"
        (bundle_b / "config.json").write_text(json.dumps(config))
        argv = [strace, "-f", "-qq", "-o", "/dev/null",
                "-e", f"inject=execve:delay_enter={DELAY_US}",
                str(copy), *mrun.global_args, "create", "--bundle", str(bundle_b), target]
        # strace follows create's monitor and B's init, so it outlives `mrun create`.
        create_out = tmp_path / "create.out"
        with open(create_out, "wb") as cout:
            tracer = subprocess.Popen(argv, env=mrun.env, stdin=subprocess.DEVNULL,
                                      stdout=cout, stderr=subprocess.STDOUT)

        def created():
            r = mrun("state", target)
            return r.rc == 0 and json.loads(r.out)["status"] == "created"
        try:
            assert M.wait_until(created, 30), create_out.read_text()
            M.assert_rc(mrun("start", target))
            # A has found B's init (or never will). Then no process may run the binary
            # any more (a running binary refuses writers): B done, strace and B's
            # monitor gone, B deleted; only then may A write through what it kept.
            M.wait_until(lambda: "exe=" in out.read_text(errors="replace"), 15)

            def stopped():
                r = mrun("state", target)
                return r.rc == 0 and json.loads(r.out)["status"] == "stopped"
            assert M.wait_until(stopped, 30)
        finally:
            tracer.kill()
            tracer.wait()
        mrun("delete", "--force", target)
        M.assert_rc(mrun("exec", attacker, "/bin/touch", "/dev/shm/go"))
        report = _wait_for_line(out, "done", 15)
        lines = dict(line.split("=", 1) for line in report.split() if "=" in line)
        detail = (f"what container A managed:\n{report}\nmrun create said:\n"
                  f"{create_out.read_text(errors='replace')}")
        exe = lines.get("exe", "")
        assert lines.get("write-now") != "ok" and lines.get("write-later") != "ok", detail
        assert _sha256(copy) == before, f"container A rewrote the runtime binary\n{detail}"
        # What A holds, if it opened anything: never the binary mrun was started from. The
        # exe link may be unreadable for the instant B's init changes image (A then reads
        # an empty exe but holds what the open found): the sealed memfd, or the container's
        # own program (/bin/true, busybox here) once B's init exec'd it. Neither is an escape.
        held = lines.get("held", "")
        assert (lines.get("open") == "refused" or exe.startswith("/memfd:") or
                (not exe and (held.startswith("/memfd:") or
                              os.path.basename(held) in ("true", "busybox")))), detail
        if ptrace:
            assert exe.startswith("/memfd:"), f"B's setup ran from {exe!r}\n{detail}"
    finally:
        mrun("delete", "--force", target)
        mrun("delete", "--force", attacker)
