/// A strict reader of JSON text (RFC 8259) for input whose meaning must not be guessed: control
/// requests and end-session replies.
///
/// Foundation's decoders are lenient where it matters here: a member named twice keeps one of
/// its values without a word, and text around a syntax error may be quoted in their messages.
/// This reader accepts exactly one JSON value, surrounded by optional whitespace, and refuses
/// invalid UTF-8 (a byte-order mark included), control characters in strings, unpaired
/// surrogate escapes, numbers with leading zeros, trailing commas, a member name that appears
/// twice in one object (at any depth), and nesting deeper than a limit. ``read(_:maxDepth:)``
/// builds no tree: it reports the top-level value's kind and, for an object, its members' names
/// and kinds (end-session replies); ``parse(_:maxDepth:)`` gives the whole value as a
/// ``JSONValue`` (control requests and responses, the state directory's documents).
/// Errors give the byte offset and never quote the text.
package enum StrictJSON {
    /// What a value is, as far as a decision needs to know.
    package enum Kind: Equatable, Sendable {
        case null
        case `true`
        case `false`
        /// A number written without fraction or exponent; `isZero` for `0` and `-0`.
        case integer(isZero: Bool)
        /// A number with a fraction or an exponent (`1.0`, `1e-400`).
        case fraction
        case string
        case array
        case object
    }

    /// One member of the top-level object.
    package struct Member: Equatable, Sendable {
        /// The member's name, escapes decoded.
        package let name: String
        /// What its value is.
        package let kind: Kind
    }

    /// What the text holds.
    package struct Document: Equatable, Sendable {
        /// The top-level value's kind.
        package let kind: Kind
        /// The top-level object's members in order (empty for other kinds).
        package let members: [Member]
    }

    /// Why a text was refused: a fixed description and where, never the text itself.
    package struct SyntaxError: Error, Equatable, CustomStringConvertible {
        /// What is wrong.
        package let problem: String
        /// The 0-based byte offset where it was found.
        package let offset: Int

        /// `duplicate member name at byte 17`.
        package var description: String { "\(problem) at byte \(offset)" }
    }

    /// The problem ``parse(_:maxDepth:)`` reports for a number no `Double` can hold.
    package static let numberOutOfRange = "number out of range"

    /// Reads `bytes` as one JSON value nested at most `maxDepth` arrays and objects deep.
    package static func read(_ bytes: some Collection<UInt8>, maxDepth: Int = 64) throws(SyntaxError) -> Document {
        var reader = Reader(bytes: Array(bytes), maxDepth: maxDepth, keepsValues: false)
        return try reader.document()
    }

    /// Reads `bytes` as one JSON value nested at most `maxDepth` arrays and objects deep, and
    /// gives it whole. A number without fraction or exponent that fits in 64 bits is an
    /// ``JSONValue/integer(_:)``; any other number a ``JSONValue/number(_:)`` (one beyond a
    /// `Double`'s range, `1e400`, is refused with ``numberOutOfRange`` at its offset, once the
    /// text is otherwise valid: a syntax error anywhere is reported as ``read(_:maxDepth:)`` does).
    package static func parse(_ bytes: some Collection<UInt8>, maxDepth: Int = 64) throws(SyntaxError) -> JSONValue {
        var reader = Reader(bytes: Array(bytes), maxDepth: maxDepth, keepsValues: true)
        _ = try reader.document()
        return reader.value
    }
}

extension StrictJSON {
    private struct Frame {
        let isObject: Bool
        var names: Set<String> = []
        /// The name of the member whose value is being read.
        var name = ""
        /// The elements or members read so far (only when the reader keeps values).
        var elements: [JSONValue] = []
        var members: [String: JSONValue] = [:]
    }

    private struct Reader {
        let bytes: [UInt8]
        let maxDepth: Int
        /// Whether to build the values (``parse``) or only check them (``read``).
        let keepsValues: Bool
        var index = 0
        var stack: [Frame] = []
        /// The top-level object's members.
        var members: [StrictJSON.Member] = []
        /// Decoded bytes of the string being read (reused).
        var decoded: [UInt8] = []
        /// The value last read whole (when values are kept).
        var value: JSONValue = .null
        /// Where the first number beyond a Double's range begins (when values are kept).
        var firstOutOfRange: Int?

        init(bytes: [UInt8], maxDepth: Int, keepsValues: Bool) {
            self.bytes = bytes
            self.maxDepth = maxDepth
            self.keepsValues = keepsValues
        }

