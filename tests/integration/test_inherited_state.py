"""mrun started by a careless caller: each piece of process state a shell, daemon or job
runner may leave behind (hostile_exec.py's list: an ignored SIGCHLD, blocked signals,
closed or redirected stdio, odd umasks, tight limits, a deleted cwd, a broken HOME,
XDG_RUNTIME_DIR or TMPDIR, a big environment), applied to every verb in turn, each
compared with runc under the same state in the same test.

The rule: mrun works wherever runc does (same exit status, same output where the
caller can see it) and, where it cannot work, ends with one line naming the cause
and exit 125. The leftover guard (conftest.py) checks that nothing stays behind.
"""

import os
import shutil
import subprocess
import sys
import time

import pytest

import mrunlib as M

sys.path.insert(0, M.HERE)
import hostile_exec  # noqa: E402

HOSTILE = os.path.join(M.HERE, "hostile_exec.py")
RUNC = shutil.which("runc")
STATES = list(hostile_exec.STATES)
# What the caller still sees of the command's stdout / stderr under a state.
STDOUT_LOST = {"stdio-closed", "stdio-devnull", "stdout-closed-pipe"}
STDERR_LOST = {"stdio-closed", "stdio-devnull"}
# The container's umask is process.user.umask or 0022 (runc's), whatever the caller's.
SCRIPT = "umask; exit 3"
EXEC_SCRIPT = "umask; exit 4"

needs_runc = pytest.mark.skipif(RUNC is None, reason="runc is not installed "
                                "(scripts/install-deps.sh installs it)")


def hostile(state, argv, tmp_path, env=None, timeout=M.TIMEOUT):
    """ARGV run through hostile_exec.py STATE; stdout and stderr go to files (a created
    container keeps its stdio open long after the verb returned)."""
    env = dict(env if env is not None else M.base_env())
    if state in ("home-unwritable", "xdg-runtime-dir-unwritable"):
        unwritable = tmp_path / "unwritable"
        unwritable.mkdir(exist_ok=True)
        unwritable.chmod(0o500)
        env["MRUN_HOSTILE_UNWRITABLE"] = str(unwritable)
    out_path, err_path = tmp_path / "stdout", tmp_path / "stderr"
    start = time.monotonic()
    with open(out_path, "w") as out, open(err_path, "w") as err:
        try:
            p = subprocess.run([sys.executable, HOSTILE, state, *map(str, argv)],
                               stdin=subprocess.DEVNULL, stdout=out, stderr=err, env=env,
                               timeout=timeout, start_new_session=True)
        except subprocess.TimeoutExpired:
            raise AssertionError(f"{argv} under {state} did not finish in {timeout}s "
                                 "(hang)") from None
    return M.Result([state, *argv], p.returncode, out_path.read_text(), err_path.read_text(),
                    time.monotonic() - start)


def assert_works_or_says_why(state, r, code, out):
    """Exit CODE with OUT on stdout (where the caller sees it), or mrun's one-line error."""
    if r.rc == 125:
        if state not in STDERR_LOST:
            M.assert_mrun_error(r, 125)
        return False
    assert r.rc == code, f"under {state}: expected exit {code} (or 125 and why)\n{r!r}"
    if state not in STDOUT_LOST:
        assert r.out == out, f"under {state}: expected {out!r} on stdout\n{r!r}"
    return True


def runc_root_args(state, tmp_path):
    """runc's --root, except where the state is about the default state location: there
    both runtimes find theirs as a user's shell would have them find it."""
    return [] if state.startswith("xdg-") else ["--root", str(tmp_path / "runc-root")]


def exec_status(state):
    """The exec'd shell is not its PID namespace's init: writing to a closed pipe kills
    it with SIGPIPE (128 + 13), as under runc; init (SCRIPT's) ignores that signal."""
    return 141 if state == "stdout-closed-pipe" else 4


def rm_runc(root_args, cid):
    subprocess.run([RUNC, *root_args, "delete", "--force", cid],
                   capture_output=True, timeout=M.TIMEOUT)


