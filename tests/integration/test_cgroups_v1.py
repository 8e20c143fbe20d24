"""Resource limits of a rootful container on a cgroup v1 or hybrid host (mrun-oci(1),
RESOURCES, cgroup v1): the group mrun makes in every v1 hierarchy, its files compared
with what runc writes for the same bundle, the freezer, update, events --stats, and
that delete leaves no directory behind, also after a killed mrun.

Rootful only (rootless on v1 keeps running without limits), and only where the host
has a v1 memory hierarchy.
"""

import json
import os
import signal
import subprocess
import tempfile
import time

import pytest

import mrunlib as M
from test_oci import _create

RUNC = "/usr/sbin/runc"
HOG = os.path.join(os.path.dirname(M.PROBE), "hog")
PARENT = "mrun-it-v1"  # the cgroupsPath parent of the bundles below


def _v1_hierarchies():
    """Mount points of the v1 hierarchies (the devices one too: the container's group
    there is at the same path as in the others)."""
    out = []
    with open("/proc/self/mountinfo") as f:
        for line in f.read().splitlines():
            before, _, after = line.partition(" - ")
            fields = after.split()
            if len(fields) >= 3 and fields[0] == "cgroup":
                out.append(before.split()[4])
    return out


HIERARCHIES = _v1_hierarchies()
MEMORY = next((h for h in HIERARCHIES if os.path.basename(h) == "memory"), None)

pytestmark = [
    pytest.mark.skipif(not M.ROOTFUL, reason="cgroup v1 limits are rootful only"),
    pytest.mark.skipif(MEMORY is None, reason="this host has no cgroup v1 memory hierarchy"),
]


def _hier(controller):
    return next(h for h in HIERARCHIES if controller in os.path.basename(h).split(","))


def _read(path):
    with open(path) as f:
        return f.read().strip()


def _dirs_named(relative):
    return [h + relative for h in HIERARCHIES if os.path.isdir(h + relative)]


@pytest.fixture(autouse=True)
def no_cgroup_left():
    """Every group a test makes goes with its container: none is left under /mrun or
    the bundles' parent in any hierarchy."""
    def ours():
        found = set()
        for h in HIERARCHIES:
            for parent in ("mrun", PARENT):
                try:
                    found |= {f"{h}/{parent}/{e}" for e in os.listdir(f"{h}/{parent}")
                              if os.path.isdir(f"{h}/{parent}/{e}")}
                except OSError:
                    pass
        return found
    before = ours()
    yield
    M.wait_until(lambda: not ours() - before, 5)
    left = ours() - before
    for d in sorted(left, reverse=True):
        try:
            os.rmdir(d)
        except OSError:
            pass
    assert not left, f"cgroup directories left: {sorted(left)}"


RESOURCES = {
    "memory": {"limit": 64 << 20, "reservation": 32 << 20, "swap": 128 << 20, "swappiness": 10},
    "cpu": {"shares": 512, "quota": 50000, "period": 100000, "cpus": "0", "mems": "0"},
    "pids": {"limit": 20},
}
FILES = {
    "memory": ["memory.limit_in_bytes", "memory.soft_limit_in_bytes",
               "memory.memsw.limit_in_bytes", "memory.swappiness"],
    "cpu": ["cpu.shares", "cpu.cfs_quota_us", "cpu.cfs_period_us"],
    "cpuset": ["cpuset.cpus", "cpuset.mems"],
    "pids": ["pids.max"],
}


def _bundle(mrun, tmp_path, rootfs, name, args, resources):
    def edit(config):
        config["linux"]["resources"] = resources
        config["linux"]["cgroupsPath"] = f"/{PARENT}/{name}"
    return M.oci_bundle(mrun, tmp_path, rootfs, args, edit)


def _files_of(name):
    out = {}
    for controller, files in FILES.items():
        d = f"{_hier(controller)}/{PARENT}/{name}"
        for f in files:
            if os.path.exists(f"{d}/{f}"):
                out[f] = _read(f"{d}/{f}")
    return out


