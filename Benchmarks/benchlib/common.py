"""The suite's constants and the few helpers every module uses (no imports from the suite)."""
import os
import statistics
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # Benchmarks/
REPO = HERE.parent
LATENCY_MS = 50
CONCURRENCY = 256
# The C floor's client label in the network scenarios' rows.
FLOOR_CLIENT = "C floor (libcurl multi)"
# The User-Agent the floor sends: as long as the daemon's (`session-cleanup/<version>`, which
# every request of the daemon carries since issue 27), as curl sends `curl/<version>`: the three
# clients write the same request, so instructions per call compare the same work.
FLOOR_USER_AGENT = "session-cleanup/0.1.0"
HOST = "127.0.0.1"

# docs/control-protocol.md, Framing: "Every request gets exactly one response line, in request
# order. A connection may carry several requests; the server handles them one at a time (it
# reads the next line after the previous reply is written)." — so requests may be queued on a
# connection, and the bulk registrar keeps up to this many in flight per connection
# (--pipeline 1: strictly one at a time).  The throughput scenario never pipelines.
DEFAULT_PIPELINE = 16
BULK_CONNECTIONS = 64  # the daemon accepts 512 control clients; stay well below

# benchlib/local: the load server on the host's 127.0.0.1.
LOCAL_SCENARIOS = {"stop", "peers", "idle", "lifecycle", "register"}
# benchlib/network: nginx behind a 50 ms round trip in a network namespace (root).
NETWORK_SCENARIOS = {"origins", "http2", "cpu", "memory", "syscalls"}
DEFAULT_SCENARIOS = LOCAL_SCENARIOS | NETWORK_SCENARIOS


class BenchError(Exception):
    """A functional failure: the row becomes an ERROR row."""


def clean_env(home, **extra):
    """A minimal environment: no proxies, no ~/.curlrc, C.UTF-8."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": str(home)}
    env.update({k: str(v) for k, v in extra.items()})
    return env


def median(values):
    return statistics.median(values) if values else None


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])
