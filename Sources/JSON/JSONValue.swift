/// Any JSON value: the opaque `status` and `report` objects of the control protocol, which the
/// daemon fills and the CLI prints without the protocol layer knowing their fields, and the
/// state directory's small documents. Read with ``StrictJSON/parse(_:maxDepth:)``, written with
/// ``JSONWriter``.
package enum JSONValue: Sendable, Equatable {
    /// `null`.
    case null
    /// `true` or `false`.
    case bool(Bool)
    /// A number without fraction or exponent that fits in 64 bits.
    case integer(Int64)
    /// Any other number.
    case number(Double)
    /// A string.
    case string(String)
    /// An array.
    case array([JSONValue])
    /// An object (member order is not kept; encoding sorts keys).
    case object([String: JSONValue])

    /// The member `key` of an object, or nil (for other values too).
    package subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members[key] }
        return nil
    }
}

extension JSONValue: ExpressibleByNilLiteral, ExpressibleByBooleanLiteral, ExpressibleByIntegerLiteral,
    ExpressibleByFloatLiteral, ExpressibleByStringLiteral, ExpressibleByArrayLiteral,
    ExpressibleByDictionaryLiteral
{
    /// `null`.
    package init(nilLiteral: ()) { self = .null }
    /// A boolean.
    package init(booleanLiteral value: Bool) { self = .bool(value) }
    /// An integer.
    package init(integerLiteral value: Int64) { self = .integer(value) }
    /// A number.
    package init(floatLiteral value: Double) { self = .number(value) }
    /// A string.
    package init(stringLiteral value: String) { self = .string(value) }
    /// An array.
    package init(arrayLiteral elements: JSONValue...) { self = .array(elements) }
    /// An object; a repeated key keeps its last value.
    package init(dictionaryLiteral elements: (String, JSONValue)...) {
        self = .object(Dictionary(elements, uniquingKeysWith: { $1 }))
    }
}
