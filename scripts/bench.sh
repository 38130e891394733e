#!/bin/bash
# The one command for the benchmarks: builds the release daemon and the load server, then runs
# Benchmarks/bench.py with them.  Figures: bench-results/latest.json (and latest.md).
#
#   scripts/bench.sh              # the full suite (~10 min on 2 CPUs)
#   scripts/bench.sh --quick      # the CI smoke test (< 90 s after the build; no timing asserts)
#   scripts/bench.sh --only stop --repeat 3      # any other bench.py option
#
# Env: BENCH_SCRATCH (swift build scratch path, default .build: the same release build the
# system tests and the package use, scripts/build-release.sh, so scripts/test.sh builds it once).
# Needs: a Swift 6 toolchain, cc, curl, xargs, python3 (standard library only); for the network
# scenarios (origins, http2, cpu, memory, syscalls) root, iproute2, iptables, nginx-light, openssl,
# libcurl4-openssl-dev, libnetfilter-queue-dev, and valgrind for `cpu`, strace for `syscalls`.
# Network: 127.0.0.1 only: the host's for the load server, and that of a network namespace the
# suite creates (and deletes) for nginx behind a 50 ms round trip.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /opt/swift/usr/bin ] && PATH=/opt/swift/usr/bin:$PATH

for tool in swift cc curl xargs python3; do
    command -v "$tool" >/dev/null || { echo "bench.sh: $tool not found on PATH" >&2; exit 1; }
done

scratch=${BENCH_SCRATCH:-.build}
mkdir -p bench-results/bin
echo "== building session-cleanup (release, static Swift stdlib) in $scratch"
bin=$(SC_SCRATCH=$scratch scripts/build-release.sh)
echo "== building the load server, the network delayer and the C floor"
cc -O2 -Wall -Wextra -o bench-results/bin/loadserver Benchmarks/LoadServer/loadserver.c
cc -O2 -Wall -Wextra -o bench-results/bin/netdelay Benchmarks/NetDelay/netdelay.c -lnetfilter_queue
cc -O2 -Wall -Wextra -o bench-results/bin/floor Benchmarks/Floor/floor.c -lcurl

echo "== running Benchmarks/bench.py $*"
exec python3 Benchmarks/bench.py --daemon "$bin" --loadserver bench-results/bin/loadserver \
    --netdelay bench-results/bin/netdelay --floor bench-results/bin/floor \
    --markdown bench-results/latest.md "$@"
