"""Isolation policy: capabilities, no_new_privs, the seccomp profile,
and an escape suite run inside the container by mrun-probe.

Every check reads what the kernel says (/proc/self/status, the errno of a
real syscall), never what mrun says about itself. Each escape attempt is
asserted by errno, and a control shows the same attempt working where the
policy is off, so a test that passes cannot pass by accident.
"""

import json
import os
import re
import subprocess

import pytest

import mrunlib as M

# policy/caps.conf: podman's 11 default capabilities, CHOWN(0) DAC_OVERRIDE(1)
# FOWNER(3) FSETID(4) KILL(5) SETGID(6) SETUID(7) SETPCAP(8) NET_BIND_SERVICE(10)
# SYS_CHROOT(18) SETFCAP(31) (podman's CapBnd: 00000000800405fb), and NET_RAW(13),
# as Docker keeps it, for ping.
DEFAULT_CAPS = 0x800425FB
CAP = {"CHOWN": 0, "KILL": 5, "NET_BIND_SERVICE": 10, "NET_ADMIN": 12, "NET_RAW": 13,
       "SYS_ADMIN": 21, "SYS_TIME": 25}


# policy/ of the tree under test: run.sh stages a readable copy and names it in
# MRUN_IT_POLICY_DIR (the clone itself may be unreadable to the rootless user).
POLICY_DIR = os.environ.get("MRUN_IT_POLICY_DIR") or os.path.join(M.REPO, "policy")


def all_caps():
    with open("/proc/sys/kernel/cap_last_cap") as f:
        return (1 << (int(f.read()) + 1)) - 1


def status_of(mrun, rootfs, *opts, name=None, path="/proc/self/status"):
    """The container command's /proc status fields, as a dict of strings."""
    r = M.run_sh(mrun, rootfs, f"cat {path}", *opts, name=name)
    M.assert_rc(r)
    fields = {}
    for line in r.out.splitlines():
        key, _, value = line.partition(":")
        fields[key] = value.strip()
    return fields, r


def caps_of(fields, which):
    return int(fields[which], 16)


def names_of(mask):
    return sorted(n for n, bit in CAP.items() if mask & (1 << bit)) + [f"0x{mask:x}"]


# ---- capabilities, no_new_privs, seccomp mode ------------------------------------

def test_default_root_has_the_default_set_no_new_privs_and_a_filter(mrun, rootfs, name):
    s, r = status_of(mrun, rootfs, name=name)
    assert s["Seccomp"] == "2", f"no seccomp filter (Seccomp: {s['Seccomp']})\n{r!r}"
    assert s["NoNewPrivs"] == "1", r
    for field in ("CapBnd", "CapEff", "CapPrm"):
        assert caps_of(s, field) == DEFAULT_CAPS, (
            f"{field} {s[field]}, expected {DEFAULT_CAPS:016x} (caps.conf)\n{r!r}")
    assert caps_of(s, "CapInh") == 0, r
    assert caps_of(s, "CapAmb") == 0, r


def test_non_root_user_gets_an_empty_effective_set(mrun, rootfs, name):
    s, r = status_of(mrun, rootfs, "-u", "1000:1000", name=name)
    assert s["Uid"].split()[0] == "1000", r
    for field in ("CapEff", "CapPrm", "CapInh", "CapAmb"):
        assert caps_of(s, field) == 0, f"{field} {s[field]} for a non-root user\n{r!r}"
    assert caps_of(s, "CapBnd") == DEFAULT_CAPS, r
    assert s["NoNewPrivs"] == "1" and s["Seccomp"] == "2", r


def test_cap_drop_all_gives_zero(mrun, rootfs, name):
    s, r = status_of(mrun, rootfs, "--cap-drop", "ALL", name=name)
    for field in ("CapBnd", "CapEff", "CapPrm", "CapInh", "CapAmb"):
        assert caps_of(s, field) == 0, f"{field} {s[field]} after --cap-drop ALL\n{r!r}"


def test_cap_add_and_cap_drop(mrun, rootfs, name):
    s, r = status_of(mrun, rootfs, "--cap-add", "NET_ADMIN", "--cap-add", "cap_sys_time",
                     "--cap-drop", "CHOWN,KILL", name=name)
    want = (DEFAULT_CAPS | 1 << CAP["NET_ADMIN"] | 1 << CAP["SYS_TIME"]) & \
        ~(1 << CAP["CHOWN"] | 1 << CAP["KILL"])
    for field in ("CapBnd", "CapEff"):
        assert caps_of(s, field) == want, (
            f"{field} {names_of(caps_of(s, field))}, expected {names_of(want)}\n{r!r}")


