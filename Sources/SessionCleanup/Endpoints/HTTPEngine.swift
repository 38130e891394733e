import CCurl
import Glibc

/// Identifies a transfer started by ``HTTPEngine/start(_:completion:)``.
public struct TransferID: Hashable, Sendable, CustomStringConvertible {
    /// The engine's number for the transfer; numbers are never reused by one engine.
    public let rawValue: UInt64

    /// `transfer 12`.
    public var description: String { "transfer \(rawValue)" }
}

/// Runs HTTP requests concurrently inside the daemon's ``EventLoop`` with libcurl's multi
/// interface (socket-callback flavour): libcurl tells the engine which descriptors to watch and
/// when to wake it, the loop does the waiting, and completions run as ordinary loop handlers.
///
/// - Connections: one multi handle, so connections are kept alive and reused across transfers
///   to the same host, up to `maxConnectionsPerHost` per host and `maxTotalConnections` in all.
///   Transfers beyond those limits wait in the engine, per host and in start order, and are
///   handed to libcurl as connections free up (libcurl's own pending queue costs O(pending) for
///   every finished transfer). A transfer's timeout runs from ``start(_:completion:)``, waiting
///   included. HTTP/1.1 only; no redirects are followed (a 3xx is a status); no
///   proxy is used, whatever the environment says; only `http` and `https`.
/// - TLS: peer and host verification are always on, against the system store or the request's
///   `caFile` alone.
/// - Replies: at most `maxReplyBytes` of body are kept; a longer body is cut there and the
///   transfer stops (the connection is closed rather than drained). See ``HTTPResult``.
/// - Idle: once no transfer is active the engine has no descriptor and no timer registered with
///   the loop, so an idle daemon does not wake up for it. Kept-alive connections stay open but
///   unwatched until the next transfer uses (or discards) them.
/// - Secrets: the URL, headers and body never appear in anything the engine reports; libcurl's
///   error text is scrubbed of every part of the URL but the host (see ``TransportFailure``).
///
/// Not thread-safe, like the loop: use it only on the loop's thread. Completions run on that
/// thread, never from inside a libcurl callback, and may start or cancel transfers.
public final class HTTPEngine {
    private struct Transfer {
        let request: HTTPRequest
        let completion: (HTTPResult) -> Void
        let started: MonotonicInstant
        let deadline: MonotonicInstant
        /// `host:port`, for messages.
        let peer: String
        /// `scheme://host:port`: what connections are counted and queued by.
        let origin: String
        /// The `ccurl_transfer` running it, once handed to libcurl.
        var handle: OpaquePointer?
        /// While waiting for a connection: the loop timer that ends the wait at `deadline`.
        var waitTimer: EventLoop.TimerID?
    }

    /// Transfers of one origin: how many libcurl has, and which wait (tags in start order;
    /// tags of transfers that left while waiting are skipped when they come up).
    private struct Origin {
        var running = 0
        var waiting: [UInt64] = []
        var next = 0
        var waitingCount = 0
    }

    /// The loop the engine runs in.
    public let loop: EventLoop
    private let multi: UnsafeMutableRawPointer
    private let maxPerOrigin: Int
    private let maxRunning: Int
    private var transfers: [UInt64: Transfer] = [:]
    private var origins: [String: Origin] = [:]
    private var running = 0
    private var lastTag: UInt64 = 0
    /// Idle transfers (each with its easy handle) kept for reuse, at most `poolLimit`.
    private var pool: [OpaquePointer] = []
    private let poolLimit: Int
    /// Descriptors libcurl asked the engine to watch, all registered with the loop.
    private var watched: Set<Int32> = []
    /// The loop timer standing in for libcurl's single timer, and when it fires.
    private var timer: EventLoop.TimerID?
    private var timerDeadline: MonotonicInstant?
    /// When libcurl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)`; may be later than
    /// `timerDeadline` (the timer is then re-armed when it fires instead of being moved).
    private var curlDeadline: MonotonicInstant?

