#!/bin/bash
# 36-metrics.sh — [Metrics] TextfileDirectory= read by Debian's real prometheus-node-exporter
# (its textfile collector, /var/lib/prometheus/node-exporter), on loopback in the container:
#   - the shipped unit (ReadWritePaths=, and setfacl as root at start) lets the daemon write
#     there; the operator only adds a drop-in and reloads;
#   - node_exporter's /metrics then has session_cleanup_sessions{endpoint="auth"} for the
#     registered sessions, and after `systemctl stop` the stop run's series;
#   - the file is 0644 and has no session key, label or URL path in it.
set -uo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source-path=SCRIPTDIR source=../harness.sh
source "$HERE/harness.sh"

sc_need_daemon 36-metrics
if ! sc_is_elf "$SC_BINARY"; then
    sc_log "SKIP 36-metrics: $SC_BINARY is not the real daemon"
    sc_summary; exit 0
fi

U=session-cleanup
CT=metrics-$$
DIR=/var/lib/prometheus/node-exporter
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"; _sc_on_exit' EXIT
mkdir -p "$TMP/extra"
cp "$HERE/fixtures/sc_client.py" "$TMP/extra/"
cat > "$TMP/session-cleanup.conf" <<EOF
[Stop]
BudgetSec=2s
MaxAttempts=1
[Endpoint]
Name=auth
URL=http://127.0.0.1:18096/user/{session}/endsession
EOF
export SC_EXTRA_DIR=$TMP/extra SC_CONF=$TMP/session-cleanup.conf

x() { sc_exec "$CT" "$@"; }
scrape() { x python3 -c 'import urllib.request; print(urllib.request.urlopen("http://127.0.0.1:9100/metrics", timeout=5).read().decode())'; }
scraped_has() { local out; out=$(scrape) && sc_has "$out" "$1" >/dev/null; }

sc_boot "$CT" || sc_abort "boot container $CT"
check "node_exporter is installed with its textfile directory" x test -d $DIR
sc_log "textfile directory: $(x stat -c '%A %U:%G' $DIR)"
check "start node_exporter" x systemctl start prometheus-node-exporter
check "node_exporter answers on 127.0.0.1:9100" sc_wait_for 20 scraped_has "node_textfile_scrape_error"

check "systemctl start $U" x systemctl start $U.socket $U.service || { sc_dump "$CT" $U; sc_abort "start $U"; }
check "the unit's ExecStartPre= gave session-cleanup an ACL entry" \
    sc_has "$(x getfacl -p $DIR 2>&1)" "user:session-cleanup:rwx"
for i in 1 2 3; do
    x python3 /opt/sc-test/sc_client.py register auth metrics-label <<< "metrics-key-$i-$RANDOM" >/dev/null
done
check "no metrics file while TextfileDirectory= is not set" sc_eq "$(x ls $DIR)" ""

# What an operator does: a drop-in and a reload.
x mkdir -p /etc/session-cleanup/session-cleanup.conf.d
x sh -c "printf '[Metrics]\nTextfileDirectory=$DIR\n' > /etc/session-cleanup/session-cleanup.conf.d/metrics.conf"
check "systemctl reload $U" x systemctl reload $U
check "node_exporter's /metrics has 3 sessions for endpoint auth" \
    sc_wait_for 10 scraped_has 'session_cleanup_sessions{endpoint="auth"} 3'
check "the file is 0644, owned by session-cleanup" \
    sc_eq "$(x stat -c '%a %U' $DIR/session_cleanup.prom)" "644 session-cleanup"
check "the collector read it without error" scraped_has 'node_textfile_scrape_error 0'

check "systemctl stop $U (the calls fail: 3 sessions kept)" x systemctl stop $U.socket $U.service
check "node_exporter's /metrics has the stop run's 3 failed calls" \
    sc_wait_for 10 scraped_has 'session_cleanup_last_run_calls{endpoint="auth",kind="stop",outcome="failed"} 3'
out=$(scrape)
check "… its budget" sc_has "$out" 'session_cleanup_last_run_budget_seconds{kind="stop"} 2'
check "… and a complete journal" sc_has "$out" 'session_cleanup_last_run_journal_complete{kind="stop"} 1'
file=$(x cat $DIR/session_cleanup.prom)
sc_log "session_cleanup.prom after the stop:"; grep -v '^#' <<< "$file" >&2
check "no key, label or URL path in the file" sc_eq "$(grep -c -e metrics-key -e metrics-label -e /user/ -e 18096 <<< "$file")" 0

sc_poweroff "$CT"
sc_summary
