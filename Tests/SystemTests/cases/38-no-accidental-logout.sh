#!/bin/bash
# 38-no-accidental-logout.sh — what systemd does around a stop must never cut it short or turn a
# restart into a logout (issue 26), under a real systemd with the shipped units:
#   1. `systemctl daemon-reload` and `daemon-reexec` in the middle of a long stop run
#      (BudgetSec=60s, 20 calls of 40 s, TimeoutStopSec=30s): systemd forgets an
#      EXTEND_TIMEOUT_USEC= across both, so the daemon renews it; every call ends, no timeout.
#   2. `systemctl restart` with dbus-daemon frozen (SIGSTOP) and then stopped: the units'
#      RestartKillSignal=SIGUSR1 tells the daemon it is a restart without D-Bus; every session is
#      handed over (0 end-session calls, a new MainPID, `handed-over`); a `systemctl stop` with
#      D-Bus still down is a stop run that ends them all.
#   3. a typo in a drop-in, then `systemctl restart`: handed over (0 calls), the new process runs
#      on the last good configuration, loudly (config-fallback, STATUS=, status); check-config and
#      `systemctl reload` still refuse; fixed and reloaded, the fallback ends.
# The end-session server runs inside the container as the transient unit endsession-server.service.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../harness.sh
source "$HERE/harness.sh"
# shellcheck source=../journal.sh
source "$HERE/journal.sh"

sc_need_daemon 38-no-accidental-logout
if ! sc_is_elf "$SC_BINARY"; then
    sc_log "SKIP 38-no-accidental-logout: $SC_BINARY is not the real daemon"
    sc_summary; exit 0
fi

U=session-cleanup
SRV=endsession-server
PORT=18081
CT=nologout-$$
STATS_FILE=/var/lib/$SRV/stats.json

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; _sc_on_exit' EXIT
mkdir -p "$TMP/extra"
cp "$ROOT/Tests/Support/endsession_server.py" "$HERE/fixtures/sc_client.py" "$TMP/extra/"
cat > "$TMP/session-cleanup.conf" <<EOF
[Stop]
BudgetSec=60s
[Endpoint]
Name=auth
URL=http://127.0.0.1:$PORT/user/{session}/endsession
TimeoutSec=50s
EOF
export SC_EXTRA_DIR=$TMP/extra SC_CONF=$TMP/session-cleanup.conf

x() { sc_exec "$CT" "$@"; }
client() { x python3 /opt/sc-test/sc_client.py "$@"; }
new_keys() {
    local i
    for ((i = 0; i < $2; i++)); do printf '%s%s\n' "$1" "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"; done
}
register() { client register auth "${2:-}" <<< "$1"; }
srv_stats() { client stats $PORT; }
calls() { grep -o '"calls": [0-9]*' <<< "$(srv_stats)" | head -n1 | grep -o '[0-9]*$'; }
state() { sc_prop "$CT" $U ActiveState; }
stopped() { [ "$(state)" != deactivating ]; }
count_sessions() { x session-cleanup list --json | grep -o '"id":' | wc -l | tr -d ' '; }

sc_boot "$CT" || sc_abort "boot container $CT"
x mkdir -p /var/lib/$SRV
check "start $SRV (transient unit)" \
    x systemd-run --unit=$SRV -p Description="end-session test server" \
        /usr/bin/python3 /opt/sc-test/endsession_server.py --host 127.0.0.1 --port $PORT \
        --ready-file /run/$SRV.port --stats-file $STATS_FILE \
    || sc_abort "start the test server"
check "$SRV listening" sc_wait_for 10 x test -s /run/$SRV.port || { sc_dump "$CT" $SRV; sc_abort "server ready"; }
check "systemctl start $U" x systemctl start $U.socket $U.service || { sc_dump "$CT" $U; sc_abort "start $U"; }

# ------------------------------------------- 1. daemon-reload and daemon-reexec mid stop run
check "TimeoutStopSec=30s as shipped" sc_eq "$(sc_prop "$CT" $U TimeoutStopUSec)" 30s
N=20
KEYS=$(new_keys slow40000- $N)
IDS=$(register "$KEYS" reexec)
check "registered $N sessions whose calls take 40 s" sc_eq "$(wc -w <<< "$IDS" | tr -d ' ')" $N
client reset $PORT >/dev/null && client expect $PORT <<< "$KEYS" >/dev/null
C1=$(cursor)
t0=$(sc_ms)
x systemctl stop --no-block $U.service
check "stop begun" wait_event "$C1" stop-begun
sc_sleep 5
check "systemctl daemon-reload mid stop run" x systemctl daemon-reload
sc_sleep 5
check "systemctl daemon-reexec mid stop run" x systemctl daemon-reexec
sc_sleep 25   # past TimeoutStopSec=30s since the stop began
check "still stopping at $(( ($(sc_ms) - t0) / 1000 )) s, past TimeoutStopSec=30s" sc_eq "$(state)" deactivating
sc_wait_for 60 stopped
stop_ms=$(( $(sc_ms) - t0 ))
sc_log "stop with daemon-reload and daemon-reexec took $stop_ms ms (40 s calls, BudgetSec=60s)"
check "Result=success (not timeout)" sc_eq "$(sc_prop "$CT" $U Result)" success
check "ExecMainStatus=0: all $N ended" sc_eq "$(sc_prop "$CT" $U ExecMainStatus)" 0
check "server: $N calls" sc_eq "$(calls)" $N
check "server: all ended exactly once" sc_has "$(srv_stats)" '"all_ended_exactly_once": true'
check "journal: run-finished SESSIONS_ENDED=$N" wait_event "$C1" run-finished SESSIONS_ENDED=$N

