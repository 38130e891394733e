/// When the store hands what is staged to its writer: at once, or when its owner submits it. An
/// owner that turns an event loop sets ``waitsForOwner``, asks ``take()`` after its changes,
/// and submits at the end of the loop's turn, so that every change made in one turn shares one
/// commit. The store never calls its owner: the owner asks.
struct CommitRequest {
    /// Where the request is.
    enum State: Equatable {
        /// Nothing staged since the last submission.
        case idle
        /// Something was staged; the owner has not asked yet.
        case wanted
        /// The owner knows, and will submit.
        case taken
    }

    /// Whether a change waits for the owner's submission (otherwise the store commits at once).
    var waitsForOwner = false
    /// Where the request is.
    private(set) var state = State.idle

    /// Something was staged (or a commit finished): returns whether to submit at once.
    mutating func staged() -> Bool {
        guard waitsForOwner else { return true }
        if state == .idle { state = .wanted }
        return false
    }

    /// Whether the owner should schedule a submission: true once per submission, the first
    /// time it asks after something was staged.
    mutating func take() -> Bool {
        guard state == .wanted else { return false }
        state = .taken
        return true
    }

    /// The owner submitted: the next change asks again.
    mutating func submitted() { state = .idle }
}
