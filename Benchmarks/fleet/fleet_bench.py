#!/usr/bin/env python3
"""fleet_bench.py — session-cleanup against servers that struggle (issue 25): a CPU-bound
identity provider, a server with a small accept queue, and a fleet of daemons stopping at once
against one server of bounded capacity.

    python3 Benchmarks/fleet/fleet_bench.py --daemon .build/release/session-cleanup
        [--quick] [--only cpu-bound,backlog5,fleet] [--variant SPEC ...] [--json OUT.json]

Scenarios (--only takes these names):
  cpu-bound  N sessions (200) against a WSGI app burning ~0.25 s of CPU per call under gunicorn
             (2 workers x 8 threads, gthread), the daemon's default 25 s budget: the requests
             the server received against the calls, what the daemon reported (ended, expired,
             ...), what the server had completed when the daemon exited and LATER s (30) after;
             then a sweep of fixed MaxConnectionsPerHost= values (1,2,4,8,16,32) in the same
             run, and the best of them (most completed by the daemon's exit).
  backlog5   50 sessions against Python's http.server with request_queue_size = 5
             (ThreadingHTTPServer; --backlog-servers threading,plain adds HTTPServer): SIGTERM ->
             exit, requests, the kernel's listen overflows and SYN retransmits; beside a
             sequential curl loop and curl --parallel (both with --max-time = the budget), each
             row run REPEAT times (3).
  fleet      D daemons (50, separate processes, each with its own state directory and control
             socket) x S sessions (40), all sent SIGTERM within the same moment (--fleet-spread-ms
             spreads them), against boundedserver (16 workers x 10 ms, listen backlog 64): time
             until every session was ended at the server, requests, 503s, how the calls that did
             not end failed, the kernel's listen overflows and SYN retransmits; beside D
             `curl --parallel` processes (one per simulated host), and the server's own minimum
             time, calls x service time / workers.

Variants: every scenario runs each --variant (default: one named "default", no extra lines),
plus its own reference rows (cpu-bound: the sweep; backlog5 and fleet: MaxConnectionsPerHost=4,
unless --no-reference). A variant is NAME or NAME:LINE;LINE;... where each LINE is
Stop.Key=value or Endpoint.Key=value, added to the daemon's [Stop] or [Endpoint] section:

    --variant default --variant 'fixed:Endpoint.Concurrency=fixed'
    --variant 'two-tries:Stop.MaxAttempts=2;Endpoint.TimeoutSec=5s'

--sweep-lines adds lines to every sweep row (e.g. 'Endpoint.Concurrency=fixed' once the daemon
has an adaptive limiter, so that the sweep stays a sweep of fixed limits).

Run time (full): cpu-bound ~4.5 min (every row runs out its 25 s budget: the server cannot
end 200 calls in 25 s; --sweep 2,8,32 shortens it), backlog5 ~1-2 min, fleet ~20 s.
--quick (the CI smoke test, ~30 s): cpu-bound 16 sessions, 5 s budget, sweep 4, 3 s later;
backlog5 once per row with a 5 s budget; fleet 10 daemons x 20 sessions. Timings are never asserted: a row fails
only when something is functionally wrong (a process crashed or did not start, a registration
was refused, the daemon's exit status was neither 0 nor 75, a server received requests for
keys nobody registered). Prints tables, writes the figures as JSON (--json, default
bench-results/fleet.json; --markdown for the tables), ends with "N passed, N failed" and exits
1 if anything failed.

Network: as root the script re-executes itself in a network namespace of its own (unshare
--net, loopback only), so the kernel's TCP counters it reports (ListenOverflows, ListenDrops,
TCPSynRetrans ...) are those of this benchmark alone; --no-netns keeps the host's namespace
(the counters then include everything else on the machine). Every server binds 127.0.0.1 and
every URL points there. Children get a minimal environment (no proxies, HOME in the work
directory). Only processes this script started are signalled, by pidfd.

Needs: cc (boundedserver.c), curl, python3 -m venv and PyPI for gunicorn (installed once into
${XDG_CACHE_HOME:-~/.cache}/session-cleanup-bench/gunicorn-venv, before entering the namespace).
"""
import argparse
import collections
import datetime
import hashlib
import json
import os
import platform
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
HOST = "127.0.0.1"
GUNICORN_VERSION = "27.0.1"
NETNS_MARKER = "FLEET_BENCH_IN_NETNS"
# cpu-bound: how long to wait, after a row, for the server to work off its queue (full, --quick)
IDLE_WAIT_S = (90, 5)
# The kernel counters each row reports (deltas over the row, this namespace).
NETNS_COUNTERS = ["TcpExt:ListenOverflows", "TcpExt:ListenDrops", "TcpExt:TCPSynRetrans", "TcpExt:TCPTimeouts",
                  "TcpExt:TCPAbortOnData", "TcpExt:TCPAbortOnClose", "Tcp:AttemptFails", "Tcp:EstabResets",
                  "Tcp:OutRsts", "Tcp:ActiveOpens", "Tcp:PassiveOpens"]


class BenchError(Exception):
    """A functional failure: the row becomes an ERROR row."""


# ---------------------------------------------------------------------------- processes

_children = []


def clean_env(home, **extra):
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": str(home)}
    env.update({k: str(v) for k, v in extra.items()})
    return env


class Child:
    """A process we started; waited for through a pidfd (bounded) and reaped with wait4."""

    def __init__(self, argv, env, stdout=None, stderr=None, stdin=None, cwd=None):
        self.argv = [str(a) for a in argv]
        out = open(stdout, "ab") if stdout else subprocess.DEVNULL
        err = open(stderr, "ab") if stderr else (subprocess.STDOUT if stdout else subprocess.DEVNULL)
        self.t_spawn = time.monotonic()
        try:
            self.popen = subprocess.Popen(self.argv, env=env, cwd=cwd, stdout=out, stderr=err,
                                          stdin=subprocess.PIPE if stdin == "pipe" else subprocess.DEVNULL)
        except OSError as e:
            raise BenchError(f"could not start {self.argv[0]}: {e.strerror}") from None
        finally:
            for f in (out, err):
                if hasattr(f, "close"):
                    f.close()
        self.pid = self.popen.pid
        self.pidfd = os.pidfd_open(self.pid)
        self.status = None  # exit code; negative: killed by that signal
        self.rusage = None
        self.t_exit = None
        _children.append(self)

    def reap(self):
        """Reaps the process once its pidfd is readable (it has exited)."""
        self.t_exit = time.monotonic()
        _, status, self.rusage = os.wait4(self.pid, 0)
        self.status = os.waitstatus_to_exitcode(status)
        self.popen.returncode = self.status  # reaped here, not by Popen
        os.close(self.pidfd)
        _children.remove(self)

    def wait(self, timeout):
        """True once the process has exited (and is reaped); False after timeout seconds."""
        if self.status is not None:
            return True
        poller = select.poll()
        poller.register(self.pidfd, select.POLLIN)
        if not poller.poll(max(0, int(timeout * 1000))):
            return False
        self.reap()
        return True

    def signal(self, sig):
        if self.status is None:
            signal.pidfd_send_signal(self.pidfd, sig)

    def kill(self):
        if self.status is None:
            self.signal(signal.SIGKILL)
            self.wait(10)

    @property
    def cpu(self):
        return self.rusage.ru_utime + self.rusage.ru_stime if self.rusage else None


def wait_all(children, timeout):
    """Waits for every child (each reaped as it exits, so its t_exit is exact); returns those
    still running after timeout seconds."""
    deadline = time.monotonic() + timeout
    running = [c for c in children if c.status is None]
    while running:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        poller = select.poll()
        for c in running:
            poller.register(c.pidfd, select.POLLIN)
        ready = {fd for fd, _ in poller.poll(int(left * 1000) + 1)}
        for c in running:
            if c.pidfd in ready:
                c.reap()
        running = [c for c in running if c.status is None]
    return running


def end_all_children():
    for child in list(_children):
        try:
            child.kill()
        except OSError:
            pass


def loadavg():
    with open("/proc/loadavg") as f:
        return [float(x) for x in f.read().split()[:3]]


