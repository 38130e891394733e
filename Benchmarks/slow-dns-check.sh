#!/usr/bin/env bash
# Checks that a transfer stuck in DNS resolution ends at its timeout and does not block the
# loop (libcurl joins its resolver thread unless CURLOPT_QUICK_EXIT is set). Needs root: it
# runs in a private mount namespace whose /etc/resolv.conf points at a DNS server that never
# answers. Expect wall ≈ 0.5 s; a blocked loop shows ≈ 10 s.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=${SCRATCH:-/tmp/build-engine-bench}
swift build -c release --scratch-path "$scratch" --product engine-bench >/dev/null
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
printf 'nameserver 127.0.0.1\noptions timeout:5 attempts:2\n' >"$dir/resolv.conf"
cat >"$dir/sink.py" <<'PY'
import socket
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind(("127.0.0.1", 53))
while True:
    s.recvfrom(2048)
PY
unshare --mount bash -c "
    mount --bind '$dir/resolv.conf' /etc/resolv.conf
    python3 '$dir/sink.py' & sink=\$!
    sleep 0.3
    '$scratch/release/engine-bench' http://slow-dns.example.com/x 3 3 all 500
    kill \$sink"
