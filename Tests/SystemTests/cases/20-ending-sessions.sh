#!/bin/bash
# 20-ending-sessions.sh — the daemon ends registered sessions when it stops, under a real systemd:
#   - the unit passes `systemd-analyze verify` inside the container;
#   - `systemctl stop` with 50 sessions: all ended exactly once (the server's own count), each
#     in a calls-ended journal entry (ended calls are grouped), a run-finished summary, an empty
#     store afterwards;
#   - EXTEND_TIMEOUT_USEC=: a stop run longer than TimeoutStopSec= (inside its budget) is not killed;
#   - an expired stop run: exit 75 (a success for the unit), OUTCOME=unconfirmed for the calls
#     whose requests the server had, and the leftovers
#     ended in the background after the next start (after READY=1); a stop while that leftover
#     run still waits takes its sessions over;
#   - `systemctl poweroff` of the whole container (TimeoutStopSec=2s, calls taking 3 s): every
#     session ended before the end-session server (and the network targets) went away;
#   - no session key anywhere in the container's journal or in anything the tests printed.
# One container, steps in sequence; the end-session test server (Tests/Support) runs inside it as
# the transient unit endsession-server.service, ordered Before=session-cleanup.service so that at
# shutdown it stops only after session-cleanup.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../harness.sh
source "$HERE/harness.sh"
# shellcheck source=../journal.sh
source "$HERE/journal.sh"

sc_need_daemon 20-ending-sessions
# The stand-in daemon (fixtures/) has no control socket and ends no sessions: nothing to test.
if ! sc_is_elf "$SC_BINARY"; then
    sc_log "SKIP 20-ending-sessions: $SC_BINARY is not the real daemon"
    sc_summary; exit 0
fi

U=session-cleanup
SRV=endsession-server
PORT=18080
CT=ending-$$
RUN=$(sc_run_dir "$CT")
STATS_FILE=/var/lib/$SRV/stats.json            # written by the server when it stops (SIGTERM)
CONFD=/etc/session-cleanup/session-cleanup.conf.d
UNITD=/etc/systemd/system/$U.service.d

# Files put into the container: the server, the client, a configuration pointing at the server.
TMP=$(mktemp -d)
ALL_KEYS=$TMP/all-keys                          # every key used, for the secrets check
ERRLOG=$TMP/stderr.log                          # stderr of everything run inside
trap 'rm -rf "$TMP"; _sc_on_exit' EXIT
mkdir -p "$TMP/extra"
cp "$ROOT/Tests/Support/endsession_server.py" "$HERE/fixtures/sc_client.py" "$TMP/extra/"
cat > "$TMP/session-cleanup.conf" <<EOF
[Control]
SocketMode=0666

[Endpoint]
Name=auth
URL=http://127.0.0.1:$PORT/user/{session}/endsession
EOF
export SC_EXTRA_DIR=$TMP/extra SC_CONF=$TMP/session-cleanup.conf

# ------------------------------------------------------------------------------------- helpers
x() { sc_exec "$CT" "$@" 2> >(tee -a "$ERRLOG" >&2); }    # run inside; stderr also kept for the secrets check

# new_keys PREFIX N : N fresh random keys (PREFIX picks the server's behaviour), also noted
new_keys() {
    local i
    for ((i = 0; i < $2; i++)); do printf '%s%s\n' "$1" "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"; done \
        | tee -a "$ALL_KEYS"
}
client() { x python3 /opt/sc-test/sc_client.py "$@"; }      # fixtures/sc_client.py
# register KEYS [LABEL] : registers over the control socket, prints the ids (keys via stdin only)
register() { client register auth "${2:-}" <<< "$1"; }
srv_stats() { client stats $PORT; }
srv_expect() { client reset $PORT >/dev/null && client expect $PORT <<< "$1" >/dev/null; }
list_json() { x session-cleanup list --json; }
list_empty() { [ "$(list_json)" = "[]" ]; }

