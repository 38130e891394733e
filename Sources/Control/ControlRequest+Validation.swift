// What a request's fields may hold; each check's error names the field.
extension ControlRequest {
    /// A key: not empty, at most ``maxKeyBytes``, no control characters.
    static func check(key: String) throws(ControlProtocolError) {
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

    /// Endpoint names: one to ``maxEndpoints``, each short and printable, none twice.
    static func check(endpoints: [String]) throws(ControlProtocolError) {
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

    /// A label: at most ``maxLabelBytes``, no control characters.
    static func check(label: String) throws(ControlProtocolError) {
        guard label.utf8.count <= maxLabelBytes else {
            throw ControlProtocolError(.badRequest, "field 'label' is longer than \(maxLabelBytes) bytes")
        }
        guard !label.utf8.contains(where: isControl) else {
            throw ControlProtocolError(.badRequest, "field 'label' contains a control character")
        }
    }

    /// A session or run id (in `field`): not empty, at most ``maxNameBytes``, printable.
    static func check(id: String, field: String = "id") throws(ControlProtocolError) {
        guard !id.isEmpty, id.utf8.count <= maxNameBytes, !id.utf8.contains(where: isControl) else {
            throw ControlProtocolError(.badRequest, "field '\(field)' is empty, over-long or unprintable")
        }
    }

    private static func isControl(_ byte: UInt8) -> Bool { byte < 0x20 || byte == 0x7F }
}
