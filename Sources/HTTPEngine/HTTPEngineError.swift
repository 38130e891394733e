/// A request the engine could not start, or an engine it could not create. Like every message
/// the engine produces, it names the request by its redacted URL only.
package struct HTTPEngineError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What failed, e.g. `"curl_multi_init"` or `"parse URL"`.
    package let operation: String
    /// What it was applied to: the request's redacted URL, or empty for the engine itself.
    package let subject: String
    /// libcurl's (or the engine's) explanation; never contains a URL, header or body.
    package let detail: String

    /// Creates an error for `operation` on `subject`.
    package init(_ operation: String, _ subject: String = "", detail: String) {
        self.operation = operation
        self.subject = subject
        self.detail = detail
    }

    /// `parse URL for https://auth.example/user/…/endsession: Bad scheme`.
    package var description: String {
        let target = subject.isEmpty ? "" : " for \(subject)"
        return "HTTP engine: \(operation)\(target): \(detail)"
    }
}
