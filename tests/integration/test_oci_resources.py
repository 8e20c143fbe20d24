"""linux.resources of an OCI bundle, and `mrun update`, on this host (mrun-oci(1),
RESOURCES).

This host's cgroup layout is hybrid (no usable cgroup v2; rootless, no delegation), so
mrun makes no cgroup here. ctr's default spec and containerd's CRI always carry
linux.resources.cpu.shares 1024, which asks for nothing beyond a fresh cgroup's
default (cpu.weight 100): such a config must run here, rootless and rootful, while any
real request (cpu.shares 2048, a memory limit) stays a 125 naming the field. The
values landing in a leaf's files, and `update` changing them, are tested on a pure
cgroup v2 in a VM: tests/vm/cgroup-suite.sh.
"""

import json
import os
import shutil
import subprocess

import pytest

import mrunlib as M
from test_cgroups import V1_LIMITS, VM_SUITE, WHY_NOT
from test_oci import _create

RUNC = shutil.which("runc")

needs_no_cgroup = pytest.mark.skipif(
    WHY_NOT is None or V1_LIMITS,
    reason="this host can honour limits (rootful on cgroup v1: test_cgroups_v1.py); what "
    f"runs without a cgroup is tested where it cannot (this host's CI, and {VM_SUITE} "
    "without delegation)")

# The resources of tests/unit/oci/configs/ctr-default.json, as `ctr run` writes them.
CTR_DEVICES = [{"allow": False, "access": "rwm"}] + [
    {"allow": True, "type": "c", "major": major, "minor": minor, "access": "rwm"}
    for major, minor in ((1, 3), (1, 8), (1, 7), (5, 0), (1, 5), (1, 9), (5, 1), (5, 2))
] + [{"allow": True, "type": "c", "major": 136, "access": "rwm"}]


def _bundle(mrun, tmp_path, rootfs, args, resources):
    """`mrun spec` (--rootless when not root) pointed at ROOTFS, with RESOURCES."""
    def edit(config):
        config["linux"]["resources"] = resources
    return M.oci_bundle(mrun, tmp_path, rootfs, args, edit)


@needs_no_cgroup
def test_ctr_cpu_shares_1024_runs_without_a_cgroup(mrun, rootfs, name, tmp_path):
    bundle = _bundle(mrun, tmp_path, rootfs, ["/bin/echo", "ran"],
                     {"devices": CTR_DEVICES, "cpu": {"shares": 1024}})
    try:
        r = mrun("--debug", "run", "--bundle", bundle, name)
        M.assert_rc(r)
        assert r.out.strip() == "ran", r
        # --debug says why nothing is lost.
        assert "linux.resources.cpu.shares (cpu.weight 100)" in r.err, r
        assert "accepted without a cgroup" in r.err, r
    finally:
        mrun("delete", "--force", name)


@needs_no_cgroup
@pytest.mark.parametrize("resources,field", [
    ({"cpu": {"shares": 2048}}, "linux.resources.cpu.shares"),
    ({"cpu": {"shares": 1024, "quota": 50000}}, "linux.resources.cpu.quota"),
    ({"memory": {"limit": 67108864}}, "linux.resources.memory.limit"),
    ({"unified": {"memory.high": "67108864"}}, "linux.resources.unified.memory.high"),
])
@needs_no_cgroup
def test_a_real_request_without_a_cgroup_is_125_naming_the_field(mrun, rootfs, name, tmp_path,
                                                                 resources, field):
    bundle = _bundle(mrun, tmp_path, rootfs, ["/bin/true"], dict(resources, devices=CTR_DEVICES))
    for verb in ("create", "run"):
        r = _create(mrun, "--bundle", bundle, name) if verb == "create" else mrun(
            verb, "--bundle", bundle, name)
        M.assert_mrun_error(r, mentions=[field, "needs a cgroup"])
        M.assert_mrun_error(mrun("state", name), mentions=["does not exist"])


@pytest.mark.parametrize("resources,field", [
    pytest.param({"memory": {"disableOOMKiller": True}},
                 "linux.resources.memory.disableOOMKiller",
                 marks=pytest.mark.skipif(V1_LIMITS, reason="cgroup v1 can (test_cgroups_v1.py)")),
    pytest.param({"cpu": {"realtimeRuntime": 950000}}, "linux.resources.cpu.realtimeRuntime",
                 marks=pytest.mark.skipif(V1_LIMITS, reason="cgroup v1 can (test_cgroups_v1.py)")),
    ({"unified": {"../memory.max": "1"}}, "linux.resources.unified.../memory.max"),
])
def test_what_cgroup_v2_cannot_do_is_refused_anywhere(mrun, rootfs, name, tmp_path, resources,
                                                      field):
    bundle = _bundle(mrun, tmp_path, rootfs, ["/bin/true"], resources)
    M.assert_mrun_error(mrun("run", "--bundle", bundle, name), mentions=[field])
    M.assert_mrun_error(mrun("state", name), mentions=["does not exist"])


