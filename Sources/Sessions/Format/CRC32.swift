/// CRC-32 (IEEE 802.3, reflected polynomial 0xEDB88320, as in zlib/PNG), slicing-by-8.
enum CRC32 {
    /// Eight 256-entry tables, table k at offset k*256.
    static let table: [UInt32] = {
        var t = [UInt32](repeating: 0, count: 8 * 256)
        for i in 0..<256 {
            var c = UInt32(i)
            for _ in 0..<8 { c = (c & 1) != 0 ? (0xEDB8_8320 ^ (c >> 1)) : (c >> 1) }
            t[i] = c
        }
        for i in 0..<256 {
            for k in 1..<8 {
                let prev = t[(k - 1) * 256 + i]
                t[k * 256 + i] = (prev >> 8) ^ t[Int(prev & 0xFF)]
            }
        }
        return t
    }()

    /// Continues a checksum `crc` (start from 0) over `buffer`.
    static func update(_ crc: UInt32, _ buffer: UnsafeRawBufferPointer) -> UInt32 {
        var c = ~crc
        let n = buffer.count
        table.withUnsafeBufferPointer { t in
            var p = 0
            while n - p >= 8 {
                let lo = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: p, as: UInt32.self)) ^ c
                let hi = UInt32(littleEndian: buffer.loadUnaligned(fromByteOffset: p + 4, as: UInt32.self))
                c =
                    t[7 * 256 + Int(lo & 0xFF)] ^ t[6 * 256 + Int((lo >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((lo >> 16) & 0xFF)] ^ t[4 * 256 + Int(lo >> 24)]
                    ^ t[3 * 256 + Int(hi & 0xFF)] ^ t[2 * 256 + Int((hi >> 8) & 0xFF)]
                    ^ t[1 * 256 + Int((hi >> 16) & 0xFF)] ^ t[Int(hi >> 24)]
                p += 8
            }
            while p < n {
                c = t[Int((c ^ UInt32(buffer[p])) & 0xFF)] ^ (c >> 8)
                p += 1
            }
        }
        return ~c
    }

    /// Checksum of a whole byte sequence.
    static func checksum<C: Collection>(_ bytes: C) -> UInt32 where C.Element == UInt8 {
        if let r = bytes.withContiguousStorageIfAvailable({ update(0, UnsafeRawBufferPointer($0)) }) {
            return r
        }
        let copy = Array(bytes)
        return copy.withUnsafeBytes { update(0, $0) }
    }
}