    /// The most recent failure inside a libcurl callback or `curl_multi_socket_action` (they
    /// cannot throw); nil when none happened. For diagnostics: transfers it affected still
    /// complete, by their timeout at the latest.
    public private(set) var lastInternalError: HTTPEngineError?

    /// Creates an engine that runs its transfers in `loop`.
    ///
    /// libcurl is loaded (`dlopen`) by the first engine a process creates, not at exec time, so a
    /// process that never runs a transfer never maps it and its dependencies.
    ///
    /// - Parameters:
    ///   - maxConnectionsPerHost: connections open at once to one host and port (at least 1).
    ///   - maxTotalConnections: connections open at once in all, and kept alive when idle.
    /// - Throws: ``HTTPEngineError`` when libcurl cannot be loaded (the error names
    ///   `libcurl.so.4` and says why) or initialised.
    public init(loop: EventLoop, maxConnectionsPerHost: Int, maxTotalConnections: Int) throws {
        guard ccurl_load() == 0 else {
            throw HTTPEngineError("load \(CCURL_LIBRARY)", detail: String(cString: ccurl_load_error()))
        }
        let global = ccurl_global_init()
        guard global == CURLE_OK else {
            throw HTTPEngineError("curl_global_init", detail: Self.text(of: global))
        }
        guard let multi = ccurl_multi_init() else {
            throw HTTPEngineError("curl_multi_init", detail: "libcurl could not allocate a multi handle")
        }
        let perHost = max(1, maxConnectionsPerHost)
        let total = max(perHost, maxTotalConnections)
        let settings: [(CURLMoption, Int, String)] = [
            (CURLMOPT_MAX_HOST_CONNECTIONS, perHost, "CURLMOPT_MAX_HOST_CONNECTIONS"),
            (CURLMOPT_MAX_TOTAL_CONNECTIONS, total, "CURLMOPT_MAX_TOTAL_CONNECTIONS"),
            (CURLMOPT_MAXCONNECTS, total, "CURLMOPT_MAXCONNECTS"),
        ]
        for (option, value, name) in settings {
            let rc = ccurl_multi_set_long(multi, option, value)
            guard rc == CURLM_OK else {
                ccurl_multi_cleanup(multi)
                throw HTTPEngineError("curl_multi_setopt", detail: "\(name): \(Self.text(of: rc))")
            }
        }
        self.loop = loop
        self.multi = multi
        maxPerOrigin = perHost
        maxRunning = total
        poolLimit = min(total, 64)
        // From here on a throw runs deinit, which cleans up the multi handle.
        let rc = ccurl_multi_set_callbacks(
            multi,
            { _, fd, what, engine, _ in
                guard let engine else { return -1 }
                return Unmanaged<HTTPEngine>.fromOpaque(engine).takeUnretainedValue().curlWantsSocket(fd, what)
            },
            { _, milliseconds, engine in
                guard let engine else { return -1 }
                Unmanaged<HTTPEngine>.fromOpaque(engine).takeUnretainedValue().curlWantsTimer(milliseconds)
                return 0
            },
            Unmanaged.passUnretained(self).toOpaque())
        guard rc == CURLM_OK else {
            throw HTTPEngineError("curl_multi_setopt", detail: "socket and timer callbacks: \(Self.text(of: rc))")
        }
    }

    deinit {
        cancelAll()
        // libcurl closes kept-alive connections in cleanup; it must not call back into a
        // half-destroyed engine, so detach first and unregister what is left by hand.
        _ = ccurl_multi_set_callbacks(multi, nil, nil, nil)
        ccurl_multi_cleanup(multi)
        for fd in watched { loop.unwatch(fd) }
        if let timer { loop.cancel(timer) }
        for transfer in pool { ccurl_transfer_free(transfer) }
    }

    // MARK: Transfers

    /// Transfers started and not yet completed, waiting for a connection or running.
    public var activeCount: Int { transfers.count }

    /// Transfers waiting in the engine for a connection slot.
    public var waitingCount: Int { transfers.count - running }

    /// Descriptors the engine has registered with the loop (0 when idle).
    public var watchedDescriptorCount: Int { watched.count }

