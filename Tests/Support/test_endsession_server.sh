#!/bin/bash
# Self-test for endsession_server.py and make_test_ca.sh, driven with curl.
# Usage: test_endsession_server.sh    (env PYTHON=/usr/bin/python3 to pick the interpreter)
# Starts servers on 127.0.0.1 and ::1 only, plain and TLS; prints "N passed, N failed" and
# exits non-zero if anything failed.
set -u

HERE=$(cd "$(dirname "$0")" && pwd)
PY=${PYTHON:-python3}
SERVER="$HERE/endsession_server.py"
WORK=$(mktemp -d "${TMPDIR:-/tmp}/endsession-test.XXXXXX")
PIDS=()
passed=0
failed=0

cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null; done
    wait 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

ok()   { passed=$((passed + 1)); echo "ok   - $1"; }
fail() { failed=$((failed + 1)); echo "FAIL - $1${2:+: $2}"; }
# expect NAME ACTUAL EXPECTED
expect() { if [ "$2" == "$3" ]; then ok "$1"; else fail "$1" "got '$2', want '$3'"; fi; }
# json FILE-OR-STRING PYTHON-EXPR  (the document is bound to d)
json() { "$PY" -c 'import json,sys; d=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }
hash() { "$PY" "$SERVER" --hash "$1"; }
# float comparison: ge A B
ge() { "$PY" -c 'import sys; sys.exit(0 if float(sys.argv[1]) >= float(sys.argv[2]) else 1)' "$1" "$2"; }

# start NAME ARGS... -> sets PORT; server log in $WORK/NAME.log, stats file in $WORK/NAME.stats
start() {
    local name=$1; shift
    "$PY" "$SERVER" --port 0 --ready-file "$WORK/$name.port" --log "$WORK/$name.log" \
        --stats-file "$WORK/$name.stats" "$@" 2>"$WORK/$name.err" &
    PIDS+=($!)
    LASTPID=$!
    for _ in $(seq 100); do [ -s "$WORK/$name.port" ] && break; sleep 0.05; done
    PORT=$(cat "$WORK/$name.port" 2>/dev/null)
    [ -n "$PORT" ] || { echo "server $name did not start:"; cat "$WORK/$name.err"; exit 1; }
}

"$HERE/make_test_ca.sh" "$WORK/ca" 2>/dev/null || { echo "make_test_ca.sh failed"; exit 1; }
CA=$WORK/ca
expect "make_test_ca: key mode 0600" "$(stat -c %a "$CA/server.key") $(stat -c %a "$CA/ca.key") $(stat -c %a "$CA/untrusted.key")" "600 600 600"
printf 's3cret-token\n' > "$WORK/token"

# ---------------------------------------------------------------- behaviours, 4 variants
for variant in "http 127.0.0.1" "http ::1" "https 127.0.0.1" "https ::1"; do
    set -- $variant
    scheme=$1 host=$2
    tls=()
    [ "$scheme" = https ] && tls=(--tls-cert "$CA/server.pem" --tls-key "$CA/server.key")
    name="b-$scheme-${host//:/}"
    start "$name" --host "$host" --token-file "$WORK/token" "${tls[@]}"
    urlhost=$host; [ "$host" = ::1 ] && urlhost="[::1]"
    base="$scheme://$urlhost:$PORT"
    C=(curl -sS --cacert "$CA/ca.pem" -m 5)
    t="[$scheme $host]"
    es() { echo "$base/user/$1/endsession"; }
    # status+body in one go
    sb() { "${C[@]}" -o - -w ' %{http_code}' "$@" 2>/dev/null; }

    expect "$t ok"            "$(sb "$(es ok-1)")"       '{"success": true} 200'
    expect "$t no"            "$(sb "$(es no-1)")"       '{"success": false} 200'
    expect "$t flaky 1st"     "$(sb "$(es flaky-1)" | awk '{print $NF}')" 500
    expect "$t flaky 2nd"     "$(sb "$(es flaky-1)")"    '{"success": true} 200'
    r=$("${C[@]}" -i "$(es busy-1)" | tr -d '\r')
    expect "$t busy 1st 429"  "$(echo "$r" | head -1)"  "HTTP/1.1 429 Too Many Requests"
    expect "$t busy Retry-After" "$(echo "$r" | grep -i '^retry-after:')" "Retry-After: 1"
    expect "$t busy 2nd"      "$(sb "$(es busy-1)")"     '{"success": true} 200'
    r=$("${C[@]}" -o /dev/null -w '%{time_total}' "$(es slow400-1)")
    if ge "$r" 0.4 && ! ge "$r" 2; then ok "$t slow400 took ${r}s"; else fail "$t slow400" "took ${r}s"; fi
    expect "$t badjson"       "$(sb "$(es badjson-1)")"  'not json{ 200'
    expect "$t gone"          "$(sb "$(es gone-1)" | awk '{print $NF}')" 404
    expect "$t auth no token" "$(sb "$(es auth-1)" | awk '{print $NF}')" 401
    expect "$t auth bad token" "$(sb -H 'Authorization: Bearer nope' "$(es auth-1)" | awk '{print $NF}')" 401
    expect "$t auth good"     "$(sb -H 'Authorization: Bearer s3cret-token' "$(es auth-1)")" '{"success": true} 200'
    expect "$t default"       "$(sb "$(es whatever-1)")" '{"success": true} 200'
    expect "$t query key"     "$(sb "$base/endsession?session=ok-q")" '{"success": true} 200'
    expect "$t POST body key" "$(sb -H 'Content-Type: application/json' -d '{"session": "ok-p"}' "$base/endsession")" '{"success": true} 200'
    expect "$t no key 400"    "$(sb "$base/endsession" | awk '{print $NF}')" 400
    expect "$t unknown route 404" "$(sb "$base/nope" | awk '{print $NF}')" 404
    # hang: curl must time out (28) without receiving anything
    "${C[@]}" -m 1 -o "$WORK/hang.out" "$(es hang-1)" 2>/dev/null; rc=$?
    expect "$t hang times out" "$rc/$(stat -c %s "$WORK/hang.out" 2>/dev/null || echo 0)" "28/0"
    # reset: partial body then RST; curl reports 56 (recv failure) or 18 (partial file)
    "${C[@]}" -o "$WORK/reset.out" "$(es reset-1)" 2>/dev/null; rc=$?
    if [ "$rc" = 56 ] || [ "$rc" = 18 ]; then ok "$t reset -> curl rc $rc"; else fail "$t reset" "curl rc $rc"; fi
    r=$("${C[@]}" -m 20 -o /dev/null -w '%{http_code} %{size_download}' "$(es huge-1)")
    expect "$t huge 10 MiB"   "$r" "200 10485760"
    r=$("${C[@]}" -m 20 -D "$WORK/h.hdr" -o /dev/null -w '%{http_code} %{size_download}' "$(es hugechunked-1)")
    expect "$t hugechunked 10 MiB" "$r $(grep -ci '^transfer-encoding: chunked' "$WORK/h.hdr")" "200 10485760 1"
    # keep-alive: three requests on one curl handle -> one new connection
    r=$("${C[@]}" -w '%{num_connects}' -o /dev/null "$(es ok-k1)" -o /dev/null "$(es ok-k2)" -o /dev/null "$(es ok-k3)")
    expect "$t keep-alive reuses connection" "$r" "100"

    st=$("${C[@]}" "$base/_stats")
    expect "$t stats ended ok-1"  "$(json "$st" "'$(hash ok-1)' in d['ended']")" True
    expect "$t stats no-1 not ended" "$(json "$st" "'$(hash no-1)' in d['ended']")" False
    expect "$t stats flaky calls" "$(json "$st" "d['by_key_hash']['$(hash flaky-1)']['calls']")" 2
    expect "$t stats huge counts as ended" "$(json "$st" "d['by_key_hash']['$(hash huge-1)']['successes']")" 1
    if [ "$scheme" = https ]; then
        "${C[@]}" --cacert "$CA/untrusted.pem" "$(es ok-u)" >/dev/null 2>&1; rc=$?
        expect "$t wrong CA refused (curl 60)" "$rc" 60
        "${C[@]}" -k "$(es ok-k)" >/dev/null 2>&1; rc=$?
        expect "$t -k still works" "$rc" 0
    fi
    if [ "$host" = 127.0.0.1 ] && [ "$scheme" = https ]; then
        expect "$t localhost name" "$(sb "$scheme://localhost:$PORT/user/ok-l/endsession")" '{"success": true} 200'
    fi
done

# ---------------------------------------------------------------- TLS with untrusted / wrong-name certs
start untrusted --tls-cert "$CA/untrusted.pem" --tls-key "$CA/untrusted.key"
curl -sS -m 5 --cacert "$CA/ca.pem" "https://127.0.0.1:$PORT/user/ok-1/endsession" >/dev/null 2>&1; rc=$?
expect "self-signed server cert refused (curl 60)" "$rc" 60
expect "refused handshake made no call" "$(json "$(curl -sS -k "https://127.0.0.1:$PORT/_stats")" "d['calls']")" 0
start wrongname --tls-cert "$CA/wrongname.pem" --tls-key "$CA/wrongname.key"
curl -sS -m 5 --cacert "$CA/ca.pem" "https://127.0.0.1:$PORT/user/ok-1/endsession" >/dev/null 2>&1; rc=$?
expect "wrong-name cert refused (curl 60)" "$rc" 60

# ---------------------------------------------------------------- latency, expect, reset, log, SIGTERM
printf 'ok-e1\nok-e2\nok-e3\n' > "$WORK/expect"
start main --latency-ms 200 --expect-keys "$WORK/expect"
base="http://127.0.0.1:$PORT"
r=$(curl -sS -o /dev/null -w '%{time_total}' "$base/user/ok-e1/endsession")
if ge "$r" 0.2 && ! ge "$r" 1.5; then ok "latency 200ms: ${r}s"; else fail "latency" "${r}s"; fi
r=$(curl -sS -o /dev/null -w '%{time_total}' "$base/_stats")
if ! ge "$r" 0.15; then ok "_stats not delayed: ${r}s"; else fail "_stats delayed" "${r}s"; fi
# 50 parallel requests must overlap (all finish in about one latency, not 50 of them)
s=$(date +%s.%N)
for i in $(seq 50); do echo "url = \"$base/user/ok-par$i/endsession\""; echo "output = /dev/null"; done > "$WORK/par.cfg"
curl -sS --parallel --parallel-max 50 -K "$WORK/par.cfg" 2>/dev/null
e=$(date +%s.%N)
d=$("$PY" -c "print(round($e-$s,3))")
if ! ge "$d" 2; then ok "50 parallel requests in ${d}s"; else fail "parallel" "${d}s"; fi
st=$(curl -sS "$base/_stats")
if ge "$(json "$st" "d['max_in_flight']")" 10; then ok "max_in_flight $(json "$st" "d['max_in_flight']")"; else fail "max_in_flight" "$(json "$st" "d['max_in_flight']")"; fi
curl -sS -o /dev/null "$base/user/ok-e2/endsession" -o /dev/null "$base/user/ok-e2/endsession"
st=$(curl -sS "$base/_stats")
expect "expected: missing e3" "$(json "$st" "d['expected']['missing']")" "['$(hash ok-e3)']"
expect "expected: duplicated e2" "$(json "$st" "d['expected']['duplicated']")" "['$(hash ok-e2)']"
expect "expected: not all at least once" "$(json "$st" "d['expected']['all_ended_at_least_once']")" False
curl -sS -o /dev/null -X POST -d '{"keys": ["ok-x1", "ok-x2"]}' "$base/_expect"
curl -sS -o /dev/null "$base/user/ok-x1/endsession" -o /dev/null "$base/user/ok-x2/endsession"
st=$(curl -sS "$base/_stats")
expect "/_expect: all exactly once" "$(json "$st" "d['expected']['all_ended_exactly_once']")" True
# abandoned: client gives up during the latency
curl -sS -m 0.1 "$base/user/ok-abandon/endsession" >/dev/null 2>&1
sleep 0.3
st=$(curl -sS "$base/_stats")
expect "abandoned reply not counted as ended" "$(json "$st" "['$(hash ok-abandon)' in d['abandoned'], '$(hash ok-abandon)' in d['ended']]")" "[True, False]"
expect "/_reset" "$(curl -sS -X POST "$base/_reset")" '{"reset": true}'
expect "stats after reset" "$(json "$(curl -sS "$base/_stats")" "(d['calls'], d['ended'])")" "(0, [])"
curl -sS -o /dev/null "$base/user/ok-secret-KEY123/endsession?x=1" -o /dev/null "$base/endsession?session=ok-secret-KEY456"
curl -sS -o /dev/null -H 'Authorization: Bearer tok-SECRET789' -d '{"session": "ok-secret-KEY789"}' "$base/endsession"
if grep -q -e 'secret-KEY' -e 'SECRET789' "$WORK/main.log"; then fail "log leaks raw keys/tokens"; else ok "log has no raw keys or tokens"; fi
expect "log path redacted" "$(grep -c "/user/<hash:$(hash ok-secret-KEY123)>/endsession" "$WORK/main.log")" 1
expect "log query redacted" "$(grep -c "session=<hash:$(hash ok-secret-KEY456)>" "$WORK/main.log")" 1
expect "log line fields" "$(tail -1 "$WORK/main.log" | "$PY" -c 'import json,sys; d=json.loads(sys.stdin.read()); print(d["method"], d["body_len"], "Authorization" in d["headers"], d["behaviour"], sorted(d) == sorted(["t","time","conn","seq","tls","method","path","query","headers","body_len","key_hash","behaviour","status"]))')" "POST 31 True ok True"
# hang connection stays open while the server stops: SIGTERM must still exit promptly
curl -sS -m 10 "$base/user/hang-term/endsession" >/dev/null 2>&1 &
sleep 0.3
kill -TERM "$LASTPID"
for _ in $(seq 40); do kill -0 "$LASTPID" 2>/dev/null || break; sleep 0.05; done
if kill -0 "$LASTPID" 2>/dev/null; then fail "SIGTERM exit"; else ok "SIGTERM exits with a hung connection open"; fi
wait "$LASTPID"; expect "exit status 0" "$?" 0
if [ -s "$WORK/main.stats" ]; then
    expect "stats file on SIGTERM" "$(json "$(cat "$WORK/main.stats")" "(d['calls'], len(d['ended']))")" "(4, 3)"
else
    fail "stats file on SIGTERM" "missing"
fi
if grep -q secret-KEY "$WORK/main.stats"; then fail "stats leak raw keys"; else ok "stats have no raw keys"; fi

# ---------------------------------------------------------------- connection handling options
start conn --max-requests-per-conn 2 --idle-timeout-s 0.3
base="http://127.0.0.1:$PORT"
r=$(curl -sS -w '%{num_connects}' -o /dev/null "$base/user/ok-1/endsession" -o /dev/null "$base/user/ok-2/endsession" -o /dev/null "$base/user/ok-3/endsession")
expect "--max-requests-per-conn 2: new connection for 3rd" "$r" "101"
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /user/ok-i/endsession HTTP/1.1\r\nHost: x\r\n\r\n' >&3
s=$(date +%s.%N); cat <&3 >/dev/null; e=$(date +%s.%N); exec 3<&-
d=$("$PY" -c "print(round($e-$s,2))")
if ge "$d" 0.25 && ! ge "$d" 2; then ok "--idle-timeout-s closes idle connection (${d}s)"; else fail "idle timeout" "${d}s"; fi
# HTTP/1.1 pipelining: two requests in one write, two answers in order
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GET /user/no-p1/endsession HTTP/1.1\r\nHost: x\r\n\r\nGET /user/ok-p2/endsession HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' >&3
r=$(cat <&3 | grep -o '{"success": [a-z]*}' | tr '\n' ' '); exec 3<&-
expect "pipelined requests answered in order" "$r" '{"success": false} {"success": true} '
# Expect: 100-continue with a large body
big=$("$PY" -c 'import json; print(json.dumps({"session": "ok-big", "pad": "x"*5000}))')
expect "Expect: 100-continue body" "$(curl -sS -m 2 -H 'Expect: 100-continue' -H 'Content-Type: application/json' -d "$big" "$base/endsession")" '{"success": true}'
# malformed request
exec 3<>"/dev/tcp/127.0.0.1/$PORT"
printf 'GARBAGE\r\n\r\n' >&3
r=$(head -1 <&3 | tr -d '\r'); exec 3<&-
expect "malformed request -> 400" "$r" "HTTP/1.1 400 Bad Request"

# ---------------------------------------------------------------- refused connection (closed port)
closed=$("$PY" -c 'import socket;s=socket.socket();s.bind(("127.0.0.1",0));print(s.getsockname()[1]);s.close()')
curl -sS -m 2 "http://127.0.0.1:$closed/user/ok-1/endsession" >/dev/null 2>&1; rc=$?
expect "closed port -> connection refused (curl 7)" "$rc" 7

# Unexpected exceptions end up on the servers' stderr.
if grep -l -E 'Traceback|Exception|Error' "$WORK"/*.err >/dev/null 2>&1; then
    fail "server stderr clean" "$(grep -h -A3 -E 'Traceback|Exception|Error' "$WORK"/*.err | head -20)"
else
    ok "server stderr clean"
fi

echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
