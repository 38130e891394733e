// The event registry: every kind of journal entry the daemon writes, with its MESSAGE_ID,
// priority and catalog text. systemd/session-cleanup.catalog is generated from this list.
//
// Priorities follow journald's rate-limit pools (one budget per unit and pool): floods stay in
// pools of their own — per-call outcomes that are not `ended` are warnings, registrations are
// debug — so the lifecycle and summary entries (info or notice) are never crowded out.

extension JournalEvent {
    // MARK: Start and configuration

    /// The daemon process began.
    package static let started = JournalEvent(
        "started", id: "af6f10dbe5724d659e72ad935c888dd3", .info, subject: "session-cleanup is starting",
        """
        The session-cleanup daemon started and read its configuration from @CONFIG_FILE@.
        It opens its session store next and then reports ready to systemd.
        """)

    /// The configuration could not be loaded; the daemon exits 78.
    package static let configInvalid = JournalEvent(
        "config-invalid", id: "a3b40fda013c40eeba5aa61ff7ff14c1", .error,
        subject: "session-cleanup did not start: invalid configuration",
        """
        The configuration is invalid: @ERROR@
        The daemon exited with status 78 and systemd will not restart it until the file is fixed.
        Registered sessions are kept in the state directory and nothing was ended. Fix the file
        named in the message, check it with "session-cleanup check-config", then start the unit.
        """)

    /// Start-up failed for another reason; the daemon exits 1.
    package static let startFailed = JournalEvent(
        "start-failed", id: "a871546f99cd4381b71084498b86ec96", .error, subject: "session-cleanup could not start",
        """
        Start-up failed: @ERROR@
        The daemon exited with status 1. Stored sessions are kept and will be ended after a
        successful start. Common causes: the state or runtime directory cannot be created, the
        control socket cannot be bound, or the session store is locked by another process.
        """)

    /// The session store was read at start.
    package static let storeLoaded = JournalEvent(
        "store-loaded", id: "c4380df76d85412bac2085871d110f20", .info, subject: "Session store loaded",
        """
        The daemon read its session store: @SESSIONS_TOTAL@ sessions in @DURATION@.
        Sessions that an earlier stop run could not end are ended in the background once the
        daemon is ready ([Start] LeftoverBudgetSec=).
        """)

    /// Part of the store was damaged; what could be recovered was kept.
    package static let storeDamaged = JournalEvent(
        "store-damaged", id: "3433149756d34021aba9064bf281de24", .error,
        subject: "Session store damaged; what could be recovered was kept",
        """
        A file of the session store (@STORE_FILE@) was torn or corrupt: @ERROR@
        The damaged bytes were kept beside the store as *.corrupt-<time> files for inspection;
        every session that could be recovered was kept. Sessions that were lost cannot be ended
        by this daemon: compare with the applications that registered them.
        """)

    /// A change to the store (or the run report) could not be written.
    package static let storeWriteFailed = JournalEvent(
        "store-write-failed", id: "5e35ae4a12114bab8f36bea254e8d9ca", .error,
        subject: "The session store could not be written",
        """
        Writing the state directory failed: @ERROR@
        Registrations and unregistrations are answered only once they are durable: those this
        write carried were answered "not saved" and did not take effect (a session answered "not
        saved" is not kept anywhere). After a failed sync or a deleted state directory the store
        rewrites itself from memory before it commits again (store-recovered says when that
        worked); results of runs are written by a later commit. At exit, @SESSIONS_LEFT@ says how
        many sessions the files still hold: sessions ended but not yet removed on disk are ended
        again after the next start. Check the free space and the health of the file system holding
        the state directory (/var/lib/session-cleanup).
        """)