def test_cap_drop_all_then_add_one(mrun, rootfs, name):
    s, r = status_of(mrun, rootfs, "--cap-drop", "ALL", "--cap-add", "NET_BIND_SERVICE", name=name)
    assert caps_of(s, "CapEff") == 1 << CAP["NET_BIND_SERVICE"], r
    assert caps_of(s, "CapBnd") == 1 << CAP["NET_BIND_SERVICE"], r


def test_cap_add_reaches_a_non_root_user_through_the_ambient_set(mrun, rootfs, name):
    """As in podman: a non-root user gets only what --cap-add names, in every set,
    ambient included, so that it survives execve."""
    bit = 1 << CAP["NET_BIND_SERVICE"]
    s, r = status_of(mrun, rootfs, "-u", "1000:1000", "--cap-add", "NET_BIND_SERVICE", name=name)
    for field in ("CapEff", "CapPrm", "CapInh", "CapAmb"):
        assert caps_of(s, field) == bit, f"{field} {s[field]}\n{r!r}"


def test_privileged_gets_every_capability_and_no_filter(mrun, rootfs, name):
    s, r = status_of(mrun, rootfs, "--privileged", name=name)
    assert s["Seccomp"] == "0", r
    # Every capability mrun holds: all of them in a new user namespace (rootless: the
    # kernel gives its creator a full bounding set there); rootful, those of root's own
    # bounding set (this host's root lacks CAP_SYS_RESOURCE).
    with open("/proc/self/status") as f:
        ours = int([line for line in f if line.startswith("CapBnd:")][0].split()[1], 16)
    want = ours if M.ROOTFUL else all_caps()
    assert caps_of(s, "CapEff") == want, (
        f"CapEff {s['CapEff']}, expected {want:016x}\n{r!r}")
    assert caps_of(s, "CapBnd") == want, r


def _host_x32():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.syscall.restype = ctypes.c_long
    return libc.syscall(ctypes.c_long(0x40000000 | 39)) >= 0  # getpid, x32 ABI


_i386 = {}


def _host_i386():
    """Whether this kernel runs i386 syscalls (int 0x80) at all: one built without
    IA32_EMULATION, or booted with ia32_emulation=0, kills the caller with SIGSEGV
    instead, so there is no i386 ABI for a filter to cover."""
    if "runs" not in _i386:
        p = subprocess.run([M.PROBE, "escape-suite", "0", "/", "keyctl_i386"],
                           capture_output=True, text=True, timeout=20, cwd="/tmp")
        _i386["runs"] = not parse_suite(p.stdout).get("keyctl_i386", "skip").startswith("skip")
    return _i386["runs"]


def test_an_x32_syscall_gets_the_kernels_own_answer(mrun, rootfs, name):
    """Where the kernel runs no x32 syscalls (Debian's default), the filter leaves the
    x32 ABI out (a third fewer instructions to load at every start) and answers ENOSYS,
    as the kernel does: never a kill, never success. Where it runs them, the profile's
    x32 rules apply as before (getpid allowed)."""
    import platform
    if platform.machine() != "x86_64":
        pytest.skip("x32 is an x86-64 ABI")
    r = mrun("--debug", "run", "--rm", "--name", name, "--network", "none", rootfs,
             "/bin/mrun-probe", "x32")
    M.assert_rc(r)
    want = "x32=ok" if _host_x32() else "x32 errno=ENOSYS"
    assert r.out.strip() == want, r
    # The program's size no longer tells (the binary-tree layout adds instructions):
    # the compiler says what it did with the archMap's x32 part.
    said = re.search(r"BPF instructions, x32 syscalls (filtered|left out)", r.err)
    assert said, r
    assert said.group(1) == ("filtered" if _host_x32() else "left out"), r


def test_seccomp_unconfined_keeps_caps_and_no_new_privs(mrun, rootfs, name):
    s, r = status_of(mrun, rootfs, "--security-opt", "seccomp=unconfined", name=name)
    assert s["Seccomp"] == "0", r
    assert s["NoNewPrivs"] == "1", r
    assert caps_of(s, "CapEff") == DEFAULT_CAPS, r