def _runc(*args):
    """runc ARGS; its output into files, as the container it leaves keeps its stdio."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        rc = subprocess.run([RUNC, *args], stdout=out, stderr=err, timeout=M.TIMEOUT,
                            stdin=subprocess.DEVNULL).returncode
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(args, rc, out.read(), err.read())


def test_limit_files_as_runc_writes_them(mrun, rootfs, name, tmp_path):
    bundle = _bundle(mrun, tmp_path, rootfs, name, ["/bin/sleep", "100"], RESOURCES)
    root = str(tmp_path / "runc-root")
    try:
        r = _runc("--root", root, "create", "-b", str(bundle), name)
        assert r.returncode == 0, r
        theirs = _files_of(name)
    finally:
        _runc("--root", root, "delete", "--force", name)
    try:
        M.assert_rc(_create(mrun, "--bundle", bundle, name))
        ours = _files_of(name)
        # It joined every hierarchy, at the cgroupsPath.
        pid = json.loads(mrun("state", name).out)["pid"]
        with open(f"/proc/{pid}/cgroup") as f:
            lines = f.read().splitlines()
        for line in lines:
            if line.split(":")[1]:
                assert line.endswith(f":/{PARENT}/{name}"), lines
    finally:
        M.assert_rc(mrun("delete", "--force", name))
    assert ours == theirs, f"mrun: {ours}\nrunc: {theirs}"
    assert ours["memory.limit_in_bytes"] == str(64 << 20), ours
    assert _dirs_named(f"/{PARENT}/{name}") == [], "delete left a directory"


def _devices_group(pid):
    """The v1 devices group of PID and the allow list the kernel keeps for it."""
    with open(f"/proc/{pid}/cgroup") as f:
        line = next(x for x in f.read().splitlines() if "devices" in x.split(":")[1].split(","))
    group = line.split(":", 2)[2]
    return group, sorted(_read(f"{_hier('devices')}{group}/devices.list").splitlines())


def test_devices_group_is_at_the_cgroups_path_as_runc_puts_it(mrun, rootfs, name, tmp_path):
    """Docker's and the kubelet's tools look for a container's device restriction in the
    devices hierarchy at its cgroupsPath: runc puts it there, and so does mrun, with the
    same list for the same config, and delete removes it."""
    devices = [{"allow": False, "access": "rwm"},
               {"allow": True, "type": "c", "major": 1, "minor": 3, "access": "rwm"},
               {"allow": True, "type": "c", "major": 136, "access": "rwm"},
               {"allow": False, "type": "c", "major": 10, "minor": 229, "access": "rwm"}]
    bundle = _bundle(mrun, tmp_path, rootfs, name, ["/bin/sleep", "100"], {"devices": devices})
    root = str(tmp_path / "runc-root")
    try:
        r = _runc("--root", root, "create", "-b", str(bundle), name)
        assert r.returncode == 0, r
        state = json.loads(_runc("--root", root, "state", name).stdout)
        theirs = _devices_group(state["pid"])
    finally:
        _runc("--root", root, "delete", "--force", name)
    try:
        M.assert_rc(_create(mrun, "--bundle", bundle, name))
        ours = _devices_group(json.loads(mrun("state", name).out)["pid"])
    finally:
        M.assert_rc(mrun("delete", "--force", name))
    assert ours[0] == theirs[0] == f"/{PARENT}/{name}", (ours, theirs)
    assert not os.path.exists(f"{_hier('devices')}/{PARENT}/{name}"), "delete left it"
    # mrun's own defaults (the nodes every container has) come first in its list; the
    # config's rules are the same allows in both.
    for rule in ("c 1:3 rwm", "c 136:* rwm"):
        assert rule in ours[1] and rule in theirs[1], (ours, theirs)
    assert "c 10:229 rwm" not in ours[1] and "a *:* rwm" not in ours[1], ours


def _remove_left_dirs(relative):
    """The directories at RELATIVE gone: runc's init is reaped here (this process is the
    suite's subreaper), then what runc could not remove while it was a zombie is."""
    def gone():
        M.reap_orphans()
        return _dirs_named(relative) == []
    if not M.wait_until(gone, 5):
        for d in _dirs_named(relative):
            os.rmdir(d)


def _rt_files(pid):
    with open(f"/proc/{pid}/cgroup") as f:
        line = next(x for x in f.read().splitlines() if "cpu" in x.split(":")[1].split(","))
    d = _hier("cpu") + line.split(":", 2)[2]
    return _read(f"{d}/cpu.rt_period_us"), _read(f"{d}/cpu.rt_runtime_us")


@pytest.mark.skipif(not os.path.exists("/sys/fs/cgroup/cpu/cpu.rt_runtime_us"),
                    reason="this kernel has no realtime group scheduling (CONFIG_RT_GROUP_SCHED)")
