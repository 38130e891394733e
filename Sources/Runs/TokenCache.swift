import Endpoints
import EventLoop

/// The access tokens client-credentials grants gave, by ``TokenSource``: shared by every
/// endpoint that names the same token URL, client, scope and audience, and by every run of one
/// daemon process (the ``CleanupRun``s of a daemon are given the same cache). Memory only: a
/// token is never written anywhere, and a new process asks for a new one.
///
/// A token is kept for its `expires_in` less a margin (``validity(of:)``), so a call does not
/// go out with a token about to expire; one without `expires_in` for ``assumedLifetime``. A
/// token the server refused (401) is discarded (``discard(_:generation:)``) unless a newer one
/// replaced it meanwhile. Confined to the event loop's thread, like the runs that use it.
package final class TokenCache {
    /// A token and until when it is used.
    private struct Entry {
        let token: AccessToken
        let usableUntil: MonotonicInstant
        let generation: Int
    }

    /// How long a token without `expires_in` is used (a 401 gets a fresh one before anyway).
    package static let assumedLifetime: Duration = .seconds(300)
    /// Taken off a token's lifetime: at most this, at most half the lifetime.
    package static let margin: Duration = .seconds(30)

    private let clock: any MonotonicClock
    private var entries: [TokenSource: Entry] = [:]
    /// Numbers the tokens stored, so a 401 discards only the token the call was sent with.
    private var generations = 0

    /// An empty cache on `clock`.
    package init(clock: any MonotonicClock) { self.clock = clock }

    /// How long a token of `lifetime` (nil: not given) is used: the lifetime less
    /// min(``margin``, half of it), and at least 1 s, so that the calls waiting for it can go.
    package static func validity(of lifetime: Duration?) -> Duration {
        let lifetime = lifetime ?? assumedLifetime
        return max(.seconds(1), lifetime - min(margin, lifetime / 2))
    }

    /// The token of `source` and its generation, while it is usable; nil otherwise.
    package func token(for source: TokenSource) -> (token: AccessToken, generation: Int)? {
        guard let entry = entries[source] else { return nil }
        guard clock.now() < entry.usableUntil else {
            entries[source] = nil
            return nil
        }
        return (entry.token, entry.generation)
    }

    /// Keeps `token` for `source` (replacing any other); returns its generation.
    @discardableResult
    package func store(_ token: AccessToken, for source: TokenSource) -> Int {
        generations += 1
        entries[source] = Entry(
            token: token, usableUntil: clock.now().advanced(by: Self.validity(of: token.lifetime)),
            generation: generations)
        return generations
    }

    /// Drops the token of `source` if it is still the one of `generation` (a server refused it).
    package func discard(_ source: TokenSource, generation: Int) {
        if entries[source]?.generation == generation { entries[source] = nil }
    }

    /// Sources with a token kept (usable or not yet found expired): for tests.
    package var count: Int { entries.count }
}
