"""Scenarios `memory`, `cpu` and `syscalls`: one origin over HTTP, each client's peak RSS,
instructions per call (callgrind) and the stop run's system calls (strace)."""
import re
import shutil
import subprocess
import time
from pathlib import Path

from ..common import FLOOR_CLIENT, BenchError, loadavg
from ..processes import Child
from .environment import run_quiet
from .suite import summarize
from .workload import Workload


def memory(suite):
    calls = 1000 if suite.quick else 50000
    clients = [c for c in suite.clients() if c[1] != "curl"]
    for label, kind, binary in clients:
        work = Workload("http", 1, calls, tag=f"mem{kind[0]}")
        row = {"scenario": "memory", "name": f"{calls:,} calls, HTTP, 1 origin: {label}", "client": label,
               "calls": work.calls, "ok": True, "error": None, "load": loadavg()}
        try:
            runs = [suite.measure(kind, binary, work, budget=120, sample_memory=True)
                    for _ in range(suite.args.repeat)]
            row.update(summarize(runs))
        except BenchError as e:
            row.update(ok=False, error=str(e))
        suite.rows[("memory", label)] = row
        suite.bench.add(row)
    floor = suite.rows.get(("memory", FLOOR_CLIENT))
    for label, _, _ in clients:
        row = suite.rows[("memory", label)]
        if row["ok"] and floor and floor["ok"]:
            row["rss_vs_floor"] = row["peak_rss_mb"] / floor["peak_rss_mb"]


def cpu(suite):
    """User instructions per call under callgrind (stop run only for the daemon; floor_run
    only for the floor), HTTP, 1 origin; the journal on (stderr to a file)."""
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        suite.bench.add({"scenario": "cpu", "name": "callgrind", "ok": False,
                        "error": "valgrind not found (apt-get install valgrind)"})
        return
    calls = 500 if suite.quick else 10000
    clients = [c for c in suite.clients() if c[1] != "curl"]
    for label, kind, binary in clients:
        work = Workload("http", 1, calls, tag=f"cg{kind[0]}")
        d = suite.bench.newdir(f"callgrind-{kind}")
        out = d / "callgrind.out"
        row = {"scenario": "cpu", "name": f"{calls:,} calls, HTTP, 1 origin: {label}", "client": label,
               "calls": work.calls, "ok": True, "error": None, "load": loadavg()}
        try:
            if kind == "daemon":
                stripped = d / "session-cleanup.nodebug"
                # valgrind 3.19 cannot read the Swift toolchain's DWARF 5 debug info.
                run_quiet(["objcopy", "--strip-debug", binary, stripped])
                prefix = ["valgrind", "--tool=callgrind", "--instr-atstart=no", f"--callgrind-out-file={out}"]

                def instrument(daemon):
                    # The registrations may have started a compaction (a snapshot written in
                    # the background); under valgrind it can last into the stop run and
                    # be counted as the run's. It is not: let it finish first.
                    time.sleep(3)
                    run_quiet(["callgrind_control", "--instr=on", str(daemon.pid)], timeout=60)

                suite.measure(kind, stripped, work, prefix=prefix, budget=600, instrument=instrument,
                             extra_lines="TimeoutSec=300s\n")
            else:
                prefix = ["valgrind", "--tool=callgrind", "--toggle-collect=floor_run",
                          f"--callgrind-out-file={out}"]
                suite.measure(kind, binary, work, prefix=prefix)
            total = callgrind_total(out)
            row.update(instructions=total, per_call=total / work.calls, top=callgrind_top(out))
        except BenchError as e:
            row.update(ok=False, error=str(e))
        suite.rows[("cpu", label)] = row
        suite.bench.add(row)
    floor = suite.rows.get(("cpu", FLOOR_CLIENT))
    for label, _, _ in clients:
        row = suite.rows[("cpu", label)]
        if row["ok"] and floor and floor["ok"]:
            row["vs_floor"] = row["per_call"] / floor["per_call"]


def syscalls(suite):
    """System calls of the stop run (strace -c -f, attached after registration), HTTP,
    1 origin, 10,000 calls: where the system time goes. strace slows the run; the counts,
    not its times, are the figures."""
    if shutil.which("strace") is None:
        suite.bench.add({"scenario": "syscalls", "name": "strace", "ok": False,
                        "error": "strace not found (apt-get install strace)"})
        return
    calls = 500 if suite.quick else 10000
    clients = [c for c in suite.clients() if c[1] == "daemon"]
    for label, kind, binary in clients:
        work = Workload("http", 1, calls, tag=f"sc{len(suite.rows)}")
        d = suite.bench.newdir("strace")
        out = d / "strace.txt"
        row = {"scenario": "syscalls", "name": f"{calls:,} calls, HTTP, 1 origin: {label}", "client": label,
               "calls": work.calls, "ok": True, "error": None, "load": loadavg()}
        tracer = []

        def instrument(daemon):
            tracer.append(Child(["strace", "-c", "-f", "-o", out, "-p", daemon.pid], suite.bench.env(),
                                  stdout=d / "strace.log"))
            time.sleep(0.5)  # strace attaches every thread before SIGTERM

        try:
            suite.measure(kind, binary, work, budget=120, instrument=instrument)
            if tracer and not tracer[0].wait(60):
                tracer[0].kill()
            counts = strace_counts(out)
            row.update(syscalls=sum(counts.values()), per_call=sum(counts.values()) / work.calls,
                       top=sorted(((n, name) for name, n in counts.items()), reverse=True)[:12])
        except BenchError as e:
            row.update(ok=False, error=str(e))
        suite.rows[("syscalls", label)] = row
        suite.bench.add(row)


def strace_counts(path):
    """{system call: calls} from an `strace -c` summary."""
    counts = {}
    for line in Path(path).read_text(errors="replace").splitlines():
        fields = line.split()
        # % time, seconds, usecs/call, calls, [errors,] syscall
        if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total":
            counts[fields[-1]] = int(fields[3])
    if not counts:
        raise BenchError(f"no system calls in {path}")
    return counts


def callgrind_total(path):
    """The instructions (Ir) callgrind counted: its `summary:` or `totals:` line."""
    total = None
    for candidate in sorted(Path(path).parent.glob(Path(path).name + "*")):
        with open(candidate, errors="replace") as f:
            for line in f:
                if line.startswith(("summary:", "totals:")):
                    total = (total or 0) + int(line.split()[1])
                    break
    if not total:
        raise BenchError(f"no instruction count in {path}")
    return total


def callgrind_top(path, count=25):
    """The most expensive functions, inclusive, as (percent, function) pairs."""
    try:
        text = subprocess.run(["callgrind_annotate", "--inclusive=yes", str(path)], capture_output=True, text=True,
                              timeout=120).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    top = []
    for line in text.splitlines():
        match = re.match(r"\s*([\d,]+)\s+\(\s*([\d.]+)%\)\s+(.*)", line)
        if match and "PROGRAM TOTALS" not in line:
            top.append((float(match.group(2)), match.group(3).strip()[:160]))
        if len(top) >= count:
            break
    return top
