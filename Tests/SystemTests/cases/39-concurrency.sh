#!/bin/bash
# 39-concurrency.sh — `[Endpoint] Concurrency=` under a real systemd, against a small server: the
# fleet benchmark's backlog-5 server (Benchmarks/fleet/backlog_server.py: Python's http.server,
# one request at a time, a listen backlog of 5) as a transient unit ordered Before= the daemon.
#   - the default (adaptive): `systemctl stop` with 50 sessions ends all 50 with exactly 50
#     requests at the server (the SYNs and requests its full accept queue dropped go again as
#     no attempt, never twice), and says why in the journal: an origin-limit entry for the
#     origin, its limit cut below the 50 calls sent at once, the cuts counted; `report` (the stopped
#     daemon's last stop run) has the origin's row;
#   - `Concurrency=fixed`: the same 50 ended with 50 requests, and no origin-limit entry (a fixed
#     origin has no adaptive limit to explain);
#   - `Concurrency=sometimes`: `systemctl reload` exits non-zero, the journal's reload-failed
#     names the file and line, the daemon keeps serving with what it had.
# Times are logged, not asserted (the kernel's SYN retransmissions make `fixed` take 1 s or more
# here; BENCHMARKS.md measures both).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../harness.sh
source "$HERE/harness.sh"
# shellcheck source=../journal.sh
source "$HERE/journal.sh"

sc_need_daemon 39-concurrency
if ! sc_is_elf "$SC_BINARY"; then
    sc_log "SKIP 39-concurrency: $SC_BINARY is not the real daemon"
    sc_summary; exit 0
fi

U=session-cleanup
SRV=small-server
PORT=18099
ORIGIN=http://127.0.0.1:$PORT
N=50
CT=concurrency-$$
CONF=/etc/session-cleanup/session-cleanup.conf
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; _sc_on_exit' EXIT
mkdir -p "$TMP/extra"
cp "$HERE/fixtures/sc_client.py" "$ROOT/Benchmarks/fleet/backlog_server.py" "$TMP/extra/"
endpoint() {        # endpoint [EXTRA-LINE] : the configuration, the endpoint pointing at the server
    printf '[Control]\nSocketMode=0666\n\n[Endpoint]\nName=small\nURL=%s/user/{session}/endsession\n%s' \
        "$ORIGIN" "${1:+$1$'\n'}"
}
endpoint > "$TMP/session-cleanup.conf"
export SC_EXTRA_DIR=$TMP/extra SC_CONF=$TMP/session-cleanup.conf

x() { sc_exec "$CT" "$@"; }
register_n() {      # register_n PREFIX : N fresh sessions, their ids printed
    local i
    for ((i = 0; i < N; i++)); do printf '%s-%s-%s\n' "$1" "$i" "$RANDOM$RANDOM"; done \
        | x python3 /opt/sc-test/sc_client.py register small "$1"
}
srv_stats() {
    x python3 -c "import urllib.request; print(urllib.request.urlopen('$ORIGIN/_stats', timeout=5).read().decode())"
}
stat_of() { grep -o "\"$1\": [0-9]*" <<< "$2" | grep -o '[0-9]*$'; }   # stat_of NAME STATS
set_config() {      # set_config [EXTRA-LINE] : the main configuration rewritten in place
    endpoint "${1:-}" | x sh -c "cat > $CONF"
}
# stop_with_n PREFIX : registers N sessions, stops the unit; sets STOP_MS and J (the journal since)
stop_with_n() {
    check "systemctl start $U ($1)" x systemctl start $U || { sc_dump "$CT" $U; sc_abort "start $U"; }
    local ids; ids=$(register_n "$1")
    check "registered $N sessions ($1)" sc_eq "$(wc -w <<< "$ids" | tr -d ' ')" $N
    local before; before=$(srv_stats)
    local c; c=$(cursor)
    local t0; t0=$(sc_ms)
    check "systemctl stop $U ($N sessions, $1)" x systemctl stop $U
    STOP_MS=$(( $(sc_ms) - t0 ))
    check "Result=success, ExecMainStatus=0 (nothing left)" \
        sc_eq "$(sc_prop "$CT" $U Result) $(sc_prop "$CT" $U ExecMainStatus)" "success 0"
    check "journal: stopped event" wait_event "$c" stopped SESSIONS_LEFT=0
    J=$(since "$c")
    check "journal: run-finished SESSIONS_ENDED=$N" \
        sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=run-finished RUN_KIND=stop SESSIONS_ENDED=$N SESSIONS_LEFT=0)" 1
    local after; after=$(srv_stats)
    check "server: exactly $N end-session requests, one per session ($1)" \
        sc_eq "$(( $(stat_of requests "$after") - $(stat_of requests "$before") )) $(( $(stat_of unique_keys "$after") - $(stat_of unique_keys "$before") ))" "$N $N"
}

