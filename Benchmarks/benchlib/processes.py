"""Processes the suite starts: spawned through a tiny launcher so that their peak RSS is their
own, waited for through pidfds (bounded; no PID reuse), reaped with wait4 for their rusage; and
/proc samples of a running one (CPU per thread, context switches, RSS)."""
import os
import select
import signal
import subprocess
import time

from .common import BenchError

_children = []  # every Child still running, so an interrupted run ends them (by pidfd)

# A child's ru_maxrss is at least the RSS of the process it was forked from: exec() records the
# old mm's high-water mark (with vfork, the parent's own mm) in the child's rusage.  Spawned
# straight from this Python process, every child would "peak" at the suite's ~30-200 MB.  So
# children are started by a small /bin/sh that forks them in the background and exits; this
# process is a child subreaper (prctl), so they are re-parented to it and reaped here.
LAUNCHER = 'i=$1 o=$2 e=$3; shift 3; "$@" <"$i" >>"$o" 2>>"$e" & echo $!'
PR_SET_CHILD_SUBREAPER = 36


def become_subreaper():
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_CHILD_SUBREAPER)")


class Child:
    """A process we started (through LAUNCHER); waited for through a pidfd (bounded), reaped
    with wait4.  stdin/stdout/stderr are paths (stdout and stderr are appended to)."""

    def __init__(self, argv, env, stdin="/dev/null", stdout="/dev/null", stderr=None):
        self.argv = argv
        self.t_spawn = time.monotonic()
        launcher = subprocess.Popen(
            ["/bin/sh", "-c", LAUNCHER, "sh", str(stdin), str(stdout), str(stderr or stdout)] + [str(a) for a in argv],
            env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        line = launcher.stdout.readline()
        launcher.stdout.close()
        launcher.wait(10)
        if not line.strip().isdigit():
            raise BenchError(f"could not start {argv[0]}")
        self.pid = int(line)
        self.pidfd = os.pidfd_open(self.pid)  # an exited child stays a zombie until we reap it
        self.status = None  # exit code; negative: killed by that signal
        self.rusage = None
        self.t_exit = None
        _children.append(self)

    def wait(self, timeout):
        """True once the process has exited (and is reaped); False after timeout seconds."""
        if self.status is not None:
            return True
        poller = select.poll()
        poller.register(self.pidfd, select.POLLIN)
        if not poller.poll(max(0, int(timeout * 1000))):
            return False
        self.t_exit = time.monotonic()
        _, status, self.rusage = os.wait4(self.pid, 0)
        self.status = os.waitstatus_to_exitcode(status)
        os.close(self.pidfd)
        _children.remove(self)
        return True

    def signal(self, sig):
        if self.status is None:
            signal.pidfd_send_signal(self.pidfd, sig)

    def kill(self):
        self.signal(signal.SIGKILL)
        self.wait(10)

    @property
    def cpu(self):
        return self.rusage.ru_utime + self.rusage.ru_stime

    @property
    def maxrss_mb(self):
        return self.rusage.ru_maxrss / 1024.0


def end_all_children():
    for child in list(_children):
        try:
            child.kill()
        except OSError:
            pass


CLK_TCK = os.sysconf("SC_CLK_TCK")


def proc_sample(pid):
    """CPU (clock ticks from /proc/PID/stat; `cpu_s`: ns from schedstat summed over threads,
    plus the ticks of threads that have ended), RSS and, in `per_thread`, each thread's
    (sched_ns, vcsw, nvcsw): a thread that ends takes its counters with it, so differences
    between two samples go through `thread_delta`."""
    with open(f"/proc/{pid}/stat") as f:
        rest = f.read().rsplit(")", 1)[1].split()
    sample = {"t": time.monotonic(), "ticks": int(rest[11]) + int(rest[12]), "utime_ticks": int(rest[11]),
              "stime_ticks": int(rest[12]), "minflt": int(rest[7]), "sched_ns": 0, "threads": 0,
              "per_thread": {}}
    live_ticks = 0
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/schedstat") as f:
                sched_ns = int(f.read().split()[0])
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                thread = f.read().rsplit(")", 1)[1].split()
            live_ticks += int(thread[11]) + int(thread[12])
            vcsw = nvcsw = 0
            with open(f"/proc/{pid}/task/{tid}/status") as f:
                for line in f:
                    if line.startswith("voluntary_ctxt_switches:"):
                        vcsw = int(line.split()[1])
                    elif line.startswith("nonvoluntary_ctxt_switches:"):
                        nvcsw = int(line.split()[1])
        except (FileNotFoundError, ProcessLookupError):
            continue  # a thread that just ended
        sample["per_thread"][tid] = (sched_ns, vcsw, nvcsw)
        sample["sched_ns"] += sched_ns
        sample["threads"] += 1
    # The CPU of threads that have ended is in the process's ticks only (10 ms resolution).
    sample["ended_threads_s"] = max(0, sample["ticks"] - live_ticks) / CLK_TCK
    sample["cpu_s"] = sample["sched_ns"] / 1e9 + sample["ended_threads_s"]
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith(("VmRSS:", "VmHWM:", "RssAnon:", "RssFile:")):
                sample[line.split(":")[0]] = int(line.split()[1])  # kB
    return sample


def thread_delta(a, b):
    """What the threads did between samples `a` and `b`: sched_ns, vcsw and nvcsw summed over
    the threads alive at `b` (a thread new since `a` from zero), never negative; and the
    threads that ended in between, whose last counts are lost (each woke at least once, to
    end)."""
    zero = (0, 0, 0)
    sums = [0, 0, 0]
    for tid, counts in b["per_thread"].items():
        for i, (now, then) in enumerate(zip(counts, a["per_thread"].get(tid, zero))):
            sums[i] += now - then
    ended = len(set(a["per_thread"]) - set(b["per_thread"]))
    return {"sched_ns": sums[0], "vcsw": sums[1], "nvcsw": sums[2], "threads_ended": ended}


def settle_threads(pids, quiet_s=6.0, limit_s=30.0):
    """Waits until no thread of `pids` has started or ended for `quiet_s` (at most `limit_s`):
    a worker thread that times out and ends inside a measuring window would take its counters
    with it."""
    def threads():
        return {pid: frozenset(os.listdir(f"/proc/{pid}/task")) for pid in pids}
    start = last_change = time.monotonic()
    seen = threads()
    while time.monotonic() - last_change < quiet_s and time.monotonic() - start < limit_s:
        time.sleep(0.5)
        now = threads()
        if now != seen:
            seen, last_change = now, time.monotonic()
