import CCurl
import EventLoop

/// libcurl's multi interface (socket-callback flavour) on an ``EventLoop``: libcurl says which
/// descriptors to watch and when to wake it, the loop does the waiting, and every finished
/// transfer is handed to ``onFinished`` after `curl_multi_socket_action` has returned — never
/// from inside a libcurl callback. Owns the multi handle and the shares (TLS sessions and DNS)
/// its transfers use: one per group of origins (``share(forOrigin:)``).
///
/// A kept-alive connection's socket stays registered with the loop between two transfers
/// (parked: registered for reading only, and libcurl not told of its events), so a request on it
/// costs no epoll_ctl DEL and ADD; libcurl reports the sockets it makes and closes for
/// connections (`ccurl_sockets`), so a parked socket is unregistered before it is closed, and an
/// event on one (the server closed it) unregisters it. Idle (no transfer in libcurl, after
/// ``releaseParked()``) it has no descriptor and no timer registered with the loop.
final class CurlMulti {
    /// The loop it runs in.
    let loop: EventLoop
    private let multi: UnsafeMutableRawPointer
    private let shares: OpaquePointer
    // Updated by libcurl's callbacks several times per transfer; exclusivity is not checked at
    // run time (issue 10's instruction count): confined to the loop's thread, and every access
    // is one statement that calls out to nothing which could reach these properties again.
    /// The sockets libcurl uses, and which of them are registered with the loop.
    @exclusivity(unchecked) private var sockets = SocketStates()
    /// Tells `sockets` which descriptors libcurl opens and closes for connections.
    private var reporter: OpaquePointer?
    /// The loop timer standing in for libcurl's single timer, and when it fires.
    @exclusivity(unchecked) private var timer: EventLoop.TimerID?
    @exclusivity(unchecked) private var timerDeadline: MonotonicInstant?
    /// When libcurl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)`; may be later than
    /// `timerDeadline` (the timer is then re-armed when it fires instead of being moved).
    @exclusivity(unchecked) private var curlDeadline: MonotonicInstant?
    /// Whether libcurl runs from the loop timer (``timerFired()``).
    @exclusivity(unchecked) private var inTimerAction = false

    /// Runs for each finished transfer: its easy handle and libcurl's result. The handle is
    /// still in the multi handle; ``remove(_:)`` it.
    var onFinished: (UnsafeMutableRawPointer, CURLcode) -> Void = { _, _ in }
    /// Runs when libcurl or the loop failed inside a callback or `curl_multi_socket_action`
    /// (they cannot throw); ``onAbandoned`` follows.
    var onInternalError: (HTTPEngineError) -> Void = { _ in }
    /// Runs after `curl_multi_socket_action` failed: libcurl has then failed every transfer it
    /// holds without reporting any of them done (its multi handle is "dead" until they are all
    /// removed), so the owner must end and ``remove(_:)`` each one itself.
    var onAbandoned: () -> Void = {}
    /// Runs after every `curl_multi_socket_action` and the completions it reported.
    var onActionDone: () -> Void = {}

    /// A multi handle with `limits`, on `loop`. libcurl must be loaded (``HTTPEngine`` does it).
    init(loop: EventLoop, limits: HTTPEngine.Limits) throws {
        guard let multi = ccurl_multi_init() else {
            throw HTTPEngineError("curl_multi_init", detail: "libcurl could not allocate a multi handle")
        }
        guard let shares = ccurl_share_set_new() else {
            ccurl_multi_cleanup(multi)
            throw HTTPEngineError("ccurl_share_set_new", detail: "out of memory")
        }
        // No total or per-host connection limit in libcurl: the engine bounds transfers itself,
        // and a total limit reached closes another origin's idle connection at every start.
        let settings: [(CURLMoption, Int, String)] = [
            (CURLMOPT_MAX_TOTAL_CONNECTIONS, 0, "CURLMOPT_MAX_TOTAL_CONNECTIONS"),
            (CURLMOPT_MAX_HOST_CONNECTIONS, 0, "CURLMOPT_MAX_HOST_CONNECTIONS"),
            (CURLMOPT_MAXCONNECTS, limits.maxConnections, "CURLMOPT_MAXCONNECTS"),
            (CURLMOPT_MAX_CONCURRENT_STREAMS, limits.maxStreamsPerConnection, "CURLMOPT_MAX_CONCURRENT_STREAMS"),
            (CURLMOPT_PIPELINING, Int(CURLPIPE_MULTIPLEX), "CURLMOPT_PIPELINING"),
        ]
        for (option, value, name) in settings {
            let rc = ccurl_multi_set_long(multi, option, value)
            guard rc == CURLM_OK else {
                ccurl_multi_cleanup(multi)
                ccurl_share_set_free(shares)
                throw HTTPEngineError("curl_multi_setopt", detail: "\(name): \(Self.text(of: rc))")
            }
        }
        self.loop = loop
        self.multi = multi
        self.shares = shares
        // From here on a throw runs deinit, which cleans up the multi handle.
        let rc = ccurl_multi_set_callbacks(
            multi,
            { _, fd, what, driver, _ in
                guard let driver else { return -1 }
                return Unmanaged<CurlMulti>.fromOpaque(driver).takeUnretainedValue().curlWantsSocket(fd, what)
            },
            { _, milliseconds, driver in
                guard let driver else { return -1 }
                Unmanaged<CurlMulti>.fromOpaque(driver).takeUnretainedValue().curlWantsTimer(milliseconds)
                return 0
            },
            Unmanaged.passUnretained(self).toOpaque())
        guard rc == CURLM_OK else {
            throw HTTPEngineError("curl_multi_setopt", detail: "socket and timer callbacks: \(Self.text(of: rc))")
        }
        reporter = ccurl_sockets_new(
            { driver, fd, opened in
                guard let driver else { return }
                Unmanaged<CurlMulti>.fromOpaque(driver).takeUnretainedValue().connectionSocket(fd, opened: opened != 0)
            }, Unmanaged.passUnretained(self).toOpaque())
        guard reporter != nil else {
            throw HTTPEngineError("ccurl_sockets_new", detail: "out of memory")
        }
    }

