#!/bin/bash
# 30-operations.sh — the everyday operations around the daemon, under a real systemd, with the
# shipped service and socket units and the sysusers file:
#   - the units verify; exposure <= 1.5; the daemon runs as session-cleanup (MainPID uid != 0);
#     state files 0600 owned by it;
#   - 300 sessions, 5 x `systemctl restart` (and try-restart): the server sees 0 calls, `list`
#     shows 300, one handed-over entry per restart; then `systemctl stop` ends all 300;
#   - a client registering continuously (a connection per registration) through 10 restarts:
#     0 refused, every acknowledged session listed;
#   - a user in group session-cleanup registers and sees only their own; a user outside is refused;
#   - [Stop] OnRestart=end: a restart ends the sessions; so does a restart with a configuration the
#     new process would refuse (the sessions are not handed to a daemon that cannot start);
#   - `systemctl reload` with a broken drop-in exits non-zero, the daemon still serves; fixed: 0;
#   - SIGKILL during a stop run of slow calls: the next start ends those sessions, no stop needed;
#   - upgrade: a state directory a root-run old version left (root-owned) keeps its sessions;
#   - under a user manager without a user bus (its private socket): restart hands over, stop ends;
#   - `systemctl poweroff` with sessions: all ended before D-Bus and the network went down.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../harness.sh
source "$HERE/harness.sh"
# shellcheck source=../journal.sh
source "$HERE/journal.sh"

sc_need_daemon 30-operations
if ! sc_is_elf "$SC_BINARY"; then
    sc_log "SKIP 30-operations: $SC_BINARY is not the real daemon"
    sc_summary; exit 0
fi

U=session-cleanup
SRV=endsession-server
PORT=18080
CT=ops-$$
RUN=$(sc_run_dir "$CT")
STATS_FILE=/var/lib/$SRV/stats.json
CONFD=/etc/session-cleanup/session-cleanup.conf.d
STATE=/var/lib/session-cleanup

TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; _sc_on_exit' EXIT
mkdir -p "$TMP/extra"
cp "$ROOT/Tests/Support/endsession_server.py" "$HERE/fixtures/sc_client.py" "$HERE/fixtures/register_loop.py" \
    "$TMP/extra/"
cat > "$TMP/session-cleanup.conf" <<EOF
[Endpoint]
Name=auth
URL=http://127.0.0.1:$PORT/user/{session}/endsession
EOF
export SC_EXTRA_DIR=$TMP/extra SC_CONF=$TMP/session-cleanup.conf

x() { sc_exec "$CT" "$@"; }
new_keys() {
    local i
    for ((i = 0; i < $2; i++)); do printf '%s%s\n' "$1" "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"; done
}
client() { x python3 /opt/sc-test/sc_client.py "$@"; }
register() { client register auth "${2:-}" <<< "$1"; }
srv_stats() { client stats $PORT; }
srv_reset() { client reset $PORT >/dev/null; }
srv_expect() { srv_reset && client expect $PORT <<< "$1" >/dev/null; }
srv_calls() { srv_stats | grep -o '"calls": [0-9]*' | head -n1 | awk '{print $2}'; }
list_ids() { x session-cleanup list --json | grep -o '"id":"[0-9a-f]*"' | cut -d'"' -f4 | sort; }
list_count() { list_ids | sed '/^$/d' | wc -l | tr -d ' '; }
main_pid() { sc_prop "$CT" $U MainPID; }
pid_uid() { x awk '/^Uid:/ {print $2}' "/proc/$1/status"; }

sc_boot "$CT" || sc_abort "boot container $CT"

# ------------------------------------------------------------------------- the shipped units
check "systemd-analyze verify $U.service $U.socket" \
    x systemd-analyze verify "$(sc_unit_file "$CT" $U.service)" "$(sc_unit_file "$CT" $U.socket)"
exposure=$(x systemd-analyze security --offline=yes "$(sc_unit_file "$CT" $U.service)" 2>&1 \
    | awk '/Overall exposure level/ {print $(NF-2)}')
sc_log "systemd-analyze security: exposure $exposure"
check "systemd-analyze security: exposure ${exposure:-?} <= 1.5" awk -v e="${exposure:-99}" 'BEGIN { exit !(e + 0 <= 1.5) }'
check "user and group session-cleanup exist (sysusers)" x getent passwd session-cleanup

