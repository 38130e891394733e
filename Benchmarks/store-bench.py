#!/usr/bin/env python3
"""store-bench.py — the session store's figures: memory live vs loaded, and the event loop's
longest stall while the store commits and compacts (Python 3 standard library only).

    python3 Benchmarks/store-bench.py [--daemon PATH] [--only memory,stall]
                                      [--memory-sessions N] [--stall-sessions N] [--churn N]

memory  registers N sessions (default 500,000) through the control socket and reads the
        daemon's VmRSS once it is idle ("live"); then SIGKILLs it, starts it again on the same
        state directory and reads VmRSS once it is ready and idle ("loaded").
stall   registers N sessions (default 100,000), restarts the daemon on them under strace, then
        registers and unregisters --churn more (default 60,000) while a probe process sends
        `status` every millisecond on its own connection. Two figures: the probe's round trips
        (how long the loop could not answer: on a busy machine they include time the loop thread
        waited for a CPU), and, from strace (-f --seccomp-bpf, only calls that can wait for the
        disk), the longest such call on the loop thread and the time it spent in fdatasync/fsync.
        Compactions are counted from the snapshot file being replaced.

The state directory lives under --work (default: a new directory in /var/tmp, a real disk, so
fdatasync costs what it costs). The daemon's stderr (its journal lines outside systemd) goes to
/dev/null, as journald would take them off the disk (STORE_BENCH_STDERR=file keeps them). The
endpoint points at a closed port on 127.0.0.1; nothing is ever called (the daemon is stopped
with SIGKILL). Only processes this script started are signalled.
"""
import argparse
import json
import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent


def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


