#!/bin/bash
# Builds session-cleanup, installs it, and runs it: as a systemd service where systemd is PID 1,
# in the foreground otherwise (a container, a build machine). Run as root from the source tree.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "install.sh: run as root (it installs packages and a system service)" >&2; exit 1; }
command -v swift >/dev/null || { echo "install.sh: needs a Swift 6 toolchain on PATH (swift.org/install)" >&2; exit 1; }

# Build dependencies; at run time the binary needs only libc, libstdc++, libsystemd0 and libcurl4.
need=()
[ -e /usr/include/systemd/sd-daemon.h ] || need+=(libsystemd-dev)
[ -e /usr/include/x86_64-linux-gnu/curl/curl.h ] || [ -e /usr/include/curl/curl.h ] || need+=(libcurl4-openssl-dev)
dpkg -s ca-certificates >/dev/null 2>&1 || need+=(ca-certificates)
if [ ${#need[@]} -gt 0 ]; then
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${need[@]}"
fi

# --static-swift-stdlib: a system service must not depend on where the toolchain lives.
swift build -c release --static-swift-stdlib --product session-cleanup
install -D -m 0755 .build/release/session-cleanup /usr/bin/session-cleanup
install -D -m 0644 systemd/session-cleanup.service /etc/systemd/system/session-cleanup.service
install -D -m 0644 systemd/session-cleanup.socket /etc/systemd/system/session-cleanup.socket
# The service's user and group (the socket's group: its members may register sessions).
install -D -m 0644 systemd/session-cleanup.sysusers /usr/lib/sysusers.d/session-cleanup.conf
systemd-sysusers /usr/lib/sysusers.d/session-cleanup.conf
install -D -m 0644 README.md /usr/local/share/doc/session-cleanup/README.md
install -d -m 0755 /etc/session-cleanup /etc/session-cleanup/session-cleanup.conf.d
# Never overwrite an operator's configuration.
[ -e /etc/session-cleanup/session-cleanup.conf ] || install -m 0644 systemd/session-cleanup.conf /etc/session-cleanup/session-cleanup.conf
/usr/bin/session-cleanup check-config

if [ -d /run/systemd/system ]; then
    systemctl daemon-reload
    systemctl enable session-cleanup.socket session-cleanup.service
    # A running daemon is restarted onto the new binary: a restart keeps every session.
    systemctl restart session-cleanup.service
    systemctl --no-pager status session-cleanup.service || true
    echo "Installed. Register sessions with: session-cleanup register --endpoint NAME < keyfile"
else
    echo "systemd is not PID 1 here: running the daemon in the foreground (Ctrl-C ends it, ending its sessions)."
    exec /usr/bin/session-cleanup daemon
fi
