#!/bin/bash
# Runs the unit and integration tests under a sanitizer; the daemon and CLI they start are
# built with it too, so their errors count.
#
#   scripts/sanitize.sh address [--filter X]     AddressSanitizer (leak detection off: see below)
#   scripts/sanitize.sh thread  [--filter X]     ThreadSanitizer
#
# Builds into .build/sanitize-KIND (apart from the ordinary build). Every report any process
# writes goes to .build/sanitize-KIND/reports/; the run fails if the tests fail or if any
# report was written — a child process's report counts even when the test that started it
# tolerated its exit status. Prints the time taken and the reports.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH

kind=${1:-}
case "$kind" in
address | thread) shift ;;
*) echo "usage: scripts/sanitize.sh address|thread [swift test options…]" >&2; exit 2 ;;
esac
scratch=.build/sanitize-$kind
reports=$scratch/reports
rm -rf "$reports"
mkdir -p "$reports"
start=$(date +%s)

# -sanitize on every Swift module and clang's on the C shims (SwiftPM's --sanitize does both).
# `grep || true` inside the braces: the pipeline fails exactly when the build does (pipefail); a
# `|| true` after it would hide a failed build, and the tests would run the old one.
if ! swift build --build-tests --scratch-path "$scratch" --sanitize "$kind" -Xswiftc -warnings-as-errors 2>&1 |
    { grep -v "ld.gold: warning: Cannot export local symbol" || true; }; then
    echo "sanitize.sh: the $kind build failed" >&2
    exit 1
fi
built=$(date +%s)

# Swift's backtracer would race the sanitizer's own report of a crash.
export SWIFT_BACKTRACE=enable=no
# Leak detection is off: the Swift runtime's metadata caches and Foundation's singletons are
# reported as leaks at every exit, which would drown a real one.
export ASAN_OPTIONS="detect_leaks=0:abort_on_error=1:log_path=$PWD/$reports/asan"
export TSAN_OPTIONS="halt_on_error=0:log_path=$PWD/$reports/tsan"
status=0
swift test --skip-build --scratch-path "$scratch" --sanitize "$kind" "$@" || status=$?
finished=$(date +%s)

count=$(find "$reports" -type f | wc -l)
echo "== sanitize.sh $kind: build $((built - start)) s, tests $((finished - built)) s, swift test exit $status, $count report file(s)"
if [ "$count" -gt 0 ]; then
    for report in "$reports"/*; do
        echo "---- $report"
        head -60 "$report"
    done
    status=1
fi
exit $status
