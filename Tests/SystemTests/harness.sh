#!/bin/bash
# harness.sh — system-test harness for session-cleanup: boots a real systemd (PID 1) with a real
# journald in a systemd-nspawn container, on hosts whose own PID 1 is not systemd (CI: fresh
# Debian 12, root, no KVM).  The container gets --private-network: only its own loopback.
#
# Use it as a library (test cases):      source Tests/SystemTests/harness.sh
# or as a command (debugging by hand):   Tests/SystemTests/harness.sh boot NAME
#
#   sc_setup                     host packages (if missing) + bookworm rootfs, built once
#   sc_boot NAME [nspawn-args]   fresh overlay, boot, wait for running/degraded
#   sc_exec NAME CMD...          run CMD inside (nsenter, clean environment, stdin passes)
#   sc_prop NAME UNIT PROP       systemctl show -p PROP --value UNIT (inside)
#   sc_unit_file NAME UNIT       the unit's file inside (a staged /etc copy, or the package's)
#   sc_deb_layer DEB             the package installed on the base rootfs, as a layer (cached)
#   sc_journal NAME ARGS...      journalctl on the run's persistent journal, read from outside
#   sc_poweroff NAME [TIMEOUT_S] full systemd shutdown inside, wait for nspawn to exit
#   sc_kill NAME                 SIGKILL only what this harness started (its own cgroup)
#   sc_cleanup NAME              kill if needed, remove the run directory
#   check "description" CMD...   test helper: counts passes/fails
#   sc_summary                   prints "N passed, N failed"; non-zero if any failed
#
# Files put into a run before boot (env vars, each optional):
#   SC_BINARY    -> /usr/bin/session-cleanup (0755)
#   SC_UNIT      -> /etc/systemd/system/session-cleanup.service
#   SC_SOCKET_UNIT -> /etc/systemd/system/session-cleanup.socket
#   SC_SYSUSERS  -> /usr/lib/sysusers.d/session-cleanup.conf, applied to the rootfs before boot
#                   (systemd-sysusers --root): the user and group exist when the socket unit starts
#   SC_CONF      -> /etc/session-cleanup/session-cleanup.conf
#   SC_EXTRA_DIR -> contents copied to /opt/sc-test
#   SC_ENABLE    -> unit names to enable at boot (multi-user.target.wants; .socket: sockets.target.wants)
#   SC_DEB_LAYER -> a layer from sc_deb_layer (the package installed with dpkg -i) under the run;
#                   SC_BINARY/SC_UNIT/SC_SOCKET_UNIT/SC_SYSUSERS that point into it are not staged:
#                   the run sees what the package put there (/usr/bin, /lib/systemd/system, …)
# Everything a run leaves (journal, files the daemon wrote) stays in
#   ${SC_SANDBOX_ROOT:-/var/tmp/session-cleanup-sandbox}/runs/NAME/upper until sc_cleanup.
#
# When sourced, an EXIT trap kills every container this shell booted that is still running (the
# overlay mount lives in a private mount namespace and dies with it), so a failing or aborted
# script never leaves containers or mounts behind.  A case that sets its own EXIT trap must call
# _sc_on_exit from it.

