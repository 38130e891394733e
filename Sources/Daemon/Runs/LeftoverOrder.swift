import Sessions
import Vocabulary

/// The order in which the leftover run after a start ends the sessions an earlier run could
/// not: those whose last call was `unconfirmed` first — their request was sent, the server may
/// well have ended them, and an endpoint's recipe (a `GoneStatus=`, RFC 7009's 200 for a
/// token it no longer knows) confirms that in one quick answer — then the rest, each group in
/// the store's order (registration).
enum LeftoverOrder {
    /// `sessions` (in the store's order) in the order the leftover run takes them.
    static func ordered(_ sessions: [Session]) -> [Session] {
        let unconfirmed = CallOutcome.unconfirmed(cause: "").word
        var first: [Session] = []
        var rest: [Session] = []
        rest.reserveCapacity(sessions.count)
        for session in sessions {
            if session.lastOutcome == unconfirmed { first.append(session) } else { rest.append(session) }
        }
        return first.isEmpty ? rest : first + rest
    }
}
