"""One invocation of the suite: its work directory, its rows, and how a scenario adds one."""
import tempfile
import time
from pathlib import Path

from .common import BenchError, clean_env


class Bench:
    """What every scenario shares: the arguments, the work directory (each measurement gets a
    directory of its own in it), the rows so far, the clock of the log lines."""

    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.work = Path(tempfile.mkdtemp(prefix="scbench-", dir=args.workdir))
        self.daemon = Path(args.daemon)
        self.loadserver = Path(args.loadserver)
        self.rows = []
        self.counter = 0
        self.only = set()  # the scenarios of this invocation
        self.stored_n = None  # the stored sessions lifecycle starts the daemon with
        self.stop_rows = {}  # (n, endpoints) -> row, for the peers' ratios
        self.state_snapshot = None  # (n, path): a copy of a daemon's state with n sessions stored
        self.t_start = time.monotonic()

    @property
    def snapshot_n(self):
        """The stop run whose store lifecycle reuses (a copy taken just before its SIGTERM)."""
        return self.stored_n if "lifecycle" in self.only else None

    def env(self, **extra):
        return clean_env(self.work, **extra)

    def newdir(self, tag):
        self.counter += 1
        path = self.work / f"{self.counter:03d}-{tag}"
        path.mkdir()
        return path

    def log(self, text):
        print(f"[{time.monotonic() - self.t_start:7.1f}s] {text}", flush=True)

    def add(self, row):
        self.rows.append(row)
        status = "ok" if row["ok"] else "ERROR: " + row["error"]
        self.log(f"{row['scenario']:<10} {row['name']:<28} {status}")
        return row

    def attempt(self, scenario, name, fn, **fields):
        """Runs fn() -> dict of figures; any failure becomes an ERROR row."""
        row = {"scenario": scenario, "name": name, "ok": True, "error": None}
        row.update(fields)
        try:
            row.update(fn())
        except BenchError as e:
            row.update(ok=False, error=str(e))
        except Exception as e:  # noqa: BLE001 — a crash in a scenario is a failed row, not a dead suite
            row.update(ok=False, error=f"{type(e).__name__}: {e}")
        return self.add(row)