@needs_no_cgroup
def test_update_without_a_cgroup(mrun, rootfs, name, tmp_path):
    bundle = _bundle(mrun, tmp_path, rootfs, ["/bin/sleep", "1000"],
                     {"devices": CTR_DEVICES, "cpu": {"shares": 1024}})
    try:
        M.assert_rc(_create(mrun, "--bundle", bundle, name))
        M.assert_rc(mrun("start", name))
        # containerd's CRI sends cpu.shares on update too: the default is accepted.
        M.assert_rc(mrun("update", "--cpu-share", "1024", name))
        M.assert_rc(mrun("update", "--resources", "-", name,
                         input='{"cpu": {"shares": 1024}, "devices": []}'))
        M.assert_mrun_error(mrun("update", "--memory", "64m", name),
                            mentions=["has no cgroup", "linux.resources.memory.limit"])
        M.assert_mrun_error(mrun("update", "--cpu-rt-runtime", "1000", name),
                            mentions=["linux.resources.cpu.realtimeRuntime"])
        M.assert_mrun_error(mrun("update", "--memory", "1x", name),
                            mentions=["invalid value for --memory"])
        M.assert_mrun_error(mrun("update", "--resources", "-", "--memory", "1m", name),
                            mentions=["--resources and the limit flags"])
    finally:
        mrun("delete", "--force", name)
    M.assert_mrun_error(mrun("update", "--memory", "64m", name), mentions=["does not exist"])


def test_features_cgroup_section_in_runcs_shape(mrun):
    """runc's keys (v1, v2, systemd, systemdUser) and the spec's rdma; cgroup v1 where
    mrun writes v1 limits, rootful; no systemd (mrun makes the scope's path itself)."""
    r = mrun("features")
    M.assert_rc(r)
    cgroup = json.loads(r.out)["linux"]["cgroup"]
    assert cgroup == {"v1": M.ROOTFUL, "v2": True, "systemd": False, "systemdUser": False,
                      "rdma": True}, cgroup
    if os.access("/usr/sbin/runc", os.X_OK):
        runc = subprocess.run(["/usr/sbin/runc", "features"], capture_output=True, text=True,
                              timeout=30)
        assert runc.returncode == 0, runc
        runc_cgroup = json.loads(runc.stdout)["linux"]["cgroup"]
        assert set(runc_cgroup) <= set(cgroup), (runc_cgroup, cgroup)
        assert all(type(cgroup[k]) is type(v) for k, v in runc_cgroup.items()), runc_cgroup


# Docker 20.10's default linux.resources.devices, as `docker run` hands it to a runtime:
# a deny-all, the usual nodes and tun, and a deny of /dev/fuse last.
DOCKER_DEVICES = [{"allow": False, "access": "rwm"}] + [
    {"allow": True, "type": "c", "major": major, "minor": minor, "access": "rwm"}
    for major, minor in ((1, 3), (1, 5), (1, 7), (1, 8), (1, 9), (5, 0), (5, 1), (5, 2),
                         (136, None), (10, 200))
] + [{"allow": False, "type": "c", "major": 10, "minor": 229, "access": "rwm"}]


@pytest.mark.skipif(RUNC is None, reason="runc is not installed (scripts/install-deps.sh)")
def test_dockers_device_list_as_runc(mrun, rootfs, name, tmp_path):
    """Docker's list with /dev/fuse in linux.devices (its node made or bound in): every
    container Docker starts carries this list, and mrun once refused it at create.
    What the container may open must be what runc gives it: rootful, /dev/fuse EPERM
    (the deny after the allows), /dev/null open; rootless neither runtime has a device
    cgroup on this host, and both open the node the host lets them."""
    if not os.path.exists("/dev/fuse"):
        pytest.skip("no /dev/fuse on this host")
    fuse = os.stat("/dev/fuse")

    def edit(config):
        config["linux"]["resources"] = {
            "devices": [{k: v for k, v in d.items() if v is not None} for d in DOCKER_DEVICES]}
        config["linux"]["devices"] = [{"path": "/dev/fuse", "type": "c", "major": 10,
                                       "minor": 229, "fileMode": 0o666, "uid": 0, "gid": 0}]
    script = "mrun-probe write /dev/fuse; mrun-probe write /dev/null; true"
    bundle = M.oci_bundle(mrun, tmp_path, rootfs, ["/bin/sh", "-c", script], edit)
    runc_root = str(tmp_path / "runc-root")
    try:
        theirs = subprocess.run([RUNC, "--root", runc_root, "run", "-b", str(bundle), name],
                                capture_output=True, text=True, timeout=M.TIMEOUT,
                                stdin=subprocess.DEVNULL)
    finally:
        subprocess.run([RUNC, "--root", runc_root, "delete", "--force", name],
                       capture_output=True, timeout=M.TIMEOUT)
    try:
        ours = mrun("run", "--bundle", bundle, name)
    finally:
        mrun("delete", "--force", name)
    assert theirs.returncode == 0, theirs
    M.assert_rc(ours)
    assert ours.lines == theirs.stdout.splitlines(), f"mrun:\n{ours!r}\nrunc:\n{theirs}"
    if M.ROOTFUL:
        assert ours.lines[0].startswith("errno=EPERM"), ours
    assert ours.lines[1] == "ok", ours
    assert os.stat("/dev/fuse").st_mode == fuse.st_mode, "the host's /dev/fuse changed"
