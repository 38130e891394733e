import Endpoints
import Vocabulary

/// Which of a run's calls to endpoints with `TokenURL=` may go now, per ``TokenSource``: with
/// the cached token, or parked while one grant obtains a token, or refused because the grant
/// failed in this run. Like ``OriginGate``, so that a token endpoint that fails costs one grant,
/// not one per call: every call waiting for it fails at once with the cause.
///
/// A source has no state until a call finds no usable token in the ``TokenCache``: that call
/// starts the grant (``Admission/obtain``) and is the first parked. The grant's end releases
/// the parked calls (``obtained(_:)``) or fails them (``failed(_:cause:)``); a failed source
/// refuses every later call of the run. Calls are the run's slots; the gate does no I/O.
struct TokenGate {
    /// What a call may do now.
    enum Admission {
        /// Go with this token (of this generation in the cache).
        case go(AccessToken, generation: Int)
        /// No token: start the grant; the call is parked until it ends.
        case obtain
        /// A grant is under way: the call is parked until it ends.
        case park
        /// The grant failed in this run: fail the call with this cause.
        case refuse(cause: String)
    }

    private enum State {
        case obtaining(transfer: TransferID?, parked: [Int])
        case failed(cause: String)
    }

    private var sources: [TokenSource: State] = [:]
    /// Calls parked for a token, every source together: the run counts them as in flight.
    private(set) var parked = 0

    /// Whether the call in `slot` may go now with a token of `source` from `cache`.
    mutating func admit(_ slot: Int, source: TokenSource, cache: TokenCache) -> Admission {
        switch sources[source] {
        case .failed(let cause)?:
            return .refuse(cause: cause)
        case .obtaining(let transfer, var parked)?:
            if !parked.contains(slot) {
                parked.append(slot)
                self.parked += 1
            }
            sources[source] = .obtaining(transfer: transfer, parked: parked)
            return .park
        case nil:
            if let cached = cache.token(for: source) { return .go(cached.token, generation: cached.generation) }
            sources[source] = .obtaining(transfer: nil, parked: [slot])
            parked += 1
            return .obtain
        }
    }

    /// The grant of `source` is in flight as `transfer`.
    mutating func started(_ source: TokenSource, transfer: TransferID) {
        guard case .obtaining(_, let parked)? = sources[source] else { return }
        sources[source] = .obtaining(transfer: transfer, parked: parked)
    }

    /// The grant of `source` gave a token (now in the cache): returns the calls to queue again.
    mutating func obtained(_ source: TokenSource) -> [Int] {
        guard case .obtaining(_, let parked)? = sources[source] else { return [] }
        sources[source] = nil
        self.parked -= parked.count
        return parked
    }

    /// The grant of `source` failed with `cause`: returns the calls to fail with it; later
    /// calls of the run are refused with it.
    mutating func failed(_ source: TokenSource, cause: String) -> [Int] {
        guard case .obtaining(_, let parked)? = sources[source] else { return [] }
        sources[source] = .failed(cause: cause)
        self.parked -= parked.count
        return parked
    }

    /// The grant of `source` was not made (too little budget was left): returns the parked
    /// calls; the next call of the source may try again.
    mutating func notMade(_ source: TokenSource) -> [Int] {
        guard case .obtaining(_, let parked)? = sources[source] else { return [] }
        sources[source] = nil
        self.parked -= parked.count
        return parked
    }

    /// The grants in flight, to cancel when the run ends early.
    var transfers: [TransferID] {
        sources.values.compactMap {
            if case .obtaining(let transfer?, _) = $0 { return transfer }
            return nil
        }
    }
}
