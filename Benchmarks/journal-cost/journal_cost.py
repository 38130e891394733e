#!/usr/bin/env python3
"""journal_cost.py — the CPU the daemon spends per call in a stop run, journal included, for
one or more daemon builds side by side (e.g. before and after a change to the journal).

    python3 Benchmarks/journal-cost/journal_cost.py --daemon NAME=PATH [--daemon NAME=PATH ...]
        [--sessions 10000,100000] [--modes native,stderr] [--outcomes ended,failed] [--repeat 3]
        [--loadserver PATH]

For each daemon, mode and N: a fresh state directory, N sessions registered over the control
socket (pipelined), then SIGTERM; the daemon's user+system CPU from the SIGTERM to its exit
(wait4 rusage minus /proc/PID/stat just before the signal) divided by N, with the stop run's
wall time. Outcome `ended`: the end-session server is Benchmarks/LoadServer (latency 0, so the
run is CPU-bound); `failed`: a port on 127.0.0.1 nobody listens on (every call fails at once:
one journal entry per call, before and after — the cost of the journal mechanism itself).

Modes: `native` — the daemon under Tests/Support/fake_journald.py in a private mount namespace
(a journald stand-in that reads everything at once; needs root), as under systemd: native
entries, or sd_journal_sendv for builds that use it; `stderr` — stderr lines into a file.
Prints one row per measurement (median of --repeat) and the entries the stand-in received.

--callgrind: run each daemon (debug info stripped: valgrind 3.19 rejects Swift's) under
valgrind --tool=callgrind, collecting from the SIGTERM to the exit only, and print the
instructions per call: all of the daemon's, and those inclusive in its journaling functions
(before: CleanupRun.record; after: RunJournal.callFinished + RunJournal.flush). Instruction counts
repeat exactly for the same binary and input, whatever else the machine does. KEEP_CALLGRIND=PATH
keeps the last profile (callgrind_annotate --inclusive=yes PATH | swift demangle --simplified).
Network: 127.0.0.1 only. Only processes this script started are signalled.
"""
import argparse
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
TICK = os.sysconf("SC_CLK_TCK")
sys.path.insert(0, str(REPO / "Tests/SystemTests/fixtures"))
from bulk_register import register  # noqa: E402  (the system tests' pipelined registrar)


def wait_for(predicate, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.005)
    raise SystemExit("journal_cost: timed out waiting for " + what)


def cpu_seconds(pid):
    """utime + stime of a live process, from /proc/PID/stat."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


class LoadServer:
    def __init__(self, binary, directory):
        ready = directory / "loadserver.port"
        self.process = subprocess.Popen(
            [binary, "--host", "127.0.0.1", "--port", "0", "--latency-ms", "0", "--ready-file", str(ready)],
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.port = int(wait_for(lambda: ready.exists() and ready.read_text().strip(), 5, "the load server"))

    def stop(self):
        self.process.send_signal(signal.SIGTERM)
        self.process.wait(10)


def closed_port():
    """A port on 127.0.0.1 that nothing listens on (bound, read, closed)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


JOURNALING = ("CleanupRun.record(", "RunJournal.callFinished(", "RunJournal.flush(", "Journal.drain(")


def callgrind_summary(out_file):
    """(total instructions, instructions inclusive in the journaling functions)."""
    annotated = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(out_file)],
                               capture_output=True, text=True, check=True).stdout
    demangled = subprocess.run(["swift", "demangle", "--simplified"], input=annotated, capture_output=True,
                               text=True, check=True).stdout
    total = journal = 0
    for line in demangled.splitlines():
        parts = line.split()
        if not parts or not parts[0].replace(",", "").isdigit():
            continue
        count = int(parts[0].replace(",", ""))
        if "PROGRAM TOTALS" in line:
            total = count
        elif any(name in line for name in JOURNALING):
            journal += count
    return total, journal


