#!/usr/bin/env python3
"""bench.py — the session-cleanup benchmark suite (Python 3 standard library only).

    python3 Benchmarks/bench.py [--quick] [--json OUT.json] [--markdown OUT.md]
                                [--only SCENARIO[,SCENARIO…]] [--repeat K] [--keep]

Scenarios (--only takes these names):
  stop      stop runs: N = 1, 100, 1,000, 10,000, 100,000 sessions × 1 endpoint, and
            1,000 sessions × 3 endpoints; SIGTERM → exit wall time, the daemon's CPU and
            peak RSS (wait4 rusage), ratio to the ideal ceil(calls / 256) × latency
  peers     the same calls made by a sequential curl loop, xargs -P 256 curl, a Python
            asyncio script, and curl --parallel (one libcurl process: the practical floor)
  idle      an idle daemon with 10,000 sessions: CPU, RSS, wake-ups/s (watchdog off / on)
  lifecycle start → READY=1 with 0 and 100,000 stored sessions; SIGTERM → exit with 0 and
            1 session
  register  durable registrations/s through the control socket: 1 client, 16 clients
--quick (the CI smoke test, < 90 s): N = 1, 100, 1,000; peers at N = 100; 5 s idle;
registration 2 s each.  Timings are never asserted: a row fails only when something is
functionally wrong — the load server's request count differs from the number of calls
expected, a process crashed or timed out, or an exit status was not the expected one.
Prints a table, writes the same figures as JSON (default bench-results/latest.json), ends
with "N passed, N failed" and exits 1 if anything failed.

Network: the load server listens on 127.0.0.1 only and every URL points at it.  Children get
a minimal environment (no *_proxy variables, HOME in the work directory so no ~/.curlrc).
Every wait is bounded in time; only processes this script started are signalled, through
pidfds (no PID reuse races).  The daemon binary and loadserver come from scripts/bench.sh
(or --daemon / --loadserver).
"""
import argparse
import asyncio
import datetime
import json
import math
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
REPO = HERE.parent
LATENCY_MS = 50
CONCURRENCY = 256
# The C floor's client label in the network scenarios' rows (network_bench.py).
FLOOR_CLIENT = "C floor (libcurl multi)"
HOST = "127.0.0.1"

# docs/control-protocol.md, Framing: "Every request gets exactly one response line, in request
# order. A connection may carry several requests; the server handles them one at a time (it
# reads the next line after the previous reply is written)." — so requests may be queued on a
# connection, and the bulk registrar keeps up to this many in flight per connection
# (--pipeline 1: strictly one at a time).  The throughput scenario never pipelines.
DEFAULT_PIPELINE = 16
BULK_CONNECTIONS = 64  # the daemon accepts 512 control clients; stay well below


LOCAL_SCENARIOS = {"stop", "peers", "idle", "lifecycle", "register"}
# Benchmarks/network_bench.py: nginx behind a 50 ms round trip in a network namespace (root).
NETWORK_SCENARIOS = {"origins", "http2", "cpu", "memory", "syscalls"}
DEFAULT_SCENARIOS = LOCAL_SCENARIOS | NETWORK_SCENARIOS


class BenchError(Exception):
    """A functional failure: the row becomes an ERROR row."""


# ---------------------------------------------------------------------------- processes

_children = []  # every Child still running, so an interrupted run ends them (by pidfd)


def clean_env(home, **extra):
    """A minimal environment: no proxies, no ~/.curlrc, C.UTF-8."""
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": str(home)}
    env.update({k: str(v) for k, v in extra.items()})
    return env


# A child's ru_maxrss is at least the RSS of the process it was forked from: exec() records the
# old mm's high-water mark (with vfork, the parent's own mm) in the child's rusage.  Spawned
# straight from this Python process, every child would "peak" at the suite's ~30-200 MB.  So
# children are started by a small /bin/sh that forks them in the background and exits; this
# process is a child subreaper (prctl), so they are re-parented to it and reaped here.
LAUNCHER = 'i=$1 o=$2 e=$3; shift 3; "$@" <"$i" >>"$o" 2>>"$e" & echo $!'
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