x mkdir -p /var/lib/$SRV
check "start $SRV (Before=$U.service)" \
    x systemd-run --unit=$SRV -p Before=$U.service /usr/bin/python3 /opt/sc-test/endsession_server.py \
        --host 127.0.0.1 --port $PORT --ready-file /run/$SRV.port --stats-file $STATS_FILE \
    || sc_abort "start the test server"
check "$SRV listening" sc_wait_for 10 x test -s /run/$SRV.port || sc_abort "server ready"

check "systemctl start $U" x systemctl start $U || { sc_dump "$CT" $U; sc_abort "start $U"; }
check "socket unit active" sc_eq "$(sc_prop "$CT" $U.socket ActiveState)" active
check "socket: srw-rw---- root session-cleanup" \
    sc_eq "$(x stat -c '%A %U %G' /run/session-cleanup/control.sock)" "srw-rw---- root session-cleanup"
PID=$(main_pid)
check "MainPID $PID runs as uid $(pid_uid "$PID") (not 0)" sc_ne "$(pid_uid "$PID")" 0
check "MainPID's user is session-cleanup" sc_eq "$(pid_uid "$PID")" "$(x id -u session-cleanup)"
check "state files 0600, owned by session-cleanup" \
    sc_eq "$(x sh -c "stat -c '%a %U' $STATE/* | sort -u")" "600 session-cleanup"
check "state directory 0700, owned by session-cleanup" sc_eq "$(x stat -c '%a %U' $STATE)" "700 session-cleanup"

# ----------------------------------------------------- 300 sessions through 5 restarts, then stop
N=300
KEYS=$(new_keys ok- $N)
IDS=$(register "$KEYS" restarts)
check "registered $N sessions" sc_eq "$(wc -w <<< "$IDS" | tr -d ' ')" $N
srv_expect "$KEYS"
C0=$(cursor)
x systemctl reset-failed $U      # (a fresh start-rate count: StartLimitBurst= is 20 per minute)
pids="$(main_pid)"
for i in 1 2 3 4 5; do
    verb=restart; [ "$i" = 3 ] && verb=try-restart
    t0=$(sc_ms)
    check "systemctl $verb $U ($i of 5)" x systemctl $verb $U
    sc_log "$verb $i took $(( $(sc_ms) - t0 )) ms"
    pids+=" $(main_pid)"
done
check "5 new processes (MainPIDs: $pids)" sc_eq "$(tr ' ' '\n' <<< "$pids" | sort -u | wc -l | tr -d ' ')" 6
check "server: 0 end-session calls during the restarts" sc_eq "$(srv_calls)" 0
check "list shows the $N sessions" sc_eq "$(list_ids | tr '\n' ' ')" "$(sorted "$IDS" | tr '\n' ' ')"
check "journal: 5 handed-over SESSIONS_TOTAL=$N" wait_event "$C0" handed-over
check "journal: 5 handed-over entries with SESSIONS_TOTAL=$N" \
    sc_eq "$(jcount "$(since "$C0")" SESSION_CLEANUP_EVENT=handed-over SESSIONS_TOTAL=$N)" 5
check "journal: no stop run during the restarts" sc_eq "$(jcount "$(since "$C0")" SESSION_CLEANUP_EVENT=stop-begun)" 0
check "Result=success, NRestarts=0 (no failure)" \
    sc_eq "$(sc_prop "$CT" $U Result) $(sc_prop "$CT" $U NRestarts)" "success 0"

C1=$(cursor)
check "systemctl stop $U ($N sessions)" x systemctl stop $U
S=$(srv_stats)
check "server: all $N ended exactly once" sc_has "$S" '"all_ended_exactly_once": true'
check "server: $N calls" sc_eq "$(srv_calls)" $N
check "journal: stop-begun says why (a stop job)" wait_event "$C1" stop-begun
check "journal: STOP_REASON names the stop job" \
    sc_has "$(jsel "$(since "$C1")" SESSION_CLEANUP_EVENT=stop-begun)" "has a stop job"
check "journal: stopped SESSIONS_LEFT=0" wait_event "$C1" stopped SESSIONS_LEFT=0

# ------------------------------------------- a client registering continuously through 10 restarts
x systemctl reset-failed $U
check "systemctl start $U (registration loop)" x systemctl start $U
srv_reset
x rm -f /run/regloop.stop /run/regloop.out
x python3 /opt/sc-test/register_loop.py auth /run/regloop.stop /run/regloop.out &
loop_pid=$!
sc_wait_for 5 x test -s /run/regloop.out
for i in $(seq 10); do
    x systemctl restart $U || check "systemctl restart $U ($i of 10, with a client registering)" false
    sc_sleep 0.1
done
x touch /run/regloop.stop
wait "$loop_pid"
OUT=$(x cat /run/regloop.out)
acked=$(grep -c '^ok ' <<< "$OUT")
refused=$(grep -c '^refused' <<< "$OUT")
sc_log "registration loop: $acked acknowledged, $refused refused through 10 restarts"
check "registration loop: 0 refused ($(grep '^refused' <<< "$OUT" | sort | uniq -c | head -3 | tr '\n' ' '))" \
    sc_eq "$refused" 0
check "registration loop: at least 50 acknowledged ($acked)" test "$acked" -ge 50
ACKED_IDS=$(grep '^ok ' <<< "$OUT" | cut -d' ' -f2 | sort)
LISTED=$(list_ids)
missing=$(comm -23 <(echo "$ACKED_IDS") <(echo "$LISTED") | wc -l | tr -d ' ')
check "every acknowledged session is listed ($missing of $acked missing)" sc_eq "$missing" 0
check "server: 0 end-session calls during the 10 restarts" sc_eq "$(srv_calls)" 0
check "session-cleanup end --all (clean up)" x session-cleanup end --all
check "store empty" sc_eq "$(list_count)" 0

# ---------------------------------------------------------- users: group members only, own sessions
x useradd --create-home --groups session-cleanup alice
x useradd --create-home bob
as() { local who=$1; shift; x setpriv --reuid="$who" --regid="$who" --init-groups "$@"; }
ALICE_ID=$(printf '%s\n' "$(new_keys ok- 1)" | as alice session-cleanup register --endpoint auth --label alice)
check "alice (in group session-cleanup) registers" test -n "$ALICE_ID"
ROOT_ID=$(register "$(new_keys ok- 1)" root)
check "root registers" test -n "$ROOT_ID"
check "alice lists only her own session" \
    sc_eq "$(as alice session-cleanup list --json | grep -o '"id":"[0-9a-f]*"' | cut -d'"' -f4)" "$ALICE_ID"
check "root lists both" sc_eq "$(list_count)" 2
bob_out=$(printf '%s\n' "$(new_keys ok- 1)" | as bob session-cleanup register --endpoint auth 2>&1); bob_rc=$?
check "bob (not in the group) is refused (exit $bob_rc: $bob_out)" test "$bob_rc" -ne 0
check "bob's refusal says permission denied" sc_has "$bob_out" "ermission denied"
check "still 2 sessions after bob's attempt" sc_eq "$(list_count)" 2
x session-cleanup end --all >/dev/null

# ------------------------------------------------------------------ [Stop] OnRestart=end
x sh -c "mkdir -p $CONFD && printf '[Stop]\nOnRestart=end\n' > $CONFD/30-onrestart.conf"
C2=$(cursor)
check "systemctl reload $U (OnRestart=end)" x systemctl reload $U
check "journal: reloaded" wait_event "$C2" reloaded
srv_reset
KEYS=$(new_keys ok- 5)
IDS=$(register "$KEYS" onrestart-end)
srv_expect "$KEYS"
check "systemctl restart $U with OnRestart=end" x systemctl restart $U
check "server: the 5 sessions ended at the restart" sc_has "$(srv_stats)" '"all_ended_exactly_once": true'
check "list empty after the restart" sc_eq "$(list_count)" 0
check "journal: STOP_REASON names OnRestart=end" \
    sc_has "$(jsel "$(since "$C2")" SESSION_CLEANUP_EVENT=stop-begun)" "OnRestart=end"
x rm -f $CONFD/30-onrestart.conf
x systemctl reload $U

# ------------- a restart the next process would not survive (invalid configuration, and no last good
# one saved to fall back on) is a stop run. With the last good configuration the restart hands over:
# 38-no-accidental-logout.
srv_reset
KEYS=$(new_keys ok- 5)
IDS=$(register "$KEYS" next-start)
srv_expect "$KEYS"
x sh -c "printf '[Stop]\nBudgetSec=never\n' > $CONFD/30-next.conf"
x rm -f $STATE/last-good-configuration.json
C7=$(cursor)
x systemctl restart $U 2>/dev/null; restart_rc=$?
check "systemctl restart with a configuration the new process refuses fails (rc $restart_rc)" test "$restart_rc" -ne 0
check "server: the 5 sessions were ended instead of being handed to a daemon that cannot start" \
    sc_has "$(srv_stats)" '"all_ended_exactly_once": true'
check "journal: STOP_REASON says the restarted daemon would refuse its configuration" \
    sc_has "$(jsel "$(since "$C7")" SESSION_CLEANUP_EVENT=stop-begun)" "would refuse its configuration"
check "the new process exited 78 (configuration invalid)" sc_eq "$(sc_prop "$CT" $U ExecMainStatus)" 78
x rm -f $CONFD/30-next.conf
x systemctl reset-failed $U
check "systemctl start $U with the configuration fixed" x systemctl start $U

# -------------------------------------------------- reload tells the truth (ExecReload= is synchronous)
x sh -c "printf '[Stop]\nBudgetSec=whenever\n' > $CONFD/30-broken.conf"
C5=$(cursor)
reload_out=$(x systemctl reload $U 2>&1); reload_rc=$?
check "systemctl reload with a broken drop-in exits non-zero (rc $reload_rc)" test "$reload_rc" -ne 0
check "the daemon is still active after the failed reload" sc_eq "$(sc_prop "$CT" $U ActiveState)" active
check "the daemon still serves after the failed reload" x session-cleanup status
check "journal: reload-failed names the drop-in and line" \
    sc_has "$(jsel "$(since "$C5")" SESSION_CLEANUP_EVENT=reload-failed)" "30-broken.conf:2"
check "journal: the unit's reload failed (the ExecReload= process said why)" \
    sc_has "$(jr --after-cursor="$C5" -o cat)" "configuration not reloaded"
x sh -c "printf '[Stop]\nBudgetSec=7s\n' > $CONFD/30-broken.conf"
check "systemctl reload with the fixed drop-in exits 0" x systemctl reload $U
check "the fixed configuration is in force when reload returns (budget 7 s)" \
    sc_has "$(x session-cleanup status --json)" '"budget_usec":7000000'
x rm -f $CONFD/30-broken.conf
x systemctl reload $U

# ----------------------------------------------- SIGKILL during a stop run of slow calls, then start
srv_reset
KEYS=$(new_keys slow2000- 10)
IDS=$(register "$KEYS" killed)
srv_expect "$KEYS"
C6=$(cursor)
x systemctl stop --no-block $U
check "stop run begun" wait_event "$C6" stop-begun
sc_sleep 0.5
check "SIGKILL during the stop run (calls take 2 s)" x systemctl kill -s KILL $U
sc_wait_for 10 test "$(sc_prop "$CT" $U ActiveState)" != deactivating
check "no stopped entry: the stop run was cut off" sc_eq "$(jcount "$(since "$C6")" SESSION_CLEANUP_EVENT=stopped)" 0
x systemctl reset-failed $U
check "systemctl start $U after the SIGKILL" x systemctl start $U
check "journal: stop-run-interrupted SESSIONS_TOTAL=10" wait_event "$C6" stop-run-interrupted SESSIONS_TOTAL=10
list_empty() { [ "$(list_count)" = 0 ]; }
check "the 10 sessions are ended in the background after the start (within 15 s)" sc_wait_for 15 list_empty
check "server: all 10 ended" sc_has "$(srv_stats)" '"all_ended_exactly_once": true'
check "journal: a leftover run, after ready" \
    test "$(jcount "$(since "$C6")" SESSION_CLEANUP_EVENT=run-begun RUN_KIND=leftover)" -ge 1

# ------------------------- upgrade: the state directory a root-run older version left keeps working
x systemctl stop $U
x rm -rf $STATE
x mkdir -p /run/sc-hand
x sh -c "STATE_DIRECTORY=$STATE RUNTIME_DIRECTORY=/run/sc-hand /usr/bin/session-cleanup daemon \
    > /run/sc-hand/log 2>&1 & echo \$! > /run/sc-hand/pid"
sc_wait_for 5 x test -S /run/sc-hand/control.sock
KEYS=$(new_keys ok- 5)
IDS=""
while IFS= read -r k; do
    IDS+="$(printf '%s\n' "$k" | x session-cleanup register --socket /run/sc-hand/control.sock --endpoint auth) "
done <<< "$KEYS"
x sh -c 'kill -KILL "$(cat /run/sc-hand/pid)"'
sc_sleep 0.2
check "root-run daemon left a root-owned state directory" sc_eq "$(x stat -c '%U' $STATE)" root
C3=$(cursor)
check "systemctl start $U on the root-owned state directory" x systemctl start $U || sc_dump "$CT" $U
check "the 5 sessions of the old state directory are listed" \
    sc_eq "$(list_ids | tr '\n' ' ')" "$(sorted "$IDS" | tr '\n' ' ')"
check "state files now 0600 and owned by session-cleanup" \
    sc_eq "$(x sh -c "stat -c '%a %U' $STATE/* | sort -u")" "600 session-cleanup"

# ---------------- a daemon under a user manager: asked over the manager's private socket (no user bus)
# (The rootfs has no pam_systemd to set XDG_RUNTIME_DIR for user@.service: a drop-in does.)
x sh -c 'mkdir -p /etc/systemd/system/user@.service.d &&
    printf "[Service]\nEnvironment=XDG_RUNTIME_DIR=/run/user/%%i\n" > /etc/systemd/system/user@.service.d/runtime.conf &&
    systemctl daemon-reload'
x loginctl enable-linger alice
AUID=$(x id -u alice)
ARUN=/run/user/$AUID
sc_wait_for 10 x test -S $ARUN/systemd/private
x sh -c "mkdir -p /home/alice/.config/systemd/user &&
    printf '[Service]\nType=notify\nExecStart=/usr/bin/session-cleanup --user daemon --config /home/alice/sc.conf\n' \
        > /home/alice/.config/systemd/user/sc-user.service &&
    cp /etc/session-cleanup/session-cleanup.conf /home/alice/sc.conf &&
    printf '[Store]\nKeyCredential=\n' >> /home/alice/sc.conf && chown -R alice:alice /home/alice"
asu() { as alice env XDG_RUNTIME_DIR=$ARUN "$@"; }
check "user manager: no user bus (the private socket is the way in)" x test ! -e $ARUN/bus
check "user manager: systemctl --user start sc-user" asu systemctl --user start sc-user
srv_reset
UKEYS=$(new_keys ok- 3)
while IFS= read -r k; do
    printf '%s\n' "$k" | asu session-cleanup register --endpoint auth --socket $ARUN/session-cleanup/control.sock >/dev/null
done <<< "$UKEYS"
srv_expect "$UKEYS"
C8=$(cursor)
check "user manager: systemctl --user restart sc-user" asu systemctl --user restart sc-user
check "user manager: the restart handed the 3 sessions over" wait_event "$C8" handed-over SESSIONS_TOTAL=3
check "user manager: 0 end-session calls at the restart" sc_eq "$(srv_calls)" 0
check "user manager: systemctl --user stop sc-user" asu systemctl --user stop sc-user
check "user manager: the stop ended the 3 sessions" sc_has "$(srv_stats)" '"all_ended_exactly_once": true'
check "user manager: STOP_REASON names the user unit's stop job" \
    sc_has "$(jsel "$(since "$C8")" SESSION_CLEANUP_EVENT=stop-begun)" "sc-user.service has a stop job"

# ---------------------- poweroff with sessions (the 5 of the old state directory + 20 new ones)
KEYS2=$(new_keys ok- 15; new_keys slow1500- 5)
IDS2=$(register "$KEYS2" poweroff)
srv_expect "$KEYS"$'\n'"$KEYS2"
C4=$(cursor)
check "poweroff" sc_poweroff "$CT" 60
SF=$(cat "$RUN/upper$STATS_FILE" 2>/dev/null)
check "server: all 25 ended exactly once during the shutdown" sc_has "$SF" '"all_ended_exactly_once": true'
J=$(since "$C4")
check "journal: stop-begun at shutdown names the stop job and the stopping system" \
    sc_has "$(jsel "$J" SESSION_CLEANUP_EVENT=stop-begun)" "(system stopping)"
check "journal: stopped SESSIONS_LEFT=0 at shutdown" sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=stopped SESSIONS_LEFT=0)" 1
l_stopped=$(first_with "$J" SESSION_CLEANUP_EVENT=stopped)
l_dbus=$(first_with "$J" UNIT=dbus.service)
l_net=$(first_with "$J" UNIT=network-online.target)
sc_log "journal lines: stopped=$l_stopped dbus.service=$l_dbus network-online.target=$l_net"
check "order: $U stopped before dbus.service went down" test "$l_stopped" -lt "$l_dbus"
check "order: $U stopped before network-online.target went down" test "$l_stopped" -lt "$l_net"

if [ "$SC_FAILS" -eq 0 ] && [ -z "${SC_KEEP:-}" ]; then sc_cleanup "$CT"; else sc_log "kept for inspection: $RUN"; fi
sc_summary
