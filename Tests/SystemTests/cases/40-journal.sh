#!/bin/bash
# 40-journal.sh — the journal tells the whole truth at scale, under a real journald with its
# default configuration (only the unit's own LogRateLimitIntervalSec=/LogRateLimitBurst=):
#   - N sessions (default 50,000) registered quickly and stopped at once: the end-session server
#     (Benchmarks/LoadServer, built on the host) saw every call; the journal has stop-begun,
#     run-finished and stopped for the run — under -u session-cleanup too — and its call
#     entries' CALLS= add up to N, as run-finished's CALLS_TOTAL= says; journald suppressed
#     nothing; each session is found by journalctl SESSION_ID=;
#   - registrations are debug entries, summarised at info;
#   - after the next start, `session-cleanup report` shows the run and says the journal is
#     complete for it;
#   - with the catalog installed (journalctl --update-catalog), journalctl -x explains entries.
# By hand, other sizes and the all-failing case (every call its own warning entry):
#   SC_JOURNAL_SESSIONS=100000 SC_JOURNAL_OUTCOME=failed Tests/SystemTests/run.sh 40-journal
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../harness.sh
source "$HERE/harness.sh"
# shellcheck source=../journal.sh
source "$HERE/journal.sh"

sc_need_daemon 40-journal
if ! sc_is_elf "$SC_BINARY"; then
    sc_log "SKIP 40-journal: $SC_BINARY is not the real daemon"
    sc_summary; exit 0
fi

N=${SC_JOURNAL_SESSIONS:-50000}
OUTCOME=${SC_JOURNAL_OUTCOME:-ended}        # ended: a fast server; failed: a port nobody listens on
U=session-cleanup
SRV=loadserver
PORT=18090
CT=journal-$$
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; _sc_on_exit' EXIT
mkdir -p "$TMP/extra"

cc -O2 -o "$TMP/extra/loadserver" "$ROOT/Benchmarks/LoadServer/loadserver.c" || sc_abort "build the load server"
cp "$HERE/fixtures/bulk_register.py" "$ROOT/systemd/session-cleanup.catalog" "$TMP/extra/"
TARGET_PORT=$PORT
[ "$OUTCOME" = failed ] && TARGET_PORT=18091                      # nothing listens there
cat > "$TMP/session-cleanup.conf" <<EOF
[Endpoint]
Name=auth
URL=http://127.0.0.1:$TARGET_PORT/user/{session}/endsession
EOF
export SC_EXTRA_DIR=$TMP/extra SC_CONF=$TMP/session-cleanup.conf

x() { sc_exec "$CT" "$@"; }
sum() { awk '{ s += $1 } END { print s + 0 }'; }

sc_boot "$CT" || sc_abort "boot container $CT"
check "catalog installed and compiled (journalctl --update-catalog)" \
    x sh -c 'install -D -m 0644 /opt/sc-test/session-cleanup.catalog /usr/lib/systemd/catalog/session-cleanup.catalog && journalctl --update-catalog'
check "start $SRV (transient unit, Before=$U.service)" \
    x systemd-run --unit=$SRV -p Before=$U.service /opt/sc-test/loadserver --host 127.0.0.1 --port $PORT \
        --latency-ms 0 --ready-file /run/$SRV.port || sc_abort "start the load server"
check "$SRV listening" sc_wait_for 10 x test -s /run/$SRV.port || sc_abort "load server ready"
check "systemctl start $U" x systemctl start $U || { sc_dump "$CT" $U; sc_abort "start $U"; }
check "the unit sets its own journal rate limit" \
    sc_eq "$(sc_prop "$CT" $U LogRateLimitBurst) $(sc_prop "$CT" $U LogRateLimitIntervalUSec)" "250000 30s"

t0=$(sc_ms)
registered=$(x python3 /opt/sc-test/bulk_register.py "$N" auth)
sc_log "registered $registered sessions in $(( $(sc_ms) - t0 )) ms"
check "registered $N sessions" sc_eq "$registered" "$N" || sc_abort "registration"

