"""The container's filesystem: overlay rootfs (native, fuse, none),
--read-only, volumes, /proc, /dev, /sys, masked and read-only paths,
pivot_root, and mounts not leaking to the host."""

import os
import shutil

import pytest

import mrunlib as M


# ---- overlay -------------------------------------------------------------------

@pytest.mark.parametrize("overlay", ["auto", "native", "fuse"])
def test_writes_land_in_upper_dir_and_rootfs_is_unchanged(mrun, rootfs, name, overlay):
    before = M.tree_snapshot(rootfs)
    r = mrun("run", "--name", name, "--overlay", overlay, rootfs, "/bin/sh", "-c",
             "echo new > /newfile && echo more >> /noexec.txt && rm /bin/true && "
             "mkdir -p /made/dir && cat /newfile")
    try:
        M.assert_rc(r)
        assert r.out == "new\n", r
        upper = M.upper_dir(name)
        assert os.path.isdir(upper), f"no upper dir at {upper}"
        assert open(os.path.join(upper, "newfile")).read() == "new\n"
        assert open(os.path.join(upper, "noexec.txt")).read() == "not a program\nmore\n"
        assert os.path.isdir(os.path.join(upper, "made/dir"))
        changes = M.diff_snapshots(before, M.tree_snapshot(rootfs))
        assert not changes, f"ROOTFS changed: {changes[:10]}"
        # The writes persist for the container until it is deleted.
        entry = mrun.entry(name)
        assert entry and entry.get("status") == "stopped", (
            f"a finished container without --rm must stay listed as stopped: {entry}")
    finally:
        d = mrun("delete", name)
    M.assert_rc(d)
    assert not os.path.exists(M.container_dir(name)), (
        f"mrun delete left {M.container_dir(name)}")


@pytest.mark.parametrize("overlay,fstypes", [
    ("native", ["overlay"]),
    ("fuse", ["fuse.fuse-overlayfs", "fuse"]),
])
def test_overlay_mode_is_the_one_asked_for(mrun, rootfs, name, overlay, fstypes):
    mounts, r = M.container_mounts(mrun, rootfs, "--overlay", overlay, name=name)
    root = M.mount_at(mounts, "/")
    assert root is not None and root.fstype in fstypes, (
        f"--overlay {overlay}: / is {root and root.fstype}, expected {fstypes}\n{r.out}")


@pytest.mark.skipif(M.OVERLAY not in ("native", "fuse"),
                    reason="MRUN_IT_OVERLAY is not native or fuse (tests/vm/integration-suite.sh "
                    "runs the suite with each)")
def test_the_suites_overlay_is_the_one_in_use(mrun, rootfs, name):
    """MRUN_IT_OVERLAY reaches a plain `mrun run` of the suite: the run on the other
    overlay is not the same run twice."""
    mounts, r = M.container_mounts(mrun, rootfs, name=name)
    root = M.mount_at(mounts, "/")
    want = {"native": ["overlay"], "fuse": ["fuse.fuse-overlayfs", "fuse"]}[M.OVERLAY]
    assert root is not None and root.fstype in want, (
        f"MRUN_IT_OVERLAY={M.OVERLAY}: / is {root and root.fstype}, expected {want}\n{r!r}")


def test_rm_overlay_is_volatile_and_a_kept_one_is_not(mrun, rootfs, name):
    """--rm: overlayfs need not sync an upper removed at exit (two syncfs at unmount
    stall the exit under I/O load); a kept container's upper is synced as usual."""
    mounts, r = M.container_mounts(mrun, rootfs, "--overlay", "native", name=name)
    root = M.mount_at(mounts, "/")
    assert root is not None and "volatile" in root.superopts, (
        f"--rm: / is not a volatile overlay: {root}\n{r.out}")
    kept = mrun("run", "--name", name + "-kept", "--overlay", "native", rootfs,
                "cat", "/proc/self/mountinfo")
    try:
        M.assert_rc(kept)
        root = M.mount_at(M.parse_mountinfo(kept.out), "/")
        assert root is not None and "volatile" not in root.superopts, (
            f"a kept container's overlay must not be volatile: {root}")
    finally:
        M.assert_rc(mrun("delete", name + "-kept"))


def test_overlay_auto_says_which_under_debug(mrun, rootfs, name):
    r = mrun("--debug", "run", "--rm", "--name", name, rootfs, "/bin/true")
    M.assert_rc(r)
    assert "overlay: native" in r.err or "overlay: fuse" in r.err, (
        f"--debug does not say which overlay auto chose\n{r!r}")


