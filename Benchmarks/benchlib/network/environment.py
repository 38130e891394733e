"""The network scenarios' world: a network namespace of the suite's own, the delayer that adds
RTT_MS to every packet the server sends, and a fresh nginx per measurement, counted from its
access log."""
import json
import os
import re
import signal
import subprocess
import time

from ..common import HOST, BenchError
from ..processes import Child

RTT_MS = 50
PORT_BASE = 20000  # origin i listens on PORT_BASE + i; the delayer's rule covers 20000-29999
STATUS_PORT = 19999  # not delayed: the readiness probe (each nginx answers its own token)
QUEUE = 0


def run_quiet(argv, timeout=30):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise BenchError(f"{' '.join(map(str, argv))}: exit {result.returncode}: {result.stderr.strip()[:300]}")
    return result.stdout


class Namespace:
    """A network namespace of the suite's own with loopback up and the delay rule in place."""

    def __init__(self):
        self.name = f"scb-{os.getpid()}"
        run_quiet(["ip", "netns", "add", self.name])
        try:
            run_quiet(self.wrap(["ip", "link", "set", "lo", "up"]))
            # INPUT, not OUTPUT: on loopback a packet is released from its sender's socket
            # before INPUT, so the 50 ms are spent "on the path". Held in OUTPUT it stays charged
            # to the server's socket, whose TCP then holds back what it has not sent (ss: KBs not
            # sent with 2 packets out; TCP Small Queues counts such packets): a connection carrying
            # many HTTP/2 streams was throttled as no real path throttles it (h2, 1 origin:
            # 2.65-2.86 s against 2.38-2.43 s for the same daemon).
            run_quiet(self.wrap(["iptables", "-w", "-A", "INPUT", "-p", "tcp", "--sport",
                                 f"{PORT_BASE}:{PORT_BASE + 9999}", "-j", "NFQUEUE", "--queue-num", str(QUEUE)]))
        except BenchError:
            self.close()
            raise

    def wrap(self, argv=()):
        return ["ip", "netns", "exec", self.name] + [str(a) for a in argv]

    def close(self):
        subprocess.run(["ip", "netns", "del", self.name], capture_output=True, timeout=30)


class Delayer:
    """netdelay on the namespace's queue: every packet the server sends waits RTT_MS."""

    def __init__(self, suite):
        self.dir = suite.bench.newdir("delay")
        ready = self.dir / "ready"
        self.out = self.dir / "out.json"
        self.child = Child(suite.ns.wrap([suite.netdelay, "--queue", QUEUE, "--delay-ms", RTT_MS,
                                            "--ready-file", ready]),
                             suite.bench.env(), stdout=self.out, stderr=self.dir / "err.log")
        for _ in range(250):
            if ready.exists():
                return
            if self.child.wait(0.02):
                raise BenchError(f"netdelay exited with {self.child.status}: "
                                   f"{(self.dir / 'err.log').read_text().strip()[:300]}")
        self.child.kill()
        raise BenchError("netdelay not ready within 5 s")

    def stop(self):
        self.child.signal(signal.SIGTERM)
        if not self.child.wait(10):
            self.child.kill()
            raise BenchError("netdelay did not exit within 10 s of SIGTERM")
        lines = self.out.read_text().strip().splitlines()
        if self.child.status != 0 or not lines:
            raise BenchError(f"netdelay exited with {self.child.status}")
        return json.loads(lines[-1]) | {"cpu_s": self.child.cpu}


LOG_FORMAT = "$connection $connection_requests $ssl_protocol $ssl_session_reused $server_port $status " \
             "$server_protocol $request_uri"


