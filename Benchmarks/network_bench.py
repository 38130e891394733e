"""network_bench.py — the benchmark's network scenarios (imported by bench.py; run them with
`scripts/bench.sh --only origins,http2,cpu,memory`).

Everything runs inside a network namespace the suite creates for itself (`scb-PID`), where
the only address used is its own loopback 127.0.0.1:

- the server is a real nginx (Debian's nginx-light), a fresh one per measurement, listening on
  one port per origin (PORT_BASE + i), answering `{"success": true}` to every request;
- a 50 ms round trip is added by Benchmarks/NetDelay/netdelay (an iptables NFQUEUE rule sends
  every TCP packet the server sends to it; it holds each 50 ms) — this kernel has no sch_netem;
- the clients, side by side in one run and in turn: the daemon (SIGTERM → exit, sessions
  registered first), optionally a baseline daemon binary (--baseline-daemon: "before"), the C
  floor (Benchmarks/Floor/floor.c: libcurl multi, the same design without a daemon) and
  `curl --parallel --parallel-max 256`.

Counted from nginx's access log (`$connection`, `$ssl_protocol`, `$ssl_session_reused`,
`$server_protocol`): requests, distinct sessions, connections that carried a request, TLS
handshakes (full / resumed), HTTP/2 requests; from the delayer: SYN-ACKs = connections the
server accepted (with or without a request). A row fails only on a functional error (a count
that differs from the calls made, a crash, an exit status); timings are reported, never asserted.
"""
import json
import math
import os
import re
import resource
import shutil
import signal
import subprocess
import time
from pathlib import Path

import bench as b

RTT_MS = 50
PORT_BASE = 20000  # origin i listens on PORT_BASE + i; the delayer's rule covers 20000-29999
STATUS_PORT = 19999  # not delayed: the readiness probe (each nginx answers its own token)
QUEUE = 0
HOST = "127.0.0.1"
ORIGIN_COUNTS = [1, 2, 3, 100, 1000]
REGISTER_PIPELINE = 64  # registrations in flight on the one control connection
# TCP, then TCP + TLS 1.3: round trips before a new connection's first request can leave.
HANDSHAKE_RTTS = {"http": 1, "https": 2, "h2": 2}


def ideal_s(calls, origins, mode, concurrency=b.CONCURRENCY):
    """The time a client with `concurrency` calls in flight needs at best: one round trip per
    call, in rounds of `concurrency`, plus the handshakes of the connections it must open (one
    per origin at least, `concurrency` at a time)."""
    rounds = math.ceil(calls / concurrency) + HANDSHAKE_RTTS[mode] * math.ceil(min(origins, calls) / concurrency)
    return rounds * RTT_MS / 1000.0


def run_quiet(argv, timeout=30):
    result = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    if result.returncode != 0:
        raise b.BenchError(f"{' '.join(map(str, argv))}: exit {result.returncode}: {result.stderr.strip()[:300]}")
    return result.stdout