    /// The state directory cannot be written: the daemon runs degraded.
    package static let storeReadOnly = JournalEvent(
        "store-read-only", id: "3a0fa04cdf1f420bba4f984a779f8327", .error,
        subject: "The state directory cannot be written: running degraded",
        """
        The state directory could not be opened for writing: @ERROR@
        Rather than refusing to start (which would leave the stored sessions without a daemon to
        end them), session-cleanup runs degraded: it loaded the @SESSIONS_TOTAL@ stored sessions,
        refuses every registration and unregistration with an error saying why, and still ends the
        stored sessions at the stop (their results are not saved: those it could not end are
        ended again at the next stop). STATUS= and `session-cleanup status` say so too. Make the
        file system holding the state directory writable again and restart the service.
        """)

    /// The store rewrote itself from memory after a failed write: changes are saved again.
    package static let storeRecovered = JournalEvent(
        "store-recovered", id: "d4d0f6711c014316bc87bf62c7202acf", .notice,
        subject: "Session store rewritten from memory; changes are saved again",
        """
        After a failed write (a full disk, a failed sync, a deleted state directory), the daemon
        wrote its @SESSIONS_TOTAL@ sessions from memory into new store files, making the state
        directory again if it had been removed. Registrations are accepted and saved again; the
        files' earlier, untrusted contents are no longer used. Nothing needs doing unless
        store-write-failed entries keep coming back.
        """)

    /// The remembered HTTP versions of the HTTPS origins could not be read; they are learned again.
    package static let httpVersionsIgnored = JournalEvent(
        "http-versions-ignored", id: "1d83d6841daa42148f7e62e055f5a5d9", .notice,
        subject: "Remembered HTTP versions ignored",
        """
        The state directory's record of which HTTPS servers answer in HTTP/1.1 and which in
        HTTP/2 (@STORE_FILE@) could not be read: @ERROR@
        It is only a hint: this run's calls to HTTPS servers with HTTPVersion=auto find the
        version out again (the first call to each server goes alone), and the record is rewritten
        after the run. No session is affected.
        """)

    /// A background compaction of the store failed (it is tried again later).
    package static let storeCompactionFailed = JournalEvent(
        "store-compaction-failed", id: "06400af1c0554bca8f553ba6b83abe7a", .warning,
        subject: "Session store compaction failed",
        """
        Rewriting the session store's snapshot in the background failed: @ERROR@
        No session was lost: the log still holds every change, and commits go on. The log keeps
        growing until a later compaction succeeds, which the daemon tries again after a delay.
        Check the free space of the file system holding the state directory.
        """)

    /// A background compaction replaced the store's snapshot and log (debug).
    package static let storeCompacted = JournalEvent(
        "store-compacted", id: "8458bf60bac14dae9b7fcf51e968bc75", .debug, bulk: true,
        subject: "Session store compacted",
        """
        The session store's log had grown long, so the daemon wrote a new snapshot of its
        @SESSIONS_TOTAL@ sessions in the background (in @DURATION@) and started a new, empty
        log. Compaction never runs while the daemon is stopping.
        """)

    /// The last stop run was cut off (SIGKILL, a crash, a power cut) before it finished.
    package static let stopRunInterrupted = JournalEvent(
        "stop-run-interrupted", id: "f5986c41434b45bbac03b38013a30519", .warning,
        subject: "The last stop run was cut off",
        """
        The previous process began a stop run and did not finish it (it was killed, crashed, or the
        machine lost power): @SESSIONS_TOTAL@ sessions had no outcome. They were marked
        "interrupted" and are ended in the background once the daemon is ready, like every
        session an earlier stop left. If this repeats, the stop run is being killed: check
        TimeoutStopSec= against BudgetSec= and the watchdog.
        """)

    /// Stored sessions name endpoints the configuration no longer has.
    package static let endpointsUnconfigured = JournalEvent(
        "endpoints-unconfigured", id: "3fdf8894b05642e29bbb9483be1007da", .warning,
        subject: "Stored sessions name endpoints that are not configured",
        """
        @SESSIONS_TOTAL@ stored sessions are to be ended at endpoints the configuration no longer
        has (@ENDPOINT@). Those endpoints are dropped from each session by the next stop run,
        without a call. Restore the [Endpoint] sections if the sessions must still be ended there.
        """)

