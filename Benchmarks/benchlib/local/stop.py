"""Stop runs (scenario `stop`): N sessions registered, then SIGTERM → exit against the load
server; the wall time against the ideal ceil(calls / 256) × latency, the stop run's CPU, the
peak RSS, and the server's count of calls and distinct sessions (which must match)."""
import math
import shutil
import signal
import statistics

from ..common import CONCURRENCY, LATENCY_MS, BenchError, median
from ..control import register_bulk
from ..daemon import Daemon
from ..loadserver import FirstCallWatch, LoadServer


def ideal_s(calls, concurrency=CONCURRENCY, latency_ms=LATENCY_MS):
    return math.ceil(calls / concurrency) * latency_ms / 1000.0 if calls else 0.0


def stop_once(bench, n, n_endpoints, snapshot=False):
    server = LoadServer(bench, tag=f"ls-stop{n}x{n_endpoints}")
    daemon = None
    try:
        paths = ["/user/{session}/endsession", "/user/{session}/logout", "/user/{session}/revoke"]
        names = ["auth", "sso", "api"][:n_endpoints]
        endpoints = [(name, server.url(p)) for name, p in zip(names, paths)]
        calls = n * n_endpoints
        budget = 60 if calls <= 20000 else 180
        daemon = Daemon(bench, f"stop{n}x{n_endpoints}", endpoints, budget_sec=budget)
        ready_s = daemon.start()
        reg_s = register_bulk(daemon, f"s{n}x{n_endpoints}", n, names, bench.args.pipeline)
        early = server.stats()["requests"]
        if early:
            raise BenchError(f"server got {early} requests before SIGTERM")
        if snapshot:
            daemon.child.signal(signal.SIGSTOP)  # a crash-consistent copy of what is on disk
            try:
                copy = bench.work / f"state-{n}"
                shutil.copytree(daemon.state_dir, copy)
                bench.state_snapshot = (n, copy)
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


def stop_run(bench, n, n_endpoints=1):
    calls = n * n_endpoints
    name = f"N={n:,}" + (f" × {n_endpoints} endpoints" if n_endpoints > 1 else "")

    def run():
        runs = []
        for i in range(bench.args.repeat):
            snapshot = (n == bench.snapshot_n and n_endpoints == 1 and i == 0)
            runs.append(stop_once(bench, n, n_endpoints, snapshot=snapshot))
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

    row = bench.attempt("stop", name, run, n=n, endpoints=n_endpoints, calls=calls, ideal_s=ideal_s(calls),
                       latency_ms=LATENCY_MS, concurrency=CONCURRENCY)
    bench.stop_rows[(n, n_endpoints)] = row
    return row