def measure(daemon, mode, outcome, sessions, loadserver, callgrind=False):
    with tempfile.TemporaryDirectory(prefix="sc-journal-cost-") as tmp:
        tmp = Path(tmp)
        server = LoadServer(loadserver, tmp)
        port = server.port if outcome == "ended" else closed_port()
        config = tmp / "session-cleanup.conf"
        config.write_text(f"[Stop]\nBudgetSec=120s\n[Endpoint]\nName=auth\n"
                          f"URL=http://127.0.0.1:{port}/user/{{session}}/endsession\n")
        notify_path = tmp / "notify.sock"
        notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        notify.bind(str(notify_path))
        notify.setblocking(False)
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8",
               "NOTIFY_SOCKET": str(notify_path), "STATE_DIRECTORY": str(tmp / "state"),
               "RUNTIME_DIRECTORY": str(tmp / "run")}
        command = [daemon, "daemon", "--config", str(config)]
        callgrind_out = tmp / "callgrind.out"
        if callgrind:
            stripped = tmp / "session-cleanup"
            subprocess.run(["strip", "--strip-debug", "-o", str(stripped), daemon], check=True)
            command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={callgrind_out}",
                       str(stripped), "daemon", "--config", str(config)]
        out = tmp / "fake-journald"
        out.mkdir()
        if mode == "native":
            launcher = subprocess.Popen(
                ["unshare", "--mount", "--propagation", "private", "--", sys.executable,
                 str(REPO / "Tests/Support/fake_journald.py"), "--out-dir", str(out), "--", *command], env=env)
            pid = int(wait_for(lambda: (out / "pid").exists() and (out / "pid").read_text(), 10, "the daemon"))
        else:
            with open(tmp / "stderr.log", "wb") as log:
                launcher = subprocess.Popen(command, env=env, stderr=log)
            pid = launcher.pid

        def ready():
            try:
                while True:
                    if b"READY=1" in notify.recv(65536):
                        return True
            except BlockingIOError:
                return False
        wait_for(ready, 60 if callgrind else 10, "READY=1")
        accepted, _ = register(sessions, "auth", socket_path=str(tmp / "run/control.sock"))
        if accepted != sessions:
            raise SystemExit(f"journal_cost: {accepted} of {sessions} registrations accepted")
        time.sleep(0.5)  # let the journal take the registrations' entries before the clock starts
        if callgrind:
            subprocess.run(["callgrind_control", "--zero", str(pid)], check=True, capture_output=True)
        before = cpu_seconds(pid)
        started = time.monotonic()
        os.kill(pid, signal.SIGTERM)
        if mode == "native":
            exited = wait_for(lambda: (out / "exited").exists() and (out / "exited").read_text(), 300, "exit")
            status, _, user_us, system_us = (int(float(x)) for x in exited.split())
            wall = time.monotonic() - started
            launcher.wait(60)
            entries = sum(1 for _ in open(out / "entries"))
        else:
            _, wait_status, usage = os.wait4(pid, 0)
            wall = time.monotonic() - started
            status = os.waitstatus_to_exitcode(wait_status)
            user_us, system_us = usage.ru_utime * 1e6, usage.ru_stime * 1e6
            entries = sum(1 for _ in open(tmp / "stderr.log", "rb"))
        server.stop()
        if status != (0 if outcome == "ended" else 75):
            raise SystemExit(f"journal_cost: {daemon} exited {status}")
        cpu = (user_us + system_us) / 1e6 - before
        result = {"wall_s": wall, "cpu_s": cpu, "cpu_us_per_call": cpu / sessions * 1e6, "entries": entries}
        if callgrind:
            if os.environ.get("KEEP_CALLGRIND"):
                shutil.copy(callgrind_out, os.environ["KEEP_CALLGRIND"])
            total, journal = callgrind_summary(callgrind_out)
            result.update(ir_per_call=total / sessions, journal_ir_per_call=journal / sessions)
        return result


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--daemon", action="append", required=True, help="NAME=PATH")
    parser.add_argument("--sessions", default="10000,100000")
    parser.add_argument("--modes", default="native,stderr")
    parser.add_argument("--outcomes", default="ended,failed")
    parser.add_argument("--callgrind", action="store_true")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--loadserver", default=str(REPO / "bench-results/bin/loadserver"))
    args = parser.parse_args()
    if not Path(args.loadserver).exists():
        Path(args.loadserver).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cc", "-O2", "-o", args.loadserver, str(REPO / "Benchmarks/LoadServer/loadserver.c")],
                       check=True)
    daemons = [d.split("=", 1) for d in args.daemon]
    print(f"{'daemon':<10} {'mode':<7} {'outcome':<7} {'sessions':>9} {'stop wall s':>11} {'stop CPU s':>10} "
          f"{'CPU µs/call':>11} {'entries (whole run)':>20}")
    for sessions in (int(n) for n in args.sessions.split(",")):
        for outcome in args.outcomes.split(","):
            for mode in args.modes.split(","):
                for name, path in daemons:
                    runs = [measure(path, mode, outcome, sessions, args.loadserver, args.callgrind)
                            for _ in range(args.repeat)]
                    pick = lambda key: statistics.median(r[key] for r in runs)
                    line = (f"{name:<10} {mode:<7} {outcome:<7} {sessions:>9} {pick('wall_s'):>11.2f} "
                            f"{pick('cpu_s'):>10.2f} {pick('cpu_us_per_call'):>11.1f} {int(pick('entries')):>20}")
                    if args.callgrind:
                        line += f"  Ir/call {pick('ir_per_call'):,.0f}, journaling {pick('journal_ir_per_call'):,.0f}"
                    print(line, flush=True)


if __name__ == "__main__":
    main()
