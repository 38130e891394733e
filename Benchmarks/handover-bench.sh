#!/bin/bash
# handover-bench.sh — the restart hand-over, measured: SIGTERM → exit of the old process with N
# stored sessions (default 10,000) under a real systemd (the system-test harness's container,
# the shipped units), and what the SIGTERM costs before a stop run's first call on a real disk.
#
#   sudo Benchmarks/handover-bench.sh [--sessions N] [--restarts R] [--binary PATH]
#
# Part 1 (container): registers N sessions, then R x `systemctl restart`. For each restart, from
# the journal's monotonic timestamps: systemd's "Stopping" entry (it sends SIGTERM right after)
# to its "Deactivated successfully" entry (it has reaped the old process) = SIGTERM → exit;
# the daemon's own QUERY_USEC (asking systemd over D-Bus: restart or stop?), CHECK_USEC (running
# check-config of the binary on disk: would the next process start?) and DURATION_USEC (signal
# handled → store closed, both included); the whole `systemctl restart` as the operator waits for it
# (old process gone, new one READY=1 with N sessions loaded). The container's overlay is mounted
# `volatile` (fsync is a no-op there), so part 2 measures the disk work on the host.
# Part 2 (host, real disk under /var/tmp): the daemon with N sessions, SIGTERM → stop-begun's
# SYNC_USEC: committing what is staged and making the stop run's start durable (write, fsync,
# rename, fsync the directory) before the first call.
# Prints a table and one JSON line ("handover-bench: {...}"). Timings are reported, never asserted.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/.." && pwd)
N=10000 R=5 BINARY=$ROOT/.build/release/session-cleanup
while [ $# -gt 0 ]; do
    case "$1" in
        --sessions) N=$2; shift 2 ;;
        --restarts) R=$2; shift 2 ;;
        --binary) BINARY=$2; shift 2 ;;
        *) sed -n '2,20p' "$0"; exit 2 ;;
    esac
done
[ "$(id -u)" = 0 ] || { echo "handover-bench.sh: needs root (it boots a container)" >&2; exit 1; }
[ -x "$BINARY" ] || { echo "handover-bench.sh: no $BINARY (swift build -c release --static-swift-stdlib)" >&2; exit 1; }
export SC_SANDBOX_ROOT=${SC_SANDBOX_ROOT:-/var/tmp/session-cleanup-bench-sandbox} SC_CG_PARENT=${SC_CG_PARENT:-sc-bench-handover}
# shellcheck source=../Tests/SystemTests/harness.sh
source "$ROOT/Tests/SystemTests/harness.sh"

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; _sc_on_exit' EXIT
mkdir -p "$TMP/extra"
cp "$ROOT/Tests/SystemTests/fixtures/sc_client.py" "$TMP/extra/"
printf '[Endpoint]\nName=auth\nURL=http://127.0.0.1:9/{session}\n' > "$TMP/session-cleanup.conf"
export SC_BINARY=$BINARY SC_UNIT=$ROOT/systemd/session-cleanup.service SC_SOCKET_UNIT=$ROOT/systemd/session-cleanup.socket \
    SC_SYSUSERS=$ROOT/systemd/session-cleanup.sysusers SC_CONF=$TMP/session-cleanup.conf SC_EXTRA_DIR=$TMP/extra
