"""Resource limits (--memory, --pids-limit, --cpus, ...) and mrun stats on the host.

This host's cgroup layout is hybrid: the controllers are on cgroup v1 and the
cgroup2 at /sys/fs/cgroup/unified has none, so rootless no limit can be honoured here
and mrun must refuse one with a clear error (125, nothing left behind) while running
exactly as before without one. Rootful, limits go to a cgroup v1 group
(test_cgroups_v1.py). The limits themselves are tested on a pure cgroup
v2 in a VM, rootless with a delegated subtree and rootful:
tests/vm/cgroup-suite.sh. The tests below that need real controllers skip here
with that reason (and run on a host that has them).
"""

import json
import os

import pytest

import mrunlib as M
from test_oci import _create

VM_SUITE = "tests/vm/cgroup-suite.sh covers it on a pure cgroup v2"


def _mountinfo():
    with open("/proc/self/mountinfo") as f:
        return [line.split(" - ") for line in f.read().splitlines() if " - " in line]


def cgroup_why_not():
    """Why this host cannot carry limits for this user (None when it can)."""
    cgroup2 = None
    for before, after in _mountinfo():
        fstype = after.split()[0]
        if fstype == "cgroup":
            return "hybrid cgroup v1/v2 layout: the controllers are on cgroup v1"
        if fstype == "cgroup2" and cgroup2 is None:
            cgroup2 = before.split()[4]
    if cgroup2 is None:
        return "no cgroup2 mounted"
    with open(os.path.join(cgroup2, "cgroup.controllers")) as f:
        controllers = f.read().split()
    if not {"memory", "pids", "cpu"} <= set(controllers):
        return f"cgroup2 at {cgroup2} lacks memory/pids/cpu ({' '.join(controllers)})"
    if M.ROOTFUL:
        return None
    own = next(line[3:] for line in open("/proc/self/cgroup").read().splitlines()
               if line.startswith("0::"))
    d = os.path.dirname(own)
    while d != "/":
        path = cgroup2 + d
        if all(os.stat(p).st_uid == M.UID for p in
               (path, path + "/cgroup.procs", path + "/cgroup.subtree_control")):
            return None
        d = os.path.dirname(d)
    return f"no cgroup v2 subtree delegated to {M.USER} above {own}"


def v1_limits():
    """Rootful with a cgroup v1 memory hierarchy: limits go to a v1 group
    (test_cgroups_v1.py)."""
    return M.ROOTFUL and any(after.split()[0] == "cgroup" and "memory" in
                             after.split()[2].split(",") for _, after in _mountinfo())


WHY_NOT = cgroup_why_not()
V1_LIMITS = v1_limits()
needs_cgroup = pytest.mark.skipif(WHY_NOT is not None, reason=f"{WHY_NOT}; {VM_SUITE}")
needs_no_cgroup = pytest.mark.skipif(
    WHY_NOT is None or V1_LIMITS,
    reason="this host can honour limits (rootful on cgroup v1: test_cgroups_v1.py); the "
    f"refusal is tested where it cannot (this host's CI, and {VM_SUITE} without delegation)")
HOG = os.path.join(os.path.dirname(M.PROBE), "hog")


@pytest.mark.parametrize("args,mentions", [
    (["--memory", "lots"], "--memory"),
    (["--memory", "0"], "--memory"),
    (["--memory-swap", "200m"], "--memory-swap needs --memory"),
    (["--memory", "100m", "--memory-swap", "50m"], "below --memory"),
    (["--pids-limit", "0"], "--pids-limit"),
    (["--pids-limit", "many"], "--pids-limit"),
    (["--cpus", "0"], "--cpus"),
    (["--cpus", "half"], "--cpus"),
    (["--cgroups", "maybe"], "--cgroups"),
], ids=["memory-word", "memory-zero", "swap-alone", "swap-below", "pids-zero", "pids-word",
        "cpus-zero", "cpus-word", "cgroups-value"])
def test_bad_limit_values_are_125(mrun, rootfs, name, args, mentions):
    r = mrun("run", "--rm", "--name", name, "--network", "none", *args, rootfs, "/bin/true")
    M.assert_mrun_error(r, 125, mentions=[mentions])
    assert name not in mrun("list", "-q").out.split()


def test_cgroups_disabled_with_a_limit_is_125(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "--network", "none", "--cgroups=disabled",
             "--pids-limit", "5", rootfs, "/bin/true")
    M.assert_mrun_error(r, 125, mentions=["--cgroups=disabled"])


@needs_no_cgroup
@pytest.mark.parametrize("limit", [["--memory", "100M"], ["--pids-limit", "20"],
                                   ["--cpus", "0.5"]], ids=["memory", "pids", "cpus"])
def test_limit_without_a_usable_cgroup_is_a_clear_125(mrun, rootfs, name, limit):
    r = mrun("run", "--name", name, "--network", "none", *limit, rootfs, "/bin/true")
    M.assert_mrun_error(r, 125, mentions=[limit[0] + " needs a cgroup"])
    # Says how to fix it: boot a pure cgroup v2 here, or delegate a subtree.
    assert "systemd.unified_cgroup_hierarchy=1" in r.err or "Delegate=yes" in r.err, r
    # Nothing left behind (the autouse guard checks processes, mounts, dirs too).
    assert name not in mrun("list", "-q").out.split()
    assert not os.path.exists(M.container_dir(name))


