#!/bin/bash
# 00-harness-selftest.sh — proves the harness itself, with a Python stand-in for the daemon
# (fixtures/standin-daemon.py, same systemd contract), so it is independent of the real binary.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../harness.sh
source "$HERE/harness.sh"

CT=selftest-$$
RUN=$(sc_run_dir "$CT")
extra=$(mktemp -d); conf=$(mktemp)
trap 'rm -rf "$extra" "$conf"; _sc_on_exit' EXIT   # keep the harness' cleanup in our own trap
echo hello > "$extra/marker.txt"
echo "# self-test config" > "$conf"

# --- boot with every staging variable set (the stand-in plays the daemon)
SC_BINARY=$HERE/fixtures/standin-daemon.py SC_UNIT=$HERE/fixtures/standin.service \
SC_CONF=$conf SC_EXTRA_DIR=$extra \
    sc_boot "$CT" || sc_abort "boot container $CT"
check "boot took < 10 s ($(cat "$RUN/boot_ms") ms)" test "$(cat "$RUN/boot_ms")" -lt 10000
check "SC_BINARY staged as /usr/bin/session-cleanup, mode 755" \
    sc_eq "$(sc_exec "$CT" stat -c %a /usr/bin/session-cleanup)" 755
check "SC_UNIT staged" sc_exec "$CT" test -f /etc/systemd/system/session-cleanup.service
check "SC_CONF staged" sc_exec "$CT" grep -q self-test /etc/session-cleanup/session-cleanup.conf
check "SC_EXTRA_DIR staged at /opt/sc-test" sc_eq "$(sc_exec "$CT" cat /opt/sc-test/marker.txt)" hello
check "staging kept /usr readable (mode 755)" sc_eq "$(sc_exec "$CT" stat -c %a /usr)" 755
check "container has no network but loopback" \
    sc_eq "$(sc_exec "$CT" ls /sys/class/net)" lo
# (the leak checks below must be able to see a live container, or they would prove nothing)
check "while running: overlay seen by sc_mount_holders" sc_ne "$(sc_mount_holders "$CT")" ""
check "while running: processes seen by sc_cgroup_pids" sc_ne "$(sc_cgroup_pids "$CT")" ""

# --- a Type=notify unit: start, status, stop
check "systemctl start session-cleanup (stand-in)" sc_exec "$CT" systemctl start session-cleanup \
    || sc_dump "$CT" session-cleanup
check "unit ActiveState=active" sc_eq "$(sc_prop "$CT" session-cleanup ActiveState)" active
check "unit StatusText from STATUS=" sc_has "$(sc_prop "$CT" session-cleanup StatusText)" "sessions registered"
check "systemctl stop" sc_exec "$CT" systemctl stop session-cleanup
check "Result=success after stop" sc_eq "$(sc_prop "$CT" session-cleanup Result)" success

# --- journal read from outside, JSON, custom field
J=$(sc_journal "$CT" -u session-cleanup -o json)
check "outside journal has SESSION_CLEANUP_EVENT=ready" sc_json_has "$J" SESSION_CLEANUP_EVENT ready
check "outside journal has SESSION_CLEANUP_EVENT=stopped" sc_json_has "$J" SESSION_CLEANUP_EVENT stopped

# --- poweroff: the container exits and leaves nothing behind
check "poweroff" sc_poweroff "$CT" 30
check "nspawn exited 0" sc_eq "$(cat "$RUN/nspawn.rc" 2>/dev/null)" 0
check "journal still readable after poweroff" sc_has "$(sc_journal "$CT" -o cat)" "System Power Off"
check "no mounts under $SC_SANDBOX_ROOT in /proc/mounts" sc_eq "$(grep -c "$SC_SANDBOX_ROOT" /proc/mounts)" 0
check "no process in any namespace still has the overlay" sc_eq "$(sc_mount_holders "$CT")" ""
check "no processes in the container's cgroup" sc_eq "$(sc_cgroup_pids "$CT")" ""
check "container's cgroups removed" test ! -e "$SC_CG_MAIN/$SC_CG_PARENT/$CT"
sc_cleanup "$CT"
check "sc_cleanup removed the run dir" test ! -e "$RUN"

# --- the EXIT trap: a script that fails with a container running leaves nothing behind
T=selftest-trap-$$
# shellcheck disable=SC2016  # (expanded by the child shell)
env -u SC_BINARY -u SC_UNIT -u SC_CONF -u SC_EXTRA_DIR -u SC_ENABLE \
    bash -c 'source "$1"; sc_boot "$2" || exit 1; exit 3' _ "$HERE/harness.sh" "$T"
rc=$?
check "failing script exited with its own code (3)" sc_eq "$rc" 3
check "its container was killed by the trap (no processes)" sc_eq "$(sc_cgroup_pids "$T")" ""
check "no mounts left after the trap" sc_eq "$(grep -c "$SC_SANDBOX_ROOT" /proc/mounts)$(sc_mount_holders "$T")" 0
check "its cgroups removed" test ! -e "$SC_CG_MAIN/$SC_CG_PARENT/$T"
sc_cleanup "$T"

sc_summary