class Namespace:
    """A network namespace of the suite's own with loopback up and the delay rule in place."""

    def __init__(self):
        self.name = f"scb-{os.getpid()}"
        run_quiet(["ip", "netns", "add", self.name])
        try:
            run_quiet(self.wrap(["ip", "link", "set", "lo", "up"]))
            run_quiet(self.wrap(["iptables", "-w", "-A", "OUTPUT", "-p", "tcp", "--sport",
                                 f"{PORT_BASE}:{PORT_BASE + 9999}", "-j", "NFQUEUE", "--queue-num", str(QUEUE)]))
        except b.BenchError:
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
        self.child = b.Child(suite.ns.wrap([suite.netdelay, "--queue", QUEUE, "--delay-ms", RTT_MS,
                                            "--ready-file", ready]),
                             suite.bench.env(), stdout=self.out, stderr=self.dir / "err.log")
        for _ in range(250):
            if ready.exists():
                return
            if self.child.wait(0.02):
                raise b.BenchError(f"netdelay exited with {self.child.status}: "
                                   f"{(self.dir / 'err.log').read_text().strip()[:300]}")
        self.child.kill()
        raise b.BenchError("netdelay not ready within 5 s")

    def stop(self):
        self.child.signal(signal.SIGTERM)
        if not self.child.wait(10):
            self.child.kill()
            raise b.BenchError("netdelay did not exit within 10 s of SIGTERM")
        lines = self.out.read_text().strip().splitlines()
        if self.child.status != 0 or not lines:
            raise b.BenchError(f"netdelay exited with {self.child.status}")
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
        self.child = b.Child(suite.ns.wrap(["nginx", "-c", self.dir / "nginx.conf", "-p", self.dir]),
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
                raise b.BenchError(f"nginx did not start ({self.child.status}): {err.strip()[-300:]}")
            time.sleep(0.05)

    def stop(self):
        """Graceful stop (SIGQUIT: the log buffer is flushed); returns the log's counts and the
        server's CPU."""
        self.child.signal(signal.SIGQUIT)
        if not self.child.wait(30):
            self.child.kill()
            raise b.BenchError("nginx did not exit within 30 s of SIGQUIT")
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


class Workload:
    """`calls` calls spread over `origins` origins: with 3 origins or fewer every session names
    every origin's endpoint (the README's multi-endpoint case); with more, session i names origin
    i mod origins only."""

    def __init__(self, mode, origins, calls, tag):
        self.mode = mode
        self.origins = origins
        self.scheme = "http" if mode == "http" else "https"
        self.every = origins <= 3
        self.sessions = math.ceil(calls / origins) if self.every else calls
        self.calls = self.sessions * origins if self.every else calls
        self.prefix = tag
        self.names = [f"o{i}" for i in range(origins)]

    def base(self, i):
        return f"{self.scheme}://{HOST}:{PORT_BASE + i}"

    def endpoints(self):
        return [(f"o{i}", self.base(i) + "/user/{session}/endsession") for i in range(self.origins)]

    def session_endpoints(self, i):
        return self.names if self.every else [self.names[i % self.origins]]

    def urls(self):
        for i in range(self.sessions):
            key = f"{self.prefix}-{i}"
            for name in self.session_endpoints(i):
                yield f"{self.base(int(name[1:]))}/user/{key}/endsession"


class NetworkSuite:
    def __init__(self, bench):
        self.bench = bench
        self.args = bench.args
        self.quick = bench.quick
        self.netdelay = Path(self.args.netdelay)
        self.floor = Path(self.args.floor)
        self.baseline = Path(self.args.baseline_daemon) if self.args.baseline_daemon else None
        self.tls_dir = bench.work / "tls"
        self.ns = None
        self.rows = {}

    # ------------------------------------------------------------------ setup

    def __enter__(self):
        # 1,000 origins: nginx holds 1,000 listening sockets and as many connections; every child
        # inherits this.
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 65536)), hard))
        for tool in ("ip", "iptables", "nginx"):
            if shutil.which(tool) is None:
                raise b.BenchError(f"{tool} not found (scripts/test.sh installs iproute2, iptables, nginx-light)")
        for path in (self.netdelay, self.floor):
            if not os.access(path, os.X_OK):
                raise b.BenchError(f"{path} is missing: run scripts/bench.sh, which builds it")
        subprocess.run(["sh", str(b.REPO / "Tests" / "Support" / "make_test_ca.sh"), str(self.tls_dir)],
                       check=True, capture_output=True, timeout=60)
        self.ns = Namespace()
        return self

    def __exit__(self, *exc):
        if self.ns:
            self.ns.close()

    # ------------------------------------------------------------------ clients

    def clients(self):
        """(label, kind, binary): the daemon, the same daemon at its second start if asked
        (--daemon-warm), the baseline daemon if given, the C floor, curl."""
        out = [("session-cleanup", "daemon", self.bench.daemon)]
        if self.args.daemon_warm:
            out.append(("session-cleanup, second start", "daemon-warm", self.bench.daemon))
        if self.baseline:
            out.append(("session-cleanup (before)", "daemon", self.baseline))
        out += [(b.FLOOR_CLIENT, "floor", self.floor), ("curl --parallel 256", "curl", None)]
        return out

    def measure(self, kind, binary, work, http="1.1", streams=128, extra_lines="", prefix=(), budget=60,
                instrument=None, sample_memory=False):
        """One measurement with a fresh delayer and nginx. Returns the row's figures; with
        sample_memory, also the MemorySampler's (from READY=1, or the floor's start, to the exit;
        the curve is kept as memory.csv in the client's directory)."""
        state_dir = None
        if kind == "daemon-warm":
            state_dir = self.warm_up(binary, work, extra_lines)
            kind = "daemon"
        delayer = Delayer(self)
        server = None
        daemon = None
        sampler = None
        try:
            server = Nginx(self, work.mode, work.origins, streams=streams)
            ca = self.tls_dir / "ca.pem"
            result = {}
            if kind == "daemon":
                lines = extra_lines
                if work.scheme == "https":
                    lines += f"CAFile={ca}\n"
                daemon = b.Daemon(self.bench, f"{work.prefix}", work.endpoints(), budget_sec=budget, binary=binary,
                                  wrap=self.ns.wrap(), prefix=prefix, endpoint_lines=lines, state_dir=state_dir)
                daemon.start(ready_timeout=120 if prefix else 60)
                if sample_memory:
                    sampler = b.MemorySampler(daemon.pid).start()
                # One connection, in order: the daemon stores sessions by registration time and
                # calls them in that order — the order every other client gets its URLs in.
                result["register_s"] = b.register_bulk(daemon, work.prefix, work.sessions, work.session_endpoints,
                                                       REGISTER_PIPELINE, connections=1)
                if instrument:
                    instrument(daemon)
                result.update(daemon.stop(timeout=budget + 60))
                if sampler:
                    sampler.stop()
                    result.update(sampler.summary(t_signal=daemon.t_sigterm))
                    sampler.write_curve(daemon.dir / "memory.csv", daemon.t_sigterm)
                # The stop run's CPU (the floor's: the whole process), user and system apart.
                result["cpu_s"] = result["cpu_stop_s"]
                result["cpu_user_s"] = result["cpu_stop_user_s"]
                result["cpu_sys_s"] = result["cpu_stop_sys_s"]
                expected_exit = 0
                status = result["exit"]
                log_tail = daemon.log_tail(3)
            else:
                d = self.bench.newdir(f"{kind}-{work.prefix}")
                urls = d / "urls"
                urls.write_text("".join(u + "\n" for u in work.urls()))
                if kind == "floor":
                    argv = list(prefix) + [binary, "--urls", urls, "--parallel", b.CONCURRENCY, "--http", http]
                    if work.scheme == "https":
                        argv += ["--cafile", ca]
                else:
                    config = d / "curl.conf"
                    head = f'cacert = "{ca}"\n' if work.scheme == "https" else ""
                    head += "http2\n" if http == "2" else "http1.1\n"
                    config.write_text(head + "".join(f'url = "{u}"\noutput = "/dev/null"\n' for u in work.urls()))
                    argv = ["curl", "-s", "--parallel", "--parallel-max", b.CONCURRENCY, "--config", config]
                child = b.Child(self.ns.wrap(argv), self.bench.env(), stdout=d / "out.log", stderr=d / "err.log")
                if sample_memory:
                    sampler = b.MemorySampler(child.pid).start()
                timeout = 120 + (600 if prefix else 0)
                if not child.wait(timeout):
                    child.kill()
                    raise b.BenchError(f"{kind} still running after {timeout} s (killed)")
                if sampler:
                    sampler.stop()
                    result.update(sampler.summary())
                    sampler.write_curve(d / "memory.csv", child.t_spawn)
                result.update(wall_s=child.t_exit - child.t_spawn, cpu_s=child.cpu,
                              cpu_user_s=child.rusage.ru_utime, cpu_sys_s=child.rusage.ru_stime,
                              peak_rss_mb=child.maxrss_mb, page_faults_stop=child.rusage.ru_minflt,
                              exit=child.status)
                if kind == "floor":
                    lines = (d / "out.log").read_text().strip().splitlines()
                    if lines:
                        result["floor"] = json.loads(lines[-1])
                        result["wall_s"] = result["floor"]["wall_s"]  # its own clock: without start-up
                expected_exit = 0
                status = child.status
                log_tail = (d / "err.log").read_text(errors="replace").strip()[-300:]
            result.update(server.stop())
            server = None
            result["delayer"] = delayer.stop()
            delayer = None
            result["connections_accepted"] = result["delayer"]["syn_acks"]
            # Where the seconds go on a shared machine: the delayer's CPU beside the server's
            # (server_cpu_s) and the client's (cpu_s).
            result["delayer_cpu_s"] = result["delayer"]["cpu_s"]
            result["delayer_mean_late_us"] = result["delayer"]["mean_late_us"]
            result["load_1min"] = float(b.loadavg().split()[0])
            problems = []
            if status != expected_exit:
                problems.append(f"exit status {status} (expected {expected_exit}): {log_tail}")
            if result["server_requests"] != work.calls:
                problems.append(f"nginx logged {result['server_requests']} requests, expected {work.calls}")
            if result["server_unique_keys"] != work.sessions:
                problems.append(f"nginx saw {result['server_unique_keys']} distinct sessions, expected "
                                f"{work.sessions}")
            if result["delayer"]["overruns"] or result["delayer"]["ring_full"]:
                problems.append(f"the delayer lost packets: {result['delayer']}")
            if problems:
                raise b.BenchError("; ".join(problems))
            return result
        finally:
            if sampler:
                sampler.stop()
            if daemon and daemon.child and daemon.child.status is None:
                daemon.kill()
            if server:
                server.child.kill()
            if delayer:
                delayer.child.kill()

    def warm_up(self, binary, work, extra_lines):
        """The second start's (--daemon-warm) earlier life against servers of its own (one session per
        origin, ended by its stop), so the measured daemon starts on a state directory that has
        met every origin. Returns that state directory."""
        delayer = Delayer(self)
        server = daemon = None
        try:
            server = Nginx(self, work.mode, work.origins)
            lines = extra_lines + (f"CAFile={self.tls_dir / 'ca.pem'}\n" if work.scheme == "https" else "")
            daemon = b.Daemon(self.bench, f"{work.prefix}-warm", work.endpoints(), binary=binary,
                              wrap=self.ns.wrap(), endpoint_lines=lines)
            daemon.start()
            sessions = 1 if work.every else work.origins
            b.register_bulk(daemon, f"{work.prefix}w", sessions, work.session_endpoints, REGISTER_PIPELINE,
                            connections=1)
            result = daemon.stop(timeout=120)
            if result["exit"] != 0:
                raise b.BenchError(f"the warm-up daemon exited with {result['exit']}: {daemon.log_tail(3)}")
            return daemon.state_dir
        finally:
            if daemon and daemon.child and daemon.child.status is None:
                daemon.kill()
            if server:
                server.child.kill()
            delayer.child.kill()

    # ------------------------------------------------------------------ scenarios

    def matrix(self, scenario, configurations):
        """configurations: (name, mode, origins, calls, http, streams, extra endpoint lines).
        Every client runs every configuration; repeats rotate the clients' order."""
        repeat = self.args.repeat
        clients = self.clients()
        for name, mode, origins, calls, http, streams, extra in configurations:
            runs = {label: [] for label, _, _ in clients}
            errors = {}
            for r in range(repeat):
                order = clients[r % len(clients):] + clients[:r % len(clients)]
                for label, kind, binary in order:
                    if label in errors:
                        continue
                    work = Workload(mode, origins, calls, tag=f"{mode}{origins}r{r}{kind[0]}")
                    self.bench.log(f"{scenario}: {name}, {label} (run {r + 1}/{repeat})")
                    # The baseline predates HTTPVersion= (it always speaks HTTP/1.1): it runs without.
                    lines = extra if kind.startswith("daemon") and binary != self.baseline else ""
                    try:
                        runs[label].append(self.measure(kind, binary, work, http=http, streams=streams,
                                                        extra_lines=lines))
                    except b.BenchError as e:
                        errors[label] = str(e)
                    except Exception as e:  # noqa: BLE001 — a crash is a failed row
                        errors[label] = f"{type(e).__name__}: {e}"
            work = Workload(mode, origins, calls, tag="x")
            for label, _, _ in clients:
                row = {"scenario": scenario, "name": f"{name}: {label}", "ok": label not in errors,
                       "error": errors.get(label), "config": name, "client": label, "mode": mode,
                       "origins": origins, "calls": work.calls, "http": http, "streams": streams,
                       "ideal_s": ideal_s(work.calls, origins, mode), "load": b.loadavg()}
                if label not in errors:
                    row.update(summarize(runs[label]))
                    row["ratio"] = row["wall_s"] / row["ideal_s"]
                    row["connection_limit"] = max(origins, b.CONCURRENCY) * 1.25
                self.rows[(scenario, name, label)] = row
                self.bench.add(row)
            curl = self.rows.get((scenario, name, "curl --parallel 256"))
            for label, _, _ in clients:
                row = self.rows[(scenario, name, label)]
                if row["ok"] and curl and curl["ok"]:
                    row["wall_vs_curl"] = row["wall_s"] / curl["wall_s"]

    def origins(self):
        calls = 300 if self.quick else 10000
        counts = [1, 3] if self.quick else ORIGIN_COUNTS
        if self.args.origins:
            counts = [int(k) for k in self.args.origins.split(",")]
        pinned = self.args.daemon_http_version
        extra = f"HTTPVersion={pinned}\n" if pinned else ""
        suffix = f", daemon HTTPVersion={pinned}" if pinned else ""
        configurations = []
        for mode in self.args.modes.split(",") if self.args.modes else ("http", "https"):
            for k in counts:
                configurations.append((f"{mode.upper()} {k} origin{'s' if k > 1 else ''}{suffix}", mode, k, calls,
                                       "1.1", 128, extra))
        self.matrix("origins", configurations)

    def http2(self):
        calls = 300 if self.quick else 10000
        counts = [1] if self.quick else [1, 3, 100]
        streams_list = [128] if self.quick else [128, 256]
        configurations = []
        for streams in streams_list:
            for k in counts:
                name = f"h2 server ({streams} streams), {k} origin{'s' if k > 1 else ''}"
                # HTTP/1.1 is the daemon's default: its HTTP/2 rows ask for ALPN negotiation.
                configurations.append((name + ", HTTP/2 clients", "h2", k, calls, "2", streams,
                                       "HTTPVersion=auto\n"))
                if not self.quick:
                    configurations.append((name + ", HTTP/1.1 clients", "h2", k, calls, "1.1", streams,
                                           "HTTPVersion=1.1\n"))
        self.matrix("http2", configurations)

    def memory(self):
        calls = 1000 if self.quick else 50000
        clients = [c for c in self.clients() if c[1] != "curl"]
        for label, kind, binary in clients:
            work = Workload("http", 1, calls, tag=f"mem{kind[0]}")
            row = {"scenario": "memory", "name": f"{calls:,} calls, HTTP, 1 origin: {label}", "client": label,
                   "calls": work.calls, "ok": True, "error": None, "load": b.loadavg()}
            try:
                runs = [self.measure(kind, binary, work, budget=120, sample_memory=True)
                        for _ in range(self.args.repeat)]
                row.update(summarize(runs))
            except b.BenchError as e:
                row.update(ok=False, error=str(e))
            self.rows[("memory", label)] = row
            self.bench.add(row)
        floor = self.rows.get(("memory", b.FLOOR_CLIENT))
        for label, _, _ in clients:
            row = self.rows[("memory", label)]
            if row["ok"] and floor and floor["ok"]:
                row["rss_vs_floor"] = row["peak_rss_mb"] / floor["peak_rss_mb"]

    def cpu(self):
        """User instructions per call under callgrind (stop run only for the daemon; floor_run
        only for the floor), HTTP, 1 origin; the journal on (stderr to a file)."""
        if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
            self.bench.add({"scenario": "cpu", "name": "callgrind", "ok": False,
                            "error": "valgrind not found (apt-get install valgrind)"})
            return
        calls = 500 if self.quick else 10000
        clients = [c for c in self.clients() if c[1] != "curl"]
        for label, kind, binary in clients:
            work = Workload("http", 1, calls, tag=f"cg{kind[0]}")
            d = self.bench.newdir(f"callgrind-{kind}")
            out = d / "callgrind.out"
            row = {"scenario": "cpu", "name": f"{calls:,} calls, HTTP, 1 origin: {label}", "client": label,
                   "calls": work.calls, "ok": True, "error": None, "load": b.loadavg()}
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

                    self.measure(kind, stripped, work, prefix=prefix, budget=600, instrument=instrument,
                                 extra_lines="TimeoutSec=300s\n")
                else:
                    prefix = ["valgrind", "--tool=callgrind", "--toggle-collect=floor_run",
                              f"--callgrind-out-file={out}"]
                    self.measure(kind, binary, work, prefix=prefix)
                total = callgrind_total(out)
                row.update(instructions=total, per_call=total / work.calls, top=callgrind_top(out))
            except b.BenchError as e:
                row.update(ok=False, error=str(e))
            self.rows[("cpu", label)] = row
            self.bench.add(row)
        floor = self.rows.get(("cpu", b.FLOOR_CLIENT))
        for label, _, _ in clients:
            row = self.rows[("cpu", label)]
            if row["ok"] and floor and floor["ok"]:
                row["vs_floor"] = row["per_call"] / floor["per_call"]


    def syscalls(self):
        """System calls of the stop run (strace -c -f, attached after registration), HTTP,
        1 origin, 10,000 calls: where the system time goes. strace slows the run; the counts,
        not its times, are the figures."""
        if shutil.which("strace") is None:
            self.bench.add({"scenario": "syscalls", "name": "strace", "ok": False,
                            "error": "strace not found (apt-get install strace)"})
            return
        calls = 500 if self.quick else 10000
        clients = [c for c in self.clients() if c[1] == "daemon"]
        for label, kind, binary in clients:
            work = Workload("http", 1, calls, tag=f"sc{len(self.rows)}")
            d = self.bench.newdir("strace")
            out = d / "strace.txt"
            row = {"scenario": "syscalls", "name": f"{calls:,} calls, HTTP, 1 origin: {label}", "client": label,
                   "calls": work.calls, "ok": True, "error": None, "load": b.loadavg()}
            tracer = []

            def instrument(daemon):
                tracer.append(b.Child(["strace", "-c", "-f", "-o", out, "-p", daemon.pid], self.bench.env(),
                                      stdout=d / "strace.log"))
                time.sleep(0.5)  # strace attaches every thread before SIGTERM

            try:
                self.measure(kind, binary, work, budget=120, instrument=instrument)
                if tracer and not tracer[0].wait(60):
                    tracer[0].kill()
                counts = strace_counts(out)
                row.update(syscalls=sum(counts.values()), per_call=sum(counts.values()) / work.calls,
                           top=sorted(((n, name) for name, n in counts.items()), reverse=True)[:12])
            except b.BenchError as e:
                row.update(ok=False, error=str(e))
            self.rows[("syscalls", label)] = row
            self.bench.add(row)


