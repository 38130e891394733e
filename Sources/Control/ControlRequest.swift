import Sessions

// The control protocol: one JSON object per line (UTF-8, ending in "\n") in each direction; every
// request gets exactly one response, in order; a connection may carry several requests.
// docs/control-protocol.md is the description for application authors; keep the two in step.

/// One request from a client.
package enum ControlRequest: Sendable, Equatable, CustomStringConvertible {
    /// What `end` applies to.
    package enum EndTarget: Sendable, Equatable {
        /// One session, by id.
        case session(id: String)
        /// Every session the caller may see.
        case all
    }

    /// `{"op":"register","key":K,"endpoints":[…],"label":L?}`: keep a session to end later;
    /// answered with its new `id`.
    case register(key: SessionKey, endpoints: [String], label: String?)
    /// `{"op":"unregister","id":ID}`: forget a session without ending it.
    case unregister(id: String)
    /// `{"op":"list"}`: the caller's sessions (root: all), never their keys.
    case list
    /// `{"op":"status"}`: the daemon's state, counts and last run report.
    case status
    /// `{"op":"end","id":ID}` or `{"op":"end","all":true}`: end sessions now.
    case end(EndTarget)
    /// Read the configuration again and apply it, or keep the old one and say why (root and the
    /// daemon's own user only; `systemctl reload` runs it).
    case reload
    /// `{"op":"report","run_id":RUN_ID?}`: what a run did (default: the last stop run), as the
    /// caller may see it.
    case report(runID: String?)

    /// Longest key accepted, in UTF-8 bytes.
    package static let maxKeyBytes = 4096
    /// Longest label accepted, in UTF-8 bytes.
    package static let maxLabelBytes = 256
    /// Most endpoints one registration may name.
    package static let maxEndpoints = 64
    /// Longest endpoint name or session id accepted, in bytes.
    package static let maxNameBytes = 64

    /// The request's `op`.
    package var op: String {
        switch self {
        case .register: return "register"
        case .unregister: return "unregister"
        case .list: return "list"
        case .status: return "status"
        case .end: return "end"
        case .reload: return "reload"
        case .report: return "report"
        }
    }

    /// A safe summary for logs: ids, endpoints and labels, never the key.
    package var description: String {
        switch self {
        case .register(_, let endpoints, let label):
            let named = label.map { ", label \"\($0)\"" } ?? ""
            return "register(endpoints: \(endpoints.joined(separator: ","))\(named), key: <redacted>)"
        case .unregister(let id): return "unregister(\(id))"
        case .list: return "list"
        case .status: return "status"
        case .end(.session(let id)): return "end(\(id))"
        case .end(.all): return "end(all)"
        case .reload: return "reload"
        case .report(let runID): return "report(\(runID ?? "last stop run"))"
        }
    }
}