    /// Whether the engine has a timer scheduled in the loop (false when idle).
    public var hasScheduledTimer: Bool { timer != nil || transfers.values.contains { $0.waitTimer != nil } }

    /// Starts `request`; `completion` runs exactly once, on the loop's thread, with the reply,
    /// a transport failure, or `.cancelled`. It never runs before this returns.
    ///
    /// - Throws: ``HTTPEngineError`` (naming the request's redacted URL) when the URL does not
    ///   parse or is not `http`/`https`, the request's limits are invalid, or libcurl refuses an
    ///   option or runs out of memory; `completion` is then never called.
    @discardableResult
    public func start(_ request: HTTPRequest, completion: @escaping (HTTPResult) -> Void) throws -> TransferID {
        let subject = request.redactedURL
        guard request.maxReplyBytes >= 0 else {
            throw HTTPEngineError("check request", subject, detail: "maxReplyBytes is negative")
        }
        guard request.timeout > .zero else {
            throw HTTPEngineError("check request", subject, detail: "timeout is not positive")
        }
        for (index, line) in request.headers.enumerated()
        where line.utf8.contains(where: { $0 == 13 || $0 == 10 }) || !line.utf8.contains(UInt8(ascii: ":")) {
            // Not the line itself: it may hold a token.
            throw HTTPEngineError(
                "check request", subject, detail: "header \(index + 1) is not one \"Name: value\" line")
        }
        let (peer, origin) = try Self.parse(request)
        let now = loop.clock.now()
        lastTag += 1
        let tag = lastTag
        transfers[tag] = Transfer(
            request: request, completion: completion, started: now, deadline: now.advanced(by: request.timeout),
            peer: peer, origin: origin)
        if running < maxRunning, origins[origin, default: Origin()].running < maxPerOrigin {
            do {
                try hand(tag)
            } catch {
                transfers[tag] = nil
                if origins[origin]?.running == 0, origins[origin]?.waitingCount == 0 { origins[origin] = nil }
                throw error
            }
        } else {
            origins[origin, default: Origin()].waiting.append(tag)
            origins[origin, default: Origin()].waitingCount += 1
            transfers[tag]?.waitTimer = loop.schedule(at: now.advanced(by: request.timeout)) { [unowned self] in
                self.waitExpired(tag)
            }
        }
        return TransferID(rawValue: tag)
    }

    /// Cancels a transfer: its completion runs with a `.cancelled` failure before this returns.
    /// Unknown or already completed transfers are ignored.
    public func cancel(_ id: TransferID) {
        guard let entry = transfers[id.rawValue] else { return }
        let failure = TransportFailure(kind: .cancelled, peer: entry.peer, detail: "cancelled before it completed")
        finish(id.rawValue, outcome: .failure(failure), reusedConnection: false)
    }

    /// Cancels every active transfer, in the order they were started; each completion runs with
    /// `.cancelled` before this returns. Transfers that those completions start are not cancelled.
    public func cancelAll() {
        for tag in transfers.keys.sorted() { cancel(TransferID(rawValue: tag)) }
    }

    /// Hands a transfer to libcurl.
    private func hand(_ tag: UInt64) throws {
        guard let entry = transfers[tag] else { return }
        let transfer = try takeTransfer(for: entry.request)
        let remaining = entry.deadline.duration(since: loop.clock.now())
        do {
            try configure(transfer, tag: tag, request: entry.request, timeout: remaining)
        } catch {
            recycle(transfer)
            throw error
        }
        let rc = ccurl_multi_add_handle(multi, ccurl_transfer_easy(transfer))
        guard rc == CURLM_OK else {
            recycle(transfer)
            throw HTTPEngineError("curl_multi_add_handle", entry.request.redactedURL, detail: Self.text(of: rc))
        }
        transfers[tag]?.handle = transfer
        origins[entry.origin, default: Origin()].running += 1
        running += 1
    }