SC_HARNESS=$(readlink -f "${BASH_SOURCE[0]}")
SC_SANDBOX_ROOT=${SC_SANDBOX_ROOT:-/var/tmp/session-cleanup-sandbox}
SC_BASE=$SC_SANDBOX_ROOT/base
SC_SUITE=${SC_SUITE:-bookworm}
# Mirror: the host's own apt source (not the security one); Debian's default otherwise.
SC_MIRROR=${SC_MIRROR:-$(awk '/^URIs:/ && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null)}
SC_MIRROR=${SC_MIRROR:-$(awk '/^deb / && $2 !~ /security/ {print $2; exit}' /etc/apt/sources.list 2>/dev/null)}
SC_MIRROR=${SC_MIRROR:-http://deb.debian.org/debian}
# libcurl4: the daemon links libcurl; python3: test HTTP servers run inside the container.
# procps: /bin/kill, which the usual ExecReload=/bin/kill -HUP $MAINPID needs (not in minbase).
# libpam-systemd: login sessions registered with logind, so a user's manager starts and stops
# with them (the user-instance case). man-db: `systemd-analyze verify` checks that a unit's
# Documentation=man:… pages exist (the package's man pages).
SC_ROOTFS_PACKAGES=${SC_ROOTFS_PACKAGES:-systemd,systemd-sysv,dbus,libsystemd0,libcurl4,python3,ca-certificates,procps,libpam-systemd,man-db,prometheus-node-exporter,acl}
SC_HOST_PACKAGES=(systemd-container mmdebstrap libsystemd-dev libcurl4-openssl-dev)
SC_BOOT_TIMEOUT_S=${SC_BOOT_TIMEOUT_S:-60}
SC_CG_PARENT=${SC_CG_PARENT:-session-cleanup-tests}   # our sub-cgroup in the host's cgroup trees (one per concurrent runner)
SC_IN_PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin

# nspawn must sit in a cgroup of its own (never the host's root cgroup).  Hybrid hosts (v1
# name=systemd + v2 "unified", the CI machines) need it in both trees; pure v2 is handled too.
if [ "$(stat -fc %T /sys/fs/cgroup 2>/dev/null)" = cgroup2fs ]; then
    SC_CG_ROOTS=(/sys/fs/cgroup); SC_CG_MAIN=/sys/fs/cgroup
else
    SC_CG_ROOTS=()
    for _d in /sys/fs/cgroup/systemd /sys/fs/cgroup/unified; do [ -d "$_d" ] && SC_CG_ROOTS+=("$_d"); done
    SC_CG_MAIN=/sys/fs/cgroup/unified; [ -d "$SC_CG_MAIN" ] || SC_CG_MAIN=/sys/fs/cgroup/systemd
    unset _d
fi

SC_PASSES=${SC_PASSES:-0}
SC_FAILS=${SC_FAILS:-0}
SC_BOOTED=()                             # containers booted by this shell (for the EXIT trap)

sc_log() { printf '[%s] %s\n' "$(date +%T.%3N)" "$*" >&2; }
sc_err() { sc_log "ERROR: $*"; return 1; }
sc_ms()  { date +%s%3N; }
sc_run_dir() { echo "$SC_SANDBOX_ROOT/runs/$1"; }

# A process counts as alive unless gone or a zombie: after `harness.sh boot` returns, the wrapper
# is re-parented to the host's PID 1, which may take long to reap it, so `kill -0` alone lies.
_sc_alive() { [ -n "${1:-}" ] && [ -e "/proc/$1" ] && ! grep -q '^State:[[:space:]]*Z' "/proc/$1/status" 2>/dev/null; }
# Finished = the wrapper wrote its exit-code marker, or is gone.
sc_finished() {
    local run; run=$(sc_run_dir "$1")
    [ -e "$run/nspawn.rc" ] || ! _sc_alive "$(cat "$run/wrapper.pid" 2>/dev/null)"
}
sc_running() { [ -s "$(sc_run_dir "$1")/wrapper.pid" ] && ! sc_finished "$1"; }

# ------------------------------------------------------------------------------------------ setup
_sc_installed() { [ "$(dpkg-query -W -f='${Status}' "$1" 2>/dev/null)" = "install ok installed" ]; }

sc_setup() {
    local need=() p
    for p in "${SC_HOST_PACKAGES[@]}"; do _sc_installed "$p" || need+=("$p"); done
    if [ ${#need[@]} -gt 0 ]; then
        sc_log "apt-get install ${need[*]}"
        # --no-install-recommends: a recommended package (libnss-*) would edit /etc/nsswitch.conf.
        if ! { apt-get update -q >/dev/null && DEBIAN_FRONTEND=noninteractive \
                apt-get install -y -q --no-install-recommends "${need[@]}" >/dev/null; }; then
            sc_err "apt-get install ${need[*]} failed"; return 1
        fi
    fi
    mkdir -p "$SC_SANDBOX_ROOT"
    # One builder at a time (two runners may start together); the marker records what was built,
    # so changing the package list rebuilds instead of silently reusing an old rootfs.
    local want="suite=$SC_SUITE packages=$SC_ROOTFS_PACKAGES"
    (
        flock 9
        if [ "$(cat "$SC_BASE/.sc-ready" 2>/dev/null)" = "$want" ]; then
            sc_log "base rootfs ready: $SC_BASE"; exit 0
        fi
        t0=$(sc_ms); tmp=$SC_BASE.tmp
        rm -rf "$tmp"
        sc_log "mmdebstrap $SC_SUITE ($SC_MIRROR) -> $SC_BASE"
        mmdebstrap --variant=minbase --include="$SC_ROOTFS_PACKAGES" "$SC_SUITE" "$tmp" "$SC_MIRROR" \
            > "$SC_SANDBOX_ROOT/rootfs-build.log" 2>&1 \
            || { tail -20 "$SC_SANDBOX_ROOT/rootfs-build.log" >&2; sc_err "mmdebstrap failed"; exit 1; }
        echo session-cleanup-test > "$tmp/etc/hostname"
        # Persistent journal: it lands in the run's upper dir and can be read after poweroff.
        mkdir -p "$tmp/etc/systemd/journald.conf.d" "$tmp/var/log/journal"
        printf '[Journal]\nStorage=persistent\n' > "$tmp/etc/systemd/journald.conf.d/10-persistent.conf"
        # Only systemd + the units under test should run: mask timers/gettys that only add noise.
        for u in apt-daily.timer apt-daily-upgrade.timer dpkg-db-backup.timer e2scrub_all.timer \
                 fstrim.timer e2scrub_reap.service console-getty.service getty@tty1.service \
                 systemd-pstore.service; do
            ln -sf /dev/null "$tmp/etc/systemd/system/$u"
        done
        rm -f "$tmp"/etc/systemd/system/timers.target.wants/* "$tmp"/etc/systemd/system/getty.target.wants/*
        # node_exporter (for the metrics case) runs only when a case starts it.
        rm -f "$tmp"/etc/systemd/system/multi-user.target.wants/prometheus-node-exporter.service
        # Fixed machine-id (mmdebstrap leaves it empty): the journal is always in
        # /var/log/journal/<id>/ and systemd never runs first-boot logic.
        [ -s "$tmp/etc/machine-id" ] || systemd-machine-id-setup --root="$tmp" >/dev/null 2>&1
        rm -rf "$SC_BASE" && mv "$tmp" "$SC_BASE"       # atomic: no half-built base is ever used
        echo "$want" > "$SC_BASE/.sc-ready"
        sc_log "base rootfs built in $(( $(sc_ms) - t0 )) ms, $(du -sh "$SC_BASE" | cut -f1)"
    ) 9> "$SC_SANDBOX_ROOT/.setup.lock"
}

# --------------------------------------------------------------------------------- package layer
# sc_deb_layer DEB : a layer holding DEB installed with dpkg -i on the base rootfs (built once per
# .deb content, shared by every boot). Prints the layer's directory. Its units are not enabled
# (no .wants links), so each case starts what it tests when it wants; the package case installs
# the .deb for real instead.
sc_deb_layer() {
    local deb=${1:?usage: sc_deb_layer DEB} sum layer
    [ -f "$deb" ] || { sc_err "package $deb not found"; return 1; }
    [ -e "$SC_BASE/.sc-ready" ] || { sc_err "no base rootfs: run sc_setup first"; return 1; }
    sum=$(cat "$SC_BASE/.sc-ready" "$deb" | sha256sum | cut -c1-16)
    layer=$SC_SANDBOX_ROOT/deb-$sum
    (
        flock 9
        [ -e "$layer/.sc-ready" ] && exit 0
        local t0 tmp; t0=$(sc_ms); tmp=$layer.tmp
        rm -rf "$tmp" && mkdir -p "$tmp/upper" "$tmp/work" "$tmp/merged" || exit 1
        chmod 0755 "$tmp/upper"
        cp "$deb" "$tmp/package.deb"
        unshare --mount --propagation private -- bash -c '
            set -e
            t=$1; base=$2
            mount -t overlay overlay -o "lowerdir=$base,upperdir=$t/upper,workdir=$t/work" "$t/merged"
            mount -t proc proc "$t/merged/proc"
            mount --bind /dev "$t/merged/dev"
            mkdir -p "$t/merged/tmp/sc-deb"
            mount --bind "$t" "$t/merged/tmp/sc-deb"
            chroot "$t/merged" env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin DEBIAN_FRONTEND=noninteractive \
                dpkg -i /tmp/sc-deb/package.deb
            umount "$t/merged/tmp/sc-deb"
            rmdir "$t/merged/tmp/sc-deb"
        ' sc-deb-layer "$tmp" "$SC_BASE" > "$tmp/dpkg.log" 2>&1 \
            || { cat "$tmp/dpkg.log" >&2; sc_err "dpkg -i $deb into the package layer failed"; exit 1; }
        # Not enabled at boot: a case starts the daemon itself (SC_ENABLE enables it at boot).
        rm -f "$tmp"/upper/etc/systemd/system/*.wants/session-cleanup.* "$tmp"/upper/etc/systemd/user/*.wants/session-cleanup.*
        rm -rf "$tmp/work" "$tmp/merged" "$tmp/package.deb"
        mv "$tmp/upper" "$layer.new" && mv "$tmp/dpkg.log" "$layer.new/.sc-dpkg.log" && rm -rf "$tmp" || exit 1
        rm -rf "$layer" && mv "$layer.new" "$layer" && touch "$layer/.sc-ready"
        sc_log "package layer $layer built in $(( $(sc_ms) - t0 )) ms"
    ) 9> "$SC_SANDBOX_ROOT/.deb-layer.lock" >&2 || return 1
    echo "$layer"
}

# ------------------------------------------------------------------------------------ run helpers
sc_leader_pid() {   # host PID of the container's systemd (PID 1 inside), read from our cgroup
    local cg=$SC_CG_MAIN/$SC_CG_PARENT/$1/payload f p
    for f in "$cg/init.scope/cgroup.procs" "$cg/cgroup.procs"; do
        [ -r "$f" ] || continue
        p=$(head -n1 "$f" 2>/dev/null)
        [ -n "$p" ] && { echo "$p"; return 0; }
    done
    return 1
}

sc_exec() {         # sc_exec NAME CMD... : run CMD inside the container with a clean environment
    local name=$1 L; shift
    L=$(sc_leader_pid "$name") || { sc_err "container $name is not running"; return 1; }
    nsenter -t "$L" -a -r -w env -i PATH="$SC_IN_PATH" SYSTEMD_COLORS=0 SYSTEMD_PAGER=cat \
        SYSTEMD_LOG_COLOR=0 TERM=dumb "$@"
}

sc_prop() { sc_exec "$1" systemctl show -p "$3" --value "$2"; }
sc_unit_file() { sc_prop "$1" "$2" FragmentPath; }   # sc_unit_file NAME UNIT : its file inside

sc_journal() {      # reads the persistent journal from outside: works while running and after poweroff
    local name=$1; shift
    journalctl --directory="$(sc_run_dir "$name")/upper/var/log/journal" --no-pager "$@"
}

_sc_rm_cgroups() {
    local h d
    for h in "${SC_CG_ROOTS[@]}"; do
        [ -d "$h/$SC_CG_PARENT/$1" ] || continue
        # depth-first: a cgroup directory can only be removed once its children are gone
        while IFS= read -r -d '' d; do rmdir "$d" 2>/dev/null || true; done \
            < <(find "$h/$SC_CG_PARENT/$1" -depth -type d -print0 2>/dev/null)
    done
}

# Live host PIDs in NAME's cgroups (both trees).  Exited processes leave cgroup.procs at once,
# even while they linger as zombies, so this is the "still running" view.
sc_cgroup_pids() {
    local h f
    for h in "${SC_CG_ROOTS[@]}"; do
        [ -d "$h/$SC_CG_PARENT/$1" ] || continue
        while IFS= read -r -d '' f; do cat "$f" 2>/dev/null; done \
            < <(find "$h/$SC_CG_PARENT/$1" -name cgroup.procs -print0 2>/dev/null)
    done | sort -un
}

# PIDs (any mount namespace) that still have NAME's overlay mounted: should be none after poweroff.
sc_mount_holders() {
    local f
    while IFS= read -r f; do f=${f#/proc/}; echo "${f%/mountinfo}"; done \
        < <(grep -ls " $(sc_run_dir "$1")/merged " /proc/[0-9]*/mountinfo 2>/dev/null)
}

# Copy the files under test into the run's upper dir (the overlay shows them at boot).
# From the package layer (SC_DEB_LAYER) when FILE lies in it: then it is not staged again.
_sc_from_layer() { [ -n "${SC_DEB_LAYER:-}" ] && [ "${1#"$SC_DEB_LAYER"/}" != "$1" ]; }

_sc_stage() (
    local up=$1
    umask 022   # parent dirs created here replace the lower dirs' modes (e.g. /usr) in the overlay
    if [ -n "${SC_BINARY:-}" ] && ! _sc_from_layer "$SC_BINARY"; then
        [ -f "$SC_BINARY" ] || { sc_err "SC_BINARY=$SC_BINARY not found"; exit 1; }
        install -D -m 0755 "$SC_BINARY" "$up/usr/bin/session-cleanup" || exit 1
    fi
    if [ -n "${SC_UNIT:-}" ] && ! _sc_from_layer "$SC_UNIT"; then
        [ -f "$SC_UNIT" ] || { sc_err "SC_UNIT=$SC_UNIT not found"; exit 1; }
        install -D -m 0644 "$SC_UNIT" "$up/etc/systemd/system/session-cleanup.service" || exit 1
    fi
    if [ -n "${SC_SOCKET_UNIT:-}" ] && ! _sc_from_layer "$SC_SOCKET_UNIT"; then
        [ -f "$SC_SOCKET_UNIT" ] || { sc_err "SC_SOCKET_UNIT=$SC_SOCKET_UNIT not found"; exit 1; }
        install -D -m 0644 "$SC_SOCKET_UNIT" "$up/etc/systemd/system/session-cleanup.socket" || exit 1
    fi
    if [ -n "${SC_SYSUSERS:-}" ] && ! _sc_from_layer "$SC_SYSUSERS"; then
        [ -f "$SC_SYSUSERS" ] || { sc_err "SC_SYSUSERS=$SC_SYSUSERS not found"; exit 1; }
        install -D -m 0644 "$SC_SYSUSERS" "$up/usr/lib/sysusers.d/session-cleanup.conf" || exit 1
        # The account files as the rootfs has them, then the user and group added to them.
        local f
        mkdir -p "$up/etc"
        for f in passwd group shadow gshadow; do
            [ -e "$SC_BASE/etc/$f" ] && { [ -e "$up/etc/$f" ] || cp -a "$SC_BASE/etc/$f" "$up/etc/$f"; }
        done
        systemd-sysusers --root="$up" "$up/usr/lib/sysusers.d/session-cleanup.conf" >/dev/null \
            || { sc_err "systemd-sysusers --root=$up failed"; exit 1; }
    fi
    if [ -n "${SC_CONF:-}" ]; then
        [ -f "$SC_CONF" ] || { sc_err "SC_CONF=$SC_CONF not found"; exit 1; }
        install -D -m 0644 "$SC_CONF" "$up/etc/session-cleanup/session-cleanup.conf" || exit 1
    fi
    if [ -n "${SC_EXTRA_DIR:-}" ]; then
        [ -d "$SC_EXTRA_DIR" ] || { sc_err "SC_EXTRA_DIR=$SC_EXTRA_DIR not a directory"; exit 1; }
        mkdir -p "$up/opt/sc-test" && cp -a "$SC_EXTRA_DIR"/. "$up/opt/sc-test/" || exit 1
    fi
    local u
    local u target wants
    for u in ${SC_ENABLE:-}; do
        # Staged units are in /etc; the package's in /lib.
        target=/etc/systemd/system/$u
        [ -e "$up$target" ] || target=/lib/systemd/system/$u
        wants=multi-user.target.wants
        [ "${u##*.}" = socket ] && wants=sockets.target.wants
        mkdir -p "$up/etc/systemd/system/$wants"
        ln -sf "$target" "$up/etc/systemd/system/$wants/$u"
    done
)

# Internal (`harness.sh _inner NAME ...`): runs inside the private mount namespace made by sc_boot.
_sc_inner() {
    local name=$1; shift
    local run rc=0; run=$(sc_run_dir "$name")
    # volatile: the container's fsync()s are no-ops (test data only; crash durability can't be
    # tested in here).
    mount -t overlay overlay -o "lowerdir=${SC_DEB_LAYER:+$SC_DEB_LAYER:}$SC_BASE,upperdir=$run/upper,workdir=$run/work,volatile" \
        "$run/merged" || { echo 97 > "$run/nspawn.rc"; exit 97; }
    (
        # Move only this subshell (about to become systemd-nspawn) into our cgroups: the
        # container's systemd builds its tree below session-cleanup-tests/NAME.
        for h in "${SC_CG_ROOTS[@]}"; do
            mkdir -p "$h/$SC_CG_PARENT/$name" && echo "$BASHPID" > "$h/$SC_CG_PARENT/$name/cgroup.procs"
        done
        # --register=no --keep-unit: there is no host systemd/machined to ask for a scope
        #   ("Failed to open system bus" / "Parent died too early" otherwise).
        # --link-journal=no: the journal stays in the container's /var/log/journal (upper dir).
        exec systemd-nspawn -q --boot -D "$run/merged" -M "$name" --register=no --keep-unit \
            --private-network --link-journal=no "$@"
    ) || rc=$?
    umount "$run/merged" 2>/dev/null || true    # (also implicit when this namespace dies)
    echo "$rc" > "$run/nspawn.rc.tmp" && mv "$run/nspawn.rc.tmp" "$run/nspawn.rc"   # "finished" marker
    exit "$rc"
}

# ------------------------------------------------------------------------------------------- boot
sc_boot() {
    local name=${1:?usage: sc_boot NAME [nspawn-args]}; shift
    [[ $name =~ ^[A-Za-z0-9][A-Za-z0-9-]{0,40}$ ]] || { sc_err "bad container name '$name'"; return 1; }
    [ -e "$SC_BASE/.sc-ready" ] || { sc_err "no base rootfs: run sc_setup first"; return 1; }
    local run; run=$(sc_run_dir "$name")
    sc_running "$name" && { sc_err "container $name is already running"; return 1; }
    _sc_rm_cgroups "$name"
    rm -rf "$run"
    (umask 022; mkdir -p "$run/upper" "$run/work" "$run/merged") || return 1
    chmod 0755 "$run/upper"                     # becomes the container's "/"
    _sc_stage "$run/upper" || return 1
    local t0; t0=$(sc_ms)
    # stdio to a file: nothing of the container may hold the caller's pipes open.
    unshare --mount --propagation private -- bash "$SC_HARNESS" _inner "$name" "$@" \
        < /dev/null > "$run/console.log" 2>&1 &
    echo $! > "$run/wrapper.pid"
    SC_BOOTED+=("$name")
    # Wait for the container's systemd to finish booting.
    local deadline=$(( t0 + SC_BOOT_TIMEOUT_S * 1000 )) st="" L=""
    while [ "$(sc_ms)" -lt "$deadline" ]; do
        if sc_finished "$name"; then
            tail -30 "$run/console.log" >&2; sc_err "nspawn for $name exited during boot"; return 1
        fi
        if L=$(sc_leader_pid "$name"); then
            st=$(timeout "$SC_BOOT_TIMEOUT_S" nsenter -t "$L" -a -r -w env -i PATH="$SC_IN_PATH" \
                 systemctl is-system-running --wait 2>/dev/null)
            case "$st" in running|degraded) break ;; esac
        fi
        sleep 0.05
    done
    case "$st" in
        running|degraded) ;;
        *) tail -30 "$run/console.log" >&2; sc_kill "$name"
           sc_err "boot of $name timed out (state='$st')"; return 1 ;;
    esac
    echo "$(( $(sc_ms) - t0 ))" > "$run/boot_ms"
    [ "$st" = degraded ] && sc_exec "$name" systemctl --failed --no-legend >&2
    sc_log "container $name: $st after $(cat "$run/boot_ms") ms (leader PID $L)"
}

# ------------------------------------------------------------------------------ poweroff / kill
sc_poweroff() {
    local name=${1:?usage: sc_poweroff NAME [TIMEOUT_S]} tmo=${2:-90}
    local run t0; run=$(sc_run_dir "$name"); t0=$(sc_ms)
    sc_running "$name" || { sc_log "container $name is not running"; return 0; }
    # systemd may drop the bus connection before replying ("Call to PowerOff failed: Connection
    # reset by peer"): benign; waiting for nspawn to exit is the real check.
    sc_exec "$name" systemctl poweroff --no-block 2>/dev/null || true
    while ! sc_finished "$name" && [ "$(sc_ms)" -lt $(( t0 + tmo * 1000 )) ]; do sleep 0.05; done
    if ! sc_finished "$name"; then
        sc_log "poweroff of $name timed out after ${tmo}s, killing"; sc_kill "$name"; return 1
    fi
    echo "$(( $(sc_ms) - t0 ))" > "$run/poweroff_ms"
    _sc_rm_cgroups "$name"
    sc_log "container $name powered off in $(cat "$run/poweroff_ms") ms, nspawn rc=$(cat "$run/nspawn.rc" 2>/dev/null || echo '?')"
}

sc_kill() {         # only what this harness started: everything in NAME's cgroup, and its wrapper
    local name=${1:?usage: sc_kill NAME} run cg p w
    run=$(sc_run_dir "$name"); cg=$SC_CG_MAIN/$SC_CG_PARENT/$name
    if [ -e "$cg/cgroup.kill" ]; then echo 1 > "$cg/cgroup.kill" 2>/dev/null || true; fi
    for p in $(sc_cgroup_pids "$name"); do kill -KILL "$p" 2>/dev/null || true; done   # (v1-only hosts)
    w=$(cat "$run/wrapper.pid" 2>/dev/null)
    for _ in $(seq 50); do sc_finished "$name" && break; sleep 0.1; done
    if [ -n "$w" ] && _sc_alive "$w"; then kill -KILL "$w" 2>/dev/null || true; fi
    for _ in $(seq 50); do [ -z "$(sc_cgroup_pids "$name")" ] && break; sleep 0.1; done
    _sc_rm_cgroups "$name"
}

sc_cleanup() {
    local name=${1:?usage: sc_cleanup NAME}
    sc_running "$name" && sc_kill "$name"
    _sc_rm_cgroups "$name"
    rm -rf "$(sc_run_dir "$name")"
}

_sc_on_exit() {     # EXIT trap: no container booted by this shell outlives it
    local n
    for n in "${SC_BOOTED[@]}"; do
        if sc_running "$n" || [ -n "$(sc_cgroup_pids "$n")" ]; then
            sc_log "cleanup: killing leftover container $n (files kept: $(sc_run_dir "$n"))"; sc_kill "$n"
        fi
    done
}

# ------------------------------------------------------------------------------------ test helpers
check() {           # check "description" CMD... : pass iff CMD succeeds; shows its output on failure
    local what=$1 out rc; shift
    out=$("$@" 2>&1); rc=$?
    if [ "$rc" -eq 0 ]; then
        SC_PASSES=$((SC_PASSES + 1)); sc_log "PASS  $what"
    else
        SC_FAILS=$((SC_FAILS + 1)); sc_log "FAIL  $what"
        [ -n "$out" ] && printf '%s\n' "$out" | head -20 | sed 's/^/        | /' >&2
    fi
    return "$rc"
}

# Assertion helpers (for check): print what they saw when they fail.
sc_eq() { [ "$1" = "$2" ] || { echo "expected '$2', got '$1'"; return 1; }; }
sc_ne() { [ "$1" != "$2" ] || { echo "got '$1'"; return 1; }; }
sc_has() {          # sc_has HAYSTACK NEEDLE  (no `| grep -q` under pipefail: SIGPIPE flakes)
    grep -qF -- "$2" <<< "$1" || { echo "'$2' not found"; return 1; }
}
sc_lacks() { ! grep -F -- "$2" <<< "$1"; }   # sc_lacks HAYSTACK NEEDLE (prints offending lines)
# JSON journal output has one compact object per line: "FIELD":"value".
sc_json_has() { sc_has "$1" "\"$2\":\"$3\""; }

sc_wait_for() {     # sc_wait_for TIMEOUT_S CMD... : poll until CMD succeeds
    local deadline=$(( $(sc_ms) + $1 * 1000 )); shift
    until "$@" >/dev/null 2>&1; do [ "$(sc_ms)" -lt "$deadline" ] || return 1; sleep 0.1; done
}

sc_sleep() { sleep "$1" & wait $!; }   # unlike plain sleep, a TERM trap runs at once

sc_dump() {         # sc_dump NAME UNIT : status + journal of UNIT to stderr, for failing runs
    { sc_exec "$1" systemctl status --no-pager -l -n 0 "$2"; sc_journal "$1" -u "$2" -n 40 -o short-monotonic; } >&2 2>&1 || true
}

sc_summary() {      # final line "N passed, N failed"; non-zero if any failed
    [ -n "${SC_RESULTS_FILE:-}" ] && echo "$SC_PASSES $SC_FAILS" > "$SC_RESULTS_FILE"
    echo "$SC_PASSES passed, $SC_FAILS failed"
    [ "$SC_FAILS" -eq 0 ]
}

sc_abort() {        # a step everything else depends on failed: count it and stop the case
    SC_FAILS=$((SC_FAILS + 1)); sc_log "FAIL  $* (aborting)"
    sc_summary; exit 1
}

sc_is_elf() { [ "$(head -c4 "$1" | od -An -c | tr -d ' ')" = '177ELF' ]; }   # the real daemon, not a script

sc_need_daemon() {  # sc_need_daemon CASE : the daemon cases' preamble
    # Exports SC_BINARY and SC_UNIT (defaults: the release build, the repository's unit). No
    # binary: CASE is skipped. A binary without its unit file is a broken tree: CASE aborts.
    local root
    root=$(cd "$(dirname "$SC_HARNESS")/../.." && pwd)
    if [ -n "${SC_DEB_LAYER:-}" ]; then     # what the package installed
        export SC_BINARY=${SC_BINARY:-$SC_DEB_LAYER/usr/bin/session-cleanup}
        export SC_UNIT=${SC_UNIT:-$SC_DEB_LAYER/usr/lib/systemd/system/session-cleanup.service}
        export SC_SOCKET_UNIT=${SC_SOCKET_UNIT:-$SC_DEB_LAYER/usr/lib/systemd/system/session-cleanup.socket}
        export SC_SYSUSERS=${SC_SYSUSERS:-$SC_DEB_LAYER/usr/lib/sysusers.d/session-cleanup.conf}
    fi
    export SC_BINARY=${SC_BINARY:-$root/.build/release/session-cleanup}
    export SC_UNIT=${SC_UNIT:-$root/systemd/session-cleanup.service}
    export SC_SOCKET_UNIT=${SC_SOCKET_UNIT:-$root/systemd/session-cleanup.socket}
    export SC_SYSUSERS=${SC_SYSUSERS:-$root/systemd/session-cleanup.sysusers}
    if [ ! -f "$SC_BINARY" ]; then
        sc_log "SKIP $1: $SC_BINARY does not exist (daemon not built yet?)"
        sc_summary; exit 0
    fi
    [ -f "$SC_UNIT" ] || sc_abort "unit file $SC_UNIT exists"
    [ -f "$SC_SOCKET_UNIT" ] || sc_abort "socket unit file $SC_SOCKET_UNIT exists"
    [ -f "$SC_SYSUSERS" ] || sc_abort "sysusers file $SC_SYSUSERS exists"
}

# --------------------------------------------------------------------------------------- dispatch
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    set -uo pipefail
    [ "$(id -u)" -eq 0 ] || { echo "harness.sh: must run as root" >&2; exit 1; }
    cmd=${1:-}; shift || true
    case "$cmd" in
        setup)    sc_setup ;;
        deb-layer) sc_deb_layer "$@" ;;
        boot)     sc_boot "$@" ;;
        exec)     sc_exec "$@" ;;
        prop)     sc_prop "$@" ;;
        journal)  sc_journal "$@" ;;
        poweroff) sc_poweroff "$@" ;;
        kill)     sc_kill "$@" ;;
        cleanup)  sc_cleanup "$@" ;;
        _inner)   _sc_inner "$@" ;;
        *) sed -n '2,/^$/p' "$SC_HARNESS"; exit 2 ;;
    esac
    exit $?
else
    trap _sc_on_exit EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
fi
