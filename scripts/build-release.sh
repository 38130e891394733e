#!/bin/bash
# build-release.sh — the one release build of the daemon, shared by the system tests
# (scripts/test.sh), the Debian package (debian/rules) and scripts/install.sh: same flags, same
# scratch directory (.build, or $SC_SCRATCH), so whoever builds second compiles nothing.
# Prints the binary's path on stdout; the build's own output goes to stderr.
# --static-swift-stdlib: the binary runs where no Swift toolchain is installed. The C shims get
# Debian's hardening (fortified libc calls), the link full RELRO (-z now), as dpkg-buildflags
# would give a C program.
set -euo pipefail
cd "$(dirname "$0")/.."
scratch=${SC_SCRATCH:-.build}
version=()
# A package built with another version (scripts/package.sh --version V sets SC_PACKAGE_VERSION)
# gets a binary that says V too (CVersion), built in a scratch directory of its own so that the
# shared build stays as it is.
if [ -n "${SC_PACKAGE_VERSION:-}" ]; then
    [[ $SC_PACKAGE_VERSION =~ ^[A-Za-z0-9.+~:-]+$ ]] || { echo "build-release.sh: bad version '$SC_PACKAGE_VERSION'" >&2; exit 2; }
    version=(-Xcc "-DSC_VERSION_OVERRIDE=\"$SC_PACKAGE_VERSION\"")
    scratch=$scratch-package-version
fi
flags=(-c release --static-swift-stdlib -Xswiftc -warnings-as-errors
    -Xcc -D_FORTIFY_SOURCE=2 -Xlinker -z -Xlinker now "${version[@]}"
    --scratch-path "$scratch")
swift build "${flags[@]}" --product session-cleanup >&2
echo "$(swift build "${flags[@]}" --show-bin-path)/session-cleanup"
