import Basics
import CCurl
import EventLoop
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
///
/// Its jobs, one file each: starting and admitting transfers (`HTTPEngine+Start`), handing them
/// to libcurl (`+HandOff`), sharing connections while learning each origin's HTTP version
/// (`+Multiplexing`, ``OriginVersions``), completions and their results (`+Completion`),
/// cancellation (`+Cancellation`), and libcurl's internal failures (`+InternalErrors`).
package final class HTTPEngine {
    /// The loop the engine runs in.
    let loop: EventLoop
    let multi: CurlMulti
    let pool: TransferPool

    // The state every transfer touches a dozen times. Exclusivity is not checked at run time
    // for it (measured in issue 10: ~17 dynamic checks per transfer, ~1,400 instructions per
    // call of the stop run): the engine is confined to the loop's thread, and no access
    // to one of these properties is open while code runs that could reach it again — every
    // mutation is a single statement, completions and libcurl run outside them (the queue's
    // `isWaiting` closure reads `transfers`, never `queue`).
    @exclusivity(unchecked) var queue: TransferQueue
    @exclusivity(unchecked) var transfers = TransferTable<ActiveTransfer>()
    /// The loop timer (due at once) that hands admitted transfers to libcurl after this turn's
    /// completions.
    @exclusivity(unchecked) var handOff: EventLoop.TimerID?
    /// Started since the last hand-off: those still waiting after it get their wait timer.
    @exclusivity(unchecked) var admitted: [UInt64] = []
    /// Whether origins share connections, and how many transfers each may run meanwhile.
    @exclusivity(unchecked) var multiplexing: MultiplexPlanner
    /// The HTTP versions of the origins, known before and told by replies.
    @exclusivity(unchecked) var versions = OriginVersions()

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
        multi = try CurlMulti(loop: loop, limits: limits)
        pool = TransferPool(limit: limits.maxTransfers)
        queue = TransferQueue(maxRunning: limits.maxTransfers, maxPerOrigin: limits.maxTransfersPerOrigin)
        multiplexing = MultiplexPlanner(streamsPerConnection: limits.maxStreamsPerConnection)
        transfers.reserve(limits.maxTransfers)
        multi.owner = self
    }

    deinit {
        cancelAll()
        if let handOff { loop.cancel(handOff) }
        // Easy handles go before the multi handle and its share (CurlMulti's deinit).
        pool.drain()
    }

    // MARK: HTTP versions

    /// HTTPS origins known, from an earlier run or an earlier daemon, to answer in HTTP/1.1: an
    /// origin's first `auto` transfer goes without the probe (see ``MultiplexPlanner``), so its
    /// others need not wait the TCP and TLS round trips. Only origins not met yet are affected.
    package var knownHTTP1Origins: Set<HTTPOrigin> {
        get { versions.knownHTTP1 }
        set { versions.knownHTTP1 = newValue }
    }

    /// The HTTPS origins whose replies to `auto` requests told their HTTP version, with the
    /// latest one: true for HTTP/2, false for HTTP/1.x. For the daemon to remember
    /// (``knownHTTP1Origins`` of a later engine). Only origins that requests named
    /// (``HTTPRequest/origin``): one the engine parses out of a URL may have a key in its host.
    package var versionsSeen: [HTTPOrigin: Bool] { versions.seen }

    // MARK: State

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
}

/// The engine hears what libcurl did: ``curlFinished(_:_:)`` in `HTTPEngine+Completion`,
/// ``curlActionDone()`` in `+Multiplexing`, the failures in `+InternalErrors`.
extension HTTPEngine: CurlMultiOwner {}
