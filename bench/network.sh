#!/usr/bin/env bash
# Rootless container networking through slirp4netns (MTU 65520) and pasta, side by
# side in one run, as the unprivileged user (default mrun-test):
#
#  1. start-to-connect: wall time of `mrun run --rm --network X --allow-host-loopback
#     ROOTFS wget http://10.0.2.2:PORT/ok` against a server on the host's 127.0.0.1. mrun execs the
#     command only once the helper reported ready (slirp4netns's ready fd, pasta's PID
#     file), so the first connect attempt must succeed: a failed one is counted and
#     reported. Reference: `--network none ROOTFS /bin/true`.
#  2. TCP throughput host -> container (busybox wget in the container pulls from a host
#     server at 10.0.2.2, --allow-host-loopback) and container -> host (the host reads
#     from busybox httpd in the container through -p 127.0.0.1:P:5001), as a ratio to
#     the same transfer over the host's own loopback (busybox wget/httpd on the host).
#     HTTP with Content-Length, so no transfer waits on a FIN (pasta 0.0~git20230309
#     did not pass the host side's FIN on to busybox nc in the container here).
#
#   bench/network.sh [RUNS] [MIB]     as root (defaults: 20 start runs, 512 MiB moved)
#   MRUN_BUILD_DIR   build dir with src/mrun (default: build)
#   MRUN_BENCH_USER  the unprivileged user (default: mrun-test)
#
# Loopback only: every address used is 127.0.0.1 on the host or the container's own
# 10.0.2.0/24. Bench is never a test: it prints numbers, it does not judge them.
set -euo pipefail

runs=${1:-20}
mib=${2:-512}
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
# shellcheck source=bench/bench-lib.sh
source "$here/bench-lib.sh"
bench_setup slirp4netns pasta busybox python3

stage=$(mktemp -d /var/tmp/mrun-netbench.XXXXXX)
trap 'rm -rf --one-file-system "$stage"' EXIT
chmod 0755 "$stage"
install -D -m 0755 "$build/src/mrun" "$stage/bin/mrun"
chown "$user" "$stage"
home=$(getent passwd "$user" | cut -d: -f6)
as_user() { (cd "$stage" && runuser -u "$user" -- env -i HOME="$home" \
  PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin "$@"); }
as_user "$stage/bin/mrun" rootfs busybox "$stage/rootfs" >/dev/null

echo "measuring as $user: $runs starts per mode, $mib MiB per transfer (best of 3) ..."
as_user python3 - "$stage/bin/mrun" "$stage/rootfs" "$runs" "$mib" <<'EOF'
import socket, statistics, subprocess, sys, threading, time

mrun, rootfs, runs, mib = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4])
size = mib << 20
CHUNK = b"\0" * (1 << 20)


def free_port():
    s = socket.socket(); s.bind(("127.0.0.1", 0)); p = s.getsockname()[1]; s.close(); return p


