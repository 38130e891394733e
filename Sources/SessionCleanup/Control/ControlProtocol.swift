import FoundationEssentials
import Sessions

// The control protocol: one JSON object per line (UTF-8, ending in "\n") in each direction; every
// request gets exactly one response, in order; a connection may carry several requests.
// docs/control-protocol.md is the description for application authors; keep the two in step.

/// The `code` of an error response: what kind of "no" it is, for programs to branch on.
/// An open set: a newer daemon may send codes this build does not name.
public struct ControlErrorCode: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
    /// The code's text on the wire.
    public let rawValue: String

    /// Wraps a code's text.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The request is not valid JSON, not an object, or has unknown, missing or wrong fields.
    public static let badRequest = ControlErrorCode(rawValue: "bad-request")
    /// The request line is longer than the server accepts (64 KiB); the connection is closed.
    public static let tooLarge = ControlErrorCode(rawValue: "too-large")
    /// No session with that id (that the caller may see).
    public static let notFound = ControlErrorCode(rawValue: "not-found")
    /// The caller's uid may not do this (another user's session, say).
    public static let forbidden = ControlErrorCode(rawValue: "forbidden")
    /// A limit was reached: sessions per user, concurrent clients.
    public static let limit = ControlErrorCode(rawValue: "limit")
    /// The daemon is stopping and takes no new registrations.
    public static let stopping = ControlErrorCode(rawValue: "stopping")
    /// Something failed inside the daemon (its journal says what).
    public static let `internal` = ControlErrorCode(rawValue: "internal")
    /// `reload`: the configuration on disk is invalid; the daemon keeps the one in force.
    public static let invalidConfiguration = ControlErrorCode(rawValue: "invalid-configuration")

    /// The code's text.
    public var description: String { rawValue }
}

/// A request that could not be decoded (or a reply the client could not read): the code to
/// answer with and a message naming the field at fault. Never contains a key's value.
public struct ControlProtocolError: Error, Equatable, CustomStringConvertible {
    /// The error code to reply with.
    public let code: ControlErrorCode
    /// What is wrong, for people.
    public let message: String

    /// Creates an error.
    public init(_ code: ControlErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    public var description: String { message }
}

/// One request from a client.
public enum ControlRequest: Sendable, Equatable, Codable, CustomStringConvertible {
    /// What `end` applies to.
    public enum EndTarget: Sendable, Equatable {
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
    public static let maxKeyBytes = 4096
    /// Longest label accepted, in UTF-8 bytes.
    public static let maxLabelBytes = 256
    /// Most endpoints one registration may name.
    public static let maxEndpoints = 64
    /// Longest endpoint name or session id accepted, in bytes.
    public static let maxNameBytes = 64