# The journal, read from outside: jr, cursor, since, jsel, jcount, wait_event, first_with, ended_ids (journal.sh).
jval() { grep -o "\"$2\":\"[^\"]*\"" <<< "$1" | head -n1 | cut -d'"' -f4; }     # jval LINE FIELD
jvals() { grep -o "\"$2\":\"[^\"]*\"" <<< "$1" | cut -d'"' -f4 | sort; }       # all, sorted
# every entry of JSON with FIELD=VALUE... also has each FIELD in $WANT
all_have() {
    local sel=$1 f missing=0; shift
    for f in "$@"; do
        local n; n=$(grep -c "\"$f\":\"[^\"]" <<< "$sel")
        [ "$n" -eq "$(wc -l <<< "$sel")" ] || { echo "$f missing in $(( $(wc -l <<< "$sel") - n )) entries"; missing=1; }
    done
    return $missing
}
stats_has() { sc_has "$1" "$2"; }
start_unit() { check "systemctl start $U ($1)" x systemctl start $U || { sc_dump "$CT" $U; return 1; }; }

# ------------------------------------------------------------------------------------------ boot
: > "$ALL_KEYS"; : > "$ERRLOG"
sc_boot "$CT" || sc_abort "boot container $CT"

# --- 6. the unit verifies in place (the binary it names exists inside)
check "systemd-analyze verify $U.service" x systemd-analyze verify "$(sc_unit_file "$CT" $U.service)"
# The hardening stays as documented: an exposure score of at most 2.0 ("OK").
exposure=$(x systemd-analyze security --offline=yes "$(sc_unit_file "$CT" $U.service)" 2>&1 | awk '/Overall exposure level/ {print $(NF-2)}')
sc_log "systemd-analyze security: exposure $exposure"
check "systemd-analyze security: exposure ${exposure:-?} <= 2.0" awk -v e="${exposure:-99}" 'BEGIN { exit !(e + 0 <= 2.0) }'

# --- the end-session server, inside (only loopback here); stopped after session-cleanup
x mkdir -p /var/lib/$SRV
check "start $SRV (transient unit, Before=$U.service)" \
    x systemd-run --unit=$SRV -p Before=$U.service -p Description="end-session test server" \
        /usr/bin/python3 /opt/sc-test/endsession_server.py --host 127.0.0.1 --port $PORT \
        --ready-file /run/$SRV.port --stats-file $STATS_FILE \
    || sc_abort "start the test server"
check "$SRV listening" sc_wait_for 10 x test -s /run/$SRV.port || { sc_dump "$CT" $SRV; sc_abort "server ready"; }
check "$SRV ordered Before=$U.service" sc_has "$(sc_prop "$CT" $SRV Before)" "$U.service"

# ------------------------------------------------------- 1. systemctl stop with 50 sessions
N=50
start_unit "50 sessions" || sc_abort "start $U"
KEYS1=$(new_keys ok- $N)
IDS1=$(register "$KEYS1" step1)
check "registered $N sessions" sc_eq "$(wc -w <<< "$IDS1" | tr -d ' ')" $N
srv_expect "$KEYS1"
check "list --json shows $N sessions" sc_eq "$(grep -o '"id":' <<< "$(list_json)" | wc -l | tr -d ' ')" $N
C1=$(cursor)
t0=$(sc_ms)
check "systemctl stop $U (50 sessions)" x systemctl stop $U
stop1_ms=$(( $(sc_ms) - t0 ))
sc_log "stop with $N sessions took $stop1_ms ms"
check "Result=success" sc_eq "$(sc_prop "$CT" $U Result)" success
check "ExecMainStatus=0 (nothing left)" sc_eq "$(sc_prop "$CT" $U ExecMainStatus)" 0
S=$(srv_stats)
check "server: all $N ended exactly once" stats_has "$S" '"all_ended_exactly_once": true'
check "server: $N end-session calls" stats_has "$S" "\"calls\": $N,"
check "journal: stopped event" wait_event "$C1" stopped
J=$(since "$C1")
check "journal: no call-finished entry (every call ended)" \
    sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=call-finished)" 0
CE=$(jsel "$J" SESSION_CLEANUP_EVENT=calls-ended OUTCOME=ended HTTP_STATUS=200 ENDPOINT=auth RUN_KIND=stop)
check "journal: the ended calls grouped in calls-ended entries (OUTCOME=ended HTTP_STATUS=200 ENDPOINT=auth RUN_KIND=stop)" \
    sc_eq "$(jcount "$CE")" "$(jcount "$J" SESSION_CLEANUP_EVENT=calls-ended)"
check "journal: each has CALLS, URL and the run id" all_have "$CE" CALLS URL SESSION_CLEANUP_RUN_ID
check "journal: their SESSION_IDs are the $N registered ids" \
    sc_eq "$(ended_ids "$J" RUN_KIND=stop)" "$(sorted "$IDS1" | tr '\n' ' ')"