def test_realtime_bandwidth_as_runc_writes_it(mrun, rootfs, name, tmp_path):
    """cpu.realtimePeriod and realtimeRuntime: written into the container's cpu group
    as runc writes them; a runtime its parent has no room for fails at create for both
    runtimes, mrun's one line naming the field, nothing left."""
    rt = {"cpu": {"realtimeRuntime": 10000, "realtimePeriod": 500000}}
    bundle = _bundle(mrun, tmp_path, rootfs, name, ["/bin/sleep", "100"], rt)
    parent_runtime = f"{_hier('cpu')}/{PARENT}/cpu.rt_runtime_us"
    root = str(tmp_path / "runc-root")
    os.makedirs(os.path.dirname(parent_runtime), exist_ok=True)
    # No room in the parent (a new group's is 0): refused by the kernel, for both.
    with open(parent_runtime, "w") as f:
        f.write("0")
    r = _runc("--root", root, "create", "-b", str(bundle), name)
    assert r.returncode != 0 and "cpu.rt_runtime_us" in r.stderr, r
    _runc("--root", root, "delete", "--force", name)
    M.assert_mrun_error(_create(mrun, "--bundle", bundle, name),
                        mentions=["linux.resources.cpu.realtimeRuntime", "cpu.rt_runtime_us"])
    M.assert_mrun_error(mrun("state", name), mentions=["does not exist"])
    assert _dirs_named(f"/{PARENT}/{name}") == [], "a failed create left a directory"
    # Room in the parent for both (the kernel counts a removed group's share a while
    # after its rmdir): the same files for both.
    with open(parent_runtime, "w") as f:
        f.write("40000")
    try:
        try:
            r = _runc("--root", root, "create", "-b", str(bundle), name)
            assert r.returncode == 0, r
            theirs = _rt_files(json.loads(_runc("--root", root, "state", name).stdout)["pid"])
        finally:
            _runc("--root", root, "delete", "--force", name)
        # runc's group holds its share of the parent's runtime until it is gone (its
        # init, reaped by the test's subreaper, may outlive runc's rmdir).
        _remove_left_dirs(f"/{PARENT}/{name}")
        try:
            M.assert_rc(_create(mrun, "--bundle", bundle, name))
            ours = _rt_files(json.loads(mrun("state", name).out)["pid"])
        finally:
            M.assert_rc(mrun("delete", "--force", name))
        assert ours == theirs == ("500000", "10000"), (ours, theirs)
    finally:
        _remove_left_dirs(f"/{PARENT}/{name}")

        def parent_emptied():
            try:
                with open(parent_runtime, "w") as f:
                    f.write("0")
                return True
            except OSError:
                return False
        assert M.wait_until(parent_emptied, 5), "the parent's realtime runtime stays taken"


def test_memory_limit_kills_a_hog_with_137(mrun, rootfs, name):
    if not os.access(HOG, os.X_OK):
        pytest.skip(f"hog not staged next to mrun-probe ({HOG})")
    r = mrun("run", "--rm", "--name", name, "--network", "none", "--memory", "100M",
             "-v", f"{HOG}:/hog:ro", rootfs, "/hog", "400", timeout=60)
    assert r.rc == 137, r
    assert "OOM killer" in r.err, r


def _oom_kills_after_exit(state_of, name):
    """Once started container NAME, killed at its memory limit, is stopped (STATE_OF()
    gives its `state` output): its group's oom_kill count, read while the group is still
    there (as containerd's shim reads it after the exit), or None when it is gone."""
    path = f"{MEMORY}/{PARENT}/{name}/memory.oom_control"
    assert M.wait_until(lambda: '"stopped"' in state_of(), 30), f"{name} did not stop"
    try:
        oom = _read(path)
    except FileNotFoundError:
        return None
    return int(next(x.split()[1] for x in oom.splitlines() if x.startswith("oom_kill ")))


