#!/usr/bin/env python3
"""hostile_exec.py STATE COMMAND...: runs COMMAND with one piece of inherited process
state a careless caller may leave (a shell's trap, a daemon's closed stdio, a login's
limits), then gets out of the way (exec, same process).

Used by test_inherited_state.py and test_devices.py for mrun, runc and the helper
alike, and by tests/vm's login-shell runs. `hostile_exec.py --list` names the states.
"""

import os
import resource
import signal
import sys
import tempfile


def own_process_count():
    """Processes (threads count too, as RLIMIT_NPROC counts them) of our real uid."""
    uid, count = os.getuid(), 0
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/status") as f:
                fields = dict(line.split(":", 1) for line in f if ":" in line)
            if int(fields["Uid"].split()[0]) == uid:
                count += int(fields["Threads"])
        except (OSError, KeyError, ValueError):
            continue
    return count


def unwritable_dir():
    """$MRUN_HOSTILE_UNWRITABLE (a caller's 0500 directory of ours), else /proc, where
    mkdir fails whatever the capabilities."""
    return os.environ.pop("MRUN_HOSTILE_UNWRITABLE", "") or "/proc"


def close_fds(*fds):
    for fd in fds:
        os.close(fd)


def closed_pipe_stdout():
    r, w = os.pipe()
    os.close(r)
    os.dup2(w, 1)
    os.close(w)


def deleted_cwd():
    d = tempfile.mkdtemp(prefix="mrun-deleted-cwd-")
    os.chdir(d)
    os.rmdir(d)


def devnull_stdio():
    fd = os.open("/dev/null", os.O_RDWR)
    for n in (0, 1, 2):
        os.dup2(fd, n)
    os.close(fd)


def big_environment():
    # 1 MiB in 1 KiB values: one string may not pass MAX_ARG_STRLEN (128 KiB).
    for i in range(1024):
        os.environ[f"MRUN_HOSTILE_BIG_{i}"] = "x" * 1000


STATES = {
    "sigchld-ignored": lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN),
    "sigpipe-ignored": lambda: signal.signal(signal.SIGPIPE, signal.SIG_IGN),
    "signals-blocked": lambda: signal.pthread_sigmask(signal.SIG_BLOCK, signal.valid_signals()),
    "stdin-closed": lambda: close_fds(0),
    "stdio-closed": lambda: close_fds(0, 1, 2),
    "stdio-devnull": devnull_stdio,
    "stdout-closed-pipe": closed_pipe_stdout,
    "umask-0777": lambda: os.umask(0o777),
    "umask-0000": lambda: os.umask(0o000),
    "nofile-16": lambda: resource.setrlimit(
        resource.RLIMIT_NOFILE, (16, resource.getrlimit(resource.RLIMIT_NOFILE)[1])),
    "nproc-at-count": lambda: resource.setrlimit(
        resource.RLIMIT_NPROC, (own_process_count(), resource.getrlimit(resource.RLIMIT_NPROC)[1])),
    "cwd-deleted": deleted_cwd,
    "home-unset": lambda: os.environ.pop("HOME", None),
    "home-unwritable": lambda: os.environ.__setitem__("HOME", unwritable_dir()),
    "xdg-runtime-dir-unset": lambda: os.environ.pop("XDG_RUNTIME_DIR", None),
    "xdg-runtime-dir-unwritable": lambda: os.environ.__setitem__("XDG_RUNTIME_DIR", unwritable_dir()),
    "env-1mib": big_environment,
    "tmpdir-missing": lambda: os.environ.__setitem__("TMPDIR", "/nonexistent/mrun-no-tmpdir"),
}


def main(argv):
    if argv[1:] == ["--list"]:
        print("\n".join(STATES))
        return 0
    if len(argv) < 3 or argv[1] not in STATES:
        print(f"usage: {argv[0]} STATE COMMAND... (STATE: one of --list)", file=sys.stderr)
        return 2
    state, command = argv[1], argv[2:]
    STATES[state]()
    # Python itself ignores SIGPIPE and leaves SIGXFSZ so: put back the kernel's default
    # unless the state is about them, so that only STATE differs from a fresh process.
    if state != "sigpipe-ignored":
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
    os.execvp(command[0], command)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