        func fail(_ problem: String) -> StrictJSON.SyntaxError {
            StrictJSON.SyntaxError(problem: problem, offset: index)
        }

        var current: UInt8? { index < bytes.count ? bytes[index] : nil }

        mutating func skipWhitespace() {
            while let byte = current, byte == 0x20 || byte == 0x09 || byte == 0x0A || byte == 0x0D { index += 1 }
        }

        mutating func document() throws(StrictJSON.SyntaxError) -> StrictJSON.Document {
            var kind = try nextValue()
            while !stack.isEmpty {
                skipWhitespace()
                let top = stack.count - 1
                let isObject = stack[top].isObject
                if top == 0 && isObject { members.append(StrictJSON.Member(name: stack[top].name, kind: kind)) }
                if keepsValues {
                    if isObject {
                        stack[top].members[stack[top].name] = value
                    } else {
                        stack[top].elements.append(value)
                    }
                }
                switch current {
                case UInt8(ascii: ","):
                    index += 1
                    if isObject { try memberNameAndColon() }
                    kind = try nextValue()
                case UInt8(ascii: "}") where isObject, UInt8(ascii: "]") where !isObject:
                    index += 1
                    let frame = stack.removeLast()
                    kind = isObject ? .object : .array
                    if keepsValues { value = isObject ? .object(frame.members) : .array(frame.elements) }
                case nil: throw fail("unexpected end of text")
                default: throw fail(isObject ? "expected ',' or '}'" : "expected ',' or ']'")
                }
            }
            skipWhitespace()
            guard index == bytes.count else { throw fail("text after the value") }
            if let offset = firstOutOfRange {
                throw StrictJSON.SyntaxError(problem: StrictJSON.numberOutOfRange, offset: offset)
            }
            return StrictJSON.Document(kind: kind, members: kind == .object ? members : [])
        }

        /// Reads a scalar, or opens a container: an empty one is read whole; otherwise its first
        /// element is read, and `document()` carries on after it.
        mutating func nextValue() throws(StrictJSON.SyntaxError) -> StrictJSON.Kind {
            while true {
                skipWhitespace()
                guard let byte = current else { throw fail("unexpected end of text") }
                switch byte {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    let isObject = byte == UInt8(ascii: "{")
                    guard stack.count < maxDepth else { throw fail("nested deeper than \(maxDepth)") }
                    index += 1
                    skipWhitespace()
                    if current == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                        index += 1
                        if keepsValues { value = isObject ? .object([:]) : .array([]) }
                        return isObject ? .object : .array
                    }
                    stack.append(Frame(isObject: isObject))
                    if isObject { try memberNameAndColon() }
                    continue  // the first element
                case UInt8(ascii: "\""):
                    try string()
                    if keepsValues { value = .string(String(decoding: decoded, as: UTF8.self)) }
                    return .string
                case UInt8(ascii: "t"): return try literal("true", .true, .bool(true))
                case UInt8(ascii: "f"): return try literal("false", .false, .bool(false))
                case UInt8(ascii: "n"): return try literal("null", .null, .null)
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try number()
                default: throw fail("expected a value")
                }
            }
        }

        mutating func memberNameAndColon() throws(StrictJSON.SyntaxError) {
            skipWhitespace()
            guard current == UInt8(ascii: "\"") else { throw fail("expected a member name") }
            let start = index
            try string()
            // Decoded bytes are valid UTF-8 (checked by string()).
            let name = String(decoding: decoded, as: UTF8.self)
            guard stack[stack.count - 1].names.insert(name).inserted else {
                throw StrictJSON.SyntaxError(problem: "duplicate member name", offset: start)
            }
            stack[stack.count - 1].name = name
            skipWhitespace()
            guard current == UInt8(ascii: ":") else { throw fail("expected ':'") }
            index += 1
        }

        mutating func literal(_ word: StaticString, _ kind: StrictJSON.Kind, _ literal: JSONValue)
            throws(StrictJSON.SyntaxError) -> StrictJSON.Kind
        {
            let count = word.utf8CodeUnitCount
            guard index + count <= bytes.count else { throw fail("invalid literal") }
            for offset in 0..<count where bytes[index + offset] != word.utf8Start[offset] {
                throw fail("invalid literal")
            }
            index += count
            if keepsValues { value = literal }
            return kind
        }

