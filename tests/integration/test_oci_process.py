"""The container's process as the runtime spec's `process` says, the same for the
container's command, `mrun exec` and `mrun exec --process`: additionalGids, all five
capability sets, rlimits and oomScoreAdj applied in the container only (never to mrun
itself), HOME from the image's /etc/passwd. Each effect is read inside the container,
from /proc/self."""

import json
import os
import resource
import subprocess

import pytest

import mrunlib as M
from test_oci import _bundle, _read_until

CAP = {"CAP_CHOWN": 0, "CAP_KILL": 5, "CAP_SETUID": 7, "CAP_NET_RAW": 13, "CAP_SYS_ADMIN": 21}

# What the process reports about itself: groups and capability sets, RLIMIT_NOFILE,
# the OOM score adjustment and HOME.
REPORT = ("grep -E '^(Groups|Cap(Inh|Prm|Eff|Bnd|Amb)):' /proc/self/status; "
          "grep 'Max open files' /proc/self/limits; "
          "echo oom=$(cat /proc/self/oom_score_adj); echo HOME=$HOME")


def _mask(*names):
    return sum(1 << CAP[n] for n in names)


def _parse(out):
    r = {}
    for line in out.splitlines():
        if line.startswith("Groups:"):
            r["groups"] = sorted(int(g) for g in line.split()[1:])
        elif line.startswith("Cap"):
            key, value = line.split()
            r[key.rstrip(":")] = int(value, 16)
        elif line.startswith("Max open files"):
            soft, hard = line.split()[3:5]
            r["nofile"] = (int(soft), int(hard))
        elif line.startswith("oom="):
            r["oom"] = int(line[4:])
        elif line.startswith("HOME="):
            r["home"] = line[5:]
    return r


def _own_oom():
    with open("/proc/self/oom_score_adj") as f:
        return int(f.read())


def _holds_sys_resource():
    """Whether we (and so a rootful mrun) hold CAP_SYS_RESOURCE in the host's user
    namespace; the session's root may not (a sandbox's bounding set)."""
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("CapEff:"):
                return M.ROOTFUL and bool(int(line.split()[1], 16) & (1 << 24))
    return False


def _limits_of(pid):
    with open(f"/proc/{pid}/limits") as f:
        for line in f:
            if line.startswith("Max open files"):
                soft, hard = line.split()[3:5]
                return int(soft), int(hard)
    raise AssertionError(f"no Max open files in /proc/{pid}/limits")


@pytest.fixture
def app_rootfs(private_rootfs):
    """The session rootfs with uid 1000 in its /etc/passwd (home /home/app)."""
    with open(os.path.join(private_rootfs, "etc/passwd"), "a") as f:
        f.write("app:x:1000:1000:app:/home/app:/bin/sh\n")
    return private_rootfs


def _config(mrun, tmp_path, rootfs, args, **process):
    """A bundle whose maps mrun plans itself (rootless: with the subordinate ids, so
    that uid 1000 and the extra groups are mapped)."""
    bundle = _bundle(mrun, tmp_path, rootfs, args, **process)
    path = bundle / "config.json"
    config = json.loads(path.read_text())
    config["linux"].pop("uidMappings", None)
    config["linux"].pop("gidMappings", None)
    path.write_text(json.dumps(config))
    return bundle