    /// The descriptor limit is lower than the configuration needs.
    package static let descriptorLimit = JournalEvent(
        "descriptor-limit", id: "a4ce40e2bfff4c75884236ff43cc14e2", .warning,
        subject: "Too few file descriptors for MaxConcurrentRequests=",
        """
        The process may open fewer files than MaxConcurrentRequests= connections and the control
        socket's clients need. Calls beyond the limit fail with "too many open files" during a
        stop run. Raise LimitNOFILE= in the unit, or lower MaxConcurrentRequests=.
        """)

    /// Start-up finished: `READY=1` was sent.
    package static let ready = JournalEvent(
        "ready", id: "ae1dbe7f70744949acf389c3fed83683", .info, subject: "session-cleanup is ready",
        """
        The daemon is ready: @SESSIONS_TOTAL@ sessions are registered and will be ended when the
        unit stops, within a budget of @BUDGET@. Start-up took @DURATION@.
        """)

    // MARK: Reload

    /// SIGHUP: the configuration is being read again.
    package static let reloading = JournalEvent(
        "reloading", id: "36743f62d0e04e1b9afe24f08c984af0", .info, subject: "Reloading the configuration",
        """
        The daemon received SIGHUP (systemctl reload) and is reading its configuration again.
        An invalid file keeps the configuration in use; the result is the next entry.
        """)

    /// The new configuration is in use.
    package static let reloaded = JournalEvent(
        "reloaded", id: "fcb5f937af5a458a9af82cf7fa404a10", .info, subject: "Configuration reloaded",
        """
        The configuration was reloaded from @CONFIG_FILE@ and is in use for every run that starts
        from now on.
        """)

    /// The reload failed; the old configuration stays in use.
    package static let reloadFailed = JournalEvent(
        "reload-failed", id: "6034b1eac23a4037946008a5d4c1ec43", .error,
        subject: "Configuration not reloaded; the previous one stays in use",
        """
        The configuration could not be reloaded: @ERROR@
        The daemon keeps running with the configuration it had. Fix the file, check it with
        "session-cleanup check-config", and reload again.
        """)

    /// Some changes need a restart.
    package static let reloadPartial = JournalEvent(
        "reload-partial", id: "c45b5e7acb6c4f34b297133b155fbb32", .notice,
        subject: "Some configuration changes take effect at the next start",
        """
        The reload changed settings that cannot change while the daemon runs (the [Control]
        section: the control socket's mode and group). They apply from the next start.
        """)

    /// SIGHUP while stopping.
    package static let reloadIgnored = JournalEvent(
        "reload-ignored", id: "8ee756117d5e4d0681e5042afdd9bc5c", .notice,
        subject: "Reload ignored while stopping",
        """
        A reload was asked for while the daemon was ending its sessions; the stop run finishes
        with the configuration it began with.
        """)

    /// The configuration sets `[Control]` keys the socket unit decides (socket activation).
    package static let controlSettingIgnored = JournalEvent(
        "control-setting-ignored", id: "d7a1cd170c2740fab3ee9d9394721121", .warning,
        subject: "[Control] settings not applied: the socket unit decides",
        """
        The control socket came from session-cleanup.socket, so its mode and group are the socket
        unit's; the configuration's [Control] SocketMode=/SocketGroup= were not applied. Set them
        in the socket unit instead (systemctl edit session-cleanup.socket), or remove them from
        the configuration.
        """)

    /// The metrics file (`[Metrics] TextfileDirectory=`) could not be written.
    package static let metricsWriteFailed = JournalEvent(
        "metrics-write-failed", id: "65409e07a15d4fc583d1060bfa7a6298", .warning,
        subject: "The metrics file could not be written",
        """
        The daemon could not replace session_cleanup.prom in [Metrics] TextfileDirectory= (ERROR=
        says which step failed and where), so node_exporter shows older figures or none. The
        directory must exist and be writable by the service's user, and the unit must allow the
        path (ReadWritePaths=; the shipped unit allows /var/lib/prometheus/node-exporter). The
        daemon tries again at the next change; it journals this once until a write succeeds.
        """)