def summarize(runs):
    """Medians of the numeric figures (counts stay integers), plus each run's wall time."""
    numeric = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    row = {}
    for key in runs[0]:
        values = [r[key] for r in runs if numeric(r.get(key))]
        if values:
            row[key] = b.statistics.median_low(values) if all(isinstance(v, int) for v in values) \
                else b.median(values)
    row["runs"] = len(runs)
    row["wall_runs_s"] = [round(r["wall_s"], 3) for r in runs]
    row["cpu_runs_s"] = [round(r["cpu_s"], 3) for r in runs]
    row["delayer_worst_late_us"] = max(r["delayer"]["worst_late_us"] for r in runs)
    return row


def strace_counts(path):
    """{system call: calls} from an `strace -c` summary."""
    counts = {}
    for line in Path(path).read_text(errors="replace").splitlines():
        fields = line.split()
        # % time, seconds, usecs/call, calls, [errors,] syscall
        if len(fields) >= 5 and fields[0][0].isdigit() and fields[-1] != "total":
            counts[fields[-1]] = int(fields[3])
    if not counts:
        raise b.BenchError(f"no system calls in {path}")
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
        raise b.BenchError(f"no instruction count in {path}")
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


def run(bench, only):
    with NetworkSuite(bench) as suite:
        if "origins" in only:
            suite.origins()
        if "http2" in only:
            suite.http2()
        if "memory" in only:
            suite.memory()
        if "cpu" in only:
            suite.cpu()
        if "syscalls" in only:
            suite.syscalls()
