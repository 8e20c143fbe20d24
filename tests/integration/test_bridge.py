"""--network bridge: rootful, a veth pair into the host bridge mrun0 with a host-local
address (10.90.0.0/24), through Debian's CNI plugins; published ports through portmap.

Each test runs mrun in a network namespace of its own (unshare -n), so the bridge, the
veth, the NAT and port rules are made there and go with it: nothing is changed in the
host's network and nothing is sent off this machine. Rootless, the mode is refused.
"""

import os
import shutil
import subprocess

import pytest

import mrunlib as M

CNI_DIRS = ("/usr/lib/cni", "/opt/cni/bin")


def _need_cni():
    if not M.ROOTFUL:
        pytest.skip("--network bridge is rootful (rootless: test_bridge_rootless_is_refused)")
    for plugin in ("bridge", "host-local", "portmap"):
        if not any(os.access(os.path.join(d, plugin), os.X_OK) for d in CNI_DIRS):
            pytest.skip(f"CNI plugin {plugin} missing: apt-get install containernetworking-plugins")
    for tool in ("unshare", "ip", "iptables"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed")


def _in_own_netns(script, timeout=60):
    """Runs bash SCRIPT as root in a fresh network namespace with lo up."""
    p = subprocess.run(["unshare", "-n", "--", "bash", "-euc", "ip link set lo up\n" + script],
                       capture_output=True, text=True, timeout=timeout, env=M.base_env(),
                       stdin=subprocess.DEVNULL)
    return M.Result(["unshare", "-n", "bash", "-c", script], p.returncode, p.stdout, p.stderr, 0)


def _mrun_cmd(mrun, *args):
    return " ".join(M.shell_quote(a) for a in mrun.argv(*args))


def _leases_of(name):
    found = []
    for root, _, files in os.walk("/run/mrun/cni"):
        for f in files:
            try:
                with open(os.path.join(root, f)) as fh:
                    if name in fh.read():
                        found.append(os.path.join(root, f))
            except OSError:
                pass
    return found


def test_bridge_address_route_ping_and_tcp_to_host(mrun, rootfs, name, tmp_path):
    _need_cni()
    www = tmp_path / "www"
    www.mkdir()
    (www / "index.html").write_text(f"host-page-{name}\n")
    inside = ("ip -4 -o addr show eth0; ip route; cat /etc/hosts; "
              "mrun-probe ping 10.90.0.1; wget -qO- http://10.90.0.1:18080/index.html")
    script = f"""
python3 -m http.server 18080 --bind 0.0.0.0 --directory {M.shell_quote(str(www))} >/dev/null 2>&1 &
server=$!
trap 'kill $server' EXIT
for i in $(seq 50); do (exec 3<>/dev/tcp/127.0.0.1/18080) 2>/dev/null && break; sleep 0.1; done
{_mrun_cmd(mrun, "run", "--rm", "--name", name, "--network", "bridge", rootfs, "/bin/sh", "-c", inside)}
echo "--- after"
ip -o link show
"""
    r = _in_own_netns(script)
    M.assert_rc(r)
    out, after = r.out.split("--- after\n")
    assert "inet 10.90.0." in out and "eth0" in out, r
    assert "default via 10.90.0.1" in out, r
    address = out.split("inet ")[1].split("/")[0]
    assert f"{address}\t{name}" in out, r  # /etc/hosts names the lease
    assert "ping=ok" in out, r
    assert f"host-page-{name}" in out, r
    # The container's end went with its namespace; only lo and the bridge stay.
    links = [line.split(":")[1].strip().split("@")[0] for line in after.splitlines()]
    assert sorted(links) == ["lo", "mrun0"], r
    assert _leases_of(name) == [], "the host-local lease was not released"


def test_bridge_publish_reaches_the_container_and_rules_go(mrun, rootfs, name):
    _need_cni()
    inside = ("mkdir -p /www && echo page-$(hostname) >/www/index.html && httpd -p 80 -h /www "
              "&& sleep 8")
    script = f"""
{_mrun_cmd(mrun, "run", "--rm", "--name", name, "--network", "bridge",
           "-p", "127.0.0.1:18081:80", rootfs, "/bin/sh", "-c", inside)} &
runner=$!
body=
for i in $(seq 60); do
  body=$(python3 -c 'import urllib.request,sys; print(urllib.request.urlopen("http://127.0.0.1:18081/index.html", timeout=1).read().decode().strip())' 2>/dev/null) && break
  sleep 0.1
done
echo "body=$body"
iptables-save | grep -c {M.shell_quote(name)} || true
wait $runner
echo "--- after"
iptables-save | grep -c {M.shell_quote(name)} || true
"""
    r = _in_own_netns(script)
    M.assert_rc(r)
    before, after = r.out.split("--- after\n")
    assert f"body=page-{name}" in before, r
    assert int(before.splitlines()[-1]) > 0, "portmap's rules do not name the container"
    assert int(after.strip()) == 0, f"portmap's rules outlived the container:\n{r!r}"
    assert _leases_of(name) == []


def test_bridge_resolv_conf_drops_the_hosts_loopback_servers(mrun, rootfs, name):
    _need_cni()
    r = _in_own_netns(_mrun_cmd(mrun, "run", "--rm", "--name", name, "--network", "bridge",
                                rootfs, "cat", "/etc/resolv.conf"))
    M.assert_rc(r)
    with open("/etc/resolv.conf") as f:
        host = [line.split()[1] for line in f if line.startswith("nameserver")]
    served = [line.split()[1] for line in r.out.splitlines() if line.startswith("nameserver")]
    assert served == [s for s in host if not s.startswith("127.") and s != "::1"], r


def test_bridge_missing_plugin_is_125_and_leaves_nothing(mrun, rootfs, name, tmp_path):
    _need_cni()
    empty = tmp_path / "no-plugins"
    empty.mkdir()
    script = ("rc=0; CNI_PATH=" + M.shell_quote(str(empty)) + " " +
              _mrun_cmd(mrun, "run", "--rm", "--name", name, "--network", "bridge", rootfs,
                        "/bin/true") + " || rc=$?; echo rc=$rc; ip -o link show")
    r = _in_own_netns(script)
    assert "rc=125" in r.out, r
    assert "CNI plugin" in r.err and "containernetworking-plugins" in r.err, r
    assert "mrun0" not in r.out, r
    assert mrun.entry(name) is None
    assert _leases_of(name) == []


def test_bridge_allow_host_loopback_is_refused(mrun, rootfs, name):
    r = mrun("run", "--rm", "--name", name, "--network", "bridge", "--allow-host-loopback",
             rootfs, "/bin/true")
    M.assert_mrun_error(r, 125, mentions=["--allow-host-loopback", "10.90.0.1"])


def test_bridge_rootless_is_refused(mrun, rootfs, name):
    if M.ROOTFUL:
        pytest.skip("rootless only")
    r = mrun("run", "--rm", "--name", name, "--network", "bridge", rootfs, "/bin/true")
    M.assert_mrun_error(r, 125, mentions=["--network bridge", "root", "slirp4netns"])
    assert mrun.entry(name) is None


def test_bridge_lease_of_a_killed_monitor_is_released_by_delete(mrun, rootfs, name):
    """SIGKILL of mrun leaves no one to run DEL: the record in the state directory lets
    `mrun delete` release the lease and the port rules (CNI DEL without a namespace)."""
    _need_cni()
    script = f"""
{_mrun_cmd(mrun, "run", "--name", name, "--network", "bridge", "-p", "18083:80", rootfs,
           "sleep", "30")} &
runner=$!
for i in $(seq 100); do
  grep -rqs {M.shell_quote(name)} /run/mrun/cni && break
  sleep 0.1
done
sleep 0.5
echo "rules=$(iptables-save | grep -c {M.shell_quote(name)})"
kill -9 $runner
wait $runner || true
echo "rules-after-kill=$(iptables-save | grep -c {M.shell_quote(name)})"
{_mrun_cmd(mrun, "delete", "--force", name)}
echo "rules-after-delete=$(iptables-save | grep -c {M.shell_quote(name)})"
"""
    r = _in_own_netns(script)
    assert "rules-after-delete=0" in r.out, r
    rules = int(r.out.split("rules=")[1].split()[0])
    assert rules > 0, r
    assert int(r.out.split("rules-after-kill=")[1].split()[0]) == rules, r
    assert _leases_of(name) == [], "delete did not release the lease"
    assert mrun.entry(name) is None