@pytest.mark.parametrize("user", ["0:0", "1000:1000"])
def test_no_new_privileges_false_still_loads_the_filter(mrun, rootfs, name, user):
    """Without no_new_privs the kernel demands CAP_SYS_ADMIN to load a filter:
    mrun must keep it just long enough, and not leave it behind."""
    s, r = status_of(mrun, rootfs, "-u", user, "--security-opt", "no-new-privileges=false",
                     name=name)
    assert s["NoNewPrivs"] == "0" and s["Seccomp"] == "2", r
    want = DEFAULT_CAPS if user == "0:0" else 0
    assert caps_of(s, "CapEff") == want and caps_of(s, "CapPrm") == want, r
    assert not caps_of(s, "CapEff") & 1 << CAP["SYS_ADMIN"], r


def test_init_reaper_keeps_only_cap_kill(mrun, rootfs, name):
    s, r = status_of(mrun, rootfs, "--init", name=name, path="/proc/1/status")
    assert caps_of(s, "CapEff") == 1 << CAP["KILL"], r
    assert caps_of(s, "CapBnd") == 1 << CAP["KILL"], r
    assert s["NoNewPrivs"] == "1", r


# ---- the escape suite -------------------------------------------------------------

# attempt -> (errnos that count as refused, why). "empty": a read returned nothing.
REFUSED = {
    "keyctl": ({"EPERM"}, "seccomp: the keyring is not namespaced"),
    "add_key": ({"EPERM"}, "seccomp"),
    "request_key": ({"EPERM"}, "seccomp"),
    "keyctl_i386": ({"EPERM"}, "seccomp filter covers the i386 ABI (int 0x80)"),
    # The filter covers the x32 ABI where the kernel runs it (EPERM); where it does not
    # (Debian's default), it answers the kernel's own ENOSYS for every x32 syscall.
    "keyctl_x32": ({"EPERM", "ENOSYS"}, "seccomp filter covers the x32 ABI"),
    "bpf": ({"EPERM"}, "seccomp without CAP_SYS_ADMIN"),
    "perf_event_open": ({"EPERM"}, "seccomp without CAP_SYS_ADMIN"),
    "open_by_handle_at": ({"EPERM"}, "seccomp without CAP_DAC_READ_SEARCH"),
    "mount_proc": ({"EPERM"}, "no CAP_SYS_ADMIN"),
    "mount_sysfs": ({"EPERM"}, "no CAP_SYS_ADMIN"),
    "umount_mask": ({"EPERM"}, "no CAP_SYS_ADMIN"),
    "remount_proc_sys": ({"EPERM"}, "no CAP_SYS_ADMIN"),
    # Read-only bind: EROFS; rootless the DAC check on a host-root file comes first.
    "sysrq_trigger": ({"EROFS", "EACCES"}, "read-only path"),
    "proc_sys_kernel": ({"EROFS", "EACCES"}, "/proc/sys is read-only"),
    "kcore": ({"empty", "EACCES", "EPERM"}, "masked by /dev/null"),
    "proc_keys": ({"empty", "EACCES", "EPERM"}, "masked by /dev/null"),
    "unshare_userns": ({"EPERM"}, "seccomp: no nested user namespace"),
    "clone_userns": ({"EPERM"}, "seccomp: no nested user namespace"),
    # clone3's flags are in memory the filter cannot read: ENOSYS, so libc falls back.
    "clone3_userns": ({"ENOSYS"}, "seccomp: clone3 returns ENOSYS"),
    "ptrace_host": ({"ESRCH"}, "the host pid does not exist in the PID namespace"),
    "init_module": ({"EPERM"}, "seccomp without CAP_SYS_MODULE"),
    "finit_module": ({"EPERM"}, "seccomp without CAP_SYS_MODULE"),
    "delete_module": ({"EPERM"}, "seccomp without CAP_SYS_MODULE"),
    "kexec_load": ({"EPERM"}, "seccomp"),
    "kexec_file_load": ({"EPERM"}, "seccomp"),
    # Outside podman's safe set the profile's default action answers: ENOSYS.
    "personality": ({"ENOSYS"}, "seccomp: personality outside the safe set"),
    "userfaultfd": ({"EPERM"}, "seccomp"),
}

