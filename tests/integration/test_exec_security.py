"""CVE-2019-5736 against `mrun exec` (see src/runtime/cloned_binary.hpp): a process of
the container tries to reach the runtime's binary through /proc/PID/exe of the exec'ing
mrun process, hold it open and write it once no mrun runs it any more. The binary used
for exec is a copy owned by whoever the container's root is on the host (the test user
rootless, root rootful), so without the protection the write succeeds and the copy's
hash changes.

The window (mrun in the container before its execve) lasts microseconds; strace makes
it observable by delaying every execve and exit_group of the exec'ing mrun by 2s."""

import hashlib
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


@pytest.mark.parametrize("how", ["window", "shebang"])
def test_exec_never_lets_the_container_write_the_runtime_binary(mrun, private_rootfs, name,
                                                                 tmp_path, how):
    """window: `mrun exec CT /bin/true` seen before its execve (non-dumpable and a memfd
    copy protect it). shebang: `mrun exec CT /selfexe.sh`, a script whose interpreter is
    /proc/self/exe, so the exec'd process runs the exec'ing binary (the sealed copy)."""
    strace = shutil.which("strace")
    if not strace:
        pytest.skip("strace is missing (scripts/install-deps.sh installs it): "
                    "it makes the microsecond window observable")
    target = f"target-{name}"
    rootfs = private_rootfs
    with open(os.path.join(rootfs, "attack.sh"), "w") as f:
        f.write(ATTACKER)
    with open(os.path.join(rootfs, "selfexe.sh"), "w") as f:
        f.write("#!/proc/self/exe\n")
    os.chmod(os.path.join(rootfs, "selfexe.sh"), 0o755)
    bundle = _bundle(mrun, tmp_path, rootfs, ["/bin/sh", "/attack.sh"],
                     env=["PATH=/bin:/usr/bin", f"TARGET={target}"])
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
        bindir = tmp_path / "bin"
        bindir.mkdir()
        os.chmod(tmp_path, 0o755)
        copy = bindir / "mrun"
        shutil.copy(M.MRUN, copy)
        os.chmod(copy, 0o755)
        owner = _host_uid_of_container_root(_state(mrun, name)["pid"])
        if owner != M.UID:
            if not M.ROOTFUL:
                pytest.skip(f"the container's root is host uid {owner}, not us: it could "
                            "never write a binary of ours")
            os.chown(copy, owner, -1)
        before = _sha256(copy)

        command = ["/bin/true", target] if how == "window" else ["/selfexe.sh", target]
        argv = [strace, "-f", "-qq", "-o", "/dev/null",
                "-e", f"inject=execve,exit_group:delay_enter={DELAY_US}",
                str(copy), *mrun.global_args, "exec", name, *command]
        r = subprocess.run(argv, env=mrun.env, stdin=subprocess.DEVNULL, capture_output=True,
                           text=True, timeout=60)
        if how == "window":
            assert r.returncode == 0, (r.stdout, r.stderr)
        M.assert_rc(mrun("exec", name, "/bin/touch", "/dev/shm/go"))
        report = _wait_for_line(out, "done", 15)
        lines = dict(line.split("=", 1) for line in report.split() if "=" in line)
        detail = f"what the container managed:\n{report}\nmrun exec said:\n{r.stderr}"

        exe = lines.get("exe", "")
        assert "busybox" not in exe, f"the window was missed (saw the exec'd program)\n{detail}"
        assert lines.get("write-now") != "ok" and lines.get("write-later") != "ok", detail
        assert _sha256(copy) == before, f"the container rewrote the runtime binary\n{detail}"
        # Reached at all, it is the sealed copy, never the host's file.
        if lines.get("open") == "ok":
            assert exe.startswith("/memfd:"), detail
        else:
            assert how == "window", f"only a non-dumpable mrun refuses the open\n{detail}"
    finally:
        mrun("delete", "--force", name)
