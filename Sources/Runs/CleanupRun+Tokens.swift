import Endpoints
import Vocabulary

/// How a run's calls to endpoints with `TokenURL=` get their access token: from the
/// ``TokenCache`` when it holds a usable one; otherwise the first call starts a
/// client-credentials grant through the same transport as every call and parks, and the calls
/// after it park behind it (``TokenGate``). The grant runs inside the budget, with the
/// endpoint's `TimeoutSec=` capped by the time remaining; its token releases the parked calls,
/// its failure fails them all at once with the cause (`token-failed: …`), and later calls of the
/// run needing that token fail with it too. A call answered 401 goes once more with a fresh token.
extension CleanupRun {
    /// Starts the call in `slot` with its endpoint's access token, parks it until a grant gives
    /// one, or fails it because the grant failed in this run.
    func startWithToken(_ slot: Int, _ endSession: EndSessionCall, _ grant: ClientCredentialsGrant) {
        switch tokenGate.admit(slot, source: grant.source, cache: tokenCache) {
        case .go(let token, let generation):
            schedule[slot].tokenGeneration = generation
            start(slot, endSession, token: token.value)
        case .park:
            schedule[slot].state = .parked
        case .obtain:
            schedule[slot].state = .parked
            obtainToken(grant, limit: endSession.template.configuration.timeout)
        case .refuse(let cause):
            finish(slot, .failed(cause: cause))
        }
    }

    /// After a reply to the call in `slot`: when it was a 401 to a call that carried an obtained
    /// token, and the call has not gone again for that already, its token is dropped from the
    /// cache (unless a newer one replaced it) and the call is queued again — its next admission
    /// gets a fresh token. True when that happened.
    func retriesWithFreshToken(_ slot: Int, _ result: HTTPResult) -> Bool {
        guard result.status == 401, let grant = schedule[slot].endSession.template.grant,
            let generation = schedule[slot].tokenGeneration, !schedule[slot].retriedWithFreshToken
        else { return false }
        schedule[slot].retriedWithFreshToken = true
        schedule[slot].tokenGeneration = nil
        tokenCache.discard(grant.source, generation: generation)
        schedule.requeue(slot)
        return true
    }

    /// Starts `grant`'s request, its timeout `limit` capped by the budget.
    private func obtainToken(_ grant: ClientCredentialsGrant, limit: Duration) {
        let source = grant.source
        guard let timeout = budget.requestTimeout(limit: limit, margin: settings.margin) else {
            for slot in tokenGate.notMade(source) where schedule[slot].state.isParked {
                finish(slot, Self.budgetOutcome(attempts: schedule[slot].attempts))
            }
            return
        }
        let cappedByBudget = timeout < limit
        do {
            let id = try transport.start(grant.request(timeout: timeout)) { [weak self] result in
                self?.grantCompleted(source, result, cappedByBudget: cappedByBudget)
            }
            tokenGate.started(source, transfer: id)
        } catch {
            tokenFailed(source, TokenReply.Failure("could not start the request to \(source.origin): \(error)"))
        }
    }

    /// The grant of `source` completed with `result`.
    private func grantCompleted(_ source: TokenSource, _ result: HTTPResult, cappedByBudget: Bool) {
        // Cancelled: the run ended early (expiry, abandon) and recorded its calls itself.
        guard !finished, result.failure?.kind != .cancelled else { return }
        if let failure = result.failure, failure.kind == .timeout, cappedByBudget {
            // The budget ran out, not the token endpoint's patience: as for a call, not a failure.
            for slot in tokenGate.notMade(source) where schedule[slot].state.isParked {
                finish(slot, Self.budgetOutcome(attempts: schedule[slot].attempts))
            }
        } else {
            switch TokenReply.accessToken(from: result, source: source) {
            case .success(let token):
                tokenCache.store(token, for: source)
                outcomes.journal.tokenObtained(
                    source, lifetime: token.lifetime, validity: TokenCache.validity(of: token.lifetime))
                for slot in tokenGate.obtained(source) where schedule[slot].state.isParked { schedule.requeue(slot) }
            case .failure(let failure):
                tokenFailed(source, failure)
            }
        }
        pump()
        finishIfDone()
        quietIfIdle()
    }

    /// The grant of `source` failed: every call waiting for it fails with the cause.
    private func tokenFailed(_ source: TokenSource, _ failure: TokenReply.Failure) {
        let parked = tokenGate.failed(source, cause: failure.description).filter { schedule[$0].state.isParked }
        outcomes.journal.tokenFailed(source, failure, calls: parked.count)
        for slot in parked { finish(slot, .failed(cause: failure.description)) }
    }

    /// What a call that could not go for want of budget comes to.
    private static func budgetOutcome(attempts: Int) -> CallOutcome {
        attempts > 0 ? .expired : .notStarted(reason: "too little budget was left")
    }

    /// Cancels the grants in flight (the run ended early).
    func cancelGrants() {
        for id in tokenGate.transfers { transport.cancel(id) }
    }
}
