import XCTest

@testable import Sessions

final class CRC32Tests: XCTestCase {
    /// Bit-at-a-time reference implementation.
    private func reference(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = (c & 1) != 0 ? (0xEDB8_8320 ^ (c >> 1)) : (c >> 1) }
        }
        return ~c
    }

    func testCRC32MatchesStandardCheckValue() {
        XCTAssertEqual(CRC32.checksum(Array("123456789".utf8)), 0xCBF4_3926)
        XCTAssertEqual(CRC32.checksum([UInt8]()), 0)
        XCTAssertEqual(CRC32.checksum(Array("The quick brown fox jumps over the lazy dog".utf8)), 0x414F_A339)
    }

    func testSlicingBy8MatchesBitwiseReferenceForAllLengthsAndAlignments() {
        var rng = SystemRandomNumberGenerator()
        let data = (0..<300).map { _ in UInt8.random(in: 0...255, using: &rng) }
        for start in 0..<9 {
            for end in stride(from: start, through: data.count, by: 7) {
                let slice = Array(data[start..<end])
                XCTAssertEqual(CRC32.checksum(slice), reference(slice), "range \(start)..<\(end)")
            }
        }
    }

    func testIncrementalUpdateEqualsOneShot() {
        let a = Array("hello, ".utf8)
        let b = Array("world".utf8)
        let incremental = b.withUnsafeBytes { rb in a.withUnsafeBytes { ra in CRC32.update(CRC32.update(0, ra), rb) } }
        XCTAssertEqual(incremental, CRC32.checksum(a + b))
    }
}
