"""A stand-in for systemd's notify socket."""
import math
import os
import socket
import threading
import time


class NotifySocket:
    """An AF_UNIX datagram socket standing in for systemd's: records every message with the
    time it arrived.  A thread drains it at once (the kernel queues only a few datagrams)."""

    def __init__(self, path):
        self.path = str(path)
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 20)
        self.sock.bind(self.path)
        self.sock.settimeout(0.2)
        self.messages = []
        self.ready = threading.Event()
        self.ready_at = None
        self._closing = False
        self._thread = threading.Thread(target=self._drain, daemon=True)
        self._thread.start()

    def _drain(self):
        while not self._closing:
            try:
                data = self.sock.recv(1 << 16)
            except socket.timeout:
                continue
            except OSError:
                return
            now = time.monotonic()
            text = data.decode("utf-8", "replace")
            self.messages.append((now, text))
            if "READY=1" in text.split("\n") and not self.ready.is_set():
                self.ready_at = now
                self.ready.set()

    def count(self, assignment, since=0.0, until=math.inf):
        return sum(1 for t, text in list(self.messages) if since <= t < until and assignment in text.split("\n"))

    def close(self):
        self._closing = True
        self._thread.join(2)
        self.sock.close()
        try:
            os.unlink(self.path)
        except FileNotFoundError:
            pass