# Files a kernel may not have: without them the attempt proves nothing.
NEEDS_HOST_FILE = {"sysrq_trigger": "/proc/sysrq-trigger", "kcore": "/proc/kcore",
                   "proc_keys": "/proc/keys"}


def parse_suite(out):
    results = {}
    for line in out.splitlines():
        attempt, _, outcome = line.partition(" ")
        outcome = outcome.removeprefix("errno=")
        results[attempt] = outcome
    return results


@pytest.fixture(scope="module")
def suite_results(rootfs, tmp_path_factory):
    """One container runs every attempt (default policy, a host directory
    bind-mounted for open_by_handle_at). A host pid for ptrace: our own."""
    host = tmp_path_factory.mktemp("handle")
    os.chmod(host, 0o755)
    r = M.Mrun()("run", "--rm", "-v", f"{host}:/handle", rootfs,
                 "/bin/mrun-probe", "escape-suite", str(os.getpid()), "/handle", timeout=60)
    assert r.rc in (0, 1), f"the probe could not run the escape suite\n{r!r}"
    return parse_suite(r.out), r


def test_escape_suite_knows_every_attempt(rootfs):
    out = subprocess.run([M.PROBE, "escape-list"], capture_output=True, text=True, check=True).stdout
    assert sorted(out.split()) == sorted(REFUSED), "the test table and the probe disagree"


@pytest.mark.parametrize("attempt", sorted(REFUSED))
def test_escape_attempt_is_refused(suite_results, attempt):
    results, r = suite_results
    want, why = REFUSED[attempt]
    if attempt in NEEDS_HOST_FILE and not os.path.exists(NEEDS_HOST_FILE[attempt]):
        pytest.skip(f"this kernel has no {NEEDS_HOST_FILE[attempt]} (its config leaves it "
                    f"out), so there is nothing to mask or protect")
    if attempt == "keyctl_i386" and not _host_i386():
        pytest.skip("this kernel runs no i386 syscalls (int 0x80 is SIGSEGV on the host too): "
                    "there is no i386 ABI for the filter to cover")
    got = results.get(attempt)
    assert got is not None, f"the probe did not report {attempt}\n{r!r}"
    assert not got.startswith("skip"), f"{attempt}: {got}\n{r!r}"
    assert got != "ok", f"ESCAPE: {attempt} worked inside the container ({why})\n{r!r}"
    assert got in want, f"{attempt}: refused with {got}, expected {sorted(want)} ({why})\n{r!r}"
    if attempt == "keyctl_x32":
        x32 = "EPERM" if _host_x32() else "ENOSYS"
        assert got == x32, f"{attempt}: {got}, expected {x32} on this kernel\n{r!r}"


# Attempts that only the seccomp filter stops (the capabilities and namespaces
# would let them through): with seccomp=unconfined they must work, proving the
# filter (and not an accident of this host) refused them above.
FILTER_ONLY = ["keyctl", "add_key", "request_key", "keyctl_i386", "unshare_userns",
               "clone_userns", "clone3_userns", "personality", "userfaultfd"]


def test_control_unconfined_lets_filter_only_attempts_through(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "--security-opt", "seccomp=unconfined", rootfs,
             "/bin/mrun-probe", "escape-suite", "0", "/", *FILTER_ONLY)
    results = parse_suite(r.out)
    # Without i386 emulation in this kernel the i386 attempt cannot work anywhere.
    expected = [a for a in FILTER_ONLY if a != "keyctl_i386" or _host_i386()]
    worked = [a for a in expected if results.get(a) == "ok"]
    assert worked == expected, (
        f"without a filter these should work: {sorted(set(expected) - set(worked))} did not\n{r!r}")


def test_control_the_probe_detects_escapes_on_the_host():
    """Outside any container the same attempts work (those an unprivileged
    user may make), or a refused attempt above would prove nothing."""
    attempts = ["keyctl", "add_key", "unshare_userns", "personality", "userfaultfd", "proc_keys"]
    if M.ROOTFUL:
        attempts += ["bpf", "open_by_handle_at", "mount_proc", "ptrace_host"]
    sleeper = subprocess.Popen(["sleep", "30"])
    try:
        p = subprocess.run([M.PROBE, "escape-suite", str(sleeper.pid), "/", *attempts],
                           capture_output=True, text=True, timeout=20, cwd="/tmp")
    finally:
        sleeper.kill()
        sleeper.wait()
    results = parse_suite(p.stdout)
    assert all(results.get(a) == "ok" for a in attempts), (p.returncode, p.stdout, p.stderr)


