import JSON

/// One registered session as `list` shows it: everything but the key.
package struct ControlSessionInfo: Sendable, Equatable {
    /// The session's id.
    package var id: String
    /// The label given at registration, if any.
    package var label: String?
    /// The endpoints that end it.
    package var endpoints: [String]
    /// The uid that registered it.
    package var ownerUID: UInt32
    /// When it was registered: microseconds since the Unix epoch.
    package var registeredAt: UInt64
    /// Whole seconds since it was registered (computed by the daemon, for people).
    package var ageSeconds: UInt64
    /// End attempts made so far (0 until a stop run or `end` tries).
    package var attempts: Int
    /// What the last attempt came to (`ended`, `rejected`, `failed`, …), or nil before any.
    package var lastOutcome: String?
    /// Those of ``endpoints`` that are not configured (nil from a daemon that does not say).
    package var unconfiguredEndpoints: [String]?

    /// Creates an entry.
    package init(
        id: String, label: String?, endpoints: [String], ownerUID: UInt32, registeredAt: UInt64, ageSeconds: UInt64,
        attempts: Int, lastOutcome: String?, unconfiguredEndpoints: [String] = []
    ) {
        self.id = id
        self.label = label
        self.endpoints = endpoints
        self.ownerUID = ownerUID
        self.registeredAt = registeredAt
        self.ageSeconds = ageSeconds
        self.attempts = attempts
        self.lastOutcome = lastOutcome
        self.unconfiguredEndpoints = unconfiguredEndpoints
    }

    /// Writes every member, absent ones as `null`, so each entry has the same keys; sorted by name.
    package func write(to writer: inout JSONWriter) {
        writer.beginObject()
        writer.member("age_sec")
        writer.integer(ageSeconds)
        writer.member("attempts")
        writer.integer(attempts)
        writer.member("endpoints")
        writer.strings(endpoints)
        writer.member("id")
        writer.string(id)
        writer.member("label")
        writer.string(label)
        writer.member("last_outcome")
        writer.string(lastOutcome)
        writer.member("owner_uid")
        writer.integer(ownerUID)
        writer.member("registered_at")
        writer.integer(registeredAt)
        writer.member("unconfigured_endpoints")
        writer.strings(unconfiguredEndpoints ?? [])
        writer.endObject()
    }

    /// Reads an entry of a `list` reply; members this build does not know are left alone (a newer
    /// daemon may add some).
    static func read(_ value: JSONValue) throws(ControlProtocolError) -> ControlSessionInfo {
        var fields = try ControlFields(
            value, notAnObject: ControlProtocolError(.badRequest, "a session must be an object"))
        func missing(_ name: String) -> ControlProtocolError {
            ControlProtocolError(.badRequest, "a session needs field '\(name)'")
        }
        guard let id = try fields.string("id") else { throw missing("id") }
        guard let endpoints = try fields.strings("endpoints") else { throw missing("endpoints") }
        guard let ownerUID = try fields.integer("owner_uid", as: UInt32.self) else { throw missing("owner_uid") }
        guard let registeredAt = try fields.integer("registered_at", as: UInt64.self) else {
            throw missing("registered_at")
        }
        guard let ageSeconds = try fields.integer("age_sec", as: UInt64.self) else { throw missing("age_sec") }
        guard let attempts = try fields.integer("attempts", as: Int.self) else { throw missing("attempts") }
        var info = ControlSessionInfo(
            id: id, label: try fields.string("label"), endpoints: endpoints, ownerUID: ownerUID,
            registeredAt: registeredAt, ageSeconds: ageSeconds, attempts: attempts,
            lastOutcome: try fields.string("last_outcome"))
        info.unconfiguredEndpoints = try fields.strings("unconfigured_endpoints")
        return info
    }
}

extension ControlSessionInfo: JSONWritable {}