def cpu_busy_sample():
    """(busy, total) jiffies of all CPUs from /proc/stat."""
    with open("/proc/stat") as f:
        fields = [int(x) for x in f.readline().split()[1:]]
    idle = fields[3] + fields[4]
    return sum(fields) - idle, sum(fields)


class LoadWindow:
    """The machine's load over a row: loadavg at both ends and the CPUs' busy share."""

    def __init__(self):
        self.load0 = loadavg()
        self.cpu0 = cpu_busy_sample()

    def result(self):
        busy, total = cpu_busy_sample()
        share = (busy - self.cpu0[0]) / max(1, total - self.cpu0[1])
        return {"loadavg_start": self.load0[0], "loadavg_end": loadavg()[0], "cpu_busy_percent": round(share * 100, 1)}


# ---------------------------------------------------------------------------- network namespace

def netns_counters():
    """The TCP counters of this process's network namespace: {"TcpExt:Name": value, ...}."""
    out = {}
    for path in ("/proc/net/netstat", "/proc/net/snmp"):
        try:
            with open(path) as f:
                lines = f.read().splitlines()
        except OSError:
            continue
        for names, values in zip(lines[::2], lines[1::2]):
            n, v = names.split(), values.split()
            if n and v and n[0] == v[0]:
                prefix = n[0]
                for name, value in zip(n[1:], v[1:]):
                    try:
                        out[prefix + name] = int(value)
                    except ValueError:
                        pass
    return out


def counter_delta(before, after):
    return {k.split(":")[1]: after.get(k, 0) - before.get(k, 0) for k in NETNS_COUNTERS}


def enter_netns_if_root(args):
    """Re-executes this script under `unshare --net` (as root, unless --no-netns); inside,
    brings up the loopback. Returns a description of the namespace used."""
    if os.environ.get(NETNS_MARKER) == "1":
        subprocess.run(["ip", "link", "set", "lo", "up"], check=True)
        return "own (unshare --net)"
    if args.no_netns or os.geteuid() != 0 or not shutil.which("unshare"):
        return "host (counters include every other socket of the machine)"
    env = dict(os.environ, **{NETNS_MARKER: "1"})
    sys.stdout.flush()
    os.execvpe("unshare", ["unshare", "--net", "--", sys.executable, str(Path(__file__).resolve())] + sys.argv[1:],
               env)


def sysctls():
    out = {}
    for name in ("net/core/somaxconn", "net/ipv4/tcp_max_syn_backlog", "net/ipv4/tcp_syncookies",
                 "net/ipv4/tcp_syn_retries", "net/ipv4/tcp_synack_retries", "net/ipv4/tcp_abort_on_overflow"):
        try:
            out[name.replace("/", ".")] = int(Path("/proc/sys", name).read_text())
        except (OSError, ValueError):
            pass
    return out


# ---------------------------------------------------------------------------- HTTP helpers

def http_get(port, path, timeout=5.0):
    """GET http://127.0.0.1:port/path (Connection: close): (status, body bytes)."""
    with socket.create_connection((HOST, port), timeout=timeout) as s:
        s.sendall(f"GET {path} HTTP/1.1\r\nHost: {HOST}\r\nConnection: close\r\n\r\n".encode())
        data = b""
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            data += chunk
    head, _, body = data.partition(b"\r\n\r\n")
    return int(head.split(b" ", 2)[1]), body


def free_port():
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def wait_ready_file(child, path, what, timeout=10):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return int(path.read_text().strip())
        if child.wait(0.02):
            raise BenchError(f"{what} exited with {child.status} before it was ready")
    child.kill()
    raise BenchError(f"{what} did not write its port within {timeout} s")


# ---------------------------------------------------------------------------- servers

class BoundedServer:
    """Benchmarks/fleet/boundedserver on 127.0.0.1."""

    def __init__(self, bench, tag, workers, backlog, service_ms, mode="sleep", queue=None, max_connections=None):
        self.dir = bench.newdir(tag)
        ready = self.dir / "port"
        self.out = self.dir / "out.json"
        self.keys_file = self.dir / "keys"
        argv = [bench.boundedserver, "--host", HOST, "--port", 0, "--ready-file", ready, "--workers", workers,
                "--backlog", backlog, "--service-ms", service_ms, "--mode", mode, "--keys-file", self.keys_file]
        if queue is not None:
            argv += ["--queue", queue]
        if max_connections is not None:
            argv += ["--max-connections", max_connections]
        self.child = Child(argv, bench.env(), stdout=self.out, stderr=self.dir / "err.log")
        self.port = wait_ready_file(self.child, ready, "boundedserver")
        self.final = None

    def url(self, path):
        return f"http://{HOST}:{self.port}{path}"

    def stop(self):
        if self.final is None:
            self.child.signal(signal.SIGTERM)
            if not self.child.wait(10):
                self.child.kill()
                raise BenchError("boundedserver did not exit within 10 s of SIGTERM")
            lines = self.out.read_text().strip().splitlines()
            if not lines:
                raise BenchError(f"boundedserver printed no counts (exit {self.child.status})")
            self.final = json.loads(lines[-1])
        return self.final

    def key_lines(self):
        """[(requests, completions, first completion s)] per key, after stop()."""
        out = []
        for line in self.keys_file.read_text().splitlines():
            _, requests, completions, first = line.split()
            out.append((int(requests), int(completions), float(first)))
        return out


class BacklogServer:
    """Benchmarks/fleet/backlog_server.py (http.server, request_queue_size = 5)."""

    def __init__(self, bench, tag, threading_server, backlog=5):
        self.dir = bench.newdir(tag)
        ready = self.dir / "port"
        self.out = self.dir / "out.json"
        argv = [sys.executable, HERE / "backlog_server.py", "--ready-file", ready, "--backlog", backlog]
        if threading_server:
            argv.append("--threading")
        self.child = Child(argv, bench.env(), stdout=self.out, stderr=self.dir / "err.log")
        self.port = wait_ready_file(self.child, ready, "backlog_server.py")
        self.final = None

    def url(self, path):
        return f"http://{HOST}:{self.port}{path}"

    def stop(self):
        if self.final is None:
            self.child.signal(signal.SIGTERM)
            if not self.child.wait(10):
                self.child.kill()
                raise BenchError("backlog_server.py did not exit within 10 s of SIGTERM")
            lines = self.out.read_text().strip().splitlines()
            if not lines:
                raise BenchError(f"backlog_server.py printed no counts (exit {self.child.status})")
            self.final = json.loads(lines[-1])
        return self.final