def test_setuid_binary_gains_nothing_under_no_new_privs(mrun, private_rootfs, name, names):
    """A setuid-root copy of the probe, run as uid 1000: euid stays 1000 with
    no_new_privs (the default); the control without it shows euid 0."""
    suid = os.path.join(private_rootfs, "bin/suid-probe")
    with open(M.PROBE, "rb") as src, open(suid, "wb") as dst:
        dst.write(src.read())
    os.chmod(suid, 0o4755)  # owned by us: container root (rootless) or root (rootful)
    r = mrun("run", "--rm", "--name", name, "-u", "1000:1000", private_rootfs,
             "/bin/suid-probe", "ids")
    M.assert_rc(r)
    assert "euid=1000 " in r.out, f"the setuid bit raised privilege under no_new_privs\n{r!r}"
    control = mrun("run", "--rm", "--name", names(), "-u", "1000:1000", "--security-opt",
                   "no-new-privileges=false", private_rootfs, "/bin/suid-probe", "ids")
    M.assert_rc(control)
    assert "euid=0 " in control.out, (
        f"control: without no_new_privs the setuid bit should work, so this test could "
        f"not tell\n{control!r}")


def test_chroot_escape_probe_still_has_sys_chroot(mrun, rootfs, name):
    """CAP_SYS_CHROOT is in the default set (the chroot escape test relies on it)."""
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/mrun-probe", "escape", M.host_root_id())
    assert r.rc == 0 and "escaped=no" in r.out, r


# ---- user profiles ------------------------------------------------------------------

def write_profile(tmp_path, profile):
    path = tmp_path / "profile.json"
    path.write_text(profile if isinstance(profile, str) else json.dumps(profile, indent=2))
    os.chmod(tmp_path, 0o755)
    os.chmod(path, 0o644)
    return str(path)


def test_user_profile_is_loaded_and_applied(mrun, rootfs, name, names, tmp_path):
    """A podman-style profile of the user's: allow everything but mkdir/mkdirat,
    which fail with EACCES (13); the same command without it works."""
    path = write_profile(tmp_path, {
        "defaultAction": "SCMP_ACT_ALLOW",
        "archMap": [{"architecture": "SCMP_ARCH_X86_64",
                     "subArchitectures": ["SCMP_ARCH_X86", "SCMP_ARCH_X32"]}],
        "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO",
                      "errnoRet": 13, "comment": "test"}],
    })
    r = M.run_sh(mrun, rootfs, "mkdir /tmp/d; echo rc=$?; grep Seccomp: /proc/self/status",
                 "--security-opt", f"seccomp={path}", name=name)
    assert "Permission denied" in r.err + r.out and "rc=1" in r.out, r
    assert "Seccomp:\t2" in r.out, r
    ok = M.run_sh(mrun, rootfs, "mkdir /tmp/d && echo made", name=names())
    assert "made" in ok.out, ok


def test_user_profile_unknown_syscall_is_skipped_with_one_warning(mrun, rootfs, name, tmp_path):
    path = write_profile(tmp_path, {
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": ["mkdir", "mrun_no_such_syscall", "mkdirat"],
                      "action": "SCMP_ACT_ERRNO", "errnoRet": 1}],
    })
    r = M.run_sh(mrun, rootfs, "mkdir /tmp/d; echo rc=$?", "--security-opt", f"seccomp={path}",
                 name=name)
    M.assert_rc(r)
    assert "rc=1" in r.out, f"the rest of the rule must still apply\n{r!r}"
    warnings = [line for line in r.err.splitlines() if "warning" in line]
    assert len(warnings) == 1 and "mrun_no_such_syscall" in warnings[0], r


def test_the_default_profile_as_a_file_loads(mrun, rootfs, name, tmp_path):
    """policy/seccomp/default.json given as seccomp=PATH behaves as the built-in
    default: the format is the one users already have."""
    src = os.path.join(POLICY_DIR, "seccomp/default.json")
    if not os.access(src, os.R_OK):
        pytest.skip(f"{src} is not readable by this user (the clone sits where "
                    f"{M.USER} cannot read it)")
    with open(src) as f:
        path = write_profile(tmp_path, f.read())
    r = mrun("run", "--rm", "--name", name, "--security-opt", f"seccomp={path}", rootfs,
             "/bin/mrun-probe", "escape-suite", "0", "/", "keyctl", "unshare_userns")
    assert parse_suite(r.out) == {"keyctl": "EPERM", "unshare_userns": "EPERM"}, r


