"""Benchmarks/LoadServer/loadserver on the host's 127.0.0.1, answering every call after exactly
LATENCY_MS, and a watch for the first call it receives."""
import json
import signal
import socket
import threading
import time

from .common import HOST, LATENCY_MS, BenchError
from .processes import Child


def http_get_local(port, path, timeout=5.0):
    """GET http://127.0.0.1:port/path with Connection: close; returns the body as bytes."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    return data.split(b"\r\n\r\n", 1)[1]


class LoadServer:
    """Benchmarks/LoadServer/loadserver on 127.0.0.1, a fresh one per measurement."""

    def __init__(self, bench, latency_ms=LATENCY_MS, tag="ls"):
        self.dir = bench.newdir(tag)
        ready = self.dir / "port"
        self.out_path = self.dir / "out.json"
        self.child = Child([bench.loadserver, "--host", HOST, "--port", "0", "--latency-ms", latency_ms,
                            "--ready-file", ready], bench.env(), stdout=self.out_path, stderr=self.dir / "err.log")
        for _ in range(250):  # 5 s
            if ready.exists() and ready.read_text().strip():
                break
            if self.child.wait(0.02):
                raise BenchError(f"loadserver exited with {self.child.status}: {(self.dir / 'err.log').read_text()}")
        else:
            self.child.kill()
            raise BenchError("loadserver did not write its port within 5 s")
        self.port = int(ready.read_text().strip())
        self.final = None

    def url(self, path):
        return f"http://{HOST}:{self.port}{path}"

    def stats(self):
        return json.loads(http_get_local(self.port, "/_stats"))

    def stop(self):
        """SIGTERM; returns the server's final counters."""
        if self.final is None:
            self.child.signal(signal.SIGTERM)
            if not self.child.wait(10):
                self.child.kill()
                raise BenchError("loadserver did not exit within 10 s of SIGTERM")
            lines = self.out_path.read_text().strip().splitlines()
            if not lines:
                raise BenchError(f"loadserver printed no final counts (exit {self.child.status})")
            self.final = json.loads(lines[-1])
        return self.final


class FirstCallWatch:
    """Polls the load server's /_stats (one keep-alive connection, every ~1 ms) until its
    request count moves: when did the first end-session call arrive?  Costs a few % of one CPU
    during the first milliseconds of the run; stops at the first call (or after 10 s)."""

    def __init__(self, server):
        self.server = server
        self.t_first = None
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)
        self._thread.start()

    def _run(self):
        request = f"GET /_stats HTTP/1.1\r\nHost: {HOST}\r\n\r\n".encode()
        try:
            with socket.create_connection((HOST, self.server.port), timeout=5) as s:
                f = s.makefile("rb")
                deadline = time.monotonic() + 10
                while not self._done.is_set() and time.monotonic() < deadline:
                    s.sendall(request)
                    length = 0
                    while True:
                        line = f.readline()
                        if line in (b"\r\n", b""):
                            break
                        if line.lower().startswith(b"content-length:"):
                            length = int(line.split(b":")[1])
                    if json.loads(f.read(length))["requests"] > 0:
                        self.t_first = time.monotonic()
                        return
                    time.sleep(0.001)
        except (OSError, ValueError):
            pass

    def result(self):
        self._done.set()
        self._thread.join(11)
        return self.t_first
