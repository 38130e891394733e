"""Where a process's memory is: /proc/PID/smaps_rollup read once, or sampled through a run."""
import threading
import time

def smaps_rollup(pid):
    """(RSS, anonymous) in kB from /proc/PID/smaps_rollup, or None once the process is gone.
    File-backed is the difference (shared memory, which none of the clients maps, would count
    there too)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup") as f:
            text = f.read()
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None
    fields = {}
    for line in text.splitlines()[1:]:
        name, _, rest = line.partition(":")
        if rest:
            fields[name] = int(rest.split()[0])
    if "Rss" not in fields:
        return None  # a zombie: no mappings left
    return fields["Rss"], fields.get("Anonymous", 0)


class MemorySampler:
    """/proc/PID/smaps_rollup every `interval` s on a thread, from start() until the process has
    gone: where a run's peak RSS is (anonymous and file-backed apart), what the process held
    just before SIGTERM, and how fast anonymous memory grew after it. The kernel's peak
    (wait4's ru_maxrss) can be a little higher: a peak between two samples is missed."""

    def __init__(self, pid, interval=0.02):
        self.pid = pid
        self.interval = interval
        self.samples = []  # (monotonic s, RSS kB, anonymous kB)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def start(self):
        self._sample()
        self._thread.start()
        return self

    def _sample(self):
        sample = smaps_rollup(self.pid)
        if sample is not None:
            self.samples.append((time.monotonic(),) + sample)
        return sample is not None

    def _run(self):
        while not self._stop.is_set() and self._sample():
            self._stop.wait(self.interval)

    def stop(self):
        self._stop.set()
        self._thread.join(10)

    def write_curve(self, path, t0):
        """The samples as CSV: ms since t0 (SIGTERM, or the start), RSS, anonymous, file kB."""
        with open(path, "w") as f:
            f.write("ms,rss_kb,anon_kb,file_kb\n")
            for t, rss, anon in self.samples:
                f.write(f"{(t - t0) * 1000:.1f},{rss},{anon},{rss - anon}\n")

    def summary(self, t_signal=None, growth_window=0.1):
        """Figures in MB: the sampled peak (anonymous and file-backed at that sample, and the
        highest anonymous of all); with t_signal (the SIGTERM's time), the last sample before
        it and the anonymous growth from there to the highest within growth_window after it."""
        if not self.samples:
            return {}
        mb = lambda kb: kb / 1024.0
        _, rss, anon = max(self.samples, key=lambda s: s[1])
        out = {"sampled_peak_rss_mb": mb(rss), "peak_anon_mb": mb(anon), "peak_file_mb": mb(rss - anon),
               "max_anon_mb": mb(max(s[2] for s in self.samples)), "memory_samples": len(self.samples)}
        if t_signal is not None:
            before = [s for s in self.samples if s[0] < t_signal]
            after = [s for s in self.samples if t_signal <= s[0] <= t_signal + growth_window]
            if before:
                _, rss0, anon0 = before[-1]
                out.update(rss_before_sigterm_mb=mb(rss0), anon_before_sigterm_mb=mb(anon0),
                           file_before_sigterm_mb=mb(rss0 - anon0))
                if after:
                    out["anon_growth_100ms_mb"] = mb(max(s[2] for s in after) - anon0)
        return out