class GunicornServer:
    """Benchmarks/fleet/cpu_app.py under gunicorn (gthread), recording each request's arrival
    and completion in a file of its own."""

    def __init__(self, bench, tag, iterations, workers=2, threads=8):
        self.dir = bench.newdir(tag)
        self.record = self.dir / "record"
        self.port = free_port()
        argv = [bench.gunicorn, "-w", workers, "-k", "gthread", "--threads", threads, "-b", f"{HOST}:{self.port}",
                "--backlog", 2048, "--timeout", 120, "--graceful-timeout", 5, "--keep-alive", 5,
                "--chdir", HERE, "--log-level", "warning", "--error-logfile", self.dir / "err.log", "cpu_app:app"]
        self.child = Child(argv, bench.env(CPU_APP_RECORD=self.record, CPU_APP_ITERATIONS=iterations),
                           stdout=self.dir / "out.log")
        deadline = time.monotonic() + 30
        while True:
            try:
                if http_get(self.port, "/_health", timeout=2)[0] == 200:
                    break
            except OSError:
                pass
            if self.child.wait(0.1):
                raise BenchError(f"gunicorn exited with {self.child.status}: {self.tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise BenchError("gunicorn did not answer /_health within 30 s")
        self.workers = self.worker_pids()

    def tail(self):
        try:
            return " | ".join((self.dir / "err.log").read_text(errors="replace").strip().splitlines()[-3:])
        except OSError:
            return ""

    def worker_pids(self):
        try:
            return [int(p) for p in Path(f"/proc/{self.child.pid}/task/{self.child.pid}/children").read_text().split()]
        except OSError:
            return []

    def worker_cpu_s(self):
        """CPU seconds the workers have used so far (the list of workers read again: the second
        may have booted after the first answered /_health)."""
        self.workers = sorted(set(self.workers) | set(self.worker_pids()))
        total = 0.0
        for pid in self.workers:
            try:
                rest = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
                total += (int(rest[11]) + int(rest[12])) / os.sysconf("SC_CLK_TCK")
            except (OSError, IndexError):
                pass
        return total

    def url(self, path):
        return f"http://{HOST}:{self.port}{path}"

    def stop(self):
        """Quick shutdown (SIGINT); workers that survive it are killed by their pid."""
        workers = self.workers or self.worker_pids()
        self.child.signal(signal.SIGINT)
        if not self.child.wait(15):
            self.child.kill()
        for pid in workers:
            try:
                fd = os.pidfd_open(pid)
            except OSError:
                continue  # gone
            try:
                # Still the worker we started? (its parent was our master, now gone: re-parented)
                if "gunicorn" in Path(f"/proc/{pid}/cmdline").read_text(errors="replace"):
                    signal.pidfd_send_signal(fd, signal.SIGKILL)
            except OSError:
                pass
            finally:
                os.close(fd)


# ---------------------------------------------------------------------------- notify sockets

class NotifyHub:
    """Datagram sockets standing in for systemd's NOTIFY_SOCKET, one per daemon, drained by one
    thread (a full socket would hold a daemon's exit up)."""

    def __init__(self):
        self.socks = {}  # fd -> (socket, record)
        self.lock = threading.Lock()
        self.poller = select.poll()
        self.closing = False
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def add(self, path):
        """A socket bound at path; returns its record: {"ready": Event, "messages": [...]}."""
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_CLOEXEC | socket.SOCK_NONBLOCK)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 18)
        sock.bind(str(path))
        record = {"ready": threading.Event(), "ready_at": None, "messages": []}
        with self.lock:
            self.socks[sock.fileno()] = (sock, record)
            self.poller.register(sock.fileno(), select.POLLIN)
        return record, sock

    def remove(self, sock):
        with self.lock:
            if sock.fileno() in self.socks:
                self.poller.unregister(sock.fileno())
                del self.socks[sock.fileno()]
        sock.close()

    def _run(self):
        while not self.closing:
            for fd, _ in self.poller.poll(20):
                with self.lock:
                    entry = self.socks.get(fd)
                if not entry:
                    continue
                sock, record = entry
                while True:
                    try:
                        data = sock.recv(1 << 16)
                    except (BlockingIOError, OSError):
                        break
                    now = time.monotonic()
                    text = data.decode("utf-8", "replace")
                    record["messages"].append((now, text))
                    if "READY=1" in text.split("\n") and not record["ready"].is_set():
                        record["ready_at"] = now
                        record["ready"].set()

    def close(self):
        self.closing = True
        self.thread.join(2)
        for sock, _ in list(self.socks.values()):
            sock.close()


# ---------------------------------------------------------------------------- the daemon

def parse_variant(spec):
    """NAME or NAME:Section.Key=value;... -> {"name", "stop": [lines], "endpoint": [lines]}."""
    name, _, rest = spec.partition(":")
    variant = {"name": name.strip() or "default", "stop": [], "endpoint": []}
    for line in filter(None, (x.strip() for x in rest.split(";"))):
        section, dot, setting = line.partition(".")
        if not dot or "=" not in setting or section.lower() not in ("stop", "endpoint"):
            raise ValueError(f"variant {spec!r}: {line!r} is not Stop.Key=value or Endpoint.Key=value")
        variant[section.lower()].append(setting)
    return variant


def with_lines(variant, name, stop=(), endpoint=()):
    return {"name": name, "stop": variant["stop"] + list(stop), "endpoint": variant["endpoint"] + list(endpoint)}


def reference_variant(variant):
    """The reference row of backlog5 and fleet: `variant` with MaxConnectionsPerHost=4."""
    return with_lines(variant, "MaxConnectionsPerHost=4", endpoint=["MaxConnectionsPerHost=4"])


def variant_text(variant):
    lines = [f"Stop.{x}" for x in variant["stop"]] + [f"Endpoint.{x}" for x in variant["endpoint"]]
    return "; ".join(lines) or "(defaults)"


class Daemon:
    """session-cleanup started by hand: its own state and runtime directories, configuration
    file and notify socket (as systemd would give them), stderr as its journal."""

    def __init__(self, bench, tag, url, variant, budget_s, state_dir=None):
        """state_dir: an earlier daemon's, to start where it stopped (its leftovers)."""
        self.bench = bench
        self.dir = bench.newdir(tag)
        self.state_dir = Path(state_dir) if state_dir else self.dir / "state"
        self.runtime_dir = self.dir / "run"
        self.state_dir.mkdir(exist_ok=True)
        self.runtime_dir.mkdir()
        self.budget_s = budget_s
        text = f"[Stop]\nBudgetSec={budget_s}s\n" + "".join(f"{x}\n" for x in variant["stop"])
        text += "[Control]\nSocketMode=0600\n"
        text += f"[Endpoint]\nName=auth\nURL={url}\n" + "".join(f"{x}\n" for x in variant["endpoint"])
        self.config = self.dir / "session-cleanup.conf"
        self.config.write_text(text)
        self.control = self.runtime_dir / "control.sock"
        self.child = None
        self.notify = None
        self.notify_sock = None
        self.t_sigterm = None

    def spawn(self):
        self.notify, self.notify_sock = self.bench.notify_hub.add(self.dir / "notify.sock")
        env = self.bench.env(STATE_DIRECTORY=self.state_dir, RUNTIME_DIRECTORY=self.runtime_dir,
                             NOTIFY_SOCKET=self.dir / "notify.sock")
        self.child = Child([self.bench.daemon, "daemon", "--config", self.config], env,
                           stdout=self.dir / "daemon.log")

    def wait_ready(self, timeout=60):
        deadline = time.monotonic() + timeout
        while not self.notify["ready"].wait(0.02):
            if self.child.wait(0):
                raise BenchError(f"daemon exited with {self.child.status} before READY=1: {self.log_tail()}")
            if time.monotonic() > deadline:
                self.child.kill()
                raise BenchError(f"daemon not READY=1 within {timeout} s")

    def start(self):
        self.spawn()
        self.wait_ready()

    def log_tail(self, lines=3):
        try:
            return " | ".join((self.dir / "daemon.log").read_text(errors="replace").strip().splitlines()[-lines:])
        except OSError:
            return ""

    def register(self, keys):
        """Registers each key at endpoint "auth" over one control connection (pipelined, as the
        protocol allows: replies come in request order)."""
        if not keys:
            return
        with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
            s.settimeout(60)
            s.connect(str(self.control))
            s.sendall(b"".join((json.dumps({"op": "register", "key": k, "endpoints": ["auth"], "label": "bench"},
                                           separators=(",", ":")) + "\n").encode() for k in keys))
            f = s.makefile("rb")
            for i in range(len(keys)):
                line = f.readline()
                if not line:
                    raise BenchError(f"control connection closed after {i} of {len(keys)} replies")
                reply = json.loads(line)
                if reply.get("ok") is not True:
                    raise BenchError(f"registration refused: {reply.get('code')}: {reply.get('error')}")

    def wait_run_finished(self, kind, timeout):
        """The fields of the first run-finished entry of a run of `kind` on the daemon's stderr
        (its journal outside systemd), or None after timeout seconds."""
        deadline = time.monotonic() + timeout
        log = self.dir / "daemon.log"
        while time.monotonic() < deadline:
            for line in log.read_text(errors="replace").splitlines() if log.exists() else []:
                if "SESSION_CLEANUP_EVENT=run-finished" in line and f"RUN_KIND={kind} " in line + " ":
                    fields = line.rsplit("[", 1)[-1].rstrip("]").split()
                    return dict(f.split("=", 1) for f in fields if "=" in f)
            if self.child.wait(0.2):
                raise BenchError(f"daemon exited ({self.child.status}) before its {kind} run finished")
        return None

    def sigterm(self):
        self.t_sigterm = time.monotonic()
        self.child.signal(signal.SIGTERM)

    def close(self):
        if self.notify_sock is not None:
            self.bench.notify_hub.remove(self.notify_sock)
            self.notify_sock = None

    def kill(self):
        if self.child:
            self.child.kill()
        self.close()

    def outcome(self):
        """What the daemon recorded of its stop run (last-stop-run.json and .results in its
        state directory): counts per outcome, requests it made (attempts), the causes of the
        calls that did not end, and HTTP statuses."""
        facts_path = self.state_dir / "last-stop-run.json"
        if not facts_path.exists():
            raise BenchError(f"no last-stop-run.json (exit {self.child.status}): {self.log_tail()}")
        facts = json.loads(facts_path.read_text())
        attempts, causes, statuses = 0, collections.Counter(), collections.Counter()
        retried = 0
        results = self.state_dir / "last-stop-run.results"
        if results.exists():
            for line in results.read_text(errors="replace").splitlines()[1:]:
                fields = line.split("\t", 7)
                if len(fields) < 8:
                    continue
                _, _, _, outcome, status, tries, _, cause = fields
                attempts += int(tries)
                retried += int(tries) > 1
                statuses[status] += 1
                if outcome != "ended":
                    causes[f"{outcome}: {cause or '-'}"] += 1
        calls = facts.get("calls", {})
        return {"ended": calls.get("ended", 0), "rejected": calls.get("rejected", 0), "failed": calls.get("failed", 0),
                "expired": calls.get("expired", 0),
                "not_started": calls.get("not-started", calls.get("not_started", 0)),
                "calls_by_outcome": calls, "attempts": attempts, "calls_retried": retried,
                "causes": dict(causes), "http_statuses": dict(statuses),
                "duration_s": facts.get("duration_usec", 0) / 1e6, "sessions_left": facts.get("sessions_left")}


