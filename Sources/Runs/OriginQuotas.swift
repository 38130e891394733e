/// Each origin's quota of a run's calls in flight: its part of the run's concurrency in
/// proportion to its calls, rounded up — `⌈concurrency × calls / all calls⌉` — so 256 calls in
/// flight over 100 origins of 100 calls are at most 3 per origin.
///
/// Why: an HTTP/1.1 call uses one connection, and libcurl opens a connection to an origin
/// whenever more of its calls are in flight than it has connections idle. Taken in line order,
/// the calls in flight per origin drift — 256 over 100 origins are 2 or 3 per origin, *which*
/// origins have 3 moves on as calls finish, and timing (TLS handshakes finishing in bunches)
/// piles more on some — so every origin ends up with the connections of its busiest moment.
/// Held to its quota, an origin reuses its connections, and the origins run out of calls at
/// about the same time.
///
/// Quotas move when an origin has no call left to start and the quotas of the origins that
/// still have some add up to less than the concurrency: an origin with more calls waiting than
/// its quota then gets its part of the concurrency in proportion to its calls waiting (a slow
/// origin gets the slots the fast ones have finished with). So a call waits while slots are
/// free only when its origin has its quota in flight and no more calls waiting than that
/// quota — at the end of the run, where the origin's next free connection (within a round
/// trip) comes sooner than a new connection's handshake would. Pure bookkeeping; origins are
/// small numbers.
struct OriginQuotas {
    /// Calls in flight the run allows in all (`MaxConcurrentRequests=`).
    let concurrency: Int
    private var waiting: [Int]
    private var running: [Int]
    private var quota: [Int]
    private var totalWaiting: Int
    /// The quotas of the origins with calls waiting, added up.
    private var activeQuota: Int
    /// Each origin's adaptive limit (``OriginLimiter``); `Int.max` for an origin without one.
    private(set) var limits: [Int]

    /// Quotas for origins `0..<waiting.count`, with `waiting[origin]` calls each to start.
    init(concurrency: Int, waiting: [Int]) {
        self.concurrency = max(1, concurrency)
        self.waiting = waiting
        running = Array(repeating: 0, count: waiting.count)
        totalWaiting = waiting.reduce(0, +)
        quota = waiting.map { [concurrency = self.concurrency, totalWaiting] in
            Self.part(of: concurrency, $0, of: totalWaiting)
        }
        activeQuota = zip(quota, waiting).reduce(0) { $0 + ($1.1 > 0 ? $1.0 : 0) }
        limits = Array(repeating: Int.max, count: waiting.count)
    }

    /// `⌈whole × count / total⌉`, at least 1.
    private static func part(of whole: Int, _ count: Int, of total: Int) -> Int {
        guard total > 0 else { return whole }
        return max(1, (whole * count + total - 1) / total)
    }

    /// Whether one more call of `origin` may start within its quota (it has a call waiting).
    func hasRoom(_ origin: Int) -> Bool {
        waiting[origin] > 0 && running[origin] < quota[origin] && running[origin] < limits[origin]
    }

    /// Holds `origin`'s calls in flight to `limit` (its adaptive limit), besides its quota.
    mutating func limit(_ origin: Int, to limit: Int) { limits[origin] = max(1, limit) }

    /// A waiting call of `origin` was taken from the line (to start, park or end).
    mutating func taken(_ origin: Int) {
        guard waiting[origin] > 0 else { return }
        waiting[origin] -= 1
        totalWaiting -= 1
        guard waiting[origin] == 0 else { return }
        activeQuota -= quota[origin]
        guard activeQuota < concurrency else { return }
        for other in waiting.indices where waiting[other] > quota[other] {
            let raised = Self.part(of: concurrency, waiting[other], of: totalWaiting)
            guard raised > quota[other] else { continue }
            activeQuota += raised - quota[other]
            quota[other] = raised
        }
    }

    /// A request of `origin` started.
    mutating func started(_ origin: Int) { running[origin] += 1 }

    /// A request of `origin` ended.
    mutating func stopped(_ origin: Int) { running[origin] = max(0, running[origin] - 1) }

    /// Requests of `origin` in flight.
    func inFlight(_ origin: Int) -> Int { running[origin] }

    /// Calls of `origin` in flight at most now.
    func quota(of origin: Int) -> Int { quota[origin] }
}
