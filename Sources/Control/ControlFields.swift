import JSON

/// Reads a control-protocol object's members by name, remembering which were read so the rest
/// can be refused. A member that is `null` counts as absent. Errors name the member, never its
/// value.
struct ControlFields {
    private let members: [String: JSONValue]
    private var used: Set<String> = []

    /// The members of `value`, which must be an object (else `notAnObject`).
    init(_ value: JSONValue, notAnObject: ControlProtocolError) throws(ControlProtocolError) {
        guard case .object(let members) = value else { throw notAnObject }
        self.members = members
    }

    /// The member `name`'s value, nil when absent or `null`.
    mutating func any(_ name: String) -> JSONValue? {
        used.insert(name)
        guard let value = members[name], value != .null else { return nil }
        return value
    }

    mutating func string(_ name: String) throws(ControlProtocolError) -> String? {
        guard let value = any(name) else { return nil }
        guard case .string(let text) = value else { throw wrongType(name, "a string") }
        return text
    }

    mutating func strings(_ name: String) throws(ControlProtocolError) -> [String]? {
        guard let value = any(name) else { return nil }
        guard case .array(let elements) = value else { throw wrongType(name, "an array of strings") }
        var texts: [String] = []
        texts.reserveCapacity(elements.count)
        for element in elements {
            guard case .string(let text) = element else { throw wrongType(name, "an array of strings") }
            texts.append(text)
        }
        return texts
    }

    mutating func bool(_ name: String) throws(ControlProtocolError) -> Bool? {
        guard let value = any(name) else { return nil }
        guard case .bool(let flag) = value else { throw wrongType(name, "true or false") }
        return flag
    }

    /// An integer that fits in `T`.
    mutating func integer<T: FixedWidthInteger>(_ name: String, as type: T.Type) throws(ControlProtocolError) -> T? {
        guard let value = any(name) else { return nil }
        guard case .integer(let whole) = value, let fitting = T(exactly: whole) else {
            throw wrongType(name, "an integer from \(T.min) to \(T.max)")
        }
        return fitting
    }

    /// An array of objects, each read by `element`.
    mutating func objects<T>(_ name: String, _ element: (JSONValue) throws(ControlProtocolError) -> T)
        throws(ControlProtocolError) -> [T]?
    {
        guard let value = any(name) else { return nil }
        guard case .array(let elements) = value else { throw wrongType(name, "an array") }
        var items: [T] = []
        items.reserveCapacity(elements.count)
        for item in elements { items.append(try element(item)) }
        return items
    }

    /// The first (by name) member that was not read, if any.
    var firstUnknown: String? { members.keys.filter { !used.contains($0) }.min() }

    private func wrongType(_ name: String, _ expected: String) -> ControlProtocolError {
        ControlProtocolError(.badRequest, "field '\(name)' must be \(expected)")
    }
}
