#!/bin/bash
# 50-package.sh — the Debian package, installed as an operator installs it, into a fresh
# real-systemd container that has no Swift toolchain:
#   - `dpkg -i`: every file in place, the service enabled and running as the user
#     session-cleanup, the socket unit listening, man pages, the journal catalog, the example
#     configuration a conffile in its unmodified state, bash completion, docs;
#   - 50 sessions registered against a server in the container, then `dpkg -i` of the same tree
#     packaged with a higher version: the upgrade restarts the daemon (a new MainPID) and the
#     restart hands the sessions over — 0 end-session calls, 50 still listed;
#   - the store key: the postinst made /etc/credstore.encrypted/session-cleanup.store-key (0600 in
#     a 0700 directory), the upgrade kept it, no registered key is in /var/lib/session-cleanup in
#     clear ([Store] KeyCredential=store-key in the shipped configuration);
#   - `dpkg --purge`: the stop run ends the 50, then no file of the package is left and the state
#     directory and the store key are gone.
# Install and upgrade times are printed (and kept in the run's upper dir as *_ms files).
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../harness.sh
source "$HERE/harness.sh"

if [ -z "${SC_DEB:-}" ]; then
    sc_log "SKIP 50-package: SC_DEB is not set (scripts/test.sh builds the package and sets it)"
    sc_summary; exit 0
fi
# This case installs the package itself, on the bare base rootfs.
unset SC_DEB_LAYER SC_BINARY SC_UNIT SC_SOCKET_UNIT SC_SYSUSERS SC_CONF SC_ENABLE

U=session-cleanup
SRV=endsession-server
PORT=18080
CT=package-$$
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; _sc_on_exit' EXIT
mkdir -p "$TMP/extra"
cp "$SC_DEB" "$TMP/extra/package.deb"
# The upgrade: the same tree packaged with a higher version (built here unless given).
UPGRADE_DEB=${SC_DEB_UPGRADE:-}
if [ -z "$UPGRADE_DEB" ]; then
    base_version=$(dpkg-deb -f "$SC_DEB" Version)
    UPGRADE_DEB=$(cd "$ROOT" && scripts/package.sh --version "$base_version+upgradetest1" 2>"$TMP/upgrade-build.log" | tail -n1)
    [ -f "$ROOT/$UPGRADE_DEB" ] && UPGRADE_DEB=$ROOT/$UPGRADE_DEB
fi
[ -f "$UPGRADE_DEB" ] || { cat "$TMP/upgrade-build.log" >&2 2>/dev/null; sc_abort "the upgrade package exists ($UPGRADE_DEB)"; }
cp "$UPGRADE_DEB" "$TMP/extra/upgrade.deb"
cp "$ROOT/Tests/Support/endsession_server.py" "$HERE/fixtures/sc_client.py" "$TMP/extra/"
export SC_EXTRA_DIR=$TMP/extra
VERSION=$(dpkg-deb -f "$SC_DEB" Version)
NEW_VERSION=$(dpkg-deb -f "$UPGRADE_DEB" Version)

x() { sc_exec "$CT" "$@"; }
client() { x python3 /opt/sc-test/sc_client.py "$@"; }
new_keys() { local i; for ((i = 0; i < $2; i++)); do printf '%s%s\n' "$1" "$(od -An -N16 -tx1 /dev/urandom | tr -d ' \n')"; done; }
# srv_stat EXPR : EXPR over the server's /_stats object s, e.g. 's["calls"]', 'len(s["ended"])'
srv_stat() { client stats $PORT | python3 -c "import json, sys; s = json.load(sys.stdin); print($1)"; }
listed() { x session-cleanup list --json | grep -o '"id":' | wc -l | tr -d ' '; }
jr() { sc_journal "$CT" "$@"; }
is_state() { [ "$(sc_prop "$CT" "$1" ActiveState)" = "$2" ]; }   # is_state UNIT STATE

