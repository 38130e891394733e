import Basics

/// The bytes of an entry in the two forms the daemon writes: journald's native protocol (one
/// datagram per entry) and a readable stderr line with sd-daemon's `<N>` priority prefix.
enum JournalEncoding {
    /// The entry in journald's native protocol: `NAME=value\n` per field, each field's value on
    /// one line (a newline or carriage return in it written as `\n`, `\r`: `journalctl -o export`,
    /// matches and exporters see one value, not a field cut in two); the message — for text
    /// holding a newline — as `MESSAGE\n`, its length as 64-bit little endian, the text, `\n`
    /// (systemd's "Native Journal Protocol"). `dropped` > 0 adds `JOURNAL_DROPPED=` and says so
    /// in the message: entries lost since the last one that got through.
    static func native(_ entry: JournalEntry, identifier: String, dropped: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(256 + entry.fields.count * 48)
        append("MESSAGE", message(entry, dropped: dropped), to: &bytes)
        append("PRIORITY", String(entry.priority.rawValue), to: &bytes)
        append("SYSLOG_IDENTIFIER", identifier, to: &bytes)
        append("MESSAGE_ID", entry.event.messageID, to: &bytes)
        append(JournalField.Name.event.rawValue, entry.event.name, to: &bytes)
        if let location = entry.location {
            append("CODE_FILE", location.file, to: &bytes)
            append("CODE_LINE", String(location.line), to: &bytes)
            append("CODE_FUNC", location.function, to: &bytes)
        }
        for field in entry.fields {
            switch field.content {
            case .text(let value):
                appendUTF8(field.name.rawValue, to: &bytes)
                bytes.append(UInt8(ascii: "="))
                appendOneLine(value, to: &bytes)
                bytes.append(newline)
                // The catalog cannot format numbers: a duration gets its twin for people.
                if let twin = JournalField.Name.humanTwins[field.name.rawValue], let usec = Int64(value) {
                    append(twin, HumanText.duration(microseconds: usec), to: &bytes)
                }
            case .sessionID(let id):
                appendUTF8(field.name.rawValue, to: &bytes)
                bytes.append(UInt8(ascii: "="))
                id.appendHex(to: &bytes)
                bytes.append(newline)
            }
        }
        if dropped > 0 { append(JournalField.Name.journalDropped.rawValue, String(dropped), to: &bytes) }
        return bytes
    }

