"""A host user that only an NSS module knows (Debian's libnss-extrausers): no line in
/etc/passwd or /etc/group, its /etc/subuid and /etc/subgid entries by name, as LDAP,
sssd, systemd-homed or extrausers users have them. mrun must find the user's name,
home and subordinate ranges, and start its container with the full 65536-id map.

Everything the test changes on the host (nsswitch.conf, the extrausers files,
/etc/subuid, /etc/subgid) is bound over the real files in a mount namespace of its
own: the host's files stay as they are. mrun, a static PIE, cannot load an NSS module
itself; sys/user_db asks getent(1) for what the files do not answer."""

import os
import shutil
import subprocess
import tempfile

import pytest

import mrunlib as M

NSS_MODULE = "/usr/lib/libnss_extrausers.so.2"
UID = GID = 42420
NAME = "mrun-nss-only"
SUBORDINATE = 1_700_000

pytestmark = [
    pytest.mark.skipif(not M.ROOTFUL, reason="sets up a mount namespace and a user: root only"),
    pytest.mark.skipif(not os.path.exists(NSS_MODULE),
                       reason="libnss-extrausers is not installed (scripts/install-deps.sh)"),
]


def _with_nss(nsswitch_line_of):
    """nsswitch.conf with extrausers after files in the passwd, group and shadow lines
    (nsswitch_line_of=True), or as the host has it."""
    out = []
    with open("/etc/nsswitch.conf") as f:
        for line in f:
            key = line.split(":", 1)[0].strip()
            if nsswitch_line_of and key in ("passwd", "group", "shadow"):
                line = f"{key}: files extrausers\n"
            out.append(line)
    return "".join(out)


@pytest.fixture
def nss_world():
    """The files bound over the host's in the test's mount namespace, and the user's
    home, under a directory every user may enter (pytest's own are the caller's 0700)."""
    import pathlib
    base = pathlib.Path(tempfile.mkdtemp(prefix="mrun-nss-", dir="/var/tmp"))
    os.chmod(base, 0o755)
    world = base / "world"
    extra = world / "extrausers"
    extra.mkdir(parents=True)
    home = base / "home"
    home.mkdir()
    os.chown(home, UID, GID)
    (extra / "passwd").write_text(f"{NAME}:x:{UID}:{GID}:NSS only:{home}:/bin/sh\n")
    (extra / "group").write_text(f"{NAME}:x:{GID}:\n")
    (extra / "shadow").write_text(f"{NAME}:!:19000:0:99999:7:::\n")
    for db in ("subuid", "subgid"):
        with open(f"/etc/{db}") as f:
            kept = f.read()
        (world / db).write_text(kept + f"{NAME}:{SUBORDINATE}:65536\n")
    (world / "nsswitch-on.conf").write_text(_with_nss(True))
    yield world, home
    # The user's own state root and the storage it made.
    for path in (f"/tmp/mrun-{UID}", str(base)):
        subprocess.run(["rm", "-rf", "--one-file-system", path], check=False)


def _as_nss_user(world, home, command, nss=True):
    """COMMAND as uid UID in a mount namespace where the files of WORLD are the host's
    (with extrausers in nsswitch.conf when NSS), from a minimal login-like environment."""
    binds = [(world / "extrausers", "/var/lib/extrausers"),
             (world / "subuid", "/etc/subuid"), (world / "subgid", "/etc/subgid")]
    if nss:
        binds.append((world / "nsswitch-on.conf", "/etc/nsswitch.conf"))
    script = "".join(f"mount --bind {src} {dst} && " for src, dst in binds)
    env = ["env", "-i", f"HOME={home}", f"PATH={M.DEFAULT_PATH}", "LANG=C.UTF-8"]
    script += (f"exec setpriv --reuid {UID} --regid {GID} --clear-groups "
               f"{' '.join(env)} \"$@\"")
    return subprocess.run(["unshare", "-m", "--propagation", "private", "sh", "-c", script,
                           "as-nss-user", *command],
                          capture_output=True, text=True, timeout=M.TIMEOUT)


def test_the_nss_world_is_what_the_test_says(nss_world):
    """The control: with extrausers in nsswitch.conf getent knows the user, and
    without it nothing on the host does (so the test below proves what it says)."""
    world, home = nss_world
    r = _as_nss_user(world, home, ["getent", "passwd", str(UID)])
    assert r.returncode == 0 and r.stdout.startswith(f"{NAME}:x:{UID}:"), r
    r = _as_nss_user(world, home, ["getent", "passwd", str(UID)], nss=False)
    assert r.returncode == 2 and r.stdout == "", r
    assert shutil.which("newuidmap"), "uidmap is not installed"


def test_a_user_only_nss_knows_gets_its_subordinate_ids(nss_world):
    """The main job as that user: `mrun run --rm` on the built-in busybox rootfs, the
    container's uid_map and gid_map being the user's own id and its 65536 subordinate
    ids found by name in /etc/subuid and /etc/subgid (container ids 1..65535 from the
    range's start, as for any rootless user)."""
    world, home = nss_world
    r = _as_nss_user(world, home, [M.MRUN, "run", "--rm", "--network", "none", "--",
                                   "/bin/sh", "-c", "cat /proc/self/uid_map /proc/self/gid_map"])
    assert r.returncode == 0, r
    rows = [line.split() for line in r.stdout.splitlines()]
    assert rows == [["0", str(UID), "1"], ["1", str(SUBORDINATE), "65535"],
                    ["0", str(GID), "1"], ["1", str(SUBORDINATE), "65535"]], r
