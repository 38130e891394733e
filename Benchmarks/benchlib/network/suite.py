"""The clients of the network scenarios side by side: one measurement (a fresh delayer and nginx,
then one client's run) and the matrix of configurations × clients, repeats rotating the order."""
import json
import os
import resource
import shutil
import statistics
import subprocess
from pathlib import Path

from ..common import CONCURRENCY, FLOOR_CLIENT, FLOOR_USER_AGENT, REPO, BenchError, loadavg, median
from ..control import register_bulk
from ..daemon import Daemon
from ..memory import MemorySampler
from ..processes import Child
from .environment import Delayer, Namespace, Nginx
from .workload import Workload, ideal_s

REGISTER_PIPELINE = 64  # registrations in flight on the one control connection


class NetworkSuite:
    """The namespace, the test CA and the clients of one invocation's network scenarios; entered
    with `with`, which deletes the namespace again."""

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
                raise BenchError(f"{tool} not found (scripts/test.sh installs iproute2, iptables, nginx-light)")
        for path in (self.netdelay, self.floor):
            if not os.access(path, os.X_OK):
                raise BenchError(f"{path} is missing: run scripts/bench.sh, which builds it")
        subprocess.run(["sh", str(REPO / "Tests" / "Support" / "make_test_ca.sh"), str(self.tls_dir)],
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
        out += [(FLOOR_CLIENT, "floor", self.floor), ("curl --parallel 256", "curl", None)]
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
                daemon = Daemon(self.bench, f"{work.prefix}", work.endpoints(), budget_sec=budget, binary=binary,
                                  wrap=self.ns.wrap(), prefix=prefix, endpoint_lines=lines, state_dir=state_dir)
                daemon.start(ready_timeout=120 if prefix else 60)
                if sample_memory:
                    sampler = MemorySampler(daemon.pid).start()
                # One connection, in order: the daemon stores sessions by registration time and
                # calls them in that order — the order every other client gets its URLs in.
                result["register_s"] = register_bulk(daemon, work.prefix, work.sessions, work.session_endpoints,
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
                    argv = list(prefix) + [binary, "--urls", urls, "--parallel", CONCURRENCY, "--http", http,
                                           "--user-agent", FLOOR_USER_AGENT]
                    if work.scheme == "https":
                        argv += ["--cafile", ca]
                else:
                    config = d / "curl.conf"
                    head = f'cacert = "{ca}"\n' if work.scheme == "https" else ""
                    head += "http2\n" if http == "2" else "http1.1\n"
                    config.write_text(head + "".join(f'url = "{u}"\noutput = "/dev/null"\n' for u in work.urls()))
                    argv = ["curl", "-s", "--parallel", "--parallel-max", CONCURRENCY, "--config", config]
                child = Child(self.ns.wrap(argv), self.bench.env(), stdout=d / "out.log", stderr=d / "err.log")
                if sample_memory:
                    sampler = MemorySampler(child.pid).start()
                timeout = 120 + (600 if prefix else 0)
                if not child.wait(timeout):
                    child.kill()
                    raise BenchError(f"{kind} still running after {timeout} s (killed)")
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
            result["load_1min"] = float(loadavg().split()[0])
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
                raise BenchError("; ".join(problems))
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
            daemon = Daemon(self.bench, f"{work.prefix}-warm", work.endpoints(), binary=binary,
                              wrap=self.ns.wrap(), endpoint_lines=lines)
            daemon.start()
            sessions = 1 if work.every else work.origins
            register_bulk(daemon, f"{work.prefix}w", sessions, work.session_endpoints, REGISTER_PIPELINE,
                            connections=1)
            result = daemon.stop(timeout=120)
            if result["exit"] != 0:
                raise BenchError(f"the warm-up daemon exited with {result['exit']}: {daemon.log_tail(3)}")
            return daemon.state_dir
        finally:
            if daemon and daemon.child and daemon.child.status is None:
                daemon.kill()
            if server:
                server.child.kill()
            delayer.child.kill()

    # ------------------------------------------------------------------ the matrix

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
                    except BenchError as e:
                        errors[label] = str(e)
                    except Exception as e:  # noqa: BLE001 — a crash is a failed row
                        errors[label] = f"{type(e).__name__}: {e}"
            work = Workload(mode, origins, calls, tag="x")
            for label, _, _ in clients:
                row = {"scenario": scenario, "name": f"{name}: {label}", "ok": label not in errors,
                       "error": errors.get(label), "config": name, "client": label, "mode": mode,
                       "origins": origins, "calls": work.calls, "http": http, "streams": streams,
                       "ideal_s": ideal_s(work.calls, origins, mode), "load": loadavg()}
                if label not in errors:
                    row.update(summarize(runs[label]))
                    row["ratio"] = row["wall_s"] / row["ideal_s"]
                    row["connection_limit"] = max(origins, CONCURRENCY) * 1.25
                self.rows[(scenario, name, label)] = row
                self.bench.add(row)
            curl = self.rows.get((scenario, name, "curl --parallel 256"))
            for label, _, _ in clients:
                row = self.rows[(scenario, name, label)]
                if row["ok"] and curl and curl["ok"]:
                    row["wall_vs_curl"] = row["wall_s"] / curl["wall_s"]


def summarize(runs):
    """Medians of the numeric figures (counts stay integers), plus each run's wall time."""
    numeric = lambda v: isinstance(v, (int, float)) and not isinstance(v, bool)
    row = {}
    for key in runs[0]:
        values = [r[key] for r in runs if numeric(r.get(key))]
        if values:
            row[key] = statistics.median_low(values) if all(isinstance(v, int) for v in values) \
                else median(values)
    row["runs"] = len(runs)
    row["wall_runs_s"] = [round(r["wall_s"], 3) for r in runs]
    row["cpu_runs_s"] = [round(r["cpu_s"], 3) for r in runs]
    row["delayer_worst_late_us"] = max(r["delayer"]["worst_late_us"] for r in runs)
    return row
