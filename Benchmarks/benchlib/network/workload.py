"""What a network measurement asks of every client: the calls, spread over the origins, and the
ideal time to make them."""
import math

from ..common import CONCURRENCY, HOST
from .environment import PORT_BASE, RTT_MS

# TCP, then TCP + TLS 1.3: round trips before a new connection's first request can leave.
HANDSHAKE_RTTS = {"http": 1, "https": 2, "h2": 2}


def ideal_s(calls, origins, mode, concurrency=CONCURRENCY):
    """The time a client with `concurrency` calls in flight needs at best: one round trip per
    call, in rounds of `concurrency`, plus the handshakes of the connections it must open (one
    per origin at least, `concurrency` at a time)."""
    rounds = math.ceil(calls / concurrency) + HANDSHAKE_RTTS[mode] * math.ceil(min(origins, calls) / concurrency)
    return rounds * RTT_MS / 1000.0


class Workload:
    """`calls` calls spread over `origins` origins: with 3 origins or fewer every session names
    every origin's endpoint (the README's multi-endpoint case); with more, session i names origin
    i mod origins only."""

    def __init__(self, mode, origins, calls, tag):
        self.mode = mode
        self.origins = origins
        self.scheme = "http" if mode == "http" else "https"
        self.every = origins <= 3
        self.sessions = math.ceil(calls / origins) if self.every else calls
        self.calls = self.sessions * origins if self.every else calls
        self.prefix = tag
        self.names = [f"o{i}" for i in range(origins)]

    def base(self, i):
        return f"{self.scheme}://{HOST}:{PORT_BASE + i}"

    def endpoints(self):
        return [(f"o{i}", self.base(i) + "/user/{session}/endsession") for i in range(self.origins)]

    def session_endpoints(self, i):
        return self.names if self.every else [self.names[i % self.origins]]

    def urls(self):
        for i in range(self.sessions):
            key = f"{self.prefix}-{i}"
            for name in self.session_endpoints(i):
                yield f"{self.base(int(name[1:]))}/user/{key}/endsession"