def cause_kind(text):
    """A coarse class of a call's failure cause, for the tables."""
    t = text.lower()
    for status in ("503", "429"):
        if f"http {status}" in t:
            return status
    if text.startswith("rejected"):
        return "rejected"
    if "refused" in t:
        return "refused"
    if "reset" in t or "recv failure" in t or "send failure" in t or "empty reply" in t:
        return "reset"
    if "timed out" in t or "timeout" in t:
        return "timeout"
    if text.startswith("expired") or "budget" in t:
        return "budget"
    return "other"


def merge_outcomes(outcomes):
    total = {"ended": 0, "rejected": 0, "failed": 0, "expired": 0, "not_started": 0, "attempts": 0,
             "calls_retried": 0}
    causes = collections.Counter()
    kinds = collections.Counter()
    for o in outcomes:
        for k in total:
            total[k] += o[k]
        for cause, n in o["causes"].items():
            causes[cause] += n
            kinds[cause_kind(cause)] += n
    total["causes"] = dict(causes.most_common(12))
    total["cause_kinds"] = dict(kinds)
    return total


# ---------------------------------------------------------------------------- peers

def curl_config(urls):
    return "".join(f'url = "{u}"\noutput = "/dev/null"\n' for u in urls)


CURL_WRITE_OUT = "%{http_code} %{exitcode}\\n"


def curl_results(path):
    """(200s, non-200 answers, exit codes of failed transfers) from -w output lines."""
    ok, other, errors = 0, 0, collections.Counter()
    try:
        text = Path(path).read_text(errors="replace")
    except OSError:
        return 0, 0, errors
    for line in text.splitlines():
        parts = line.split()
        if len(parts) != 2:
            continue
        code, exitcode = parts
        if exitcode != "0":
            errors[int(exitcode)] += 1
        elif code == "200":
            ok += 1
        else:
            other += 1
    return ok, other, errors


CURL_EXIT = {7: "refused", 28: "timeout", 52: "empty reply", 55: "send failure", 56: "reset"}


# ---------------------------------------------------------------------------- the benchmark