    /// A waiting transfer's timeout expired before a connection slot freed up.
    private func waitExpired(_ tag: UInt64) {
        guard let entry = transfers[tag], entry.handle == nil else { return }
        transfers[tag]?.waitTimer = nil
        let waited = loop.clock.now().duration(since: entry.started)
        let failure = TransportFailure(
            kind: .timeout, peer: entry.peer,
            detail: "timed out after \(waited.millisecondsRoundedUp) ms waiting for a free connection")
        finish(tag, outcome: .failure(failure), reusedConnection: false)
    }

    /// Ends a transfer wherever it is (waiting or running), frees its slot for a waiting one,
    /// and runs its completion.
    private func finish(_ tag: UInt64, outcome: HTTPResult.Outcome, reusedConnection: Bool) {
        guard let entry = transfers.removeValue(forKey: tag) else { return }
        if let handle = entry.handle {
            ccurl_multi_remove_handle(multi, ccurl_transfer_easy(handle))
            recycle(handle)
            running -= 1
            origins[entry.origin]?.running -= 1
        } else {
            if let waitTimer = entry.waitTimer { loop.cancel(waitTimer) }
            origins[entry.origin]?.waitingCount -= 1
        }
        if let origin = origins[entry.origin], origin.running == 0, origin.waitingCount == 0 {
            origins[entry.origin] = nil
        }
        handWaiting(preferring: entry.origin)
        let duration = loop.clock.now().duration(since: entry.started)
        entry.completion(HTTPResult(outcome: outcome, duration: duration, reusedConnection: reusedConnection))
    }

    /// Hands waiting transfers to libcurl while slots are free: the finished transfer's origin
    /// first, then whichever origin has waited longest.
    private func handWaiting(preferring preferred: String) {
        while running < maxRunning {
            var chosen: String?
            if let origin = origins[preferred], origin.waitingCount > 0, origin.running < maxPerOrigin {
                chosen = preferred
            } else {
                var oldest = UInt64.max
                for (key, origin) in origins where origin.waitingCount > 0 && origin.running < maxPerOrigin {
                    let head = origin.waiting[origin.next]
                    if head < oldest { (oldest, chosen) = (head, key) }
                }
            }
            guard let key = chosen, let tag = popWaiting(key) else { return }
            guard var entry = transfers[tag] else { continue }
            if let waitTimer = entry.waitTimer { loop.cancel(waitTimer) }
            entry.waitTimer = nil
            transfers[tag] = entry
            do {
                try hand(tag)
            } catch {
                let failure = TransportFailure(kind: .other, peer: entry.peer, detail: "\(error)")
                finish(tag, outcome: .failure(failure), reusedConnection: false)
            }
        }
    }

    /// The next live waiting tag of `key`, removed from its queue; skips tags that already left.
    private func popWaiting(_ key: String) -> UInt64? {
        guard var origin = origins[key] else { return nil }
        var found: UInt64?
        while origin.next < origin.waiting.count {
            let tag = origin.waiting[origin.next]
            origin.next += 1
            if let entry = transfers[tag], entry.handle == nil {
                found = tag
                origin.waitingCount -= 1
                break
            }
        }
        if origin.next > 1024, origin.next * 2 > origin.waiting.count {
            origin.waiting.removeFirst(origin.next)
            origin.next = 0
        }
        origins[key] = origin
        return found
    }

    /// The peer (`host:port`) and origin (`scheme://host:port`) of a request's URL.
    private static func parse(_ request: HTTPRequest) throws -> (peer: String, origin: String) {
        var https: Int32 = 0
        var code: Int32 = 0
        let peer = withUnsafeTemporaryAllocation(of: CChar.self, capacity: 320) { buffer -> String in
            guard let base = buffer.baseAddress else { return "" }
            base[0] = 0
            code = request.url.withCString { ccurl_parse_peer($0, base, buffer.count, &https) }
            return String(cString: base)
        }
        guard code == CURLUE_OK.rawValue else {
            let reason = String(cString: ccurl_url_strerror(CURLUcode(rawValue: UInt32(bitPattern: code))))
            throw HTTPEngineError("parse URL", request.redactedURL, detail: reason)
        }
        return (peer, (https != 0 ? "https://" : "http://") + peer)
    }

