"""Start and stop latency (scenario `lifecycle`): start → READY=1 with 0 and with many stored
sessions, SIGTERM → exit with 0 and 1 session; medians of at least 3."""
import time

from ..common import HOST, LATENCY_MS, BenchError, median
from ..control import register_bulk, stored_count
from ..daemon import Daemon
from ..loadserver import LoadServer
from ..processes import proc_sample


def lifecycle(bench, stored_n):
    runs = max(3, bench.args.repeat)  # cheap, noise-sensitive: always take a median of ≥ 3

    def empty():
        ready, exits = [], []
        for i in range(runs):
            d = Daemon(bench, f"empty{i}", [("auth", f"http://{HOST}:9/user/{{session}}/endsession")])
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

    row = bench.attempt("lifecycle", "start → READY, 0 sessions", ready_empty)
    if row["ok"]:
        bench.add({"scenario": "lifecycle", "name": "SIGTERM → exit, 0 sessions", "ok": True, "error": None,
                  "ms": median(exit0) * 1000, "runs_ms": [round(x * 1000, 2) for x in exit0], "target_ms": 20})

    def one_session():
        walls = []
        for i in range(runs):
            server = LoadServer(bench, tag=f"ls-one{i}")
            d = Daemon(bench, f"one{i}", [("auth", server.url("/user/{session}/endsession"))])
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

    bench.attempt("lifecycle", "SIGTERM → exit, 1 session", one_session)

    def ready_stored():
        # A copy of the state of the stop run with stored_n sessions (taken just before its
        # SIGTERM), else register stored_n now and SIGKILL: the store keeps them.
        server = LoadServer(bench, tag="ls-stored")
        endpoint = [("auth", server.url("/user/{session}/endsession"))]
        try:
            if bench.state_snapshot and bench.state_snapshot[0] == stored_n:
                state, source = bench.state_snapshot[1], "copy of the stop run's store"
            else:
                seed = Daemon(bench, f"seed{stored_n}", endpoint)
                try:
                    seed.start()
                    register_bulk(seed, f"stored{stored_n}", stored_n, ["auth"], bench.args.pipeline)
                finally:
                    seed.kill()
                state, source = seed.state_dir, "registered, then SIGKILL"
            times, rss, start_calls = [], [], 0
            for i in range(runs):
                d = Daemon(bench, f"stored{stored_n}-{i}", endpoint, state_dir=state)
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

    bench.attempt("lifecycle", f"start → READY, {stored_n:,} stored", ready_stored)

# ------------------------------------------------------------------ 4. registration
