import CCurl
import EventLoop

/// libcurl's multi interface (socket-callback flavour) on an ``EventLoop``: libcurl says which
/// descriptors to watch and when to wake it, the loop does the waiting, and every finished
/// transfer is reported to the ``owner`` (``CurlMultiOwner/curlFinished(_:_:)``) after
/// `curl_multi_socket_action` has returned — never from inside a libcurl callback. Owns the
/// multi handle and the shares (TLS sessions and DNS) its transfers use: one per group of
/// origins (``share(forOrigin:)``).
///
/// A kept-alive connection's socket stays registered with the loop between two transfers
/// (parked: registered for reading only, and libcurl not told of its events), so a request on it
/// costs no epoll_ctl DEL and ADD; libcurl reports the sockets it makes and closes for
/// connections (`ccurl_sockets`), so a parked socket is unregistered before it is closed, and an
/// event on one (the server closed it) unregisters it. Idle (no transfer in libcurl, after
/// ``releaseParked()``) it has no descriptor and no timer registered with the loop.
///
/// The socket callbacks are in `CurlMulti+Sockets`, the timer callbacks in `CurlMulti+Timer`.
final class CurlMulti {
    /// The loop it runs in.
    let loop: EventLoop
    private let multi: UnsafeMutableRawPointer
    private let shares: OpaquePointer
    // Updated by libcurl's callbacks several times per transfer; exclusivity is not checked at
    // run time (issue 10's instruction count): confined to the loop's thread, and every access
    // is one statement that calls out to nothing which could reach these properties again.
    /// The sockets libcurl uses, and which of them are registered with the loop.
    @exclusivity(unchecked) var sockets = SocketStates()
    /// Tells `sockets` which descriptors libcurl opens and closes for connections.
    private var reporter: OpaquePointer?
    /// The loop timer standing in for libcurl's single timer, and when it fires.
    @exclusivity(unchecked) var timer: EventLoop.TimerID?
    @exclusivity(unchecked) var timerDeadline: MonotonicInstant?
    /// When libcurl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)`; may be later than
    /// `timerDeadline` (the timer is then re-armed when it fires instead of being moved).
    @exclusivity(unchecked) var curlDeadline: MonotonicInstant?
    /// Whether libcurl runs from the loop timer (``timerFired()``).
    @exclusivity(unchecked) var inTimerAction = false

    /// The engine told what libcurl did (``CurlMultiOwner``); set once, right after `init`.
    /// Unowned, as the closures it replaced captured their engine: the engine owns this multi
    /// handle and outlives it. Read once or twice per transfer: exclusivity is not checked at run
    /// time (issue 10's instruction count), as every read is one statement.
    @exclusivity(unchecked) unowned var owner: (any CurlMultiOwner)?

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

    // MARK: Running libcurl

    /// Lets libcurl act on `fd`'s events (`mask`), or on its timer (`CURL_SOCKET_TIMEOUT`), then
    /// reports to the owner what it finished (``CurlMultiOwner``).
    func socketAction(_ fd: Int32, _ mask: Int32) {
        var running: Int32 = 0
        let rc = ccurl_multi_socket_action(multi, fd, mask, &running)
        if rc != CURLM_OK {
            owner?.curlFailed(HTTPEngineError("curl_multi_socket_action", detail: Self.text(of: rc)))
        }
        var easy: UnsafeMutableRawPointer?
        var code = CURLE_OK
        while ccurl_multi_next_done(multi, &easy, &code) != 0 {
            if let easy { owner?.curlFinished(easy, code) }
        }
        if rc != CURLM_OK { owner?.curlAbandonedEveryTransfer() }
        owner?.curlActionDone()
    }

    /// libcurl's text for `code`.
    static func text(of code: CURLMcode) -> String { String(cString: ccurl_multi_strerror(code)) }
}
