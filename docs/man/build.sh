#!/bin/bash
# build.sh OUTDIR — the man pages as roff, from their sources here: session-cleanup(8) and
# session-cleanup.conf(5) are scdoc(5); session-cleanup-protocol(7) is made from
# docs/control-protocol.md (md2scdoc.py), so the protocol has one text. Needs scdoc and python3.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR}
mkdir -p "$out"
scdoc < "$here/session-cleanup.8.scd" > "$out/session-cleanup.8"
scdoc < "$here/session-cleanup.conf.5.scd" > "$out/session-cleanup.conf.5"
python3 "$here/md2scdoc.py" session-cleanup-protocol 7 "the control protocol of session-cleanup" \
    < "$here/../control-protocol.md" | scdoc > "$out/session-cleanup-protocol.7"