sc_boot "$CT" || sc_abort "boot container $CT"
check "start $SRV (transient unit, backlog 5, Before=$U.service)" \
    x systemd-run --unit=$SRV -p Before=$U.service -p Description="small end-session server" \
        /usr/bin/python3 /opt/sc-test/backlog_server.py --host 127.0.0.1 --port $PORT --backlog 5 \
        --ready-file /run/$SRV.port \
    || sc_abort "start the small server"
check "$SRV listening" sc_wait_for 10 x test -s /run/$SRV.port || { sc_dump "$CT" $SRV; sc_abort "server ready"; }

# ------------------------------------------------------------- 1. the default: adaptive
stop_with_n adaptive
sc_log "adaptive: $N sessions against a backlog of 5 took $STOP_MS ms"
OL=$(jsel "$J" SESSION_CLEANUP_EVENT=origin-limit ORIGIN=$ORIGIN)
sc_log "origin-limit: $(jfield MESSAGE <<< "$OL")"
check "journal: one origin-limit entry for $ORIGIN" sc_eq "$(jcount "$OL")" 1
final=$(jfield LIMIT_FINAL <<< "$OL")
check "journal: the limit was cut below the $N calls sent at once (LIMIT_FINAL=${final:-?})" \
    test "${final:-99}" -lt $N
cuts=$(( $(jfield CUTS_UNACKNOWLEDGED <<< "$OL") + $(jfield CUTS_TIMEOUT <<< "$OL") \
    + $(jfield CUTS_REFUSED <<< "$OL") + $(jfield CUTS_RESET <<< "$OL") + $(jfield CUTS_SLOW <<< "$OL") ))
check "journal: the cuts are counted ($cuts)" test "$cuts" -gt 0
check "journal: origin-limit comes before run-finished" \
    test "$(first_with "$J" SESSION_CLEANUP_EVENT=origin-limit)" -lt "$(first_with "$J" SESSION_CLEANUP_EVENT=run-finished)"
report=$(x session-cleanup report 2>&1)
check "report of the stopped daemon has the origins' table" sc_has "$report" "Calls in flight per origin"
row=$(grep -F "$ORIGIN " <<< "$report" | head -n1)
sc_log "report: $row"
check "… the origin's row, its limit at the end ($final)" sc_eq "$(awk '{print $1, $3}' <<< "$row")" "$ORIGIN $final"

# ------------------------------------------------------------- 2. Concurrency=fixed
set_config "Concurrency=fixed"
stop_with_n fixed
sc_log "fixed: $N sessions against a backlog of 5 took $STOP_MS ms"
check "journal: no origin-limit entry with Concurrency=fixed" \
    sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=origin-limit)" 0

# ------------------------------------------------------------- 3. a value it does not know
set_config "Concurrency=fixed"
check "systemctl start $U (fixed)" x systemctl start $U || sc_abort "start $U"
C3=$(cursor)
set_config "Concurrency=sometimes"
reload_out=$(x systemctl reload $U 2>&1); reload_rc=$?
check "systemctl reload with Concurrency=sometimes exits non-zero (rc $reload_rc)" test "$reload_rc" -ne 0
check "the daemon is still active and serving" x session-cleanup status
check "journal: reload-failed names the file and line" \
    sc_has "$(jsel "$(since "$C3")" SESSION_CLEANUP_EVENT=reload-failed)" "session-cleanup.conf:7"
check "journal: … and the value" sc_has "$(jsel "$(since "$C3")" SESSION_CLEANUP_EVENT=reload-failed)" "Concurrency"
set_config
check "systemctl stop $U" x systemctl stop $U

sc_poweroff "$CT"
sc_summary