sc_boot "$CT" || sc_abort "boot container $CT"
check "no Swift toolchain inside" sc_eq "$(x sh -c 'command -v swift swiftc || true')" ""

# --- the end-session server inside, and an endpoint for it (written before the package, as
# configuration management would: a drop-in, so the packaged example stays unmodified)
x mkdir -p /var/lib/$SRV /etc/session-cleanup/session-cleanup.conf.d
x sh -c "printf '[Endpoint]\nName=auth\nURL=http://127.0.0.1:$PORT/user/{session}/endsession\n' \
    > /etc/session-cleanup/session-cleanup.conf.d/50-test.conf"
check "start $SRV" x systemd-run --unit=$SRV -p Before=$U.service /usr/bin/python3 \
    /opt/sc-test/endsession_server.py --host 127.0.0.1 --port $PORT --ready-file /run/$SRV.port \
    --stats-file /var/lib/$SRV/stats.json || sc_abort "start the test server"
check "$SRV listening" sc_wait_for 10 x test -s /run/$SRV.port || sc_abort "server ready"

# ------------------------------------------------------------------------------------ install
t0=$(sc_ms)
out=$(x dpkg -i /opt/sc-test/package.deb 2>&1); rc=$?
install_ms=$(( $(sc_ms) - t0 )); echo "$install_ms" > "$(sc_run_dir "$CT")/install_ms"
sc_log "dpkg -i took $install_ms ms"
check "dpkg -i $VERSION" sc_eq "$rc" 0 || { printf '%s\n' "$out" >&2; sc_abort "install the package"; }
check "installed: $(x dpkg-query -W -f='${Status} ${Version}' $U)" \
    sc_eq "$(x dpkg-query -W -f='${Status} ${Version}' $U)" "install ok installed $VERSION"
files=$(x dpkg -L $U)
for f in /usr/bin/session-cleanup /lib/systemd/system/session-cleanup.service \
         /lib/systemd/system/session-cleanup.socket /usr/lib/systemd/user/session-cleanup.service \
         /usr/lib/sysusers.d/session-cleanup.conf /etc/session-cleanup/session-cleanup.conf \
         /usr/share/man/man8/session-cleanup.8.gz /usr/share/man/man5/session-cleanup.conf.5.gz \
         /usr/share/man/man7/session-cleanup-protocol.7.gz /usr/share/bash-completion/completions/session-cleanup \
         /usr/share/doc/session-cleanup/README.md.gz /usr/share/doc/session-cleanup/control-protocol.md.gz \
         /usr/share/doc/session-cleanup/copyright; do
    check "package ships $f" sc_has "$files" "$f"
    check "$f exists" x test -e "$f"