# --------------------------------------- 2. systemctl restart with D-Bus frozen, then stopped
check "RestartKillSignal=SIGUSR1 (10) as shipped" sc_eq "$(sc_prop "$CT" $U RestartKillSignal)" 10
check "systemctl start $U" x systemctl start $U.service || sc_abort "start $U"
N=30
KEYS=$(new_keys ok- $N)
IDS=$(register "$KEYS" dbus)
check "registered $N sessions" sc_eq "$(wc -w <<< "$IDS" | tr -d ' ')" $N
client reset $PORT >/dev/null
PID1=$(sc_prop "$CT" $U MainPID)
DBUS=$(x systemctl show -p MainPID --value dbus.service)
check "dbus-daemon runs (pid $DBUS)" test "${DBUS:-0}" -gt 0
x kill -STOP "$DBUS"
C2=$(cursor)
check "systemctl restart $U with dbus-daemon frozen" x systemctl restart $U.service
x kill -CONT "$DBUS"
check "journal: handed-over" wait_event "$C2" handed-over
check "journal: hand-over-begun says SIGUSR1" wait_event "$C2" hand-over-begun SIGNAL=SIGUSR1
check "a new process runs" sc_ne "$(sc_prop "$CT" $U MainPID)" "$PID1"
check "server: 0 end-session calls" sc_eq "$(calls)" 0
check "all $N sessions kept" sc_eq "$(count_sessions)" $N

x systemctl stop dbus.socket dbus.service
check "dbus stopped" sc_ne "$(x systemctl is-active dbus.service)" active
PID2=$(sc_prop "$CT" $U MainPID)
C3=$(cursor)
check "systemctl restart $U with dbus stopped" x systemctl restart $U.service
check "journal: handed-over (dbus stopped)" wait_event "$C3" handed-over
check "server: still 0 end-session calls" sc_eq "$(calls)" 0
check "a new process runs again" sc_ne "$(sc_prop "$CT" $U MainPID)" "$PID2"
check "all $N sessions still kept" sc_eq "$(count_sessions)" $N
client expect $PORT <<< "$KEYS" >/dev/null
C4=$(cursor)
check "systemctl stop $U with dbus stopped" x systemctl stop $U.service
check "journal: stop-begun (a stop, not a restart)" wait_event "$C4" stop-begun
check "server: the stop ended all $N" sc_eq "$(calls)" $N
check "ExecMainStatus=0" sc_eq "$(sc_prop "$CT" $U ExecMainStatus)" 0

# ------------------------------------------------ 3. a typo in a drop-in, then systemctl restart
x systemctl start dbus.socket dbus.service
check "systemctl start $U" x systemctl start $U.service || sc_abort "start $U"
N=20
KEYS=$(new_keys ok- $N)
IDS=$(register "$KEYS" typo)
check "registered $N sessions" sc_eq "$(wc -w <<< "$IDS" | tr -d ' ')" $N
client reset $PORT >/dev/null
check "last-good-configuration.json kept in the state directory" x test -s /var/lib/$U/last-good-configuration.json
x mkdir -p /etc/session-cleanup/session-cleanup.conf.d
x sh -c 'printf "[Stop]\nBudgetSec=whenever\n" > /etc/session-cleanup/session-cleanup.conf.d/50-typo.conf'
x session-cleanup check-config >/dev/null 2>&1; rc=$?
check "check-config refuses the typo (exit 78)" sc_eq "$rc" 78
C5=$(cursor)
check "systemctl restart $U with the typo" x systemctl restart $U.service
check "the unit is active" sc_eq "$(state)" active
check "journal: next-start-fallback (handed over anyway)" wait_event "$C5" next-start-fallback
check "journal: handed-over" wait_event "$C5" handed-over
check "journal: config-fallback naming the file" wait_event "$C5" config-fallback
fallback=$(jsel "$(since "$C5")" SESSION_CLEANUP_EVENT=config-fallback)
check "config-fallback's ERROR= names 50-typo.conf:2" sc_has "$fallback" "50-typo.conf:2"
check "STATUS= says it runs on the last good one" sc_has "$(sc_prop "$CT" $U StatusText)" "running on the last good one"
check "status shows configuration_fallback" sc_has "$(x session-cleanup status --json)" '"configuration_fallback":'
check "server: 0 end-session calls" sc_eq "$(calls)" 0
check "all $N sessions kept" sc_eq "$(count_sessions)" $N
x systemctl reload $U.service >/dev/null 2>&1; rc=$?
check "systemctl reload refuses the typo (exit $rc)" sc_ne "$rc" 0
check "still active after the refused reload" sc_eq "$(state)" active
x rm /etc/session-cleanup/session-cleanup.conf.d/50-typo.conf
check "fixed: systemctl reload" x systemctl reload $U.service
check "status: no fallback any more" sc_lacks "$(x session-cleanup status --json)" 'configuration_fallback'
client expect $PORT <<< "$KEYS" >/dev/null
check "systemctl stop $U" x systemctl stop $U.service
check "server: the stop ended all $N" sc_eq "$(calls)" $N

sc_summary