check "journalctl -u $U: the $N ended sessions" \
    sc_eq "$(ended_ids "$(jr --after-cursor="$C1" -u $U -o json)" | wc -w | tr -d ' ')" $N
RF=$(jsel "$J" SESSION_CLEANUP_EVENT=run-finished)
check "journal: one run-finished" sc_eq "$(jcount "$RF")" 1
check "journal: run-finished RUN_KIND=stop SESSIONS_ENDED=$N SESSIONS_LEFT=0 CALLS_ENDED=$N" \
    sc_eq "$(jcount "$RF" RUN_KIND=stop SESSIONS_ENDED=$N SESSIONS_LEFT=0 CALLS_ENDED=$N)" 1
check "journal: stopped SESSIONS_LEFT=0" sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=stopped SESSIONS_LEFT=0)" 1
start_unit "after the stop run" || sc_abort "restart $U"
check "store empty after restart: list --json = []" sc_eq "$(list_json)" "[]"
check "store-loaded after restart: SESSIONS_TOTAL=0" \
    wait_event "$C1" store-loaded SESSIONS_TOTAL=0
x systemctl stop $U

# -------------------------- 3. EXTEND_TIMEOUT_USEC=: a stop run longer than TimeoutStopSec=
x sh -c "mkdir -p $UNITD $CONFD &&
    printf '[Service]\nTimeoutStopSec=2s\n' > $UNITD/20-timeout.conf &&
    printf '[Stop]\nBudgetSec=6s\n' > $CONFD/20-budget.conf && systemctl daemon-reload"
check "drop-in applied: TimeoutStopUSec=2s" sc_eq "$(sc_prop "$CT" $U TimeoutStopUSec)" 2s
start_unit "budget 6s, TimeoutStopSec=2s" || sc_abort "start $U"
KEYS3=$(new_keys slow4000- 3)
IDS3=""
while IFS= read -r k; do        # the command line too: the key from stdin
    IDS3+="$(printf '%s\n' "$k" | sc_exec "$CT" session-cleanup register --endpoint auth --label slow 2>> "$ERRLOG") "
done <<< "$KEYS3"
check "registered 3 slow4000- sessions with the command line" sc_eq "$(wc -w <<< "$IDS3" | tr -d ' ')" 3
srv_expect "$KEYS3"
C3=$(cursor)
t0=$(sc_ms)
check "systemctl stop $U (calls take 4 s)" x systemctl stop $U
stop3_ms=$(( $(sc_ms) - t0 ))
sc_log "stop with 3 slow4000- sessions took $stop3_ms ms (TimeoutStopSec=2s, BudgetSec=6s)"
check "stop took longer than TimeoutStopSec=2s and the 4 s calls ($stop3_ms ms >= 3900)" test "$stop3_ms" -ge 3900
check "stop within budget + grace ($stop3_ms ms < 11000)" test "$stop3_ms" -lt 11000
check "Result=success (not timeout)" sc_eq "$(sc_prop "$CT" $U Result)" success
check "ExecMainStatus=0" sc_eq "$(sc_prop "$CT" $U ExecMainStatus)" 0
check "server: all 3 ended exactly once" stats_has "$(srv_stats)" '"all_ended_exactly_once": true'
check "journal: stopped event" wait_event "$C3" stopped SESSIONS_LEFT=0
J=$(since "$C3")
check "journal: stop-begun BUDGET_USEC=6000000" sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=stop-begun BUDGET_USEC=6000000)" 1
check "journal: 3 sessions in calls-ended entries" sc_eq "$(ended_ids "$J" | wc -w | tr -d ' ')" 3
check "journal: no SIGKILL / timeout from systemd" sc_lacks "$(jsel "$J" UNIT=$U.service)" "timed out"

# ---------------------- 4. an expired stop run (exit 75), then the leftovers after the start
# 5 slow3000- keys (answered after 3 s), 2 hang- keys (never answered), 5 ok- keys; budget 2 s.
x sh -c "rm -f $UNITD/20-timeout.conf && printf '[Stop]\nBudgetSec=2s\n' > $CONFD/20-budget.conf &&
    systemctl daemon-reload"
