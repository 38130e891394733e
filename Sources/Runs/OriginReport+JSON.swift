import JSON
import Vocabulary

extension OriginReport {
    /// An origin's adaptive limit (``OriginReport``): `{"origin":…,"limit_highest":…,
    /// "limit_final":…,"latency_lowest_usec":…,"latency_median_usec":…,"cuts":{"timeout":…,
    /// "overloaded":…,"refused":…,"reset":…,"unacknowledged":…,"slow":…}}` (no latencies when
    /// it answered nothing).
    package var json: JSONValue {
        var object: [String: JSONValue] = [
            "origin": .string(origin),
            "limit_highest": .integer(Int64(highestLimit)),
            "limit_final": .integer(Int64(finalLimit)),
            "cuts": .object([
                "timeout": .integer(Int64(timeouts)), "overloaded": .integer(Int64(overloaded)),
                "refused": .integer(Int64(refused)), "reset": .integer(Int64(resets)),
                "unacknowledged": .integer(Int64(unacknowledged)),
                "slow": .integer(Int64(slowRounds)),
            ]),
        ]
        if let lowest = lowestLatency { object["latency_lowest_usec"] = .integer(lowest.microseconds) }
        if let median = medianLatency { object["latency_median_usec"] = .integer(median.microseconds) }
        return .object(object)
    }

    /// The report `json` describes (as ``json`` writes it); nil when a member is missing or of the
    /// wrong type.
    package init?(json: JSONValue) {
        guard case .object(let object) = json, case .string(let origin)? = object["origin"],
            case .integer(let highest)? = object["limit_highest"], case .integer(let final)? = object["limit_final"],
            case .object(let cuts)? = object["cuts"]
        else { return nil }
        func duration(_ name: String) -> Duration? {
            if case .integer(let value)? = object[name] { return .microseconds(value) }
            return nil
        }
        func count(_ name: String) -> Int {
            if case .integer(let value)? = cuts[name] { return Int(value) }
            return 0
        }
        self.init(
            origin: origin, highestLimit: Int(highest), finalLimit: Int(final),
            lowestLatency: duration("latency_lowest_usec"), medianLatency: duration("latency_median_usec"))
        timeouts = count("timeout")
        overloaded = count("overloaded")
        refused = count("refused")
        resets = count("reset")
        unacknowledged = count("unacknowledged")
        slowRounds = count("slow")
    }
}