    /// The request's `op`.
    public var op: String {
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
    public var description: String {
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

    // MARK: Wire

    /// Decodes one request line (without its newline). Every failure is a `bad-request` error
    /// that names the field at fault and never quotes a value. The line must be strict JSON
    /// (``StrictJSON``): a field given twice, or invalid UTF-8, is refused rather than guessed at.
    public static func decode(line: some Collection<UInt8>) throws(ControlProtocolError) -> ControlRequest {
        do {
            _ = try StrictJSON.read(line, maxDepth: 8)
        } catch {
            throw ControlProtocolError(.badRequest, "the request is not valid JSON (\(error))")
        }
        do {
            return try JSONDecoder().decode(ControlRequest.self, from: Data(line))
        } catch let error as ControlProtocolError {
            throw error
        } catch {
            // JSONDecoder's own messages can quote the text around a syntax error: do not pass them on.
            throw ControlProtocolError(.badRequest, "the request is not valid JSON")
        }
    }

    /// The request as one line of JSON, newline included.
    public func encodedLine() throws -> [UInt8] {
        var bytes = Array(try wireEncoder().encode(self))
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// Decodes a request object, checking every field (see ``decode(line:)``).
    public init(from decoder: any Decoder) throws {
        let container: KeyedDecodingContainer<FieldKey>
        do {
            container = try decoder.container(keyedBy: FieldKey.self)
        } catch {
            throw ControlProtocolError(.badRequest, "a request must be a JSON object")
        }
        var fields = RequestFields(container: container)
        guard let op = try fields.string("op") else {
            throw ControlProtocolError(.badRequest, "missing field 'op'")
        }
        switch op {
        case "register":
            guard let key = try fields.string("key") else { throw fields.missing("key", op) }
            try Self.check(key: key)
            guard let endpoints = try fields.strings("endpoints") else { throw fields.missing("endpoints", op) }
            try Self.check(endpoints: endpoints)
            let label = try fields.string("label")
            if let label { try Self.check(label: label) }
            self = .register(key: SessionKey(key), endpoints: endpoints, label: label)
        case "unregister":
            guard let id = try fields.string("id") else { throw fields.missing("id", op) }
            try Self.check(id: id)
            self = .unregister(id: id)
        case "list":
            self = .list
        case "status":
            self = .status
        case "reload":
            self = .reload
        case "end":
            let id = try fields.string("id")
            let all = try fields.bool("all")
            switch (id, all) {
            case (let id?, nil):
                try Self.check(id: id)
                self = .end(.session(id: id))
            case (nil, true?):
                self = .end(.all)
            case (nil, false?):
                throw ControlProtocolError(.badRequest, "field 'all' of op 'end' must be true when given")
            case (_?, _?):
                throw ControlProtocolError(.badRequest, "op 'end' takes 'id' or \"all\": true, not both")
            case (nil, nil):
                throw ControlProtocolError(.badRequest, "op 'end' needs 'id' or \"all\": true")
            }
        case "report":
            let runID = try fields.string("run_id")
            if let runID { try Self.check(id: runID, field: "run_id") }
            self = .report(runID: runID)
        default:
            throw ControlProtocolError(
                .badRequest,
                "unknown op '\(Self.printable(op))' (expected register, unregister, list, status, end, reload or report)"
            )
        }
        try fields.rejectUnknown(op: op)
    }

    /// Encodes the request object (the key in clear: this is the one place the protocol needs it).
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: FieldKey.self)
        try container.encode(op, forKey: FieldKey("op"))
        switch self {
        case .register(let key, let endpoints, let label):
            try container.encode(key.exposedSecret, forKey: FieldKey("key"))
            try container.encode(endpoints, forKey: FieldKey("endpoints"))
            try container.encodeIfPresent(label, forKey: FieldKey("label"))
        case .unregister(let id), .end(.session(let id)):
            try container.encode(id, forKey: FieldKey("id"))
        case .end(.all):
            try container.encode(true, forKey: FieldKey("all"))
        case .report(let runID):
            try container.encodeIfPresent(runID, forKey: FieldKey("run_id"))
        case .list, .status, .reload:
            break
        }
    }

    // MARK: Validation

    private static func check(key: String) throws(ControlProtocolError) {
        let bytes = key.utf8
        guard !bytes.isEmpty else { throw ControlProtocolError(.badRequest, "field 'key' is empty") }
        guard bytes.count <= maxKeyBytes else {
            throw ControlProtocolError(
                .badRequest, "field 'key' is \(bytes.count) bytes long, more than the \(maxKeyBytes) allowed")
        }
        guard !bytes.contains(where: isControl) else {
            throw ControlProtocolError(.badRequest, "field 'key' contains a control character")
        }
    }

    private static func check(endpoints: [String]) throws(ControlProtocolError) {
        guard !endpoints.isEmpty else {
            throw ControlProtocolError(.badRequest, "field 'endpoints' must name at least one endpoint")
        }
        guard endpoints.count <= maxEndpoints else {
            throw ControlProtocolError(
                .badRequest,
                "field 'endpoints' names \(endpoints.count) endpoints, more than the \(maxEndpoints) allowed")
        }
        var seen = Set<String>()
        for name in endpoints {
            guard !name.isEmpty, name.utf8.count <= maxNameBytes, !name.utf8.contains(where: isControl) else {
                throw ControlProtocolError(
                    .badRequest, "field 'endpoints' holds an empty, over-long or unprintable name")
            }
            guard seen.insert(name).inserted else {
                throw ControlProtocolError(.badRequest, "field 'endpoints' names '\(name)' twice")
            }
        }
    }

    private static func check(label: String) throws(ControlProtocolError) {
        guard label.utf8.count <= maxLabelBytes else {
            throw ControlProtocolError(.badRequest, "field 'label' is longer than \(maxLabelBytes) bytes")
        }
        guard !label.utf8.contains(where: isControl) else {
            throw ControlProtocolError(.badRequest, "field 'label' contains a control character")
        }
    }

    private static func check(id: String, field: String = "id") throws(ControlProtocolError) {
        guard !id.isEmpty, id.utf8.count <= maxNameBytes, !id.utf8.contains(where: isControl) else {
            throw ControlProtocolError(.badRequest, "field '\(field)' is empty, over-long or unprintable")
        }
    }

    private static func isControl(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x7F }

    /// A client-supplied name made safe to quote: at most 32 characters, no control characters.
    static func printable(_ text: String) -> String {
        let cleaned = String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
        return cleaned.count > 32 ? String(cleaned.prefix(32)) + "…" : cleaned
    }
}

/// One registered session as `list` shows it: everything but the key.
public struct ControlSessionInfo: Sendable, Equatable, Codable {
    /// The session's id.
    public var id: String
    /// The label given at registration, if any.
    public var label: String?
    /// The endpoints that end it.
    public var endpoints: [String]
    /// The uid that registered it.
    public var ownerUID: UInt32
    /// When it was registered: microseconds since the Unix epoch.
    public var registeredAt: UInt64
    /// Whole seconds since it was registered (computed by the daemon, for people).
    public var ageSeconds: UInt64
    /// End attempts made so far (0 until a stop run or `end` tries).
    public var attempts: Int
    /// What the last attempt came to (`ended`, `rejected`, `failed`, …), or nil before any.
    public var lastOutcome: String?
    /// Those of ``endpoints`` that are not configured (nil from a daemon that does not say).
    public var unconfiguredEndpoints: [String]?

