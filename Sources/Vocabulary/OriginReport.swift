/// What a run saw of one origin (scheme, host and port) whose calls had an adaptive limit
/// (`Concurrency=adaptive`): how far the limit went and why it was cut — so that a report of
/// calls `expired` says whether the server was the bottleneck.
package struct OriginReport: Sendable, Equatable {
    /// `scheme://host:port` (never a path: keys are in paths).
    package var origin: String
    /// The highest limit of calls in flight reached, and the limit at the end.
    package var highestLimit: Int
    package var finalLimit: Int
    /// The lowest and the median latency of the requests it answered (nil: none answered).
    package var lowestLatency: Duration?
    package var medianLatency: Duration?
    /// Signals that cut the limit, each counted (a cut applies at most once per round):
    /// requests timed out or abandoned unanswered, 503 and 429 replies, refused connections,
    /// reset or dropped connections, requests the server's TCP never acknowledged (a full
    /// accept queue), and rounds of replies whose fastest was more than twice as slow as the
    /// lowest (``slowRounds``).
    package var timeouts = 0
    package var overloaded = 0
    package var refused = 0
    package var resets = 0
    package var unacknowledged = 0
    package var slowRounds = 0

    /// Creates a report of `origin`.
    package init(origin: String, highestLimit: Int, finalLimit: Int, lowestLatency: Duration?, medianLatency: Duration?)
    {
        self.origin = origin
        self.highestLimit = highestLimit
        self.finalLimit = finalLimit
        self.lowestLatency = lowestLatency
        self.medianLatency = medianLatency
    }

    /// `http://idp:8080: limit reached 64 (16 at the end); latency lowest 1.2 ms, median 40 ms;
    /// cut for 3 timeouts, 12 503/429 replies, 0 refused, 0 reset, 0 unacknowledged, 5 slow rounds`.
    package var text: String {
        var text = "\(origin): limit reached \(highestLimit) (\(finalLimit) at the end)"
        if let lowestLatency, let medianLatency {
            text += "; latency lowest \(lowestLatency.humanReadable), median \(medianLatency.humanReadable)"
        } else {
            text += "; no reply"
        }
        text +=
            "; cut for \(timeouts) timeouts, \(overloaded) 503/429 replies, \(refused) refused, \(resets) reset, "
            + "\(unacknowledged) unacknowledged, \(slowRounds) slow rounds"
        return text
    }
}