    private func takeTransfer(for request: HTTPRequest) throws -> OpaquePointer {
        if let transfer = pool.popLast() { return transfer }
        guard let transfer = ccurl_transfer_new() else {
            throw HTTPEngineError("curl_easy_init", request.redactedURL, detail: "out of memory")
        }
        return transfer
    }

    /// Returns a finished transfer (no longer in the multi handle) to the pool, or frees it.
    private func recycle(_ transfer: OpaquePointer) {
        ccurl_transfer_release(transfer)
        if pool.count < poolLimit {
            pool.append(transfer)
        } else {
            ccurl_transfer_free(transfer)
        }
    }

    /// Sets every option a request gets. Security-relevant ones are set on every transfer,
    /// whatever the request says: verification on, http/https only, no redirects, no proxy.
    private func configure(_ transfer: OpaquePointer, tag: UInt64, request: HTTPRequest, timeout: Duration) throws {
        let subject = request.redactedURL
        try check(ccurl_transfer_prepare(transfer, tag, request.maxReplyBytes), "prepare transfer", subject)
        let easy = ccurl_transfer_easy(transfer)
        func set(_ option: CURLoption, _ value: Int, _ name: String) throws {
            try check(ccurl_easy_set_long(easy, option, value), name, subject)
        }
        func set(_ option: CURLoption, _ value: String?, _ name: String) throws {
            let rc =
                value.map { $0.withCString { ccurl_easy_set_string(easy, option, $0) } }
                ?? ccurl_easy_set_string(easy, option, nil)
            try check(rc, name, subject)
        }

        try set(CURLOPT_URL, request.url, "CURLOPT_URL")
        try set(CURLOPT_NOSIGNAL, 1, "CURLOPT_NOSIGNAL")
        // Ending a transfer that is still resolving would otherwise join the resolver thread,
        // blocking the loop until getaddrinfo gives up; detach it instead.
        let quickExit = ccurl_easy_set_long(easy, CURLOPT_QUICK_EXIT, 1)
        if quickExit != CURLE_UNKNOWN_OPTION { try check(quickExit, "CURLOPT_QUICK_EXIT", subject) }
        try set(CURLOPT_PROTOCOLS_STR, "http,https", "CURLOPT_PROTOCOLS_STR")
        try set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https", "CURLOPT_REDIR_PROTOCOLS_STR")
        try set(CURLOPT_FOLLOWLOCATION, 0, "CURLOPT_FOLLOWLOCATION")
        try set(CURLOPT_PROXY, "", "CURLOPT_PROXY")
        try set(CURLOPT_SSL_VERIFYPEER, 1, "CURLOPT_SSL_VERIFYPEER")
        try set(CURLOPT_SSL_VERIFYHOST, 2, "CURLOPT_SSL_VERIFYHOST")
        if let caFile = request.caFile {
            // The private CA alone: the system's certificate directory must not widen it.
            try set(CURLOPT_CAINFO, caFile, "CURLOPT_CAINFO")
            try set(CURLOPT_CAPATH, nil, "CURLOPT_CAPATH")
        }
        try set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_1_1, "CURLOPT_HTTP_VERSION")
        try set(CURLOPT_PIPEWAIT, 0, "CURLOPT_PIPEWAIT")
        // What is left of the request's timeout (it may have waited for a connection slot).
        let timeoutMS = max(1, timeout.millisecondsRoundedUp)
        let connectTimeoutMS = min(timeoutMS, max(1, request.connectTimeout?.millisecondsRoundedUp ?? timeoutMS))
        try set(CURLOPT_TIMEOUT_MS, Int(timeoutMS), "CURLOPT_TIMEOUT_MS")
        try set(CURLOPT_CONNECTTIMEOUT_MS, Int(connectTimeoutMS), "CURLOPT_CONNECTTIMEOUT_MS")