    deinit {
        // libcurl closes kept-alive connections in cleanup; it must not call back into a
        // half-destroyed driver, so detach first and unregister what is left by hand.
        _ = ccurl_multi_set_callbacks(multi, nil, nil, nil)
        ccurl_sockets_detach(reporter)
        ccurl_multi_cleanup(multi)
        ccurl_share_set_free(shares)
        ccurl_sockets_free(reporter)
        for fd in sockets.registered { loop.unwatch(fd) }
        if let timer { loop.cancel(timer) }
    }

    /// The CURLSH a transfer to the origin numbered `origin` (``TransferQueue``'s numbers) should
    /// use: that of its group of `CCURL_SHARE_ORIGINS` origins, as many as one share's TLS
    /// session cache holds (8 in libcurl 7.88), so each origin keeps its session however many a
    /// run calls.
    ///
    /// - Throws: ``HTTPEngineError`` when the share cannot be made.
    func share(forOrigin origin: Int) throws -> UnsafeMutableRawPointer {
        var code = CURLSHE_OK
        guard let share = ccurl_share_set_get(shares, origin, &code) else {
            throw HTTPEngineError("curl_share_init", detail: String(cString: ccurl_share_strerror(code)))
        }
        return share
    }

    /// Descriptors registered with the loop, parked ones included (0 when idle).
    var watchedDescriptorCount: Int { sockets.registeredCount }

    /// Whether a loop timer is scheduled for libcurl.
    var hasScheduledTimer: Bool { timer != nil }

    /// Hands an easy handle to libcurl; libcurl asks for a timer at once, and starts it when that
    /// fires (on the loop's next turn).
    func add(_ easy: UnsafeMutableRawPointer?) -> CURLMcode { ccurl_multi_add_handle(multi, easy) }

    /// Takes an easy handle back (finished or not); its connection stays in the pool if reusable.
    func remove(_ easy: UnsafeMutableRawPointer?) { ccurl_multi_remove_handle(multi, easy) }

    /// Makes a transfer's connections report their sockets to this multi handle; before
    /// ``add(_:)``.
    func prepare(_ transfer: OpaquePointer) -> CURLcode { ccurl_transfer_report_sockets(transfer, reporter) }

    /// Unregisters every parked socket (the engine has no transfer left).
    func releaseParked() {
        for fd in sockets.parked { unregister(fd) }
    }

    // MARK: libcurl callbacks

    /// CURLMOPT_SOCKETFUNCTION: libcurl wants `fd` watched for `what`, or no longer watched.
    private func curlWantsSocket(_ fd: Int32, _ what: Int32) -> Int32 {
        var state = sockets[fd]
        if what == Int32(CCURL_POLL_REMOVE) {
            guard state.contains(.registered) else { return 0 }
            state.remove(.wanted)
            sockets[fd] = state
            // A connection's socket is parked: for reading only (an idle socket is always
            // writable), until the next transfer on it, an event, or its close.
            if !state.contains(.connection) {
                unregister(fd)
            } else if state.contains(.writable) && !register(fd, readable: true, writable: false) {
                unregister(fd)
            }
            return 0
        }
        let readable = what & Int32(CCURL_POLL_IN) != 0
        let writable = what & Int32(CCURL_POLL_OUT) != 0
        guard register(fd, readable: readable, writable: writable) else { return -1 }
        sockets[fd].insert(.wanted)
        return 0
    }

