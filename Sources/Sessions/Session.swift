/// One registered remote session the daemon must end when it stops.
package struct Session: Sendable, Equatable {
    /// Public identifier.
    package var id: SessionID
    /// The secret used to end the session; never printed.
    package var key: SessionKey
    /// Names of the `[Endpoint]` sections to call (in order) to end the session.
    package var endpoints: [String]
    /// Unix user id of the client that registered the session (from peer credentials).
    package var ownerUID: UInt32
    /// Optional human-readable label supplied by the client.
    package var label: String?
    /// Registration time, microseconds since the Unix epoch.
    package var registeredAt: UInt64
    /// How many end attempts have been made so far.
    package var attempts: Int
    /// Short text describing the outcome of the last attempt, if any.
    package var lastOutcome: String?

    /// Creates a session record.
    package init(
        id: SessionID, key: SessionKey, endpoints: [String], ownerUID: UInt32,
        label: String? = nil, registeredAt: UInt64, attempts: Int = 0, lastOutcome: String? = nil
    ) {
        self.id = id
        self.key = key
        self.endpoints = endpoints
        self.ownerUID = ownerUID
        self.label = label
        self.registeredAt = registeredAt
        self.attempts = attempts
        self.lastOutcome = lastOutcome
    }
}
