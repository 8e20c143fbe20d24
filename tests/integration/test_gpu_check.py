"""mrun gpu matrix and mrun gpu doctor on the host kernel (mrun-gpu(1)).

The host kernel cannot load fakegpu.ko, so here: doctor stops at the module rung with
its fix, and the matrix refuses what it must refuse before it touches anything (not
root, no user, unknown options). The matrix itself and doctor's other rungs run in the
VM (tests/vm/guest/gpu-matrix.sh).
"""

import pytest

import mrunlib as M


def module_loaded():
    with open("/proc/devices", encoding="utf-8") as f:
        return any(line.split()[1:] == ["fakegpu"] for line in f)


@pytest.mark.skipif(module_loaded(), reason="fakegpu is loaded here; the VM suite checks this rung")
def test_doctor_without_the_module_fails_at_the_module_rung(mrun):
    r = mrun("gpu", "doctor")
    assert r.rc == 10, r
    assert "FAIL fakegpu module loaded" in r.out, r
    assert "fix: load the driver: `modprobe fakegpu`" in r.out, r
    # The ladder stops at the first failing rung.
    assert "device nodes present" not in r.out, r


def test_doctor_unknown_container_is_125(mrun):
    r = mrun("gpu", "doctor", "--container", "no-such-container-here")
    M.assert_mrun_error(r, 125, mentions=["no-such-container-here"])


@pytest.mark.skipif(M.ROOTFUL, reason="the non-root refusal runs in the rootless pass")
def test_matrix_as_non_root_is_125(mrun):
    r = mrun("gpu", "matrix", "--rootless-user", M.USER)
    M.assert_mrun_error(r, 125, mentions=["must run as root", "sudo mrun gpu matrix"])


@pytest.mark.skipif(not M.ROOTFUL, reason="needs root to get past the root check")
def test_matrix_without_a_rootless_user_is_125(mrun):
    env = {k: v for k, v in mrun.env.items() if k != "SUDO_USER"}
    r = mrun("gpu", "matrix", env=env)
    M.assert_mrun_error(r, 125, mentions=["--rootless-user"])


@pytest.mark.skipif(not M.ROOTFUL, reason="needs root to get past the root check")
def test_matrix_with_an_unknown_user_is_125(mrun):
    r = mrun("gpu", "matrix", "--rootless-user", "no-such-user-mrun")
    M.assert_mrun_error(r, 125, mentions=["no-such-user-mrun"])


@pytest.mark.parametrize("args", [
    ["gpu", "matrix", "--bogus"],
    ["gpu", "doctor", "--bogus"],
    ["gpu", "bogus"],
    ["gpu"],
    ["gpu", "matrix", "--output"],
], ids=["matrix-option", "doctor-option", "gpu-verb", "no-verb", "output-without-file"])
def test_bad_usage_is_125_with_one_line(mrun, args):
    r = mrun(*args)
    M.assert_mrun_error(r, 125)