def test_process_fields_in_the_container_exec_and_exec_process(mrun, app_rootfs, name, tmp_path):
    own_nofile = resource.getrlimit(resource.RLIMIT_NOFILE)
    if own_nofile[0] < 200:
        pytest.skip(f"our own RLIMIT_NOFILE {own_nofile} is below the test's 100/200")
    own_oom = _own_oom()
    oom = min(own_oom + 100, 1000)  # raising needs no privilege, rootless too
    caps = {"bounding": ["CAP_CHOWN", "CAP_KILL", "CAP_NET_RAW", "CAP_SETUID"],
            "effective": ["CAP_KILL", "CAP_CHOWN"],
            "permitted": ["CAP_KILL", "CAP_CHOWN"],
            "inheritable": ["CAP_CHOWN", "CAP_NET_RAW"],
            "ambient": ["CAP_CHOWN"]}
    bundle = _config(mrun, tmp_path, app_rootfs,
                     ["/bin/sh", "-c", REPORT + "; echo READY; exec sleep 1000"],
                     user={"uid": 1000, "gid": 1000, "additionalGids": [10, 20]},
                     capabilities=caps,
                     rlimits=[{"type": "RLIMIT_NOFILE", "soft": 100, "hard": 200}],
                     oomScoreAdj=oom,
                     env=["PATH=/bin:/usr/bin"])  # no HOME: from the image's passwd
    # For uid 1000, execve keeps only what is ambient in permitted and effective; the
    # bounding and inheritable sets stay as given.
    expected = {"groups": [10, 20], "CapBnd": _mask(*caps["bounding"]),
                "CapInh": _mask(*caps["inheritable"]), "CapAmb": _mask("CAP_CHOWN"),
                "CapPrm": _mask("CAP_CHOWN"), "CapEff": _mask("CAP_CHOWN"),
                "nofile": (100, 200), "oom": oom, "home": "/home/app"}
    p = mrun.popen("run", "--bundle", bundle, name)
    try:
        seen = _read_until(p.stdout.fileno(), b"READY", timeout=30).decode(errors="replace")
        assert "READY" in seen, f"the container did not start: {seen!r}; {p.stderr.read1()!r}"
        report = _parse(seen)
        for key, value in expected.items():
            assert report.get(key) == value, (key, report, seen)
        # mrun itself (and so fuse-overlayfs, slirp4netns and the hooks) keeps its own.
        assert _limits_of(p.pid) == own_nofile, "mrun's own RLIMIT_NOFILE was changed"
        with open(f"/proc/{p.pid}/oom_score_adj") as f:
            assert int(f.read()) == own_oom, "mrun's own oom_score_adj was changed"

        # exec: the container's process, the same way.
        r = mrun("exec", name, "/bin/sh", "-c", REPORT)
        M.assert_rc(r)
        report = _parse(r.out)
        for key, value in expected.items():
            assert report.get(key) == value, ("exec", key, report, r)

        # exec --process: the file's user, groups, capabilities and rlimits; the
        # container's oomScoreAdj where the file has none.
        proc = tmp_path / "process.json"
        proc.write_text(json.dumps({
            "args": ["/bin/sh", "-c", REPORT], "env": ["PATH=/bin"], "cwd": "/",
            "user": {"uid": 0, "gid": 0, "additionalGids": [30]},
            "capabilities": {"bounding": ["CAP_KILL"], "effective": ["CAP_KILL"],
                             "permitted": ["CAP_KILL"], "inheritable": ["CAP_KILL"]},
            "rlimits": [{"type": "RLIMIT_NOFILE", "soft": 50, "hard": 60}]}))
        r = mrun("exec", "--process", proc, name)
        M.assert_rc(r)
        report = _parse(r.out)
        want = {"groups": [30], "CapBnd": _mask("CAP_KILL"), "CapInh": _mask("CAP_KILL"),
                "CapPrm": _mask("CAP_KILL"), "CapEff": _mask("CAP_KILL"), "CapAmb": 0,
                "nofile": (50, 60), "oom": oom, "home": "/root"}
        for key, value in want.items():
            assert report.get(key) == value, ("exec --process", key, report, r)
    finally:
        mrun("kill", name, "KILL")
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        p.stdout.close()
        p.stderr.close()
        mrun("delete", "--force", name)


@pytest.mark.parametrize("uid,home", [(0, "/root"), (1000, "/home/app"), (4242, "/")])
def test_home_from_the_image_passwd(mrun, app_rootfs, name, tmp_path, uid, home):
    bundle = _config(mrun, tmp_path, app_rootfs, ["/bin/sh", "-c", "echo HOME=$HOME"],
                     user={"uid": uid, "gid": uid}, env=["PATH=/bin"])
    try:
        r = mrun("run", "--bundle", bundle, name)
        M.assert_rc(r)
        assert r.out.strip() == f"HOME={home}", r
    finally:
        mrun("delete", "--force", name)
    # Given by the config: kept.
    r = M.run_sh(mrun, app_rootfs, "echo HOME=$HOME", "--network", "none", "-u", str(uid),
                 "-e", "HOME=/given", name=name)
    M.assert_rc(r)
    assert r.out.strip() == "HOME=/given", r
    # mrun run: the same rule.
    r = M.run_sh(mrun, app_rootfs, "echo HOME=$HOME", "--network", "none", "-u", str(uid),
                 name=name)
    M.assert_rc(r)
    assert r.out.strip() == f"HOME={home}", r


