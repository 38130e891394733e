#!/bin/bash
# 37-sleep.sh — [Sleep] EndSessions=yes under the real systemd-logind (issue 27, item 4):
#   - the container is made "sleepable" for logind: /sys/power (absent under nspawn) becomes a
#     small tmpfs with a state file, so CanSuspend says yes and `systemctl suspend` runs logind's
#     whole sleep cycle (PrepareForSleep(true), the delay locks, sleep.target, systemd-suspend's
#     write to that file, PrepareForSleep(false)) without touching the host;
#   - without polkit (the rootfs has none) logind refuses the lock to the service's user: the
#     daemon warns (sleep-lock-failed, naming the D-Bus error) and serves on;
#   - with User=root in a drop-in (logind grants root without polkit; on a real machine polkit's
#     default "yes" for inhibit-delay-sleep grants the service's user the same) the lock is held (systemd-inhibit --list); `systemctl suspend` begins a
#     sleep run (RUN_KIND=sleep) that ends the sessions, and the lock is released before logind's
#     delay (no "inhibitor timeout is reached"); the rejected session stays, is retried after the
#     resume (resumed, a leftover run), and the lock is taken again; no key in the journal.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../harness.sh
source "$HERE/harness.sh"
# shellcheck source=../journal.sh
source "$HERE/journal.sh"

sc_need_daemon 37-sleep
if ! sc_is_elf "$SC_BINARY"; then
    sc_log "SKIP 37-sleep: $SC_BINARY is not the real daemon"
    sc_summary; exit 0
fi

U=session-cleanup
SRV=endsession-server
PORT=18099
CT=sleep-$$
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; _sc_on_exit' EXIT
mkdir -p "$TMP/extra"
cp "$ROOT/Tests/Support/endsession_server.py" "$HERE/fixtures/sc_client.py" "$TMP/extra/"
cat > "$TMP/session-cleanup.conf" <<EOF
[Stop]
MaxAttempts=1
[Sleep]
EndSessions=yes
[Endpoint]
Name=auth
URL=http://127.0.0.1:$PORT/user/{session}/endsession
EOF
export SC_EXTRA_DIR=$TMP/extra SC_CONF=$TMP/session-cleanup.conf

x() { sc_exec "$CT" "$@"; }
client() { x python3 /opt/sc-test/sc_client.py "$@"; }
calls() { client stats $PORT | python3 -c 'import json,sys; print(json.load(sys.stdin)["calls"])'; }
calls_are() { [ "$(calls)" = "$1" ]; }
listed() { x session-cleanup list --json | grep -o '"id"' | wc -l | tr -d ' '; }
inhibitors() { x systemd-inhibit --list --no-pager 2>&1; }
holds_lock() { local l; l=$(inhibitors); sc_has "$l" "session-cleanup" >/dev/null && sc_has "$l" "delay" >/dev/null; }
logind_log() { x journalctl -q -o cat -u systemd-logind --no-pager; }
logind_says() { sc_has "$(logind_log)" "$1" >/dev/null; }

sc_boot "$CT" || sc_abort "boot container $CT"
check "systemd-logind runs in the container" sc_eq "$(sc_prop "$CT" systemd-logind ActiveState)" active
# /sys is nspawn's read-only tmpfs without power/: make the directory, mount a tmpfs on it with
# the two files logind reads, and restart logind so its own mount namespace has them.
x sh -c 'mount -o remount,rw /sys && mkdir -p /sys/power && mount -o remount,ro /sys &&
    mount -t tmpfs -o mode=0755,size=64k sc-power /sys/power &&
    printf "freeze mem disk\n" > /sys/power/state && printf "s2idle [deep]\n" > /sys/power/mem_sleep' \
    || sc_abort "a fake /sys/power"
x systemctl restart systemd-logind
check "logind: CanSuspend is yes" sc_has "$(x busctl call org.freedesktop.login1 /org/freedesktop/login1 \
    org.freedesktop.login1.Manager CanSuspend)" '"yes"'

x systemd-run --unit=$SRV -p Before=$U.service /usr/bin/python3 /opt/sc-test/endsession_server.py \
    --host 127.0.0.1 --port $PORT --ready-file /run/$SRV.port >/dev/null
check "$SRV listening" sc_wait_for 10 x test -s /run/$SRV.port || sc_abort "server ready"