t0=$(sc_ms)
check "systemctl stop $U ($N sessions, $OUTCOME)" x systemctl stop $U
stop_ms=$(( $(sc_ms) - t0 ))
sc_log "stop with $N sessions took $stop_ms ms"
if [ "$OUTCOME" = ended ]; then
    requests=$(x python3 -c "
import json, urllib.request
print(json.load(urllib.request.urlopen('http://127.0.0.1:$PORT/_stats', timeout=10))['unique_keys'])")
    check "the server saw $N sessions ended" sc_eq "$requests" "$N"
    check "exit status 0" sc_eq "$(sc_prop "$CT" $U ExecMainStatus)" 0
else
    check "exit status 75 (all kept)" sc_eq "$(sc_prop "$CT" $U ExecMainStatus)" 75
fi

# The run, by its id: every entry of it, wherever journald attributed it.
RID=$(jr SESSION_CLEANUP_EVENT=stop-begun -n 1 -o json | jfield SESSION_CLEANUP_RUN_ID)
check "stop-begun names the run (SESSION_CLEANUP_RUN_ID=)" sc_eq "${#RID}" 32
RUN=$(jr SESSION_CLEANUP_RUN_ID="$RID" -o json)
events() { jfield SESSION_CLEANUP_EVENT <<< "$RUN" | sort | uniq -c | awk '{ printf "%s=%s ", $2, $1 }'; }
sc_log "run $RID: $(events)"
for e in stop-begun run-finished stopped; do
    check "journal: one $e entry for the run" sc_eq "$(jfield SESSION_CLEANUP_EVENT <<< "$RUN" | grep -cx "$e")" 1
done
UNIT_RUN=$(jr -u $U SESSION_CLEANUP_RUN_ID="$RID" -o json)
check "journalctl -u $U has run-finished and stopped too" \
    sc_eq "$(jfield SESSION_CLEANUP_EVENT <<< "$UNIT_RUN" | grep -cxE 'run-finished|stopped')" 2
calls=$(grep -E '"SESSION_CLEANUP_EVENT":"(call-finished|calls-ended)"' <<< "$RUN" | jfield CALLS | sum)
entries=$(grep -cE '"SESSION_CLEANUP_EVENT":"(call-finished|calls-ended)"' <<< "$RUN")
sc_log "journal: $entries call entries account for $calls of $N calls"
check "journal: the call entries account for all $N calls (sum of CALLS=)" sc_eq "$calls" "$N"
FINISHED=$(grep '"SESSION_CLEANUP_EVENT":"run-finished"' <<< "$RUN")
check "run-finished: CALLS_TOTAL=$N" sc_eq "$(jfield CALLS_TOTAL <<< "$FINISHED")" "$N"
check "run-finished: JOURNAL_DROPPED=0" sc_eq "$(jfield JOURNAL_DROPPED <<< "$FINISHED")" 0
check "run-finished: JOURNAL_ENTRIES= is what the journal has" sc_eq "$(jfield JOURNAL_ENTRIES <<< "$FINISHED")" "$entries"
grouped() {   # full groups of 500, plus at most one partial group per second of the run and the last
    [ "$1" -ge $(( (N + 499) / 500 )) ] && [ "$1" -le $(( N / 500 + stop_ms / 1000 + 2 )) ] \
        || { echo "$1 entries for $N ended calls in $stop_ms ms"; return 1; }
}
if [ "$OUTCOME" = ended ]; then
    check "ended calls are grouped (500 per entry, a partial group at most each second)" grouped "$entries"
else
    check "every call not ended has an entry of its own" sc_eq "$entries" "$N"
fi
check "journald suppressed nothing of the unit" sc_lacks "$(jr -o cat | grep -i "suppressed.*$U")" "Suppressed"
SOME=$(grep -m1 -E '"SESSION_CLEANUP_EVENT":"(call-finished|calls-ended)"' <<< "$RUN" | jfield SESSION_ID | tail -n1)
check "journalctl SESSION_ID=$SOME finds its outcome" \
    sc_has "$(jr SESSION_ID="$SOME" SESSION_CLEANUP_RUN_ID="$RID" -o json)" "\"SESSION_CLEANUP_RUN_ID\":\"$RID\""
REG=$(jr -u $U SESSION_CLEANUP_EVENT=registrations -o json)
check "registrations summarised at info ($N registered)" sc_has "$(jfield SESSIONS_REGISTERED <<< "$REG" | sum)" "$N"
check "registrations one by one at debug only" \
    sc_eq "$(jr -u $U SESSION_CLEANUP_EVENT=registered -p info -o cat | wc -l | tr -d ' ')" 0

# The next start: the report of the run, and the journal complete for it.
check "systemctl start $U (again)" x systemctl start $U || sc_dump "$CT" $U
REPORT=$(x session-cleanup report)
printf '%s\n' "$REPORT" | sed 's/^/        report | /' >&2
check "report: names the run" sc_has "$REPORT" "Run $RID (stop)"
check "report: $N calls" sc_has "$REPORT" "Calls: $N "
check "report: the journal is complete for the run" sc_has "$REPORT" "the journal is complete for this run ($N calls)"
JSON=$(x session-cleanup report --json "$RID")
check "report --json RUN_ID: journal_check complete" sc_has "$JSON" '"complete":true'

# The catalog explains the entries.
EXPLAINED=$(x journalctl -x -u $U SESSION_CLEANUP_RUN_ID="$RID" -p info --no-pager)
check "journalctl -x: catalog text for stop-begun" sc_has "$EXPLAINED" "Subject: Stop run begun"
check "journalctl -x: catalog text for run-finished" sc_has "$EXPLAINED" "Subject: Run finished"
check "journalctl -x: Defined-By" sc_has "$EXPLAINED" "Defined-By: session-cleanup"

x systemctl stop $U
sc_poweroff "$CT" 60 || true
sc_cleanup "$CT"
sc_summary