start_unit "budget 2s" || sc_abort "start $U"
KEYS4S=$(new_keys slow3000- 5)
KEYS4H=$(new_keys hang- 2)
KEYS4K=$(new_keys ok- 5)
IDS4S=$(register "$KEYS4S" slow)
IDS4H=$(register "$KEYS4H" hang)
IDS4K=$(register "$KEYS4K" quick)
check "registered 5 slow3000- + 2 hang- + 5 ok- sessions" sc_eq "$(wc -w <<< "$IDS4S $IDS4H $IDS4K" | tr -d ' ')" 12
srv_expect "$KEYS4S"$'\n'"$KEYS4K"                 # (the hang- ones never end)
C4=$(cursor)
t0=$(sc_ms)
check "systemctl stop $U (budget 2s, calls take 3 s or hang)" x systemctl stop $U
stop4_ms=$(( $(sc_ms) - t0 ))
sc_log "expired stop run took $stop4_ms ms (BudgetSec=2s)"
check "stop ended with the budget ($stop4_ms ms in 1900..4000)" test "$stop4_ms" -ge 1900 -a "$stop4_ms" -lt 4000
check "Result=success (75 is in SuccessExitStatus=)" sc_eq "$(sc_prop "$CT" $U Result)" success
check "ExecMainStatus=75 (sessions left)" sc_eq "$(sc_prop "$CT" $U ExecMainStatus)" 75
check "journal: stopped SESSIONS_LEFT=7" wait_event "$C4" stopped SESSIONS_LEFT=7
J=$(since "$C4")
CF=$(jsel "$J" SESSION_CLEANUP_EVENT=call-finished)
check "journal: stop-begun BUDGET_USEC=2000000" sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=stop-begun BUDGET_USEC=2000000)" 1
# (no `expired` lifecycle entry is required: the requests' timeouts are capped at the budget's
# end less a margin, so the calls are recorded just before the budget timer would fire. Their
# requests were sent and not answered: unconfirmed, not expired.)
check "journal: the 5 slow + 2 hang sessions OUTCOME=unconfirmed" \
    sc_eq "$(jvals "$(jsel "$CF" OUTCOME=unconfirmed)" SESSION_ID | tr '\n' ' ')" "$(sorted "$IDS4S $IDS4H" | tr '\n' ' ')"
check "journal: the 5 ok- sessions OUTCOME=ended" \
    sc_eq "$(ended_ids "$J" RUN_KIND=stop)" "$(sorted "$IDS4K" | tr '\n' ' ')"
check "journal: run-finished SESSIONS_ENDED=5 SESSIONS_LEFT=7 CALLS_UNCONFIRMED=7 CALLS_EXPIRED=0" \
    sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=run-finished RUN_KIND=stop SESSIONS_ENDED=5 SESSIONS_LEFT=7 CALLS_UNCONFIRMED=7 CALLS_EXPIRED=0)" 1

# Leftovers: ended in the background after READY=1, with the default budgets again.
x rm -f $CONFD/20-budget.conf
C4b=$(cursor)
t0=$(sc_ms)
start_unit "7 leftovers" || sc_abort "start $U"
start4_ms=$(( $(sc_ms) - t0 ))
L=$(list_json)
sc_log "start with 7 leftovers took $start4_ms ms"
check "start not delayed by the leftover calls ($start4_ms ms < 2500)" test "$start4_ms" -lt 2500
check "right after start: the 7 leftovers still listed" sc_eq "$(grep -o '"id":' <<< "$L" | wc -l | tr -d ' ')" 7
list_ids() { list_json | grep -o '"id":"[0-9a-f]*"' | cut -d'"' -f4 | sort; }
only_hang_left() { [ "$(list_ids | tr '\n' ' ')" = "$(sorted "$IDS4H" | tr '\n' ' ')" ]; }
check "slow leftovers ended: only the 2 hang- sessions listed (within 15 s)" sc_wait_for 15 only_hang_left
L=$(list_json)
check "list: the hang- sessions' last_outcome is unconfirmed" \
    sc_eq "$(grep -o '"last_outcome":"unconfirmed"' <<< "$L" | wc -l | tr -d ' ')" 2
J=$(since "$C4b")
check "journal: run-begun RUN_KIND=leftover SESSIONS_TOTAL=7" \
    sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=run-begun RUN_KIND=leftover SESSIONS_TOTAL=7)" 1