@pytest.mark.parametrize("state", STATES)
def test_run_rootfs(mrun, rootfs, name, state, tmp_path):
    """`mrun run ROOTFS` has no runc equivalent: it must work under every state but the
    two that leave it nowhere to keep its storage or state, which it names."""
    r = hostile(state, [M.MRUN, "run", "--rm", "--name", name, "--network", "none", rootfs,
                        "/bin/sh", "-c", SCRIPT], tmp_path)
    worked = assert_works_or_says_why(state, r, 3, "0022\n")
    may_fail = () if M.ROOTFUL else ("home-unwritable", "xdg-runtime-dir-unwritable",
                                     "nproc-at-count")
    assert worked or state in may_fail, f"under {state}: mrun run failed\n{r!r}"
    if not worked and state == "nproc-at-count":
        assert "RLIMIT_NPROC" in r.err, r
    if not worked and state == "home-unwritable":
        assert "HOME" in r.err or "XDG_DATA_HOME" in r.err, r
    if not worked and state == "xdg-runtime-dir-unwritable":
        assert "--root" in r.err, r


@needs_runc
@pytest.mark.parametrize("state", STATES)
def test_run_bundle_as_runc(mrun, rootfs, name, state, tmp_path):
    bundle = M.oci_bundle(mrun, tmp_path, rootfs, ["/bin/sh", "-c", SCRIPT])
    root_args = runc_root_args(state, tmp_path)
    try:
        theirs = hostile(state, [RUNC, *root_args, "run", "-b", bundle, name], tmp_path)
    finally:
        rm_runc(root_args, name)
    try:
        ours = hostile(state, [M.MRUN, "run", "--bundle", bundle, name], tmp_path)
    finally:
        mrun("delete", "--force", name)
    worked = assert_works_or_says_why(state, ours, 3, "0022\n")
    if theirs.rc == 3:
        assert worked, f"under {state}: runc ran the bundle, mrun did not\n{ours!r}\n{theirs!r}"


def lifecycle(argv0, bundle, cid, state, tmp_path):
    """create, start, exec, kill, delete of CID, each verb under STATE: the statuses."""
    steps = [("create", ["create", "--bundle", bundle, cid]), ("start", ["start", cid]),
             ("exec", ["exec", cid, "/bin/sh", "-c", EXEC_SCRIPT]),
             ("kill", ["kill", cid, "KILL"])]
    results = {}
    for step, args in steps:
        results[step] = hostile(state, [*argv0, *args], tmp_path)
        if results[step].rc != {"exec": exec_status(state)}.get(step, 0):
            break
        if step == "kill":
            M.wait_until(lambda: '"stopped"' in subprocess.run(
                [*argv0, "state", cid], capture_output=True, text=True).stdout, 10)
    if "kill" in results and results["kill"].rc == 0:
        results["delete"] = hostile(state, [*argv0, "delete", cid], tmp_path)
    return results


@needs_runc
@pytest.mark.parametrize("state", STATES)
def test_lifecycle_as_runc(mrun, rootfs, name, state, tmp_path):
    bundle = M.oci_bundle(mrun, tmp_path, rootfs, ["/bin/sleep", "60"])
    root_args = runc_root_args(state, tmp_path)
    try:
        theirs = lifecycle([RUNC, *root_args], bundle, name, state, tmp_path)
    finally:
        rm_runc(root_args, name)
    try:
        ours = lifecycle([M.MRUN], bundle, name, state, tmp_path)
    finally:
        mrun("delete", "--force", name)
    def code_of(step):
        return exec_status(state) if step == "exec" else 0

    for step, r in ours.items():
        code = code_of(step)
        out = "0022\n" if step == "exec" else ""
        worked = assert_works_or_says_why(state, r, code, out)
        runc_worked = step in theirs and theirs[step].rc == code
        assert worked or not runc_worked, (
            f"under {state}: runc's {step} worked, mrun's did not\n{r!r}\n{theirs[step]!r}")
    if all(r.rc == code_of(s) for s, r in theirs.items()):
        assert list(ours) == list(theirs), f"under {state}: mrun stopped at {list(ours)}"
