#!/bin/bash
# Fuzzes the project's parsers with libFuzzer + AddressSanitizer.
#
#   scripts/fuzz.sh [SECONDS] [TARGET…]     SECONDS per target (default 60); all targets by default
#   scripts/fuzz.sh --total SECONDS         SECONDS shared out among all targets (test.sh: 60)
#   scripts/fuzz.sh --list                  the targets
#   scripts/fuzz.sh --merge [TARGET…]       minimise the committed seeds with what earlier runs found
#
# Each target is Fuzz/Targets/NAME (an executable fuzz-NAME, listed in Package.swift), with seeds in
# Fuzz/Corpus/NAME and a dictionary in Fuzz/Dictionaries/NAME.dict. Inputs a run discovers are
# kept in .build/fuzz/corpus/NAME (the committed seeds are never modified, except by --merge);
# a crash or a broken invariant fails the script and leaves the input in
# .build/fuzz/artifacts/, with the command that replays it. Prints, per target, the executions,
# the coverage (libFuzzer's "cov": instrumented edges reached; "ft": features) and the corpus size.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH=/opt/swift/usr/bin:$PATH

targets_all() { ls Fuzz/Targets; }

seconds=60
merge=0
case "${1:-}" in
--list) targets_all; exit 0 ;;
--merge) merge=1; shift ;;
--total)
    count=$(targets_all | wc -l)
    seconds=$(( ${2:?--total needs SECONDS} / count ))
    [ "$seconds" -ge 5 ] || seconds=5
    shift 2
    ;;
'' | *[!0-9]*) ;;
*) seconds=$1; shift ;;
esac
targets=("$@")
[ ${#targets[@]} -gt 0 ] || mapfile -t targets < <(targets_all)
for target in "${targets[@]}"; do
    [ -d "Fuzz/Targets/$target" ] || { echo "fuzz.sh: no target '$target' (scripts/fuzz.sh --list)" >&2; exit 2; }
done

scratch=.build/fuzz
# SwiftPM's --sanitize fuzzer instruments only the executable's own module; -sanitize=fuzzer on
# every Swift module gives libFuzzer the library's coverage too. One instrumented build of the
# library, shared by the targets. Release: about 6 times the executions per second of a debug
# build (bounds and overflow checks stay on), for a minute more of compiling.
build=(-c release --scratch-path "$scratch" --sanitize fuzzer --sanitize address -Xswiftc -sanitize=fuzzer,address
    -Xswiftc -DFUZZING -Xswiftc -warnings-as-errors)
for target in "${targets[@]}"; do
    # `grep || true` inside the braces: the pipeline then fails exactly when the build does
    # (pipefail). A `|| true` after the pipeline would hide that, and the old binary would run.
    if ! swift build -q "${build[@]}" --product "fuzz-$target" 2>&1 |
        { grep -v "ld.gold: warning: Cannot export local symbol" || true; }; then
        echo "fuzz.sh: building fuzz-$target failed" >&2
        exit 1
    fi
done
bin=$(swift build "${build[@]}" --show-bin-path)

# Leaks at exit are the process's own business here; a leak per input would still grow RSS.
# Swift's own backtracer would race ASan's report of a crash: ASan reports it.
export ASAN_OPTIONS=detect_leaks=0:abort_on_error=1:symbolize=1 SWIFT_BACKTRACE=enable=no

# Targets that write files (store-load) write them below TMPDIR: a directory of this run's own,
# in memory when /dev/shm is there (fsync is then cheap), removed at the end.
TMPDIR=$(mktemp -d /dev/shm/sc-fuzz.XXXXXX 2>/dev/null || mktemp -d)
export TMPDIR
trap 'rm -rf "$TMPDIR"' EXIT

status=0
printf '%-18s %10s %8s %8s %7s  %s\n' target executions cov ft corpus result
for target in "${targets[@]}"; do
    seeds=Fuzz/Corpus/$target
    dict=Fuzz/Dictionaries/$target.dict
    work=$scratch/corpus/$target
    artifacts=$scratch/artifacts
    log=$scratch/logs/$target.log
    mkdir -p "$work" "$artifacts" "$(dirname "$log")"
    options=(-dict="$dict" -timeout=10 -rss_limit_mb=2048 -max_len=16384 -print_final_stats=1
        -artifact_prefix="$artifacts/$target-")
    if [ $merge = 1 ]; then
        fresh=$(mktemp -d "$scratch/merge.XXXXXX")
        "$bin/fuzz-$target" "${options[@]}" -merge=1 "$fresh" "$seeds" "$work" >"$log" 2>&1
        rm -f "$seeds"/*
        cp "$fresh"/* "$seeds"/
        rm -rf "$fresh"
        echo "$target: $(ls "$seeds" | wc -l) seeds in $seeds"
        continue
    fi
    result=ok
    if ! "$bin/fuzz-$target" "${options[@]}" -max_total_time="$seconds" "$work" "$seeds" >"$log" 2>&1; then
        result=FAILED
        status=1
    fi
    # "#1234 DONE cov: 567 ft: 890 corp: 12/3Kb …" (or the last status line before a crash)
    line=$(grep -E '^#[0-9]+' "$log" | tail -1 || true)
    execs=$(sed -nE 's/^stat::number_of_executed_units: *([0-9]+).*/\1/p' "$log" | tail -1)
    [ -n "$execs" ] || execs=$(sed -nE 's/^#([0-9]+).*/\1/p' <<<"$line")
    cov=$(sed -nE 's/.* cov: ([0-9]+).*/\1/p' <<<"$line")
    ft=$(sed -nE 's/.* ft: ([0-9]+).*/\1/p' <<<"$line")
    corpus=$(sed -nE 's/.* corp: ([0-9]+).*/\1/p' <<<"$line")
    printf '%-18s %10s %8s %8s %7s  %s\n' "$target" "${execs:-?}" "${cov:-?}" "${ft:-?}" "${corpus:-?}" "$result"
    if [ $result = FAILED ]; then
        echo "---- $log (last 40 lines)"
        tail -40 "$log"
        artifact=$(sed -nE "s/.*Test unit written to (.*)$/\1/p" "$log" | tail -1)
        [ -z "$artifact" ] || echo "---- replay: $bin/fuzz-$target $artifact"
    fi
done
exit $status
