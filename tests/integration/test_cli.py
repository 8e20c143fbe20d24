"""Command line: positionals, bad options, exit codes (125 mrun, 126, 127,
the command's own code, 128+signal)."""

import os
import signal
import time

import pytest

import mrunlib as M


# ---- mrun's own failures: 125 and one "mrun: " line ------------------------

@pytest.mark.parametrize("args", [
    ["--bogus-global", "list"],
    ["no-such-command"],
    ["run", "--bogus-option", "ROOTFS", "true"],
    ["run", "--overlay", "bogus", "ROOTFS", "true"],
    ["run", "--userns", "bogus", "ROOTFS", "true"],
    ["run", "--network", "bogus", "ROOTFS", "true"],
    ["run", "-v", "no-colon-here", "ROOTFS", "true"],
], ids=["global-option", "command", "run-option", "overlay-value", "userns-value",
        "network-value", "volume-syntax"])
def test_bad_usage_is_125_with_one_line(mrun, rootfs, args):
    args = [rootfs if a == "ROOTFS" else a for a in args]
    r = mrun(*args)
    M.assert_mrun_error(r, 125)


def test_missing_rootfs_is_125_naming_it(mrun, tmp_path):
    missing = str(tmp_path / "no-such-rootfs")
    r = mrun("run", "--rm", missing, "/bin/true")
    M.assert_mrun_error(r, 125, mentions=[missing])


def test_rootfs_that_is_a_file_is_125(mrun, tmp_path):
    f = tmp_path / "not-a-dir"
    f.write_text("x")
    r = mrun("run", "--rm", str(f), "/bin/true")
    M.assert_mrun_error(r, 125, mentions=[str(f)])


def test_volume_source_missing_is_125(mrun, rootfs, tmp_path):
    src = str(tmp_path / "no-such-src")
    r = mrun("run", "--rm", "-v", f"{src}:/data", rootfs, "/bin/true")
    M.assert_mrun_error(r, 125, mentions=[src])


# ---- positionals -------------------------------------------------------------

