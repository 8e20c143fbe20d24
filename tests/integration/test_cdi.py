"""CDI names in `mrun run --device VENDOR/CLASS=NAME` and `mrun cdi` on the host kernel.

The specs are written by the tests into their own directories (--cdi-spec-dir), naming
/dev/null, which every host has; the fakegpu spec itself (`mrun cdi generate` with the
module loaded) is tested in the VM (tests/vm/guest/gpu.sh). Runs in both passes.
"""

import json
import os

import pytest

import mrunlib as M

KIND = "test.example/x"


def null_node(path="/dev/cdinull", **extra):
    st = os.stat("/dev/null")
    node = {"path": path, "hostPath": "/dev/null", "type": "c",
            "major": os.major(st.st_rdev), "minor": os.minor(st.st_rdev)}
    node.update(extra)
    return node


def write_spec(tmp_path, spec, name="x.json"):
    d = tmp_path / "cdi"
    d.mkdir(exist_ok=True)
    (d / name).write_text(json.dumps(spec))
    return str(d)


def example_spec(tmp_path):
    shared = tmp_path / "shared.txt"
    shared.write_text("from the host\n")
    os.chmod(shared, 0o644)
    return {
        "cdiVersion": "0.5.0",
        "kind": KIND,
        "devices": [
            {"name": "a", "containerEdits": {"deviceNodes": [null_node()]}},
            {"name": "b", "containerEdits": {"env": ["CDI_B=1"]}},
        ],
        "containerEdits": {
            "env": ["CDI_TEST=yes"],
            "mounts": [{"hostPath": str(shared), "containerPath": "/etc/cdi-shared",
                        "options": ["ro", "nosuid", "nodev", "bind"]}],
        },
    }


def test_cdi_name_brings_its_node_mount_and_env(mrun, rootfs, tmp_path):
    spec_dir = write_spec(tmp_path, example_spec(tmp_path))
    r = M.run_sh(mrun, rootfs,
                 "stat -c '%F %t:%T' /dev/cdinull; echo hi >/dev/cdinull && echo wrote; "
                 "cat /etc/cdi-shared; echo env=$CDI_TEST; "
                 "echo x >/etc/cdi-shared 2>/dev/null || echo read-only",
                 "--network", "none", "--cdi-spec-dir", spec_dir, "--device", KIND + "=a")
    M.assert_rc(r)
    st = os.stat("/dev/null")
    assert f"character special file {os.major(st.st_rdev):x}:{os.minor(st.st_rdev):x}" in r.out, r
    assert "wrote" in r.out and "from the host" in r.out, r
    assert "env=yes" in r.out and "read-only" in r.out, r


def test_two_devices_of_one_spec_and_a_plain_device(mrun, rootfs, tmp_path):
    spec_dir = write_spec(tmp_path, example_spec(tmp_path))
    r = M.run_sh(mrun, rootfs, "echo $CDI_TEST $CDI_B; test -c /dev/cdinull && test -c /dev/zero2"
                 " && echo nodes", "--network", "none", "--cdi-spec-dir", spec_dir,
                 "--device", KIND + "=a", "--device", KIND + "=b", "--device", "/dev/zero:/dev/zero2")
    M.assert_rc(r)
    assert "yes 1" in r.out and "nodes" in r.out, r


def test_unknown_kind_and_device_list_what_is_known(mrun, rootfs, tmp_path, name):
    spec_dir = write_spec(tmp_path, example_spec(tmp_path))
    r = mrun("run", "--rm", "--name", name, "--network", "none", "--cdi-spec-dir", spec_dir,
             "--device", "other.example/y=0", rootfs, "true")
    M.assert_mrun_error(r, mentions=("other.example/y", "known kinds: " + KIND))
    r = mrun("run", "--rm", "--network", "none", "--cdi-spec-dir", spec_dir,
             "--device", KIND + "=c", rootfs, "true")
    M.assert_mrun_error(r, mentions=(KIND + "=c", "its devices: a, b"))
    assert mrun.entry(name) is None, "a refused run left a container behind"


def test_malformed_spec_names_file_and_field(mrun, rootfs, tmp_path):
    spec = example_spec(tmp_path)
    spec["devices"][0]["containerEdits"]["deviceNodes"][0]["major"] = "one"
    spec_dir = write_spec(tmp_path, spec, "bad.json")
    r = mrun("run", "--rm", "--network", "none", "--cdi-spec-dir", spec_dir,
             "--device", KIND + "=a", rootfs, "true")
    M.assert_mrun_error(r, mentions=(os.path.join(spec_dir, "bad.json"),
                                     "devices[0].containerEdits.deviceNodes[0].major"))


def test_stale_device_numbers_are_refused(mrun, rootfs, tmp_path):
    spec = example_spec(tmp_path)
    spec["devices"][0]["containerEdits"]["deviceNodes"] = [null_node(minor=250)]
    spec_dir = write_spec(tmp_path, spec)
    r = mrun("run", "--rm", "--network", "none", "--cdi-spec-dir", spec_dir,
             "--device", KIND + "=a", rootfs, "true")
    M.assert_mrun_error(r, mentions=("/dev/null", "regenerate"))


def test_cdi_list_names_every_device(mrun, tmp_path):
    spec_dir = write_spec(tmp_path, example_spec(tmp_path))
    r = mrun("cdi", "list", "--cdi-spec-dir", spec_dir)
    M.assert_rc(r)
    assert r.lines == [f"{KIND}=a\t{spec_dir}/x.json", f"{KIND}=b\t{spec_dir}/x.json"], r


def test_cdi_generate_without_the_driver_says_to_load_it(mrun):
    if any(n.startswith("fakegpu") for n in os.listdir("/dev")):
        pytest.skip("fakegpu is loaded here; the VM suite tests generate with it")
    r = mrun("cdi", "generate")
    M.assert_mrun_error(r, mentions=("fakegpu", "modprobe fakegpu"))
    assert r.out == "", r