class Bench:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.work = Path(tempfile.mkdtemp(prefix="fleetbench-", dir=args.workdir))
        os.chmod(self.work, 0o700)
        self.daemon = Path(args.daemon).resolve()
        self.boundedserver = Path(args.boundedserver)
        self.gunicorn = Path(args.venv) / "bin" / "gunicorn"
        self.rows = []
        self.counter = 0
        self.t_start = time.monotonic()
        self.notify_hub = NotifyHub()
        self.run_tag = os.urandom(3).hex()
        self.variants = [parse_variant(v) for v in (args.variant or ["default"])]
        self.sweep_lines = parse_variant("sweep:" + (args.sweep_lines or ""))

    def env(self, **extra):
        return clean_env(self.work, **extra)

    def newdir(self, tag):
        self.counter += 1
        path = self.work / f"{self.counter:03d}-{tag}"
        path.mkdir()
        return path

    def log(self, text):
        print(f"[{time.monotonic() - self.t_start:7.1f}s] {text}", flush=True)

    def attempt(self, scenario, name, fn, **fields):
        row = {"scenario": scenario, "name": name, "ok": True, "error": None}
        row.update(fields)
        window = LoadWindow()
        try:
            row.update(fn())
        except BenchError as e:
            row.update(ok=False, error=str(e))
        except Exception as e:  # noqa: BLE001 — a crash in one row is a failed row, not a dead run
            row.update(ok=False, error=f"{type(e).__name__}: {e}")
        row.update(window.result())
        self.rows.append(row)
        self.log(f"{scenario:<9} {name:<44} " + ("ok" if row["ok"] else "ERROR: " + row["error"]))
        return row

    def keys(self, tag, n):
        return [f"{tag}-{self.run_tag}-{i:05d}" for i in range(n)]

    def run(self):
        only = set(self.args.only.split(",")) if self.args.only else {"cpu-bound", "backlog5", "fleet"}
        if "cpu-bound" in only:
            self.cpu_bound()
        if "backlog5" in only:
            self.backlog5()
        if "fleet" in only:
            self.fleet()

    # ------------------------------------------------------------------ cpu-bound

    def cpu_bound(self):
        a = self.args
        n = a.cpu_sessions or (16 if self.quick else 200)
        budget = a.cpu_budget or (5 if self.quick else 25)
        later = a.cpu_later if a.cpu_later is not None else (3 if self.quick else 30)
        # --sweep '' is no sweep: only an absent option takes the default.
        default_sweep = "4" if self.quick else "1,2,4,8,16,32"
        sweep = [int(x) for x in (default_sweep if a.sweep is None else a.sweep).split(",") if x.strip()]
        iterations = a.cpu_iterations or int(subprocess.run(
            [sys.executable, HERE / "cpu_app.py", "--calibrate", str(a.cpu_ms)], capture_output=True, text=True,
            check=True).stdout)
        self.log(f"cpu-bound: {n} sessions, budget {budget} s, PBKDF2 iterations {iterations:,} (~{a.cpu_ms:g} ms "
                 f"of CPU each), later {later} s, sweep {sweep}")
        rows = []
        for variant in self.variants:
            rows.append(self.attempt("cpu-bound", variant["name"],
                                     lambda v=variant: self.cpu_once(v, n, budget, later, iterations, drain=False,
                                                                     restart=not a.no_next_start),
                                     variant=variant_text(variant), sessions=n, budget_s=budget, sweep=False))
        for limit in sweep:
            v = with_lines(self.sweep_lines, f"MaxConnectionsPerHost={limit}",
                           endpoint=[f"MaxConnectionsPerHost={limit}"])
            rows.append(self.attempt("cpu-bound", v["name"],
                                     lambda v=v: self.cpu_once(v, n, budget, later, iterations, drain=True),
                                     variant=variant_text(v), sessions=n, budget_s=budget, sweep=True,
                                     limit=limit))
        best = max((r for r in rows if r["ok"] and r["sweep"]), key=lambda r: r["completed_at_exit"], default=None)
        for r in rows:
            if r["ok"] and best:
                r["best_fixed_limit"] = best["limit"]
                r["completed_vs_best_fixed"] = r["completed_at_exit"] / max(1, best["completed_at_exit"])

    def cpu_next_start(self, server, stopped, variant, budget, ids):
        """The next start: a daemon on the stopped one's state directory ends, in its leftover
        run, what the stop run kept. How many it ended, in how long, and how many of the
        requests it sent were for sessions the server had already completed."""
        t0 = time.monotonic()
        completed_before = {kid for kid, e in read_record(server.record).items() if e["completions"]}
        daemon = Daemon(self, "d-cpu-next", server.url("/user/{session}/endsession"), variant, budget,
                        state_dir=stopped.state_dir)
        try:
            daemon.start()
            fields = daemon.wait_run_finished("leftover", 60 + 15 if not self.quick else 20)
        finally:
            daemon.kill()  # not SIGTERM: its stop run would send more
        keys = read_record(server.record)
        sent = [(kid, t) for kid, e in keys.items() if kid in ids for t in e["requests"] if t >= t0]
        if fields is None:
            return {"next_start_finished": False, "next_start_requests": len(sent)}
        return {"next_start_finished": True, "next_start_sessions": int(fields.get("SESSIONS_TOTAL", 0)),
                "next_start_ended": int(fields.get("SESSIONS_ENDED", 0)),
                "next_start_s": int(fields.get("DURATION_USEC", 0)) / 1e6, "next_start_requests": len(sent),
                "next_start_requests_already_completed": sum(kid in completed_before for kid, _ in sent)}

    def cpu_once(self, variant, n, budget, later, iterations, drain, restart=False):
        server = GunicornServer(self, "gunicorn", iterations)
        daemon = None
        try:
            daemon = Daemon(self, "d-cpu", server.url("/user/{session}/endsession"), variant, budget)
            daemon.start()
            keys = self.keys("cpu", n)
            daemon.register(keys)
            ids = {hashlib.sha256(k.encode()).hexdigest()[:16] for k in keys}
            before = netns_counters()
            cpu0 = server.worker_cpu_s()
            daemon.sigterm()
            if not daemon.child.wait(budget + 30):
                daemon.child.kill()
                raise BenchError(f"daemon still running {budget + 30} s after SIGTERM (killed)")
            t_exit = daemon.child.t_exit
            wall = t_exit - daemon.t_sigterm
            server_cpu = server.worker_cpu_s() - cpu0
            net = counter_delta(before, netns_counters())
            at_exit = cpu_app_record(server.record, ids, t_exit)
            # Later: what the server has completed `later` s after the exit (the main rows; the
            # sweep's skip this). Then, for every row, until the server is idle (its record
            # unchanged for 2 s with every request it began completed; at most IDLE_WAIT_S):
            # gunicorn begins a request only when a thread takes it up, so the requests it was
            # sent are all in the record only once it has worked through its queue.
            if not drain:
                time.sleep(max(0.0, t_exit + later - time.monotonic()))
                later_snapshot = cpu_app_record(server.record, ids, None)
            deadline = time.monotonic() + IDLE_WAIT_S[self.quick]
            last, stable_since, idle = None, time.monotonic(), False
            while time.monotonic() < deadline:
                now = cpu_app_record(server.record, ids, None)
                if (now["requests"], now["completions"]) != last:
                    last, stable_since = (now["requests"], now["completions"]), time.monotonic()
                elif now["requests"] == now["completions"] and time.monotonic() - stable_since >= 2:
                    idle = True
                    break
                time.sleep(0.5)
            after = cpu_app_record(server.record, ids, None)
            if drain:
                later_snapshot = after
            outcome = daemon.outcome()
            daemon.close()
            if daemon.child.status not in (0, 75):
                raise BenchError(f"exit status {daemon.child.status}: {daemon.log_tail()}")
            if after["unknown_keys"]:
                raise BenchError(f"the server received {after['unknown_keys']} keys nobody registered")
            # The next start, if the stop run kept anything (with nothing kept there is no leftover run).
            next_start = {}
            if restart and outcome["sessions_left"]:
                next_start = self.cpu_next_start(server, daemon, variant, budget, ids)
            return {**next_start, "wall_s": wall, "exit": daemon.child.status, "calls": n,
                    "requests_at_exit": at_exit["requests"], "requests": after["requests"],
                    "requests_per_call": after["requests"] / n, "keys_sent_twice": after["keys_multi"],
                    "max_requests_per_key": after["max_per_key"],
                    "completed_at_exit": at_exit["completed_keys"], "completed_later": later_snapshot["completed_keys"],
                    "completed_when_idle": after["completed_keys"], "server_idle": idle,
                    "completions": after["completions"], "in_service_at_exit": at_exit["pending_keys"],
                    "later_s": later if not drain else None,
                    "daemon_ended": outcome["ended"], "daemon_expired": outcome["expired"],
                    "daemon_failed": outcome["failed"], "daemon_rejected": outcome["rejected"],
                    "daemon_not_started": outcome["not_started"], "daemon_attempts": outcome["attempts"],
                    "daemon_causes": outcome["causes"],
                    "ended_minus_completed": outcome["ended"] - at_exit["completed_keys"],
                    "server_cpu_s": server_cpu, "daemon_cpu_s": daemon.child.cpu, "netns": net}
        finally:
            if daemon:
                daemon.kill()
            server.stop()

    # ------------------------------------------------------------------ backlog5

    def backlog5(self):
        a = self.args
        n = a.backlog_sessions
        repeat = a.repeat or (1 if self.quick else 3)
        kinds = (a.backlog_servers or "threading").split(",")
        budget = a.budget
        variants = list(self.variants)
        if not a.no_reference:
            variants.append(reference_variant(self.variants[0]))
        for kind in kinds:
            threading_server = kind == "threading"
            label = "ThreadingHTTPServer" if threading_server else "HTTPServer"
            for variant in variants:
                self.attempt("backlog5", f"{label}: {variant['name']}",
                             lambda v=variant: self.repeat_rows(repeat, lambda: self.backlog_daemon_once(
                                 v, n, budget, threading_server)),
                             variant=variant_text(variant), server=label, client="session-cleanup", sessions=n)
            for peer in ("seq", "parallel"):
                name = "sequential curl loop" if peer == "seq" else "curl --parallel"
                self.attempt("backlog5", f"{label}: {name}",
                             lambda p=peer: self.repeat_rows(repeat, lambda: self.backlog_peer_once(
                                 p, n, threading_server)), server=label, client=name, sessions=n)

    @staticmethod
    def repeat_rows(repeat, fn):
        runs = [fn() for _ in range(repeat)]
        row = dict(runs[-1])
        walls = [r["wall_s"] for r in runs]
        row.update(wall_s=statistics.median(walls), wall_runs_s=[round(w, 3) for w in walls],
                   wall_min_s=min(walls), wall_max_s=max(walls), runs=len(runs),
                   ended_runs=[r["ended"] for r in runs], requests_runs=[r["requests"] for r in runs],
                   per_run=runs)
        for k in ("ListenOverflows", "TCPSynRetrans"):
            row[k] = statistics.median([r["netns"].get(k, 0) for r in runs])
        return row

    def backlog_daemon_once(self, variant, n, budget, threading_server):
        server = BacklogServer(self, "pyserver", threading_server)
        daemon = None
        try:
            daemon = Daemon(self, "d-b5", server.url("/user/{session}/endsession"), variant, budget)
            daemon.start()
            daemon.register(self.keys("b5", n))
            before = netns_counters()
            daemon.sigterm()
            if not daemon.child.wait(budget + 30):
                daemon.child.kill()
                raise BenchError("daemon still running 30 s past its budget (killed)")
            wall = daemon.child.t_exit - daemon.t_sigterm
            net = counter_delta(before, netns_counters())
            final = server.stop()
            outcome = daemon.outcome()
            daemon.close()
            if daemon.child.status not in (0, 75):
                raise BenchError(f"exit status {daemon.child.status}: {daemon.log_tail()}")
            return {"wall_s": wall, "exit": daemon.child.status, "requests": final["requests"],
                    "unique_keys": final["unique_keys"], "connections": final["connections"],
                    "ended": outcome["ended"], "not_ended": n - outcome["ended"], "attempts": outcome["attempts"],
                    "causes": outcome["causes"], "netns": net, "server_kind": final["server"]}
        finally:
            if daemon:
                daemon.kill()
            server.stop()

    def backlog_peer_once(self, peer, n, threading_server):
        server = BacklogServer(self, "pyserver", threading_server)
        try:
            d = self.newdir(f"peer-{peer}")
            urls = [server.url(f"/user/{k}/endsession") for k in self.keys("b5p", n)]
            (d / "urls").write_text("".join(u + "\n" for u in urls))
            if peer == "seq":
                argv = ["sh", "-c", 'while IFS= read -r url; do curl -s -o /dev/null --max-time "$2" -w "$0" "$url"; '
                        'done < "$1"', CURL_WRITE_OUT.replace("\\n", "\n"), d / "urls", str(self.args.budget)]
            else:
                (d / "curl.conf").write_text(curl_config(urls))
                argv = ["curl", "-s", "--parallel", "--parallel-immediate", "--parallel-max", "256",
                        "--max-time", str(self.args.budget), "-w", CURL_WRITE_OUT.replace("\\n", "\n"),
                        "--config", d / "curl.conf"]
            before = netns_counters()
            child = Child(argv, self.env(), stdout=d / "out.log", stderr=d / "err.log")
            if not child.wait(self.args.budget + 30):
                child.kill()
                raise BenchError(f"peer still running after {self.args.budget + 30} s (killed)")
            wall = child.t_exit - child.t_spawn
            net = counter_delta(before, netns_counters())
            final = server.stop()
            ok, other, errors = curl_results(d / "out.log")
            return {"wall_s": wall, "exit": child.status, "requests": final["requests"],
                    "unique_keys": final["unique_keys"], "connections": final["connections"], "ended": ok,
                    "not_ended": n - ok, "curl_errors": {CURL_EXIT.get(k, str(k)): v for k, v in errors.items()},
                    "netns": net}
        finally:
            server.stop()

    # ------------------------------------------------------------------ fleet

    def fleet(self):
        a = self.args
        daemons = a.fleet_daemons or (10 if self.quick else 50)
        sessions = a.fleet_sessions or (20 if self.quick else 40)
        calls = daemons * sessions
        minimum = calls * a.fleet_service_ms / 1000.0 / a.fleet_workers
        common = {"daemons": daemons, "sessions_per_daemon": sessions, "calls": calls, "server_min_s": minimum,
                  "workers": a.fleet_workers, "service_ms": a.fleet_service_ms, "backlog": a.fleet_backlog,
                  "max_connections": a.fleet_max_connections, "queue": a.fleet_queue, "spread_ms": a.fleet_spread_ms}
        self.log(f"fleet: {daemons} daemons x {sessions} sessions against {a.fleet_workers} workers x "
                 f"{a.fleet_service_ms:g} ms, backlog {a.fleet_backlog}: the server's own minimum {minimum:.2f} s")
        variants = list(self.variants)
        if not a.no_reference:
            variants.append(reference_variant(self.variants[0]))
        for variant in variants:
            self.attempt("fleet", variant["name"], lambda v=variant: self.fleet_daemons_once(v, daemons, sessions),
                         variant=variant_text(variant), client="session-cleanup", **common)
        self.attempt("fleet", "curl --parallel per host", lambda: self.fleet_curl_once(daemons, sessions),
                     client="curl --parallel", **common)

    def fleet_server(self):
        a = self.args
        return BoundedServer(self, "bounded", a.fleet_workers, a.fleet_backlog, a.fleet_service_ms,
                             mode=a.fleet_mode, queue=a.fleet_queue, max_connections=a.fleet_max_connections)

    def fleet_row(self, server, t0, exits, calls):
        """Figures common to the daemons' and curl's rows, from the server's own counts."""
        final = server.stop()
        lines = server.key_lines()
        completed = [first for _, completions, first in lines if completions]
        all_ended = len(completed) == calls and final["unique_keys"] == calls
        t_all = max(completed) - t0 if all_ended else None
        return final, {
            "all_ended": all_ended, "server_completed_keys": len(completed),
            "time_all_ended_s": t_all, "last_exit_s": max(exits) - t0 if exits else None,
            "median_exit_s": statistics.median(exits) - t0 if exits else None,
            "requests": final["requests"], "requests_per_call": final["requests"] / calls,
            "duplicates": final["duplicates"], "resends": final["resends"], "rejected_503": final["rejected_503"],
            "replies_dropped": final["replies_dropped"], "connections": final["connections"],
            "max_open_connections": final["max_open_connections"], "max_accept_queue": final["max_accept_queue"],
            "max_queued": final["max_queued"], "keepalive_closes": final["keepalive_closes"],
            "listener_paused": final["listener_paused"], "server_netns": final["netns"]}

    def fleet_daemons_once(self, variant, n_daemons, sessions):
        a = self.args
        server = self.fleet_server()
        fleet = []
        try:
            url = server.url("/user/{session}/endsession")
            for i in range(n_daemons):
                fleet.append(Daemon(self, f"d{i:03d}", url, variant, a.budget))
            for d in fleet:
                d.spawn()
            for d in fleet:
                d.wait_ready()
            for i, d in enumerate(fleet):
                d.register(self.keys(f"f{i:03d}", sessions))
            before = netns_counters()
            spread = a.fleet_spread_ms / 1000.0
            offsets = sorted(((i * 7919) % 1000) / 1000.0 * spread for i in range(n_daemons))  # fixed, spread out
            t0 = time.monotonic()
            for d, offset in zip(fleet, offsets):
                delay = t0 + offset - time.monotonic()
                if delay > 0:
                    time.sleep(delay)
                d.sigterm()
            t_signalled = time.monotonic() - t0
            stuck = wait_all([d.child for d in fleet], a.budget + 30)
            for c in stuck:
                c.kill()
            net = counter_delta(before, netns_counters())
            exits = [d.child.t_exit for d in fleet]
            final, row = self.fleet_row(server, t0, exits, n_daemons * sessions)
            outcomes = [d.outcome() for d in fleet]
            merged = merge_outcomes(outcomes)
            bad = collections.Counter(d.child.status for d in fleet if d.child.status not in (0, 75))
            if stuck or bad:
                raise BenchError(f"{len(stuck)} daemons killed after budget + 30 s; exit statuses {dict(bad)}")
            row.update({"signalled_within_s": t_signalled, "netns": net,
                        "exit_statuses": dict(collections.Counter(d.child.status for d in fleet)),
                        "daemon_ended": merged["ended"], "daemon_failed": merged["failed"],
                        "daemon_expired": merged["expired"], "daemon_rejected": merged["rejected"],
                        "daemon_not_started": merged["not_started"], "daemon_attempts": merged["attempts"],
                        "daemon_calls_retried": merged["calls_retried"], "daemon_cause_kinds": merged["cause_kinds"],
                        "daemon_causes": merged["causes"],
                        "daemon_cpu_s": sum(d.child.cpu for d in fleet)})
            if row["time_all_ended_s"] is not None:
                row["vs_server_min"] = row["time_all_ended_s"] / (n_daemons * sessions * a.fleet_service_ms / 1000.0
                                                                  / a.fleet_workers)
            return row
        finally:
            for d in fleet:
                d.kill()
            server.stop()

    def fleet_curl_once(self, n_hosts, sessions):
        a = self.args
        server = self.fleet_server()
        procs = []
        try:
            d = self.newdir("curl-fleet")
            configs = []
            for i in range(n_hosts):
                urls = [server.url(f"/user/{k}/endsession") for k in self.keys(f"c{i:03d}", sessions)]
                configs.append(curl_config(urls).encode())
            # Each curl reads its configuration from stdin and starts once it has all of it: every
            # process is spawned first, then all are fed at once, so they start together.
            for i in range(n_hosts):
                argv = ["curl", "-s", "--parallel", "--parallel-immediate", "--parallel-max", "256",
                        "--max-time", str(a.budget), "-w", CURL_WRITE_OUT.replace("\\n", "\n"), "--config", "-"]
                procs.append(Child(argv, self.env(), stdout=d / f"out{i:03d}", stderr=d / f"err{i:03d}", stdin="pipe"))
            before = netns_counters()
            t0 = time.monotonic()
            for p, config in zip(procs, configs):
                p.popen.stdin.write(config)
                p.popen.stdin.close()
            stuck = wait_all(procs, a.budget + 30)
            for c in stuck:
                c.kill()
            net = counter_delta(before, netns_counters())
            final, row = self.fleet_row(server, t0, [p.t_exit for p in procs], n_hosts * sessions)
            ok = other = 0
            errors = collections.Counter()
            for i in range(n_hosts):
                o, x, e = curl_results(d / f"out{i:03d}")
                ok, other = ok + o, other + x
                errors.update(e)
            row.update({"netns": net, "ended": ok, "non_200": other,
                        "curl_errors": {CURL_EXIT.get(k, str(k)): v for k, v in errors.items()},
                        "exit_statuses": dict(collections.Counter(p.status for p in procs))})
            if row["time_all_ended_s"] is not None:
                row["vs_server_min"] = row["time_all_ended_s"] / (n_hosts * sessions * a.fleet_service_ms / 1000.0
                                                                  / a.fleet_workers)
            if stuck:
                raise BenchError(f"{len(stuck)} curl processes still running after {a.budget + 30} s (killed)")
            return row
        finally:
            for p in procs:
                p.kill()
            server.stop()


