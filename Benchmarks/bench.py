#!/usr/bin/env python3
"""bench.py — the session-cleanup benchmark suite (Python 3 standard library only).

    python3 Benchmarks/bench.py [--quick] [--json OUT.json] [--markdown OUT.md]
                                [--only SCENARIO[,SCENARIO…]] [--repeat K] [--keep]

Scenarios (--only takes these names; all of them by default, --quick leaves out cpu, syscalls):
  stop      stop runs: N = 1, 100, 1,000, 10,000, 100,000 sessions × 1 endpoint, and
            1,000 sessions × 3 endpoints; SIGTERM → exit wall time, the daemon's CPU and
            peak RSS (wait4 rusage), ratio to the ideal ceil(calls / 256) × latency
  peers     the same calls made by a sequential curl loop, xargs -P 256 curl, a Python
            asyncio script, and curl --parallel (one libcurl process: the practical floor)
  idle      an idle daemon with 10,000 sessions: CPU, RSS, wake-ups/s (watchdog off / on)
  lifecycle start → READY=1 with 0 and 100,000 stored sessions; SIGTERM → exit with 0 and
            1 session
  register  durable registrations/s through the control socket: 1 client, 16 clients
  origins   (root) nginx behind a 50 ms round trip, 10,000 calls over 1-1,000 origins, HTTP
            and HTTPS: the daemon beside the C floor and curl --parallel
  http2     (root) the same against nginx offering h2 by ALPN
  cpu       (root) instructions per call (callgrind), the daemon's stop run against the floor
  memory    (root) peak RSS of a 50,000-call run, the daemon against the floor
  syscalls  (root) the stop run's system calls (strace -c -f)
--quick (the CI smoke test, < 90 s): N = 1, 100, 1,000; peers at N = 100; 5 s idle;
registration 2 s each; origins and http2 at 300 calls, memory at 1,000.  Timings are never
asserted: a row fails only when something is functionally wrong — the server's request count
differs from the number of calls expected, a process crashed or timed out, or an exit status
was not the expected one.  Prints a table, writes the same figures as JSON (default
bench-results/latest.json), ends with "N passed, N failed" and exits 1 if anything failed.

Network: the load server listens on 127.0.0.1 only and every URL points at it; the network
scenarios run in a network namespace of their own (its loopback only).  Children get a minimal
environment (no *_proxy variables, HOME in the work directory so no ~/.curlrc).  Every wait is
bounded in time; only processes this script started are signalled, through pidfds (no PID
reuse races).  The binaries come from scripts/bench.sh (or --daemon, --loadserver, --netdelay,
--floor).  The code: Benchmarks/benchlib (shared pieces; local/ and network/ hold the scenarios).
"""
import argparse
import datetime
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

from benchlib import local, network
from benchlib.common import (BULK_CONNECTIONS, CONCURRENCY, DEFAULT_PIPELINE, DEFAULT_SCENARIOS, HERE,
                             LATENCY_MS, NETWORK_SCENARIOS, REPO, BenchError, loadavg)
from benchlib.network.origins import parse_modes
from benchlib.processes import become_subreaper, end_all_children
from benchlib.report import machine_info, markdown_report, print_report
from benchlib.suite import Bench
from benchlib.targets import evaluate_targets


def run(bench):
    """The scenarios --only names (by default all; --quick checks the functional side only: no
    callgrind or strace run, which are measurements, and slow)."""
    a = bench.args
    bench.only = set(a.only.split(",")) if a.only else DEFAULT_SCENARIOS - ({"cpu", "syscalls"} if bench.quick else set())
    bench.stored_n = 1000 if bench.quick else 100000
    local.run(bench)
    scenarios = bench.only & NETWORK_SCENARIOS
    if scenarios:
        try:
            network.run(bench, scenarios)
        except BenchError as e:
            bench.add({"scenario": "origins", "name": "network scenarios", "ok": False, "error": str(e)})
        except Exception as e:  # noqa: BLE001 — a crash is a failed row: the local rows are still reported
            bench.add({"scenario": "origins", "name": "network scenarios", "ok": False,
                       "error": f"{type(e).__name__}: {e}"})


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--quick", action="store_true", help="CI smoke test: small sizes, short windows (< 90 s)")
    p.add_argument("--json", default=str(REPO / "bench-results" / "latest.json"), help="where to write the figures")
    p.add_argument("--markdown", help="also write the tables as Markdown here")
    p.add_argument("--only", help="comma-separated: stop, peers, idle, lifecycle, register, origins, http2, "
                                  "cpu, memory, syscalls")
    p.add_argument("--sizes", help="stop-run sizes instead of the default ones, e.g. 1,100 (no 3-endpoint run)")
    p.add_argument("--origins", help="origin counts for the origins scenario instead of 1,2,3,100,1000, e.g. 1")
    p.add_argument("--modes", help="comma-separated, for the origins scenario: http, https, h2 (HTTPS offering h2 "
                                   "by ALPN; the clients but the daemon pinned to HTTP/1.1) or both (http and "
                                   "https, the default)")
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
    try:
        parse_modes(args.modes)
    except ValueError as e:
        p.error(str(e))
    if not Path(args.loadserver).exists():
        Path(args.loadserver).parent.mkdir(parents=True, exist_ok=True)
        subprocess.run(["cc", "-O2", "-o", args.loadserver, str(HERE / "LoadServer" / "loadserver.c")], check=True)
    if not os.access(args.daemon, os.X_OK):
        p.error(f"no daemon binary at {args.daemon}: run scripts/bench.sh, or pass --daemon")

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
        run(bench)
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
