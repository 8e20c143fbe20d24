"""The OCI runtime verbs (mrun-oci(1)): spec, create, start, state, kill, delete,
features and run --bundle, driven as an engine would drive them, rootless and
rootful, with the errors runc users expect."""

import json
import os
import time

import pytest

import mrunlib as M


def _bundle(mrun, tmp_path, rootfs, args, **process):
    """`mrun spec` (--rootless when not root) in a fresh bundle, pointed at ROOTFS."""
    bundle = tmp_path / "bundle"
    bundle.mkdir()
    spec_args = ["spec", "--bundle", str(bundle)] + ([] if M.ROOTFUL else ["--rootless"])
    M.assert_rc(mrun(*spec_args))
    config = json.loads((bundle / "config.json").read_text())
    config["root"]["path"] = str(rootfs)
    config["process"]["args"] = args
    config["process"]["terminal"] = False
    config["process"].update(process)
    (bundle / "config.json").write_text(json.dumps(config))
    return bundle


def _state(mrun, name):
    r = mrun("state", name)
    M.assert_rc(r)
    return json.loads(r.out)


def _wait_status(mrun, name, status, timeout=10):
    deadline = time.monotonic() + timeout
    while True:
        state = _state(mrun, name)
        if state["status"] == status or time.monotonic() > deadline:
            return state
        time.sleep(0.05)


def _cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")[0].decode()
    except OSError:
        return ""


def test_lifecycle_through_the_verbs(mrun, rootfs, name, tmp_path):
    bundle = _bundle(mrun, tmp_path, rootfs, ["/bin/sleep", "1000"])
    pid_file = tmp_path / "pid"
    try:
        r = mrun("create", "--bundle", bundle, "--pid-file", pid_file, name)
        M.assert_rc(r)
        assert r.out == "", f"create prints nothing, as runc\n{r!r}"
        state = _state(mrun, name)
        assert set(state) >= {"ociVersion", "id", "status", "pid", "bundle"}, state
        assert state["id"] == name and state["status"] == "created", state
        assert state["bundle"] == str(bundle), state
        pid = state["pid"]
        assert pid > 0 and int(pid_file.read_text()) == pid, (state, pid_file.read_text())
        # Held before exec: its process is still mrun's, not sleep.
        time.sleep(0.2)
        assert not _cmdline(pid).endswith("sleep"), _cmdline(pid)

        M.assert_rc(mrun("start", name))
        state = _state(mrun, name)
        assert state["status"] == "running" and state["pid"] == pid, state
        deadline = time.monotonic() + 5
        while not _cmdline(pid).endswith("sleep") and time.monotonic() < deadline:
            time.sleep(0.05)
        assert _cmdline(pid).endswith("sleep"), f"after start, pid {pid} is {_cmdline(pid)!r}"
        M.assert_mrun_error(mrun("start", name), mentions=["cannot start an already running container"])

        M.assert_rc(mrun("kill", name, "KILL"))
        state = _wait_status(mrun, name, "stopped")
        assert state["status"] == "stopped" and state["pid"] == 0, state
        M.assert_mrun_error(mrun("start", name), mentions=["cannot start a container that has stopped"])
        M.assert_mrun_error(mrun("kill", name, "KILL"), mentions=["not running"])
        M.assert_rc(mrun("delete", name))
        M.assert_mrun_error(mrun("state", name), mentions=["container does not exist", name])
    finally:
        mrun("delete", "--force", name)


def test_created_container_is_deleted_without_force_and_id_is_unique(mrun, rootfs, name, tmp_path):
    bundle = _bundle(mrun, tmp_path, rootfs, ["/bin/true"])
    try:
        M.assert_rc(mrun("create", "--bundle", bundle, name))
        pid = _state(mrun, name)["pid"]
        M.assert_mrun_error(mrun("create", "--bundle", bundle, name),
                            mentions=["already exists", name])
        assert _state(mrun, name)["status"] == "created", "a refused create changed the state"
        M.assert_rc(mrun("delete", name))
        assert not os.path.exists(f"/proc/{pid}/cmdline") or _cmdline(pid) == "", (
            f"pid {pid} survived delete")
    finally:
        mrun("delete", "--force", name)