        var sendsBody = false
        switch request.method {
        case .get:
            try set(CURLOPT_HTTPGET, 1, "CURLOPT_HTTPGET")
        case .post:
            sendsBody = true
        case .put, .delete:
            try set(CURLOPT_CUSTOMREQUEST, request.method.rawValue, "CURLOPT_CUSTOMREQUEST")
            sendsBody = request.method == .put || request.body != nil
        }
        if sendsBody {
            let body = request.body ?? []
            try set(CURLOPT_POST, 1, "CURLOPT_POST")
            try check(
                ccurl_easy_set_off_t(easy, CURLOPT_POSTFIELDSIZE_LARGE, curl_off_t(body.count)),
                "CURLOPT_POSTFIELDSIZE_LARGE", subject)
            // libcurl copies the body, so the array need not outlive this call.
            let rc = body.withUnsafeBytes { bytes in
                guard let base = bytes.baseAddress, !bytes.isEmpty else {
                    return ccurl_easy_set_string(easy, CURLOPT_COPYPOSTFIELDS, "")
                }
                return ccurl_easy_set_pointer(easy, CURLOPT_COPYPOSTFIELDS, UnsafeMutableRawPointer(mutating: base))
            }
            try check(rc, "CURLOPT_COPYPOSTFIELDS", subject)
        }