def test_a_created_containers_group_outlives_its_exit_until_delete(mrun, private_rootfs,
                                                                   name, tmp_path):
    """An engine reads a container's OOM kills from its group after the exit (Docker's
    OOMKilled): runc keeps the group until `delete`, and so must mrun."""
    if not os.access(HOG, os.X_OK):
        pytest.skip(f"hog not staged next to mrun-probe ({HOG})")

    def edit(config):
        config["linux"]["resources"] = {"memory": {"limit": 64 << 20, "swap": 64 << 20}}
        config["linux"]["cgroupsPath"] = f"/{PARENT}/{name}"
        config["mounts"].append({"destination": "/hog", "type": "bind", "source": HOG,
                                 "options": ["bind", "ro"]})
    bundle = M.oci_bundle(mrun, tmp_path, private_rootfs, ["/hog", "400"], edit)
    root = str(tmp_path / "runc-root")
    try:
        assert _runc("--root", root, "create", "-b", str(bundle), name).returncode == 0
        assert _runc("--root", root, "start", name).returncode == 0
        theirs = _oom_kills_after_exit(lambda: _runc("--root", root, "state", name).stdout,
                                       name)
    finally:
        _runc("--root", root, "delete", "--force", name)
    try:
        M.assert_rc(_create(mrun, "--bundle", bundle, name))
        M.assert_rc(mrun("start", name))
        ours = _oom_kills_after_exit(lambda: mrun("state", name).out, name)
        assert _dirs_named(f"/{PARENT}/{name}") != [], "the group went before delete"
    finally:
        M.assert_rc(mrun("delete", "--force", name))
    assert theirs is not None and theirs >= 1, f"runc: {theirs}"
    assert ours is not None and ours >= 1, f"mrun: {ours}"
    assert _dirs_named(f"/{PARENT}/{name}") == [], "delete left a directory"


def test_pids_limit_stops_forks(mrun, rootfs, name):
    script = "i=0; while [ $i -lt 30 ]; do sleep 5 & i=$((i+1)); done; echo forked"
    r = mrun("run", "--rm", "--name", name, "--network", "none", "--pids-limit", "8", rootfs,
             "/bin/sh", "-c", script, timeout=60)
    assert "can't fork" in r.err + r.out or "Resource temporarily unavailable" in r.err + r.out, r


def test_pause_freezes_and_resume_thaws(mrun, rootfs, name):
    M.assert_rc(mrun.detach("--name", name, "--network", "none", rootfs, "/bin/sleep", "100"))
    try:
        freezer = f"{_hier('freezer')}/mrun/mrun-{name}/freezer.state"
        M.assert_rc(mrun("pause", name))
        assert json.loads(mrun("state", name).out)["status"] == "paused"
        assert _read(freezer) == "FROZEN"
        M.assert_rc(mrun("resume", name))
        assert json.loads(mrun("state", name).out)["status"] == "running"
        assert _read(freezer) == "THAWED"
        # A paused container is killed by delete --force (thawed so that it can die).
        M.assert_rc(mrun("pause", name))
    finally:
        M.assert_rc(mrun("delete", "--force", name))


def test_update_rewrites_the_files(mrun, rootfs, name):
    M.assert_rc(mrun.detach("--name", name, "--network", "none", "--memory", "64M", rootfs,
                            "/bin/sleep", "100"))
    d = f"{MEMORY}/mrun/mrun-{name}"
    try:
        assert _read(f"{d}/memory.limit_in_bytes") == str(64 << 20)
        # Raising both writes memory+swap first, lowering both the limit first.
        M.assert_rc(mrun("update", "--memory", "128m", "--memory-swap", "256m", name))
        assert _read(f"{d}/memory.limit_in_bytes") == str(128 << 20)
        assert _read(f"{d}/memory.memsw.limit_in_bytes") == str(256 << 20)
        M.assert_rc(mrun("update", "--memory", "32m", "--memory-swap", "48m", name))
        assert _read(f"{d}/memory.limit_in_bytes") == str(32 << 20)
        assert _read(f"{d}/memory.memsw.limit_in_bytes") == str(48 << 20)
        M.assert_rc(mrun("update", "--pids-limit", "7", "--cpu-quota", "20000", name))
        assert _read(f"{_hier('pids')}/mrun/mrun-{name}/pids.max") == "7"
        assert _read(f"{_hier('cpu')}/mrun/mrun-{name}/cpu.cfs_quota_us") == "20000"
        s = json.loads(mrun("stats", "--format", "json", name).out)
        assert s["memory_max"] == 32 << 20 and s["pids_max"] == 7, s
    finally:
        M.assert_rc(mrun("delete", "--force", name))


