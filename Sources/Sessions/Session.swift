/// One registered remote session the daemon must end when it stops.
public struct Session: Sendable, Equatable {
    /// Public identifier.
    public var id: SessionID
    /// The secret used to end the session; never printed.
    public var key: SessionKey
    /// Names of the `[Endpoint]` sections to call (in order) to end the session.
    public var endpoints: [String]
    /// Unix user id of the client that registered the session (from peer credentials).
    public var ownerUID: UInt32
    /// Optional human-readable label supplied by the client.
    public var label: String?
    /// Registration time, microseconds since the Unix epoch.
    public var registeredAt: UInt64
    /// How many end attempts have been made so far.
    public var attempts: Int
    /// Short text describing the outcome of the last attempt, if any.
    public var lastOutcome: String?

    /// Creates a session record.
    public init(
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
