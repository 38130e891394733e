"""The benchmark suite's library (Benchmarks/bench.py is its command line).

Shared pieces, each importing only those listed before it:
  common      constants (latency, concurrency, scenario names), BenchError, clean_env, median
  processes   Child (spawned through a launcher, waited for by pidfd, reaped with wait4),
              /proc samples of CPU, threads and context switches
  memory      smaps_rollup and MemorySampler (where a run's peak RSS is)
  notify      NotifySocket, a stand-in for systemd's
  loadserver  LoadServer (Benchmarks/LoadServer on 127.0.0.1) and FirstCallWatch
  daemon      Daemon: the daemon under test, started as systemd would, stopped by SIGTERM
  control     the control socket: bulk registration, requests, the stored count
  suite       Bench: one invocation's work directory and rows
  report      tables (text and Markdown) and the machine's description
  targets     the targets each invocation is judged against
Scenarios:
  local/      stop, peers, idle, lifecycle, register (the load server; no root)
  network/    origins, http2, memory, cpu, syscalls (nginx in a network namespace; root)
"""
