/// `Preset=`: the settings a well-known end-session protocol needs, so that an operator does not
/// have to know how each answers (and a reply is judged truthfully). A preset only fills in what
/// the `[Endpoint]` section does not set itself: any key written there wins.
package enum EndpointPreset: String, Sendable, Equatable, CaseIterable {
    /// RFC 7009 token revocation: `POST` with `token={session}` (form-encoded), ended on any 2xx
    /// (the server answers 200 with an empty body for a revoked *and* an unknown token, RFC 7009
    /// §2.2), and no gone statuses: a 404 there means a wrong URL, not a token already ended.
    case rfc7009
    /// OpenStack Keystone, a token revoking itself: `DELETE` with `X-Auth-Token` and
    /// `X-Subject-Token` both `{session}`, ended on 204; 401 (the token can no longer
    /// authenticate: revoked, expired or unknown) and 404 mean already ended.
    case keystone

    /// Fills in `endpoint`'s settings whose keys its section did not assign.
    func apply(to endpoint: inout ConfigSectionSettings<EndpointConfiguration>) {
        let assigned = Set(endpoint.assigned.keys).union(endpoint.refused)
        var settings = endpoint.settings
        switch self {
        case .rfc7009:
            if !assigned.contains("Method") { settings.method = "POST" }
            if !assigned.contains("Body") { settings.body = "token={session}" }
            if !assigned.contains("Success") { settings.success = .anyTwoHundred }
            if !assigned.contains("GoneStatus") { settings.goneStatuses = [] }
        case .keystone:
            if !assigned.contains("Method") { settings.method = "DELETE" }
            if !assigned.contains("Success") { settings.success = .anyTwoHundred }
            if !assigned.contains("GoneStatus") { settings.goneStatuses = [401, 404] }
            for name in ["X-Auth-Token", "X-Subject-Token"]
            where !settings.headers.contains(where: { $0.lowercased().hasPrefix(name.lowercased() + ":") }) {
                settings.headers.append("\(name): {session}")
            }
        }
        endpoint.settings = settings
    }
}
