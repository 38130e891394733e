import Endpoints
import Foundation
import FuzzSupport
import Vocabulary

/// A token endpoint's reply to a client-credentials grant (``TokenReply``): any status and body.
///
/// Input: one byte choosing the status and truncation, then the body. Invariants beyond "no
/// crash": a token comes only from a complete 200 reply that Foundation's parser reads as an
/// object whose `access_token` is that same string and whose `token_type` is Bearer in some case,
/// and it is printable ASCII without spaces (a header can carry it); whitespace around the body
/// changes nothing; no failure quotes the planted secret (a server may echo anything).
enum TokenReplyFuzz {
    private static let statuses = [200, 200, 200, 200, 200, 200, 201, 204, 400, 401, 403, 429, 500, 503, 302, 0]
    private static let source = TokenSource(
        url: "https://idp.example/token", clientID: "fuzz", scope: "revoke", audience: nil)

    static func run(_ input: [UInt8]) {
        guard let control = input.first else { return }
        let body = Array(input.dropFirst())
        let status = statuses[Int(control & 0x0F)]
        let truncated = control & 0x10 != 0
        let verdict = read(status, body, truncated)
        switch verdict {
        case .success(let token):
            Fuzz.require(status == 200 && !truncated, "a token from status \(status), truncated \(truncated)")
            Fuzz.require(oracleToken(body) == token.value, "Foundation reads no such Bearer access_token")
            Fuzz.require(
                !token.value.isEmpty && token.value.utf8.allSatisfy { $0 > 0x20 && $0 < 0x7F },
                "a token no header can carry")
            Fuzz.require(token.lifetime.map { $0 >= .zero } ?? true, "a negative lifetime")
        case .failure(let failure):
            Fuzz.require(failure.description.hasPrefix("token-failed: "), "a failure without its prefix")
            Fuzz.require(!PlantedSecret.leaks(into: failure.description), "the failure quotes the reply: \(failure)")
        }
        if !truncated {
            let padded = Array(" \r\n\t".utf8) + body + Array("\n ".utf8)
            let again = read(status, padded, false)
            Fuzz.require(
                (try? again.get()) == (try? verdict.get()), "whitespace changed the verdict: \(verdict) → \(again)")
        }
    }

    private static func read(_ status: Int, _ body: [UInt8], _ truncated: Bool) -> Result<
        AccessToken, TokenReply.Failure
    > {
        let result = HTTPResult(
            outcome: .response(status: status, body: body, truncated: truncated, retryAfter: nil), duration: .zero,
            reusedConnection: false)
        return TokenReply.accessToken(from: result, source: source)
    }

    /// Foundation's reading: the `access_token` string of an object whose `token_type` is a
    /// string that is `bearer` in lower case; nil otherwise.
    private static func oracleToken(_ body: [UInt8]) -> String? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(body)) as? [String: Any],
            let token = object["access_token"] as? String, let type = object["token_type"] as? String,
            type.lowercased() == "bearer"
        else { return nil }
        return token
    }
}