def cpu_app_record(path, ids, until):
    """What the CPU app's record says about the keys `ids` up to monotonic time `until` (None:
    everything so far)."""
    keys = read_record(path)
    requests = completions = completed = pending = multi = max_per = 0
    unknown = 0
    for kid, entry in keys.items():
        if kid not in ids:
            unknown += 1
            continue
        r = [t for t in entry["requests"] if until is None or t <= until]
        c = [t for t in entry["completions"] if until is None or t <= until]
        requests += len(r)
        completions += len(c)
        completed += bool(c)
        pending += bool(r) and not c
        multi += len(r) > 1
        max_per = max(max_per, len(r))
    return {"requests": requests, "completions": completions, "completed_keys": completed, "pending_keys": pending,
            "keys_multi": multi, "max_per_key": max_per, "unknown_keys": unknown}


def read_record(path):
    sys.path.insert(0, str(HERE))
    try:
        import cpu_app
    finally:
        sys.path.pop(0)
    return cpu_app.read_record(path)


# ---------------------------------------------------------------------------- reporting

def fmt(v, spec=".2f"):
    if v is None:
        return "—"
    if isinstance(v, float):
        return format(v, spec)
    return str(v)


def kinds_text(kinds):
    return ", ".join(f"{k} {v}" for k, v in sorted(kinds.items(), key=lambda kv: -kv[1])) or "—"