def test_mrun_policy_dir_overrides_the_built_in_policy(mrun, rootfs, name, tmp_path):
    """$MRUN_POLICY_DIR replaces the compiled-in policy/: here a caps.conf with
    KILL only, and a profile that denies mkdir with EACCES."""
    os.makedirs(tmp_path / "policy/seccomp")
    (tmp_path / "policy/caps.conf").write_text("# test\nCAP_KILL\n")
    (tmp_path / "policy/seccomp/default.json").write_text(json.dumps({
        "defaultAction": "SCMP_ACT_ALLOW",
        "syscalls": [{"names": ["mkdir", "mkdirat"], "action": "SCMP_ACT_ERRNO", "errnoRet": 13}]}))
    for d, _, files in os.walk(tmp_path):
        os.chmod(d, 0o755)
        for f in files:
            os.chmod(os.path.join(d, f), 0o644)
    runner = mrun.with_env(MRUN_POLICY_DIR=str(tmp_path / "policy"))
    r = M.run_sh(runner, rootfs, "grep CapEff /proc/self/status; mkdir /tmp/d; echo rc=$?",
                 name=name)
    assert f"CapEff:\t{1 << CAP['KILL']:016x}" in r.out and "rc=1" in r.out, r
    bad = tmp_path / "policy/caps.conf"
    bad.write_text("CAP_KILL\nCAP_FLY\n")
    r = runner("run", "--rm", "--name", name, rootfs, "true")
    M.assert_mrun_error(r, 125, [str(bad) + ":2", "CAP_FLY"])


# ---- bad input: 125, one line naming the problem, nothing left behind -------------

@pytest.mark.parametrize("text,mentions", [
    ('{"defaultAction": "SCMP_ACT_ERRNO",\n "syscalls": [\n  {"names": ["read"], }\n]}',
     ["line 3", "invalid JSON"]),
    ('{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_BOGUS"}]}',
     ["syscalls[0].action", "SCMP_ACT_BOGUS"]),
    ('{"defaultAction": "SCMP_ACT_ERRNO", "syscalls": [{"names": ["read"], "action": "SCMP_ACT_ALLOW",'
     ' "args": [{"index": 7, "value": 1, "op": "SCMP_CMP_EQ"}]}]}',
     ["syscalls[0].args[0].index"]),
    ('{"syscalls": []}', ["defaultAction"]),
    ('["not", "an", "object"]', ["top level"]),
], ids=["syntax", "action", "arg-index", "no-default", "not-object"])
def test_malformed_profile_fails_before_starting(mrun, rootfs, name, tmp_path, text, mentions):
    path = write_profile(tmp_path, text)
    r = mrun("run", "--rm", "--name", name, "--security-opt", f"seccomp={path}", rootfs,
             "/bin/mrun-probe", "ids")
    M.assert_mrun_error(r, 125, [path, *mentions])
    assert "uid=" not in r.out, f"the command ran\n{r!r}"


def test_missing_profile_file(mrun, rootfs, name, tmp_path):
    path = str(tmp_path / "absent.json")
    r = mrun("run", "--rm", "--name", name, "--security-opt", f"seccomp={path}", rootfs, "true")
    M.assert_mrun_error(r, 125, [path])


@pytest.mark.parametrize("opts,mentions", [
    (["--cap-add", "CAP_NOT_A_CAP"], ["CAP_NOT_A_CAP"]),
    (["--cap-drop", "bogus"], ["bogus"]),
    (["--cap-add", "NET_ADMIN", "--cap-drop", "NET_ADMIN"], ["CAP_NET_ADMIN"]),
    (["--security-opt", "apparmor=unconfined"], ["apparmor"]),
    (["--security-opt", "no-new-privileges=maybe"], ["no-new-privileges=maybe"]),
], ids=["cap-add", "cap-drop", "add-and-drop", "unknown-opt", "nnp-value"])
def test_bad_security_options(mrun, rootfs, name, opts, mentions):
    r = mrun("run", "--rm", "--name", name, *opts, rootfs, "true")
    M.assert_mrun_error(r, 125, mentions)