class Child:
    """A process we started (through LAUNCHER); waited for through a pidfd (bounded), reaped
    with wait4.  stdin/stdout/stderr are paths (stdout and stderr are appended to)."""

    def __init__(self, argv, env, stdin="/dev/null", stdout="/dev/null", stderr=None):
        self.argv = argv
        self.t_spawn = time.monotonic()
        launcher = subprocess.Popen(
            ["/bin/sh", "-c", LAUNCHER, "sh", str(stdin), str(stdout), str(stderr or stdout)] + [str(a) for a in argv],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = launcher.stdout.readline()
        launcher.stdout.close()
        launcher.wait(10)
        if not line.strip().isdigit():
            raise BenchError(f"could not start {argv[0]}")
        self.pid = int(line)
        self.pidfd = os.pidfd_open(self.pid)  # an exited child stays a zombie until we reap it
        self.status = None  # exit code; negative: killed by that signal
        self.rusage = None
        self.t_exit = None
        _children.append(self)

    def wait(self, timeout):
        """True once the process has exited (and is reaped); False after timeout seconds."""
        if self.status is not None:
            return True
        poller = select.poll()
        poller.register(self.pidfd, select.POLLIN)
        if not poller.poll(max(0, int(timeout * 1000))):
            return False
        self.t_exit = time.monotonic()
        _, status, self.rusage = os.wait4(self.pid, 0)
        self.status = os.waitstatus_to_exitcode(status)
        os.close(self.pidfd)
        _children.remove(self)
        return True

    def signal(self, sig):
        if self.status is None:
            signal.pidfd_send_signal(self.pidfd, sig)

    def kill(self):
        self.signal(signal.SIGKILL)
        self.wait(10)

    @property
    def cpu(self):
        return self.rusage.ru_utime + self.rusage.ru_stime

    @property
    def maxrss_mb(self):
        return self.rusage.ru_maxrss / 1024.0


def end_all_children():
    for child in list(_children):
        try:
            child.kill()
        except OSError:
            pass


CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_sample(pid):
    """CPU (clock ticks from /proc/PID/stat; `cpu_s`: ns from schedstat summed over threads,
    plus the ticks of threads that have ended), RSS and, in `per_thread`, each thread's
    (sched_ns, vcsw, nvcsw): a thread that ends takes its counters with it, so differences
    between two samples go through `thread_delta`."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    sample = {"t": time.monotonic(), "ticks": int(rest[11]) + int(rest[12]), "utime_ticks": int(rest[11]),
              "stime_ticks": int(rest[12]), "minflt": int(rest[7]), "sched_ns": 0, "threads": 0,
              "per_thread": {}}
    live_ticks = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                sched_ns = int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                thread = f.read().rsplit(")", 1)[1].split()
            live_ticks += int(thread[11]) + int(thread[12])
            vcsw = nvcsw = 0
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        vcsw = int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        nvcsw = int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that just ended
        sample["per_thread"][tid] = (sched_ns, vcsw, nvcsw)
        sample["sched_ns"] += sched_ns
        sample["threads"] += 1
    # The CPU of threads that have ended is in the process's ticks only (10 ms resolution).
    sample["ended_threads_s"] = max(0, sample["ticks"] - live_ticks) / CLK_TCK
    sample["cpu_s"] = sample["sched_ns"] / 1e9 + sample["ended_threads_s"]
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:", "RssAnon:", "RssFile:")):
                sample[line.split(":")[0]] = int(line.split()[1])  # kB
    return sample


def thread_delta(a, b):
    """What the threads did between samples `a` and `b`: sched_ns, vcsw and nvcsw summed over
    the threads alive at `b` (a thread new since `a` from zero), never negative; and the
    threads that ended in between, whose last counts are lost (each woke at least once, to
    end)."""
    zero = (0, 0, 0)
    sums = [0, 0, 0]
    for tid, counts in b["per_thread"].items():
        for i, (now, then) in enumerate(zip(counts, a["per_thread"].get(tid, zero))):
            sums[i] += now - then
    ended = len(set(a["per_thread"]) - set(b["per_thread"]))
    return {"sched_ns": sums[0], "vcsw": sums[1], "nvcsw": sums[2], "threads_ended": ended}


def settle_threads(pids, quiet_s=6.0, limit_s=30.0):
    """Waits until no thread of `pids` has started or ended for `quiet_s` (at most `limit_s`):
    a worker thread that times out and ends inside a measuring window would take its counters
    with it."""
    def threads():
        return {pid: frozenset(os.listdir(f"/proc/{pid}/task")) for pid in pids}
    start = last_change = time.monotonic()
    seen = threads()
    while time.monotonic() - last_change < quiet_s and time.monotonic() - start < limit_s:
        time.sleep(0.5)
        now = threads()
        if now != seen:
            seen, last_change = now, time.monotonic()


def smaps_rollup(pid):
    """(RSS, anonymous) in kB from /proc/PID/smaps_rollup, or None once the process is gone.
    File-backed is the difference (shared memory, which none of the clients maps, would count
    there too)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = {}
    for line in text.splitlines()[1:]:
        name, _, rest = line.partition(":")
        if rest:
            fields[name] = int(rest.split()[0])
    if "Rss" not in fields:
        return None  # a zombie: no mappings left
    return fields["Rss"], fields.get("Anonymous", 0)


class MemorySampler:
    """/proc/PID/smaps_rollup every `interval` s on a thread, from start() until the process has
    gone: where a run's peak RSS is (anonymous and file-backed apart), what the process held
    just before SIGTERM, and how fast anonymous memory grew after it. The kernel's peak
    (wait4's ru_maxrss) can be a little higher: a peak between two samples is missed."""

    def __init__(self, pid, interval=0.02):
        self.pid = pid
        self.interval = interval
        self.samples = []  # (monotonic s, RSS kB, anonymous kB)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._sample()
        self._thread.start()
        return self

    def _sample(self):
        sample = smaps_rollup(self.pid)
        if sample is not None:
            self.samples.append((time.monotonic(),) + sample)
        return sample is not None

    def _run(self):
        while not self._stop.is_set() and self._sample():
            self._stop.wait(self.interval)

    def stop(self):
        self._stop.set()
        self._thread.join(10)

    def write_curve(self, path, t0):
        """The samples as CSV: ms since t0 (SIGTERM, or the start), RSS, anonymous, file kB."""
        with open(path, "w") as f:
            f.write("ms,rss_kb,anon_kb,file_kb\n")
            for t, rss, anon in self.samples:
                f.write(f"{(t - t0) * 1000:.1f},{rss},{anon},{rss - anon}\n")

    def summary(self, t_signal=None, growth_window=0.1):
        """Figures in MB: the sampled peak (anonymous and file-backed at that sample, and the
        highest anonymous of all); with t_signal (the SIGTERM's time), the last sample before
        it and the anonymous growth from there to the highest within growth_window after it."""
        if not self.samples:
            return {}
        mb = lambda kb: kb / 1024.0
        _, rss, anon = max(self.samples, key=lambda s: s[1])
        out = {"sampled_peak_rss_mb": mb(rss), "peak_anon_mb": mb(anon), "peak_file_mb": mb(rss - anon),
               "max_anon_mb": mb(max(s[2] for s in self.samples)), "memory_samples": len(self.samples)}
        if t_signal is not None:
            before = [s for s in self.samples if s[0] < t_signal]
            after = [s for s in self.samples if t_signal <= s[0] <= t_signal + growth_window]
            if before:
                _, rss0, anon0 = before[-1]
                out.update(rss_before_sigterm_mb=mb(rss0), anon_before_sigterm_mb=mb(anon0),
                           file_before_sigterm_mb=mb(rss0 - anon0))
                if after:
                    out["anon_growth_100ms_mb"] = mb(max(s[2] for s in after) - anon0)
        return out


# ---------------------------------------------------------------------------- notify socket

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


# ---------------------------------------------------------------------------- load server

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


# ---------------------------------------------------------------------------- daemon

class Daemon:
    """session-cleanup daemon started by hand: own state/runtime directories, config file and
    notify socket."""

    def __init__(self, bench, tag, endpoints, budget_sec=60, concurrency=CONCURRENCY, watchdog_usec=None,
                 state_dir=None, binary=None, wrap=(), endpoint_lines="", prefix=()):
        """endpoints: (name, url) pairs; endpoint_lines: more `Key=value` lines for every
        [Endpoint]; wrap: argv put before the daemon's (e.g. `ip netns exec NAME`); prefix: argv
        between wrap and the binary (e.g. valgrind); binary: instead of bench.daemon."""
        self.bench = bench
        self.binary = binary or bench.daemon
        self.wrap = list(wrap) + list(prefix)
        self.dir = bench.newdir("d-" + tag)
        self.state_dir = Path(state_dir) if state_dir else self.dir / "state"
        self.runtime_dir = self.dir / "run"
        self.state_dir.mkdir(exist_ok=True)
        self.runtime_dir.mkdir()
        self.budget_sec = budget_sec
        self.watchdog_usec = watchdog_usec
        self.config = self.dir / "session-cleanup.conf"
        text = f"[Stop]\nBudgetSec={budget_sec}s\nMaxConcurrentRequests={concurrency}\n"
        text += "[Control]\nSocketMode=0666\n"
        for name, url in endpoints:
            text += f"[Endpoint]\nName={name}\nURL={url}\n{endpoint_lines}"
        self.config.write_text(text)
        self.control = self.runtime_dir / "control.sock"
        self.notify = None
        self.child = None
        self.ready_s = None

    def start(self, ready_timeout=60):
        """Spawns the daemon and waits for READY=1; ready_s = spawn → READY=1."""
        self.notify = NotifySocket(self.dir / "notify.sock")
        extra = {"STATE_DIRECTORY": self.state_dir, "RUNTIME_DIRECTORY": self.runtime_dir,
                 "NOTIFY_SOCKET": self.notify.path}
        if self.watchdog_usec:
            extra["WATCHDOG_USEC"] = self.watchdog_usec
        self.child = Child(self.wrap + [self.binary, "daemon", "--config", self.config], self.bench.env(**extra),
                           stdout=self.dir / "daemon.log")
        deadline = time.monotonic() + ready_timeout
        while not self.notify.ready.wait(0.02):
            if self.child.wait(0):
                raise BenchError(f"daemon exited with {self.child.status} before READY=1: {self.log_tail()}")
            if time.monotonic() > deadline:
                self.child.kill()
                raise BenchError(f"daemon not READY=1 within {ready_timeout} s")
        self.ready_s = self.notify.ready_at - self.child.t_spawn
        return self.ready_s

    @property
    def pid(self):
        return self.child.pid

    def log_tail(self, lines=5):
        try:
            return " | ".join((self.dir / "daemon.log").read_text(errors="replace").strip().splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout=None):
        """SIGTERM → exit.  Returns wall (s), exit status, CPU of the whole process and of the
        stop run alone (total minus what it had used before SIGTERM), peak RSS, RSS before."""
        timeout = timeout or self.budget_sec + 30
        before = proc_sample(self.pid)
        t0 = self.t_sigterm = time.monotonic()
        self.child.signal(signal.SIGTERM)
        if not self.child.wait(timeout):
            self.child.kill()
            raise BenchError(f"daemon still running {timeout} s after SIGTERM (killed)")
        wall = self.child.t_exit - t0
        self.close()
        return {"wall_s": wall, "exit": self.child.status, "cpu_total_s": self.child.cpu,
                "cpu_user_s": self.child.rusage.ru_utime, "cpu_sys_s": self.child.rusage.ru_stime,
                # What it had used before SIGTERM, threads that have ended included.
                "cpu_stop_s": max(0.0, self.child.cpu - before["cpu_s"]),
                # User and system apart (clock ticks before SIGTERM: 10 ms resolution).
                "cpu_stop_user_s": max(0.0, self.child.rusage.ru_utime - before["utime_ticks"] / CLK_TCK),
                "cpu_stop_sys_s": max(0.0, self.child.rusage.ru_stime - before["stime_ticks"] / CLK_TCK),
                "page_faults_stop": max(0, self.child.rusage.ru_minflt - before["minflt"]),
                "peak_rss_mb": self.child.maxrss_mb, "rss_before_stop_mb": before.get("VmRSS", 0) / 1024.0,
                "threads_before_stop": before["threads"],
                "cpu_ended_threads_before_stop_s": before["ended_threads_s"]}

    def kill(self):
        """SIGKILL (the store is durable: what was acknowledged stays)."""
        if self.child:
            self.child.kill()
        self.close()

    def close(self):
        if self.notify:
            self.notify.close()
            self.notify = None


# ---------------------------------------------------------------------------- control socket

def register_line(key, endpoint_json):
    return ('{"op":"register","key":"%s","endpoints":%s,"label":"bench"}\n' % (key, endpoint_json)).encode()


def check_reply(line):
    if b'"ok":true' in line:
        return None
    try:
        reply = json.loads(line)
    except ValueError:
        return f"unreadable reply {line[:200]!r}"
    return None if reply.get("ok") is True else f"{reply.get('code')}: {reply.get('error')}"


async def _register_bulk(path, prefix, n, endpoints, connections, depth, timeout):
    # endpoints: the names every session gets, or a function of the session's number giving them
    names_of = endpoints if callable(endpoints) else None
    endpoint_json = None if names_of else json.dumps(endpoints)
    errors = []
    done = 0

    async def worker(c):
        nonlocal done
        reader, writer = await asyncio.open_unix_connection(str(path), limit=1 << 20)
        mine = range(c, n, connections)
        sent = got = 0
        try:
            while got < len(mine):
                if sent < len(mine) and sent - got <= depth // 2:
                    batch = min(depth - (sent - got), len(mine) - sent)
                    writer.write(b"".join(
                        register_line(f"{prefix}-{mine[sent + k]}",
                                      endpoint_json or json.dumps(names_of(mine[sent + k])))
                        for k in range(batch)))
                    sent += batch
                line = await reader.readline()
                if not line:
                    raise BenchError(f"control connection closed after {got} replies")
                error = check_reply(line)
                if error:
                    errors.append(error)
                got += 1
                done += 1
        finally:
            writer.close()

    workers = [asyncio.ensure_future(worker(c)) for c in range(min(connections, n))]
    try:
        await asyncio.wait_for(asyncio.gather(*workers), timeout)
    except asyncio.TimeoutError:
        raise BenchError(f"registration timed out after {timeout} s ({done} of {n} acknowledged)")
    return errors


def register_bulk(daemon, prefix, n, endpoints, pipeline, connections=BULK_CONNECTIONS, timeout=600):
    """Registers n sessions (keys prefix-0 … prefix-(n-1)) through the control socket, each at
    `endpoints` (a list of names, or a function of i giving session i's); returns seconds
    taken.  Raises BenchError unless every one was acknowledged with ok: true."""
    if n == 0:
        return 0.0
    t0 = time.monotonic()
    try:
        errors = asyncio.run(_register_bulk(daemon.control, prefix, n, endpoints, connections, max(1, pipeline),
                                            timeout))
    except OSError as e:
        raise BenchError(f"control socket {daemon.control}: {e.strerror or e}") from None
    if errors:
        raise BenchError(f"{len(errors)} of {n} registrations refused; first: {errors[0]}")
    return time.monotonic() - t0


def control_request(path, request, timeout=60):
    """One request on its own connection; returns the decoded reply."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.settimeout(timeout)
        s.connect(str(path))
        s.sendall((json.dumps(request) + "\n").encode())
        data = b""
        while not data.endswith(b"\n"):
            chunk = s.recv(1 << 20)
            if not chunk:
                break
            data += chunk
    return json.loads(data)


def stored_count(daemon):
    """How many sessions the daemon says it holds: status's count if it has one, else list's length."""
    reply = control_request(daemon.control, {"op": "status"})
    status = reply.get("status") or {}
    for key in ("sessions", "session_count", "stored", "registered"):
        value = status.get(key)
        if isinstance(value, int):
            return value
        if isinstance(value, dict):
            for sub in ("stored", "total", "count"):
                if isinstance(value.get(sub), int):
                    return value[sub]
    reply = control_request(daemon.control, {"op": "list"})
    if not reply.get("ok"):
        raise BenchError(f"list failed: {reply}")
    return len(reply.get("sessions") or [])


# ---------------------------------------------------------------------------- the suite

def ideal_s(calls, concurrency=CONCURRENCY, latency_ms=LATENCY_MS):
    return math.ceil(calls / concurrency) * latency_ms / 1000.0 if calls else 0.0


def median(values):
    return statistics.median(values) if values else None


class Bench:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.work = Path(tempfile.mkdtemp(prefix="scbench-", dir=args.workdir))
        self.daemon = Path(args.daemon)
        self.loadserver = Path(args.loadserver)
        self.rows = []
        self.counter = 0
        self.stop_rows = {}  # (n, endpoints) -> row, for the peers' ratios
        self.state_snapshot = None  # (n, path): a copy of a daemon's state with n sessions stored
        self.t_start = time.monotonic()

    def env(self, **extra):
        return clean_env(self.work, **extra)

    def newdir(self, tag):
        self.counter += 1
        path = self.work / f"{self.counter:03d}-{tag}"
        path.mkdir()
        return path

    def log(self, text):
        print(f"[{time.monotonic() - self.t_start:7.1f}s] {text}", flush=True)

    def add(self, row):
        self.rows.append(row)
        status = "ok" if row["ok"] else "ERROR: " + row["error"]
        self.log(f"{row['scenario']:<10} {row['name']:<28} {status}")
        return row

    def attempt(self, scenario, name, fn, **fields):
        """Runs fn() -> dict of figures; any failure becomes an ERROR row."""
        row = {"scenario": scenario, "name": name, "ok": True, "error": None}
        row.update(fields)
        try:
            row.update(fn())
        except BenchError as e:
            row.update(ok=False, error=str(e))
        except Exception as e:  # noqa: BLE001 — a crash in a scenario is a failed row, not a dead suite
            row.update(ok=False, error=f"{type(e).__name__}: {e}")
        return self.add(row)

    # ------------------------------------------------------------------ 1. stop runs

    def stop_once(self, n, n_endpoints, snapshot=False):
        server = LoadServer(self, tag=f"ls-stop{n}x{n_endpoints}")
        daemon = None
        try:
            paths = ["/user/{session}/endsession", "/user/{session}/logout", "/user/{session}/revoke"]
            names = ["auth", "sso", "api"][:n_endpoints]
            endpoints = [(name, server.url(p)) for name, p in zip(names, paths)]
            calls = n * n_endpoints
            budget = 60 if calls <= 20000 else 180
            daemon = Daemon(self, f"stop{n}x{n_endpoints}", endpoints, budget_sec=budget)
            ready_s = daemon.start()
            reg_s = register_bulk(daemon, f"s{n}x{n_endpoints}", n, names, self.args.pipeline)
            early = server.stats()["requests"]
            if early:
                raise BenchError(f"server got {early} requests before SIGTERM")
            if snapshot:
                daemon.child.signal(signal.SIGSTOP)  # a crash-consistent copy of what is on disk
                try:
                    copy = self.work / f"state-{n}"
                    shutil.copytree(daemon.state_dir, copy)
                    self.state_snapshot = (n, copy)
                finally:
                    daemon.child.signal(signal.SIGCONT)
            watch = FirstCallWatch(server) if n else None
            result = daemon.stop()
            t_first = watch.result() if watch else None
            final = server.stop()
            result.update(first_call_ms=(t_first - daemon.t_sigterm) * 1000 if t_first else None)
            result.update(ready_s=ready_s, register_s=reg_s, server_requests=final["requests"],
                          server_unique_keys=final["unique_keys"], server_max_late_us=final["max_late_us"],
                          server_max_pending=final["max_pending"], server_connections=final["connections"])
            problems = []
            if result["exit"] != 0:
                problems.append(f"exit status {result['exit']} (expected 0): {daemon.log_tail(3)}")
            if final["requests"] != calls:
                problems.append(f"server counted {final['requests']} requests, expected {calls}")
            if final["unique_keys"] != n:
                problems.append(f"server saw {final['unique_keys']} distinct sessions, expected {n}")
            if problems:
                raise BenchError("; ".join(problems))
            return result
        finally:
            if daemon and daemon.child and daemon.child.status is None:
                daemon.kill()
            if server.final is None:
                server.child.kill()

    def stop_run(self, n, n_endpoints=1):
        calls = n * n_endpoints
        name = f"N={n:,}" + (f" × {n_endpoints} endpoints" if n_endpoints > 1 else "")

        def run():
            runs = []
            for i in range(self.args.repeat):
                snapshot = (n == self.snapshot_n and n_endpoints == 1 and i == 0)
                runs.append(self.stop_once(n, n_endpoints, snapshot=snapshot))
            numeric = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
            row = {}
            for k in runs[0]:
                values = [r[k] for r in runs if numeric(r.get(k))]
                # counts stay integers (an even number of runs would average two of them)
                row[k] = statistics.median_low(values) if values and all(isinstance(v, int) for v in values) \
                    else median(values)
            row["exit"] = runs[-1]["exit"]
            row["runs"] = len(runs)
            row["wall_runs_s"] = [round(r["wall_s"], 4) for r in runs]
            row["cpu_stop_runs_s"] = [round(r["cpu_stop_s"], 4) for r in runs]
            row["ratio"] = row["wall_s"] / ideal_s(calls) if calls else None
            return row

        row = self.attempt("stop", name, run, n=n, endpoints=n_endpoints, calls=calls, ideal_s=ideal_s(calls),
                           latency_ms=LATENCY_MS, concurrency=CONCURRENCY)
        self.stop_rows[(n, n_endpoints)] = row
        return row

    # ------------------------------------------------------------------ 2. peers

    def peer_run(self, peer, n, cap=None):
        calls = min(n, cap) if cap else n
        label = {"seq": "sequential curl loop", "xargs": "xargs -P 256 curl", "python": "python asyncio (256)",
                 "parallel": "curl --parallel 256"}[peer]

        def run():
            server = LoadServer(self, tag=f"ls-{peer}{n}")
            try:
                urls = [server.url(f"/user/{peer}-{n}-{i}/endsession") for i in range(calls)]
                d = self.newdir(f"peer-{peer}{n}")
                url_file = d / "urls"
                url_file.write_text("".join(u + "\n" for u in urls))
                if peer == "seq":
                    argv = ["sh", "-c",
                            'rc=0; while IFS= read -r url; do curl -s -o /dev/null "$url" || rc=1; done; exit $rc']
                elif peer == "xargs":
                    argv = ["xargs", "-P", str(CONCURRENCY), "-n", "1", "curl", "-s", "-o", "/dev/null"]
                elif peer == "python":
                    argv = [sys.executable, HERE / "peers" / "python_asyncio_peer.py", url_file]
                else:
                    config = d / "curl.conf"
                    config.write_text("".join(f'url = "{u}"\noutput = "/dev/null"\n' for u in urls))
                    argv = ["curl", "-s", "--parallel", "--parallel-immediate", "--parallel-max", str(CONCURRENCY),
                            "--config", config]
                timeout = 60 + calls * (0.2 if peer in ("seq", "xargs") else 0.01)
                child = Child(argv, self.env(), stdin=url_file, stdout=d / "out.log")
                if not child.wait(timeout):
                    child.kill()
                    raise BenchError(f"{label} still running after {timeout:.0f} s (killed)")
                wall, cpu = child.t_exit - child.t_spawn, child.cpu
                final = server.stop()
            finally:
                if server.final is None:
                    server.child.kill()
            problems = []
            if child.status != 0:
                problems.append(f"exit status {child.status}")
            if final["requests"] != calls or final["unique_keys"] != calls:
                problems.append(f"server counted {final['requests']} requests / {final['unique_keys']} sessions, "
                                f"expected {calls}")
            if problems:
                raise BenchError("; ".join(problems))
            scale = n / calls
            row = {"wall_s": wall * scale, "cpu_s": cpu * scale, "measured_calls": calls, "extrapolated": scale != 1,
                   "measured_wall_s": wall, "measured_cpu_s": cpu, "exit": child.status,
                   "server_requests": final["requests"], "peak_rss_mb": child.maxrss_mb,
                   "server_max_late_us": final["max_late_us"]}
            daemon = self.stop_rows.get((n, 1))
            if daemon and daemon["ok"]:
                row["wall_vs_daemon"] = row["wall_s"] / daemon["wall_s"]
                row["cpu_vs_daemon"] = row["cpu_s"] / daemon["cpu_stop_s"] if daemon["cpu_stop_s"] else None
            row["ratio"] = row["wall_s"] / (n * LATENCY_MS / 1000 if peer == "seq" else ideal_s(n))
            return row

        return self.attempt("peers", f"{label} N={n:,}", run, peer=peer, n=n, calls=n)

    # ------------------------------------------------------------------ 3. idle + lifecycle

    def idle(self, n, window):
        """Two daemons with n sessions each, idle side by side: watchdog off and WATCHDOG_USEC=20 s."""
        variants = [("watchdog off", None), ("watchdog 20 s", 20_000_000)]
        server = LoadServer(self, tag="ls-idle")
        daemons = []
        try:
            for label, usec in variants:
                d = Daemon(self, "idle" + ("wd" if usec else ""), [("auth", server.url("/user/{session}/endsession"))],
                           watchdog_usec=usec)
                daemons.append((label, usec, d))
                d.start()
                register_bulk(d, "idle" + ("wd" if usec else ""), n, ["auth"], self.args.pipeline)
            time.sleep(2 if not self.quick else 1)  # let the registration's after-effects settle
            settle_threads([d.pid for _, _, d in daemons])
            before = {label: proc_sample(d.pid) for label, _, d in daemons}
            time.sleep(window)
            for label, usec, d in daemons:
                def measure(d=d, label=label, usec=usec):
                    if d.child.wait(0):
                        raise BenchError(f"daemon exited ({d.child.status}) while idle")
                    a, b = before[label], proc_sample(d.pid)
                    with open(f"/proc/{d.pid}/smaps_rollup") as f:  # after the window: reading it takes the mm lock
                        pss = sum(int(line.split()[1]) for line in f if line.startswith("Pss:"))
                    dt = b["t"] - a["t"]
                    delta = thread_delta(a, b)
                    # A thread that ended in the window woke at least once to end: counted so.
                    switches = delta["vcsw"] + delta["nvcsw"] + delta["threads_ended"]
                    return {"window_s": dt, "cpu_ms": (b["ticks"] - a["ticks"]) * 1000 / CLK_TCK,
                            "cpu_sched_ms": delta["sched_ns"] / 1e6,
                            "cpu_percent": delta["sched_ns"] / 1e9 / dt * 100,
                            "wakeups_per_s": switches / dt, "context_switches": switches,
                            "voluntary_switches": delta["vcsw"], "nonvoluntary_switches": delta["nvcsw"],
                            "threads_ended": delta["threads_ended"],
                            "watchdog_pings": d.notify.count("WATCHDOG=1", a["t"], b["t"]),
                            "expected_wakeups_per_s": (2e6 / usec) if usec else 0.0,
                            "rss_mb": b.get("VmRSS", 0) / 1024.0, "threads": b["threads"],
                            "rss_anon_mb": b.get("RssAnon", 0) / 1024.0, "rss_file_mb": b.get("RssFile", 0) / 1024.0,
                            "pss_mb": pss / 1024.0,
                            "sessions": n}
                self.attempt("idle", f"idle {n:,} sessions, {label}", measure)
        except BenchError as e:
            self.add({"scenario": "idle", "name": f"idle {n:,} sessions", "ok": False, "error": str(e)})
        finally:
            for _, _, d in daemons:
                d.kill()
            server.child.kill()

    def lifecycle(self, stored_n):
        runs = max(3, self.args.repeat)  # cheap, noise-sensitive: always take a median of ≥ 3

        def empty():
            ready, exits = [], []
            for i in range(runs):
                d = Daemon(self, f"empty{i}", [("auth", f"http://{HOST}:9/user/{{session}}/endsession")])
                try:
                    ready.append(d.start())
                    r = d.stop(timeout=30)
                finally:
                    d.kill()
                if r["exit"] != 0:
                    raise BenchError(f"exit status {r['exit']} with 0 sessions")
                exits.append(r["wall_s"])
            return ready, exits

        ready0, exit0 = [], []

        def ready_empty():
            nonlocal ready0, exit0
            ready0, exit0 = empty()
            return {"ms": median(ready0) * 1000, "runs_ms": [round(x * 1000, 2) for x in ready0], "target_ms": 50}

        row = self.attempt("lifecycle", "start → READY, 0 sessions", ready_empty)
        if row["ok"]:
            self.add({"scenario": "lifecycle", "name": "SIGTERM → exit, 0 sessions", "ok": True, "error": None,
                      "ms": median(exit0) * 1000, "runs_ms": [round(x * 1000, 2) for x in exit0], "target_ms": 20})

        def one_session():
            walls = []
            for i in range(runs):
                server = LoadServer(self, tag=f"ls-one{i}")
                d = Daemon(self, f"one{i}", [("auth", server.url("/user/{session}/endsession"))])
                try:
                    d.start()
                    register_bulk(d, f"one{i}", 1, ["auth"], 1)
                    r = d.stop(timeout=30)
                    final = server.stop()
                finally:
                    d.kill()
                    server.child.kill()
                if r["exit"] != 0 or final["requests"] != 1:
                    raise BenchError(f"exit status {r['exit']}, server counted {final['requests']} (expected 0, 1)")
                walls.append(r["wall_s"])
            return {"ms": median(walls) * 1000, "runs_ms": [round(x * 1000, 2) for x in walls],
                    "target_ms": LATENCY_MS + 30}

        self.attempt("lifecycle", "SIGTERM → exit, 1 session", one_session)

        def ready_stored():
            # A copy of the state of the stop run with stored_n sessions (taken just before its
            # SIGTERM), else register stored_n now and SIGKILL: the store keeps them.
            server = LoadServer(self, tag="ls-stored")
            endpoint = [("auth", server.url("/user/{session}/endsession"))]
            try:
                if self.state_snapshot and self.state_snapshot[0] == stored_n:
                    state, source = self.state_snapshot[1], "copy of the stop run's store"
                else:
                    seed = Daemon(self, f"seed{stored_n}", endpoint)
                    try:
                        seed.start()
                        register_bulk(seed, f"stored{stored_n}", stored_n, ["auth"], self.args.pipeline)
                    finally:
                        seed.kill()
                    state, source = seed.state_dir, "registered, then SIGKILL"
                times, rss, start_calls = [], [], 0
                for i in range(runs):
                    d = Daemon(self, f"stored{stored_n}-{i}", endpoint, state_dir=state)
                    try:
                        times.append(d.start())
                        time.sleep(0.5)
                        rss.append(proc_sample(d.pid).get("VmRSS", 0) / 1024.0)
                        count = stored_count(d) if i == 0 else stored_n
                    finally:
                        d.kill()
                    if count != stored_n:
                        raise BenchError(f"the restarted daemon holds {count} sessions, expected {stored_n}")
                start_calls = server.stop()["requests"]
                if start_calls:
                    raise BenchError(f"the restarted daemons made {start_calls} calls at start for sessions "
                                     "no stop run had tried")
            finally:
                server.child.kill()
            return {"ms": median(times) * 1000, "runs_ms": [round(x * 1000, 2) for x in times],
                    "target_ms": 500 if stored_n >= 100000 else None, "rss_mb": median(rss), "source": source,
                    "calls_at_start": start_calls}

        self.attempt("lifecycle", f"start → READY, {stored_n:,} stored", ready_stored)

    # ------------------------------------------------------------------ 4. registration

    def registration(self, duration):
        server = LoadServer(self, tag="ls-reg")
        d = Daemon(self, "reg", [("auth", server.url("/user/{session}/endsession"))])
        acked = 0
        try:
            d.start()
            endpoint_json = json.dumps(["auth"])

            def sequential():
                nonlocal acked
                n = 0
                with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
                    s.settimeout(10)
                    s.connect(str(d.control))
                    f = s.makefile("rb")
                    t0 = time.monotonic()
                    while time.monotonic() - t0 < duration and n < 1_000_000:
                        s.sendall(register_line(f"seq-{n}", endpoint_json))
                        error = check_reply(f.readline())
                        if error:
                            raise BenchError(f"registration {n} refused: {error}")
                        n += 1
                    elapsed = time.monotonic() - t0
                acked += n
                return {"clients": 1, "registrations": n, "seconds": elapsed, "per_s": n / elapsed}

            async def concurrent(clients):
                counts = [0] * clients
                t_end = time.monotonic() + duration

                async def client(c):
                    reader, writer = await asyncio.open_unix_connection(str(d.control))
                    try:
                        while time.monotonic() < t_end and counts[c] < 1_000_000:
                            writer.write(register_line(f"c{c}-{counts[c]}", endpoint_json))
                            error = check_reply(await reader.readline())
                            if error:
                                raise BenchError(f"registration refused: {error}")
                            counts[c] += 1
                    finally:
                        writer.close()

                t0 = time.monotonic()
                await asyncio.wait_for(asyncio.gather(*(client(c) for c in range(clients))), duration + 30)
                return sum(counts), time.monotonic() - t0

            def parallel16():
                nonlocal acked
                n, elapsed = asyncio.run(concurrent(16))
                acked += n
                return {"clients": 16, "registrations": n, "seconds": elapsed, "per_s": n / elapsed}

            self.attempt("register", "1 client, one at a time", sequential)
            self.attempt("register", "16 clients, one at a time each", parallel16)

            def durable():
                # Every acknowledged registration must still be there after SIGKILL + restart.
                d.kill()
                again = Daemon(self, "reg-again", [("auth", server.url("/user/{session}/endsession"))],
                               state_dir=d.state_dir)
                try:
                    again.start()
                    count = stored_count(again)
                finally:
                    again.kill()
                if count != acked:
                    raise BenchError(f"after SIGKILL and restart the daemon holds {count}, {acked} were acknowledged")
                return {"registrations": count}

            self.attempt("register", "acknowledged = stored after kill", durable)
            calls = server.stop()["requests"]
            if calls:
                self.add({"scenario": "register", "name": "no calls without a stop run", "ok": False,
                          "error": f"server counted {calls} requests"})
        except BenchError as e:
            self.add({"scenario": "register", "name": "registration", "ok": False, "error": str(e)})
        finally:
            d.kill()
            server.child.kill()

    # ------------------------------------------------------------------ driver

    @property
    def snapshot_n(self):
        return self.stored_n if "lifecycle" in self.only else None

    def run(self):
        a = self.args
        # --quick checks the functional side only: no callgrind run (a measurement, and slow).
        self.only = set(a.only.split(",")) if a.only else DEFAULT_SCENARIOS - ({"cpu", "syscalls"} if self.quick else set())
        sizes = [1, 100, 1000] if self.quick else [1, 100, 1000, 10000, 100000]
        if a.sizes:
            sizes = [int(x) for x in a.sizes.split(",")]
        self.stored_n = 1000 if self.quick else 100000
        if "stop" in self.only:
            for n in sizes:
                self.stop_run(n)
            if not a.sizes:
                self.stop_run(1000, 3)
        if "peers" in self.only:
            sizes_peers = [100] if self.quick else [1000, 10000]
            cap = 20 if self.quick else 200
            for n in sizes_peers:
                if "stop" not in self.only and (n, 1) not in self.stop_rows:
                    self.stop_run(n)  # the daemon figure the ratios refer to
                for peer in ("seq", "xargs", "python", "parallel"):
                    self.peer_run(peer, n, cap=cap if peer == "seq" else None)
            if not self.quick and not a.no_peers_100k:
                for peer in ("python", "parallel"):
                    self.peer_run(peer, 100000)
        if "idle" in self.only:
            self.idle(1000 if self.quick else 10000, 5 if self.quick else 60)
        if "lifecycle" in self.only:
            self.lifecycle(self.stored_n)
        if "register" in self.only:
            self.registration(2 if self.quick else 10)
        network = self.only & NETWORK_SCENARIOS
        if network:
            import network_bench  # noqa: PLC0415 — needs root, ip, iptables and nginx only when asked for
            try:
                network_bench.run(self, network)
            except BenchError as e:
                self.add({"scenario": "origins", "name": "network scenarios", "ok": False, "error": str(e)})


# ---------------------------------------------------------------------------- reporting

def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def machine_info(daemon):
    info = {"nproc": os.cpu_count(), "kernel": platform.release(), "python": platform.python_version(),
            "loadavg_before": loadavg()}
    try:
        info["affinity_cpus"] = len(os.sched_getaffinity(0))
    except AttributeError:
        pass
    with open("/proc/cpuinfo") as f:
        for line in f:
            if line.startswith("model name"):
                info["cpu_model"] = line.split(":", 1)[1].strip()
                break
    with open("/proc/meminfo") as f:
        for line in f:
            if line.startswith("MemTotal:"):
                info["memory_mb"] = int(line.split()[1]) // 1024
    try:
        info["curl"] = subprocess.run(["curl", "--version"], capture_output=True, text=True, timeout=10).stdout.split("\n")[0]
        info["git_commit"] = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True,
                                            text=True, timeout=10).stdout.strip()
        info["daemon_version"] = subprocess.run([str(daemon), "--version"], capture_output=True, text=True,
                                                timeout=10).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pass
    return info


def fmt(value, spec=".3f", missing="—"):
    if value is None:
        return missing
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return format(value, spec)
    return str(value)


SECTIONS = [
    ("stop", f"Stop runs (SIGTERM → exit; latency {LATENCY_MS} ms, MaxConcurrentRequests {CONCURRENCY})", [
        ("run", lambda r: r["name"], "<"), ("calls", lambda r: fmt(r.get("calls"), ",d"), ">"),
        ("wall s", lambda r: fmt(r.get("wall_s")), ">"), ("ideal s", lambda r: fmt(r.get("ideal_s")), ">"),
        ("× ideal", lambda r: fmt(r.get("ratio"), ".2f"), ">"),
        ("1st call ms", lambda r: fmt(r.get("first_call_ms"), ".1f"), ">"),
        ("server late ms", lambda r: fmt(r.get("server_max_late_us") and r["server_max_late_us"] / 1000, ".1f"), ">"),
        ("CPU s (stop)", lambda r: fmt(r.get("cpu_stop_s")), ">"),
        ("CPU s (all)", lambda r: fmt(r.get("cpu_total_s")), ">"),
        ("peak RSS MB", lambda r: fmt(r.get("peak_rss_mb"), ".1f"), ">"),
        ("register s", lambda r: fmt(r.get("register_s"), ".2f"), ">"),
        ("exit", lambda r: fmt(r.get("exit"), "d"), ">"),
        ("server count", lambda r: fmt(r.get("server_requests"), ",d"), ">")]),
    ("peers", "Peers: the same calls without the daemon (same load server)", [
        ("run", lambda r: r["name"], "<"),
        ("wall s", lambda r: fmt(r.get("wall_s")) + ("*" if r.get("extrapolated") else ""), ">"),
        ("CPU s", lambda r: fmt(r.get("cpu_s")) + ("*" if r.get("extrapolated") else ""), ">"),
        ("wall ÷ daemon", lambda r: fmt(r.get("wall_vs_daemon"), ".2f"), ">"),
        ("CPU ÷ daemon", lambda r: fmt(r.get("cpu_vs_daemon"), ".2f"), ">"),
        ("× ideal", lambda r: fmt(r.get("ratio"), ".2f"), ">"),
        ("peak RSS MB", lambda r: fmt(r.get("peak_rss_mb"), ".1f"), ">"),
        ("server late ms", lambda r: fmt(r.get("server_max_late_us") and r["server_max_late_us"] / 1000, ".1f"), ">"),
        ("exit", lambda r: fmt(r.get("exit"), "d"), ">"),
        ("server count", lambda r: fmt(r.get("server_requests"), ",d"), ">")]),
    ("idle", "Idle daemon", [
        ("run", lambda r: r["name"], "<"), ("window s", lambda r: fmt(r.get("window_s"), ".1f"), ">"),
        ("CPU ms (stat)", lambda r: fmt(r.get("cpu_ms"), ".0f"), ">"),
        ("CPU ms (sched)", lambda r: fmt(r.get("cpu_sched_ms"), ".2f"), ">"),
        ("wake-ups/s", lambda r: fmt(r.get("wakeups_per_s"), ".3f"), ">"),
        ("vol/nonvol", lambda r: f"{r.get('voluntary_switches', 0)}/{r.get('nonvoluntary_switches', 0)}", ">"),
        ("threads ended", lambda r: fmt(r.get("threads_ended"), "d"), ">"),
        ("expected/s", lambda r: fmt(r.get("expected_wakeups_per_s"), ".2f"), ">"),
        ("WATCHDOG=1", lambda r: fmt(r.get("watchdog_pings"), "d"), ">"),
        ("RSS MB", lambda r: fmt(r.get("rss_mb"), ".1f"), ">"),
        ("anon MB", lambda r: fmt(r.get("rss_anon_mb"), ".1f"), ">"),
        ("file MB", lambda r: fmt(r.get("rss_file_mb"), ".1f"), ">"),
        ("PSS MB", lambda r: fmt(r.get("pss_mb"), ".1f"), ">"),
        ("threads", lambda r: fmt(r.get("threads"), "d"), ">")]),
    ("lifecycle", "Start and stop latency (median)", [
        ("run", lambda r: r["name"], "<"), ("ms", lambda r: fmt(r.get("ms"), ".1f"), ">"),
        ("runs ms", lambda r: ", ".join(f"{x:.1f}" for x in r.get("runs_ms") or []), "<"),
        ("target ms", lambda r: fmt(r.get("target_ms"), "d"), ">"),
        ("RSS MB", lambda r: fmt(r.get("rss_mb"), ".1f"), ">")]),
    ("register", "Durable registrations through the control socket", [
        ("run", lambda r: r["name"], "<"), ("clients", lambda r: fmt(r.get("clients"), "d"), ">"),
        ("registrations", lambda r: fmt(r.get("registrations"), ",d"), ">"),
        ("seconds", lambda r: fmt(r.get("seconds"), ".2f"), ">"),
        ("per s", lambda r: fmt(r.get("per_s"), ",.0f"), ">")]),
]


def network_columns():
    return [
        ("run", lambda r: r["name"], "<"), ("calls", lambda r: fmt(r.get("calls"), ",d"), ">"),
        ("wall s", lambda r: fmt(r.get("wall_s")), ">"), ("ideal s", lambda r: fmt(r.get("ideal_s"), ".2f"), ">"),
        ("× ideal", lambda r: fmt(r.get("ratio"), ".2f"), ">"),
        ("÷ curl", lambda r: fmt(r.get("wall_vs_curl"), ".2f"), ">"),
        ("CPU s", lambda r: fmt(r.get("cpu_s")), ">"),
        ("peak RSS MB", lambda r: fmt(r.get("peak_rss_mb"), ".1f"), ">"),
        ("conns", lambda r: fmt(r.get("connections"), ",d"), ">"),
        ("accepted", lambda r: fmt(r.get("connections_accepted"), ",d"), ">"),
        ("TLS full", lambda r: fmt(r.get("tls_full"), ",d"), ">"),
        ("TLS resumed", lambda r: fmt(r.get("tls_resumed"), ",d"), ">"),
        ("h2 requests", lambda r: fmt(r.get("http2_requests"), ",d"), ">"),
        ("nginx CPU s", lambda r: fmt(r.get("server_cpu_s"), ".2f"), ">"),
        ("exit", lambda r: fmt(r.get("exit"), "d"), ">")]


SECTIONS += [
    ("origins", f"Origins: nginx, {CONCURRENCY} in flight, 50 ms round trip (medians)", network_columns()),
    ("http2", "HTTP/2: nginx offering h2 and http/1.1 by ALPN (medians)", network_columns()),
    ("memory", "Peak RSS of a long run (HTTP, 1 origin)", [
        ("run", lambda r: r["name"], "<"), ("wall s", lambda r: fmt(r.get("wall_s")), ">"),
        ("CPU s", lambda r: fmt(r.get("cpu_s")), ">"),
        ("peak RSS MB", lambda r: fmt(r.get("peak_rss_mb"), ".1f"), ">"),
        ("× floor", lambda r: fmt(r.get("rss_vs_floor"), ".2f"), ">"),
        # MemorySampler (smaps_rollup every 20 ms): the sampled peak, anonymous + file-backed.
        ("sampled peak MB", lambda r: fmt(r.get("sampled_peak_rss_mb"), ".1f"), ">"),
        ("anon MB", lambda r: fmt(r.get("peak_anon_mb"), ".1f"), ">"),
        ("file MB", lambda r: fmt(r.get("peak_file_mb"), ".1f"), ">"),
        ("before SIGTERM MB (anon)", lambda r: fmt(r.get("rss_before_sigterm_mb"), ".1f")
         + (f" ({r['anon_before_sigterm_mb']:.1f})" if r.get("anon_before_sigterm_mb") is not None else ""), ">"),
        ("anon +100 ms MB", lambda r: fmt(r.get("anon_growth_100ms_mb"), "+.1f"), ">")]),
    ("cpu", "User instructions (callgrind; the daemon's stop run, the floor's transfer loop)", [
        ("run", lambda r: r["name"], "<"), ("instructions", lambda r: fmt(r.get("instructions"), ",d"), ">"),
        ("per call", lambda r: fmt(r.get("per_call"), ",.0f"), ">"),
        ("× floor", lambda r: fmt(r.get("vs_floor"), ".2f"), ">")]),
    ("syscalls", "System calls of the stop run (strace -c -f; HTTP, 1 origin)", [
        ("run", lambda r: r["name"], "<"), ("system calls", lambda r: fmt(r.get("syscalls"), ",d"), ">"),
        ("per call", lambda r: fmt(r.get("per_call"), ",.1f"), ">"),
        ("top", lambda r: ", ".join(f"{name} {n:,}" for n, name in r.get("top", [])[:6]), "<")]),
]


def section_tables(rows):
    """[(title, headers, aligns, [cells…] per row, [error or None per row])]"""
    out = []
    for scenario, title, cols in SECTIONS:
        mine = [r for r in rows if r["scenario"] == scenario]
        if not mine:
            continue
        headers = [c[0] for c in cols] + ["status"]
        cells = []
        for r in mine:
            if r["ok"]:
                cells.append([c[1](r) for c in cols] + ["ok"])
            else:
                cells.append([r["name"]] + ["—"] * (len(cols) - 1) + ["ERROR"])
        out.append((title, headers, [c[2] for c in cols] + ["<"], cells, [r.get("error") for r in mine]))
    return out


def evaluate_targets(rows):
    def find(scenario, name):
        return next((r for r in rows if r["scenario"] == scenario and r["name"] == name and r["ok"]), None)

    targets = []

    def target(text, measured, met, shown):
        targets.append({"target": text, "measured": measured, "met": met, "shown": shown})

    s10k = find("stop", "N=10,000")
    if s10k:
        target("10,000 sessions: stop run ≤ 1.15 × ideal", s10k["ratio"], s10k["ratio"] <= 1.15,
               f"{s10k['ratio']:.2f} × ideal ({s10k['wall_s']:.3f} s vs {s10k['ideal_s']:.2f} s)")
        target("10,000 sessions: ≤ 1.0 s CPU", s10k["cpu_stop_s"], s10k["cpu_stop_s"] <= 1.0,
               f"{s10k['cpu_stop_s']:.3f} s (stop run; {s10k['cpu_total_s']:.3f} s whole process)")
        target("10,000 sessions: peak RSS ≤ 64 MB", s10k["peak_rss_mb"], s10k["peak_rss_mb"] <= 64,
               f"{s10k['peak_rss_mb']:.1f} MB")
    xargs = find("peers", "xargs -P 256 curl N=10,000")
    if s10k and xargs:
        speedup = xargs["wall_s"] / s10k["wall_s"]
        target("10,000 sessions: ≥ 5 × faster than xargs -P 256 curl", speedup, speedup >= 5,
               f"{speedup:.1f} × ({xargs['wall_s']:.2f} s vs {s10k['wall_s']:.3f} s)")
    s100k, s1 = find("stop", "N=100,000"), find("stop", "N=1")
    if s100k and s1:
        per = (s100k["peak_rss_mb"] - s1["peak_rss_mb"]) * 1024 * 1024 / (100000 - 1)
        s10 = find("stop", "N=10,000")
        per10 = (s10["peak_rss_mb"] - s1["peak_rss_mb"]) * 1024 * 1024 / (10000 - 1) if s10 else None
        linear = per10 is None or per <= max(per10 * 1.5, per10 + 256)
        rest = (s100k["rss_before_stop_mb"] - s1["rss_before_stop_mb"]) * 1024 * 1024 / (100000 - 1)
        target("100,000 sessions complete, memory linear (bytes/session)", per, s100k["ok"] and linear,
               f"{per:,.0f} B/session of peak RSS at 100k" + (f" ({per10:,.0f} at 10k)" if per10 is not None else "")
               + f", {rest:,.0f} B/session stored (RSS before SIGTERM); {s100k['wall_s']:.2f} s, "
               + f"{s100k['ratio']:.2f} × ideal")
    for name, limit in (("SIGTERM → exit, 1 session", LATENCY_MS + 30), ("SIGTERM → exit, 0 sessions", 20),
                        ("start → READY, 0 sessions", 50), ("start → READY, 100,000 stored", 500)):
        r = find("lifecycle", name)
        if r:
            target(f"{name} ≤ {limit} ms", r["ms"], r["ms"] <= limit, f"{r['ms']:.1f} ms")
    for r in rows:
        if r["scenario"] == "idle" and r["ok"]:
            extra = r["wakeups_per_s"] - r["expected_wakeups_per_s"]
            target(f"{r['name']}: 0 wake-ups/s besides the watchdog", r["wakeups_per_s"],
                   extra <= 0.05, f"{r['wakeups_per_s']:.3f}/s (watchdog: {r['expected_wakeups_per_s']:.2f}/s)")
            target(f"{r['name']}: RSS ≤ 16 MB", r["rss_mb"], r["rss_mb"] <= 16, f"{r['rss_mb']:.1f} MB")
    evaluate_network_targets(rows, target)
    r = find("register", "16 clients, one at a time each")
    if r:
        target("≥ 2,000 durable registrations/s from 16 clients", r["per_s"], r["per_s"] >= 2000,
               f"{r['per_s']:,.0f}/s")
    return targets


def evaluate_network_targets(rows, target):
    """Issue 10's targets, for the daemon's rows (not the baseline's). The wall and CPU targets are
    absolute figures: each names what the C floor measured in the same run, which tells a machine
    that keeps every client from them from a daemon that falls short of the floor."""
    daemon = "session-cleanup"
    floors = {(r["scenario"], r["config"]): r for r in rows
              if r.get("client") == FLOOR_CLIENT and r["ok"] and r["scenario"] in ("origins", "http2")}
    for r in rows:
        if r["scenario"] not in ("origins", "http2") or r.get("client") != daemon or not r["ok"]:
            continue
        name = r["config"]
        floor = floors.get((r["scenario"], name))
        target(f"{name}: wall ≤ 1.10 × ideal", r["ratio"], r["ratio"] <= 1.10,
               f"{r['ratio']:.2f} × ({r['wall_s']:.3f} s vs {r['ideal_s']:.2f} s)"
               + (f"; C floor {floor['ratio']:.2f} × in this run" if floor else ""))
        if r.get("wall_vs_curl") is not None:
            target(f"{name}: wall ≤ curl --parallel", r["wall_vs_curl"], r["wall_vs_curl"] <= 1.0,
                   f"{r['wall_vs_curl']:.2f} × curl")
        target(f"{name}: connections ≤ {r['connection_limit']:,.0f}", r["connections_accepted"],
               r["connections_accepted"] <= r["connection_limit"],
               f"{r['connections_accepted']:,} accepted, {r['connections']:,} with requests")
        if r["mode"] != "http":
            target(f"{name}: TLS handshakes = connections", r["tls_handshakes"],
                   r["tls_handshakes"] == r["connections"],
                   f"{r['tls_handshakes']:,} handshakes ({r['tls_full']:,} full, {r['tls_resumed']:,} resumed) "
                   f"on {r['connections']:,} connections")
        if r["scenario"] == "origins" and r["mode"] == "http" and r["origins"] == 1 and r["calls"] >= 10000:
            target(f"{name}: CPU ≤ 0.5 s", r["cpu_s"], r["cpu_s"] <= 0.5, f"{r['cpu_s']:.3f} s"
                   + (f"; C floor {floor['cpu_s']:.3f} s in this run" if floor else ""))
    for r in rows:
        if r.get("client") != daemon or not r["ok"]:
            continue
        if r["scenario"] == "cpu" and r.get("vs_floor") is not None:
            target(f"{r['name']}: instructions per call ≤ 1.3 × the C floor", r["vs_floor"], r["vs_floor"] <= 1.3,
                   f"{r['per_call']:,.0f} per call = {r['vs_floor']:.2f} × floor")
        if r["scenario"] == "memory" and r.get("rss_vs_floor") is not None:
            target(f"{r['name']}: peak RSS ≤ 1.5 × the C floor", r["rss_vs_floor"], r["rss_vs_floor"] <= 1.5,
                   f"{r['peak_rss_mb']:.1f} MB = {r['rss_vs_floor']:.2f} × floor")


def print_report(rows, targets):
    for title, headers, aligns, cells, errors in section_tables(rows):
        widths = [max(len(h), *(len(c[i]) for c in cells)) for i, h in enumerate(headers)]
        line = lambda vals: "  ".join(format(v, a + str(w)) for v, a, w in zip(vals, aligns, widths))
        print(f"\n{title}")
        print(line(headers))
        print("  ".join("-" * w for w in widths))
        for c, e in zip(cells, errors):
            print(line(c))
            if e:
                print(f"    ERROR: {e}")
    if any(r.get("extrapolated") for r in rows):
        print("\n* extrapolated linearly from the calls actually made (see measured_calls in the JSON)")
    if targets:
        print("\nTargets")
        for t in targets:
            print(f"  {'met   ' if t['met'] else 'MISSED'}  {t['target']}: {t['shown']}")


def comparison_markdown(rows):
    """One line per network configuration, the clients side by side: wall s (× ideal), and
    connections (TLS full handshakes + resumed). Empty when there are no such rows."""
    configs = []
    for r in rows:
        if r["scenario"] in ("origins", "http2") and r.get("config") and r["config"] not in configs:
            configs.append(r["config"])
    if not configs:
        return []
    clients = []
    for r in rows:
        if r.get("config") and r.get("client") and r["client"] not in clients:
            clients.append(r["client"])
    out = ["### Side by side: wall s (× ideal) · connections (TLS full + resumed)\n",
           "| configuration | ideal s | " + " | ".join(clients) + " |",
           "|---|---:|" + "---:|" * len(clients)]
    for config in configs:
        cells, ideal = [], None
        for client in clients:
            r = next((x for x in rows if x.get("config") == config and x.get("client") == client), None)
            if r is None:
                cells.append("—")
            elif not r["ok"]:
                cells.append("ERROR")
            else:
                ideal = r["ideal_s"]
                tls = f" ({r['tls_full']:,} + {r['tls_resumed']:,})" if r.get("mode") != "http" else ""
                cells.append(f"{r['wall_s']:.2f} ({r['ratio']:.2f}) · {r['connections_accepted']:,}{tls}")
        out.append(f"| {config} | {fmt(ideal, '.2f')} | " + " | ".join(cells) + " |")
    out.append("")
    return out


def markdown_report(rows, targets):
    out = comparison_markdown(rows)
    for title, headers, aligns, cells, errors in section_tables(rows):
        out.append(f"### {title}\n")
        out.append("| " + " | ".join(headers) + " |")
        out.append("|" + "|".join("---:" if a == ">" else "---" for a in aligns) + "|")
        for c, e in zip(cells, errors):
            out.append("| " + " | ".join(c) + " |")
            if e:
                out.append(f"| ERROR: {e} |" + " |" * (len(headers) - 1))
        out.append("")
    if any(r.get("extrapolated") for r in rows):
        out.append("\\* extrapolated linearly from the calls actually made.\n")
    if targets:
        out.append("### Targets\n")
        out.append("| target | measured | |")
        out.append("|---|---|---|")
        for t in targets:
            out.append(f"| {t['target']} | {t['shown']} | {'met' if t['met'] else '**missed**'} |")
        out.append("")
    return "\n".join(out)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="CI smoke test: small sizes, short windows (< 90 s)")
    p.add_argument("--json", default=str(REPO / "bench-results" / "latest.json"), help="where to write the figures")
    p.add_argument("--markdown", help="also write the tables as Markdown here")
    p.add_argument("--only", help="comma-separated: stop, peers, idle, lifecycle, register, origins, http2, "
                                  "cpu, memory, syscalls")
    p.add_argument("--sizes", help="stop-run sizes instead of the default ones, e.g. 1,100 (no 3-endpoint run)")
    p.add_argument("--origins", help="origin counts for the origins scenario instead of 1,2,3,100,1000, e.g. 1")
    p.add_argument("--modes", help="http, https or both (the default) for the origins scenario")
    p.add_argument("--daemon-http-version", choices=["auto", "1.1", "2"],
                   help="the daemon's HTTPVersion= in the origins scenario (default: none set, its own default)")
    p.add_argument("--daemon-warm", action="store_true",
                   help="origins scenario: also the daemon at its second start, beside its first: it has run "
                        "once before against the same servers (one session per origin, its state directory "
                        "kept), so what it remembers applies, as at a machine's second shutdown")
    p.add_argument("--repeat", type=int, default=1, help="run each stop run K times, report the median")
    p.add_argument("--daemon", default=os.environ.get("SESSION_CLEANUP_BIN", ".build/release/session-cleanup"),
                   help="the session-cleanup binary (default: $SESSION_CLEANUP_BIN or bench.sh's build)")
    p.add_argument("--loadserver", default=str(REPO / "bench-results" / "bin" / "loadserver"),
                   help="the loadserver binary (built with cc -O2 if missing)")
    p.add_argument("--netdelay", default=str(REPO / "bench-results" / "bin" / "netdelay"),
                   help="the NFQUEUE delayer (Benchmarks/NetDelay, built by bench.sh)")
    p.add_argument("--floor", default=str(REPO / "bench-results" / "bin" / "floor"),
                   help="the C libcurl-multi floor (Benchmarks/Floor, built by bench.sh)")
    p.add_argument("--baseline-daemon", help="a second session-cleanup binary measured beside the first "
                                             "in the network scenarios (\"before\")")
    p.add_argument("--pipeline", type=int, default=DEFAULT_PIPELINE,
                   help="requests in flight per control connection when registering in bulk (1: none)")
    p.add_argument("--no-peers-100k", action="store_true", help="skip the peers at N = 100,000")
    p.add_argument("--workdir", default="/tmp", help="parent of the temporary work directory")
    p.add_argument("--keep", action="store_true", help="keep the work directory (logs, state, configs)")
    args = p.parse_args()
    args.repeat = max(1, args.repeat)
    known = DEFAULT_SCENARIOS
    if args.only and not set(args.only.split(",")) <= known:
        p.error(f"--only takes {', '.join(sorted(known))}")
    if not Path(args.loadserver).exists():
        Path(args.loadserver).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cc", "-O2", "-o", args.loadserver, str(HERE / "LoadServer" / "loadserver.c")], check=True)
    if not os.access(args.daemon, os.X_OK):
        p.error(f"no daemon binary at {args.daemon}: run scripts/bench.sh, or pass --daemon")

    sys.modules.setdefault("bench", sys.modules[__name__])  # network_bench imports this module as `bench`

    def interrupted(signum, _frame):
        raise KeyboardInterrupt(f"signal {signum}")

    signal.signal(signal.SIGTERM, interrupted)
    become_subreaper()
    bench = Bench(args)
    started = datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds")
    info = machine_info(bench.daemon)
    bench.log(f"session-cleanup benchmarks{' (quick)' if args.quick else ''}: {info.get('nproc')} CPUs, "
              f"{info.get('cpu_model')}, work directory {bench.work}")
    try:
        bench.run()
    except KeyboardInterrupt:
        bench.add({"scenario": "suite", "name": "interrupted", "ok": False, "error": "interrupted"})
    finally:
        end_all_children()
    info["loadavg_after"] = loadavg()
    rows, targets = bench.rows, evaluate_targets(bench.rows)
    passed = sum(r["ok"] for r in rows)
    failed = len(rows) - passed
    print_report(rows, targets)
    result = {"schema": 1, "started": started, "duration_s": round(time.monotonic() - bench.t_start, 1),
              "quick": args.quick, "repeat": args.repeat, "machine": info,
              "parameters": {"latency_ms": LATENCY_MS, "concurrency": CONCURRENCY, "pipeline": args.pipeline,
                             "bulk_connections": BULK_CONNECTIONS, "daemon": str(bench.daemon)},
              "results": rows, "targets": targets, "passed": passed, "failed": failed}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")
    if args.markdown:
        Path(args.markdown).write_text(markdown_report(rows, targets))
    if args.keep or failed:
        print(f"\nwork directory kept: {bench.work}")
    else:
        shutil.rmtree(bench.work, ignore_errors=True)
    print(f"\nfigures: {args.json}  ({result['duration_s']} s)")
    print(f"{passed} passed, {failed} failed")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