    /// Creates an entry.
    public init(
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

    private enum CodingKeys: String, CodingKey {
        case id, label, endpoints, attempts
        case ownerUID = "owner_uid"
        case registeredAt = "registered_at"
        case ageSeconds = "age_sec"
        case lastOutcome = "last_outcome"
        case unconfiguredEndpoints = "unconfigured_endpoints"
    }

    /// Encodes every member, absent ones as `null`, so each entry has the same keys.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(label, forKey: .label)
        try container.encode(endpoints, forKey: .endpoints)
        try container.encode(ownerUID, forKey: .ownerUID)
        try container.encode(registeredAt, forKey: .registeredAt)
        try container.encode(ageSeconds, forKey: .ageSeconds)
        try container.encode(attempts, forKey: .attempts)
        try container.encode(lastOutcome, forKey: .lastOutcome)
        try container.encode(unconfiguredEndpoints ?? [], forKey: .unconfiguredEndpoints)
    }
}

/// One response from the daemon: `{"ok":true, …}` or `{"ok":false,"error":…,"code":…}`.
/// Absent members are left out of the JSON. Make them with the static constructors.
public struct ControlResponse: Sendable, Equatable, Codable {
    /// Whether the request succeeded.
    public var ok: Bool
    /// `register`: the new session's id.
    public var id: String?
    /// `list`: the sessions.
    public var sessions: [ControlSessionInfo]?
    /// `status`: the daemon's state (an object the daemon fills).
    public var status: JSONValue?
    /// `end` and `report`: what became of the sessions (an object the daemon fills).
    public var report: JSONValue?
    /// Failure: what went wrong, for people.
    public var error: String?
    /// Failure: the kind, for programs.
    public var code: ControlErrorCode?

    /// Creates a response; prefer the static constructors.
    public init(
        ok: Bool, id: String? = nil, sessions: [ControlSessionInfo]? = nil, status: JSONValue? = nil,
        report: JSONValue? = nil, error: String? = nil, code: ControlErrorCode? = nil
    ) {
        self.ok = ok
        self.id = id
        self.sessions = sessions
        self.status = status
        self.report = report
        self.error = error
        self.code = code
    }

