#!/usr/bin/env bash
# Throughput of HTTPEngine: REQUESTS requests at 50 ms server latency, CONCURRENCY connections,
# against Tests/Support/http_test_server.py on 127.0.0.1. Prints the engine's wall and CPU time.
#   Benchmarks/engine-bench.sh [REQUESTS [CONCURRENCY [window|all]]]
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=${SCRATCH:-/tmp/build-engine-bench}
swift build -c release --scratch-path "$scratch" --product engine-bench >/dev/null
out=$(mktemp)
python3 Tests/Support/http_test_server.py >"$out" &
server=$!
trap 'kill $server 2>/dev/null; rm -f "$out"' EXIT
for _ in $(seq 50); do grep -q PORT "$out" && break; sleep 0.1; done
port=$(awk '/PORT/ {print $2}' "$out")
/usr/bin/time -v "$scratch/release/engine-bench" "http://127.0.0.1:$port/delay/50" "${1:-10000}" "${2:-256}" "${3:-window}" 2>&1 |
    grep -E 'mode=|wall=|results=|idle after|Elapsed|User time|System time|Maximum resident'
