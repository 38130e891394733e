#!/bin/bash
# run.sh — session-cleanup system tests: real systemd + journald in systemd-nspawn containers.
#
#   sudo Tests/SystemTests/run.sh [CASE-NAME-SUBSTRING...]
#
# env: SC_DEB     the Debian package: installed (dpkg -i) into a layer under every container; the
#                 cases then test what it put there (scripts/test.sh sets it)
#      SC_BINARY  daemon binary (default: .build/release/session-cleanup, built with
#                 `swift build -c release --static-swift-stdlib` if missing)
#      SC_UNIT    unit file (default: systemd/session-cleanup.service)
#      SC_SANDBOX_ROOT  rootfs + runs (default /var/tmp/session-cleanup-sandbox)
# Prints a final line "N passed, N failed"; exits non-zero on any failure.
set -uo pipefail
if [ "$(id -u)" -ne 0 ]; then
    echo "run.sh: must run as root (systemd-nspawn, overlay mounts, cgroups); try: sudo $0" >&2
    exit 1
fi
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
ROOT=$(cd "$HERE/../.." && pwd)
# shellcheck source=harness.sh
source "$HERE/harness.sh"

t_all=$(sc_ms)
sc_setup || { echo "0 passed, 1 failed"; exit 1; }
sc_log "setup: $(( $(sc_ms) - t_all )) ms"

total_pass=0; total_fail=0

# The package under test (scripts/test.sh sets SC_DEB): installed once with dpkg -i into a layer
# every container boots with, so the cases run against what the package put there.
if [ -n "${SC_DEB:-}" ]; then
    SC_DEB=$(readlink -f "$SC_DEB")
    if ! SC_DEB_LAYER=$(sc_deb_layer "$SC_DEB"); then
        echo "0 passed, 1 failed"; exit 1
    fi
    export SC_DEB SC_DEB_LAYER
fi

# The daemon under test: build the default binary if it is missing (static Swift stdlib: the
# rootfs has no Swift runtime).  A failed build is a failure, not a silent skip.
if [ -z "${SC_BINARY:-}" ] && [ -z "${SC_DEB_LAYER:-}" ]; then
    SC_BINARY=$ROOT/.build/release/session-cleanup
    if [ ! -x "$SC_BINARY" ]; then
        sc_log "building $SC_BINARY"
        if ! (cd "$ROOT" && swift build -c release --static-swift-stdlib) >&2; then
            sc_log "FAIL  swift build -c release --static-swift-stdlib"; total_fail=$((total_fail + 1))
        fi
    fi
fi
if [ -z "${SC_DEB_LAYER:-}" ]; then
    SC_UNIT=${SC_UNIT:-$ROOT/systemd/session-cleanup.service}
    SC_BINARY=$(readlink -f "$SC_BINARY" || echo "$SC_BINARY")    # cases cd nowhere, but be safe
    SC_UNIT=$(readlink -f "$SC_UNIT" || echo "$SC_UNIT")
    export SC_BINARY SC_UNIT
fi
export SC_SANDBOX_ROOT

results=$(mktemp); trap 'rm -f "$results"; _sc_on_exit' EXIT
for c in "$HERE"/cases/*.sh; do
    name=$(basename "$c" .sh)
    if [ $# -gt 0 ]; then                     # optional filter: run only matching cases
        keep=0; for f in "$@"; do [[ $name == *"$f"* ]] && keep=1; done
        [ "$keep" = 1 ] || continue
    fi
    sc_log "=== $name"
    : > "$results"; t0=$(sc_ms)
    # In the background + wait, so a TERM/INT sent to run.sh (CI timeout, Ctrl-C) reaches the
    # case as TERM (a background job ignores SIGINT), whose EXIT trap then kills its containers.
    SC_RESULTS_FILE=$results bash "$c" & child=$!
    trap 'kill -TERM "$child" 2>/dev/null; wait "$child"; exit 143' TERM
    trap 'kill -TERM "$child" 2>/dev/null; wait "$child"; exit 130' INT
    wait "$child"; rc=$?
    trap 'exit 143' TERM; trap 'exit 130' INT      # (the harness' own handlers again)
    read -r p f < "$results" || { p=0; f=0; }
    # A case that died before its summary (or exited non-zero with 0 failures) counts as one failure.
    if [ ! -s "$results" ] || { [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; }; then
        sc_log "FAIL  $name exited with $rc"; f=$((f + 1))
    fi
    sc_log "=== $name: $p passed, $f failed ($(( $(sc_ms) - t0 )) ms)"
    total_pass=$((total_pass + p)); total_fail=$((total_fail + f))
done

sc_log "total time $(( $(sc_ms) - t_all )) ms"
echo "$total_pass passed, $total_fail failed"
[ "$total_fail" -eq 0 ]