class Daemon:
    def __init__(self, binary, work):
        self.binary, self.work = binary, Path(work)
        self.state = self.work / "state"
        self.run = self.work / "run"
        self.socket = self.run / "control.sock"
        self.config = self.work / "session-cleanup.conf"
        if not self.config.exists():
            self.config.write_text(
                "[Stop]\nBudgetSec=2s\n[Endpoint]\nName=auth\n"
                f"URL=http://127.0.0.1:{closed_port()}/user/{{session}}/endsession\n")
        self.proc = None
        self.strace_log = None

    def daemon_pid(self):
        """The daemon's pid (the strace child's when traced)."""
        if not self.strace_log:
            return self.proc.pid
        for _ in range(100):
            for child in Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children").read_text().split():
                return int(child)
            time.sleep(0.05)
        raise RuntimeError("no traced daemon")

    def start(self, timeout=120, extra_env=None):
        env = {"PATH": "/usr/bin:/bin", "STATE_DIRECTORY": str(self.state), "RUNTIME_DIRECTORY": str(self.run)}
        env.update(extra_env or {})
        # The daemon's journal lines go to stderr outside systemd; into a file on the store's own
        # disk, each write could wait for the filesystem journal that the store's fdatasync forces,
        # which is not what the loop does under journald. /dev/null keeps that out of the figures.
        self.stderr = open(os.devnull if os.environ.get("STORE_BENCH_STDERR") != "file" else self.work / "daemon.stderr", "ab")
        command = [self.binary, "daemon", "--config", str(self.config)]
        if self.strace_log:
            # Only the calls on files that can wait for the disk stop the daemon (seccomp-bpf; socket
        # and pipe reads and writes are left out), so tracing
            # barely slows it; -T gives each call's duration, the TID tells the loop thread apart.
            command = ["strace", "-f", "--seccomp-bpf", "-T", "-ttt", "-o", str(self.strace_log),
                       "-e", "trace=fdatasync,fsync,pwrite64,pread64,rename,renameat,renameat2,openat,"
                             "fallocate,ftruncate,unlinkat,linkat,flock"] + command
        self.proc = subprocess.Popen(command, env=env, stdout=subprocess.DEVNULL, stderr=self.stderr)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited with {self.proc.returncode}; see {self.work}/daemon.stderr")
            try:
                with Client(self.socket) as c:
                    if c.request({"op": "status"}).get("ok"):
                        return
            except OSError:
                pass
            time.sleep(0.05)
        raise RuntimeError("daemon did not answer status in time")

    def kill(self):
        if self.proc and self.proc.poll() is None:
            os.kill(self.daemon_pid(), signal.SIGKILL)
            self.proc.wait(timeout=30)
        self.stderr.close()

    def rss_kib(self):
        for line in Path(f"/proc/{self.daemon_pid()}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        raise RuntimeError("no VmRSS")

    def idle_rss_kib(self):
        """VmRSS once it stopped changing for a second (the loop is idle)."""
        last, stable_since = self.rss_kib(), time.monotonic()
        while time.monotonic() - stable_since < 1.0:
            time.sleep(0.2)
            now = self.rss_kib()
            if now != last:
                last, stable_since = now, time.monotonic()
        return last


class Client:
    def __init__(self, path):
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.sock.settimeout(60)
        self.sock.connect(str(path))
        self.buffer = b""

    def __enter__(self):
        return self

    def __exit__(self, *args):
        self.sock.close()

    def request(self, obj):
        self.sock.sendall(json.dumps(obj).encode() + b"\n")
        while b"\n" not in self.buffer:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise OSError("connection closed")
            self.buffer += chunk
        line, self.buffer = self.buffer.split(b"\n", 1)
        return json.loads(line)


def run_clients(daemon, count, request, connections=128):
    """Sends request(n) for n in range(count) over `connections` parallel connections, one
    request at a time on each (the daemon answers a registration once it is durable); returns
    the replies by n. Raises if any reply is not ok."""
    replies, errors, lock = {}, [], threading.Lock()

    def worker(index):
        mine = {}
        try:
            with Client(daemon.socket) as c:
                for n in range(index, count, connections):
                    reply = c.request(request(n))
                    if not reply.get("ok"):
                        raise RuntimeError(f"request failed: {reply}")
                    mine[n] = reply
        except Exception as error:  # noqa: BLE001 - reported below
            with lock:
                errors.append(str(error))
        with lock:
            replies.update(mine)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(connections)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise RuntimeError(f"{len(errors)} clients failed, first: {errors[0]}")
    return replies


def register_many(daemon, count, prefix):
    """Registers `count` sessions with 48-byte keys (like bearer tokens); returns their ids."""
    replies = run_clients(daemon, count, lambda n: {
        "op": "register", "key": f"{prefix}-{n:08d}-" + "k" * 32, "endpoints": ["auth"], "label": f"{prefix}{n}"})
    return [replies[n]["id"] for n in range(count)]


def unregister_many(daemon, ids):
    run_clients(daemon, len(ids), lambda n: {"op": "unregister", "id": ids[n]})


def memory(binary, work, sessions):
    daemon = Daemon(binary, work)
    daemon.start()
    started = time.monotonic()
    register_many(daemon, sessions, "m")
    took = time.monotonic() - started
    live = daemon.idle_rss_kib()
    daemon.kill()
    daemon.start(timeout=600, extra_env=json.loads(os.environ.get("STORE_BENCH_LOADED_ENV", "{}")))
    loaded = daemon.idle_rss_kib()
    daemon.kill()
    print(f"memory: {sessions} sessions registered in {took:.1f} s ({sessions / took:.0f}/s)")
    print(f"memory: live   VmRSS {live / 1024:.1f} MiB")
    print(f"memory: loaded VmRSS {loaded / 1024:.1f} MiB (after SIGKILL and a restart on the same store)")
    print(f"memory: loaded / live = {loaded / live:.3f}")
    return {"sessions": sessions, "live_kib": live, "loaded_kib": loaded}


def loop_syscalls(trace, pid, start, end):
    """From an strace -f -T -ttt log: the loop thread's (TID = pid) calls between start and end:
    the longest, and the time it spent in fdatasync/fsync."""
    longest, synced, syncs = (0.0, ""), 0.0, 0
    for line in Path(trace).read_text().splitlines():
        parts = line.split(None, 2)
        if len(parts) < 3 or not parts[0].isdigit() or int(parts[0]) != pid:
            continue
        try:
            when = float(parts[1])
        except ValueError:
            continue
        if not (start <= when <= end) or not line.endswith(">") or "unfinished" in line:
            continue
        try:
            took = float(line.rsplit("<", 1)[1][:-1])
        except ValueError:
            continue
        rest = parts[2]
        call = rest.split(" resumed>", 1)[0].split("<... ", 1)[-1] if rest.startswith("<...") else rest.split("(", 1)[0]
        if took > longest[0]:
            longest = (took, call)
        if call in ("fdatasync", "fsync"):
            synced += took
            syncs += 1
    return longest, synced, syncs


def stall(binary, work, sessions, churn):
    daemon = Daemon(binary, work)
    daemon.start()
    register_many(daemon, sessions, "s")
    daemon.kill()
    daemon.strace_log = Path(work) / "strace.log"
    daemon.start(timeout=600)
    snapshot = daemon.state / "sessions.snapshot"

    # The probe runs in a process of its own, so that the churn's client threads (and Python's
    # GIL) do not delay it: its round trips then measure the daemon, not this script.
    probe = subprocess.Popen([sys.executable, __file__, "--probe", str(daemon.socket)],
                             stdout=subprocess.PIPE, stdin=subprocess.PIPE, text=True)
    stop = threading.Event()
    compactions = [0]

    def watch_snapshot():
        last = snapshot.stat().st_ino if snapshot.exists() else None
        while not stop.is_set():
            try:
                now = snapshot.stat().st_ino
            except FileNotFoundError:
                now = None
            if now != last:
                compactions[0] += 1
                last = now
            time.sleep(0.005)

    helpers = [threading.Thread(target=watch_snapshot)]
    for t in helpers:
        t.start()
    time.sleep(1.0)
    probe.stdin.write("mark\n")
    probe.stdin.flush()
    started = time.monotonic()
    wall_start = time.time()
    ids = register_many(daemon, churn, "c")
    unregister_many(daemon, ids)
    took = time.monotonic() - started
    time.sleep(2.0)  # let a compaction that the churn started finish
    stop.set()
    for t in helpers:
        t.join()
    out, _ = probe.communicate("stop\n", timeout=30)
    wall_end = time.time()
    pid = daemon.daemon_pid()
    daemon.kill()
    (longest, longest_call), synced, syncs = loop_syscalls(daemon.strace_log, pid, wall_start, wall_end)
    idle, busy = json.loads(out)
    idle_max = max(idle) if idle else 0
    busy.sort()
    p = lambda q: busy[min(len(busy) - 1, int(q * len(busy)))] * 1000  # noqa: E731
    print(f"stall: {sessions} sessions stored; churn of {churn} registrations + {churn} unregistrations "
          f"in {took:.1f} s; {compactions[0]} snapshot replacements seen")
    print(f"stall: status round trip while idle: max {idle_max * 1000:.2f} ms")
    print(f"stall: status round trip during churn ({len(busy)} probes): median {statistics.median(busy) * 1000:.2f} ms, "
          f"p99 {p(0.99):.2f} ms, p99.9 {p(0.999):.2f} ms, max {busy[-1] * 1000:.2f} ms")
    print(f"stall: on the loop thread (strace): longest file call {longest * 1000:.2f} ms ({longest_call or 'none'}); "
          f"{syncs} fdatasync/fsync taking {synced * 1000:.1f} ms in all")
    return {"sessions": sessions, "churn": churn, "compactions": compactions[0], "max_ms": busy[-1] * 1000,
            "loop_longest_call_ms": longest * 1000, "loop_sync_ms": synced * 1000, "loop_syncs": syncs,
            "p99_ms": p(0.99), "median_ms": statistics.median(busy) * 1000}


def run_probe(path):
    """The probe process: `status` every millisecond; round trips before "mark" on stdin are idle,
    after it busy; prints both lists as JSON at "stop"."""
    import selectors
    phases, current = [[], []], 0
    sel = selectors.DefaultSelector()
    sel.register(sys.stdin, selectors.EVENT_READ)
    with Client(path) as c:
        while True:
            for _ in sel.select(timeout=0.001):
                word = sys.stdin.readline().strip()
                if word == "mark":
                    current = 1
                elif word in ("stop", ""):
                    print(json.dumps(phases))
                    return
            t0 = time.monotonic()
            c.request({"op": "status"})
            phases[current].append(time.monotonic() - t0)


def main():
    if len(sys.argv) == 3 and sys.argv[1] == "--probe":
        return run_probe(sys.argv[2])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--daemon", default=str(REPO / ".build/release/session-cleanup"))
    parser.add_argument("--only", default="memory,stall")
    parser.add_argument("--memory-sessions", type=int, default=500_000)
    parser.add_argument("--stall-sessions", type=int, default=100_000)
    parser.add_argument("--churn", type=int, default=60_000)
    parser.add_argument("--work", default=None, help="parent of the scratch directories (default /var/tmp)")
    args = parser.parse_args()
    results = {}
    for scenario in args.only.split(","):
        with tempfile.TemporaryDirectory(prefix=f"store-bench-{scenario}-", dir=args.work or "/var/tmp") as work:
            if scenario == "memory":
                results["memory"] = memory(args.daemon, work, args.memory_sessions)
            elif scenario == "stall":
                results["stall"] = stall(args.daemon, work, args.stall_sessions, args.churn)
            else:
                sys.exit(f"unknown scenario {scenario}")
    print(json.dumps(results))


if __name__ == "__main__":
    main()
