"""The container process: environment, working dir, user, signals, --init,
-t (pty and window size)."""

import fcntl
import os
import signal
import struct
import subprocess
import termios
import time

import pytest

import mrunlib as M


def _env(out):
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


# ---- environment -------------------------------------------------------------

def test_env_option(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "-e", "A=B", "--env", "C=D=E", "-e", "EMPTY=",
             rootfs, "env")
    M.assert_rc(r)
    env = _env(r.out)
    assert env.get("A") == "B" and env.get("C") == "D=E" and env.get("EMPTY") == "", r


def test_default_env(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, rootfs, "env")
    M.assert_rc(r)
    env = _env(r.out)
    path = env.get("PATH", "").split(":")
    assert "/bin" in path and "/usr/bin" in path, f"default PATH: {env.get('PATH')!r}"
    assert env.get("HOME") == "/root", r
    assert env.get("HOSTNAME") == name, r
    assert "TERM" not in env, f"TERM set without -t (leaked from the host?): {env.get('TERM')!r}"
    assert M.HOST_ONLY_VAR not in env, "the host environment leaked into the container"


def test_env_overrides_default(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "-e", "HOME=/tmp", "-e", "PATH=/bin", rootfs,
             "/usr/bin/env")
    M.assert_rc(r)
    env = _env(r.out)
    assert env.get("HOME") == "/tmp" and env.get("PATH") == "/bin", r


# ---- workdir and user ----------------------------------------------------------

def test_workdir(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "-w", "/tmp", rootfs, "/bin/sh", "-c", "pwd")
    M.assert_rc(r)
    assert r.out == "/tmp\n", r


def test_workdir_long_option(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "--workdir", "/etc", rootfs, "/bin/sh", "-c", "pwd")
    M.assert_rc(r)
    assert r.out == "/etc\n", r


def test_default_workdir_is_root(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/sh", "-c", "pwd")
    M.assert_rc(r)
    assert r.out == "/\n", r


def test_default_user_is_root(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/mrun-probe", "ids")
    M.assert_rc(r)
    assert r.out.startswith("uid=0 euid=0 suid=0 gid=0 egid=0 sgid=0 "), r


def test_user_uid_gid(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "-u", "1000:1000", rootfs, "/bin/sh", "-c",
             "id; /bin/mrun-probe ids")
    M.assert_rc(r)
    assert "uid=1000" in r.lines[0] and "gid=1000" in r.lines[0], r
    ids = dict(kv.split("=") for kv in r.lines[1].split())
    assert ids["uid"] == ids["euid"] == ids["suid"] == "1000", r
    assert ids["gid"] == ids["egid"] == ids["sgid"] == "1000", r
    groups = [g for g in ids["groups"].split(",") if g]
    assert "0" not in groups, f"-u 1000:1000 kept root's supplementary group 0: {r.out}"


def test_user_uid_only(mrun, rootfs, name):
    r = mrun("run", "--user", "1234", "--rm", "--name", name, rootfs, "/bin/mrun-probe", "ids")
    M.assert_rc(r)
    assert r.out.startswith("uid=1234 euid=1234 suid=1234 "), r


def test_user_cannot_write_root_owned_files(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "-u", "1000:1000", rootfs,
             "/bin/mrun-probe", "write", "/bin/newfile")
    assert r.rc == 1 and "EACCES" in r.out, f"uid 1000 could write to root's /bin\n{r!r}"


# ---- signals -------------------------------------------------------------------

def _sigwait(mrun, rootfs, name, sig, *opts):
    p = mrun.popen("run", "--rm", "--name", name, *opts, rootfs, "/bin/mrun-probe", "sigwait", "60")
    lines = M.LineReader(p.stdout)
    try:
        lines.wait_for(lambda line: line == "ready", 15, "the probe's 'ready'")
        os.kill(p.pid, sig)
        signame = signal.Signals(sig).name
        lines.wait_for(lambda line: line == f"got {signame}", 10,
                       f"'got {signame}' (was {signame} forwarded to the container?)")
        if sig != signal.SIGTERM:
            os.kill(p.pid, signal.SIGTERM)
            lines.wait_for(lambda line: line == "got SIGTERM", 10, "'got SIGTERM'")
        rc = p.wait(timeout=10)
        assert rc == 42, f"mrun exited {rc}, expected the probe's 42; stderr: {p.stderr.read()!r}"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1],
                         ids=lambda s: signal.Signals(s).name)
def test_signal_is_forwarded_to_pid_1(mrun, rootfs, name, sig):
    _sigwait(mrun, rootfs, name, sig)


def test_signal_is_forwarded_through_init(mrun, rootfs, name):
    _sigwait(mrun, rootfs, name, signal.SIGTERM, "--init")


# ---- --init --------------------------------------------------------------------

