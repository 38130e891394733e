/// The adaptive limit of one origin's requests in flight (`Concurrency=adaptive`): in the
/// spirit of TCP's congestion control (slow start, then additive increase, multiplicative
/// decrease) with latency as a congestion signal besides losses, as the adaptive-concurrency
/// limiters of service proxies do (Netflix's AIMD and gradient limiters, Envoy's filter).
///
/// - It starts at ``initial`` (4): the accept queue of Python's `http.server` (5, so 6 on
///   Linux) or a small framework's default takes that many new connections at once without
///   dropping a SYN (measured: 8 at once cost the backlog-5 server a SYN retransmit, 1 s).
/// - **Growth.** Each success whose latency stays within ``tolerance`` (2×) of the lowest seen
///   (of requests on a new connection, or of those on a kept one: handshakes are no queue;
///   at least ``latencyFloor``) adds 1 while below the slow-start threshold — the limit doubles per round trip, so 4
///   reaches 256 in 6 round trips — and 1/limit above it (one per round trip).
/// - **Cuts.** A success slower than ``tolerance`` × the lowest latency (the server queues
///   what it cannot serve) cuts the limit to `limit × tolerance × lowest / latency`, at least
///   half; a refused or reset connection, a connection whose server never acknowledged the
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
    /// Where it starts.
    static let initial = 4
    /// How much slower than the lowest latency a reply may be and still count as the server
    /// keeping up.
    static let tolerance = 2.0
    /// Latencies are compared from this up: below it, loopback's noise is no signal.
    static let latencyFloor = Duration.milliseconds(5)

    /// Why the limit was cut.
    enum Signal: CaseIterable {
        /// A reply much slower than the lowest seen.
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
    private var lowest: Duration?
    /// The lowest latency of requests on a new connection, and on a kept one.
    private var lowestNew: Duration?
    private var lowestReused: Duration?
    /// Latencies of successes, in microseconds (the median is taken once, at the end).
    private var latencies: [UInt32] = []
    private var cuts: [Signal: Int] = [:]
    /// Completions still to come before another cut.
    private var holdOff = 0

    /// A limiter capped at `cap` requests in flight (at least 1).
    init(cap: Int) {
        self.cap = max(1, cap)
        window = Double(min(Self.initial, self.cap))
        highest = Int(window)
    }

    /// Requests of the origin in flight at most now.
    var limit: Int { max(1, min(cap, Int(window))) }

    /// A request answered in `latency` (any status but 503 and 429), on a connection kept from
    /// an earlier request or not (`reused`), with `inFlight` requests of the origin in flight
    /// when it completed.
    mutating func succeeded(latency: Duration, reused: Bool, inFlight: Int) {
        holdOff = max(0, holdOff - 1)
        latencies.append(UInt32(max(0, min(Self.seconds(latency) * 1e6, Double(UInt32.max)))))
        lowest = min(lowest ?? latency, latency)
        let before = reused ? lowestReused : lowestNew
        if reused {
            lowestReused = min(latency, before ?? latency)
        } else {
            lowestNew = min(latency, before ?? latency)
        }
        let base = max(before ?? latency, Self.latencyFloor)
        let ratio = Self.seconds(latency) / Self.seconds(base)
        if ratio > Self.tolerance {
            cut(.latency, to: window * max(0.5, Self.tolerance / ratio), inFlight: inFlight)
            return
        }
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
        return Summary(highest: highest, final: limit, lowest: lowest, median: median, cuts: cuts)
    }

    private static func seconds(_ duration: Duration) -> Double {
        let parts = duration.components
        return Double(parts.seconds) + Double(parts.attoseconds) * 1e-18
    }
}
