import JSON
import Sessions

// The control protocol: one JSON object per line (UTF-8, ending in "\n") in each direction; every
// request gets exactly one response, in order; a connection may carry several requests.
// docs/control-protocol.md is the description for application authors; keep the two in step.

/// The `code` of an error response: what kind of "no" it is, for programs to branch on.
/// An open set: a newer daemon may send codes this build does not name.
package struct ControlErrorCode: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The code's text on the wire.
    package let rawValue: String

    /// Wraps a code's text.
    package init(rawValue: String) { self.rawValue = rawValue }

    /// The request is not valid JSON, not an object, or has unknown, missing or wrong fields.
    package static let badRequest = ControlErrorCode(rawValue: "bad-request")
    /// The request line is longer than the server accepts (64 KiB); the connection is closed.
    package static let tooLarge = ControlErrorCode(rawValue: "too-large")
    /// No session with that id (that the caller may see).
    package static let notFound = ControlErrorCode(rawValue: "not-found")
    /// The caller's uid may not do this (another user's session, say).
    package static let forbidden = ControlErrorCode(rawValue: "forbidden")
    /// A limit was reached: sessions per user, concurrent clients.
    package static let limit = ControlErrorCode(rawValue: "limit")
    /// The daemon is stopping and takes no new registrations.
    package static let stopping = ControlErrorCode(rawValue: "stopping")
    /// Something failed inside the daemon (its journal says what).
    package static let `internal` = ControlErrorCode(rawValue: "internal")
    /// `reload`: the configuration on disk is invalid; the daemon keeps the one in force.
    package static let invalidConfiguration = ControlErrorCode(rawValue: "invalid-configuration")

    /// The code's text.
    package var description: String { rawValue }
}

/// A request that could not be decoded (or a reply the client could not read): the code to
/// answer with and a message naming the field at fault. Never contains a key's value.
package struct ControlProtocolError: Error, Equatable, CustomStringConvertible {
    /// The error code to reply with.
    package let code: ControlErrorCode
    /// What is wrong, for people.
    package let message: String

    /// Creates an error.
    package init(_ code: ControlErrorCode, _ message: String) {
        self.code = code
        self.message = message
    }

    /// The message.
    package var description: String { message }
}

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

    // MARK: Wire

    /// Decodes one request line (without its newline). Every failure is a `bad-request` error
    /// that names the field at fault and never quotes a value. The line must be strict JSON
    /// (``StrictJSON``): a field given twice, or invalid UTF-8, is refused rather than guessed at.
    /// A field that is `null` counts as absent.
    package static func decode(line: some Collection<UInt8>) throws(ControlProtocolError) -> ControlRequest {
        let value: JSONValue
        do {
            value = try StrictJSON.parse(line, maxDepth: 8)
        } catch {
            throw ControlProtocolError(.badRequest, "the request is not valid JSON (\(error))")
        }
        var fields = try ControlFields(
            value, notAnObject: ControlProtocolError(.badRequest, "a request must be a JSON object"))
        let request = try decode(&fields)
        if let unknown = fields.firstUnknown {
            throw ControlProtocolError(
                .badRequest, "unknown field '\(ControlRequest.printable(unknown))' for op '\(request.op)'")
        }
        return request
    }

    /// The request as one line of JSON, newline included: compact, members sorted by name.
    package func encodedLine() -> [UInt8] {
        var writer = JSONWriter()
        write(to: &writer)
        var bytes = writer.bytes
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// Reads a request's fields, checking every one (see ``decode(line:)``).
    private static func decode(_ fields: inout ControlFields) throws(ControlProtocolError) -> ControlRequest {
        guard let op = try fields.string("op") else {
            throw ControlProtocolError(.badRequest, "missing field 'op'")
        }
        func missing(_ name: String) -> ControlProtocolError {
            ControlProtocolError(.badRequest, "op '\(op)' needs field '\(name)'")
        }
        switch op {
        case "register":
            guard let key = try fields.string("key") else { throw missing("key") }
            try check(key: key)
            guard let endpoints = try fields.strings("endpoints") else { throw missing("endpoints") }
            try check(endpoints: endpoints)
            let label = try fields.string("label")
            if let label { try check(label: label) }
            return .register(key: SessionKey(key), endpoints: endpoints, label: label)
        case "unregister":
            guard let id = try fields.string("id") else { throw missing("id") }
            try check(id: id)
            return .unregister(id: id)
        case "list":
            return .list
        case "status":
            return .status
        case "reload":
            return .reload
        case "end":
            let id = try fields.string("id")
            let all = try fields.bool("all")
            switch (id, all) {
            case (let id?, nil):
                try check(id: id)
                return .end(.session(id: id))
            case (nil, true?):
                return .end(.all)
            case (nil, false?):
                throw ControlProtocolError(.badRequest, "field 'all' of op 'end' must be true when given")
            case (_?, _?):
                throw ControlProtocolError(.badRequest, "op 'end' takes 'id' or \"all\": true, not both")
            case (nil, nil):
                throw ControlProtocolError(.badRequest, "op 'end' needs 'id' or \"all\": true")
            }
        case "report":
            let runID = try fields.string("run_id")
            if let runID { try check(id: runID, field: "run_id") }
            return .report(runID: runID)
        default:
            throw ControlProtocolError(
                .badRequest,
                "unknown op '\(printable(op))' (expected register, unregister, list, status, end, reload or report)"
            )
        }
    }

    /// Writes the request object, members sorted by name (the key in clear: this is the one place
    /// the protocol needs it).
    private func write(to writer: inout JSONWriter) {
        writer.beginObject()
        switch self {
        case .register(let key, let endpoints, let label):
            writer.member("endpoints")
            writer.strings(endpoints)
            writer.member("key")
            writer.string(key.exposedSecret)
            if let label {
                writer.member("label")
                writer.string(label)
            }
        case .unregister(let id), .end(.session(let id)):
            writer.member("id")
            writer.string(id)
        case .end(.all):
            writer.member("all")
            writer.bool(true)
        case .list, .status, .reload, .report:
            break
        }
        writer.member("op")
        writer.string(op)
        if case .report(let runID?) = self {
            writer.member("run_id")
            writer.string(runID)
        }
        writer.endObject()
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
    package static func printable(_ text: String) -> String {
        let cleaned = String(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.map(Character.init))
        return cleaned.count > 32 ? String(cleaned.prefix(32)) + "…" : cleaned
    }
}
