#!/bin/bash
# package.sh [--version VERSION] — builds the Debian package from this tree:
#   dist/session-cleanup_<version>_<arch>.deb   (and its -dbgsym, .buildinfo, .changes)
# with dpkg-buildpackage -b (debian/, debhelper compat 13). The Swift toolchain comes from PATH;
# the release build is scripts/build-release.sh's, shared with the system tests. Installs the
# build dependencies when run as root. --version gives the package another version than
# debian/changelog's (the upgrade test builds a "newer" package this way).
# Prints the .deb's path on the last line.
set -euo pipefail
cd "$(dirname "$0")/.."

version=""
case "${1:-}" in
    --version) version=${2:?--version needs a value} ;;
    "") ;;
    *) echo "usage: scripts/package.sh [--version VERSION]" >&2; exit 2 ;;
esac

command -v swift >/dev/null || { echo "package.sh: no swift on PATH (a Swift 6 toolchain is needed to build)" >&2; exit 1; }
# Build dependencies (debian/control): installed when run as root, else named.
if ! command -v dpkg-checkbuilddeps >/dev/null; then
    missing="dpkg-dev debhelper"
elif ! unmet=$(dpkg-checkbuilddeps 2>&1); then
    # "dpkg-checkbuilddeps: error: Unmet build dependencies: a b (>= 1)" → a b
    missing=$(sed -n 's/.*Unmet build dependencies: //p' <<< "$unmet" | sed 's/([^)]*)//g; s/dh-sequence-[a-z]*//g; s/debhelper-compat/debhelper/g')
    [ -n "$missing" ] || { echo "package.sh: dpkg-checkbuilddeps failed: $unmet" >&2; exit 1; }
fi
if [ -n "${missing:-}" ]; then
    if [ "$(id -u)" != 0 ]; then
        echo "package.sh: missing build dependencies (install as root): $missing" >&2
        exit 1
    fi
    echo "package.sh: installing build dependencies: $missing" >&2
    apt-get update -q >&2
    # shellcheck disable=SC2086 # a list of package names
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends $missing >&2
fi

# One version: the changelog's must be the program's (Sources/Vocabulary/SessionCleanupVersion.swift).
changelog_version=$(dpkg-parsechangelog -S Version)
program_version=$(sed -n 's/.*static let source = "\(.*\)".*/\1/p' Sources/Vocabulary/SessionCleanupVersion.swift)
if [ "$changelog_version" != "$program_version" ]; then
    echo "package.sh: debian/changelog says $changelog_version, Version.swift says $program_version" >&2
    exit 1
fi

arch=$(dpkg-architecture -qDEB_HOST_ARCH)
mkdir -p dist
stem=dist/session-cleanup_${version:-$changelog_version}_$arch
SC_PACKAGE_VERSION=$version dpkg-buildpackage -b --no-sign \
    --buildinfo-file="$stem.buildinfo" --changes-file="$stem.changes" \
    --buildinfo-option=-udist --changes-option=-udist >&2
echo "dist/session-cleanup_${version:-$changelog_version}_$arch.deb"