def test_events_stats_as_runc_shapes_them(mrun, rootfs, name, tmp_path):
    bundle = _bundle(mrun, tmp_path, rootfs, name, ["/bin/sleep", "100"],
                     {"memory": {"limit": 64 << 20}})
    root = str(tmp_path / "runc-root")
    try:
        assert _runc("--root", root, "run", "-d", "-b", str(bundle), name).returncode == 0
        theirs = json.loads(_runc("--root", root, "events", "--stats", name).stdout)
    finally:
        _runc("--root", root, "delete", "--force", name)
    try:
        M.assert_rc(_create(mrun, "--bundle", bundle, name))
        M.assert_rc(mrun("start", name))
        r = mrun("events", "--stats", name)
        M.assert_rc(r)
        ours = json.loads(r.out)
    finally:
        M.assert_rc(mrun("delete", "--force", name))
    assert set(ours["data"]) == set(theirs["data"]), (ours, theirs)
    for key in ("memory", "cpu", "pids"):
        assert set(ours["data"][key]) >= set(theirs["data"][key]) - {"stats"}, (key, ours,
                                                                                 theirs)
    memory = ours["data"]["memory"]["usage"]
    assert memory["limit"] == 64 << 20 and memory["usage"] > 0, ours
    assert ours["data"]["pids"]["current"] >= 1, ours
    assert ours["data"]["cpu"]["usage"]["total"] > 0, ours


def test_ps_and_kill_all_read_the_v1_group(mrun, rootfs, name):
    M.assert_rc(mrun.detach("--name", name, "--network", "none", rootfs, "/bin/sh", "-c",
                            "sleep 100 & sleep 100 & wait"))
    try:
        procs = _read(f"{_hier('pids')}/mrun/mrun-{name}/cgroup.procs").split()
        assert len(procs) == 3, procs
        r = mrun("ps", name)
        M.assert_rc(r)
        for pid in procs:
            assert pid in r.out, r
        M.assert_rc(mrun("kill", "--all", name, "KILL"))
        mrun.wait_status(name, "stopped")
    finally:
        mrun("delete", "--force", name)


def test_delete_after_a_killed_mrun_removes_every_directory(mrun, rootfs, name):
    M.assert_rc(mrun.detach("--name", name, "--network", "none", "--memory", "64M", rootfs,
                            "/bin/sleep", "100"))
    relative = f"/mrun/mrun-{name}"
    assert len(_dirs_named(relative)) == len(HIERARCHIES)
    with open(os.path.join(M.state_dir(), name, "state.json")) as f:
        monitor = json.load(f)["monitor_pid"]
    os.kill(monitor, signal.SIGKILL)
    M.wait_until(lambda: M.process_dead(monitor), 5)
    time.sleep(0.2)
    M.assert_rc(mrun("delete", "--force", name))
    assert _dirs_named(relative) == [], "delete left a directory"


@pytest.mark.parametrize("resources,field", [
    ({"memory": {"swappiness": 200}}, "linux.resources.memory.swappiness"),
    ({"cpu": {"shares": 1}}, "linux.resources.cpu.shares"),
    ({"memory": {"limit": 64 << 20, "swap": 32 << 20}}, "linux.resources.memory.swap"),
    ({"unified": {"memory.high": "1"}}, "linux.resources.unified.memory.high"),
])
def test_bad_input_is_125_and_leaves_nothing(mrun, rootfs, name, tmp_path, resources, field):
    bundle = _bundle(mrun, tmp_path, rootfs, name, ["/bin/true"], resources)
    M.assert_mrun_error(mrun("run", "--bundle", bundle, name), mentions=[field])
    M.assert_mrun_error(mrun("state", name), mentions=["does not exist"])
    assert _dirs_named(f"/{PARENT}/{name}") == []


def test_oom_killer_disabled_and_a_kernel_refusal_leaves_nothing(mrun, rootfs, name,
                                                                 tmp_path):
    bundle = _bundle(mrun, tmp_path, rootfs, name, ["/bin/sleep", "100"],
                     {"memory": {"limit": 64 << 20, "disableOOMKiller": True}})
    try:
        M.assert_rc(_create(mrun, "--bundle", bundle, name))
        oom = _read(f"{MEMORY}/{PARENT}/{name}/memory.oom_control")
        assert "oom_kill_disable 1" in oom, oom
    finally:
        M.assert_rc(mrun("delete", "--force", name))
    # A cpuset the kernel refuses (no such CPU): 125 naming the field, no directory.
    bundle2 = tmp_path / "b2"
    bundle2.mkdir()
    config = json.loads((bundle / "config.json").read_text())
    config["linux"]["resources"] = {"cpu": {"cpus": "999"}}
    (bundle2 / "config.json").write_text(json.dumps(config))
    M.assert_mrun_error(mrun("run", "--bundle", str(bundle2), name),
                        mentions=["linux.resources.cpu.cpus"])
    assert _dirs_named(f"/{PARENT}/{name}") == []