    // MARK: Sleep

    /// The sleep lock (`[Sleep] EndSessions=yes`) is held: sessions are ended before the machine sleeps.
    package static let sleepLockTaken = JournalEvent(
        "sleep-lock-taken", id: "eadcc5c7872a4e5aae84e2ac13020218", .info,
        subject: "Sessions will be ended before the machine sleeps",
        """
        The daemon holds a logind delay inhibitor lock for sleep ([Sleep] EndSessions=yes;
        systemd-inhibit --list shows it). When the machine is about to sleep, logind waits up to
        its InhibitDelayMaxSec= (@BUDGET@ of it is the sleep run's budget) while a sleep run ends
        every registered session; then the daemon releases the lock and the machine sleeps.
        """)

    /// The sleep lock could not be taken or was lost.
    package static let sleepLockFailed = JournalEvent(
        "sleep-lock-failed", id: "1cad08cdbe344874a057a3d72350c034", .warning,
        subject: "Sessions will not be ended before the machine sleeps",
        """
        [Sleep] EndSessions=yes asks for a logind delay lock for sleep, but: @ERROR@
        Until the lock is held, the machine may sleep with every session open (they are still
        ended at the daemon's stop). logind must run and the system bus be reachable
        (systemctl status systemd-logind dbus). AccessDenied: logind asks polkit, and without
        polkit (Debian: apt install polkitd) it grants delay locks to root only; polkit's default
        allows org.freedesktop.login1.inhibit-delay-sleep to every user. The daemon tries again
        after the next resume and at every reload.
        """)

    /// The machine is about to sleep: the sleep run begins (or there is nothing to end).
    package static let sleeping = JournalEvent(
        "sleeping", id: "819176b1ed0b46c192ec3203232fd8a7", .info,
        subject: "The machine is about to sleep: ending sessions first",
        """
        logind announced sleep (PrepareForSleep). The daemon ends its @SESSIONS_TOTAL@
        sessions within @BUDGET@ (logind's InhibitDelayMaxSec= less a margin), then releases
        its delay lock. Ended sessions are gone; what could not be ended stays registered and is
        retried after the resume (a leftover run) and in any case at the daemon's stop.
        """)

    /// The machine resumed: the lock is taken again.
    package static let resumed = JournalEvent(
        "resumed", id: "856b030faf8c4ef0bbf163407c416825", .info,
        subject: "The machine resumed",
        """
        logind announced the resume. The daemon takes its sleep lock again; the
        @SESSIONS_LEFT@ sessions the sleep run could not end are retried by a leftover run
        shortly after ([Start] LeftoverBudgetSec=), once the network had a moment to return.
        """)

    // MARK: Sessions

    /// One registration (debug: registrations are summarised at info by `registrations`).
    package static let registered = JournalEvent(
        "registered", id: "58246879c9df4612ad074f5ecc6114bf", .debug, bulk: true, subject: "Session registered",
        """
        Session @SESSION_ID@ was registered by uid @OWNER_UID@ to be ended at @ENDPOINT@ when the
        daemon stops. Its key is kept in the state directory and never written to the journal.
        """)

    /// One session forgotten without being ended (debug, like `registered`).
    package static let unregistered = JournalEvent(
        "unregistered", id: "fed6b384898b4a45983eb40d231533b9", .debug, bulk: true,
        subject: "Session unregistered without being ended",
        """
        Session @SESSION_ID@ was removed by uid @PEER_UID@ without an end-session call: the
        application that registered it said it no longer needs ending.
        """)

