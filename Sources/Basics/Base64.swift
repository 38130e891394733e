/// Standard base64 (RFC 4648, with padding).
package enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)

    /// `bytes` in base64, padded with `=`.
    package static func encode(_ bytes: some Collection<UInt8>) -> String {
        let input = Array(bytes)
        var out: [UInt8] = []
        out.reserveCapacity((input.count + 2) / 3 * 4)
        var index = 0
        while index < input.count {
            let a = input[index]
            let b = index + 1 < input.count ? input[index + 1] : 0
            let c = index + 2 < input.count ? input[index + 2] : 0
            out.append(alphabet[Int(a >> 2)])
            out.append(alphabet[Int((a & 0x03) << 4 | b >> 4)])
            out.append(index + 1 < input.count ? alphabet[Int((b & 0x0F) << 2 | c >> 6)] : UInt8(ascii: "="))
            out.append(index + 2 < input.count ? alphabet[Int(c & 0x3F)] : UInt8(ascii: "="))
            index += 3
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes `text` encodes, or nil if it is not padded standard base64.
    package static func decode(_ text: String) -> [UInt8]? {
        var values: [UInt8] = []
        values.reserveCapacity(text.utf8.count)
        var padding = 0
        for byte in text.utf8 {
            let value: UInt8
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"): value = byte - UInt8(ascii: "A")
            case UInt8(ascii: "a")...UInt8(ascii: "z"): value = byte - UInt8(ascii: "a") + 26
            case UInt8(ascii: "0")...UInt8(ascii: "9"): value = byte - UInt8(ascii: "0") + 52
            case UInt8(ascii: "+"): value = 62
            case UInt8(ascii: "/"): value = 63
            case UInt8(ascii: "="):
                padding += 1
                continue
            default: return nil
            }
            guard padding == 0 else { return nil }  // data after padding
            values.append(value)
        }
        guard (values.count + padding) % 4 == 0, padding <= 2 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(values.count * 3 / 4)
        var index = 0
        while index + 1 < values.count {
            let chunk = values[index..<min(index + 4, values.count)]
            let a = chunk[chunk.startIndex]
            let b = chunk[chunk.startIndex + 1]
            out.append(a << 2 | b >> 4)
            if chunk.count > 2 {
                let c = chunk[chunk.startIndex + 2]
                out.append((b & 0x0F) << 4 | c >> 2)
                if chunk.count > 3 { out.append((c & 0x03) << 6 | chunk[chunk.startIndex + 3]) }
            }
            index += 4
        }
        return out
    }
}