def test_first_positional_is_rootfs_rest_is_command(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/echo", "a", "b c")
    M.assert_rc(r)
    assert r.out == "a b c\n", r


def test_options_after_rootfs_belong_to_the_command(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/sh", "-c", 'echo "$@"', "sh",
             "--name", "foo", "-e", "X=1", "--rm")
    M.assert_rc(r)
    assert r.out == "--name foo -e X=1 --rm\n", r


def test_default_command_is_bin_sh(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, rootfs, input="echo sh-pid-$$; exit 5\n")
    assert r.rc == 5 and r.out.strip() == "sh-pid-1", r


def test_relative_rootfs_path(mrun, rootfs, name):
    parent, base = os.path.split(rootfs)
    r = mrun("run", "--rm", "--name", name, f"./{base}", "/bin/echo", "rel", cwd=parent)
    M.assert_rc(r)
    assert r.out == "rel\n", r


def test_debug_accepted_globally_and_after_run(mrun, rootfs, names):
    r = mrun("--debug", "run", "--rm", "--name", names(), rootfs, "/bin/echo", "dbg1")
    M.assert_rc(r)
    assert r.out == "dbg1\n", r
    r = mrun("run", "--debug", "--rm", "--name", names(), rootfs, "/bin/echo", "dbg2")
    M.assert_rc(r)
    assert r.out == "dbg2\n", r


# ---- exit codes ----------------------------------------------------------------

@pytest.mark.parametrize("code", [0, 1, 7, 125, 126, 127, 255])
def test_command_exit_code_is_passed_through(mrun, rootfs, name, code):
    r = M.run_sh(mrun, rootfs, f"exit {code}", name=name)
    M.assert_rc(r, code)


def test_command_not_found_is_127(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, rootfs, "/nonexistent")
    M.assert_mrun_error(r, 127, mentions=["/nonexistent"])


def test_command_not_in_path_is_127(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, rootfs, "no-such-program-xyz")
    M.assert_mrun_error(r, 127, mentions=["no-such-program-xyz"])


def test_command_not_executable_is_126(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, rootfs, "/noexec.txt")
    M.assert_mrun_error(r, 126, mentions=["/noexec.txt"])


def test_command_is_a_directory_is_126(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin")
    M.assert_mrun_error(r, 126, mentions=["/bin"])


def test_rootfs_without_the_command_is_127(mrun, tmp_path, name):
    """A rootfs with the usual directories but no /bin/sh."""
    rfs = tmp_path / "no-shell-rootfs"
    for d in ("etc", "proc", "sys", "dev", "tmp", "bin"):
        (rfs / d).mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    r = mrun("run", "--rm", "--name", name, str(rfs))
    M.assert_mrun_error(r, 127, mentions=["/bin/sh"])


def test_bare_rootfs_without_mountpoints_is_127(mrun, tmp_path, name):
    """Only /etc: mrun must create /proc, /dev, /sys mountpoints itself (in
    the upper layer, as crun does) and then report the missing command."""
    rfs = tmp_path / "bare-rootfs"
    (rfs / "etc").mkdir(parents=True)
    os.chmod(tmp_path, 0o755)
    r = mrun("run", "--rm", "--name", name, str(rfs), "/bin/true")
    M.assert_mrun_error(r, 127, mentions=["/bin/true"])
    assert sorted(os.listdir(rfs)) == ["etc"], f"ROOTFS was modified: {os.listdir(rfs)}"


def test_died_of_a_fault_is_128_plus_signal(mrun, rootfs, name):
    """A real SIGSEGV kills even a PID 1: exit 128+11."""
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/mrun-probe", "crash")
    M.assert_rc(r, 128 + signal.SIGSEGV)


def test_killed_from_host_is_137(mrun, rootfs, name):
    """The foreground mrun exits 128+9 when the container's PID 1 is killed
    with `mrun kill NAME KILL`."""
    p = mrun.popen("run", "--rm", "--name", name, rootfs, "/bin/sleep", "1000")
    try:
        M.wait_until(lambda: (mrun.entry(name) or {}).get("status") == "running", 10)
        r = mrun("kill", name, "KILL")
        M.assert_rc(r)
        rc = p.wait(timeout=15)
        assert rc == 137, f"foreground mrun exited {rc}, expected 137; stderr: {p.stderr.read()!r}"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()


def test_exit_is_fast(mrun, rootfs, name):
    """Not a benchmark: a run of /bin/true must not take seconds (a sign of a
    sleep or a timeout on some path)."""
    start = time.monotonic()
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/true")
    M.assert_rc(r)
    assert time.monotonic() - start < 3, f"mrun run /bin/true took {r.elapsed:.2f}s"


def test_messages_name_the_object_and_the_fix(mrun, rootfs, tmp_path, name):
    """The newcomer's first hour: each of these once named neither the option nor a fix."""
    unknown = mrun("frobnicate")
    assert unknown.rc == 125 and 'unknown command "frobnicate"' in unknown.err, unknown
    workdir = mrun("run", "--rm", "--name", name, "--network", "none", "-w", "/etc/passwd",
                   rootfs, "true")
    assert workdir.rc == 125 and "working directory /etc/passwd" in workdir.err, workdir
    assert "-w" in workdir.err, workdir
    afile = tmp_path / "not-a-dir"
    afile.write_text("")
    notdir = mrun("run", "--rm", "--name", name, "--network", "none", str(afile), "true")
    assert notdir.rc == 125 and "is not a directory" in notdir.err, notdir
    assert "No such file" not in notdir.err, notdir
    for verb in (["delete", "nosuch-x"], ["kill", "nosuch-x"], ["state", "nosuch-x"],
                 ["stats", "nosuch-x"], ["exec", "nosuch-x", "true"]):
        r = mrun(*verb)
        assert r.rc == 125 and "container does not exist: nosuch-x" in r.err, (verb, r)


def test_missing_elf_or_script_interpreter_is_named(mrun, rootfs, tmp_path, name):
    """A dynamically linked host program in the busybox image: execve says ENOENT for
    a file that is there; the message names the missing loader instead."""
    dynamic = "/bin/true"  # Debian's coreutils: dynamically linked
    r = mrun("run", "--rm", "--name", name, "--network", "none", "-v", f"{dynamic}:/dyn:ro",
             rootfs, "/dyn")
    assert r.rc == 127 and "ELF interpreter /lib64/ld-linux-x86-64.so.2" in r.err, r
    script = tmp_path / "script"
    script.write_text("#!/usr/bin/no-such-interpreter\n")
    os.chmod(script, 0o755)
    os.chmod(tmp_path, 0o755)
    s = mrun("run", "--rm", "--name", name, "--network", "none", "-v", f"{script}:/s:ro", rootfs, "/s")
    assert s.rc == 127 and "interpreter /usr/bin/no-such-interpreter (the #! line)" in s.err, s