    /// Periodic summary of registrations.
    package static let registrations = JournalEvent(
        "registrations", id: "d807104e8c5b435daca6cb73e8da2561", .info, subject: "Sessions registered",
        """
        In the interval covered by this entry, @SESSIONS_REGISTERED@ sessions were registered and
        @SESSIONS_UNREGISTERED@ unregistered; @SESSIONS_TOTAL@ are held now. Registrations are
        journaled one by one at debug priority only, so that a busy day never uses up the
        unit's journal rate limit before the stop run; "session-cleanup list" shows them all.
        """)

    /// A problem with the control socket or one of its clients.
    package static let controlSocket = JournalEvent(
        "control-socket", id: "a4131ac631af492daf5afc68a7ce3958", .warning, bulk: true,
        subject: "Control socket problem",
        """
        The control socket refused or closed a connection, or could not accept one. Clients are
        told why; registrations already acknowledged are not affected.
        """)

    // MARK: Runs

    /// A run other than the stop run began (leftovers after start, or `end`).
    package static let runBegun = JournalEvent(
        "run-begun", id: "07ed9b5600d9442e864cfefecb78e4ff", .info, subject: "Ending sessions in the background",
        """
        A @RUN_KIND@ run began ending @SESSIONS_TOTAL@ sessions with a budget of @BUDGET@.
        Every entry of the run carries SESSION_CLEANUP_RUN_ID=@SESSION_CLEANUP_RUN_ID@:
        journalctl SESSION_CLEANUP_RUN_ID=@SESSION_CLEANUP_RUN_ID@ shows them all.
        """)

    /// SIGTERM during a restart of the unit: the sessions are handed over, not ended.
    package static let handOverBegun = JournalEvent(
        "hand-over-begun", id: "3a02c8b5ed3c4af08565c4cfdb0b6820", .info, subject: "Restart: handing sessions over",
        """
        @UNIT@ is being restarted (systemd's job type @JOB_TYPE@), so the daemon ends no session:
        it finishes the control requests under way, keeps its @SESSIONS_TOTAL@ sessions in the
        state directory and exits; the restarted daemon takes them over. Only a real stop
        (systemctl stop, shutdown) ends sessions ([Stop] OnRestart= changes this).
        """)

    /// The restart hand-over is complete; the process exits 0.
    package static let handedOver = JournalEvent(
        "handed-over", id: "569d51d22eae40ca9d3174b10d7fa5be", .info,
        subject: "Sessions handed over to the restarted daemon",
        """
        The daemon kept its @SESSIONS_TOTAL@ sessions for the restarted daemon and exited after
        @DURATION@. Nothing was ended; the next start lists them all.
        """)

    /// The configuration for the restarted daemon could not be checked before a hand-over.
    package static let nextStartUnchecked = JournalEvent(
        "next-start-unchecked", id: "1e658c9be0da40dabc20d637de5b87da", .notice,
        subject: "Restart: the next start's configuration could not be checked",
        """
        Before handing its sessions over to the restarted daemon, this daemon checks that the
        binary on disk accepts the configuration; the check could not be made (@ERROR@), so the
        sessions were handed over anyway. If the restarted daemon then fails to start, its
        sessions wait in the state directory until it does.
        """)

    /// The files were invalid at start: the daemon runs on the last good configuration.
    package static let configFallback = JournalEvent(
        "config-fallback", id: "ecdfa825cf604a4684cfdb64bbe8d6ec", .error,
        subject: "session-cleanup runs on its last good configuration: the files are invalid",
        """
        The configuration files are invalid: @ERROR@
        Rather than exit and leave the registered sessions without a daemon to end them, the
        daemon started on the last configuration it loaded without error, kept in its state
        directory (last-good-configuration.json, files @CONFIG_FILE@). "session-cleanup status"
        and the unit's status line say so until the files are fixed: check them with
        "session-cleanup check-config", then "systemctl reload session-cleanup".
        """)