@needs_no_cgroup
def test_no_limit_runs_as_before_and_debug_says_why_no_cgroup(mrun, rootfs):
    r = mrun("--debug", "run", "--rm", "--network", "none", rootfs, "/bin/cat",
             "/proc/self/cgroup")
    assert r.rc == 0, r
    assert "debug: no cgroup: " in r.err, r
    # Without a leaf of its own the container keeps the cgroup namespace made at clone
    # time, rooted at mrun's cgroup, as before this feature.
    assert "0::/" in r.out, r


@needs_no_cgroup
def test_stats_of_a_container_without_cgroup_is_125(mrun, rootfs, name):
    r = mrun.detach("--name", name, "--network", "none", rootfs, "/bin/sleep", "30")
    assert r.rc == 0, r
    try:
        s = mrun("stats", name)
        M.assert_mrun_error(s, 125, mentions=["has no cgroup"])
    finally:
        mrun("delete", "-f", name)


def test_stats_of_an_unknown_container_is_125(mrun, name):
    M.assert_mrun_error(mrun("stats", name), 125, mentions=[name])


@needs_cgroup
def test_oom_kill_is_reported_and_exits_137(mrun, rootfs, name, tmp_path):
    if not os.access(HOG, os.X_OK):
        pytest.skip(f"hog not staged next to mrun-probe ({HOG})")
    r = mrun("run", "--rm", "--name", name, "--network", "none", "--memory", "100M",
             "-v", f"{HOG}:/hog:ro", rootfs, "/hog", "200", timeout=60)
    assert r.rc == 137, r
    assert "OOM killer" in r.err, r


@needs_cgroup
def test_a_created_containers_leaf_outlives_its_exit_until_delete(mrun, private_rootfs, name,
                                                                  tmp_path):
    """An engine reads a container's OOM kills from its leaf after the exit (containerd's
    shim watches memory.events; Docker's OOMKilled): the leaf stays until `delete`, as
    runc's does, then goes."""
    if not os.access(HOG, os.X_OK):
        pytest.skip(f"hog not staged next to mrun-probe ({HOG})")

    def edit(config):
        config["linux"]["resources"] = {"memory": {"limit": 64 << 20, "swap": 64 << 20}}
        config["mounts"].append({"destination": "/hog", "type": "bind", "source": HOG,
                                 "options": ["bind", "ro"]})
    bundle = M.oci_bundle(mrun, tmp_path, private_rootfs, ["/hog", "400"], edit)
    try:
        M.assert_rc(_create(mrun, "--bundle", bundle, name))
        with open(os.path.join(M.state_dir(), name, "state.json")) as f:
            leaf = json.load(f)["cgroup"]
        assert leaf, "no leaf of its own"
        M.assert_rc(mrun("start", name))
        assert M.wait_until(lambda: '"stopped"' in mrun("state", name).out, 30)
        with open(f"{leaf}/memory.events") as f:
            events = dict(line.split() for line in f.read().splitlines())
        assert int(events["oom_kill"]) >= 1, events
    finally:
        M.assert_rc(mrun("delete", "--force", name))
    assert not os.path.exists(leaf), "delete left the leaf"


@needs_cgroup
def test_limits_are_visible_in_the_containers_own_cgroup(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "--network", "none", "--cpus", "0.5",
             "--pids-limit", "20", rootfs, "/bin/sh", "-c",
             "cat /sys/fs/cgroup/cpu.max /sys/fs/cgroup/pids.max /proc/self/cgroup")
    assert r.rc == 0, r
    assert r.out.split("\n")[:3] == ["50000 100000", "20", "0::/"], r


@needs_cgroup
def test_stats_json(mrun, rootfs, name):
    r = mrun.detach("--name", name, "--network", "none", "--memory", "64M", rootfs,
                    "/bin/sleep", "30")
    assert r.rc == 0, r
    try:
        s = mrun("stats", "--format", "json", name)
        assert s.rc == 0, s
        stats = json.loads(s.out)
        assert stats["memory_max"] == 64 << 20 and stats["pids_current"] >= 1, stats
    finally:
        mrun("delete", "-f", name)


def test_cgroup_parent_that_cannot_be_honoured_is_an_error(mrun, rootfs, name):
    """Without a usable cgroup v2 subtree, --cgroup-parent was silently ignored."""
    probe = mrun("run", "--rm", "--name", name, "--network", "none", "--debug", rootfs, "true")
    if "no cgroup:" not in probe.err:
        pytest.skip("the container gets a cgroup here: --cgroup-parent is honoured")
    r = mrun("run", "--rm", "--name", name, "--network", "none", "--cgroup-parent", "/mrun-it",
             rootfs, "true")
    assert r.rc == 125 and "--cgroup-parent /mrun-it" in r.err and "no cgroup" in r.err, r
    assert not M.state_paths_of(name, M.state_dir()), "state left behind"