    /// The entry as one stderr line: `<N>message [SESSION_CLEANUP_EVENT=… NAME=value …]\n`, with
    /// newlines inside values written as `\n`.
    static func line(_ entry: JournalEntry, dropped: Int) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(128 + entry.fields.count * 32)
        bytes.append(UInt8(ascii: "<"))
        bytes.append(contentsOf: String(entry.priority.rawValue).utf8)
        bytes.append(UInt8(ascii: ">"))
        appendOneLine(message(entry, dropped: dropped), to: &bytes)
        bytes.append(contentsOf: " [".utf8)
        bytes.append(contentsOf: JournalField.Name.event.rawValue.utf8)
        bytes.append(UInt8(ascii: "="))
        bytes.append(contentsOf: entry.event.name.utf8)
        for field in entry.fields {
            bytes.append(UInt8(ascii: " "))
            bytes.append(contentsOf: field.name.rawValue.utf8)
            bytes.append(UInt8(ascii: "="))
            switch field.content {
            case .text(let value): appendOneLine(value, to: &bytes)
            case .sessionID(let id): id.appendHex(to: &bytes)
            }
        }
        if dropped > 0 {
            bytes.append(contentsOf: " \(JournalField.Name.journalDropped.rawValue)=\(dropped)".utf8)
        }
        bytes.append(contentsOf: "]\n".utf8)
        return bytes
    }

    /// An entry encoded by ``native(_:identifier:dropped:)`` as ``line(_:dropped:)`` would have
    /// written it (journald refused it): `<PRIORITY>MESSAGE [the other fields]`, without
    /// `SYSLOG_IDENTIFIER`, `MESSAGE_ID` and `CODE_*`. Malformed bytes end the fields read.
    static func line(fromNative bytes: [UInt8]) -> [UInt8] {
        var fields: [(name: ArraySlice<UInt8>, value: ArraySlice<UInt8>)] = []
        var index = 0
        while index < bytes.count, let end = bytes[index...].firstIndex(where: { $0 == newline || $0 == equals }) {
            let name = bytes[index..<end]
            if bytes[end] == equals {
                let stop = bytes[(end + 1)...].firstIndex(of: newline) ?? bytes.count
                fields.append((name, bytes[(end + 1)..<stop]))
                index = stop + 1
            } else {
                guard end + 9 <= bytes.count else { break }
                var length: UInt64 = 0
                for offset in 0..<8 { length |= UInt64(bytes[end + 1 + offset]) << (8 * UInt64(offset)) }
                let start = end + 9
                guard length <= UInt64(bytes.count - start) else { break }
                fields.append((name, bytes[start..<(start + Int(length))]))
                index = start + Int(length) + 1
            }
        }
        func value(_ name: String) -> ArraySlice<UInt8> {
            fields.first { $0.name.elementsEqual(name.utf8) }?.value ?? []
        }
        let skipped: Set<String> = ["MESSAGE", "PRIORITY", "SYSLOG_IDENTIFIER", "MESSAGE_ID"]
        var line: [UInt8] = Array("<".utf8) + value("PRIORITY") + Array(">".utf8)
        appendOneLine(String(decoding: value("MESSAGE"), as: UTF8.self), to: &line)
        line.append(contentsOf: " [".utf8)
        var first = true
        for field in fields {
            let name = String(decoding: field.name, as: UTF8.self)
            guard !skipped.contains(name), !name.hasPrefix("CODE_") else { continue }
            if !first { line.append(UInt8(ascii: " ")) }
            first = false
            line.append(contentsOf: field.name)
            line.append(equals)
            appendOneLine(String(decoding: field.value, as: UTF8.self), to: &line)
        }
        line.append(contentsOf: "]\n".utf8)
        return line
    }

    private static let equals = UInt8(ascii: "=")

    private static func message(_ entry: JournalEntry, dropped: Int) -> String {
        guard dropped > 0 else { return entry.message }
        return entry.message + " (\(dropped) earlier journal entries were dropped: the journal was not keeping up)"
    }

    private static let newline = UInt8(ascii: "\n")

    private static func append(_ name: String, _ value: String, to bytes: inout [UInt8]) {
        appendUTF8(name, to: &bytes)
        var value = value
        // One pass over contiguous bytes (String's own iterator is several times slower).
        value.withUTF8 { utf8 in
            if utf8.contains(newline) {
                bytes.append(newline)
                var length = UInt64(utf8.count).littleEndian
                withUnsafeBytes(of: &length) { bytes.append(contentsOf: $0) }
            } else {
                bytes.append(UInt8(ascii: "="))
            }
            bytes.append(contentsOf: utf8)
        }
        bytes.append(newline)
    }

    private static func appendUTF8(_ text: String, to bytes: inout [UInt8]) {
        var text = text
        text.withUTF8 { bytes.append(contentsOf: $0) }
    }

    private static let carriageReturn = UInt8(ascii: "\r")

    /// `value` with each newline written as `\n` and each carriage return as `\r`.
    private static func appendOneLine(_ value: String, to bytes: inout [UInt8]) {
        var value = value
        value.withUTF8 { utf8 in
            guard utf8.contains(where: { $0 == newline || $0 == carriageReturn }) else {
                return bytes.append(contentsOf: utf8)
            }
            for byte in utf8 {
                switch byte {
                case newline: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
                case carriageReturn: bytes.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
                default: bytes.append(byte)
                }
            }
        }
    }
}