def test_overlay_none_writes_into_rootfs(mrun, private_rootfs, name):
    r = mrun("run", "--rm", "--name", name, "--overlay", "none", private_rootfs,
             "/bin/sh", "-c", "echo direct > /direct.txt")
    M.assert_rc(r)
    assert open(os.path.join(private_rootfs, "direct.txt")).read() == "direct\n"
    assert not os.path.exists(M.container_dir(name))


def test_overlay_fuse_without_fuse_overlayfs_is_125(mrun, rootfs, name):
    path = M.path_without("fuse-overlayfs")
    try:
        r = mrun.with_env(PATH=path)("run", "--rm", "--name", name, "--overlay", "fuse",
                                     rootfs, "/bin/true")
        M.assert_mrun_error(r, 125, mentions=["fuse-overlayfs"])
        assert any(w in r.err for w in ("install", "--overlay", "apt")), (
            f"the message does not say the fix (install fuse-overlayfs, or another --overlay)"
            f"\n{r!r}")
        assert not os.path.exists(M.container_dir(name)), "left an upper dir behind"
        assert not M.state_paths_of(name, M.state_dir()), "left state behind"
    finally:
        shutil.rmtree(path, ignore_errors=True)


def test_rm_removes_upper_dir(mrun, rootfs, name):
    r = M.run_sh(mrun, rootfs, "echo x > /file", name=name)
    M.assert_rc(r)
    assert not os.path.exists(M.container_dir(name)), f"--rm left {M.container_dir(name)}"
    assert not M.state_paths_of(name, M.state_dir()), "--rm left state behind"


# ---- --read-only ---------------------------------------------------------------

def test_read_only_rootfs(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "--read-only", rootfs, "/bin/sh", "-c",
             "touch /x; echo rc=$?")
    M.assert_rc(r)
    assert "rc=1" in r.out and "Read-only file system" in r.err, r


def test_read_only_root_mount_is_ro(mrun, rootfs, name):
    mounts, r = M.container_mounts(mrun, rootfs, "--read-only", name=name)
    root = M.mount_at(mounts, "/")
    assert root is not None and "ro" in root.opts, f"/ is not mounted ro:\n{r.out}"


def test_read_only_keeps_dev_shm_writable(mrun, rootfs, name):
    r = M.run_sh(mrun, rootfs, "echo ok > /dev/shm/f && cat /dev/shm/f", "--read-only",
                 name=name)
    M.assert_rc(r)
    assert r.out == "ok\n", r


# ---- volumes -------------------------------------------------------------------

def test_volume_shows_host_dir_and_writes_through(mrun, rootfs, name, host_dir):
    with open(os.path.join(host_dir, "from-host"), "w") as f:
        f.write("hello from host\n")
    r = M.run_sh(mrun, rootfs, "cat /data/from-host && echo back > /data/from-container",
                 "-v", f"{host_dir}:/data", name=name)
    M.assert_rc(r)
    assert r.out == "hello from host\n", r
    created = os.path.join(host_dir, "from-container")
    assert open(created).read() == "back\n"
    assert os.stat(created).st_uid == M.UID, (
        f"a file container root made in a volume is owned by host uid "
        f"{os.stat(created).st_uid}, expected the caller's {M.UID}")


def test_volume_destination_is_created_outside_rootfs(mrun, rootfs, name, host_dir):
    open(os.path.join(host_dir, "f"), "w").write("deep\n")
    r = M.run_sh(mrun, rootfs, "cat /mnt/deep/new/dir/f", "-v", f"{host_dir}:/mnt/deep/new/dir",
                 name=name)
    M.assert_rc(r)
    assert r.out == "deep\n", r
    assert not os.path.exists(os.path.join(rootfs, "mnt/deep")), "DST was created in ROOTFS"


def test_volume_read_only(mrun, rootfs, name, host_dir):
    r = M.run_sh(mrun, rootfs, "echo x > /data/nope; echo rc=$?; ls /data",
                 "-v", f"{host_dir}:/data:ro", name=name)
    M.assert_rc(r)
    assert "rc=1" in r.out and "Read-only file system" in r.err, r
    assert os.listdir(host_dir) == [], "a write through a :ro volume reached the host"


