#!/bin/bash
# install.sh — installs session-cleanup on this machine as a Debian package, as root:
#
#   scripts/install.sh            # dist/'s newest package if there is one, else build it first
#   scripts/install.sh --build    # build the package from this tree first in any case
#
# Building needs the Swift toolchain (its tarball from swift.org, extracted, usr/bin on PATH):
# this installs the toolchain's own prerequisites (swift.org's list for Debian 12) and the
# project's, checks that `swift --version` runs, then runs scripts/package.sh. Installing is
# `apt-get install ./dist/session-cleanup_…deb`: apt pulls in what the package needs, and the
# package enables and starts the service where systemd is PID 1. Elsewhere (a container, a
# build machine) the package is installed and enabled for the next boot, and this says how to
# run the daemon in the foreground instead.
set -euo pipefail
cd "$(dirname "$0")/.."

[ "$(id -u)" = 0 ] || { echo "install.sh: run as root (it installs packages and a system service)" >&2; exit 1; }
build=0
case "${1:-}" in
    --build) build=1 ;;
    "") ;;
    *) echo "usage: scripts/install.sh [--build]" >&2; exit 2 ;;
esac

arch=$(dpkg --print-architecture)
deb=""
[ -d dist ] && deb=$(find dist -maxdepth 1 -name "session-cleanup_*_$arch.deb" | sort -V | tail -n1)

if [ $build = 1 ] || [ -z "$deb" ]; then
    # swift.org's prerequisites of the toolchain tarball on Debian 12, then ours (libsystemd,
    # the package tools — dpkg-buildpackage also wants build-essential —, scdoc for the man pages).
    toolchain=(binutils gcc git libcurl4-openssl-dev libedit-dev libicu-dev libncurses-dev libpython3-dev
        libsqlite3-dev libstdc++-12-dev libxml2-dev pkg-config tzdata uuid-dev)
    project=(libsystemd-dev libssl-dev ca-certificates build-essential debhelper dpkg-dev python3 scdoc)
    missing=()
    for p in "${toolchain[@]}" "${project[@]}"; do
        [ "$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null)" = "install ok installed" ] || missing+=("$p")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "== installing build prerequisites: ${missing[*]}"
        apt-get update -q
        DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
    fi
    if ! command -v swift >/dev/null; then
        echo "install.sh: no 'swift' on PATH. Download the Swift 6 toolchain for Debian 12 from" >&2
        echo "  https://www.swift.org/install/linux/debian/12/ , extract it, and put its usr/bin on PATH:" >&2
        echo "  export PATH=/opt/swift/usr/bin:\$PATH    (or build once elsewhere and copy dist/*.deb here)" >&2
        exit 1
    fi
    if ! version=$(swift --version 2>&1); then
        echo "install.sh: 'swift --version' fails — the toolchain cannot run here:" >&2
        echo "$version" | sed 's/^/  /' >&2
        exit 1
    fi
    echo "== building the package with $(head -n1 <<< "$version")"
    deb=$(scripts/package.sh | tail -n1)
fi

# Units an earlier install.sh copied to /etc (before there was a package) would hide the
# package's: move them aside.
for old in /etc/systemd/system/session-cleanup.service /etc/systemd/system/session-cleanup.socket; do
    if [ -f "$old" ] && [ ! -L "$old" ] && grep -q 'session-cleanup' "$old" \
            && grep -q -e '^ExecStart=/usr/bin/session-cleanup daemon' -e '^ListenStream=/run/session-cleanup/' "$old"; then
        mv "$old" "$old.pre-package"
        echo "== moved $old (from an earlier install.sh) aside: $old.pre-package"
    fi
done
rm -rf /usr/local/share/doc/session-cleanup

# apt-get installs nothing, silently, when this version is installed already: a rebuild of an
# unchanged version (install.sh --build) is reinstalled instead, and says so.
deb_version=$(dpkg-deb -f "$deb" Version)
installed_version=$(dpkg-query -W -f='${Version}' session-cleanup 2>/dev/null || true)
if [ "$installed_version" = "$deb_version" ]; then
    echo "== session-cleanup $deb_version is installed already: reinstalling it from $deb"
    echo "   (files replaced, the service restarted: its sessions are handed over, none is ended)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --reinstall "./$deb"
else
    echo "== installing $deb (session-cleanup $deb_version${installed_version:+, replacing $installed_version})"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "./$deb"
fi

if [ -d /run/systemd/system ]; then
    systemctl --no-pager status session-cleanup.service || true
else
    echo "systemd is not PID 1 here: the service is enabled and starts at the next boot under systemd."
    echo "To run the daemon now, in the foreground (Ctrl-C stops it and ends its sessions), with the"
    echo "store key handed over as the unit would hand it ([Store] KeyCredential=store-key):"
    echo "  install -d -m 0700 /run/session-cleanup-credentials"
    echo "  systemd-creds decrypt --name=store-key /etc/credstore.encrypted/session-cleanup.store-key \\"
    echo "      /run/session-cleanup-credentials/store-key"
    echo "  CREDENTIALS_DIRECTORY=/run/session-cleanup-credentials session-cleanup daemon"
fi
# The closing hint: with no [Endpoint] yet nothing can be registered, and check-config says how.
check=$(session-cleanup check-config 2>&1) || true
echo
if grep -q 'No \[Endpoint\] yet' <<< "$check"; then
    echo "Installed. Next, configure the endpoint(s) that end your sessions:"
    sed -n '/No \[Endpoint\] yet/,$p' <<< "$check"
else
    echo "$check"
fi
echo 'Register a session with: echo "$KEY" | session-cleanup register --endpoint NAME   (man session-cleanup)'

