import JSON
import Vocabulary

/// Reads a token endpoint's reply to a client-credentials grant (RFC 6749 §5.1): HTTP 200 with
/// a JSON object (``StrictJSON``) whose `access_token` is a non-empty string of printable ASCII,
/// whose `token_type` is `Bearer` (in any case), and whose `expires_in`, if present, is a
/// non-negative number of seconds. Anything else is a ``Failure`` naming what was wrong and
/// where — never the token, the body or the client's secret: nothing of the reply is repeated
/// but an error reply's `error` code when it is one the RFCs define (``knownErrorCodes``).
package enum TokenReply {
    /// Reply bytes kept at most: a token reply is small; a bigger one is cut and refused.
    package static let maxBytes = 64 * 1024

    /// Why no token came from a grant: `token-failed: 401 from https://idp.example:443 (invalid_client)`.
    package struct Failure: Error, Equatable, Sendable, CustomStringConvertible {
        /// What went wrong, without the `token-failed:` prefix.
        package let cause: String
        /// Whether the token endpoint could not be reached at all (DNS, connection): then it is
        /// no use asking again in this run.
        package let unreachable: Bool

        /// A failure for `cause`.
        package init(_ cause: String, unreachable: Bool = false) {
            self.cause = cause
            self.unreachable = unreachable
        }

        /// `token-failed: ` and the cause: what each call waiting for the token fails with.
        package var description: String { "token-failed: " + cause }
    }

    /// The token in `result`, the reply of a grant sent to the token endpoint `source`.
    package static func accessToken(from result: HTTPResult, source: TokenSource) -> Result<AccessToken, Failure> {
        let origin = source.origin
        let body: [UInt8]
        let truncated: Bool
        switch result.outcome {
        case .failure(let failure):
            switch failure.kind {
            case .resolve, .connect:
                return .failure(Failure("\(origin) unreachable (\(failure))", unreachable: true))
            case .timeout:
                return .failure(Failure("\(origin) did not answer in time (\(failure))"))
            default:
                return .failure(Failure("no reply from \(origin) (\(failure))"))
            }
        case .response(let status, let replyBody, let cut, _):
            guard status == 200 else {
                let code = errorCode(in: replyBody).map { " (\($0))" } ?? ""
                return .failure(Failure("\(status) from \(origin)\(code)"))
            }
            body = replyBody
            truncated = cut
        }
        guard !truncated else { return .failure(Failure("the reply from \(origin) is over \(maxBytes) bytes")) }
        let document: JSONValue
        do {
            document = try StrictJSON.parse(body, maxDepth: 8)
        } catch {
            return .failure(Failure("the reply from \(origin) is not JSON (\(error))"))
        }
        guard case .object = document else {
            return .failure(Failure("the reply from \(origin) is not a JSON object"))
        }
        guard case .string(let token)? = document["access_token"], !token.isEmpty else {
            return .failure(Failure("the reply from \(origin) has no access_token string"))
        }
        guard token.utf8.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(Failure("the access_token from \(origin) is not printable ASCII without spaces"))
        }
        guard case .string(let type)? = document["token_type"], type.lowercased() == "bearer" else {
            return .failure(Failure("the reply from \(origin) has no token_type Bearer"))
        }
        var lifetime: Duration?
        switch document["expires_in"] {
        case nil, .null?:
            lifetime = nil
        case .integer(let seconds)? where seconds >= 0:
            lifetime = .seconds(seconds)
        case .string(let text)? where text.utf8.count <= 12 && (Int64(text).map { $0 >= 0 } ?? false):
            // Some providers send the number as a string; it must still be one.
            lifetime = .seconds(Int64(text) ?? 0)
        default:
            return .failure(Failure("the reply from \(origin) has an expires_in that is not a number of seconds"))
        }
        return .success(AccessToken(value: token, lifetime: lifetime))
    }

    /// The error codes a token endpoint's error reply may carry (RFC 6749 §5.2, and §4.1.2.1's
    /// that some providers use at the token endpoint too, RFC 8707's `invalid_target`): the only
    /// text of a reply a failure repeats — a known word, so nothing a server echoes (a secret
    /// included) can reach the journal through it.
    package static let knownErrorCodes: Set<String> = [
        "invalid_request", "invalid_client", "invalid_grant", "unauthorized_client", "unsupported_grant_type",
        "invalid_scope", "access_denied", "server_error", "temporarily_unavailable", "invalid_target",
    ]

    /// The `error` member of a JSON error reply, when it is one of ``knownErrorCodes``; nil otherwise.
    static func errorCode(in body: [UInt8]) -> String? {
        guard let document = try? StrictJSON.parse(body, maxDepth: 8), case .string(let code)? = document["error"],
            knownErrorCodes.contains(code)
        else { return nil }
        return code
    }
}
