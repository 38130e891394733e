import Configuration
import Glibc
import JSON
import Vocabulary

/// Judges an end-session reply by the endpoint's rule: the reply is JSON and its `success` key
/// is `true` (or a non-zero integer), or, with `Success=2xx`, any 2xx status. A verdict that
/// deletes the session is never a guess: an ambiguous reply is `rejected` and the session kept.
package enum ReplyJudge {
    /// What a reply means for the call.
    package enum Verdict: Sendable, Equatable {
        /// Ended (including "already gone" statuses).
        case ended(status: Int)
        /// The server said no.
        case rejected(status: Int, reason: String)
        /// Worth another attempt (5xx, 429, 408, connection or timeout), optionally not before a delay.
        case retryable(cause: String, status: Int?, notBefore: Duration?)
        /// A failure another attempt would not fix (TLS, a reply too large to judge).
        case failed(cause: String)
    }

    /// The verdict for `result` from `endpoint`.
    package static func judge(_ result: HTTPResult, endpoint: EndpointConfiguration) -> Verdict {
        switch result.outcome {
        case .failure(let failure):
            switch failure.kind {
            case .resolve, .connect, .timeout, .sendReceive, .other:
                return .retryable(cause: failure.description, status: nil, notBefore: nil)
            case .tls, .tooLarge, .cancelled:
                return .failed(cause: failure.description)
            }
        case .response(let status, let body, let truncated, let retryAfter):
            if endpoint.goneStatuses.contains(status) { return .ended(status: status) }
            if status >= 500 || status == 429 || status == 408 {
                return .retryable(cause: "HTTP \(status)", status: status, notBefore: retryAfter)
            }
            guard (200...299).contains(status) else {
                return .rejected(status: status, reason: "HTTP \(status)")
            }
            switch endpoint.success {
            case .anyTwoHundred:
                return .ended(status: status)
            case .jsonSuccess:
                if truncated {
                    return .rejected(status: status, reason: "reply larger than \(body.count) bytes, not judged")
                }
                return judgeJSON(body, status: status)
            }
        }
    }

    /// The replies almost every server sends, recognised without reading them as JSON: each is
    /// valid JSON whose only `success` member is `true`.
    private static let plainSuccessReplies: [[UInt8]] = [
        Array(#"{"success":true}"#.utf8), Array(#"{"success": true}"#.utf8),
    ]

    /// A reply ends the session only when nothing about it is in doubt: it is strict JSON
    /// (``StrictJSON``: no member named twice, at any depth), a JSON object, and its one
    /// `success` member is `true` or a non-zero integer. Anything else — `false`, `0`, `"false"`,
    /// `"0"`, `null`, `1e-400`, `[true]`, `{}` — is `rejected` and the session is kept.
    private static func judgeJSON(_ body: [UInt8], status: Int) -> Verdict {
        if isPlainSuccess(body) { return .ended(status: status) }
        let document: StrictJSON.Document
        do {
            document = try StrictJSON.read(body)
        } catch {
            return .rejected(status: status, reason: "reply is not valid JSON (\(error))")
        }
        guard document.kind == .object else {
            return .rejected(status: status, reason: "reply is \(describe(document.kind)), not a JSON object")
        }
        guard let success = document.members.first(where: { $0.name == "success" }) else {
            return .rejected(status: status, reason: "reply has no \"success\" key")
        }
        switch success.kind {
        case .true, .integer(isZero: false):
            return .ended(status: status)
        case .false:
            return .rejected(status: status, reason: "reply says \"success\": false")
        case .integer(isZero: true):
            return .rejected(status: status, reason: "reply says \"success\": 0")
        case let kind:
            return .rejected(
                status: status, reason: "reply's \"success\" is \(describe(kind)), not true or a non-zero integer")
        }
    }

    /// Whether `body` is one of ``plainSuccessReplies``, JSON whitespace after it allowed:
    /// compared byte by byte (once per call of a run, so without generic sequence code).
    private static func isPlainSuccess(_ body: [UInt8]) -> Bool {
        body.withUnsafeBufferPointer { bytes in
            var end = bytes.count
            while end > 0 {
                let last = bytes[end - 1]
                guard last == 0x20 || last == 0x0A || last == 0x0D || last == 0x09 else { break }
                end -= 1
            }
            for reply in plainSuccessReplies where reply.count == end {
                let same = reply.withUnsafeBufferPointer { expected in
                    guard let expected = expected.baseAddress, let actual = bytes.baseAddress else { return false }
                    return memcmp(expected, actual, end) == 0
                }
                if same { return true }
            }
            return false
        }
    }

    /// `a string`, `null`, … (never the value itself: a reply may echo the key).
    private static func describe(_ kind: StrictJSON.Kind) -> String {
        switch kind {
        case .null: return "null"
        case .true, .false: return "a boolean"
        case .integer: return "an integer"
        case .fraction: return "a number with a fraction or exponent"
        case .string: return "a string"
        case .array: return "an array"
        case .object: return "an object"
        }
    }
}