def test_kill_created_then_delete(mrun, rootfs, name, tmp_path):
    bundle = _bundle(mrun, tmp_path, rootfs, ["/bin/sleep", "1000"])
    try:
        M.assert_rc(mrun("create", "--bundle", bundle, name))
        M.assert_rc(mrun("kill", name, "KILL"))
        assert _wait_status(mrun, name, "stopped")["status"] == "stopped"
        M.assert_mrun_error(mrun("start", name), mentions=["cannot start a container that has stopped"])
    finally:
        M.assert_rc(mrun("delete", "--force", name))


def test_running_container_needs_force_to_delete(mrun, rootfs, name, tmp_path):
    bundle = _bundle(mrun, tmp_path, rootfs, ["/bin/sleep", "1000"])
    try:
        M.assert_rc(mrun("create", "--bundle", bundle, name))
        M.assert_rc(mrun("start", name))
        M.assert_mrun_error(mrun("delete", name), mentions=["not stopped"])
        M.assert_rc(mrun("delete", "--force", name))
        M.assert_mrun_error(mrun("state", name), mentions=["does not exist"])
    finally:
        mrun("delete", "--force", name)


def test_run_bundle_runs_to_completion(mrun, rootfs, name, tmp_path):
    bundle = _bundle(mrun, tmp_path, rootfs, ["/bin/sh", "-c", "echo hello from $(hostname); exit 3"])
    try:
        r = mrun("run", "--bundle", bundle, name)
        assert r.rc == 3, r
        assert "hello from mrun" in r.out, r
        state = _state(mrun, name)
        assert state["status"] == "stopped" and state["bundle"] == str(bundle), state
    finally:
        mrun("delete", "--force", name)


@pytest.mark.parametrize("breakage,mentions", [
    ("malformed", ["malformed JSON"]),
    ("version", ["unsupported ociVersion \"0.9\""]),
    ("no-root", ["root must be specified"]),
    ("hooks", ["hooks.prestart", "not run yet"]),
    ("relative-cwd", ["process.cwd", "absolute"]),
])
def test_bad_config_is_refused_and_leaves_nothing(mrun, rootfs, name, tmp_path, breakage, mentions):
    bundle = _bundle(mrun, tmp_path, rootfs, ["/bin/true"])
    path = bundle / "config.json"
    config = json.loads(path.read_text())
    if breakage == "malformed":
        path.write_text(path.read_text()[:-20])
    else:
        if breakage == "version":
            config["ociVersion"] = "0.9"
        elif breakage == "no-root":
            del config["root"]
        elif breakage == "hooks":
            config["hooks"] = {"prestart": [{"path": "/bin/true"}]}
        elif breakage == "relative-cwd":
            config["process"]["cwd"] = "tmp"
        path.write_text(json.dumps(config))
    for verb in ("create", "run"):
        r = mrun(verb, "--bundle", bundle, name)
        M.assert_mrun_error(r, mentions=mentions)
        M.assert_mrun_error(mrun("state", name), mentions=["does not exist"])


def test_missing_bundle_and_missing_container(mrun, name, tmp_path):
    M.assert_mrun_error(mrun("create", "--bundle", tmp_path / "nope", name), mentions=["nope"])
    empty = tmp_path / "empty"
    empty.mkdir()
    M.assert_mrun_error(mrun("create", "--bundle", empty, name), mentions=["config.json not found"])
    for verb in ("start", "state"):
        M.assert_mrun_error(mrun(verb, name), mentions=["container does not exist"])


def test_spec_refuses_to_overwrite_and_features_is_honest(mrun, tmp_path):
    M.assert_rc(mrun("spec", "--bundle", tmp_path))
    config = json.loads((tmp_path / "config.json").read_text())
    assert config["ociVersion"].startswith("1.") and config["root"]["path"] == "rootfs", config
    M.assert_mrun_error(mrun("spec", "--bundle", tmp_path), mentions=["exists"])
    r = mrun("features")
    M.assert_rc(r)
    features = json.loads(r.out)
    assert features["hooks"] == [], "mrun runs no hooks yet; features must not claim any"
    assert "user" in features["linux"]["namespaces"], features
