#!/bin/bash
# 10-daemon-core.sh — the real daemon's systemd contract: Type=notify readiness with STATUS=,
# watchdog pings, reload (ExecReload=), a quick clean stop, and SESSION_CLEANUP_EVENT journal fields.
# Runs only when SC_BINARY (and SC_UNIT) exist; run.sh builds/sets both.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../harness.sh
source "$HERE/harness.sh"

sc_need_daemon 10-daemon-core
U=session-cleanup
WD_S=2                                  # test watchdog interval (drop-in below)
CT=core-$$
RUN=$(sc_run_dir "$CT")

sc_boot "$CT" || sc_abort "boot container $CT"

# --- the binary runs in the bare rootfs: every shared library resolves (static Swift stdlib)
if sc_is_elf "$SC_BINARY"; then
    check "all shared libraries of the binary resolve inside" \
        sc_lacks "$(sc_exec "$CT" ldd /usr/bin/session-cleanup 2>&1)" "not found"
fi

# --- the shipped unit file
check "unit Type=notify" sc_eq "$(sc_prop "$CT" $U Type)" notify
check "unit sets WatchdogSec=" sc_has "$(sc_exec "$CT" systemctl cat $U)" "WatchdogSec="
check "unit ExecReload= runs session-cleanup reload" sc_has "$(sc_prop "$CT" $U ExecReload)" "session-cleanup reload"

# A short watchdog so "3 intervals" takes seconds.
sc_exec "$CT" sh -c "mkdir -p /etc/systemd/system/$U.service.d &&
    printf '[Service]\nWatchdogSec=${WD_S}s\n' > /etc/systemd/system/$U.service.d/test.conf &&
    systemctl daemon-reload"

# --- start: READY=1 makes `systemctl start` return with the unit active
t0=$(sc_ms)
# (nothing below means anything if the start failed: show why and stop here)
check "systemctl start $U" sc_exec "$CT" systemctl start $U || { sc_dump "$CT" $U; sc_summary; exit 1; }
sc_log "start took $(( $(sc_ms) - t0 )) ms"
check "ActiveState=active" sc_eq "$(sc_prop "$CT" $U ActiveState)" active
check "StatusText non-empty" sc_ne "$(sc_prop "$CT" $U StatusText)" ""
sc_log "StatusText: $(sc_prop "$CT" $U StatusText)"
check "drop-in applied: WatchdogUSec=${WD_S}s" sc_eq "$(sc_prop "$CT" $U WatchdogUSec)" "${WD_S}s"
PID0=$(sc_prop "$CT" $U MainPID)

# --- watchdog: survives ~3 intervals only if it keeps sending WATCHDOG=1
sc_sleep $(( 3 * WD_S )).5
check "still running after 3 watchdog intervals" sc_eq "$(sc_prop "$CT" $U SubState)" running \
    || sc_dump "$CT" $U
check "same MainPID ($PID0)" sc_eq "$(sc_prop "$CT" $U MainPID)" "$PID0"
check "Result=success (no watchdog kill)" sc_eq "$(sc_prop "$CT" $U Result)" success
check "NRestarts=0" sc_eq "$(sc_prop "$CT" $U NRestarts)" 0

# --- reload (ExecReload=, over the control socket): succeeds, same process, still active
check "systemctl reload $U" sc_exec "$CT" systemctl reload $U
journal_has() { sc_json_has "$(sc_journal "$CT" -u $U -o json)" SESSION_CLEANUP_EVENT "$1"; }
# (journald may not have the daemon's entry yet when systemctl returns)
check "reload logged (within 5 s)" sc_wait_for 5 journal_has reloading
check "active after reload" sc_wait_for 5 test "$(sc_prop "$CT" $U ActiveState)" = active
check "same MainPID after reload" sc_eq "$(sc_prop "$CT" $U MainPID)" "$PID0"

# --- stop: quick (no sessions registered) and clean
tmo_us=$(sc_exec "$CT" systemd-analyze timespan "$(sc_prop "$CT" $U TimeoutStopUSec)" | awk 'NR == 2 {print $2}')
t0=$(sc_ms)
check "systemctl stop $U" sc_exec "$CT" systemctl stop $U
stop_ms=$(( $(sc_ms) - t0 ))
sc_log "stop took $stop_ms ms (TimeoutStopSec = $(( tmo_us / 1000 )) ms)"
check "stop well under TimeoutStopSec ($stop_ms ms < 1/4 of $(( tmo_us / 1000 )) ms)" \
    test "$stop_ms" -lt $(( tmo_us / 4000 ))
check "Result=success after stop" sc_eq "$(sc_prop "$CT" $U Result)" success
check "ActiveState=inactive after stop" sc_eq "$(sc_prop "$CT" $U ActiveState)" inactive

# --- the journal, read from outside as JSON
J=$(sc_journal "$CT" -u $U -o json)
for ev in started ready reloading stop-begun stopped; do
    check "journal: SESSION_CLEANUP_EVENT=$ev" sc_json_has "$J" SESSION_CLEANUP_EVENT "$ev"
done
events=$(grep -o '"SESSION_CLEANUP_EVENT":"\(started\|ready\|reloading\|stop-begun\|stopped\)"' <<< "$J" \
    | cut -d'"' -f4 | tr '\n' ' ')
check "journal: events in order" sc_eq "$events" "started ready reloading stop-begun stopped "

check "poweroff" sc_poweroff "$CT" 30
if [ "$SC_FAILS" -eq 0 ]; then sc_cleanup "$CT"; else sc_log "kept for inspection: $RUN"; fi
sc_summary
