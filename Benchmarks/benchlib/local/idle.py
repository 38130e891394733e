"""The idle daemon (scenario `idle`): two daemons holding n sessions each side by side, the
watchdog off and at 20 s; CPU, wake-ups and memory over a window."""
import time

from ..common import BenchError
from ..control import register_bulk
from ..daemon import Daemon
from ..loadserver import LoadServer
from ..processes import CLK_TCK, proc_sample, settle_threads, thread_delta


def idle(bench, n, window):
    """Two daemons with n sessions each, idle side by side: watchdog off and WATCHDOG_USEC=20 s."""
    variants = [("watchdog off", None), ("watchdog 20 s", 20_000_000)]
    server = LoadServer(bench, tag="ls-idle")
    daemons = []
    try:
        for label, usec in variants:
            d = Daemon(bench, "idle" + ("wd" if usec else ""), [("auth", server.url("/user/{session}/endsession"))],
                       watchdog_usec=usec)
            daemons.append((label, usec, d))
            d.start()
            register_bulk(d, "idle" + ("wd" if usec else ""), n, ["auth"], bench.args.pipeline)
        time.sleep(2 if not bench.quick else 1)  # let the registration's after-effects settle
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
            bench.attempt("idle", f"idle {n:,} sessions, {label}", measure)
    except BenchError as e:
        bench.add({"scenario": "idle", "name": f"idle {n:,} sessions", "ok": False, "error": str(e)})
    finally:
        for _, _, d in daemons:
            d.kill()
        server.child.kill()
