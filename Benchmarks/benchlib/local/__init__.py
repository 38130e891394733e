"""The local scenarios: the daemon against Benchmarks/LoadServer on the host's 127.0.0.1 (no
root needed). One module per scenario; `run` runs those asked for, in this order, at the sizes
of a full run or of --quick."""
from .idle import idle
from .lifecycle import lifecycle
from .peers import peer_run
from .register import registration
from .stop import stop_run


def run(bench):
    a = bench.args
    sizes = [1, 100, 1000] if bench.quick else [1, 100, 1000, 10000, 100000]
    if a.sizes:
        sizes = [int(x) for x in a.sizes.split(",")]
    if "stop" in bench.only:
        for n in sizes:
            stop_run(bench, n)
        if not a.sizes:
            stop_run(bench, 1000, 3)
    if "peers" in bench.only:
        sizes_peers = [100] if bench.quick else [1000, 10000]
        cap = 20 if bench.quick else 200
        for n in sizes_peers:
            if "stop" not in bench.only and (n, 1) not in bench.stop_rows:
                stop_run(bench, n)  # the daemon figure the ratios refer to
            for peer in ("seq", "xargs", "python", "parallel"):
                peer_run(bench, peer, n, cap=cap if peer == "seq" else None)
        if not bench.quick and not a.no_peers_100k:
            for peer in ("python", "parallel"):
                peer_run(bench, peer, 100000)
    if "idle" in bench.only:
        idle(bench, 1000 if bench.quick else 10000, 5 if bench.quick else 60)
    if "lifecycle" in bench.only:
        lifecycle(bench, bench.stored_n)
    if "register" in bench.only:
        registration(bench, 2 if bench.quick else 10)
