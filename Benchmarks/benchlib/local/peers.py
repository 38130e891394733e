"""Peers (scenario `peers`): the same calls without the daemon — a sequential curl loop (what
`ExecStop=curl …` amounts to), xargs -P 256 curl, a Python asyncio script, curl --parallel —
against a fresh load server each, and their ratios to the daemon's stop run at the same N."""
import sys

from ..common import CONCURRENCY, HERE, LATENCY_MS, BenchError
from ..loadserver import LoadServer
from ..processes import Child
from .stop import ideal_s


def peer_run(bench, peer, n, cap=None):
    calls = min(n, cap) if cap else n
    label = {"seq": "sequential curl loop", "xargs": "xargs -P 256 curl", "python": "python asyncio (256)",
             "parallel": "curl --parallel 256"}[peer]

    def run():
        server = LoadServer(bench, tag=f"ls-{peer}{n}")
        try:
            urls = [server.url(f"/user/{peer}-{n}-{i}/endsession") for i in range(calls)]
            d = bench.newdir(f"peer-{peer}{n}")
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
            child = Child(argv, bench.env(), stdin=url_file, stdout=d / "out.log")
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
        daemon = bench.stop_rows.get((n, 1))
        if daemon and daemon["ok"]:
            row["wall_vs_daemon"] = row["wall_s"] / daemon["wall_s"]
            row["cpu_vs_daemon"] = row["cpu_s"] / daemon["cpu_stop_s"] if daemon["cpu_stop_s"] else None
        row["ratio"] = row["wall_s"] / (n * LATENCY_MS / 1000 if peer == "seq" else ideal_s(n))
        return row

    return bench.attempt("peers", f"{label} N={n:,}", run, peer=peer, n=n, calls=n)
