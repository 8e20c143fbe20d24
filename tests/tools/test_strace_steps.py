"""Tests of scripts/strace_steps.py, the reducer behind docs/COMPARE-RUNC.md, on real
traces: data/*-rootless.trace are `strace -f -tt -y` of mrun, runc 1.1.5 and crun 1.8.1
running one `runc spec --rootless` bundle on this project's dev machine (made by
scripts/compare-runc.sh; library loads and state-file writes cut out)."""

import json
import os
import re
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", "scripts"))
import strace_steps as S  # noqa: E402

STAGE = "/var/tmp/mrun-compare.MCVnuC"
SUBS = [(f"{STAGE}/user/bundle/rootfs", "$ROOTFS"), (f"{STAGE}/user/bundle", "$BUNDLE"),
        (f"{STAGE}/home/.local/share/mrun", "$DATA"), (STAGE, "$STAGE")]


def reduce(runtime):
    with open(os.path.join(HERE, "data", f"{runtime}-rootless.trace")) as f:
        return S.reduce_trace(f, SUBS)


@pytest.fixture(scope="module", params=["mrun", "runc", "crun"])
def reduced(request):
    return request.param, reduce(request.param)


def raw_pids(runtime):
    with open(os.path.join(HERE, "data", f"{runtime}-rootless.trace")) as f:
        return {m.group(1) for m in (re.match(r"^(\d+) ", line) for line in f) if m}


def tags(r, tag):
    return [s for s in r["steps"] if s["tag"] == tag]


def test_parse_joins_unfinished_calls_and_drops_signals():
    lines = ["10 12:00:00.000001 clone(child_stack=NULL, flags=SIGCHLD <unfinished ...>\n",
             "11 12:00:00.000002 execve(\"/bin/true\", [\"true\"], 0x7ffd00000000 /* 1 vars */) = 0\n",
             "10 12:00:00.000003 <... clone resumed>) = 11\n",
             "10 12:00:00.000004 --- SIGCHLD {si_signo=SIGCHLD} ---\n",
             "11 12:00:00.000005 +++ exited with 0 +++\n"]
    calls = S.parse(lines)
    assert [(c[0], c[2]) for c in calls] == [(11, "execve"), (10, "clone")]
    assert calls[1][3] == "child_stack=NULL, flags=SIGCHLD" and calls[1][4] == "11"
    r = S.reduce_trace(lines)
    # the child ran before its clone returned: it is still the parent's child, P2
    assert [(s["proc"], s["tag"]) for s in r["steps"]] == [("P2", "exec"), ("P1", "process")]
    assert r["steps"][1]["text"].endswith("= P2")


def test_every_step_has_a_known_tag_and_no_host_pid(reduced):
    runtime, r = reduced
    assert r["steps"], runtime
    pids = raw_pids(runtime)
    for s in r["steps"]:
        assert s["tag"] in S.TAGS
        for pid in re.findall(r"/proc/(\d+)", s["text"]):
            assert pid not in pids, s["text"]
        assert STAGE not in s["text"]
    assert reduce(runtime) == r  # deterministic


def test_each_runtime_ends_with_seccomp_then_the_container_exec(reduced):
    runtime, r = reduced
    last = r["steps"][-1]
    assert last["tag"] == "exec" and '"/bin/true"' in last["text"]
    before = [s["tag"] for s in r["steps"] if s["proc"] == last["proc"]]
    order = [t for t in before if t in ("pivot_root", "capabilities", "no_new_privs", "seccomp")]
    # pivot_root, then capabilities and no_new_privs, then the filter, then exec
    assert order.index("pivot_root") < order.index("no_new_privs") < order.index("seccomp")
    assert order[-1] == "seccomp"
    assert len(tags(r, "seccomp")) == 1


def test_mrun_maps_ids_with_newuidmap_and_one_clone3():
    r = reduce("mrun")
    ns = tags(r, "namespaces")
    assert len(ns) == 1 and ns[0]["call"] == "clone3" and "CLONE_NEWUSER" in ns[0]["text"]
    child = ns[0]["text"].rsplit("= ", 1)[1]
    maps = [s for s in tags(r, "id maps") if s["call"] == "execve"]
    assert sorted(re.search(r"new[ug]idmap", s["text"]).group(0) for s in maps) == \
        ["newgidmap", "newuidmap"]
    for s in maps:  # the target pid is the container's init, by label
        assert f'"{child}", "0"' in s["text"]
    writes = [s for s in tags(r, "id maps") if s["call"] == "write"]
    assert {w["text"].split("<")[1].split(">")[0] for w in writes} == \
        {f"/proc/{child}/uid_map", f"/proc/{child}/gid_map"}
    assert "keyring" not in {s["tag"] for s in r["steps"]}
    assert r["threads"] == 0


def test_runc_nsexec_processes_and_direct_map_writes():
    r = reduce("runc")
    names = r["processes"]
    assert "runc:[0:PARENT]" in names["P2"] and "runc:[1:CHILD]" in names["P3"]
    assert names["P4"].endswith("true") and "runc:[2:INIT]" in names["P4"]
    assert r["threads"] > 0  # Go's, folded into their processes
    user_ns = [s for s in tags(r, "namespaces") if "CLONE_NEWUSER" in s["text"]]
    assert [(s["proc"], s["call"]) for s in user_ns] == [("P3", "unshare")]
    # one id each: runc:[0:PARENT] writes the maps itself, no newuidmap
    assert {s["proc"] for s in tags(r, "id maps")} == {"P2"}
    assert any("/proc/P3/uid_map" in s["text"] for s in tags(r, "id maps"))
    assert {s["proc"] for s in tags(r, "keyring")} == {"P4"}


def test_crun_fd_mount_targets_resolve_to_masked_and_readonly_paths():
    r = reduce("crun")
    masked = tags(r, "masked paths")
    readonly = tags(r, "readonly paths")
    assert masked and readonly
    assert all("/proc/self/fd/" in s["text"] for s in masked)  # fd targets, resolved
    failed_exec = [s for s in tags(r, "id maps") if s["call"] == "execve" and s["failed"]]
    assert failed_exec and "ENOENT" in failed_exec[0]["text"]  # its PATH search
    assert {s["proc"] for s in tags(r, "keyring")} == {"P1"}
    assert "(memfd)" in r["processes"]["P1"]


def test_render_puts_the_runtimes_side_by_side():
    modes = [{"title": "Rootless", "config": "x", "remarks": ["crun masked"],
              "runs": {n: reduce(n) for n in ("mrun", "runc", "crun")}}]
    md = S.render({"header": ["- kernel: test"]}, modes, "## Notes\n\ntext")
    assert "| step | mrun | runc | crun |" in md
    for tag in ("namespaces", "id maps", "pivot_root", "seccomp", "exec"):
        assert re.search(rf"^\| {re.escape(tag)} \| #\d+ ", md, re.M), tag
    assert "| keyring | – |" in md  # mrun joins no keyring
    assert md.index("## Notes") < md.index("## Rootless") < md.index("### Order")
    assert "<details><summary>crun:" in md
    json.dumps(modes)  # the reduced form is plain data