    /// `{"ok":true}` (`unregister`).
    public static var success: ControlResponse { ControlResponse(ok: true) }
    /// `{"ok":true,"id":ID}` (`register`).
    public static func registered(id: String) -> ControlResponse { ControlResponse(ok: true, id: id) }
    /// `{"ok":true,"sessions":[…]}` (`list`).
    public static func sessions(_ sessions: [ControlSessionInfo]) -> ControlResponse {
        ControlResponse(ok: true, sessions: sessions)
    }
    /// `{"ok":true,"status":{…}}` (`status`).
    public static func status(_ status: JSONValue) -> ControlResponse { ControlResponse(ok: true, status: status) }
    /// `{"ok":true,"report":{…}}` (`end`, `report`).
    public static func ended(report: JSONValue) -> ControlResponse { ControlResponse(ok: true, report: report) }
    /// `{"ok":true,"report":{"files":[…],"notes":[…]}}` (`reload`): what was read, and what did
    /// not take effect (settings that need a restart).
    public static func reloaded(files: [String], notes: [String]) -> ControlResponse {
        ControlResponse(
            ok: true,
            report: .object(["files": .array(files.map { .string($0) }), "notes": .array(notes.map { .string($0) })]))
    }
    /// `{"ok":false,"error":MESSAGE,"code":CODE}`.
    public static func failure(_ code: ControlErrorCode, _ message: String) -> ControlResponse {
        ControlResponse(ok: false, error: message, code: code)
    }

    /// The response as one line of JSON, newline included. A value JSON cannot carry (a NaN in
    /// `status`) turns the response into an `internal` error rather than failing.
    public func encodedLine() -> [UInt8] {
        var bytes: [UInt8]
        do {
            bytes = Array(try wireEncoder().encode(self))
        } catch {
            bytes = Array(#"{"code":"internal","error":"the daemon could not encode its reply","ok":false}"#.utf8)
        }
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// Decodes one response line (without its newline).
    public static func decode(line: some Collection<UInt8>) throws(ControlProtocolError) -> ControlResponse {
        do {
            return try JSONDecoder().decode(ControlResponse.self, from: Data(line))
        } catch {
            throw ControlProtocolError(.badRequest, "the reply is not a valid control-protocol response")
        }
    }
}

// MARK: Helpers

/// JSON as the protocol writes it: compact (so one value is one line), keys sorted.
private func wireEncoder() -> JSONEncoder {
    let encoder = JSONEncoder()
    encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
    return encoder
}

/// A member name of a request object.
struct FieldKey: CodingKey {
    let stringValue: String
    var intValue: Int? { nil }
    init(_ name: String) { stringValue = name }
    init?(stringValue: String) { self.stringValue = stringValue }
    init?(intValue: Int) { nil }
}

/// Reads a request's members by name, remembering which were read so the rest can be refused.
private struct RequestFields {
    let container: KeyedDecodingContainer<FieldKey>
    var used: Set<String> = []

    mutating func string(_ name: String) throws(ControlProtocolError) -> String? {
        used.insert(name)
        do {
            return try container.decodeIfPresent(String.self, forKey: FieldKey(name))
        } catch {
            throw ControlProtocolError(.badRequest, "field '\(name)' must be a string")
        }
    }

    mutating func strings(_ name: String) throws(ControlProtocolError) -> [String]? {
        used.insert(name)
        do {
            return try container.decodeIfPresent([String].self, forKey: FieldKey(name))
        } catch {
            throw ControlProtocolError(.badRequest, "field '\(name)' must be an array of strings")
        }
    }

    mutating func bool(_ name: String) throws(ControlProtocolError) -> Bool? {
        used.insert(name)
        do {
            return try container.decodeIfPresent(Bool.self, forKey: FieldKey(name))
        } catch {
            throw ControlProtocolError(.badRequest, "field '\(name)' must be true or false")
        }
    }

    func missing(_ name: String, _ op: String) -> ControlProtocolError {
        ControlProtocolError(.badRequest, "op '\(op)' needs field '\(name)'")
    }

    func rejectUnknown(op: String) throws(ControlProtocolError) {
        let unknown = container.allKeys.map(\.stringValue).filter { !used.contains($0) }.sorted()
        guard let first = unknown.first else { return }
        throw ControlProtocolError(
            .badRequest, "unknown field '\(ControlRequest.printable(first))' for op '\(op)'")
    }
}
