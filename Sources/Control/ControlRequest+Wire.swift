import JSON
import Sessions

// The request on the wire: one JSON object per line.
extension ControlRequest {
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
        // Not named: an error never sends the request's text back (a mistyped name may be a key).
        if fields.firstUnknown != nil {
            let known = fieldNames[request.op, default: []]
            throw ControlProtocolError(
                .badRequest,
                "a field op '\(request.op)' does not take (it takes "
                    + (known.isEmpty ? "none but 'op')" : "'op', \(known.map { "'\($0)'" }.joined(separator: ", ")))"))
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

    /// The fields each op takes besides `op` (named in the error for one it does not).
    private static let fieldNames: [String: [String]] = [
        "register": ["key", "endpoints", "label"], "unregister": ["id"], "end": ["id", "all"], "report": ["run_id"],
    ]

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
                "unknown op (expected register, unregister, list, status, end, reload or report)"
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
}