        var hasExpect = false
        for line in request.headers {
            if line.utf8.count >= 7, line.lowercased().hasPrefix("expect:") { hasExpect = true }
            guard line.withCString({ ccurl_transfer_add_header(transfer, $0) }) == 0 else {
                throw HTTPEngineError("add header", subject, detail: "out of memory")
            }
        }
        // libcurl would wait up to a second for `100 Continue` before sending a large body.
        if sendsBody, !hasExpect, ccurl_transfer_add_header(transfer, "Expect:") != 0 {
            throw HTTPEngineError("add header", subject, detail: "out of memory")
        }
        try check(ccurl_transfer_apply_headers(transfer), "CURLOPT_HTTPHEADER", subject)
    }

    private func check(_ rc: CURLcode, _ operation: String, _ subject: String) throws {
        guard rc == CURLE_OK else { throw HTTPEngineError(operation, subject, detail: Self.text(of: rc)) }
    }

    // MARK: libcurl callbacks

    /// CURLMOPT_SOCKETFUNCTION: libcurl wants `fd` watched for `what`, or no longer watched.
    private func curlWantsSocket(_ fd: Int32, _ what: Int32) -> Int32 {
        if what == Int32(CCURL_POLL_REMOVE) {
            if watched.remove(fd) != nil { loop.unwatch(fd) }
            return 0
        }
        let readable = what & Int32(CCURL_POLL_IN) != 0
        let writable = what & Int32(CCURL_POLL_OUT) != 0
        do {
            if watched.contains(fd) {
                try loop.update(fd, readable: readable, writable: writable)
            } else {
                try loop.watch(fd, readable: readable, writable: writable) { [unowned self] readiness in
                    self.socketReady(fd, readiness)
                }
                watched.insert(fd)
            }
            return 0
        } catch {
            lastInternalError = HTTPEngineError("watch socket", detail: "\(error)")
            return -1
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
        let deadline = loop.clock.now().advanced(by: .milliseconds(milliseconds))
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
        socketAction(Int32(CCURL_SOCKET_TIMEOUT), 0)
    }

    private func socketReady(_ fd: Int32, _ readiness: EventLoop.Readiness) {
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
            lastInternalError = HTTPEngineError("curl_multi_socket_action", detail: Self.text(of: rc))
        }
        completeFinished()
    }

    // MARK: Completion

    private func completeFinished() {
        var easy: UnsafeMutableRawPointer?
        var code = CURLE_OK
        while ccurl_multi_next_done(multi, &easy, &code) != 0 {
            guard let easy, let transfer = ccurl_transfer_of(easy) else { continue }
            let tag = ccurl_transfer_tag(transfer)
            guard let entry = transfers[tag], entry.handle == transfer else {
                // Not ours any more (cannot happen): detach it so libcurl forgets it.
                ccurl_multi_remove_handle(multi, easy)
                recycle(transfer)
                continue
            }
            // No new connect, yet connected to a port: a kept-alive connection was reused.
            var connects = 0
            var port = 0
            _ = ccurl_easy_get_long(easy, CURLINFO_NUM_CONNECTS, &connects)
            _ = ccurl_easy_get_long(easy, CURLINFO_PRIMARY_PORT, &port)
            let outcome = Self.outcome(of: transfer, code: code, entry: entry)
            finish(tag, outcome: outcome, reusedConnection: connects == 0 && port > 0)
        }
    }

    private static func outcome(of transfer: OpaquePointer, code: CURLcode, entry: Transfer) -> HTTPResult.Outcome {
        let easy = ccurl_transfer_easy(transfer)
        let abortReason = ccurl_transfer_abort_reason(transfer)
        let truncated = code == CURLE_WRITE_ERROR && abortReason == Int32(CCURL_ABORT_BODY_CAP)
        var status = 0
        _ = ccurl_easy_get_long(easy, CURLINFO_RESPONSE_CODE, &status)
        if (code == CURLE_OK || truncated) && status > 0 {
            var length = 0
            let bytes = ccurl_transfer_body(transfer, &length)
            let body = bytes.map { Array(UnsafeBufferPointer(start: $0, count: length)) } ?? []
            let retryAfter = ccurl_transfer_retry_after(transfer)
            return .response(
                status: status, body: body, truncated: truncated,
                retryAfter: retryAfter >= 0 ? .seconds(retryAfter) : nil)
        }
        let curlCode = Int(code.rawValue)
        switch abortReason {
        case Int32(CCURL_ABORT_HEADER_CAP):
            let detail = "reply headers exceed \(CCURL_MAX_HEADER_BYTES) bytes"
            return .failure(TransportFailure(kind: .tooLarge, peer: entry.peer, detail: detail, curlCode: curlCode))
        case Int32(CCURL_ABORT_NO_MEMORY):
            let detail = "out of memory buffering the reply"
            return .failure(TransportFailure(kind: .other, peer: entry.peer, detail: detail, curlCode: curlCode))
        default:
            let raw = String(cString: ccurl_transfer_error_text(transfer))
            let text = raw.isEmpty ? Self.text(of: code) : raw
            let detail = SecretScrubber(url: entry.request.url, headers: entry.request.headers).scrub(text)
            return .failure(
                TransportFailure(
                    kind: kind(of: code), peer: entry.peer, detail: "\(detail) (curl error \(curlCode))",
                    curlCode: curlCode))
        }
    }

    /// The broad cause of a libcurl failure.
    static func kind(of code: CURLcode) -> TransportFailure.Kind {
        switch code {
        case CURLE_COULDNT_RESOLVE_HOST, CURLE_COULDNT_RESOLVE_PROXY:
            return .resolve
        case CURLE_COULDNT_CONNECT:
            return .connect
        case CURLE_OPERATION_TIMEDOUT:
            return .timeout
        case CURLE_SSL_CONNECT_ERROR, CURLE_PEER_FAILED_VERIFICATION, CURLE_SSL_CERTPROBLEM, CURLE_SSL_CIPHER,
            CURLE_SSL_CACERT_BADFILE, CURLE_SSL_ISSUER_ERROR, CURLE_SSL_PINNEDPUBKEYNOTMATCH,
            CURLE_SSL_INVALIDCERTSTATUS, CURLE_SSL_CRL_BADFILE, CURLE_SSL_ENGINE_NOTFOUND,
            CURLE_SSL_ENGINE_SETFAILED, CURLE_SSL_ENGINE_INITFAILED, CURLE_SSL_SHUTDOWN_FAILED,
            CURLE_USE_SSL_FAILED:
            return .tls
        case CURLE_SEND_ERROR, CURLE_RECV_ERROR, CURLE_GOT_NOTHING, CURLE_PARTIAL_FILE, CURLE_HTTP2,
            CURLE_HTTP2_STREAM:
            return .sendReceive
        case CURLE_FILESIZE_EXCEEDED:
            return .tooLarge
        default:
            return .other
        }
    }

    private static func text(of code: CURLcode) -> String { String(cString: ccurl_easy_strerror(code)) }
    private static func text(of code: CURLMcode) -> String { String(cString: ccurl_multi_strerror(code)) }
}