def test_init_makes_command_pid_2(mrun, rootfs, name):
    r = M.run_sh(mrun, rootfs, "echo $$; cat /proc/1/comm", "--init", name=name)
    M.assert_rc(r)
    assert r.lines[0] == "2", f"with --init the command must be PID 2\n{r!r}"
    assert r.lines[1] != "sh", f"PID 1 is the command, not mrun's reaper\n{r!r}"


def test_init_reaps_zombies(mrun, rootfs, name):
    """The probe (PID 2 under --init) orphans 5 grandchildren that exit: they
    are re-parented to PID 1, which must reap them. (The probe is the
    command itself: a shell as PID 1 would reap them too, proving nothing.)"""
    r = mrun("run", "--rm", "--init", "--name", name, rootfs, "/bin/mrun-probe", "zombie", "5")
    assert r.rc == 0 and "zombies_left=0" in r.out, f"zombies were not reaped by --init\n{r!r}"


def test_init_passes_exit_code(mrun, rootfs, name):
    r = M.run_sh(mrun, rootfs, "exit 9", "--init", name=name)
    M.assert_rc(r, 9)


def test_without_init_the_command_is_pid_1_and_reaps_nothing(mrun, rootfs, name):
    """Control for the zombie probe: as PID 1 it does not reap its orphans,
    so it must see zombies (if it did not, the --init test would prove
    nothing)."""
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/mrun-probe", "zombie", "2")
    assert r.rc == 1 and "zombies_left=2" in r.out, r


# ---- -t ------------------------------------------------------------------------

def _set_winsize(fd, rows, cols):
    fcntl.ioctl(fd, termios.TIOCSWINSZ, struct.pack("HHHH", rows, cols, 0, 0))


def _spawn_on_pty(mrun, args, rows, cols):
    master, slave = os.openpty()
    _set_winsize(slave, rows, cols)

    def make_controlling_tty():
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)

    p = subprocess.Popen(mrun.argv(*args), stdin=slave, stdout=slave, stderr=slave,
                         env=mrun.env, start_new_session=True, preexec_fn=make_controlling_tty)
    os.close(slave)
    return p, master


TTY_SCRIPT = ("tty; [ -t 0 ] && echo STDIN-IS-TTY; [ -t 1 ] && echo STDOUT-IS-TTY; "
              "echo TERM=$TERM; echo SIZE $(stty size); echo READY; "
              "while read l; do [ \"$l\" = q ] && exit 3; echo SIZE $(stty size); done")


def test_tty_is_a_pty_with_the_callers_window_size(mrun, rootfs, name):
    p, master = _spawn_on_pty(mrun, ["run", "--rm", "-t", "--name", name, rootfs, "/bin/sh",
                                     "-c", TTY_SCRIPT], 33, 111)
    out = M.LineReader(master)
    try:
        out.wait_for(lambda line: line.endswith("READY"), 15, "READY from the container")
        seen = out.seen
        assert any(line.startswith("/dev/pts/") for line in seen), f"tty inside: {seen}"
        assert "STDIN-IS-TTY" in seen and "STDOUT-IS-TTY" in seen, seen
        term = [line for line in seen if line.startswith("TERM=")]
        assert term and term[0] != "TERM=", f"TERM not set with -t: {seen}"
        assert "SIZE 33 111" in seen, f"window size not taken from the caller's terminal: {seen}"

        # Resize the caller's terminal; the kernel sends SIGWINCH to mrun's
        # foreground process group, and we send one to mrun itself as well.
        _set_winsize(master, 44, 122)
        M.kill_quietly(p.pid, signal.SIGWINCH)
        sizes = []
        for _ in range(20):
            os.write(master, b"x\n")
            line = out.wait_for(lambda line: line.startswith("SIZE "), 10, "SIZE after resize")
            sizes.append(line)
            if line == "SIZE 44 122":
                break
            time.sleep(0.1)
        assert sizes[-1] == "SIZE 44 122", f"SIGWINCH did not resize the container's pty: {sizes}"
        os.write(master, b"q\n")
        rc = p.wait(timeout=10)
        assert rc == 3, f"mrun -t exited {rc}, expected 3; output: {out.seen}"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)


def test_without_tty_stdin_is_not_a_terminal(mrun, rootfs, name):
    r = M.run_sh(mrun, rootfs, "[ -t 0 ] && echo TTY || echo NOTTY; tty", name=name)
    assert r.lines[0] == "NOTTY", r


def test_tty_output_and_exit_code(mrun, rootfs, name):
    p, master = _spawn_on_pty(mrun, ["run", "--rm", "--tty", "--name", name, rootfs, "/bin/sh",
                                     "-c", "echo hello-tty; exit 6"], 24, 80)
    out = M.LineReader(master)
    try:
        out.wait_for(lambda line: "hello-tty" in line, 15, "output through the pty")
        rc = p.wait(timeout=10)
        assert rc == 6, f"mrun -t exited {rc}, expected 6"
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        os.close(master)
