#!/bin/bash
# 60-user-instance.sh — a user's own daemon, from the packaged user unit, under a real user
# manager (systemd --user, started by logind for a PAM login session):
#   - `systemctl --user enable --now session-cleanup` works (no capability or namespace the user
#     manager cannot grant);
#   - the user daemon reads ~/.config/session-cleanup/session-cleanup.conf and keeps its store
#     in ~/.local/state/session-cleanup (not ~/.config, where systemd 252 puts StateDirectory=);
#   - `session-cleanup --user` talks to it; without --user the CLI goes to the system daemon and
#     its error says so;
#   - a `systemctl --user restart` keeps the sessions (the hand-over asks the user manager);
#   - `loginctl terminate-user` (logout, no lingering) stops the user manager, and with it the
#     daemon, whose stop run ends the user's sessions at the server.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../harness.sh
source "$HERE/harness.sh"

sc_need_daemon 60-user-instance
if [ -z "${SC_DEB_LAYER:-}" ]; then
    sc_log "SKIP 60-user-instance: needs the package (SC_DEB): the user unit comes from it"
    sc_summary; exit 0
fi

SRV=endsession-server
PORT=18081
USERNAME=sctest
CT=user-$$
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; _sc_on_exit' EXIT
mkdir -p "$TMP/extra"
cp "$ROOT/Tests/Support/endsession_server.py" "$HERE/fixtures/sc_client.py" "$TMP/extra/"
export SC_EXTRA_DIR=$TMP/extra

x() { sc_exec "$CT" "$@"; }
# as the user, with the environment a login shell of theirs has
ux() { x runuser -u $USERNAME -- env HOME=/home/$USERNAME XDG_RUNTIME_DIR=/run/user/$UID_ "$@"; }
client() { x python3 /opt/sc-test/sc_client.py "$@"; }
srv_stat() { client stats $PORT | python3 -c "import json, sys; s = json.load(sys.stdin); print($1)"; }
new_keys() { local i; for ((i = 0; i < $2; i++)); do printf '%s%s\n' "$1" "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"; done; }
user_listed() { ux session-cleanup --user list --json | grep -o '"id":' | wc -l | tr -d ' '; }
uprop() { ux systemctl --user show -p "$1" --value session-cleanup.service; }
is_state() { [ "$(sc_prop "$CT" "$1" ActiveState)" = "$2" ]; }   # is_state UNIT STATE
user_is_active() { [ "$(uprop ActiveState)" = active ]; }

sc_boot "$CT" || sc_abort "boot container $CT"

# --- a user, logind stopping their manager at once when their last session ends (no linger)
x useradd -m -s /bin/bash $USERNAME || sc_abort "useradd $USERNAME"
UID_=$(x id -u $USERNAME)
x mkdir -p /etc/systemd/logind.conf.d
x sh -c 'printf "[Login]\nUserStopDelaySec=0\n" > /etc/systemd/logind.conf.d/10-test.conf'
x systemctl restart systemd-logind
x mkdir -p /var/lib/$SRV
check "start $SRV" x systemd-run --unit=$SRV /usr/bin/python3 /opt/sc-test/endsession_server.py \
    --host 127.0.0.1 --port $PORT --ready-file /run/$SRV.port --stats-file /var/lib/$SRV/stats.json \
    || sc_abort "start the test server"
check "$SRV listening" sc_wait_for 10 x test -s /run/$SRV.port || sc_abort "server ready"
ux mkdir -p /home/$USERNAME/.config/session-cleanup
ux sh -c "printf '[Endpoint]\nName=auth\nURL=http://127.0.0.1:$PORT/user/{session}/endsession\n' \
    > /home/$USERNAME/.config/session-cleanup/session-cleanup.conf"

# --- a login session (PAM: pam_systemd registers it; logind starts user@UID.service)
check "a PAM login session for $USERNAME" x systemd-run --unit=login-$USERNAME -p User=$USERNAME \
    -p PAMName=login /bin/sleep infinity
check "user@$UID_.service active (the user manager)" sc_wait_for 15 is_state "user@$UID_.service" active || sc_dump "$CT" "user@$UID_.service"
check "loginctl lists a session of $USERNAME" sc_has "$(x loginctl list-sessions --no-legend)" "$USERNAME"

# --- the user unit, enabled and started by the user
check "systemctl --user enable --now session-cleanup" ux systemctl --user enable --now session-cleanup
check "user daemon active" sc_wait_for 10 user_is_active \
    || x sh -c "journalctl _UID=$UID_ --no-pager -n 30" >&2
check "user daemon runs as $USERNAME" sc_eq "$(x ps -o user= -p "$(uprop MainPID)" | tr -d ' ')" $USERNAME
check "status --user: its endpoint comes from ~/.config" \
    grep -Eq '^endpoints: +auth$' <<< "$(ux session-cleanup --user status)"

# --- sessions registered with the user daemon
N=5
KEYS=$(new_keys ok- $N)
ids=0
while IFS= read -r key; do
    ux session-cleanup --user register --endpoint auth --label user-test <<< "$key" >/dev/null && ids=$((ids + 1))
done <<< "$KEYS"
check "registered $N sessions with --user" sc_eq "$ids" $N
client reset $PORT >/dev/null && client expect $PORT <<< "$KEYS" >/dev/null
check "--user list shows $N" sc_eq "$(user_listed)" $N
check "store in ~/.local/state/session-cleanup" sc_ne "$(x ls -A /home/$USERNAME/.local/state/session-cleanup)" ""
check "nothing but the configuration in ~/.config/session-cleanup" \
    sc_eq "$(x ls -A /home/$USERNAME/.config/session-cleanup)" "session-cleanup.conf"
out=$(ux session-cleanup list 2>&1); rc=$?
check "without --user the CLI asks the (stopped) system daemon, without starting it: exit 3" sc_eq "$rc" 3
check "... and says so" sc_has "$out" "session-cleanup list: The daemon is stopped (session-cleanup.service: inactive)"
check "... and points at --user" sc_has "$out" "session-cleanup --user list"

# --- a restart of the user daemon hands its sessions over
PID1=$(uprop MainPID)
check "systemctl --user restart" ux systemctl --user restart session-cleanup
check "new MainPID after the restart" sc_ne "$(uprop MainPID)" "$PID1"
check "0 end-session calls at the restart" sc_eq "$(srv_stat 's["calls"]')" 0
check "$N still listed after the restart" sc_eq "$(user_listed)" $N

# --- logout without lingering: the user manager stops, and the daemon ends the sessions
check "loginctl terminate-user $USERNAME" x loginctl terminate-user $USERNAME
check "user@$UID_.service stopped" sc_wait_for 30 is_state "user@$UID_.service" inactive
check "the user's $N sessions were ended, each once" \
    sc_eq "$(srv_stat 's["expected"]["all_ended_exactly_once"]')" True
J=$(sc_journal "$CT" _UID="$UID_" -o json)
check "journal: the user daemon's stop run (stop-begun, stopped)" \
    sc_has "$(grep -o '"SESSION_CLEANUP_EVENT":"[a-z-]*"' <<< "$J" | tr '\n' ' ')" '"stop-begun"'
sc_poweroff "$CT" 30 >/dev/null 2>&1 || true
sc_summary && { [ -n "${SC_KEEP:-}" ] || sc_cleanup "$CT"; }
