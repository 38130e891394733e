import FoundationEssentials

/// Judges an end-session reply by the endpoint's rule, mirroring the original contract: the
/// reply is JSON and its `success` key is truthy (or, with `Success=2xx`, any 2xx status).
public enum ReplyJudge {
    /// What a reply means for the call.
    public enum Verdict: Sendable, Equatable {
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
    public static func judge(_ result: HTTPResult, endpoint: EndpointConfiguration) -> Verdict {
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

    /// The replies almost every server sends, recognised without a JSON decoder (which costs
    /// more per call than the rest of the judging): each is valid JSON with a truthy `success`.
    private static let plainSuccessReplies: [[UInt8]] = [
        Array(#"{"success":true}"#.utf8), Array(#"{"success": true}"#.utf8),
    ]

    private static func judgeJSON(_ body: [UInt8], status: Int) -> Verdict {
        var end = body.count
        while end > 0, [0x20, 0x0A, 0x0D, 0x09].contains(body[end - 1]) { end -= 1 }
        if plainSuccessReplies.contains(where: { $0.count == end && body.starts(with: $0) }) {
            return .ended(status: status)
        }
        guard let reply = try? JSONDecoder().decode(SuccessReply.self, from: Data(body)) else {
            return .rejected(status: status, reason: "reply is not a JSON object")
        }
        switch reply.success {
        case .none: return .rejected(status: status, reason: "reply has no \"success\" key")
        case .some(let value) where value.isTruthy: return .ended(status: status)
        case .some: return .rejected(status: status, reason: "reply says \"success\": false")
        }
    }

    /// Only the `success` key is read; other keys are ignored whatever their type.
    private struct SuccessReply: Decodable {
        let success: JSONScalar?

        enum CodingKeys: String, CodingKey { case success }

        init(from decoder: any Decoder) throws {
            let container = try decoder.container(keyedBy: CodingKeys.self)
            guard container.contains(.success) else {
                success = nil
                return
            }
            success = try container.decode(JSONScalar.self, forKey: .success)
        }
    }

    /// A JSON value judged for truth as JavaScript would: false, 0, "" and null are false;
    /// everything else (objects and arrays included) is true.
    private enum JSONScalar: Decodable {
        case bool(Bool)
        case number(Double)
        case string(String)
        case null
        case composite

        init(from decoder: any Decoder) throws {
            let container = try decoder.singleValueContainer()
            if container.decodeNil() {
                self = .null
            } else if let value = try? container.decode(Bool.self) {
                self = .bool(value)
            } else if let value = try? container.decode(Double.self) {
                self = .number(value)
            } else if let value = try? container.decode(String.self) {
                self = .string(value)
            } else {
                self = .composite
            }
        }

        var isTruthy: Bool {
            switch self {
            case .bool(let value): return value
            case .number(let value): return value != 0
            case .string(let value): return !value.isEmpty
            case .null: return false
            case .composite: return true
            }
        }
    }
}