    /// A restart onto invalid files: handed over, the next process runs on the last good one.
    package static let nextStartFallback = JournalEvent(
        "next-start-fallback", id: "7d840d0f68ce407fb4566cb15b0399d6", .warning,
        subject: "Restart onto invalid files: the next process runs on the last good configuration",
        """
        The restarted daemon would refuse its configuration files (@ERROR@). The sessions were
        handed over anyway: the next process starts on the last good configuration kept in the
        state directory, and says so, until the files are fixed.
        """)

    /// SIGTERM: the stop run began.
    package static let stopBegun = JournalEvent(
        "stop-begun", id: "f0c7b3496fc546efa0acfe2148663258", .info, subject: "Stop run begun",
        """
        The daemon received @SIGNAL@ and began ending its @SESSIONS_TOTAL@ sessions within a budget
        of @BUDGET@. It told systemd to wait for the budget plus 5 s
        (EXTEND_TIMEOUT_USEC=). The run's entries carry SESSION_CLEANUP_RUN_ID=@SESSION_CLEANUP_RUN_ID@;
        "session-cleanup report" shows the result after the next start.
        """)

    /// A second SIGTERM or SIGINT expired the budget at once.
    package static let secondSignal = JournalEvent(
        "second-signal", id: "35b684283d534cbaad61af61d5aa797b", .notice,
        subject: "Second stop signal: budget expired at once",
        """
        @SIGNAL@ arrived while the stop run was under way, which asks to stop now: calls in
        flight were cancelled and recorded as unconfirmed (their request was sent) or expired (it
        was not), and the sessions not ended are kept for the next start.
        """)

    /// The budget ran out with calls unfinished.
    package static let expired = JournalEvent(
        "expired", id: "f91362d43f234370b3b1231d0805d926", .notice,
        subject: "Budget expired with calls unfinished",
        """
        The run's budget ran out before every call had an outcome. Calls in flight were cancelled:
        OUTCOME=unconfirmed when their request had been sent (the server may still have ended
        the session), OUTCOME=expired when it had not; calls not begun were recorded as
        not-started. Their sessions are kept and ended after the next start, unconfirmed calls
        first. If this happens at every stop, raise BudgetSec=
        (and the unit's TimeoutStopSec= with it) or MaxConcurrentRequests=, or find the slow
        endpoint with "session-cleanup report".
        """)

    /// A run dropped endpoints that are not configured any more from one session.
    package static let endpointsDropped = JournalEvent(
        "endpoints-dropped", id: "86324edaa120414cbcd8e5c2c2748d81", .warning, bulk: true,
        subject: "Unconfigured endpoints dropped from a session",
        """
        Session @SESSION_ID@ (uid @OWNER_UID@) named endpoint @ENDPOINT@, which is no longer
        configured. It was dropped from the session without a call: the server was never asked
        to end the session there.
        """)

    /// One call that did not end its session (every such call has an entry of its own).
    package static let callFinished = JournalEvent(
        "call-finished", id: "7cf946334c814c4c86545bcca5c6cb23", .warning, bulk: true,
        subject: "Session not ended at an endpoint",
        """
        The call ending session @SESSION_ID@ at endpoint @ENDPOINT@ came to @OUTCOME@ after
        @ATTEMPTS@ attempts: @ERROR@
        rejected: the server answered, but not with success (HTTP_STATUS=). failed: no usable
        answer (connection, DNS, TLS, timeout) to a request the server cannot have acted on.
        unconfirmed: the request was sent but no answer came (a timeout, a dropped connection,
        the budget's end); it is not sent again in the same run, and the next start checks it
        first. expired: the budget ran out before the request was sent. not-started: too
        little budget was left, or the host was known to be unreachable. The session is kept
        and ended after the next start; the endpoints that did end it are not called again.
        """)

    /// Calls that ended their sessions, journaled together (one SESSION_ID= per session).
    package static let callsEnded = JournalEvent(
        "calls-ended", id: "9854fefe25ce489caab030207f81d21d", .info, bulk: true,
        subject: "Sessions ended at an endpoint",
        """
        @CALLS@ calls ended their sessions at endpoint @ENDPOINT@ (HTTP @HTTP_STATUS@). Ended calls
        are journaled in groups: this entry carries one SESSION_ID= field per session, so
        journalctl SESSION_ID=<id> finds it. Calls that did not end their session each have an
        entry of their own (call-finished). Per-call durations and attempts are in
        "session-cleanup report --json".
        """)

