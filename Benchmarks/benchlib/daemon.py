"""The daemon under test, started by hand as systemd would (state and runtime directories,
NOTIFY_SOCKET), stopped by SIGTERM with the stop run's wall time, CPU and memory."""
import signal
import time
from pathlib import Path

from .common import CONCURRENCY, BenchError
from .notify import NotifySocket
from .processes import CLK_TCK, Child, proc_sample


class Daemon:
    """session-cleanup daemon started by hand: own state/runtime directories, config file and
    notify socket."""

    def __init__(self, bench, tag, endpoints, budget_sec=60, concurrency=CONCURRENCY, watchdog_usec=None,
                 state_dir=None, binary=None, wrap=(), endpoint_lines="", prefix=()):
        """endpoints: (name, url) pairs; endpoint_lines: more `Key=value` lines for every
        [Endpoint]; wrap: argv put before the daemon's (e.g. `ip netns exec NAME`); prefix: argv
        between wrap and the binary (e.g. valgrind); binary: instead of bench.daemon."""
        self.bench = bench
        self.binary = binary or bench.daemon
        self.wrap = list(wrap) + list(prefix)
        self.dir = bench.newdir("d-" + tag)
        self.state_dir = Path(state_dir) if state_dir else self.dir / "state"
        self.runtime_dir = self.dir / "run"
        self.state_dir.mkdir(exist_ok=True)
        self.runtime_dir.mkdir()
        self.budget_sec = budget_sec
        self.watchdog_usec = watchdog_usec
        self.config = self.dir / "session-cleanup.conf"
        text = f"[Stop]\nBudgetSec={budget_sec}s\nMaxConcurrentRequests={concurrency}\n"
        text += "[Control]\nSocketMode=0666\n"
        for name, url in endpoints:
            text += f"[Endpoint]\nName={name}\nURL={url}\n{endpoint_lines}"
        self.config.write_text(text)
        self.control = self.runtime_dir / "control.sock"
        self.notify = None
        self.child = None
        self.ready_s = None

    def start(self, ready_timeout=60):
        """Spawns the daemon and waits for READY=1; ready_s = spawn → READY=1."""
        self.notify = NotifySocket(self.dir / "notify.sock")
        extra = {"STATE_DIRECTORY": self.state_dir, "RUNTIME_DIRECTORY": self.runtime_dir,
                 "NOTIFY_SOCKET": self.notify.path}
        if self.watchdog_usec:
            extra["WATCHDOG_USEC"] = self.watchdog_usec
        self.child = Child(self.wrap + [self.binary, "daemon", "--config", self.config], self.bench.env(**extra),
                           stdout=self.dir / "daemon.log")
        deadline = time.monotonic() + ready_timeout
        while not self.notify.ready.wait(0.02):
            if self.child.wait(0):
                raise BenchError(f"daemon exited with {self.child.status} before READY=1: {self.log_tail()}")
            if time.monotonic() > deadline:
                self.child.kill()
                raise BenchError(f"daemon not READY=1 within {ready_timeout} s")
        self.ready_s = self.notify.ready_at - self.child.t_spawn
        return self.ready_s

    @property
    def pid(self):
        return self.child.pid

    def log_tail(self, lines=5):
        try:
            return " | ".join((self.dir / "daemon.log").read_text(errors="replace").strip().splitlines()[-lines:])
        except OSError:
            return ""

    def stop(self, timeout=None):
        """SIGTERM → exit.  Returns wall (s), exit status, CPU of the whole process and of the
        stop run alone (total minus what it had used before SIGTERM), peak RSS, RSS before."""
        timeout = timeout or self.budget_sec + 30
        before = proc_sample(self.pid)
        t0 = self.t_sigterm = time.monotonic()
        self.child.signal(signal.SIGTERM)
        if not self.child.wait(timeout):
            self.child.kill()
            raise BenchError(f"daemon still running {timeout} s after SIGTERM (killed)")
        wall = self.child.t_exit - t0
        self.close()
        return {"wall_s": wall, "exit": self.child.status, "cpu_total_s": self.child.cpu,
                "cpu_user_s": self.child.rusage.ru_utime, "cpu_sys_s": self.child.rusage.ru_stime,
                # What it had used before SIGTERM, threads that have ended included.
                "cpu_stop_s": max(0.0, self.child.cpu - before["cpu_s"]),
                # User and system apart (clock ticks before SIGTERM: 10 ms resolution).
                "cpu_stop_user_s": max(0.0, self.child.rusage.ru_utime - before["utime_ticks"] / CLK_TCK),
                "cpu_stop_sys_s": max(0.0, self.child.rusage.ru_stime - before["stime_ticks"] / CLK_TCK),
                "page_faults_stop": max(0, self.child.rusage.ru_minflt - before["minflt"]),
                "peak_rss_mb": self.child.maxrss_mb, "rss_before_stop_mb": before.get("VmRSS", 0) / 1024.0,
                "threads_before_stop": before["threads"],
                "cpu_ended_threads_before_stop_s": before["ended_threads_s"]}

    def kill(self):
        """SIGKILL (the store is durable: what was acknowledged stays)."""
        if self.child:
            self.child.kill()
        self.close()

    def close(self):
        if self.notify:
            self.notify.close()
            self.notify = None
