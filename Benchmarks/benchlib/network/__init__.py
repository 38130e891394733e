"""The network scenarios (root): nginx behind a 50 ms round trip in a network namespace the
suite creates for itself, where the only address used is its own loopback 127.0.0.1.

- the server is a real nginx (Debian's nginx-light), a fresh one per measurement, listening on
  one port per origin (PORT_BASE + i), answering `{"success": true}` to every request;
- a 50 ms round trip is added by Benchmarks/NetDelay/netdelay (an iptables NFQUEUE rule in
  INPUT sends every TCP packet the server sent to it, after loopback released it from the
  server's socket; it holds each 50 ms) — this kernel has no sch_netem;
- the clients, side by side in one run and in turn: the daemon (SIGTERM → exit, sessions
  registered first), optionally the same daemon at its second start (--daemon-warm) and a
  baseline daemon binary (--baseline-daemon: "before"), the C floor (Benchmarks/Floor/floor.c:
  libcurl multi, the same design without a daemon) and `curl --parallel --parallel-max 256`.

Counted from nginx's access log (`$connection`, `$ssl_protocol`, `$ssl_session_reused`,
`$server_protocol`): requests, distinct sessions, connections that carried a request, TLS
handshakes (full / resumed), HTTP/2 requests; from the delayer: SYN-ACKs = connections the
server accepted (with or without a request). A row fails only on a functional error (a count
that differs from the calls made, a crash, an exit status); timings are reported, never asserted.

Modules: environment (namespace, delayer, nginx), workload (calls over origins, the ideal),
suite (one measurement, the clients × configurations matrix), origins (`origins`, `http2`),
profiles (`memory`, `cpu`, `syscalls`).
"""
from .origins import http2, origins
from .profiles import cpu, memory, syscalls
from .suite import NetworkSuite


def run(bench, only):
    with NetworkSuite(bench) as suite:
        if "origins" in only:
            origins(suite)
        if "http2" in only:
            http2(suite)
        if "memory" in only:
            memory(suite)
        if "cpu" in only:
            cpu(suite)
        if "syscalls" in only:
            syscalls(suite)
