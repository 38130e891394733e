#!/bin/bash
# journal.sh — reading a case's container journal as JSON, for the daemon cases. Source it after
# harness.sh, with CT set to the container's name. Entries carrying SESSION_CLEANUP_EVENT= come
# from the daemon only; selecting on them (not on -u, i.e. _SYSTEMD_UNIT=) also keeps the final
# entries, which a process that exits at once may send without its unit.
#
#   jr ARGS...                    journalctl on the container's journal (read from outside)
#   cursor                        the cursor of the newest entry
#   since CURSOR                  every entry after CURSOR, one JSON object per line
#   jsel JSON FIELD=VALUE...      the entries (lines) with every FIELD=VALUE
#   jcount JSON FIELD=VALUE...    how many
#   wait_event CURSOR EVENT [FIELD=VALUE...]   until such an entry is in the journal (10 s)
#   first_with JSON FIELD=VALUE...             line number of the first such entry (999999: none)
#   ended_ids JSON FIELD=VALUE... the sessions in the calls-ended entries with every FIELD=VALUE
#                                 (ended calls are grouped, one SESSION_ID= each), sorted, space-separated
#   jfield FIELD                  (stdin: JSON lines) every value of FIELD, one per line
#   sorted "WORDS"                one word per line, sorted
jr() { sc_journal "$CT" "$@"; }
cursor() { jr -n 1 -o json | grep -o '"__CURSOR":"[^"]*"' | cut -d'"' -f4; }
since() { jr --after-cursor="$1" -o json; }
jsel() {
    local out=$1 fv; shift
    for fv in "$@"; do out=$(grep -F -- "\"${fv%%=*}\":\"${fv#*=}\"" <<< "$out"); done
    printf '%s' "$out"
}
jcount() { local s; s=$(jsel "$@"); if [ -z "$s" ]; then echo 0; else wc -l <<< "$s" | tr -d ' '; fi; }
has_event() { local c=$1 e=$2; shift 2; [ "$(jcount "$(since "$c")" SESSION_CLEANUP_EVENT="$e" "$@")" -gt 0 ]; }
wait_event() { sc_wait_for 10 has_event "$@"; }
first_with() {
    local out; out=$(grep -n . <<< "$1"); local fv
    shift; for fv in "$@"; do out=$(grep -F -- "\"${fv%%=*}\":\"${fv#*=}\"" <<< "$out"); done
    local n; n=$(head -n1 <<< "$out" | cut -d: -f1); echo "${n:-999999}"
}
sorted() { tr ' ' '\n' <<< "$1" | sed '/^$/d' | sort; }
ended_ids() {
    local out; out=$(jsel "$1" SESSION_CLEANUP_EVENT=calls-ended); shift
    [ $# -gt 0 ] && out=$(jsel "$out" "$@")
    jfield SESSION_ID <<< "$out" | sort | tr '\n' ' '
}
jfield() { python3 -c '
import json, sys
for line in sys.stdin:
    if line.strip():
        v = json.loads(line).get(sys.argv[1])
        if v is not None:
            print(v if isinstance(v, str) else "\n".join(v))' "$1"; }