check "journal: ready before the leftover run began" \
    test "$(grep -n '"SESSION_CLEANUP_EVENT":"ready"' <<< "$J" | cut -d: -f1)" -lt \
         "$(grep -n '"SESSION_CLEANUP_EVENT":"run-begun"' <<< "$J" | cut -d: -f1)"
# (ended calls are journaled in groups, at the latest a second after they end)
slow_ended_journaled() {
    [ "$(ended_ids "$(since "$C4b")" RUN_KIND=leftover HTTP_STATUS=200)" = "$(sorted "$IDS4S" | tr '\n' ' ')" ]
}
check "journal: the 5 slow sessions ended (RUN_KIND=leftover), within 3 s" sc_wait_for 3 slow_ended_journaled
S=$(srv_stats)
check "server: all 10 slow/ok ended exactly once (the expired calls' replies not delivered)" \
    stats_has "$S" '"all_ended_exactly_once": true'
check "still active during the leftover run" sc_eq "$(sc_prop "$CT" $U ActiveState)" active

# A stop while the leftover run still waits on the hang- sessions: the stop run takes them over
# (with a budget of 2 s again, set by a reload).
x sh -c "printf '[Stop]\nBudgetSec=2s\n' > $CONFD/20-budget.conf"
C4c=$(cursor)
check "systemctl reload $U (BudgetSec=2s)" x systemctl reload $U
check "journal: reloaded" wait_event "$C4c" reloaded
t0=$(sc_ms)
check "systemctl stop $U during the leftover run" x systemctl stop $U
stop4c_ms=$(( $(sc_ms) - t0 ))
sc_log "stop during the leftover run took $stop4c_ms ms (BudgetSec=2s)"
check "stop ended with the reloaded budget ($stop4c_ms ms in 1900..4000)" test "$stop4c_ms" -ge 1900 -a "$stop4c_ms" -lt 4000
check "Result=success, ExecMainStatus=75" \
    sc_eq "$(sc_prop "$CT" $U Result) $(sc_prop "$CT" $U ExecMainStatus)" "success 75"
check "journal: stopped SESSIONS_LEFT=2" wait_event "$C4c" stopped SESSIONS_LEFT=2
J=$(since "$C4c")
check "journal: stop-begun SESSIONS_TOTAL=2 BUDGET_USEC=2000000" \
    sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=stop-begun SESSIONS_TOTAL=2 BUDGET_USEC=2000000)" 1
check "journal: the stop run took the hang- sessions over (RUN_KIND=stop OUTCOME=unconfirmed)" \
    sc_eq "$(jvals "$(jsel "$J" SESSION_CLEANUP_EVENT=call-finished RUN_KIND=stop OUTCOME=unconfirmed)" SESSION_ID | tr '\n' ' ')" \
          "$(sorted "$IDS4H" | tr '\n' ' ')"
check "journal: the abandoned leftover run recorded no outcomes" \
    sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=call-finished RUN_KIND=leftover)" 0
check "journal: one run-finished (stop, SESSIONS_LEFT=2)" \
    sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=run-finished) $(jcount "$J" SESSION_CLEANUP_EVENT=run-finished RUN_KIND=stop SESSIONS_LEFT=2)" "1 1"
# Forget the hang- sessions (unregister), so that the poweroff below has only its own.
x rm -f $CONFD/20-budget.conf
start_unit "2 hang- leftovers" || sc_abort "start $U"
for id in $IDS4H; do check "unregister hang- session $id" x session-cleanup unregister "$id"; done
check "list --json = [] after unregister" sc_wait_for 5 list_empty

# ------------------------------------------------- 2. systemctl poweroff with 20 sessions
# 5 of them take 3 s: the server and the network must stay up while the stop run waits for
# them, and systemd must honour EXTEND_TIMEOUT_USEC= at shutdown too (TimeoutStopSec=2s again).
x sh -c "printf '[Service]\nTimeoutStopSec=2s\n' > $UNITD/20-timeout.conf && systemctl daemon-reload"
check "drop-in applied again: TimeoutStopUSec=2s" sc_eq "$(sc_prop "$CT" $U TimeoutStopUSec)" 2s
KEYS2=$(new_keys ok- 15; new_keys slow3000- 5)
IDS2=$(register "$KEYS2" poweroff)
check "registered 20 sessions" sc_eq "$(wc -w <<< "$IDS2" | tr -d ' ')" 20
srv_expect "$KEYS2"
C2=$(cursor)
check "poweroff" sc_poweroff "$CT" 60
poweroff_ms=$(cat "$RUN/poweroff_ms" 2>/dev/null || echo 0)
sc_log "poweroff with 20 sessions (5 taking 3 s) took $poweroff_ms ms"
check "poweroff waited for the 3 s calls ($poweroff_ms ms >= 3000)" test "$poweroff_ms" -ge 3000
SF=$(cat "$RUN/upper$STATS_FILE" 2>/dev/null)
check "server stats file written at its stop" test -n "$SF"
check "server: all 20 ended exactly once during the shutdown" stats_has "$SF" '"all_ended_exactly_once": true'
check "server: 20 calls" stats_has "$SF" '"calls": 20,'
J=$(since "$C2")
check "journal: 20 sessions ended (calls-ended) during the shutdown" \
    sc_eq "$(ended_ids "$J")" "$(sorted "$IDS2" | tr '\n' ' ')"
