#!/bin/bash
# check_loadserver.sh — build loadserver with cc -O2 and check it: function, counts,
# latency distribution, CPU use, 20k pending requests, 10k concurrent connections.
# 127.0.0.1 / ::1 only.  Prints "N passed, N failed"; exits non-zero on failure.
#
# Env: N (requests for the curl run, default 10000), PAR (curl parallelism, max 300,
#      default 256), LATENCY_MS (default 50), CPU_LIMIT (server CPU seconds allowed for the
#      curl run, default 0.3), CLIENT_NICE (default 10: the clients run at lower priority
#      so that on small machines the server is not starved by them — its lateness figures
#      then describe the server, not the CPU contention; set 0 to disable).
set -u
HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
N=${N:-10000} PAR=${PAR:-256} LAT=${LATENCY_MS:-50} CPU_LIMIT=${CPU_LIMIT:-0.3}
NICE=(nice -n "${CLIENT_NICE:-10}")
WORK=$(mktemp -d "${TMPDIR:-/tmp}/loadserver-check.XXXXXX")
BIN=$WORK/loadserver
PIDS=()
passed=0 failed=0
trap 'for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done; wait 2>/dev/null; rm -rf "$WORK"' EXIT

ok()   { passed=$((passed + 1)); echo "ok   - $1"; }
fail() { failed=$((failed + 1)); echo "FAIL - $1${2:+: $2}"; }
check() { local name=$1; shift; if "$PY" -c "import sys; sys.exit(0 if ($1) else 1)"; then ok "$name"; else fail "$name" "$1"; fi; }
jget() { "$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }

start() { # start NAME ARGS... -> PORT, SPID
    rm -f "$WORK/$1.port"
    "$BIN" --ready-file "$WORK/$1.port" "${@:2}" >"$WORK/$1.out" 2>"$WORK/$1.err" &
    SPID=$!; PIDS+=($SPID)
    for _ in $(seq 100); do [ -s "$WORK/$1.port" ] && break; sleep 0.02; done
    PORT=$(cat "$WORK/$1.port")
}
stop() { kill -TERM "$SPID"; wait "$SPID"; }

cc -O2 -Wall -Wextra -o "$BIN" "$HERE/loadserver.c" && ok "builds with cc -O2 -Wall -Wextra" || { fail build; exit 1; }

# ------------------------------------------------------------------ function
start f --latency-ms "$LAT"
b="http://127.0.0.1:$PORT"
r=$(curl -sS -w ' %{time_total}' "$b/user/fa/endsession")
expect_body=$(echo "$r" | cut -d' ' -f1-2)
[ "$expect_body" = '{"success": true}' ] && ok "reply body" || fail "reply body" "$r"
check "reply after ~${LAT} ms ($(echo "$r" | cut -d' ' -f3)s)" "$LAT/1000 <= $(echo "$r" | cut -d' ' -f3) < $LAT/1000 + 0.02"
r=$(curl -sS -o /dev/null -w '%{time_total}' "$b/_stats")
check "/_stats immediate (${r}s)" "$r < 0.02"
curl -sS -o /dev/null "$b/endsession?session=fq" -o /dev/null -d '{"session": "fb"}' "$b/endsession" \
     -o /dev/null "$b/user/fa/endsession"
st=$(curl -sS "$b/_stats")
check "keys from path, query, body ($(jget "$st" "(d['requests'], d['unique_keys'])"))" \
      "$(jget "$st" "(d['requests'], d['unique_keys']) == (4, 3)")"
stop
out=$(cat "$WORK/f.out")
check "SIGTERM prints final counts" "$(jget "$out" "(d['requests'], d['unique_keys']) == (4, 3)")"
start f6 --host ::1 --latency-ms 1
[ "$(curl -sS "http://[::1]:$PORT/user/x/endsession")" = '{"success": true}' ] && ok "::1" || fail "::1"
stop

# ------------------------------------------------------------------ curl load: N requests, PAR parallel
start c --latency-ms "$LAT"
for i in $(seq "$N"); do printf 'url = "http://127.0.0.1:%s/user/key-%d/endsession"\noutput = /dev/null\n' "$PORT" "$i"; done >"$WORK/urls"
s=$(date +%s.%N)
"${NICE[@]}" curl -sS --parallel --parallel-immediate --parallel-max "$PAR" -w '%{http_code} %{time_total}\n' \
    -K "$WORK/urls" >"$WORK/times" 2>/dev/null
e=$(date +%s.%N)
stop
final=$(cat "$WORK/c.out")
echo "# curl run: $N requests, parallel $PAR, latency $LAT ms, wall $("$PY" -c "print(round($e-$s,2))") s"
echo "# server: $final"
"$PY" - "$WORK/times" "$LAT" <<'EOF'
import sys
rows = [l.split() for l in open(sys.argv[1])]
t = sorted(float(x[1]) * 1000 for x in rows)
n = len(t); p = lambda q: t[min(n - 1, int(n * q))]
print("# client latency ms: min %.1f p50 %.1f p90 %.1f p99 %.1f max %.1f; non-200: %d" %
      (t[0], p(.5), p(.9), p(.99), t[-1], sum(x[0] != "200" for x in rows)))
EOF
check "all $N answered 200" "$(grep -c '^200 ' "$WORK/times") == $N"
check "server counted $N requests / $N unique keys" "$(jget "$final" "(d['requests'], d['unique_keys']) == ($N, $N)")"
check "no reply before the latency" "min(float(l.split()[1]) for l in open('$WORK/times')) >= $LAT/1000"
check "median reply within latency + 5 ms" "sorted(float(l.split()[1]) for l in open('$WORK/times'))[$N//2] < ($LAT+5)/1000"
# Lateness depends on the machine: on 2 vCPUs shared with curl, ~1-2% of replies are
# 5-10 ms late when the server is not scheduled in time (see the late_ms histogram above).
check "server: >= 99% of replies sent < 10 ms after their deadline" \
      "$(jget "$final" "d['late_ms']['>=10'] <= 0.01 * d['requests']")"
cpu=$(jget "$final" "round(d['cpu_user_s'] + d['cpu_sys_s'], 3)")
check "server CPU ${cpu}s < ${CPU_LIMIT}s for $N requests" "$cpu < $CPU_LIMIT"

# ------------------------------------------------------------------ 20,000 pending at once (pipelined)
start p --latency-ms "$LAT"
r=$("${NICE[@]}" "$PY" "$HERE/loadcheck.py" --port "$PORT" --connections 10 --requests 2000 --pipeline)
stop
echo "# pipelined: $r"
check "20,000 pipelined requests: no errors, all pending at once" \
      "$(jget "$r" "d['errors'] == 0 and d['requests'] == 20000 and d['server']['max_pending'] == 20000")"
check "pipelined: server CPU $(jget "$r" "d['server']['cpu_user_s'] + d['server']['cpu_sys_s']")s" \
      "$(jget "$r" "d['server']['cpu_user_s'] + d['server']['cpu_sys_s'] < 0.3")"

# ------------------------------------------------------------------ 10,000 concurrent connections
start m --latency-ms 1000
r=$("${NICE[@]}" "$PY" "$HERE/loadcheck.py" --port "$PORT" --connections 10000)
stop
echo "# 10k connections: $r"
check "10,000 concurrent connections: all answered" \
      "$(jget "$r" "d['errors'] == 0 and d['requests'] == 10000 and d['server']['unique_keys'] == 10000")"

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