def next_start(r):
    """ended/total in s, requests (of them for sessions the server had completed before)."""
    if "next_start_finished" not in r:
        return "—"
    if not r["next_start_finished"]:
        return f"unfinished, {r['next_start_requests']} req"
    return (f"{r['next_start_ended']}/{r['next_start_sessions']} in {r['next_start_s']:.1f} s, "
            f"{r['next_start_requests']} req ({r['next_start_requests_already_completed']} done before)")


def tables(rows):
    out = []
    cpu = [r for r in rows if r["scenario"] == "cpu-bound"]
    if cpu:
        headers = ["variant", "wall s", "requests", "req/call", "keys sent >1", "daemon attempts", "daemon ended",
                   "expired", "failed", "not started", "server done at exit", "done later", "done when idle",
                   "work repeated", "ended − done", "vs best fixed", "next start", "server CPU s", "done/CPU s",
                   "load"]
        cells = []
        for r in cpu:
            if not r["ok"]:
                cells.append([r["name"]] + ["—"] * (len(headers) - 2) + ["ERROR"])
                continue
            cells.append([r["name"], fmt(r["wall_s"]), str(r["requests"]) + ("" if r["server_idle"] else "*"),
                          fmt(r["requests_per_call"]), str(r["keys_sent_twice"]), str(r["daemon_attempts"]),
                          str(r["daemon_ended"]), str(r["daemon_expired"]), str(r["daemon_failed"]),
                          str(r["daemon_not_started"]), str(r["completed_at_exit"]),
                          f"{r['completed_later']} (+{r['later_s']:g} s)" if r.get("later_s") else "—",
                          str(r["completed_when_idle"]), str(r["completions"] - r["completed_when_idle"]),
                          f"{r['ended_minus_completed']:+d}", fmt(r.get("completed_vs_best_fixed")), next_start(r),
                          fmt(r["server_cpu_s"], ".1f"),
                          fmt(r["completed_at_exit"] / r["server_cpu_s"] if r["server_cpu_s"] else None),
                          f"{r['loadavg_start']:.1f}/{r['cpu_busy_percent']:.0f}%"])
        r0 = cpu[0]
        out.append((f"cpu-bound: {r0['sessions']} sessions, budget {r0['budget_s']} s, gunicorn 2 workers x 8 "
                    "threads, ~0.25 s of CPU per call (requests: what the server began, counted once it was idle, "
                    "* if it never was; work repeated: requests it completed for a key it had already completed; "
                    "next start: the leftover run of a daemon started on the stopped one's state, sessions ended/"
                    "kept, its requests and how many of them the server had already completed; "
                    "server CPU s: its workers' CPU from SIGTERM to the exit, done/CPU s: completed by the exit per "
                    "CPU second of it (4 at best: a row that got less CPU, on a shared machine, completes less "
                    "without being less efficient); load: 1-min loadavg at the row's start / the CPUs' busy share "
                    "during it)", headers, cells, [r.get("error") for r in cpu]))
    b5 = [r for r in rows if r["scenario"] == "backlog5"]
    if b5:
        headers = ["server", "client", "wall s (median)", "runs s", "requests", "ended", "listen overflows",
                   "SYN retrans", "failures (last run)"]
        cells = []
        for r in b5:
            if not r["ok"]:
                cells.append([r.get("server", ""), r["name"]] + ["—"] * (len(headers) - 3) + ["ERROR"])
                continue
            client = r["client"] if r["client"] != "session-cleanup" else f"daemon {r['name'].split(': ', 1)[1]}"
            kinds = collections.Counter()
            for cause, count in (r.get("causes") or {}).items():
                kinds[cause_kind(cause)] += count
            failures = kinds_text(r.get("curl_errors") or kinds)
            cells.append([r["server"], client, fmt(r["wall_s"]), " ".join(f"{w:.2f}" for w in r["wall_runs_s"]),
                          " ".join(map(str, r["requests_runs"])),
                          " ".join(map(str, r["ended_runs"])) + f" of {r['sessions']}",
                          fmt(r["ListenOverflows"], ".0f"),
                          fmt(r["TCPSynRetrans"], ".0f"), failures])
        out.append((f"backlog5: {b5[0]['sessions']} sessions against Python http.server, request_queue_size = 5",
                    headers, cells, [r.get("error") for r in b5]))
    fl = [r for r in rows if r["scenario"] == "fleet"]
    if fl:
        headers = ["client", "all ended s", "× server min", "last exit s", "ended", "requests", "req/call", "503s",
                   "calls retried", "not ended (causes)", "listen overflows", "SYN retrans", "resets sent",
                   "max accept q",
                   "max conns"]
        cells = []
        for r in fl:
            if not r["ok"]:
                cells.append([r["name"]] + ["—"] * (len(headers) - 2) + ["ERROR"])
                continue
            ended = r.get("daemon_ended", r.get("ended"))
            peer_failures = dict(r.get("curl_errors") or {}, **({"non-200": r["non_200"]} if r.get("non_200") else {}))
            causes = kinds_text(r.get("daemon_cause_kinds") or peer_failures)
            cells.append([r["name"], fmt(r["time_all_ended_s"]), fmt(r.get("vs_server_min")), fmt(r["last_exit_s"]),
                          f"{ended}/{r['calls']}", str(r["requests"]), fmt(r["requests_per_call"]),
                          str(r["rejected_503"]), str(r.get("daemon_calls_retried", "—")), causes,
                          str(r["netns"]["ListenOverflows"]),
                          str(r["netns"]["TCPSynRetrans"]), str(r["netns"]["OutRsts"]), str(r["max_accept_queue"]),
                          str(r["max_open_connections"])])
        r0 = fl[0]
        out.append((f"fleet: {r0['daemons']} hosts x {r0['sessions_per_daemon']} sessions stopped at once, "
                    f"boundedserver {r0['workers']} workers x {r0['service_ms']:g} ms, backlog {r0['backlog']}, "
                    f"max {r0['max_connections']} connections; the server's own minimum {r0['server_min_s']:.2f} s",
                    headers, cells, [r.get("error") for r in fl]))
    return out