# ---- a host HTTP server on 127.0.0.1: /ok (2 bytes) and /big (SIZE zeros) ---------
import http.server
class H(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.0"
    def log_message(self, *a): pass
    def do_GET(self):
        n = size if self.path == "/big" else 2
        self.send_response(200); self.send_header("Content-Length", str(n)); self.end_headers()
        t0 = time.perf_counter(); left = n
        while left > 0:
            k = min(left, len(CHUNK)); self.wfile.write(CHUNK[:k]); left -= k
        self.wfile.flush()
        # The transfer ends when the client has it all and closes (no FIN needed from us).
        self.connection.settimeout(60)
        while self.connection.recv(65536): pass
        H.last = time.perf_counter() - t0
srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
port = srv.server_address[1]
threading.Thread(target=srv.serve_forever, daemon=True).start()

def timed(argv):
    t0 = time.perf_counter()
    r = subprocess.run(argv, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=120)
    return time.perf_counter() - t0, r

# ---- 1. start-to-connect -------------------------------------------------------
start, failed = {}, {}
cases = [("none (/bin/true)", [mrun, "run", "--rm", "--network", "none", rootfs, "/bin/true"], False)]
for net in ("slirp4netns", "pasta"):
    cases.append((net, [mrun, "run", "--rm", "--network", net, "--allow-host-loopback", rootfs,
                        "wget", "-q", "-O", "/dev/null", f"http://10.0.2.2:{port}/ok"], True))
for label, argv, connects in cases:
    timed(argv)  # warm-up
    times, bad = [], 0
    for _ in range(runs):
        t, r = timed(argv)
        bad += r.returncode != 0
        times.append(t * 1000)
    start[label], failed[label] = times, bad

print(f"\nstart until the container's first connect succeeds (wget from the host), {runs} runs each, rootless:\n")
ref = statistics.mean(start["none (/bin/true)"])
print(f"{'network':<18} {'mean ms':>8} {'median':>7} {'stdev':>6} {'x none':>7} {'failed':>7}")
for label, t in start.items():
    print(f"{label:<18} {statistics.mean(t):8.1f} {statistics.median(t):7.1f} "
          f"{statistics.pstdev(t):6.1f} {statistics.mean(t) / ref:7.2f} {failed[label]:>7}")

# ---- 2. throughput ---------------------------------------------------------------
def to_container(net):  # host -> container: busybox wget pulls SIZE bytes from the host
    url = f"http://{'127.0.0.1' if net is None else '10.0.2.2'}:{port}/big"
    argv = (["busybox", "wget", "-q", "-O", "/dev/null", url] if net is None else
            [mrun, "run", "--rm", "--network", net, "--allow-host-loopback", rootfs,
             "wget", "-q", "-O", "/dev/null", url])
    H.last = None
    _, r = timed(argv)
    assert r.returncode == 0 and H.last, f"{net}: {r.stderr}"
    return size / H.last / 1e6

def from_container(net):  # container -> host: busybox httpd serves SIZE bytes, the host reads
    p = free_port()
    script = (f"mkdir -p /www && dd if=/dev/zero of=/www/big bs=1048576 count={mib} 2>/dev/null && "
              f"httpd -p {5001 if net else p} -h /www && echo up && read x")
    if net is None:
        import tempfile, os
        d = tempfile.mkdtemp(); script = script.replace("/www", d + "/www")
        proc = subprocess.Popen(["sh", "-c", script.replace("httpd", "busybox httpd").replace("read x", "read x; pkill -f 'busybox httpd -p " + str(p) + "'")],
                                stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    else:
        proc = subprocess.Popen([mrun, "run", "--rm", "--network", net, "-p", f"127.0.0.1:{p}:5001",
                                 rootfs, "/bin/sh", "-c", script], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE)
    assert proc.stdout.readline().strip() == b"up"
    c = socket.create_connection(("127.0.0.1", p))
    c.sendall(b"GET /big HTTP/1.0\r\n\r\n")
    t0 = time.perf_counter(); got = 0
    while got < size:
        b = c.recv(1 << 20)
        if not b: break
        got += len(b)
    t = time.perf_counter() - t0
    c.close(); proc.communicate(b"go\n", timeout=60)
    assert got >= size, f"{net}: got {got} bytes"
    return size / t / 1e6

rows = []
for label, net in (("host loopback", None), ("slirp4netns", "slirp4netns"), ("pasta", "pasta")):
    rows.append((label, max(to_container(net) for _ in range(3)),
                 max(from_container(net) for _ in range(3))))
print(f"\nTCP throughput, {mib} MiB per transfer, best of 3, busybox wget/httpd in the container:\n")
print(f"{'path':<14} {'host->ctr MB/s':>15} {'x loopback':>11} {'ctr->host MB/s':>15} {'x loopback':>11}")
for label, i, o in rows:
    print(f"{label:<14} {i:15.0f} {i / rows[0][1]:11.3f} {o:15.0f} {o / rows[0][2]:11.3f}")
EOF
