/// The adaptive limit of one origin's requests in flight (`Concurrency=adaptive`): in the
/// spirit of TCP's congestion control (slow start, then additive increase, multiplicative
/// decrease) with latency as a congestion signal besides losses, as the adaptive-concurrency
/// limiters of service proxies do (Netflix's AIMD and gradient limiters, Envoy's filter).
///
/// - It starts at its cap: the origin's share of the run's calls in flight, as with
///   `Concurrency=fixed`. Starting small (4, slow start) cost a fast server 0.37 s of a 2.1 s
///   run (nginx, 50 ms round trip, 10,000 calls: +17 %, measured), where a small server's
///   overflow is found within a round trip: SYNs its full accept queue dropped are seen waiting
///   (``connectionsLost(_:inFlight:)``) and the limit falls at once to what it did accept —
///   before the origin answered anything, after ``firstConnectTimeout``, ahead of the kernel's
///   retransmission of the whole first wave.
/// - **Growth.** Each success whose latency stays within ``tolerance`` (2×) of the lowest seen
///   (of requests on a new connection, or of those on a kept one: handshakes are no queue;
///   at least ``latencyFloor``) adds 1 while below the slow-start threshold — the limit doubles per round trip, so 4
///   reaches 256 in 6 round trips — and 1/limit above it (one per round trip).
/// - **Cuts.** A round whose fastest success was slower than ``tolerance`` × the lowest
///   latency (the server queues what it cannot serve: every request waits) cuts the limit to
///   `limit × tolerance × lowest / fastest`, at least half. A round is as many successes as
///   were in flight when it began; its fastest, not each reply, is the signal (as TCP BBR and
///   Vegas filter round-trip times by their minimum): a reply the client itself was slow to
///   read — 256 TLS handshakes of a first wave on one thread, HTTP/2 streams waiting on their
///   connection — is slow alone, not the round (issue 25: cutting on each reply cost such runs
///   20–30 %). A refused or reset connection, a connection whose server never acknowledged the
///   request (a full accept queue), a timeout and a 503 or 429 halve it. Each cut also sets
///   the slow-start threshold, so growth continues additively. At most one cut per round:
///   after a cut, the next needs as many completions as were in flight (the requests already
///   sent when the server was overrun report the same overrun).
/// - The limit stays within `1...cap` (``cap``: `MaxConnectionsPerHost=`, else the run's
///   `MaxConcurrentRequests=`).
///
/// It also keeps what the run report says of the origin (``Summary``). Pure: latencies are
/// given, no clock is read.
struct OriginLimiter {
    /// How much slower than the lowest latency a reply may be and still count as the server
    /// keeping up.
    static let tolerance = 2.0
    /// Latencies are compared from this up: below it, loopback's noise is no signal.
    static let latencyFloor = Duration.milliseconds(5)
    private static let latencyFloorMicroseconds = latencyFloor.microseconds

    /// Why the limit was cut.
    enum Signal: CaseIterable {
        /// A round of replies whose fastest was much slower than the lowest seen.
        case latency
        /// A request timed out, or was abandoned unanswered.
        case timeout
        /// A 503 or 429.
        case overloaded
        /// The connection was refused.
        case refused
        /// The connection was reset or dropped.
        case reset
        /// The server's TCP never acknowledged the request (its accept queue was full).
        case unacknowledged
    }

    /// What the run report says of an origin.
    struct Summary: Equatable {
        /// The highest limit reached.
        var highest: Int
        /// The limit at the end.
        var final: Int
        /// The lowest and the median latency of its successes (nil before the first).
        var lowest: Duration?
        var median: Duration?
        /// Cuts by cause.
        var cuts: [Signal: Int]
    }

    /// The hard cap.
    let cap: Int
    /// The limit now, with its fraction (additive increase adds 1/limit per success).
    private var window: Double
    private var threshold = Double.infinity
    private(set) var highest: Int
    // Latencies are kept in microseconds: `Duration`'s arithmetic goes through 128 bits, and
    // every reply of a run is compared here (issue 25: ~2,000 instructions a call).
    private var lowest: Int64?
    /// The lowest latency of requests on a new connection, and on a kept one.
    private var lowestNew: Int64?
    private var lowestReused: Int64?
    /// Latencies of successes, in microseconds (the median is taken once, at the end).
    private var latencies: [UInt32] = []
    /// The connect timeout for a request on a new connection: 4 × the lowest latency of a
    /// request on a new connection (handshakes and the reply included), at least 250 ms; nil
    /// before one was answered. A SYN or handshake dropped by a full accept queue is then tried
    /// again on a new connection well before the kernel's first retransmission (1 s, then 3 s
    /// …), and cuts the limit. Kept as that latency falls: it is read before every request.
    private(set) var connectTimeout: Duration?
    private var cuts: [Signal: Int] = [:]
    /// Completions still to come before another cut.
    private var holdOff = 0
    /// Successes still to come in this round, and the fastest of the round so far, as a ratio
    /// to the lowest latency of its kind.
    private var roundLeft = 0
    private var roundFastest = Double.infinity

