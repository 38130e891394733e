#!/usr/bin/env python3
"""memory_parity.py — the same sessions take the same memory whether registered live or loaded
after a restart (issue 10, item 4).

    python3 Benchmarks/memory_parity.py --daemon .build/release/session-cleanup [-n 500000]
                                        [--daemon OTHER ...]

For each daemon binary: start it with an empty state directory, register N sessions through
the control socket (16 connections), wait 2 s, read VmRSS; SIGKILL it (the store is durable:
every acknowledged registration is on disk), start the same binary on the same state
directory, wait for READY=1 and 2 s more, read VmRSS again. No call is ever made (the daemon
is killed, never stopped); the endpoint is 127.0.0.1:9, never contacted. Prints one line per
binary and exits 1 if a step failed. Needs no root. Figures: BENCHMARKS.md.
"""
import argparse
import shutil
import sys
import time
import types

from benchlib.common import DEFAULT_PIPELINE, BenchError
from benchlib.control import register_bulk
from benchlib.daemon import Daemon
from benchlib.processes import become_subreaper, end_all_children, proc_sample
from benchlib.suite import Bench

ENDPOINTS = [("auth", "http://127.0.0.1:9/user/{session}/endsession")]


def rss_mb(pid):
    return proc_sample(pid).get("VmRSS", 0) / 1024.0


def measure(bench, binary, n):
    live = Daemon(bench, "live", ENDPOINTS, binary=binary)
    live.start(ready_timeout=120)
    try:
        register_s = register_bulk(live, "p", n, ["auth"], DEFAULT_PIPELINE)
        time.sleep(2)
        live_mb = rss_mb(live.pid)
    finally:
        live.kill()
    loaded = Daemon(bench, "loaded", ENDPOINTS, binary=binary, state_dir=live.state_dir)
    ready_s = loaded.start(ready_timeout=300)
    try:
        time.sleep(2)
        loaded_mb = rss_mb(loaded.pid)
    finally:
        loaded.kill()
    return register_s, live_mb, ready_s, loaded_mb


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--daemon", action="append", required=True, help="a session-cleanup binary (repeatable)")
    p.add_argument("-n", type=int, default=500000, help="sessions (default 500,000)")
    p.add_argument("--workdir", default="/tmp", help="parent of the temporary work directory")
    args = p.parse_args()
    bench = Bench(types.SimpleNamespace(quick=False, workdir=args.workdir, daemon=args.daemon[0], loadserver="",
                                          pipeline=DEFAULT_PIPELINE))
    become_subreaper()
    failed = 0
    print(f"{'binary':<48} {'sessions':>9} {'register s':>10} {'live MB':>8} {'READY s':>8} "
          f"{'loaded MB':>9} {'loaded/live':>11}")
    for binary in args.daemon:
        try:
            register_s, live_mb, ready_s, loaded_mb = measure(bench, binary, args.n)
            print(f"{binary[-48:]:<48} {args.n:>9,} {register_s:>10.1f} {live_mb:>8.1f} {ready_s:>8.2f} "
                  f"{loaded_mb:>9.1f} {loaded_mb / live_mb:>11.2f}")
        except BenchError as e:
            failed += 1
            print(f"{binary[-48:]:<48} ERROR: {e}")
    end_all_children()
    shutil.rmtree(bench.work, ignore_errors=True)
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
