/// `ClientAuthentication=`: how an endpoint's `ClientCredential=` is sent (RFC 6749 §2.3.1).
package enum ClientAuthentication: String, Sendable, Equatable {
    /// HTTP Basic, each part form-urlencoded before base64 (what RFC 6749 asks for).
    case basic
    /// HTTP Basic without the form-encoding, for servers that do not decode it (e.g. glewlwyd).
    case basicRaw = "basic-raw"
    /// `client_id` and `client_secret` form fields added to a form-encoded body.
    case post
}