    /// What a run saw of an origin whose calls had an adaptive limit (issue 25's "say why").
    package static let originLimit = JournalEvent(
        "origin-limit", id: "ca319bff225945278982d8025ab272f7", .info, subject: "Calls in flight to an origin",
        """
        During the @RUN_KIND@ run the adaptive limit of calls in flight to @ORIGIN@ reached
        @LIMIT_HIGHEST@ (@LIMIT_FINAL@ at the end). Its replies took @LATENCY_LOWEST_USEC@ µs at
        the lowest and @LATENCY_MEDIAN_USEC@ µs at the median. The limit was cut for
        @CUTS_TIMEOUT@ timeouts, @CUTS_OVERLOADED@ 503 or 429 replies, @CUTS_REFUSED@ refused
        connections, @CUTS_RESET@ reset connections, @CUTS_UNACKNOWLEDGED@ requests the server's
        TCP never acknowledged (a full accept queue) and @CUTS_SLOW@ rounds of replies whose
        fastest was more than twice as slow as the lowest (the server queued every request). A low limit with many cuts and calls that expired means the server
        was the bottleneck, not the daemon; Concurrency=fixed gives the origin its whole share
        from the start.
        """)

    /// A run finished: the summary, whose counts add up to the calls made.
    package static let runFinished = JournalEvent(
        "run-finished", id: "85a8bf9bd2f147b1952eecacfd5131ba", .info, subject: "Run finished",
        """
        The @RUN_KIND@ run ended @SESSIONS_ENDED@ of @SESSIONS_TOTAL@ sessions in @DURATION@;
        @SESSIONS_LEFT@ are kept and ended after the next start. Calls: @CALLS_TOTAL@ in all,
        @CALLS_ENDED@ ended, @CALLS_REJECTED@ rejected, @CALLS_FAILED@ failed,
        @CALLS_UNCONFIRMED@ unconfirmed (sent, no answer), @CALLS_EXPIRED@ expired, @CALLS_NOT_STARTED@ not started. The run wrote @JOURNAL_ENTRIES@ call entries;
        @JOURNAL_DROPPED@ entries could not be journaled because the journal was not keeping up.
        "session-cleanup report @SESSION_CLEANUP_RUN_ID@" shows every call and whether the journal
        is complete for the run.
        """)

    /// The daemon finished its stop and is exiting.
    package static let stopped = JournalEvent(
        "stopped", id: "adb03cd4e0a047b4bf22984cde6075b7", .info, subject: "session-cleanup stopped",
        """
        The stop took @DURATION@ and left @TIME_REMAINING@ of the budget.
        @SESSIONS_LEFT@ sessions are kept for the next start (exit status 75 when there are any,
        which the unit counts as success).
        """)

    /// The HTTP engine (libcurl) could not start; the run's calls fail.
    package static let engineFailed = JournalEvent(
        "engine-failed", id: "105295173ac6429cb984f243d72f36ac", .error, subject: "The HTTP engine could not start",
        """
        libcurl could not be loaded or initialised: @ERROR@
        No call could be made; every session is kept. Install the libcurl4 package (or repair it)
        and restart the unit.
        """)

    /// libcurl reported a failure inside the engine (the calls under way end at once, failed).
    package static let engineError = JournalEvent(
        "engine-error", id: "5b642d8f93b5406eaf0d3ab8b5ba24a8", .warning, subject: "HTTP engine failure",
        """
        A libcurl callback or curl_multi_socket_action failed inside the HTTP engine: @ERROR@
        libcurl then fails every call under way; they end at once, failed, and are recorded. The
        first ten failures of an engine are journaled, then one note that more are not.
        """)

