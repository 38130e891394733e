#!/bin/bash
# fresh-debian-check.sh — runs the README's install command the way a new operator would: on a
# fresh, minimal Debian 12 (mmdebstrap --variant=minbase bookworm) that has nothing but the Swift
# toolchain tarball extracted at /opt/swift, in a chroot — so also without systemd as PID 1 —
# with a clean copy of this tree (git archive HEAD). Prints what `swift --version` says before
# (the toolchain's own prerequisites are missing), what install.sh installed, how long it took,
# and checks the installed package (--version, check-config, a foreground daemon run).
#
#   sudo scripts/fresh-debian-check.sh [TOOLCHAIN_DIR]      # default /opt/swift (its usr/bin)
#
# Needs root, mmdebstrap, the Debian mirror (apt inside the chroot) and about 10 minutes on 2
# CPUs (a full release build). Not part of scripts/test.sh. Leaves nothing behind (SC_KEEP=1 keeps
# the chroot and its logs).
set -euo pipefail
cd "$(dirname "$0")/.."
toolchain=${1:-/opt/swift}
[ "$(id -u)" = 0 ] || { echo "fresh-debian-check.sh: run as root" >&2; exit 1; }
[ -x "$toolchain/usr/bin/swift" ] || { echo "fresh-debian-check.sh: no $toolchain/usr/bin/swift" >&2; exit 1; }
command -v mmdebstrap >/dev/null || { echo "fresh-debian-check.sh: needs mmdebstrap" >&2; exit 1; }
mirror=$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}

work=$(mktemp -d /var/tmp/sc-fresh-XXXXXX)
root=$work/root
cleanup() {
    for m in "$root/opt/swift" "$root/dev/pts" "$root/dev" "$root/proc" "$root/sys"; do
        mountpoint -q "$m" 2>/dev/null && umount -l "$m"
    done
    if [ -n "${SC_KEEP:-}" ]; then echo "kept: $work"; else rm -rf "$work"; fi
}
trap cleanup EXIT

t0=$(date +%s)
echo "== mmdebstrap --variant=minbase bookworm ($mirror)"
mmdebstrap --variant=minbase --include=ca-certificates bookworm "$root" "$mirror" > "$work/mmdebstrap.log" 2>&1 \
    || { tail -20 "$work/mmdebstrap.log"; exit 1; }
mkdir -p "$root/opt/swift" "$root/src"
mount --bind "$toolchain" "$root/opt/swift" && mount -o remount,bind,ro "$root/opt/swift"
mount -t proc proc "$root/proc"; mount -t sysfs sys "$root/sys"
mount --bind /dev "$root/dev"; mount --bind /dev/pts "$root/dev/pts"
cp /etc/resolv.conf "$root/etc/resolv.conf"
git archive HEAD | tar -x -C "$root/src"
inside() { chroot "$root" env -i HOME=/root PATH=/opt/swift/usr/bin:/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 "$@"; }
dpkg_list() { inside dpkg-query -W -f='${Package}\n' | sort; }

echo "== before: swift --version"
inside swift --version 2>&1 | sed 's/^/   /' || true
dpkg_list > "$work/before"
echo "== scripts/install.sh (as root, in the chroot: systemd is not PID 1)"
t1=$(date +%s)
if ! inside bash -c 'cd /src && scripts/install.sh' > "$work/install.log" 2>&1; then
    tail -40 "$work/install.log"; echo "FAIL: install.sh"; exit 1
fi
t2=$(date +%s)
tail -n 25 "$work/install.log" | sed 's/^/   /'
dpkg_list > "$work/after"
added=$(comm -13 "$work/before" "$work/after" | tr '\n' ' ')
echo "== install.sh took $((t2 - t1)) s; it added $(wc -w <<< "$added") packages:"
fold -s -w 100 <<< "$added" | sed 's/^/   /'
echo "== checks"
fails=0
check() { local what=$1; shift; if "$@" >/dev/null 2>&1; then echo "PASS  $what"; else echo "FAIL  $what"; fails=$((fails + 1)); fi; }
check "swift --version runs now" inside swift --version
check "the package is installed" inside dpkg-query -W -f='${Status}' session-cleanup
check "session-cleanup --version" inside session-cleanup --version
check "the closing hint says how to configure an [Endpoint]" grep -q 'No \[Endpoint\] yet' "$work/install.log"
check "it says systemd is not PID 1, and how to run the daemon" grep -q 'systemd is not PID 1' "$work/install.log"
check "the service is enabled for the next boot" inside test -L /etc/systemd/system/multi-user.target.wants/session-cleanup.service
check "the package made the store key (/etc/credstore.encrypted/session-cleanup.store-key)" \
    inside test -s /etc/credstore.encrypted/session-cleanup.store-key
check "without the key the foreground daemon refuses to start: exit 78" \
    inside bash -c 'session-cleanup daemon; test $? = 78'
check "with the key as install.sh says, the daemon runs in the foreground and stops cleanly on SIGINT" \
    inside bash -c 'install -d -m 0700 /run/session-cleanup-credentials &&
        systemd-creds decrypt --name=store-key /etc/credstore.encrypted/session-cleanup.store-key \
            /run/session-cleanup-credentials/store-key &&
        CREDENTIALS_DIRECTORY=/run/session-cleanup-credentials timeout --preserve-status -s INT 3 session-cleanup daemon'
check "re-running install.sh installs dist/'s package again, without building" \
    inside bash -c 'cd /src && out=$(scripts/install.sh 2>&1) && grep -q "reinstalling it from dist/" <<< "$out" &&
        ! grep -q "== building the package" <<< "$out"'
echo "== total $(( $(date +%s) - t0 )) s; $fails failed"
[ "$fails" -eq 0 ]
