"""Containment: the classic chroot escape must not reach the host root."""

import os

import pytest

import mrunlib as M


@pytest.mark.parametrize("opts", [[], ["--overlay", "none"], ["--overlay", "fuse"]],
                         ids=["default", "overlay-none", "overlay-fuse"])
def test_chroot_escape_stays_in_container(mrun, rootfs, private_rootfs, name, opts):
    """mrun-probe escape: keep an fd on ".", chroot into a subdir, fchdir
    back, chdir("..") 1000 times, chroot(".") and stat "/". With pivot_root
    and the old root detached there is no host root to climb to."""
    target = private_rootfs if "none" in opts else rootfs
    host = M.host_root_id()
    r = mrun("run", "--rm", "--name", name, *opts, target, "/bin/mrun-probe", "escape", host)
    assert r.rc != 2, f"the probe could not attempt the escape (no CAP_SYS_CHROOT?)\n{r!r}"
    assert r.rc == 0 and "escaped=no" in r.out, f"escaped to the host root {host}\n{r!r}"


def test_escape_probe_detects_an_escape():
    """Control: on the host (no container) the probe must report an escape,
    or a passing escape test would prove nothing."""
    import subprocess
    if not M.ROOTFUL:
        # chroot needs CAP_SYS_CHROOT: use a user namespace, as a container does.
        argv = ["unshare", "--map-root-user", "--mount", M.PROBE, "escape", M.host_root_id()]
    else:
        argv = [M.PROBE, "escape", M.host_root_id()]
    p = subprocess.run(argv, capture_output=True, text=True, timeout=10, cwd="/tmp")
    assert p.returncode == 1 and "escaped=yes" in p.stdout, (p.returncode, p.stdout, p.stderr)


@pytest.mark.parametrize("action", ["SCMP_ACT_ERRNO", "SCMP_ACT_KILL"])
def test_profile_denying_everything_is_a_clear_125(mrun, rootfs, tmp_path, name, action):
    """A default action that denies execve: before, the container crashed (139) or
    died of SIGSYS (159) with no word; now mrun says so before starting anything."""
    profile = tmp_path / "deny.json"
    profile.write_text('{"defaultAction": "%s"}' % action)
    os.chmod(tmp_path, 0o755)
    r = mrun("run", "--rm", "--name", name, "--network", "none", "--security-opt",
             f"seccomp={profile}", rootfs, "/bin/true")
    assert r.rc == 125 and "denies execve" in r.err and "SCMP_ACT_ALLOW" in r.err, r
