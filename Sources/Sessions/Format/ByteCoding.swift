/// The store's primitive encodings (docs/store-format.md, "Values"): little-endian integers,
/// LEB128 varints, zigzag varints for signed values, strings as a varint byte length followed by
/// UTF-8, optional strings behind a one-byte flag.

/// A failure to decode bytes; `offset` is relative to the start of the buffer being decoded.
struct DecodeError: Error, Sendable {
    /// Byte offset within the decoded buffer.
    var offset: Int
    /// What was wrong (static text, never contains data).
    var reason: StaticString
}

/// Appends encoded values to a byte array.
struct ByteWriter {
    var bytes: [UInt8] = []

    init(capacity: Int = 0) { bytes.reserveCapacity(capacity) }

    mutating func u8(_ v: UInt8) { bytes.append(v) }
    mutating func u32(_ v: UInt32) {
        withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
    }
    mutating func u64(_ v: UInt64) {
        withUnsafeBytes(of: v.littleEndian) { bytes.append(contentsOf: $0) }
    }
    mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 {
            bytes.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        bytes.append(UInt8(v))
    }
    mutating func zigzag(_ v: Int64) { varint(UInt64(bitPattern: (v << 1) ^ (v >> 63))) }
    mutating func string(_ s: String) {
        let utf8 = s.utf8
        varint(UInt64(utf8.count))
        bytes.append(contentsOf: utf8)
    }
    mutating func optionalString(_ s: String?) {
        if let s {
            u8(1)
            string(s)
        } else {
            u8(0)
        }
    }
}

/// Reads encoded values from a raw buffer, bounds-checked; throws `DecodeError` with the offset.
struct ByteReader {
    let buffer: UnsafeRawBufferPointer
    var offset: Int
    let end: Int

    init(_ buffer: UnsafeRawBufferPointer, offset: Int = 0, end: Int? = nil) {
        self.buffer = buffer
        self.offset = offset
        self.end = end ?? buffer.count
    }

    var remaining: Int { end - offset }

    mutating func u8() throws(DecodeError) -> UInt8 {
        guard offset < end else { throw DecodeError(offset: offset, reason: "unexpected end of record") }
        defer { offset += 1 }
        return buffer[offset]
    }
    mutating func u32() throws(DecodeError) -> UInt32 {
        guard end - offset >= 4 else { throw DecodeError(offset: offset, reason: "unexpected end of record") }
        defer { offset += 4 }
        return UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt32.self))
    }
    mutating func u64() throws(DecodeError) -> UInt64 {
        guard end - offset >= 8 else { throw DecodeError(offset: offset, reason: "unexpected end of record") }
        defer { offset += 8 }
        return UInt64(littleEndian: buffer.loadUnaligned(fromByteOffset: offset, as: UInt64.self))
    }
    mutating func varint() throws(DecodeError) -> UInt64 {
        var result: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let start = offset
            let b = try u8()
            if shift == 63 && b > 1 { throw DecodeError(offset: start, reason: "varint overflows 64 bits") }
            result |= UInt64(b & 0x7F) << shift
            if b & 0x80 == 0 { return result }
            shift += 7
            if shift > 63 { throw DecodeError(offset: start, reason: "varint overflows 64 bits") }
        }
    }
    mutating func zigzag() throws(DecodeError) -> Int64 {
        let u = try varint()
        return Int64(bitPattern: (u >> 1) ^ (0 &- (u & 1)))
    }
    mutating func length() throws(DecodeError) -> Int {
        let start = offset
        let n = try varint()
        guard n <= UInt64(remaining) else { throw DecodeError(offset: start, reason: "length exceeds record") }
        return Int(n)
    }
    mutating func string() throws(DecodeError) -> String {
        let n = try length()
        let s = String(decoding: UnsafeRawBufferPointer(rebasing: buffer[offset..<offset + n]), as: UTF8.self)
        offset += n
        return s
    }
    mutating func optionalString() throws(DecodeError) -> String? {
        let start = offset
        switch try u8() {
        case 0: return nil
        case 1: return try string()
        default: throw DecodeError(offset: start, reason: "bad optional-string flag")
        }
    }
}

extension Array where Element == UInt8 {
    /// `withUnsafeBytes` for a body that throws a `StoreError` (the standard one only rethrows
    /// `any Error`).
    func withStoreBytes<R>(_ body: (UnsafeRawBufferPointer) throws(StoreError) -> R) throws(StoreError) -> R {
        let result = withUnsafeBytes { raw in Result { () throws(StoreError) -> R in try body(raw) } }
        return try result.get()
    }
}

extension Optional where Wrapped == [UInt8] {
    /// The bytes of the array, or nil, for a body that throws a `StoreError`.
    func withOptionalBytes<R>(_ body: (UnsafeRawBufferPointer?) throws(StoreError) -> R) throws(StoreError) -> R {
        guard let bytes = self else { return try body(nil) }
        return try bytes.withStoreBytes { raw throws(StoreError) in try body(raw) }
    }
}
