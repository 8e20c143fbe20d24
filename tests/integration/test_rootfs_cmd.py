"""`mrun rootfs busybox DIR` and the built-in default rootfs."""

import os

import mrunlib as M

# Applets the rest of the suite uses inside containers.
APPLETS = ["sh", "cat", "echo", "env", "touch", "ls", "id", "hostname", "pwd", "stty",
           "tty", "ps", "head", "wc", "readlink", "sleep", "find", "mkdir", "rm", "kill", "true"]


def _find_applet(root, applet):
    for d in ("bin", "usr/bin", "sbin", "usr/sbin"):
        p = os.path.join(root, d, applet)
        if os.path.lexists(p):
            return p
    return None


def test_rootfs_busybox_creates_the_session_rootfs(rootfs):
    r = M.ROOTFS_CREATION["result"]
    assert r.rc == 0 and not M.ROOTFS_CREATION.get("fallback"), (
        "`mrun rootfs busybox DIR` failed; the suite fell back to a rootfs it made itself\n"
        f"{r!r}")
    assert os.path.isfile(os.path.join(rootfs, "bin/busybox"))
    assert os.access(os.path.join(rootfs, "bin/sh"), os.X_OK), "DIR/bin/sh is not executable"


def test_rootfs_busybox_has_the_applets_tests_use(rootfs):
    if M.ROOTFS_CREATION.get("fallback"):
        import pytest
        pytest.skip("mrun rootfs busybox failed (see test_rootfs_busybox_creates_the_session_rootfs)")
    missing = [a for a in APPLETS if _find_applet(rootfs, a) is None]
    assert not missing, f"busybox rootfs made by mrun lacks applets: {missing}"


def test_rootfs_busybox_into_missing_dir_then_run(mrun, tmp_path, name):
    d = str(tmp_path / "fresh")
    r = mrun("rootfs", "busybox", d, timeout=60)
    M.assert_rc(r)
    r = M.run_sh(mrun, d, "echo made-by-mrun", name=name)
    M.assert_rc(r)
    assert r.out.strip() == "made-by-mrun", r


def test_rootfs_busybox_into_empty_dir(mrun, tmp_path):
    d = tmp_path / "empty"
    d.mkdir()
    r = mrun("rootfs", "busybox", str(d), timeout=60)
    M.assert_rc(r)
    assert (d / "bin/busybox").exists()


def test_rootfs_busybox_refuses_non_empty_dir(mrun, tmp_path):
    d = tmp_path / "full"
    d.mkdir()
    (d / "keep.txt").write_text("precious\n")
    r = mrun("rootfs", "busybox", str(d), timeout=60)
    M.assert_mrun_error(r, 125, mentions=[str(d)])
    assert sorted(os.listdir(d)) == ["keep.txt"], f"mrun touched a non-empty DIR: {os.listdir(d)}"
    assert (d / "keep.txt").read_text() == "precious\n"


def test_default_rootfs_is_made_and_cached(mrun, tmp_path, name, names):
    """`mrun run -- CMD` uses the built-in busybox rootfs, cached under
    $XDG_DATA_HOME/mrun/rootfs/busybox (rootless; root's cache location is
    not specified, so only the behaviour is checked there)."""
    env = {}
    if not M.ROOTFUL:
        env["XDG_DATA_HOME"] = str(tmp_path / "data")
    m = mrun.with_env(**env)
    r = m("run", "--rm", "--name", name, "--", "/bin/sh", "-c", "echo default-rootfs")
    M.assert_rc(r)
    assert r.out.strip() == "default-rootfs", r
    if M.ROOTFUL:
        return
    cache = tmp_path / "data/mrun/rootfs/busybox"
    assert (cache / "bin/busybox").exists(), (
        f"default rootfs not cached at {cache}; data dir holds: "
        f"{[str(p) for p in (tmp_path / 'data').rglob('*')][:20]}")
    ino = (cache / "bin/busybox").stat().st_ino
    r = m("run", "--rm", "--name", names(), "--", "/bin/sh", "-c", "echo again")
    M.assert_rc(r)
    assert r.out.strip() == "again", r
    assert (cache / "bin/busybox").stat().st_ino == ino, "cached default rootfs was rebuilt"
    M.force_rmtree(str(tmp_path / "data"))


def test_default_rootfs_and_default_command(mrun, tmp_path, name):
    """`mrun run` without ROOTFS and CMD runs /bin/sh of the default rootfs
    (stdin is passed through, as crun/bwrap do)."""
    env = {} if M.ROOTFUL else {"XDG_DATA_HOME": str(tmp_path / "data")}
    r = mrun.with_env(**env)("run", "--rm", "--name", name,
                             input="echo from-default-sh-$$; exit 4\n")
    assert r.rc == 4 and "from-default-sh-1" in r.out, r
    M.force_rmtree(str(tmp_path / "data"))