def test_several_volumes(mrun, rootfs, name, tmp_path):
    a, b = tmp_path / "a", tmp_path / "b"
    a.mkdir()
    b.mkdir()
    os.chmod(tmp_path, 0o755)
    (a / "fa").write_text("A\n")
    (b / "fb").write_text("B\n")
    r = M.run_sh(mrun, rootfs, "cat /va/fa /vb/fb", "-v", f"{a}:/va", "--volume", f"{b}:/vb:ro",
                 name=name)
    M.assert_rc(r)
    assert r.out == "A\nB\n", r


# ---- /dev ----------------------------------------------------------------------

CHAR_DEVICES = {"null": "1:3", "zero": "1:5", "full": "1:7", "random": "1:8",
                "urandom": "1:9", "tty": "5:0"}
SYMLINKS = {"fd": "/proc/self/fd", "stdin": "/proc/self/fd/0",
            "stdout": "/proc/self/fd/1", "stderr": "/proc/self/fd/2"}


def test_dev_is_a_tmpfs_with_the_standard_mounts(mrun, rootfs, name):
    mounts, r = M.container_mounts(mrun, rootfs, name=name)
    expect = {"/dev": "tmpfs", "/dev/pts": "devpts", "/dev/shm": "tmpfs",
              "/dev/mqueue": "mqueue"}
    for point, fstype in expect.items():
        m = M.mount_at(mounts, point)
        assert m is not None and m.fstype == fstype, (
            f"{point} is {m and m.fstype}, expected {fstype}\n{r.out}")


@pytest.mark.parametrize("dev", sorted(CHAR_DEVICES))
def test_dev_char_device(mrun, rootfs, name, dev):
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/mrun-probe", "stat", f"/dev/{dev}")
    M.assert_rc(r)
    assert "type=c" in r.out and f"rdev={CHAR_DEVICES[dev]} " in r.out, r


def test_dev_ptmx(mrun, rootfs, name):
    r = M.run_sh(mrun, rootfs, "readlink /dev/ptmx; /bin/mrun-probe stat /dev/ptmx", name=name)
    M.assert_rc(r)
    assert "pts/ptmx" in r.out or "rdev=5:2 " in r.out, r


def test_dev_symlinks(mrun, rootfs, name):
    script = "; ".join(f"echo {n}=$(readlink /dev/{n})" for n in SYMLINKS)
    r = M.run_sh(mrun, rootfs, script, name=name)
    M.assert_rc(r)
    assert r.lines == [f"{n}={t}" for n, t in SYMLINKS.items()], r


def test_dev_nodes_work(mrun, rootfs, name):
    script = ("echo x > /dev/null && echo null-ok; "
              "head -c 8 /dev/zero | wc -c; head -c 16 /dev/urandom | wc -c; "
              "echo x > /dev/full; echo full-rc=$?")
    r = M.run_sh(mrun, rootfs, script, name=name)
    M.assert_rc(r)
    assert [w.strip() for w in r.lines] == ["null-ok", "8", "16", "full-rc=1"], r
    assert "No space left on device" in r.err, r


def test_dev_has_no_host_devices(mrun, rootfs, name):
    r = M.run_sh(mrun, rootfs, "find /dev -type b; ls /dev", name=name)
    M.assert_rc(r)
    listed = set(r.out.split())
    for host_only in ("vda", "sda", "mem", "kmem", "port", "kmsg", "fuse", "loop0"):
        if os.path.exists(f"/dev/{host_only}"):
            assert host_only not in listed, f"host device /dev/{host_only} visible:\n{r.out}"
    assert not [w for w in r.out.split() if w.startswith("/dev/")], (
        f"block devices inside:\n{r.out}")


# ---- /sys, masked and read-only paths -----------------------------------------

def test_sys_is_read_only(mrun, rootfs, name):
    mounts, r = M.container_mounts(mrun, rootfs, name=name)
    sys_mount = M.mount_at(mounts, "/sys")
    assert sys_mount is not None and "ro" in sys_mount.opts, f"/sys is not ro:\n{r.out}"
    r = M.run_sh(mrun, rootfs, "mkdir /sys/fs/mrun-x; echo rc=$?", name=name + "b")
    assert "rc=1" in r.out, r


MASKED_FILES = ["/proc/kcore", "/proc/keys", "/proc/latency_stats", "/proc/timer_list",
                "/proc/timer_stats", "/proc/sched_debug"]