def print_tables(rows):
    for title, headers, cells, errors in tables(rows):
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
        line = lambda vals: "  ".join(format(v, ("<" if i == 0 else ">") + str(w)) for i, (v, w) in
                                      enumerate(zip(vals, widths)))
        print(f"\n{title}")
        print(line(headers))
        print("  ".join("-" * w for w in widths))
        for c, e in zip(cells, errors):
            print(line(c))
            if e:
                print(f"    ERROR: {e}")


def markdown(rows):
    out = []
    for title, headers, cells, errors in tables(rows):
        out += [f"### {title}\n", "| " + " | ".join(headers) + " |", "|---" * len(headers) + "|"]
        out += ["| " + " | ".join(c) + " |" for c in cells]
        out += [f"\nERROR: {e}" for e in errors if e]
        out.append("")
    return "\n".join(out)


# ---------------------------------------------------------------------------- setup

def cache_dir():
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "session-cleanup-bench"


def ensure_gunicorn(venv):
    """gunicorn in a venv of its own (PyPI), made once; before entering the namespace (no network)."""
    gunicorn = Path(venv) / "bin" / "gunicorn"
    if gunicorn.exists():
        return
    print(f"fleet_bench: installing gunicorn {GUNICORN_VERSION} into {venv}", flush=True)
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True)
    subprocess.run([str(Path(venv) / "bin" / "pip"), "install", "-q", f"gunicorn=={GUNICORN_VERSION}"], check=True)


def ensure_boundedserver(path):
    source = HERE / "boundedserver.c"
    if Path(path).exists() and Path(path).stat().st_mtime >= source.stat().st_mtime:
        return
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    subprocess.run(["cc", "-O2", "-Wall", "-pthread", "-o", str(path), str(source)], check=True)


def machine_info(daemon):
    info = {"nproc": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version()}
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info["daemon"] = str(daemon)
    info["daemon_sha256"] = hashlib.sha256(Path(daemon).read_bytes()).hexdigest()
    try:
        info["git_commit"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "HEAD"], capture_output=True,
                                            text=True).stdout.strip()
    except OSError:
        pass
    info["curl"] = subprocess.run(["curl", "--version"], capture_output=True, text=True).stdout.split("\n")[0]
    return info


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--daemon",
                   default=os.environ.get("SESSION_CLEANUP_BIN", str(REPO / ".build/release/session-cleanup")))
    p.add_argument("--quick", action="store_true", help="CI smoke test (~30-40 s)")
    p.add_argument("--only", help="comma-separated: cpu-bound, backlog5, fleet")
    p.add_argument("--variant", action="append", help="NAME[:Stop.Key=v;Endpoint.Key=v;...] (repeatable)")
    p.add_argument("--no-reference", action="store_true", help="no MaxConnectionsPerHost=4 rows in backlog5 and fleet")
    p.add_argument("--budget", type=int, help="BudgetSec= of backlog5 and fleet daemons and their curl peers' "
                                              "--max-time (s; default 25, quick 5)")
    p.add_argument("--json", default=str(REPO / "bench-results" / "fleet.json"))
    p.add_argument("--markdown", help="also write the tables as Markdown here")
    p.add_argument("--workdir", default="/tmp")
    p.add_argument("--keep", action="store_true", help="keep the work directory")
    p.add_argument("--no-netns", action="store_true", help="stay in the host's network namespace")
    p.add_argument("--boundedserver", default=str(REPO / "bench-results" / "bin" / "boundedserver"))
    p.add_argument("--venv", default=str(cache_dir() / "gunicorn-venv"))
    g = p.add_argument_group("cpu-bound")
    g.add_argument("--cpu-sessions", type=int)
    g.add_argument("--cpu-budget", type=int, help="BudgetSec= (default 25, quick 6)")
    g.add_argument("--cpu-later", type=float, help="seconds to wait after the exit for the server (30)")
    g.add_argument("--cpu-ms", type=float, default=250, help="CPU per call, calibrated (ms)")
    g.add_argument("--cpu-iterations", type=int, help="PBKDF2 iterations instead of calibrating")
    g.add_argument("--sweep", help="MaxConnectionsPerHost= values (default 1,2,4,8,16,32; quick 4; '' none)")
    g.add_argument("--no-next-start", action="store_true",
                   help="skip the next start (the leftover run on the stopped daemon's state) of the main rows")
    g.add_argument("--sweep-lines", help="lines for every sweep row, e.g. 'Endpoint.Concurrency=fixed'")
    g = p.add_argument_group("backlog5")
    g.add_argument("--backlog-sessions", type=int, default=50)
    g.add_argument("--backlog-servers",
                   help="threading (ThreadingHTTPServer, the default), plain (HTTPServer) or both: threading,plain")
    g.add_argument("--repeat", type=int, help="runs per row (default 3, quick 1)")
    g = p.add_argument_group("fleet")
    g.add_argument("--fleet-daemons", type=int)
    g.add_argument("--fleet-sessions", type=int)
    g.add_argument("--fleet-workers", type=int, default=16)
    g.add_argument("--fleet-service-ms", type=float, default=10)
    g.add_argument("--fleet-mode", choices=["sleep", "cpu"], default="sleep")
    g.add_argument("--fleet-backlog", type=int, default=64)
    g.add_argument("--fleet-max-connections", type=int, default=1024)
    g.add_argument("--fleet-queue", type=int, help="boundedserver --queue: 503 beyond this many waiting")
    g.add_argument("--fleet-spread-ms", type=float, default=0, help="SIGTERMs spread over this long (default: at once)")
    args = p.parse_args()
    if args.budget is None:
        args.budget = 5 if args.quick else 25
    for v in args.variant or []:
        try:
            parse_variant(v)
        except ValueError as e:
            p.error(str(e))
    if args.only and not set(args.only.split(",")) <= {"cpu-bound", "backlog5", "fleet"}:
        p.error("--only takes cpu-bound, backlog5, fleet")
    if not os.access(args.daemon, os.X_OK):
        p.error(f"no daemon binary at {args.daemon}: swift build -c release, or pass --daemon")
    if os.environ.get(NETNS_MARKER) != "1":
        ensure_boundedserver(args.boundedserver)
        if not args.only or "cpu-bound" in args.only:
            ensure_gunicorn(args.venv)
    namespace = enter_netns_if_root(args)

    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)
    bench = Bench(args)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    info = machine_info(bench.daemon)
    info["loadavg_before"] = loadavg()
    info["network_namespace"] = namespace
    info["sysctl"] = sysctls()
    bench.log(f"fleet_bench{' (quick)' if args.quick else ''}: {info['nproc']} CPUs, load {info['loadavg_before']}, "
              f"daemon {bench.daemon} ({info['daemon_sha256'][:12]}), namespace {namespace}, work {bench.work}")
    try:
        bench.run()
    except KeyboardInterrupt:
        bench.rows.append({"scenario": "suite", "name": "interrupted", "ok": False, "error": "interrupted"})
    finally:
        end_all_children()
        bench.notify_hub.close()
    info["loadavg_after"] = loadavg()
    rows = bench.rows
    passed = sum(r["ok"] for r in rows)
    failed = len(rows) - passed
    print_tables(rows)
    result = {"schema": 1, "started": started, "duration_s": round(time.monotonic() - bench.t_start, 1),
              "quick": args.quick, "machine": info, "command": sys.argv,
              "variants": [{"name": v["name"], "stop": v["stop"], "endpoint": v["endpoint"]} for v in bench.variants],
              "results": rows, "passed": passed, "failed": failed}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(markdown(rows))
    if args.keep or failed:
        print(f"\nwork directory kept: {bench.work}")
    else:
        shutil.rmtree(bench.work, ignore_errors=True)
    print(f"\nfigures: {args.json}  ({result['duration_s']} s)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
