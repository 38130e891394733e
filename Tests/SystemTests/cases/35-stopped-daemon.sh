#!/bin/bash
# 35-stopped-daemon.sh — a stop that stays stopped (issue 27), under a real systemd with the
# shipped service and socket units:
#   - sessions the stop run could not end (their endpoint refuses connections) are kept (exit 75);
#   - after `systemctl stop session-cleanup`, with the socket unit still listening: `status`
#     (exit 3, "stopped", the last stop run from the state directory), `report` (the run printed
#     from disk, exit 0), `report --json` and `list` (exit 3) leave the service inactive, start no
#     leftover run and make no new stop-begun/leftover entry in the journal;
#   - `register` does start it again and says so on stderr;
#   - `systemctl stop session-cleanup.socket session-cleanup.service`: nothing listens any more,
#     `status` still answers from disk and says how to start it.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../harness.sh
source "$HERE/harness.sh"
# shellcheck source=../journal.sh
source "$HERE/journal.sh"

sc_need_daemon 35-stopped-daemon
if ! sc_is_elf "$SC_BINARY"; then
    sc_log "SKIP 35-stopped-daemon: $SC_BINARY is not the real daemon"
    sc_summary; exit 0
fi

U=session-cleanup
CT=stopped-$$
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; _sc_on_exit' EXIT
mkdir -p "$TMP/extra"
cp "$HERE/fixtures/sc_client.py" "$TMP/extra/"
# Nothing listens on this port: every call fails, the stop run keeps every session.
cat > "$TMP/session-cleanup.conf" <<EOF
[Stop]
BudgetSec=2s
MaxAttempts=1
[Endpoint]
Name=auth
URL=http://127.0.0.1:18097/user/{session}/endsession
EOF
export SC_EXTRA_DIR=$TMP/extra SC_CONF=$TMP/session-cleanup.conf

x() { sc_exec "$CT" "$@"; }
state() { sc_prop "$CT" $U ActiveState; }
started_count() { x journalctl -q -o cat -u $U.service --grep '^Started ' 2>/dev/null | wc -l | tr -d ' '; }

sc_boot "$CT" || sc_abort "boot container $CT"
check "systemctl start $U" x systemctl start $U.socket $U.service || { sc_dump "$CT" $U; sc_abort "start $U"; }
for i in 1 2 3; do
    x python3 /opt/sc-test/sc_client.py register auth stopped-test <<< "stopped-key-$i-$RANDOM$RANDOM" >/dev/null
done
check "3 sessions registered" sc_eq "$(x session-cleanup list --json | grep -o '"id"' | wc -l | tr -d ' ')" 3

x systemctl stop $U.service
check "the service is inactive after systemctl stop" sc_eq "$(state)" inactive
check "its socket unit still listens" sc_eq "$(sc_prop "$CT" $U.socket ActiveState)" active
STARTS=$(started_count)
if [ -n "${SC_DEB_LAYER:-}" ]; then   # the catalog comes with the package
    explained=$(x journalctl -x -u $U SESSION_CLEANUP_EVENT=ready --no-pager)
    check "journalctl -x: the catalog says the budget in human units (2 s)" sc_has "$explained" "within a budget of 2 s."
    check "journalctl -x: no raw microsecond counts (25000000 µs)" sc_eq "$(grep -Ec '[0-9]{4,} µs' <<< "$explained")" 0
fi

out=$(x session-cleanup status 2>&1); rc=$?
sc_log "status of the stopped daemon (exit $rc):"; printf '%s\n' "$out" >&2
check "status exits 3 (stopped)" sc_eq "$rc" 3
check "status says the daemon is stopped" sc_has "$out" "The daemon is stopped"
check "status shows the last stop run from disk (3 sessions left)" sc_has "$out" "sessions left:"
check "status gives the way to stop it for good" \
    sc_has "$out" "systemctl stop session-cleanup.socket session-cleanup.service"
check "the service is still inactive after status" sc_eq "$(state)" inactive

out=$(x session-cleanup report 2>&1); rc=$?
sc_log "report of the stopped daemon (exit $rc):"; printf '%s\n' "$out" >&2
check "report exits 0" sc_eq "$rc" 0
check "report is read from the state directory" sc_has "$out" "read from /var/lib/session-cleanup"
check "report prints the stop run (3 sessions kept)" sc_has "$out" "0 ended, 3 kept for the next start"
check "report checks the journal for that run" sc_has "$out" "the journal is complete for this run"
json=$(x session-cleanup report --json 2>/dev/null)
check "report --json is one document on stdout" sc_has "$json" '"kind":"stop"'
out=$(x session-cleanup list 2>&1); rc=$?
check "list exits 3 and says the daemon is stopped" sc_eq "$rc $(grep -c 'is stopped' <<< "$out")" "3 1"
check "the service is still inactive after report and list" sc_eq "$(state)" inactive
check "no new start of $U.service in the journal" sc_eq "$(started_count)" "$STARTS"

out=$(x sh -c "echo stopped-key-4 | session-cleanup register --endpoint auth 2>&1 >/dev/null"); rc=$?
check "register starts the daemon (exit $rc)" sc_eq "$rc" 0
check "register says on stderr that it starts the daemon" sc_has "$out" "the daemon was stopped"
check "the service is active after register" sc_eq "$(state)" active

check "systemctl stop the socket and the service" x systemctl stop $U.socket $U.service
check "nothing listens any more" sc_eq "$(sc_prop "$CT" $U.socket ActiveState)" inactive
out=$(x session-cleanup status 2>&1); rc=$?
check "status of a fully stopped daemon exits 3" sc_eq "$rc" 3
check "it says how to start it" sc_has "$out" "systemctl start session-cleanup.socket"
check "the service is still inactive" sc_eq "$(state)" inactive

sc_poweroff "$CT"
sc_summary
