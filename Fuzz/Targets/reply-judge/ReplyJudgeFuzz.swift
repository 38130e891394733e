import Configuration
import Endpoints
import Foundation
import FuzzSupport
import Vocabulary

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
    /// `success` written once among the top-level object's members (counted in the raw text, so
    /// a string value `"success"` and a nested object's own `success` are not counted; an escaped
    /// spelling counts too).
    private static func oracleSaysSuccess(_ body: [UInt8]) -> Bool {
        let object =
            (try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any])
            ?? (try? JSONSerialization.jsonObject(with: Data(withRepresentableNumbers(body))) as? [String: Any])
        guard let object, let value = object["success"] as? NSNumber else { return false }
        guard value.doubleValue != 0, value.doubleValue == value.doubleValue.rounded() else { return false }
        let plain = topLevelNamesSpelledSuccess(in: body)
        return plain == 1 || (plain == 0 && body.contains(UInt8(ascii: "\\")))
    }

    /// `body` with every well-formed JSON number outside strings replaced by one Foundation can
    /// represent and of the same kind for the judge: a fraction or exponent by `0.5`, a non-zero
    /// integer by `1`, zero by `0`. RFC 8259 lets a reader limit the range of numbers and
    /// Foundation refuses `1e+4007` or a 400-digit integer anywhere in the text, while the judge
    /// reads past them; what is malformed is left as it is, for Foundation to refuse.
    private static func withRepresentableNumbers(_ body: [UInt8]) -> [UInt8] {
        var result: [UInt8] = []
        var index = 0
        while index < body.count {
            let byte = body[index]
            if byte == UInt8(ascii: "\"") {
                var end = index + 1
                while end < body.count, body[end] != UInt8(ascii: "\"") {
                    end += body[end] == UInt8(ascii: "\\") ? 2 : 1
                }
                end = min(end + 1, body.count)
                result += body[index..<end]
                index = end
            } else if byte == UInt8(ascii: "-") || isDigit(byte) {
                var end = index + 1
                while end < body.count, isDigit(body[end]) || "+-.eE".utf8.contains(body[end]) { end += 1 }
                let token = Array(body[index..<end])
                result += replacement(forNumber: token) ?? token
                index = end
            } else {
                result.append(byte)
                index += 1
            }
        }
        return result
    }

    /// The stand-in for `token` if it is a JSON number (`-?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?`).
    private static func replacement(forNumber token: [UInt8]) -> [UInt8]? {
        var index = token.first == UInt8(ascii: "-") ? 1 : 0
        func digits() -> Int {
            let start = index
            while index < token.count, isDigit(token[index]) { index += 1 }
            return index - start
        }
        let whole = index
        let wholeDigits = digits()
        guard wholeDigits > 0, wholeDigits == 1 || token[whole] != UInt8(ascii: "0") else { return nil }
        var isInteger = true
        if index < token.count, token[index] == UInt8(ascii: ".") {
            index += 1
            guard digits() > 0 else { return nil }
            isInteger = false
        }
        if index < token.count, token[index] == UInt8(ascii: "e") || token[index] == UInt8(ascii: "E") {
            index += 1
            if index < token.count, token[index] == UInt8(ascii: "+") || token[index] == UInt8(ascii: "-") {
                index += 1
            }
            guard digits() > 0 else { return nil }
            isInteger = false
        }
        guard index == token.count else { return nil }
        if !isInteger { return Array("0.5".utf8) }
        return token[whole] == UInt8(ascii: "0") ? Array("0".utf8) : Array("1".utf8)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) }

    /// How many times `"success"` stands in `body` as a member name of the outermost object:
    /// a string at depth 1 (inside the first `{`, outside any nested `{` or `[`) followed, after
    /// JSON whitespace, by a `:`. Strings are skipped whole, escapes included, so brackets and
    /// quotes inside them do not count.
    private static func topLevelNamesSpelledSuccess(in body: [UInt8]) -> Int {
        let name = Array("success".utf8)
        var count = 0
        var depth = 0
        var index = 0
        while index < body.count {
            switch body[index] {
            case UInt8(ascii: "{"), UInt8(ascii: "["):
                depth += 1
                index += 1
            case UInt8(ascii: "}"), UInt8(ascii: "]"):
                depth -= 1
                index += 1
            case UInt8(ascii: "\""):
                let start = index + 1
                var end = start
                while end < body.count, body[end] != UInt8(ascii: "\"") {
                    end += body[end] == UInt8(ascii: "\\") ? 2 : 1
                }
                index = end + 1
                guard depth == 1, end <= body.count, body[start..<end].elementsEqual(name) else {
                    continue
                }
                var next = index
                while next < body.count, [0x20, 0x09, 0x0A, 0x0D].contains(body[next]) { next += 1 }
                if next < body.count, body[next] == UInt8(ascii: ":") { count += 1 }
            default:
                index += 1
            }
        }
        return count
    }
}