# --- without polkit: refused, a warning, the daemon serves on
C0=$(cursor)
check "systemctl start $U" x systemctl start $U.socket $U.service || { sc_dump "$CT" $U; sc_abort "start $U"; }
check "no polkit: sleep-lock-failed is journaled" wait_event "$C0" sleep-lock-failed
failed=$(jsel "$(since "$C0")" SESSION_CLEANUP_EVENT=sleep-lock-failed | head -n1)
sc_log "sleep-lock-failed: $(jfield MESSAGE <<< "$failed")"
check "... naming logind's refusal" sc_has "$(jfield ERROR <<< "$failed")" "Manager.Inhibit: org.freedesktop.DBus.Error"
check "... and the daemon still runs" sc_eq "$(sc_prop "$CT" $U ActiveState)" active
check "no lock is held" sc_lacks "$(inhibitors)" "session-cleanup"
check "status says why" sc_has "$(x session-cleanup status)" "not held: Manager.Inhibit: org.freedesktop.DBus.Error.AccessDenied"

# --- as root (what polkit's default yes grants the service's user on a real machine). logind
# trusts no capability here: over dbus-daemon the sender's capabilities come from /proc (racy),
# so sd-bus decides on the sender's uid alone. The unit's empty CapabilityBoundingSet= stays.
x mkdir -p /etc/systemd/system/$U.service.d
x sh -c "printf '[Service]\nUser=root\nGroup=root\n' > /etc/systemd/system/$U.service.d/sleep-lock.conf"
x systemctl daemon-reload
C1=$(cursor)
x systemctl restart $U.service
check "sleep-lock-taken is journaled" wait_event "$C1" sleep-lock-taken
check "systemd-inhibit --list shows session-cleanup's delay lock" sc_wait_for 5 holds_lock
sc_log "inhibitors: $(inhibitors | head -n2 | tail -n1)"
check "status: sleep lock held" sc_eq "$(x session-cleanup status | sed -n 's/^sleep lock: *//p')" held
check "the lock's budget: logind's 5 s less 1 s" \
    sc_eq "$(jsel "$(since "$C1")" SESSION_CLEANUP_EVENT=sleep-lock-taken | jfield BUDGET_USEC | head -n1)" 4000000

OK_KEY="ok-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
NO_KEY="no-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')"
client register auth sleep-test <<< "$OK_KEY"$'\n'"$NO_KEY" >/dev/null
check "2 sessions registered" sc_eq "$(listed)" 2

C2=$(cursor)
t0=$(sc_ms)
x systemctl suspend
check "logind's sleep cycle finished" sc_wait_for 20 logind_says "Operation 'sleep' finished."
sc_log "suspend to resume: $(( $(sc_ms) - t0 )) ms"
J=$(since "$C2")
check "journal: sleeping" sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=sleeping)" 1
check "journal: a sleep run finished (RUN_KIND=sleep)" \
    sc_eq "$(jcount "$J" SESSION_CLEANUP_EVENT=run-finished RUN_KIND=sleep)" 1
check "server: both sessions called" sc_eq "$(calls)" 2
# In the journal's order: logind's announcement, the sleep run's end, then the sleep itself.
when() { jsel "$J" "$@" | jfield __REALTIME_TIMESTAMP | head -n1; }
announced=$(when SYSLOG_IDENTIFIER=systemd-logind MESSAGE="The system will suspend now!")
run_end=$(when SESSION_CLEANUP_EVENT=run-finished RUN_KIND=sleep)
slept=$(when SYSLOG_IDENTIFIER=systemd-sleep "MESSAGE=Entering sleep state 'suspend'...")
sc_log "announced → sleep run finished: $(( (${run_end:-0} - ${announced:-0}) / 1000 )) ms; → sleep: $(( (${slept:-0} - ${announced:-0}) / 1000 )) ms"
check "the sleep run finished after logind's announcement and before the sleep" \
    test -n "$announced" -a -n "$run_end" -a -n "$slept" -a "${announced:-0}" -lt "${run_end:-0}" -a "${run_end:-0}" -lt "${slept:-0}"
check "logind did not wait out its delay (the lock was released after the run)" \
    sc_lacks "$(logind_log)" "inhibitor timeout is reached"
check "journal: resumed" wait_event "$C2" resumed
check "the lock is taken again after the resume" sc_wait_for 5 holds_lock
check "the ended session is gone, the rejected one stays" sc_eq "$(listed)" 1
check "the rejected session is retried after the resume (within 15 s)" sc_wait_for 15 calls_are 3
check "journal: a leftover run after the resume" wait_event "$C2" run-finished RUN_KIND=leftover

all=$(jr -o json)
check "no session key in the journal" sc_lacks "$all" "${OK_KEY#ok-}"
check "no session key in the journal (rejected one)" sc_lacks "$all" "${NO_KEY#no-}"
sc_summary
