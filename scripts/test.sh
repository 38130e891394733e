#!/bin/bash
# Runs every test layer: unit and integration (swift test), then system tests under a real
# systemd in a container, then the benchmark's quick smoke mode. Installs what it needs.
# Run as root: the system tests boot containers. `--no-system` runs only the first layers.
set -euo pipefail
cd "$(dirname "$0")/.."

system=1
[ "${1:-}" = "--no-system" ] && system=0
if [ "$(id -u)" != 0 ] && [ $system = 1 ]; then
    echo "test.sh: the system tests boot a container and need root (or pass --no-system)" >&2
    exit 1
fi

# nginx-light, tinyproxy: real HTTP/2, TLS and proxy peers for the engine's integration tests;
# iproute2, iptables, libnetfilter-queue-dev: the benchmark's network namespace and delayer.
# dbus-daemon, python3-dbus, python3-gi: the private bus and the fake logind of the sleep tests.
# debhelper, dpkg-dev, lintian, scdoc: the Debian package the system tests install.
packages=(libsystemd-dev libssl-dev libcurl4-openssl-dev pkg-config python3 openssl curl ca-certificates gcc
    nginx-light tinyproxy iproute2 iptables libnetfilter-queue-dev dbus-daemon python3-dbus python3-gi)
[ $system = 1 ] && packages+=(systemd-container mmdebstrap debhelper dpkg-dev lintian scdoc)
missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if [ ${#missing[@]} -gt 0 ]; then
    [ "$(id -u)" = 0 ] || { echo "test.sh: missing packages (install as root): ${missing[*]}" >&2; exit 1; }
    apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

echo "== format and lint (swift format, warnings are errors)"
swift format lint --strict -r Sources Tests Fuzz Package.swift

echo "== unit and integration tests"
# Real identity providers on loopback (django-oauth-toolkit, glewlwyd, Keystone) for the OAuth
# tests (IdentityProviderTests), set up once per run while the build runs and stopped whatever
# happens. `up` installs what is missing (root) and fails when a provider does not start: the
# tests that need them never skip here.
providers_dir=$(mktemp -d /tmp/sc-providers-XXXXXX)
python3 Tests/Providers/providers.py up --dir "$providers_dir" > "$providers_dir/up.log" 2>&1 &
providers_up=$!
stop_providers() {
    wait "$providers_up" 2>/dev/null || true
    python3 Tests/Providers/providers.py down --dir "$providers_dir" || true
    rm -rf "$providers_dir"
}
trap stop_providers EXIT
# The layering is enforced: a target may import only the targets it depends on.
swift build --build-tests -Xswiftc -warnings-as-errors --explicit-target-dependency-import-check error
wait "$providers_up" || { cat "$providers_dir/up.log" >&2; echo "test.sh: the identity providers did not start" >&2; exit 1; }
export SESSION_CLEANUP_PROVIDERS=$providers_dir/providers.json
swift test --skip-build

echo "== unit and integration tests again under AddressSanitizer (the daemon they start included)"
scripts/sanitize.sh address

echo "== fuzz targets (libFuzzer + AddressSanitizer, a minute in all; a crash or broken invariant fails)"
scripts/fuzz.sh --total 60

if [ $system = 1 ]; then
    echo "== release build, Debian package (from the same build), lintian"
    binary=$(scripts/build-release.sh)
    mkdir -p dist
    deb=$(scripts/package.sh 2> dist/package-build.log | tail -n1) \
        || { tail -30 dist/package-build.log >&2; exit 1; }
    lintian --fail-on error,warning "${deb%.deb}.changes"
    # The same tree packaged with a higher version: the system tests' upgrade.
    upgrade=$(scripts/package.sh --version "$(dpkg-deb -f "$deb" Version)+upgradetest1" 2>> dist/package-build.log \
        | tail -n1) || { tail -30 dist/package-build.log >&2; exit 1; }
    echo "== system tests (real systemd in a container; the cases run against the installed package)"
    SC_DEB=$deb SC_DEB_UPGRADE=$upgrade bash Tests/SystemTests/run.sh
fi

echo "== benchmark smoke test (functional checks only: server counts, crashes, exit statuses)"
scripts/bench.sh --quick --json bench-results/quick.json