def test_run_exec_home_is_the_exec_user_s(mrun, app_rootfs, name):
    r = mrun.detach("--name", name, "--network", "none", app_rootfs, "/bin/sleep", "1000")
    M.assert_rc(r)
    try:
        for user, home in (("1000", "/home/app"), ("4242", "/"), ("0", "/root")):
            r = mrun("exec", "-u", user, name, "/bin/sh", "-c", "echo HOME=$HOME")
            M.assert_rc(r)
            assert r.out.strip() == f"HOME={home}", (user, r)
    finally:
        mrun("delete", "-f", name)


def _assert_run_refused(mrun, tmp_path, rootfs, name, mentions, **process):
    """`run --bundle` of a config with PROCESS fails with mrun's one line, naming
    MENTIONS; each call gets a bundle of its own under TMP_PATH."""
    bundle_dir = tmp_path / f"b{len(list(tmp_path.iterdir()))}"
    bundle_dir.mkdir()
    bundle = _config(mrun, bundle_dir, rootfs, ["/bin/true"], **process)
    try:
        M.assert_mrun_error(mrun("run", "--bundle", bundle, name), mentions=mentions)
    finally:
        mrun("delete", "--force", name)


def test_what_the_kernel_refuses_is_a_clear_error(mrun, rootfs, name, tmp_path):
    def fails(mentions, **process):
        _assert_run_refused(mrun, tmp_path, rootfs, name, mentions, **process)

    fails(["process.capabilities.effective", "CAP_SETUID", "permitted"],
          capabilities={"bounding": ["CAP_SETUID"], "effective": ["CAP_SETUID"],
                        "permitted": []})
    fails(["process.capabilities.inheritable", "CAP_KILL", "bounding"],
          capabilities={"bounding": [], "inheritable": ["CAP_KILL"]})
    fails(["process.rlimits", "RLIMIT_NOFILE", "soft limit 9 is above the hard limit 8"],
          rlimits=[{"type": "RLIMIT_NOFILE", "soft": 9, "hard": 8}])
    if not _holds_sys_resource():
        # Raising a hard limit or lowering the OOM score takes CAP_SYS_RESOURCE in the
        # host's user namespace: a rootless container never has it.
        hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
        fails(["process.rlimits", "RLIMIT_NOFILE", "CAP_SYS_RESOURCE"],
              rlimits=[{"type": "RLIMIT_NOFILE", "soft": 10, "hard": hard + 1}])
        if _own_oom() > -1000:
            fails(["process.oomScoreAdj", "CAP_SYS_RESOURCE"], oomScoreAdj=_own_oom() - 1)


@pytest.mark.skipif(not _holds_sys_resource(), reason="raising a hard limit and lowering the "
                    "OOM score need CAP_SYS_RESOURCE in the host's user namespace (rootful, "
                    "where the session's root holds it)")
def test_rootful_raises_hard_limits_and_lowers_the_oom_score(mrun, rootfs, name, tmp_path):
    with open("/proc/sys/fs/nr_open") as f:
        nr_open = int(f.read())
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    if hard >= nr_open:
        pytest.skip(f"our hard RLIMIT_NOFILE {hard} is the kernel's maximum already")
    oom = max(_own_oom() - 100, -1000)
    bundle = _config(mrun, tmp_path, rootfs, ["/bin/sh", "-c", REPORT],
                     rlimits=[{"type": "RLIMIT_NOFILE", "soft": 64, "hard": hard + 1}],
                     oomScoreAdj=oom)
    try:
        r = mrun("run", "--bundle", bundle, name)
        M.assert_rc(r)
        report = _parse(r.out)
        assert report["nofile"] == (64, hard + 1) and report["oom"] == oom, (report, r)
    finally:
        mrun("delete", "--force", name)


def test_run_group_add_and_exec_additional_gids(mrun, rootfs, name):
    r = M.run_sh(mrun, rootfs, "grep ^Groups: /proc/self/status", "--network", "none",
                 "-u", "1000:1000", "--group-add", "10", "--group-add", "20", name=name)
    M.assert_rc(r)
    assert sorted(int(g) for g in r.out.split()[1:]) == [10, 20], r
    M.assert_mrun_error(mrun("run", "--rm", "--group-add", "wheel", rootfs, "/bin/true"),
                        mentions=["--group-add \"wheel\""])
    # A single-id map (gid 10 is not even mapped): setgroups is denied, so only the
    # primary gid is possible.
    r = M.run_sh(mrun, rootfs, "true", "--network", "none", "--userns", "single",
                 "--group-add", "10", name=name)
    M.assert_mrun_error(r, mentions=["additionalGids [10]", "setgroups is denied"])
    M.assert_rc(M.run_sh(mrun, rootfs, "true", "--network", "none", "--userns", "single",
                         "--group-add", "0", name=name))

    r = mrun.detach("--name", name, "--network", "none", "--group-add", "10", rootfs,
                    "/bin/sleep", "1000")
    M.assert_rc(r)
    try:
        r = mrun("exec", "-g", "30", name, "/bin/sh", "-c", "grep ^Groups: /proc/self/status")
        M.assert_rc(r)
        assert sorted(int(g) for g in r.out.split()[1:]) == [10, 30], r
    finally:
        mrun("delete", "-f", name)


