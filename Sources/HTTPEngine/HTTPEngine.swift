import Basics
import CCurl
import EventLoop
import Glibc
import Vocabulary

/// Runs HTTP requests concurrently inside the daemon's ``EventLoop`` with libcurl's multi
/// interface (``CurlMulti``): the loop does the waiting, completions run as ordinary loop
/// handlers.
///
/// - Transfers and connections: see ``Limits``. Every transfer is admitted to a
///   ``TransferQueue`` and handed to libcurl once per loop turn, after every completion of that
///   turn has given its connection back — so a new transfer finds an idle connection to its
///   origin instead of opening one next to a connection about to be freed. A transfer's timeout
///   runs from ``start(_:completion:)``, waiting included.
/// - Protocols: `http` and `https` only; no redirects are followed (a 3xx is a status); no
///   proxy but the request's own, whatever the environment says. HTTP/2 where an `https` server
///   offers it by ALPN (see ``HTTPRequest/Version``), multiplexed: while an origin's first
///   connection is being set up, its other transfers wait to share it rather than each open
///   one; once an origin answered in HTTP/1.1, its transfers no longer wait (nor do they at
///   all for an origin in ``knownHTTP1Origins``).
/// - TLS: peer and host verification are always on, against the system store or the request's
///   `caFile` alone; sessions are cached across the engine's handles (CURLSHs, one per group of
///   8 origins: one share's cache holds 8 sessions), so a reconnect resumes its TLS session
///   however many origins the engine calls.
/// - Replies: at most `maxReplyBytes` of body are kept; a longer body is cut there and the
///   transfer stops (the connection is closed rather than drained). See ``HTTPResult``. Reply
///   buffers are wiped before they are reused or freed.
/// - Idle: once no transfer is active the engine has no descriptor and no timer registered with
///   the loop, so an idle daemon does not wake up for it. Kept-alive connections stay open but
///   unwatched until the next transfer uses (or discards) them.
/// - Secrets: the URL, headers, body and proxy credential never appear in anything the engine
///   reports; libcurl's error text is scrubbed of every part of the URL but the host (see
///   ``TransportFailure``).
///
/// Not thread-safe, like the loop: use it only on the loop's thread. Completions run on that
/// thread, never from inside a libcurl callback, and may start or cancel transfers.
package final class HTTPEngine {
    /// A reference, so updating one in `slots` never copies its request.
    private final class Transfer {
        /// Its tag (``TransferID/rawValue``): ``TransferTable`` slot and sequence number.
        let tag: UInt64
        let request: HTTPRequest
        let completion: (HTTPResult) -> Void
        let started: MonotonicInstant
        let deadline: MonotonicInstant
        let origin: HTTPOrigin
        let originNumber: Int
        /// Its profile's number in the engine's ``TransferPool``.
        let profile: Int
        // Unchecked exclusivity: see the engine's state below.
        /// Counted as running by the queue (it left the line).
        @exclusivity(unchecked) var running = false
        /// The `ccurl_transfer` running it, once handed to libcurl.
        @exclusivity(unchecked) var handle: OpaquePointer?
        /// While waiting for a slot: the loop timer that ends the wait at `deadline`.
        @exclusivity(unchecked) var waitTimer: EventLoop.TimerID?

        init(
            tag: UInt64, request: HTTPRequest, completion: @escaping (HTTPResult) -> Void, started: MonotonicInstant,
            origin: HTTPOrigin, originNumber: Int, profile: Int
        ) {
            self.tag = tag
            self.request = request
            self.completion = completion
            self.started = started
            deadline = started.advanced(by: request.timeout)
            self.origin = origin
            self.originNumber = originNumber
            self.profile = profile
        }
    }

    /// The loop the engine runs in.
    package let loop: EventLoop
    /// The engine's limits.
    package let limits: Limits
    private let multi: CurlMulti
    private let pool: TransferPool

    // The state every transfer touches a dozen times. Exclusivity is not checked at run time
    // for it (measured: ~17 dynamic checks per transfer, ~1,400 instructions of a stop run's
    // ~115,000 per call, issue 10): the engine is confined to the loop's thread, and no access
    // to one of these properties is open while code runs that could reach it again — every
    // mutation is a single statement, completions and libcurl run outside them (the queue's
    // `isWaiting` closure reads `transfers`, never `queue`).
    @exclusivity(unchecked) private var queue: TransferQueue
    @exclusivity(unchecked) private var transfers = TransferTable<Transfer>()
    /// The loop timer (due at once) that hands admitted transfers to libcurl after this turn's
    /// completions.
    @exclusivity(unchecked) private var handOff: EventLoop.TimerID?
    /// Started since the last hand-off: those still waiting after it get their wait timer.
    @exclusivity(unchecked) private var admitted: [UInt64] = []
    /// Whether origins share connections, and how many transfers each may run meanwhile.
    @exclusivity(unchecked) private var multiplexing: MultiplexPlanner
    /// By origin number: whether its last reply to an `auto` request over TLS was in HTTP/2 (nil:
    /// none yet), so ``versionsSeen`` changes only when it does.
    @exclusivity(unchecked) private var versionTold: [Bool?] = []

    /// HTTPS origins known, from an earlier run or an earlier daemon, to answer in HTTP/1.1: an
    /// origin's first `auto` transfer goes without the probe (see ``MultiplexPlanner``), so its
    /// others need not wait the TCP and TLS round trips. Only origins not met yet are affected.
    package var knownHTTP1Origins: Set<HTTPOrigin> = []

    /// The HTTPS origins whose replies to `auto` requests told their HTTP version, with the
    /// latest one: true for HTTP/2, false for HTTP/1.x. For the daemon to remember
    /// (``knownHTTP1Origins`` of a later engine). Only origins that requests named
    /// (``HTTPRequest/origin``): one the engine parses out of a URL may have a key in its host.
    package private(set) var versionsSeen: [HTTPOrigin: Bool] = [:]

    /// Runs on the loop's thread when a libcurl callback or `curl_multi_socket_action` failed
    /// (they cannot throw), with what failed. libcurl then gives up on every transfer it holds;
    /// they complete at once, failed. The daemon journals it.
    package var onInternalError: ((HTTPEngineError) -> Void)?

    /// Creates an engine that runs its transfers in `loop` within `limits`.
    ///
    /// libcurl is loaded (`dlopen`) by the first engine a process creates, not at exec time, so a
    /// process that never runs a transfer never maps it and its dependencies.
    ///
    /// - Throws: ``HTTPEngineError`` when libcurl cannot be loaded (the error names
    ///   `libcurl.so.4` and says why) or initialised.
    package init(loop: EventLoop, limits: Limits) throws {
        guard ccurl_load() == 0 else {
            throw HTTPEngineError("load \(CCURL_LIBRARY)", detail: String(cString: ccurl_load_error()))
        }
        let global = ccurl_global_init()
        guard global == CURLE_OK else {
            throw HTTPEngineError("curl_global_init", detail: String(cString: ccurl_easy_strerror(global)))
        }
        self.loop = loop
        self.limits = limits
        multi = try CurlMulti(loop: loop, limits: limits)
        pool = TransferPool(limit: limits.maxTransfers)
        queue = TransferQueue(maxRunning: limits.maxTransfers, maxPerOrigin: limits.maxTransfersPerOrigin)
        multiplexing = MultiplexPlanner(streamsPerConnection: limits.maxStreamsPerConnection)
        transfers.reserve(limits.maxTransfers)
        multi.onFinished = { [unowned self] easy, code in self.libcurlFinished(easy, code) }
        multi.onInternalError = { [unowned self] error in self.onInternalError?(error) }
        multi.onAbandoned = { [unowned self] in self.libcurlAbandonedEveryTransfer() }
        multi.onActionDone = { [unowned self] in
            if !self.multiplexing.awaited.isEmpty { self.checkAwaitedConnections() }
        }
    }

    deinit {
        cancelAll()
        if let handOff { loop.cancel(handOff) }
        // Easy handles go before the multi handle and its share (CurlMulti's deinit).
        pool.drain()
    }

    // MARK: Transfers

    /// Transfers started and not yet completed, waiting for a slot or running.
    package var activeCount: Int { transfers.count }

    /// Transfers started and not yet handed to libcurl.
    package var waitingCount: Int { transfers.count - queue.running }

    /// Descriptors the engine has registered with the loop (0 when idle).
    package var watchedDescriptorCount: Int { multi.watchedDescriptorCount }

    /// Whether the engine has a timer scheduled in the loop (false when idle).
    package var hasScheduledTimer: Bool {
        multi.hasScheduledTimer || handOff != nil || transfers.contains { $0.waitTimer != nil }
    }

    /// Starts `request`; `completion` runs exactly once, on the loop's thread, with the reply,
    /// a transport failure, or `.cancelled`. It never runs before this returns.
    ///
    /// - Throws: ``HTTPEngineError`` (naming the request's redacted URL) when the request's
    ///   limits or headers are invalid, or (for a request without an ``HTTPRequest/origin``) its
    ///   URL does not parse or is not `http`/`https`; `completion` is then never called. A
    ///   failure to set the request up in libcurl later is a completion with a failure.
    @discardableResult
    package func start(_ request: HTTPRequest, completion: @escaping (HTTPResult) -> Void) throws -> TransferID {
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
        let origin = try request.origin ?? Self.parseOrigin(request)
        let newNumber = queue.originCount
        let number = queue.originNumber(origin, cap: request.maxConnectionsPerHost)
        if number == newNumber { met(origin, number, request.version) }
        let profile = pool.profileNumber(for: request)
        let now = loop.clock.now()
        let tag = transfers.insert {
            Transfer(
                tag: $0, request: request, completion: completion, started: now, origin: origin, originNumber: number,
                profile: profile)
        }
        queue.admit(tag, origin: number)
        admitted.append(tag)
        scheduleHandOff()
        return TransferID(rawValue: tag)
    }

    /// A new origin got its number: what an earlier run told of it applies.
    private func met(_ origin: HTTPOrigin, _ number: Int, _ version: HTTPRequest.Version) {
        versionTold.append(nil)
        if version == .automatic, origin.isTLS, knownHTTP1Origins.contains(origin) {
            multiplexing.assumeHTTP1(number)
        }
    }

    /// Cancels a transfer: its completion runs with a `.cancelled` failure before this returns.
    /// Unknown or already completed transfers are ignored.
    package func cancel(_ id: TransferID) {
        guard let entry = transfers[id.rawValue] else { return }
        let failure = TransportFailure(
            kind: .cancelled, peer: entry.origin.peer, detail: "cancelled before it completed")
        finish(id.rawValue, .failure(failure))
    }

    /// Cancels every active transfer, in the order they were started; each completion runs with
    /// `.cancelled` before this returns. Transfers that those completions start are not cancelled.
    package func cancelAll() {
        for tag in transfers.tags.sorted() { cancel(TransferID(rawValue: tag)) }
    }

    // MARK: Hand-off

    private func scheduleHandOff() {
        guard handOff == nil else { return }
        handOff = loop.schedule(at: loop.clock.now()) { [unowned self] in self.handOver() }
    }

    /// Hands libcurl every admitted transfer a slot is free for.
    private func handOver() {
        handOff = nil
        while let next = queue.next(isWaiting: { self.transfers[$0]?.running == false }) {
            if let entry = transfers[next.tag] { entry.running = true }
            do {
                try hand(next.tag)
            } catch {
                guard let entry = transfers[next.tag] else { continue }
                finish(next.tag, .failure(TransportFailure(kind: .other, peer: entry.origin.peer, detail: "\(error)")))
            }
        }
        // Usually every transfer got a slot, and none needs a wait timer.
        for tag in admitted where transfers.count > queue.running {
            guard let entry = transfers[tag], !entry.running, entry.waitTimer == nil else { continue }
            entry.waitTimer = loop.schedule(at: entry.deadline) { [unowned self] in self.waitExpired(tag) }
        }
        admitted.removeAll(keepingCapacity: true)
    }

    /// Sets a transfer up in libcurl.
    private func hand(_ tag: UInt64) throws {
        guard let entry = transfers[tag] else { return }
        let subject = entry.request.redactedURL
        let share = try multi.share(forOrigin: entry.originNumber)
        let transfer = try pool.take(profile: entry.profile, share: share, subject: subject)
        ccurl_transfer_begin(transfer, tag, entry.request.maxReplyBytes)
        do {
            try TransferOptions.check(multi.prepare(transfer), "CURLOPT_OPENSOCKETFUNCTION", subject)
            let remaining = entry.deadline.microseconds(since: loop.clock.now())
            try TransferOptions.apply(
                entry.request, to: transfer, timeoutMicroseconds: remaining, pipeWait: waitsToMultiplex(tag, entry))
        } catch {
            pool.put(transfer, profile: entry.profile)
            throw error
        }
        let rc = multi.add(ccurl_transfer_easy(transfer))
        guard rc == CURLM_OK else {
            pool.put(transfer, profile: entry.profile)
            throw HTTPEngineError("curl_multi_add_handle", subject, detail: String(cString: ccurl_multi_strerror(rc)))
        }
        if let waitTimer = entry.waitTimer { loop.cancel(waitTimer) }
        entry.waitTimer = nil
        entry.handle = transfer
    }

    /// Whether a transfer about to be handed to libcurl should wait for a connection it can
    /// share (HTTP/2) rather than open one (see ``MultiplexPlanner``).
    private func waitsToMultiplex(_ tag: UInt64, _ entry: Transfer) -> Bool {
        let mayMultiplex: Bool
        switch entry.request.version {
        case .http1_1: mayMultiplex = false
        case .automatic: mayMultiplex = entry.origin.isTLS
        case .http2: mayMultiplex = true
        }
        let origin = entry.originNumber
        let wait = multiplexing.handing(
            tag, origin: origin, mayMultiplex: mayMultiplex, running: queue.running(origin))
        applyLimit(origin)
        return wait
    }

    /// After libcurl ran: openers whose connection is up let more transfers of their origin go,
    /// and so do probes whose connection is up when ALPN tells the version (one round trip
    /// before their reply would).
    private func checkAwaitedConnections() {
        for (origin, tag) in multiplexing.awaited {
            guard let handle = transfers[tag]?.handle, ccurl_transfer_connected(handle) != 0 else { continue }
            if multiplexing.isProbe(tag, of: origin) {
                let http2 = ccurl_transfer_alpn_http2(handle)
                guard http2 >= 0 else { continue }  // not told: its reply will tell
                multiplexing.probeConnected(tag, origin: origin, http2: http2 == 1)
            } else {
                multiplexing.connected(tag, origin: origin, opened: Self.openedConnection(handle))
            }
            applyLimit(origin)
        }
    }

    /// Whether a transfer opened a connection of its own rather than reusing one (libcurl may
    /// still find room on an open one for an opener).
    private static func openedConnection(_ handle: OpaquePointer) -> Bool {
        var connects = 0
        _ = ccurl_easy_get_long(ccurl_transfer_easy(handle), CURLINFO_NUM_CONNECTS, &connects)
        return connects > 0
    }

    private func applyLimit(_ origin: Int) {
        if queue.restrict(origin, to: multiplexing.limit(origin)) { scheduleHandOff() }
    }

    /// A waiting transfer's timeout expired before a slot freed up.
    private func waitExpired(_ tag: UInt64) {
        guard let entry = transfers[tag], !entry.running else { return }
        entry.waitTimer = nil
        let waited = loop.clock.now().duration(since: entry.started)
        let failure = TransportFailure(
            kind: .timeout, peer: entry.origin.peer,
            detail: "timed out after \(waited.millisecondsRoundedUp) ms waiting for a free connection")
        finish(tag, .failure(failure))
    }

    // MARK: Completion

    private func libcurlFinished(_ easy: UnsafeMutableRawPointer, _ code: CURLcode) {
        guard let transfer = ccurl_transfer_of(easy) else {
            multi.remove(easy)
            return
        }
        let tag = ccurl_transfer_tag(transfer)
        guard let entry = transfers[tag], entry.handle == transfer else {
            // Not ours any more (cannot happen): detach it so libcurl forgets it.
            multi.remove(easy)
            ccurl_transfer_free(transfer)
            return
        }
        var info = ccurl_finished_info()
        ccurl_transfer_finished_info(transfer, &info)
        let outcome = TransferOutcome.of(
            transfer, code: code, status: info.status, request: entry.request, origin: entry.origin)
        // No new connect, yet connected to a port: a kept-alive connection was reused.
        finish(
            tag, outcome, reusedConnection: info.connects == 0 && info.port > 0,
            httpVersion: TransferOutcome.httpVersion(info.http_version), opened: info.connects > 0)
    }

    /// libcurl failed every transfer it held after an internal failure and reports none of them
    /// done: each ends here, so none waits for a completion that never comes. With none left in
    /// it, libcurl takes new transfers again.
    private func libcurlAbandonedEveryTransfer() {
        for tag in transfers.tags.sorted() {
            // A completion run by an earlier `finish` may have ended or started others.
            guard let entry = transfers[tag], entry.handle != nil else { continue }
            let failure = TransportFailure(
                kind: .other, peer: entry.origin.peer,
                detail: "libcurl gave up on every transfer after an internal failure of the engine")
            finish(tag, .failure(failure))
        }
    }

    /// Ends a transfer wherever it is (waiting or running), frees its slot, and runs its
    /// completion.
    ///
    /// `opened`: whether the transfer opened a connection of its own (libcurl finished it and said
    /// so); nil: ask libcurl, if the transfer got as far as a connection.
    private func finish(
        _ tag: UInt64, _ outcome: HTTPResult.Outcome, reusedConnection: Bool = false, httpVersion: String? = nil,
        opened: Bool? = nil
    ) {
        guard let entry = transfers.remove(tag) else { return }
        let connected = entry.handle.map { ccurl_transfer_connected($0) != 0 } ?? false
        let opened = connected && (opened ?? entry.handle.map(Self.openedConnection) ?? false)
        multiplexing.finished(
            tag, origin: entry.originNumber, version: httpVersion, opened: opened,
            running: entry.running ? queue.running(entry.originNumber) : 0)
        if let httpVersion, entry.origin.isTLS, entry.request.version == .automatic, entry.request.origin != nil {
            told(httpVersion, entry.origin, entry.originNumber)
        }
        applyLimit(entry.originNumber)
        if let handle = entry.handle {
            multi.remove(ccurl_transfer_easy(handle))
            pool.put(handle, profile: entry.profile)
        }
        if let waitTimer = entry.waitTimer { loop.cancel(waitTimer) }
        if entry.running {
            queue.finished(entry.originNumber)
            if transfers.count > queue.running { scheduleHandOff() }
        }
        if transfers.isEmpty, let handOff {
            // Nothing left to hand over (the last waiting transfers were cancelled).
            loop.cancel(handOff)
            self.handOff = nil
            admitted.removeAll(keepingCapacity: true)
        }
        let duration = loop.clock.now().duration(since: entry.started)
        entry.completion(
            HTTPResult(
                outcome: outcome, duration: duration, reusedConnection: reusedConnection, httpVersion: httpVersion))
        // Idle once the completion started nothing new: no descriptor stays registered.
        if transfers.isEmpty { multi.releaseParked() }
    }

    /// A reply to an `auto` request over TLS said which HTTP version `origin` speaks.
    private func told(_ httpVersion: String, _ origin: HTTPOrigin, _ number: Int) {
        let http2 = httpVersion == "2"
        guard versionTold[number] != http2 else { return }
        versionTold[number] = http2
        versionsSeen[origin] = http2
    }

    // MARK: URLs

    /// The origin of a request's URL, parsed by libcurl's URL API (requests that bring their own
    /// origin skip this).
    private static func parseOrigin(_ request: HTTPRequest) throws -> HTTPOrigin {
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
        guard let colon = peer.lastIndex(of: ":"), let port = Int(peer[peer.index(after: colon)...]) else {
            throw HTTPEngineError("parse URL", request.redactedURL, detail: "no port")
        }
        return HTTPOrigin(isTLS: https != 0, host: String(peer[..<colon]).lowercased(), port: port)
    }

    /// The broad cause of a libcurl failure.
    static func kind(of code: CURLcode) -> TransportFailure.Kind { TransferOutcome.kind(of: code) }
}