MASKED_DIRS = ["/proc/acpi", "/proc/asound", "/proc/scsi", "/sys/firmware"]
READ_ONLY = ["/proc/bus", "/proc/fs", "/proc/irq", "/proc/sys", "/proc/sysrq-trigger"]


def test_masked_files_read_empty(mrun, rootfs, name):
    present = [p for p in MASKED_FILES if os.path.exists(p)]
    if not present:
        pytest.skip("none of the masked files exist on this kernel")
    script = "; ".join(f"n=$(cat {p} | wc -c); echo {p}=$((n))" for p in present)
    # "cat P | wc -c" hides cat's status; check it separately too.
    script += "; " + "; ".join(f"cat {p} >/dev/null || echo FAILED {p}" for p in present)
    r = M.run_sh(mrun, rootfs, script, name=name)
    M.assert_rc(r)
    for p in present:
        assert f"{p}=0" in r.lines, f"{p} is not masked (reads as non-empty)\n{r!r}"
        assert f"FAILED {p}" not in r.out, f"{p} is not readable as empty (not masked)\n{r!r}"


def test_masked_dirs_are_empty(mrun, rootfs, name):
    present = [p for p in MASKED_DIRS if os.path.isdir(p)]
    if not present:
        pytest.skip("none of the masked dirs exist on this kernel")
    script = "; ".join(f"n=$(ls -A {p} | wc -l); echo {p}=$((n))" for p in present)
    r = M.run_sh(mrun, rootfs, script, name=name)
    M.assert_rc(r)
    for p in present:
        assert f"{p}=0" in r.lines, f"{p} is not masked (not empty)\n{r!r}"


def test_read_only_proc_paths(mrun, rootfs, name):
    present = [p for p in READ_ONLY if os.path.exists(p)]
    mounts, r = M.container_mounts(mrun, rootfs, name=name)
    for p in present:
        m = M.mount_at(mounts, p)
        assert m is not None and "ro" in m.opts, f"{p} is not a read-only mount:\n{r.out}"


def test_proc_sys_write_fails(mrun, rootfs, name):
    r = M.run_sh(mrun, rootfs, "echo 1 > /proc/sys/vm/drop_caches; echo rc=$?", name=name)
    assert "rc=1" in r.out, r


# ---- pivot_root and leaks ---------------------------------------------------

ALLOWED_MOUNT_PREFIXES = ("/proc", "/dev", "/sys", "/etc/", "/tmp", "/run")


def test_pivot_root_hides_host_paths(mrun, rootfs, name, host_dir):
    """No mount inside sits on a path that exists only on the host (the old
    root), and no mount point or mount root names the host rootfs path.
    Overlay super options (lowerdir=...) are not checked: podman shows them."""
    mounts, r = M.container_mounts(mrun, rootfs, "-v", f"{host_dir}:/vol", name=name)
    for m in mounts:
        assert rootfs not in m.point and rootfs not in m.root, (
            f"mountinfo inside names the host rootfs path {rootfs}:\n{r.out}")
        ok = m.point in ("/", "/vol") or m.point.startswith(ALLOWED_MOUNT_PREFIXES)
        assert ok, f"unexpected mount point {m.point} inside (old root not detached?):\n{r.out}"
    r = M.run_sh(mrun, rootfs, f"ls -d {rootfs} {host_dir} 2>/dev/null; echo done",
                 name=name + "b")
    assert r.out.strip() == "done", f"host paths reachable inside:\n{r.out}"


def test_mounts_do_not_leak_to_host(mrun, rootfs, name, host_dir):
    before = M.mount_keys(M.host_mounts())
    for i, overlay in enumerate(("native", "fuse")):
        r = M.run_sh(mrun, rootfs, "true", "--overlay", overlay, "-v", f"{host_dir}:/vol",
                     name=f"{name}-{i}")
        M.assert_rc(r)
    M.wait_until(lambda: not (M.mount_keys(M.host_mounts()) - before), 2)
    left = M.mount_keys(M.host_mounts()) - before
    assert not left, f"mounts left on the host: {sorted(left)}"


def test_no_fds_leak_into_container(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, rootfs, "/bin/mrun-probe", "fds")
    M.assert_rc(r)
    fds = sorted(int(line.split()[0]) for line in r.lines)
    assert fds == [0, 1, 2], f"fds open in the container command beyond 0,1,2:\n{r.out}"