class Nginx:
    """A fresh nginx for one measurement: `origins` ports, plain HTTP, HTTPS (HTTP/1.1 only) or
    h2 (HTTPS offering h2 and http/1.1 by ALPN, `streams` concurrent streams per connection)."""

    def __init__(self, suite, mode, origins, streams=128):
        self.suite = suite
        self.mode = mode
        self.dir = suite.bench.newdir(f"nginx-{mode}{origins}")
        (self.dir / "tmp").mkdir()
        self.log = self.dir / "access.log"
        tls = mode in ("https", "h2")
        listen_flags = {"http": "", "https": " ssl", "h2": " ssl http2"}[mode]
        listens = "".join(f"    listen {HOST}:{PORT_BASE + i}{listen_flags} reuseport;\n" for i in range(origins))
        tls_lines = ""
        if tls:
            tls_lines = (f"    ssl_certificate {suite.tls_dir}/server.pem;\n"
                         f"    ssl_certificate_key {suite.tls_dir}/server.key;\n"
                         "    ssl_protocols TLSv1.2 TLSv1.3;\n"
                         "    ssl_session_cache shared:bench:10m;\n"
                         "    ssl_session_timeout 10m;\n")
        temp = self.dir / "tmp"
        # One process (no master): it is the server, its rusage is the server's CPU, and killing it
        # leaves no worker holding the ports for the next measurement.
        self.token = f"nginx-{os.getpid()}-{time.monotonic_ns()}"
        config = f"""master_process off;
daemon off;
pid {self.dir}/nginx.pid;
error_log {self.dir}/error.log warn;
events {{ worker_connections 8192; multi_accept on; }}
http {{
    log_format bench '{LOG_FORMAT}';
    access_log {self.log} bench buffer=1m;
    client_body_temp_path {temp}; proxy_temp_path {temp}; fastcgi_temp_path {temp};
    uwsgi_temp_path {temp}; scgi_temp_path {temp};
    keepalive_requests 100000;
    keepalive_timeout 120s;
    http2_max_concurrent_streams {streams};
    server {{
        listen {HOST}:{STATUS_PORT};
        access_log off;
        location / {{ return 200 '{self.token}'; }}
    }}
    server {{
{listens}{tls_lines}        location / {{ default_type application/json; return 200 '{{"success": true}}'; }}
    }}
}}
"""
        # reuseport is per listen socket; one worker makes it moot, but it keeps each port's
        # accept queue its own. It must appear once per address:port, which it does.
        (self.dir / "nginx.conf").write_text(config)
        self.child = Child(suite.ns.wrap(["nginx", "-c", self.dir / "nginx.conf", "-p", self.dir]),
                             suite.bench.env(), stdout=self.dir / "out.log")
        deadline = time.monotonic() + 20
        while True:
            # This nginx's own token: another one still holding the port must not pass for it.
            probe = subprocess.run(suite.ns.wrap(["curl", "-s", f"http://{HOST}:{STATUS_PORT}/"]),
                                   capture_output=True, text=True, timeout=10)
            if probe.stdout == self.token:
                break
            if self.child.wait(0) or time.monotonic() > deadline:
                self.child.kill()
                err = (self.dir / "error.log").read_text(errors="replace") if (self.dir / "error.log").exists() else ""
                raise BenchError(f"nginx did not start ({self.child.status}): {err.strip()[-300:]}")
            time.sleep(0.05)

    def stop(self):
        """Graceful stop (SIGQUIT: the log buffer is flushed); returns the log's counts and the
        server's CPU."""
        self.child.signal(signal.SIGQUIT)
        if not self.child.wait(30):
            self.child.kill()
            raise BenchError("nginx did not exit within 30 s of SIGQUIT")
        return self.counts() | {"server_cpu_s": self.child.cpu}

    def counts(self):
        requests = 0
        keys, connections, statuses = set(), {}, {}
        h2 = 0
        key_pattern = re.compile(r"^/user/([^/]+)/")
        with open(self.log, errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) < 8:
                    continue
                connection, _, protocol, reused, _, status, server_protocol, uri = fields[:8]
                requests += 1
                statuses[status] = statuses.get(status, 0) + 1
                if server_protocol == "HTTP/2.0":
                    h2 += 1
                match = key_pattern.match(uri)
                if match:
                    keys.add(match.group(1))
                connections.setdefault(connection, (protocol, reused))
        tls = [c for c in connections.values() if c[0] != "-"]
        resumed = sum(1 for c in tls if c[1] == "r")
        return {"server_requests": requests, "server_unique_keys": len(keys), "connections": len(connections),
                "tls_handshakes": len(tls), "tls_full": len(tls) - resumed, "tls_resumed": resumed,
                "http2_requests": h2, "statuses": statuses}
