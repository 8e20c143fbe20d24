"""Containment: the classic chroot escape must not reach the host root."""

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