    /// A limiter capped at `cap` requests in flight (at least 1), starting at `initial` (the cap
    /// if nil; a smaller start grows in slow start).
    init(cap: Int, initial: Int? = nil) {
        self.cap = max(1, cap)
        window = Double(max(1, min(initial ?? self.cap, self.cap)))
        highest = Int(window)
    }

    /// Connect timeouts a call retries after at most: then it leaves the connection to the kernel.
    static let connectRetries = 3

    /// How long a SYN may wait for its SYN-ACK before it counts as dropped by a full accept
    /// queue, while the origin has answered no request on a new connection (``connectTimeout``
    /// unknown): under the kernel's first retransmission (1 s), which would send every SYN of
    /// the first wave again at once — a fleet's daemons whose whole first wave was dropped
    /// (issue 25). A server more than 600 ms away costs a call at most ``connectRetries`` new
    /// handshakes before the kernel's own.
    static let firstConnectTimeout = Duration.milliseconds(600)

    /// How long a request's SYN may wait before it counts as lost at the accept queue.
    var synTimeout: Duration { connectTimeout ?? Self.firstConnectTimeout }

    /// ``connectTimeout`` for a lowest latency of `microseconds` on a new connection.
    static func connectTimeout(lowestNew microseconds: Int64) -> Duration {
        .microseconds(max(250_000, microseconds &* 4))
    }

    /// Requests of the origin in flight at most now.
    var limit: Int { max(1, min(cap, Int(window))) }

    /// A request answered in `latency` (any status but 503 and 429), on a connection kept from
    /// an earlier request or not (`reused`), with `inFlight` requests of the origin in flight
    /// when it completed.
    mutating func succeeded(latency: Duration, reused: Bool, inFlight: Int) {
        holdOff = max(0, holdOff - 1)
        let latency = max(0, latency.microseconds)
        latencies.append(UInt32(clamping: latency))
        lowest = min(lowest ?? latency, latency)
        let before = reused ? lowestReused : lowestNew
        if reused {
            lowestReused = min(latency, before ?? latency)
        } else if latency < before ?? .max {
            lowestNew = latency
            connectTimeout = Self.connectTimeout(lowestNew: latency)
        }
        let base = max(before ?? latency, Self.latencyFloorMicroseconds)
        let ratio = Double(latency) / Double(base)
        roundFastest = min(roundFastest, ratio)
        roundLeft -= 1
        if roundLeft <= 0 {
            let fastest = roundFastest
            roundFastest = .infinity
            roundLeft = max(1, inFlight)
            if fastest > Self.tolerance {
                cut(.latency, to: window * max(0.5, Self.tolerance / fastest), inFlight: inFlight)
                return
            }
        }
        guard ratio <= Self.tolerance else { return }
        // Growth only while the limit is used: a limit far above the calls in flight says nothing.
        guard inFlight + 1 >= limit else { return }
        window += window < threshold ? 1 : 1 / window
        window = min(window, Double(cap))
        highest = max(highest, limit)
    }

    /// A request failed with `signal` (never `latency`), with `inFlight` requests in flight.
    mutating func failed(_ signal: Signal, inFlight: Int) {
        holdOff = max(0, holdOff - 1)
        cut(signal, to: window / 2, inFlight: inFlight)
    }

    /// `count` of the origin's `inFlight` requests wait for a handshake or an acknowledgement
    /// the server's full accept queue dropped: the limit falls to the requests it did take (at
    /// least 1), once per round.
    mutating func connectionsLost(_ count: Int, inFlight: Int) {
        guard count > 0 else { return }
        cuts[.unacknowledged, default: 0] += count - 1
        holdOff = max(0, holdOff - count)
        cut(.unacknowledged, to: Double(max(1, inFlight - count)), inFlight: inFlight)
    }

    private mutating func cut(_ signal: Signal, to target: Double, inFlight: Int) {
        cuts[signal, default: 0] += 1
        guard holdOff == 0 else { return }
        window = max(1, min(window, target))
        threshold = window
        holdOff = max(inFlight, 1)
    }

    /// What the report says of the origin.
    var summary: Summary {
        var median: Duration?
        if !latencies.isEmpty {
            let sorted = latencies.sorted()
            median = .microseconds(sorted[sorted.count / 2])
        }
        return Summary(
            highest: highest, final: limit, lowest: lowest.map { .microseconds($0) }, median: median, cuts: cuts)
    }
}