done
check "all shared libraries of the binary resolve" sc_lacks "$(x ldd /usr/bin/session-cleanup 2>&1)" "not found"
for page in 8:session-cleanup 5:session-cleanup.conf 7:session-cleanup-protocol; do
    check "man -w ${page#*:}(${page%%:*})" sc_eq "$(x man -w "${page%%:*}" "${page#*:}")" \
        "/usr/share/man/man${page%%:*}/${page#*:}.${page%%:*}.gz"
done
check "man session-cleanup renders" sc_has "$(x env MANWIDTH=80 man -P cat session-cleanup 2>&1)" "EXIT STATUS"
check "unit Documentation= names man:session-cleanup(8)" sc_has "$(sc_prop "$CT" $U Documentation)" "man:session-cleanup(8)"
check "conffile: the example configuration" sc_has "$(x dpkg-query -W -f='${Conffiles}' $U)" "/etc/session-cleanup/session-cleanup.conf"
check "dpkg --verify: every file as shipped (conffile unmodified)" sc_eq "$(x dpkg --verify $U 2>&1)" ""
check "user and group session-cleanup exist (sysusers)" x getent passwd session-cleanup
check "service enabled" sc_eq "$(x systemctl is-enabled $U.service)" enabled
check "socket enabled" sc_eq "$(x systemctl is-enabled $U.socket)" enabled
check "service active after install" sc_wait_for 10 is_state $U active || sc_dump "$CT" $U
check "socket active (listening)" sc_eq "$(sc_prop "$CT" $U.socket ActiveState)" active
PID1=$(sc_prop "$CT" $U MainPID)
# The journal catalog (systemd/session-cleanup.catalog, from the journal helper) once it exists:
# systemd's trigger loads it, and the daemon's entries carry its MESSAGE_IDs.
CATALOG=/usr/lib/systemd/catalog/session-cleanup.catalog
if x test -f $CATALOG; then
    ids=$(x sed -n 's/^-- \([0-9a-f]\{32\}\).*/\1/p' $CATALOG | sort -u)
    listed_ids=$(x journalctl --list-catalog --no-pager 2>/dev/null | awk '{print $1}' | sort -u)
    check "journalctl --list-catalog knows the package's $(wc -w <<< "$ids") entries" \
        sc_eq "$(comm -23 <(tr ' ' '\n' <<< "$ids") <(tr ' ' '\n' <<< "$listed_ids") | tr '\n' ' ')" ""
    ready_id=$(jr -u $U -o json SESSION_CLEANUP_EVENT=ready | grep -o '"MESSAGE_ID":"[0-9a-f]*"' | head -n1 | cut -d'"' -f4)
    check "the daemon's ready entry has a MESSAGE_ID from the catalog (${ready_id:-none})" \
        grep -qx "${ready_id:-none}" <<< "$ids"
else
    sc_log "NOTE: the package ships no journal catalog yet (systemd/session-cleanup.catalog is not in the tree)"
fi
STOREKEY=/etc/credstore.encrypted/session-cleanup.store-key
check "postinst made the store key $STOREKEY" x test -s $STOREKEY
check "the store key is root's, mode 0600" sc_eq "$(x stat -c '%U %a' $STOREKEY)" "root 600"
check "/etc/credstore.encrypted is mode 0700" sc_eq "$(x stat -c '%a' /etc/credstore.encrypted)" 700
check "the store key is encrypted (systemd-creds), not 32 raw bytes" sc_ne "$(x stat -c %s $STOREKEY)" 32
KEYSUM=$(x sha256sum $STOREKEY)
check "the daemon runs as user session-cleanup" sc_eq "$(x ps -o user= -p "$PID1" | tr -d ' ')" session-cleanup
check "the user unit is installed, not enabled for everyone" \
    sc_eq "$(x systemctl --global is-enabled session-cleanup.service 2>&1)" disabled

# ------------------------------------------------------------------- 50 sessions, then upgrade
N=50
KEYS=$(new_keys ok- $N)
IDS=$(client register auth package <<< "$KEYS")
check "registered $N sessions" sc_eq "$(wc -w <<< "$IDS" | tr -d ' ')" $N
client reset $PORT >/dev/null && client expect $PORT <<< "$KEYS" >/dev/null
check "$N listed before the upgrade" sc_eq "$(listed)" $N
x sh -c 'cat > /root/registered-keys' <<< "$KEYS"
# keys_in_clear DIR : how many of the registered keys grep finds in clear under DIR
keys_in_clear() { x sh -c "grep -raoF -f /root/registered-keys $1 | wc -l" | tr -d ' '; }
check "the grep finds the $N keys where they are in clear (its own control)" sc_eq "$(keys_in_clear /root)" $N
check "none of the $N registered keys is in /var/lib/session-cleanup in clear" \
    sc_eq "$(keys_in_clear /var/lib/session-cleanup)" 0
t0=$(sc_ms)
out=$(x dpkg -i /opt/sc-test/upgrade.deb 2>&1); rc=$?
upgrade_ms=$(( $(sc_ms) - t0 )); echo "$upgrade_ms" > "$(sc_run_dir "$CT")/upgrade_ms"
sc_log "dpkg -i (upgrade to $NEW_VERSION) took $upgrade_ms ms"
check "dpkg -i $NEW_VERSION (upgrade)" sc_eq "$rc" 0 || printf '%s\n' "$out" >&2
check "version $NEW_VERSION installed" sc_eq "$(x dpkg-query -W -f='${Version}' $U)" "$NEW_VERSION"
check "the binary says $NEW_VERSION too" sc_eq "$(x session-cleanup --version)" "session-cleanup $NEW_VERSION"
check "active after the upgrade" sc_wait_for 10 is_state $U active || sc_dump "$CT" $U
PID2=$(sc_prop "$CT" $U MainPID)
check "the upgrade restarted the daemon (MainPID $PID1 -> $PID2)" sc_ne "$PID2" "$PID1"
check "0 end-session calls during the upgrade" sc_eq "$(srv_stat 's["calls"]')" 0
check "$N sessions still listed after the upgrade" sc_eq "$(listed)" $N
check "the upgrade kept the store key" sc_eq "$(x sha256sum $STOREKEY)" "$KEYSUM"
check "still none of the $N keys in clear after the upgrade" sc_eq "$(keys_in_clear /var/lib/session-cleanup)" 0

# The store key's file missing: the unit's SetCredential= stand-in reaches the daemon, which
# refuses to start (78) naming what to create — the restart hands over to a process that exits,
# the sessions stay stored; with the file back, the next start has them all.
x mv $STOREKEY /root/store-key.saved
x systemctl restart $U.service >/dev/null 2>&1
exited() { [ "$(sc_prop "$CT" $U ExecMainStatus)" = "$1" ]; }   # exited STATUS
check "without its key file the daemon exits 78" sc_wait_for 10 exited 78 || sc_dump "$CT" $U
check "the journal says the key file is missing" \
    sc_has "$(jr -u $U -o cat)" "LoadCredentialEncrypted=store-key: names is missing"
x mv /root/store-key.saved $STOREKEY
x systemctl reset-failed $U.service >/dev/null 2>&1
check "with the key file back the daemon starts" x systemctl start $U.service
check "active again" sc_wait_for 10 is_state $U active || sc_dump "$CT" $U
check "$N sessions still listed" sc_eq "$(listed)" $N
check "journal: the restart handed the sessions over" \
    sc_has "$(jr -o json SESSION_CLEANUP_EVENT=handed-over)" '"SESSION_CLEANUP_EVENT":"handed-over"'

# -------------------------------------------------------------------------------------- purge
check "the state directory exists before the purge" x test -d /var/lib/session-cleanup
t0=$(sc_ms)
out=$(x dpkg --purge $U 2>&1); rc=$?
sc_log "dpkg --purge took $(( $(sc_ms) - t0 )) ms"
check "dpkg --purge" sc_eq "$rc" 0 || printf '%s\n' "$out" >&2
check "the stop run at removal ended all $N sessions, each once" \
    sc_eq "$(srv_stat 's["expected"]["all_ended_exactly_once"]')" True
check "package gone" sc_eq "$(x dpkg-query -W -f='${Status}' $U 2>/dev/null)" ""
# (directories are shared with other packages, and /lib is a symlink to one)
left=$(x sh -c 'while read -r f; do [ -e "$f" ] && [ ! -d "$f" ] && echo "$f"; done; true' <<< "$files")
check "no file of the package left" sc_eq "$left" ""
check "state directory /var/lib/session-cleanup removed" x test ! -e /var/lib/session-cleanup
check "the store key removed" x test ! -e $STOREKEY
check "no unit left enabled" sc_eq "$(x sh -c 'ls /etc/systemd/system/*.wants/ | grep session-cleanup || true')" ""
check "the operator's drop-in is left alone" x test -f /etc/session-cleanup/session-cleanup.conf.d/50-test.conf
sc_log "package: install $install_ms ms, upgrade $upgrade_ms ms"
sc_poweroff "$CT" 30 >/dev/null 2>&1 || true
sc_summary && { [ -n "${SC_KEEP:-}" ] || sc_cleanup "$CT"; }
