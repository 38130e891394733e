import Basics

/// `check-config`'s warnings for endpoints that look like a well-known protocol but judge its
/// replies by rules that would misread them (issue 24: an RFC 7009 revocation answered 200 with
/// an empty body was called "rejected", the session kept and called again after every restart).
enum EndpointProtocolCheck {
    /// The warnings for `endpoint`, at `file`:`line` (its `URL=`).
    static func warnings(for endpoint: EndpointConfiguration, file: String, line: Int) -> [ConfigurationProblem] {
        guard endpoint.preset == nil else { return [] }
        let path = self.path(of: endpoint.url)
        if looksLikeRevocation(endpoint, path: path) {
            var misread: [String] = []
            if endpoint.success == .jsonSuccess {
                misread.append(
                    "judges replies by Success=json-success while a revocation endpoint answers 200 with an empty "
                        + "body, which would be called rejected and the session kept")
            }
            if endpoint.goneStatuses.contains(404) {
                misread.append(
                    "counts 404 as gone (GoneStatus=) while a 404 there means a wrong URL, which would call every "
                        + "session ended although nothing was revoked")
            }
            guard !misread.isEmpty else { return [] }
            return [
                ConfigurationProblem(
                    file: file, line: line,
                    "[Endpoint] '\(endpoint.name)' looks like RFC 7009 token revocation, but it "
                        + misread.joined(separator: "; and ")
                        + "; set Preset=rfc7009 (Success=2xx, no GoneStatus=)")
            ]
        }
        if path.hasSuffix("/v3/auth/tokens"), endpoint.success == .jsonSuccess || !endpoint.goneStatuses.contains(401) {
            return [
                ConfigurationProblem(
                    file: file, line: line,
                    "[Endpoint] '\(endpoint.name)' looks like Keystone's token revocation but does not treat its "
                        + "answers as Keystone means them (204: ended; 401 for a token already revoked or "
                        + "expired: gone); set Preset=keystone (or Success=2xx and GoneStatus=401 404)")
            ]
        }
        return []
    }

    /// An RFC 7009 endpoint: its path ends in `/revoke`, `/revoke_token` or `/revocation`
    /// (with or without a slash), or its form body sends `token={session}`.
    private static func looksLikeRevocation(_ endpoint: EndpointConfiguration, path: String) -> Bool {
        let trimmed = path.hasSuffix("/") ? String(path.dropLast()) : path
        if ["/revoke", "/revoke_token", "/revocation"].contains(where: { trimmed.hasSuffix($0) }) { return true }
        guard let body = endpoint.body, !(body.hasPrefix("{") || body.hasPrefix("[")) else { return false }
        return body.split(separator: "&").contains { $0 == "token={session}" }
    }

    /// The URL's path, lower-cased, without the query or fragment.
    private static func path(of url: String) -> String {
        let lower = url.lowercased()
        guard let scheme = lower.rangeOfText("://") else { return lower }
        let rest = lower[scheme.upperBound...]
        let afterHost = rest.drop { $0 != "/" && $0 != "?" && $0 != "#" }
        return String(afterHost.prefix { $0 != "?" && $0 != "#" })
    }
}