CT=handover-$$
U=session-cleanup
sc_setup >/dev/null 2>&1 || { echo "handover-bench.sh: harness setup failed" >&2; exit 1; }
sc_boot "$CT" 2>/dev/null || { echo "handover-bench.sh: boot failed" >&2; exit 1; }
x() { sc_exec "$CT" "$@"; }
median() { sort -n | awk '{ v[NR] = $1 } END { if (NR == 0) print "-"; else if (NR % 2) print v[(NR + 1) / 2]; else printf "%.1f\n", (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

x systemctl start $U || { sc_dump "$CT" $U; exit 1; }
t0=$(sc_ms)
for ((i = 0; i < N; i++)); do printf 'ok-bench-%08d\n' "$i"; done | x python3 /opt/sc-test/sc_client.py register auth bench > "$TMP/ids"
sc_log "registered $(wc -l < "$TMP/ids") sessions in $(( $(sc_ms) - t0 )) ms"
[ "$(wc -l < "$TMP/ids")" -eq "$N" ] || { echo "handover-bench.sh: registration failed" >&2; exit 1; }

# field ENTRY NAME : a field of one JSON journal line
field() { grep -o "\"$2\":\"[^\"]*\"" <<< "$1" | head -n1 | cut -d'"' -f4; }
: > "$TMP/rows"
for ((r = 1; r <= R; r++)); do
    x systemctl reset-failed $U
    cursor=$(sc_journal "$CT" -n 1 -o json | grep -o '"__CURSOR":"[^"]*"' | cut -d'"' -f4)
    t0=$(sc_ms)
    x systemctl restart $U || { sc_dump "$CT" $U; exit 1; }
    wall=$(( $(sc_ms) - t0 ))
    sc_wait_for 10 sh -c "journalctl --directory='$(sc_run_dir "$CT")/upper/var/log/journal' --after-cursor='$cursor' -o json | grep -q '\"SESSION_CLEANUP_EVENT\":\"ready\"'"
    J=$(sc_journal "$CT" --after-cursor="$cursor" -o json)
    stopping=$(grep '"UNIT":"session-cleanup.service"' <<< "$J" | grep '"MESSAGE":"Stopping ' | head -n1)
    deactivated=$(grep '"UNIT":"session-cleanup.service"' <<< "$J" | grep 'Deactivated successfully' | head -n1)
    begun=$(grep '"SESSION_CLEANUP_EVENT":"hand-over-begun"' <<< "$J" | head -n1)
    over=$(grep '"SESSION_CLEANUP_EVENT":"handed-over"' <<< "$J" | head -n1)
    ready=$(grep '"SESSION_CLEANUP_EVENT":"ready"' <<< "$J" | head -n1)
    exit_us=$(( $(field "$deactivated" __MONOTONIC_TIMESTAMP) - $(field "$stopping" __MONOTONIC_TIMESTAMP) ))
    printf '%d %s %s %s %s %s %s %s\n' "$r" "$(awk -v u="$exit_us" 'BEGIN { printf "%.2f", u / 1000 }')" \
        "$(awk -v u="$(field "$begun" QUERY_USEC)" 'BEGIN { printf "%.2f", u / 1000 }')" \
        "$(awk -v u="$(field "$over" DURATION_USEC)" 'BEGIN { printf "%.2f", u / 1000 }')" \
        "$wall" "$(awk -v u="$(field "$ready" DURATION_USEC)" 'BEGIN { printf "%.2f", u / 1000 }')" \
        "$(field "$over" SESSIONS_TOTAL)" \
        "$(awk -v u="$(field "$begun" CHECK_USEC)" 'BEGIN { printf "%.2f", u / 1000 }')" >> "$TMP/rows"
done
listed=$(x python3 /opt/sc-test/sc_client.py list | grep -o '"id":' | wc -l | tr -d ' ')

echo
echo "Restart hand-over with $N sessions under systemd $(x systemctl --version | head -n1 | awk '{print $2}') (container, $R restarts)"
echo
printf '| restart | SIGTERM → exit ms | D-Bus query ms | next-start check ms | signal → store closed ms | systemctl restart ms | new start → READY ms | sessions handed over |\n'
printf '|---:|---:|---:|---:|---:|---:|---:|---:|\n'
while read -r r e q d w s k c; do printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$r" "$e" "$q" "$c" "$d" "$w" "$s" "$k"; done < "$TMP/rows"
m_exit=$(awk '{print $2}' "$TMP/rows" | median); m_query=$(awk '{print $3}' "$TMP/rows" | median)
m_done=$(awk '{print $4}' "$TMP/rows" | median); m_wall=$(awk '{print $5}' "$TMP/rows" | median)
m_ready=$(awk '{print $6}' "$TMP/rows" | median); m_check=$(awk '{print $8}' "$TMP/rows" | median)
printf '| median | %s | %s | %s | %s | %s | %s | |\n' "$m_exit" "$m_query" "$m_check" "$m_done" "$m_wall" "$m_ready"
echo
echo "sessions listed after the restarts: $listed of $N"
sc_poweroff "$CT" 60 >/dev/null 2>&1 || true
sc_cleanup "$CT" >/dev/null 2>&1

# ------------------------------------------------------------------------ part 2: the host's disk
HOSTDIR=$(mktemp -d /var/tmp/sc-handover-bench-XXXXXX)
trap 'rm -rf "$TMP" "$HOSTDIR"; _sc_on_exit' EXIT
printf '[Stop]\nMaxAttempts=1\nBudgetSec=5s\n[Endpoint]\nName=auth\nURL=http://127.0.0.1:9/{session}\n' > "$HOSTDIR/conf"
: > "$TMP/sync"
# One store of N sessions, registered once (each registration waits for its fdatasync), then
# copied for every run; SIGKILL keeps them (no stop run).
STATE_DIRECTORY=$HOSTDIR/template RUNTIME_DIRECTORY=$HOSTDIR/run NOTIFY_SOCKET= \
    "$BINARY" daemon --config "$HOSTDIR/conf" 2> /dev/null &
pid=$!
sc_wait_for 10 test -S "$HOSTDIR/run/control.sock"
for ((i = 0; i < N; i++)); do printf 'ok-bench-%08d\n' "$i"; done \
    | SOCK=$HOSTDIR/run/control.sock python3 -c '
import json, os, socket, sys, threading
keys = sys.stdin.read().split()
def client(part):
    s = socket.socket(socket.AF_UNIX); s.connect(os.environ["SOCK"]); r = s.makefile("rb")
    for key in part:
        s.sendall(json.dumps({"op": "register", "key": key, "endpoints": ["auth"]}).encode() + b"\n"); r.readline()
threads = [threading.Thread(target=client, args=(keys[i::32],)) for i in range(32)]
[t.start() for t in threads]; [t.join() for t in threads]'
kill -KILL "$pid"; wait "$pid" 2>/dev/null
for ((r = 1; r <= R; r++)); do
    rm -rf "$HOSTDIR/state" "$HOSTDIR/run"
    cp -a "$HOSTDIR/template" "$HOSTDIR/state"
    sync
    STATE_DIRECTORY=$HOSTDIR/state RUNTIME_DIRECTORY=$HOSTDIR/run NOTIFY_SOCKET= \
        "$BINARY" daemon --config "$HOSTDIR/conf" 2> "$HOSTDIR/stderr" &
    pid=$!
    sc_wait_for 10 grep -q 'SESSION_CLEANUP_EVENT=ready' "$HOSTDIR/stderr"
    kill -TERM "$pid"; wait "$pid"
    grep -o 'SESSION_CLEANUP_EVENT=stop-begun.*' "$HOSTDIR/stderr" | grep -o 'SYNC_USEC=[0-9]*' | cut -d= -f2 >> "$TMP/sync"
done
m_sync=$(awk '{ printf "%.2f\n", $1 / 1000 }' "$TMP/sync" | median)
fs=$(findmnt -n -o FSTYPE -T "$HOSTDIR" 2>/dev/null || stat -f -c %T "$HOSTDIR")
echo
echo "SIGTERM → stop run's first call: commit + durable stop-run start, $N sessions, $fs under /var/tmp ($R runs)"
echo "SYNC_USEC ms: $(awk '{ printf "%.2f ", $1 / 1000 }' "$TMP/sync")(median $m_sync)"
echo
printf 'handover-bench: {"sessions": %d, "restarts": %d, "sigterm_to_exit_ms": %s, "query_ms": %s, "next_start_check_ms": %s, "signal_to_closed_ms": %s, "systemctl_restart_ms": %s, "start_to_ready_ms": %s, "listed_after": %d, "stop_sync_ms": %s, "filesystem": "%s"}\n' \
    "$N" "$R" "$m_exit" "$m_query" "$m_check" "$m_done" "$m_wall" "$m_ready" "$listed" "$m_sync" "$fs"