check "journal: stopped SESSIONS_LEFT=0 at shutdown" sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=stopped SESSIONS_LEFT=0)" 1
check "systemd did not time out or kill $U at shutdown" \
    sc_lacks "$(jsel "$J" UNIT=$U.service | grep -o '"MESSAGE":"[^"]*"')" "timed out"
check "$U deactivated successfully at shutdown" \
    sc_has "$(jsel "$J" UNIT=$U.service)" "Deactivated successfully"
# Order (line numbers of the JSON output = journal order): the daemon's "stopped" entry before
# systemd begins stopping the server, and before the network targets go down.
l_stopped=$(first_with "$J" SESSION_CLEANUP_EVENT=stopped)
l_srv=$(first_with "$J" UNIT=$SRV.service JOB_TYPE=stop)
l_srv_any=$(first_with "$J" UNIT=$SRV.service)
l_net=$(first_with "$J" UNIT=network-online.target)
sc_log "journal lines: stopped=$l_stopped, $SRV first=$l_srv_any stop-job=$l_srv, network-online.target=$l_net"
check "order: $U stopped (line $l_stopped) before $SRV began stopping (line $l_srv_any)" \
    test "$l_stopped" -lt "$l_srv_any" -a "$l_srv_any" -lt 999999
check "order: $U stopped (line $l_stopped) before network-online.target went down (line $l_net)" \
    test "$l_stopped" -lt "$l_net"

# ----------------------------------------------------------------------------- 5. secrets
nkeys=$(wc -l < "$ALL_KEYS")
EXPORT=$TMP/journal.export
jr -o export > "$EXPORT"
leaks() {           # leaks FILE : the keys found in FILE (none expected)
    local found=0 k
    while IFS= read -r k; do grep -qF -- "$k" "$1" && { echo "key ${k%%-*}-… found"; found=1; }; done < "$ALL_KEYS"
    return $(( ! found ))
}
check "secrets: $nkeys keys, none in the container's journal (-o export)" sc_lacks "$(leaks "$EXPORT")" found
check "secrets: none in the stderr of the commands run inside" sc_lacks "$(leaks "$ERRLOG")" found
check "secrets: none in the container's console" sc_lacks "$(leaks "$RUN/console.log")" found
check "secrets: export has the expected size (non-trivial journal)" test "$(wc -c < "$EXPORT")" -gt 10000
CF=$(grep -E '"SESSION_CLEANUP_EVENT":"(call-finished|calls-ended)"' <<< "$(jr -o json)")
ncf=$(jcount "$CF")
check "secrets: all $ncf call-finished and calls-ended URLs are http://127.0.0.1:$PORT/user/<redacted>/endsession" \
    sc_eq "$(jcount "$CF" URL="http://127.0.0.1:$PORT/user/<redacted>/endsession")" "$ncf"
# Every session is ended or unregistered by now: the store became empty and was compacted, so
# no key of a finished session lingers on disk.
kept=0
while IFS= read -r k; do
    grep -qaF -- "$k" "$RUN"/upper/var/lib/session-cleanup/* 2>/dev/null && kept=$((kept + 1))
done < "$ALL_KEYS"
check "secrets: no key of a finished session is left in /var/lib/session-cleanup ($kept of $nkeys)" test "$kept" -eq 0

if [ "$SC_FAILS" -eq 0 ] && [ -z "${SC_KEEP:-}" ]; then sc_cleanup "$CT"; else sc_log "kept for inspection: $RUN"; fi
sc_summary
