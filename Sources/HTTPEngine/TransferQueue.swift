import Vocabulary

/// Which of an engine's transfers may run now: every transfer is admitted here, in start order,
/// and leaves when a slot is free for it — one of `maxRunning` in all and one of its origin's
/// cap (``HTTPEngine/Limits/maxTransfersPerOrigin``, or lower if a request asked for less).
///
/// Pure bookkeeping, no I/O. Transfers are named by tag and origins by a small number
/// (``originNumber(_:cap:)``), so the queues hold plain integers. A transfer that leaves while
/// waiting (cancelled, timed out) is not searched for: `isWaiting` skips it when it comes up.
struct TransferQueue {
    private struct Origin {
        var running = 0
        var cap: Int
        /// A temporary lower limit (``restrict(_:to:)``).
        var restriction: Int?
        var effectiveCap: Int { min(cap, restriction ?? cap) }
        /// Waiting because this origin was at its cap when they came up, in start order.
        var blocked: [UInt64] = []
        var blockedHead = 0
    }

    /// Transfers running at most, in all.
    let maxRunning: Int
    private let defaultCap: Int
    private var numbers: [HTTPOrigin: Int] = [:]
    private var lastOrigin: (origin: HTTPOrigin, number: Int)?
    private var origins: [Origin] = []
    /// Admitted and not yet run, in start order, each with its origin's number.
    private var admitted: [(tag: UInt64, origin: Int)] = []
    private var admittedHead = 0
    /// Origins that freed a slot while they had blocked transfers; the most recent is served first.
    private var unblocked: [Int] = []

    /// Transfers running now.
    private(set) var running = 0

    /// Origins numbered so far: the next new origin gets this number.
    var originCount: Int { origins.count }

    /// A queue for at most `maxRunning` transfers at once, `maxPerOrigin` per origin.
    init(maxRunning: Int, maxPerOrigin: Int) {
        self.maxRunning = max(1, maxRunning)
        defaultCap = max(1, min(maxPerOrigin, self.maxRunning))
    }

    /// The number standing for `origin`; `cap` lowers its limit (never raises it).
    mutating func originNumber(_ origin: HTTPOrigin, cap: Int?) -> Int {
        let number: Int
        if let last = lastOrigin, last.origin == origin {
            // Calls often come in runs of one origin: no hashing for those.
            number = last.number
        } else if let known = numbers[origin] {
            number = known
        } else {
            number = origins.count
            numbers[origin] = number
            origins.append(Origin(cap: defaultCap))
        }
        if let cap, cap >= 1, cap < origins[number].cap { origins[number].cap = cap }
        lastOrigin = (origin, number)
        return number
    }

    /// Appends a transfer to the end of the line.
    mutating func admit(_ tag: UInt64, origin: Int) {
        admitted.append((tag, origin))
    }

    /// The next transfer that may run now, taken out of the line and counted as running; nil
    /// when none may (all slots taken, or every waiting transfer's origin is at its cap).
    /// Transfers blocked at an origin that has since freed a slot go first (that origin's oldest;
    /// the origin that freed one most recently first), then the line in start order.
    mutating func next(isWaiting: (UInt64) -> Bool) -> (tag: UInt64, origin: Int)? {
        guard running < maxRunning else { return nil }
        while let number = unblocked.last {
            var origin = origins[number]
            guard origin.running < origin.effectiveCap, origin.blockedHead < origin.blocked.count else {
                unblocked.removeLast()
                continue
            }
            let tag = origin.blocked[origin.blockedHead]
            origin.blockedHead += 1
            if origin.blockedHead == origin.blocked.count {
                origin.blocked.removeAll(keepingCapacity: true)
                origin.blockedHead = 0
            }
            origins[number] = origin
            guard isWaiting(tag) else { continue }
            started(number)
            return (tag, number)
        }
        while admittedHead < admitted.count {
            let entry = admitted[admittedHead]
            admittedHead += 1
            compactAdmitted()
            guard isWaiting(entry.tag) else { continue }
            if origins[entry.origin].running < origins[entry.origin].effectiveCap {
                started(entry.origin)
                return entry
            }
            origins[entry.origin].blocked.append(entry.tag)
        }
        return nil
    }

    /// A transfer of `origin` stopped running: its slots are free again.
    mutating func finished(_ origin: Int) {
        running -= 1
        origins[origin].running -= 1
        if origins[origin].blockedHead < origins[origin].blocked.count { unblocked.append(origin) }
    }

    /// Lets no more than `limit` transfers of `origin` run (below its cap) until lifted with nil —
    /// while the engine finds out whether the origin can share connections among transfers.
    /// Returns true when that let a blocked transfer of the origin become ready to run.
    @discardableResult
    mutating func restrict(_ origin: Int, to limit: Int?) -> Bool {
        // Twice per transfer, mostly with nothing to change (an origin that never multiplexes).
        guard origins[origin].restriction != limit else { return false }
        let before = origins[origin].effectiveCap
        origins[origin].restriction = limit
        guard origins[origin].effectiveCap > before, origins[origin].blockedHead < origins[origin].blocked.count,
            origins[origin].running < origins[origin].effectiveCap
        else { return false }
        unblocked.append(origin)
        return true
    }

    /// Transfers of `origin` running now.
    func running(_ origin: Int) -> Int { origins[origin].running }

    private mutating func started(_ origin: Int) {
        running += 1
        origins[origin].running += 1
    }

    private mutating func compactAdmitted() {
        if admittedHead == admitted.count {
            admitted.removeAll(keepingCapacity: true)
            admittedHead = 0
        } else if admittedHead > 1024, admittedHead * 2 > admitted.count {
            admitted.removeFirst(admittedHead)
            admittedHead = 0
        }
    }
}