    /// Registers `fd` with the loop for `readable`/`writable`, or changes its registration (no
    /// system call when it is registered so already). False (and journaled) if the loop refused:
    /// libcurl then fails the transfers on it (CURLM_ABORTED_BY_CALLBACK).
    private func register(_ fd: Int32, readable: Bool, writable: Bool) -> Bool {
        var state = sockets[fd]
        var mask: SocketStates.State = [.registered]
        if readable { mask.insert(.readable) }
        if writable { mask.insert(.writable) }
        let current = state.intersection([.registered, .readable, .writable])
        guard current != mask else { return true }
        do {
            if state.contains(.registered) {
                try loop.update(fd, readable: readable, writable: writable)
            } else {
                try loop.watch(fd, readable: readable, writable: writable) { [unowned self] readiness in
                    self.socketReady(fd, readiness)
                }
            }
        } catch {
            // libcurl then fails every transfer (CURLM_ABORTED_BY_CALLBACK): see onAbandoned.
            onInternalError(HTTPEngineError("watch socket", detail: "\(error)"))
            return false
        }
        state.subtract([.registered, .readable, .writable])
        sockets[fd] = state.union(mask)
        return true
    }

    /// Unregisters `fd` from the loop, if it is registered.
    private func unregister(_ fd: Int32) {
        var state = sockets[fd]
        guard state.contains(.registered) else { return }
        loop.unwatch(fd)
        state.subtract([.registered, .readable, .writable, .wanted])
        sockets[fd] = state
    }

    /// `ccurl_sockets`: libcurl made `fd` for a connection, or is about to close it (after
    /// telling the socket callback to stop watching it, if it was watched).
    private func connectionSocket(_ fd: Int32, opened: Bool) {
        if opened {
            unregister(fd)  // a registration left under this number (cannot happen) goes first
            sockets[fd] = [.connection]
        } else {
            unregister(fd)
            sockets[fd] = []
        }
    }

    /// CURLMOPT_TIMERFUNCTION: libcurl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)`
    /// after `milliseconds` (0: as soon as possible, -1: never). It is never called from here:
    /// a loop timer does it, even for 0, so libcurl is not re-entered from its own callback.
    private func curlWantsTimer(_ milliseconds: Int) {
        guard milliseconds >= 0 else {
            curlDeadline = nil
            disarmTimer()
            return
        }
        // 0 (a transfer was added, say): due at once, so the loop runs libcurl in this turn's timer
        // pass rather than waiting up to a millisecond in epoll_wait first. The clock's origin is
        // "at once" without reading the clock. Asked for while libcurl runs from that timer, it
        // waits for the next turn (as any other deadline of "now" does), so libcurl cannot keep
        // the loop in one timer pass.
        let deadline =
            milliseconds == 0 && !inTimerAction
            ? MonotonicInstant(microseconds: 0) : loop.clock.now().advanced(byMicroseconds: Int64(milliseconds) * 1_000)
        curlDeadline = deadline
        // libcurl moves its timer often; a loop timer that fires no later can stay and re-arm.
        if let timerDeadline, timerDeadline <= deadline { return }
        disarmTimer()
        armTimer(at: deadline)
    }

    private func armTimer(at deadline: MonotonicInstant) {
        timerDeadline = deadline
        timer = loop.schedule(at: deadline) { [unowned self] in self.timerFired() }
    }

    private func disarmTimer() {
        if let timer { loop.cancel(timer) }
        timer = nil
        timerDeadline = nil
    }

    private func timerFired() {
        timer = nil
        timerDeadline = nil
        guard let due = curlDeadline else { return }
        if loop.clock.now() < due {
            armTimer(at: due)
            return
        }
        curlDeadline = nil
        inTimerAction = true
        socketAction(Int32(CCURL_SOCKET_TIMEOUT), 0)
        inTimerAction = false
    }

    private func socketReady(_ fd: Int32, _ readiness: EventLoop.Readiness) {
        guard sockets[fd].contains(.wanted) else {
            // Parked, and the server closed it (or sent what was not asked for): libcurl finds
            // out when it next tries the connection.
            unregister(fd)
            return
        }
        var mask: Int32 = 0
        if readiness.readable { mask |= Int32(CCURL_CSELECT_IN) }
        if readiness.writable { mask |= Int32(CCURL_CSELECT_OUT) }
        if readiness.failed { mask |= Int32(CCURL_CSELECT_ERR) }
        socketAction(fd, mask)
    }

    private func socketAction(_ fd: Int32, _ mask: Int32) {
        var running: Int32 = 0
        let rc = ccurl_multi_socket_action(multi, fd, mask, &running)
        if rc != CURLM_OK {
            onInternalError(HTTPEngineError("curl_multi_socket_action", detail: Self.text(of: rc)))
        }
        var easy: UnsafeMutableRawPointer?
        var code = CURLE_OK
        while ccurl_multi_next_done(multi, &easy, &code) != 0 {
            if let easy { onFinished(easy, code) }
        }
        if rc != CURLM_OK { onAbandoned() }
        onActionDone()
    }

    private static func text(of code: CURLMcode) -> String { String(cString: ccurl_multi_strerror(code)) }
}
