"""A client of the CRI's streaming server, as kubectl exec/attach reach it.

CRI Exec and Attach do not stream themselves: they answer a URL on the daemon's
streaming server (containerd 1.6: http://127.0.0.1:PORT/exec/TOKEN, a one-time token),
where the kubelet's proxy or kubectl then upgrades the connection. containerd 1.6 serves
Kubernetes' remotecommand protocol there over SPDY and over WebSocket; this client speaks
WebSocket (python3-websocket) with the subprotocol v4.channel.k8s.io: every binary
frame starts with its channel byte, 0 stdin, 1 stdout, 2 stderr, 3 the final status (a
metav1.Status as JSON), 4 terminal resizes (JSON {"Width": W, "Height": H}). v4 has no
way to close stdin alone: a client that is done closes the connection.

The server listens on 127.0.0.1 of the daemon's own network namespace (tests/cri/
crilib.py runs containerd under unshare --net), so the TCP socket is made in that
namespace by a short-lived thread that setns()es into it; the socket keeps that
namespace when handed back, and the rest of the process stays where it was.
"""

import ctypes
import json
import os
import socket
import threading
import time
import urllib.parse

import websocket

PROTOCOL = "v4.channel.k8s.io"
STDIN, STDOUT, STDERR, ERROR, RESIZE = range(5)
CLONE_NEWNET = 0x40000000


def connect_in_netns(netns, host, port, timeout):
    """A TCP connection to HOST:PORT made from the network namespace NETNS (a path)."""
    result = {}

    def work():
        libc = ctypes.CDLL(None, use_errno=True)
        fd = os.open(netns, os.O_RDONLY | os.O_CLOEXEC)
        try:
            if libc.setns(fd, CLONE_NEWNET) != 0:
                err = ctypes.get_errno()
                raise OSError(err, f"setns({netns}): {os.strerror(err)}")
            result["sock"] = socket.create_connection((host, port), timeout)
        except Exception as e:  # handed to the caller's thread
            result["error"] = e
        finally:
            os.close(fd)

    # This thread ends here, its namespace with it: no other thread ever changes its own.
    t = threading.Thread(target=work)
    t.start()
    t.join()
    if "error" in result:
        raise result["error"]
    return result["sock"]


class Stream:
    """One streaming session at URL (Exec's or Attach's answer)."""

    def __init__(self, url, netns, timeout=30):
        u = urllib.parse.urlsplit(url)
        sock = connect_in_netns(netns, u.hostname, u.port, timeout)
        self.ws = websocket.create_connection(
            urllib.parse.urlunsplit(("ws", u.netloc, u.path, u.query, "")),
            subprotocols=[PROTOCOL], socket=sock, timeout=timeout)
        self.protocol = self.ws.getsubprotocol()
        self.data = {STDOUT: b"", STDERR: b"", ERROR: b""}
        self.closed = False

    def send(self, data):
        self.ws.send_binary(bytes([STDIN]) + data)

    def resize(self, width, height):
        self.ws.send_binary(bytes([RESIZE]) +
                            json.dumps({"Width": width, "Height": height}).encode())

    def _recv(self, timeout):
        """One frame into self.data; False once the server closed or TIMEOUT passed."""
        self.ws.settimeout(max(timeout, 0.01))
        try:
            op, frame = self.ws.recv_data()
        except websocket.WebSocketTimeoutException:
            return False
        except (websocket.WebSocketConnectionClosedException, ConnectionError, OSError):
            self.closed = True
            return False
        if op == websocket.ABNF.OPCODE_CLOSE:
            self.closed = True
            return False
        if op in (websocket.ABNF.OPCODE_BINARY, websocket.ABNF.OPCODE_TEXT) and frame:
            frame = frame if isinstance(frame, bytes) else frame.encode()
            self.data[frame[0]] = self.data.get(frame[0], b"") + frame[1:]
        return True

    def read_until(self, cond, timeout=30):
        """Reads frames until COND(self) holds, the server closes, or TIMEOUT passes;
        returns COND(self)."""
        deadline = time.monotonic() + timeout
        while not cond(self) and not self.closed:
            left = deadline - time.monotonic()
            if left <= 0:
                break
            self._recv(left)
        return cond(self)

    def read_to_end(self, timeout=30):
        """Reads until the server closes (the process ended and its status was sent)."""
        return self.read_until(lambda s: False, timeout) or self.closed

    def text(self, channel):
        return self.data.get(channel, b"").decode(errors="replace")

    def status(self):
        """The channel-3 metav1.Status as a dict, or None if none came."""
        raw = self.data.get(ERROR, b"")
        return json.loads(raw) if raw else None

    def exit_code(self):
        """0 for a Success status, the ExitCode cause of a NonZeroExitCode one, else None."""
        st = self.status()
        if not st:
            return None
        if st.get("status") == "Success":
            return 0
        for cause in st.get("details", {}).get("causes", []):
            if cause.get("reason") == "ExitCode":
                return int(cause.get("message"))
        return None

    def close(self):
        try:
            self.ws.close()
        except Exception:
            pass
