#!/bin/bash
# The one command for the benchmarks: builds the release daemon and the load server, then runs
# Benchmarks/bench.py with them.  Figures: bench-results/latest.json (and latest.md).
#
#   scripts/bench.sh              # the full suite (~10 min on 2 CPUs)
#   scripts/bench.sh --quick      # the CI smoke test (< 90 s after the build; no timing asserts)
#   scripts/bench.sh --only stop --repeat 3      # any other bench.py option
#
# Env: BENCH_SCRATCH (swift build scratch path, default .build: the same release build the
# system tests use, with the same flags, so scripts/test.sh builds it once).
# Needs: a Swift 6 toolchain, cc, curl, xargs, python3 (standard library only).
# Network: 127.0.0.1 only (the load server, the daemon's endpoints, the peers).
set -euo pipefail
cd "$(dirname "$0")/.."
[ -d /opt/swift/usr/bin ] && PATH=/opt/swift/usr/bin:$PATH

for tool in swift cc curl xargs python3; do
    command -v "$tool" >/dev/null || { echo "bench.sh: $tool not found on PATH" >&2; exit 1; }
done

scratch=${BENCH_SCRATCH:-.build}
mkdir -p bench-results/bin
echo "== building session-cleanup (release, static Swift stdlib) in $scratch"
swift build -c release --static-swift-stdlib --product session-cleanup -Xswiftc -warnings-as-errors \
    --scratch-path "$scratch"
bin=$(swift build -c release --static-swift-stdlib -Xswiftc -warnings-as-errors --scratch-path "$scratch" \
    --show-bin-path)/session-cleanup
echo "== building the load server"
cc -O2 -Wall -Wextra -o bench-results/bin/loadserver Benchmarks/LoadServer/loadserver.c

echo "== running Benchmarks/bench.py $*"
exec python3 Benchmarks/bench.py --daemon "$bin" --loadserver bench-results/bin/loadserver \
    --markdown bench-results/latest.md "$@"