        mutating func number() throws(StrictJSON.SyntaxError) -> StrictJSON.Kind {
            let start = index
            if current == UInt8(ascii: "-") { index += 1 }
            guard let first = current, isDigit(first) else { throw fail("invalid number") }
            var isZero = true
            if first == UInt8(ascii: "0") {
                index += 1
                if let next = current, isDigit(next) { throw fail("number with a leading zero") }
            } else {
                isZero = false
                while let byte = current, isDigit(byte) { index += 1 }
            }
            var integer = true
            if current == UInt8(ascii: ".") {
                integer = false
                index += 1
                guard let byte = current, isDigit(byte) else { throw fail("invalid number") }
                while let byte = current, isDigit(byte) { index += 1 }
            }
            if current == UInt8(ascii: "e") || current == UInt8(ascii: "E") {
                integer = false
                index += 1
                if current == UInt8(ascii: "+") || current == UInt8(ascii: "-") { index += 1 }
                guard let byte = current, isDigit(byte) else { throw fail("invalid number") }
                while let byte = current, isDigit(byte) { index += 1 }
            }
            if keepsValues {
                let text = String(decoding: bytes[start..<index], as: UTF8.self)
                if integer, let whole = Int64(text) {
                    value = .integer(whole)
                } else if let number = Double(text), number.isFinite {
                    value = .number(number)
                } else {
                    // Beyond a Double's range: no value to give (nor to write back). Reported once the
                    // text is known to be JSON, so that a syntax error after it is what is reported.
                    if firstOutOfRange == nil { firstOutOfRange = start }
                    value = .null
                }
            }
            return integer ? .integer(isZero: isZero) : .fraction
        }

        func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }

        /// Reads a string (at its opening quote) into `decoded`, escapes decoded.
        mutating func string() throws(StrictJSON.SyntaxError) {
            index += 1
            decoded.removeAll(keepingCapacity: true)
            var ascii = true
            while true {
                guard let byte = current else { throw fail("unterminated string") }
                switch byte {
                case UInt8(ascii: "\""):
                    index += 1
                    if !ascii && String(validating: decoded, as: UTF8.self) == nil {
                        throw fail("string is not valid UTF-8")
                    }
                    return
                case UInt8(ascii: "\\"):
                    index += 1
                    try escape()
                case 0..<0x20:
                    throw fail("control character in a string")
                default:
                    if byte >= 0x80 { ascii = false }
                    decoded.append(byte)
                    index += 1
                }
            }
        }

        mutating func escape() throws(StrictJSON.SyntaxError) {
            guard let byte = current else { throw fail("unterminated string") }
            index += 1
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded.append(byte)
            case UInt8(ascii: "b"): decoded.append(0x08)
            case UInt8(ascii: "f"): decoded.append(0x0C)
            case UInt8(ascii: "n"): decoded.append(0x0A)
            case UInt8(ascii: "r"): decoded.append(0x0D)
            case UInt8(ascii: "t"): decoded.append(0x09)
            case UInt8(ascii: "u"):
                var scalar = try hex4()
                if (0xD800...0xDBFF).contains(scalar) {
                    guard current == UInt8(ascii: "\\"), index + 1 < bytes.count, bytes[index + 1] == UInt8(ascii: "u")
                    else { throw fail("unpaired surrogate escape") }
                    index += 2
                    let low = try hex4()
                    guard (0xDC00...0xDFFF).contains(low) else { throw fail("unpaired surrogate escape") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if (0xDC00...0xDFFF).contains(scalar) {
                    throw fail("unpaired surrogate escape")
                }
                guard let unicode = Unicode.Scalar(scalar) else { throw fail("invalid escape") }
                decoded.append(contentsOf: UTF8.encode(unicode).map { Array($0) } ?? [])
            default:
                throw fail("invalid escape")
            }
        }

        mutating func hex4() throws(StrictJSON.SyntaxError) -> UInt32 {
            guard index + 4 <= bytes.count else { throw fail("invalid \\u escape") }
            var value: UInt32 = 0
            for _ in 0..<4 {
                let byte = bytes[index]
                let digit: UInt32
                switch byte {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = UInt32(byte - UInt8(ascii: "0"))
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = UInt32(byte - UInt8(ascii: "a") + 10)
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = UInt32(byte - UInt8(ascii: "A") + 10)
                default: throw fail("invalid \\u escape")
                }
                value = value << 4 | digit
                index += 1
            }
            return value
        }
    }
}
