/// Writes JSON text as the control protocol and the state directory's documents spell it:
/// compact (a value is one line: JSON escapes newlines), an object's members in sorted order
/// when written from a ``JSONValue``, strings as UTF-8 with only `"`, `\`, control characters
/// (`\b \f \n \r \t`, else `\u00XX`) and, if asked, `/` escaped, numbers in their shortest
/// round-trip form (`1`, `0.5`, `1e+300`). This is the text Foundation's `JSONEncoder` wrote
/// with sorted keys, byte for byte, so files and replies of earlier versions read the same.
///
/// Members and elements are written in order: ``member(_:)`` or ``element()`` before each one
/// puts the comma where one is due.
package struct JSONWriter {
    /// A number JSON cannot carry: NaN or an infinity.
    package struct UnrepresentableNumber: Error, CustomStringConvertible {
        /// `a number JSON cannot carry (nan)`.
        package var description: String { "a number JSON cannot carry (\(value))" }
        let value: Double
    }

    /// The text written so far.
    package private(set) var bytes: [UInt8] = []
    /// Whether `/` is written `\/` (as `JSONEncoder` did by default: the state directory's
    /// documents); the control protocol writes it as it is.
    private let escapesSlashes: Bool
    /// Whether the next member or element is the first of its container (no comma before it).
    private var atContainerStart = true

    /// A writer with nothing written yet.
    package init(escapingSlashes: Bool = false) {
        escapesSlashes = escapingSlashes
    }

    /// `value` as compact JSON text.
    package static func text(of value: some JSONWritable, escapingSlashes: Bool = false)
        throws(UnrepresentableNumber) -> [UInt8]
    {
        var writer = JSONWriter(escapingSlashes: escapingSlashes)
        try value.write(to: &writer)
        return writer.bytes
    }

    // MARK: Containers

    /// `{`.
    package mutating func beginObject() { open(UInt8(ascii: "{")) }
    /// `}`.
    package mutating func endObject() { close(UInt8(ascii: "}")) }
    /// `[`.
    package mutating func beginArray() { open(UInt8(ascii: "[")) }
    /// `]`.
    package mutating func endArray() { close(UInt8(ascii: "]")) }

    /// The name of the member whose value is written next: `"name":`, after a comma unless it is
    /// the object's first.
    package mutating func member(_ name: String) {
        element()
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Before each element of an array: a comma unless it is the first.
    package mutating func element() {
        if !atContainerStart { bytes.append(UInt8(ascii: ",")) }
        atContainerStart = false
    }

    private mutating func open(_ bracket: UInt8) {
        bytes.append(bracket)
        atContainerStart = true
    }

    private mutating func close(_ bracket: UInt8) {
        bytes.append(bracket)
        atContainerStart = false
    }

    // MARK: Scalars

    /// `null`.
    package mutating func null() { bytes.append(contentsOf: "null".utf8) }

    /// `true` or `false`.
    package mutating func bool(_ value: Bool) { bytes.append(contentsOf: (value ? "true" : "false").utf8) }

    /// An integer in decimal.
    package mutating func integer(_ value: some BinaryInteger) { bytes.append(contentsOf: String(value).utf8) }

    /// A number in its shortest form that reads back the same (an integral one without `.0`).
    package mutating func number(_ value: Double) throws(UnrepresentableNumber) {
        guard value.isFinite else { throw UnrepresentableNumber(value: value) }
        var text = value.description
        if text.hasSuffix(".0") { text.removeLast(2) }
        bytes.append(contentsOf: text.utf8)
    }

    /// A string, escaped.
    package mutating func string(_ text: String) {
        let backslash = UInt8(ascii: "\\")
        bytes.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""), backslash:
                bytes.append(backslash)
                bytes.append(byte)
            case UInt8(ascii: "/") where escapesSlashes:
                bytes.append(backslash)
                bytes.append(byte)
            case 0x08: escape(UInt8(ascii: "b"))
            case 0x0C: escape(UInt8(ascii: "f"))
            case 0x0A: escape(UInt8(ascii: "n"))
            case 0x0D: escape(UInt8(ascii: "r"))
            case 0x09: escape(UInt8(ascii: "t"))
            case 0..<0x20:
                bytes.append(contentsOf: #"\u00"#.utf8)
                bytes.append(Self.hexDigits[Int(byte >> 4)])
                bytes.append(Self.hexDigits[Int(byte & 0xF)])
            default:
                bytes.append(byte)
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static let hexDigits = Array("0123456789abcdef".utf8)

    private mutating func escape(_ letter: UInt8) {
        bytes.append(UInt8(ascii: "\\"))
        bytes.append(letter)
    }

    /// A string, or `null` for nil.
    package mutating func string(_ text: String?) {
        if let text { string(text) } else { null() }
    }

    /// An array of strings.
    package mutating func strings(_ texts: [String]) {
        beginArray()
        for text in texts {
            element()
            string(text)
        }
        endArray()
    }

    /// Any value; an object's members sorted by name.
    package mutating func value(_ value: JSONValue) throws(UnrepresentableNumber) {
        switch value {
        case .null: null()
        case .bool(let flag): bool(flag)
        case .integer(let whole): integer(whole)
        case .number(let number): try self.number(number)
        case .string(let text): string(text)
        case .array(let elements):
            beginArray()
            for item in elements {
                element()
                try self.value(item)
            }
            endArray()
        case .object(let members):
            beginObject()
            for (name, item) in members.sorted(by: { $0.key < $1.key }) {
                member(name)
                try self.value(item)
            }
            endObject()
        }
    }
}

/// A value that can write itself as JSON.
package protocol JSONWritable {
    /// Appends the value's JSON text to `writer`.
    func write(to writer: inout JSONWriter) throws(JSONWriter.UnrepresentableNumber)
}

extension JSONValue: JSONWritable {
    /// Writes the value (see ``JSONWriter/value(_:)``).
    package func write(to writer: inout JSONWriter) throws(JSONWriter.UnrepresentableNumber) {
        try writer.value(self)
    }
}

extension Array: JSONWritable where Element: JSONWritable {
    /// Writes the elements as a JSON array.
    package func write(to writer: inout JSONWriter) throws(JSONWriter.UnrepresentableNumber) {
        writer.beginArray()
        for item in self {
            writer.element()
            try item.write(to: &writer)
        }
        writer.endArray()
    }
}
