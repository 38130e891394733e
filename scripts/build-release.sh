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
flags=(-c release --static-swift-stdlib -Xswiftc -warnings-as-errors
    -Xcc -D_FORTIFY_SOURCE=2 -Xlinker -z -Xlinker now
    --scratch-path "${SC_SCRATCH:-.build}")
swift build "${flags[@]}" --product session-cleanup >&2
echo "$(swift build "${flags[@]}" --show-bin-path)/session-cleanup"
