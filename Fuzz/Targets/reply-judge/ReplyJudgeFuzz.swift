import Foundation
import FuzzSupport
import SessionCleanup

/// The reply judge: any status and body a server may send.
///
/// Input: one byte choosing the status, the rule and truncation, then the body. Invariants
/// beyond "no crash": a reply counts as ended under `json-success` only if an independent JSON
/// parser reads it as an object whose `success` is `true` or a non-zero integer, written once;
/// the verdict does not change with whitespace around the body; no reason quotes the planted
/// secret (a server may echo the key).
enum ReplyJudgeFuzz {
    private static let statuses = [200, 201, 204, 299, 404, 410, 500, 503, 429, 408, 302, 400, 401, 100, 0, 999]

    static func run(_ input: [UInt8]) {
        guard let control = input.first else { return }
        let body = Array(input.dropFirst())
        let status = statuses[Int(control & 0x0F)]
        var endpoint = EndpointConfiguration(name: "fuzz", url: "http://127.0.0.1/{session}")
        endpoint.success = control & 0x10 == 0 ? .jsonSuccess : .anyTwoHundred
        let truncated = control & 0x20 != 0
        let verdict = judge(status, body, truncated, endpoint)

        if case .ended = verdict, endpoint.success == .jsonSuccess, !endpoint.goneStatuses.contains(status) {
            Fuzz.require(
                (200...299).contains(status) && !truncated, "ended on status \(status), truncated \(truncated)")
            Fuzz.require(oracleSaysSuccess(body), "ended, but the reply is not unambiguously a success")
        }
        if !truncated {
            let padded = Array(" \r\n\t".utf8) + body + Array("\n ".utf8)
            let again = judge(status, padded, false, endpoint)
            Fuzz.require(category(again) == category(verdict), "whitespace changed the verdict: \(verdict) → \(again)")
        }
        switch verdict {
        case .rejected(_, let reason), .failed(let reason), .retryable(let reason, _, _):
            Fuzz.require(!PlantedSecret.leaks(into: reason), "reason quotes the reply: \(reason)")
        case .ended:
            break
        }
    }

    /// The verdict without its text (a reason may name a byte offset).
    private static func category(_ verdict: ReplyJudge.Verdict) -> String {
        switch verdict {
        case .ended(let status): return "ended \(status)"
        case .rejected(let status, _): return "rejected \(status)"
        case .retryable(_, let status, _): return "retryable \(status ?? 0)"
        case .failed: return "failed"
        }
    }

    private static func judge(_ status: Int, _ body: [UInt8], _ truncated: Bool, _ endpoint: EndpointConfiguration)
        -> ReplyJudge.Verdict
    {
        let result = HTTPResult(
            outcome: .response(status: status, body: body, truncated: truncated, retryAfter: nil), duration: .zero,
            reusedConnection: false)
        return ReplyJudge.judge(result, endpoint: endpoint)
    }

    /// Foundation's reading: an object with `success` true or a non-zero integer, and the name
    /// `success` written once (counted in the raw text where a `:` follows it, so a string value
    /// `"success"` is not a name; an escaped spelling counts too).
    private static func oracleSaysSuccess(_ body: [UInt8]) -> Bool {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let value = object["success"] as? NSNumber
        else { return false }
        guard value.doubleValue != 0, value.doubleValue == value.doubleValue.rounded() else { return false }
        let plain = namesSpelledSuccess(in: body)
        return plain == 1 || (plain == 0 && body.contains(UInt8(ascii: "\\")))
    }

    /// How many times `"success"` stands in `body` as a member name: followed, after JSON
    /// whitespace, by a `:`.
    private static func namesSpelledSuccess(in body: [UInt8]) -> Int {
        let name = Array(#""success""#.utf8)
        guard body.count >= name.count else { return 0 }
        var count = 0
        for start in 0...(body.count - name.count) where body[start..<(start + name.count)].elementsEqual(name) {
            var next = start + name.count
            while next < body.count, [0x20, 0x09, 0x0A, 0x0D].contains(body[next]) { next += 1 }
            if next < body.count, body[next] == UInt8(ascii: ":") { count += 1 }
        }
        return count
    }
}
