import Basics
import Configuration

/// How a ``ClientCredential`` goes on the wire (RFC 6749 §2.3.1).
extension ClientCredential {
    /// The `Authorization: Basic …` header line: `id:secret` in base64, each part first
    /// form-urlencoded (RFC 6749 Appendix B) unless `encodingParts` is false (`basic-raw`).
    package func basicHeader(encodingParts: Bool) -> String {
        let pair =
            encodingParts ? Self.formEncoded(id) + ":" + Self.formEncoded(secret) : id + ":" + secret
        return "Authorization: Basic " + Base64.encode(pair.utf8)
    }

    /// `client_id=…&client_secret=…`, form-encoded, for a form body (`post`).
    package var formFields: String {
        "client_id=" + Self.formEncoded(id) + "&client_secret=" + Self.formEncoded(secret)
    }

    /// `application/x-www-form-urlencoded` encoding: RFC 3986 unreserved characters as they
    /// are, a space as `+`, every other byte as `%XX`.
    package static func formEncoded(_ text: String) -> String {
        EndSessionCall.percentEncoded(text).replacingText("%20", with: "+")
    }
}