    /// An endpoint's token credential could not be read.
    package static let credentialMissing = JournalEvent(
        "credential-missing", id: "4dde516761ba42bf98ad0302cf4dd2b5", .error,
        subject: "An endpoint's token credential is unavailable",
        """
        @ERROR@
        Calls to the endpoints using this credential fail and their sessions are kept. Provide it
        with LoadCredential= in a drop-in for the unit (see TokenCredential= in the README).
        """)

    /// A client-credentials grant (`TokenURL=`) gave an access token.
    package static let tokenObtained = JournalEvent(
        "token-obtained", id: "f046a71eb3fe458d8d6dd15de3c35209", .info, subject: "Access token obtained",
        """
        The daemon obtained an access token from the token endpoint at @TOKEN_ORIGIN@
        (client-credentials grant, TokenURL=) and uses it for @VALIDITY@ on the calls of every
        endpoint with the same TokenURL=, client and TokenScope=. The token is kept in memory
        only and never journaled; a call answered 401 gets one fresh token and one retry.
        """)

    /// A client-credentials grant (`TokenURL=`) failed: the calls waiting for it failed.
    package static let tokenFailed = JournalEvent(
        "token-failed", id: "262f9f262b474c00b0538a65b55d85c1", .error, subject: "No access token: calls failed",
        """
        The client-credentials grant at @TOKEN_ORIGIN@ (TokenURL=) gave no access token: @ERROR@
        The @CALLS_WAITING@ calls waiting for it failed at once, like calls to a host that cannot be
        reached, and later calls of the run needing it fail too; their sessions are kept and
        ended after the next start. A 401 or invalid_client: check the client credential
        (ClientCredential=) and ClientAuthentication=; invalid_scope: TokenScope=.
        """)

    // MARK: The journal and systemd

    /// The last stop run could not journal everything (reported after the next start).
    package static let journalIncomplete = JournalEvent(
        "journal-incomplete", id: "f2e530283fe84e55a1fc0e1761074f70", .notice,
        subject: "The journal missed entries of a run",
        """
        Run @SESSION_CLEANUP_RUN_ID@ could not journal @JOURNAL_DROPPED@ entries: journald did not
        accept them fast enough (or at all) and the daemon never waits for the journal. No
        outcome was lost: "session-cleanup report @SESSION_CLEANUP_RUN_ID@" shows every call.
        """)

    /// A state change (READY=1, STOPPING=1, …) could not be delivered to systemd.
    package static let notifyFailed = JournalEvent(
        "notify-failed", id: "99519c6c60b042588f72cef1410c317c", .error,
        subject: "A state change did not reach systemd",
        """
        The daemon could not deliver "@NOTIFY_STATE@" to the service manager: @ERROR@
        It retried while its bound allowed. A lost EXTEND_TIMEOUT_USEC= can let systemd kill the
        stop run at TimeoutStopSec=; a lost READY=1 makes the start time out.
        """)

    /// Every kind, in catalog order.
    package static let all: [JournalEvent] = [
        started, configInvalid, configFallback, startFailed, storeLoaded, storeDamaged, storeReadOnly, storeWriteFailed,
        storeRecovered,
        storeCompactionFailed, storeCompacted, stopRunInterrupted, httpVersionsIgnored,
        endpointsUnconfigured, descriptorLimit, ready,
        reloading, reloaded, reloadFailed, reloadPartial, reloadIgnored, registered, unregistered, registrations,
        controlSettingIgnored, metricsWriteFailed, controlSocket, runBegun, handOverBegun, nextStartUnchecked,
        nextStartFallback,
        handedOver, stopBegun, sleepLockTaken, sleepLockFailed, sleeping, resumed,
        secondSignal, expired,
        endpointsDropped, callFinished, callsEnded, originLimit, runFinished, stopped,
        engineFailed, engineError, credentialMissing, tokenObtained, tokenFailed, journalIncomplete, notifyFailed,
    ]
}