# The scheduling policy and nice value (fields 41 and 19 of /proc/PID/stat, the command
# name "cut" having no blank), and the I/O priority as busybox ionice prints it.
SCHED_REPORT = ("echo sched=$(cut -d' ' -f41,19 /proc/self/stat); "
                "echo io=$(ionice -p $$)")


def _sched_of(out):
    r = {}
    for line in out.splitlines():
        if line.startswith("sched="):
            nice, policy = line[6:].split()
            r["nice"], r["policy"] = int(nice), int(policy)
        elif line.startswith("io="):
            r["io"] = line[3:]
    return r


def _own_nice():
    return os.getpriority(os.PRIO_PROCESS, 0)


def test_scheduler_and_io_priority_in_the_container_and_exec(mrun, rootfs, name, tmp_path):
    """process.scheduler and process.ioPriority (runtime-spec 1.2): set in the
    container's process, kept by exec (the container's defaults), replaced by exec
    --process; mrun itself keeps its own. SCHED_BATCH (3) with a higher nice and the
    idle I/O class need no privilege, rootless too."""
    nice = min(_own_nice() + 7, 19)
    bundle = _config(mrun, tmp_path, rootfs,
                     ["/bin/sh", "-c", SCHED_REPORT + "; echo READY; exec sleep 1000"],
                     scheduler={"policy": "SCHED_BATCH", "nice": nice},
                     ioPriority={"class": "IOPRIO_CLASS_IDLE", "priority": 0})
    expected = {"nice": nice, "policy": 3, "io": "idle"}
    p = mrun.popen("run", "--bundle", bundle, name)
    try:
        seen = _read_until(p.stdout.fileno(), b"READY", timeout=30).decode(errors="replace")
        assert "READY" in seen, f"the container did not start: {seen!r}; {p.stderr.read1()!r}"
        assert _sched_of(seen) == expected, seen
        assert os.getpriority(os.PRIO_PROCESS, p.pid) == _own_nice(), "mrun's own nice changed"
        assert os.sched_getscheduler(p.pid) == os.SCHED_OTHER, "mrun's own policy changed"

        r = mrun("exec", name, "/bin/sh", "-c", SCHED_REPORT)
        M.assert_rc(r)
        assert _sched_of(r.out) == expected, ("exec", r)

        proc = tmp_path / "process.json"
        proc.write_text(json.dumps({
            "args": ["/bin/sh", "-c", SCHED_REPORT], "env": ["PATH=/bin"], "cwd": "/",
            "scheduler": {"policy": "SCHED_OTHER", "nice": 19},
            "ioPriority": {"class": "IOPRIO_CLASS_BE", "priority": 4}}))
        r = mrun("exec", "--process", proc, name)
        M.assert_rc(r)
        assert _sched_of(r.out) == {"nice": 19, "policy": 0, "io": "best-effort: prio 4"}, r
    finally:
        p.kill()
        p.wait()
        mrun("delete", "-f", name)


def test_scheduler_and_io_priority_refusals_name_the_field(mrun, rootfs, name, tmp_path):
    """A config the kernel's rules forbid is refused before anything starts; a real-time
    policy, which needs CAP_SYS_NICE in the host's user namespace, fails rootless with
    the field, the errno and the fix, and leaves nothing behind."""
    def fails(mentions, **process):
        _assert_run_refused(mrun, tmp_path, rootfs, name, mentions, **process)

    fails(["process.scheduler.policy", "SCHED_NOPE"], scheduler={"policy": "SCHED_NOPE"})
    fails(["process.scheduler.priority", "1..99"], scheduler={"policy": "SCHED_FIFO"})
    fails(["process.ioPriority.priority", "0..7"],
          ioPriority={"class": "IOPRIO_CLASS_BE", "priority": 9})
    if not M.ROOTFUL:
        fails(["process.scheduler", "sched_setattr", "CAP_SYS_NICE"],
              scheduler={"policy": "SCHED_FIFO", "priority": 10})
