import XCTest

@testable import Daemon
@testable import Vocabulary

final class HTTPVersionDocumentTests: XCTestCase {
    private let one = HTTPOrigin(isTLS: true, host: "auth.example.com", port: 443)
    private let two = HTTPOrigin(isTLS: true, host: "[::1]", port: 8443)
    private let three = HTTPOrigin(isTLS: true, host: "sso.example.org", port: 9443)

    private func decode(_ text: String) throws(HTTPVersionDocument.Damage) -> HTTPVersionDocument {
        try HTTPVersionDocument(decoding: Array(text.utf8))
    }

    private func damage(_ text: String) -> String? {
        do {
            _ = try decode(text)
            return nil
        } catch {
            return error.description
        }
    }

    func testWhatIsToldIsWrittenFirstAndReadBack() throws {
        let document = HTTPVersionDocument().merging([one: false, two: true])
        let text = String(decoding: document.encoded, as: UTF8.self)
        XCTAssertEqual(
            text, "session-cleanup-http-versions 1\nhttps://[::1]:8443 2\nhttps://auth.example.com:443 1.1\n")
        let read = try decode(text)
        XCTAssertEqual(read, document)
        XCTAssertEqual(read.http1Origins, [one])
    }

    func testAnEmptyRecordIsTheHeaderAlone() throws {
        XCTAssertEqual(
            String(decoding: HTTPVersionDocument().encoded, as: UTF8.self), "session-cleanup-http-versions 1\n")
        XCTAssertEqual(try decode("session-cleanup-http-versions 1\n").entries.count, 0)
    }

    func testMergingPutsTheLatestFirstAndKeepsTheRest() throws {
        let earlier = HTTPVersionDocument().merging([one: false, two: false])
        let later = earlier.merging([two: true, three: false])
        XCTAssertEqual(later.entries.map(\.origin), [two, three, one])
        XCTAssertEqual(later.http1Origins, [one, three])
        XCTAssertTrue(later.holds([two: true, one: false]))
        XCTAssertFalse(later.holds([two: false]), "a version that changed")
        XCTAssertFalse(later.holds([HTTPOrigin(isTLS: true, host: "new", port: 443): false]), "an origin not held")
        XCTAssertTrue(later.holds([:]))
    }

    func testAtMostTheLimitIsKeptTheOldestGoFirst() throws {
        var told: [HTTPOrigin: Bool] = [:]
        for port in 1...HTTPVersionDocument.limit { told[HTTPOrigin(isTLS: true, host: "h", port: port)] = false }
        let full = HTTPVersionDocument().merging(told)
        let more = full.merging([one: true])
        XCTAssertEqual(more.entries.count, HTTPVersionDocument.limit)
        XCTAssertEqual(more.entries.first?.origin, one)
        XCTAssertEqual(more.entries.last?.origin, full.entries[HTTPVersionDocument.limit - 2].origin)
        XCTAssertEqual(try HTTPVersionDocument(decoding: more.encoded), more)
    }

    func testOriginsThatWouldNotReadBackAreLeftOut() throws {
        let unreadable = [
            HTTPOrigin(isTLS: false, host: "plain", port: 80),  // not HTTPS
            HTTPOrigin(isTLS: true, host: "Upper", port: 443),  // read back lower-cased
            HTTPOrigin(isTLS: true, host: "a/b", port: 443),  // read back as host "a"
            HTTPOrigin(isTLS: true, host: "a b", port: 443),  // would split its line's fields
            HTTPOrigin(isTLS: true, host: "a\nb", port: 443),  // would split the lines
            HTTPOrigin(isTLS: true, host: "a\u{7F}", port: 443),
        ]
        var told = [one: false]
        for origin in unreadable { told[origin] = false }
        let document = HTTPVersionDocument().merging(told)
        XCTAssertEqual(document.entries.map(\.origin), [one])
        XCTAssertEqual(try HTTPVersionDocument(decoding: document.encoded), document)
        XCTAssertEqual(try HTTPVersionDocument(decoding: document.merging(told).encoded).http1Origins, [one])
    }

    func testTheLargestRecordADaemonWritesReadsBackAndALargerOneIsDamage() throws {
        var told: [HTTPOrigin: Bool] = [:]
        for number in 0..<HTTPVersionDocument.limit {
            let suffix = String(number)
            told[
                HTTPOrigin(isTLS: true, host: String(repeating: "h", count: 255 - suffix.count) + suffix, port: 65535)] =
                false
        }
        let largest = HTTPVersionDocument().merging(told)
        XCTAssertEqual(largest.entries.count, HTTPVersionDocument.limit)
        XCTAssertEqual(largest.encoded.count, HTTPVersionDocument.maximumBytes, "the bound is the largest written")
        XCTAssertEqual(try HTTPVersionDocument(decoding: largest.encoded), largest)

        let header = Array("session-cleanup-http-versions 1\nhttps://a:443 1.1\n".utf8)
        let tooLarge = header + [UInt8](repeating: UInt8(ascii: "x"), count: HTTPVersionDocument.maximumBytes)
        XCTAssertThrowsError(try HTTPVersionDocument(decoding: tooLarge)) {
            XCTAssertEqual("\($0)", "line 3: beyond the first \(HTTPVersionDocument.maximumBytes) bytes")
        }
    }

    func testDamageNamesTheLineAndNeverRepeatsIt() {
        XCTAssertEqual(damage(""), "line 1: not \"session-cleanup-http-versions 1\"")
        XCTAssertEqual(damage("session-cleanup-http-versions 2\n"), "line 1: not \"session-cleanup-http-versions 1\"")
        let header = "session-cleanup-http-versions 1\n"
        XCTAssertEqual(damage(header + "https://a:443 1.1\nhttps://a:443 2\n"), "line 3: the same origin as line 2")
        XCTAssertEqual(damage(header + "https://a:443 3\n"), "line 2: the version is neither 1.1 nor 2")
        for line in [
            "http://a:80 1.1", "https://a 1.1", "https://A:443 1.1", "https://user:secret@a:443 1.1",
            "https://a:443/path 1.1", "https://a:443  1.1", "https://[:\u{14}1]:8443 2", "https://a\u{7F}:443 1.1",
            "https://a:443", "", "https://a:443 1.1 x",
        ] {
            let description = damage(header + line + "\n")
            XCTAssertEqual(description, "line 2: not \"https://HOST:PORT VERSION\"", line)
            XCTAssertFalse(description?.contains("secret") ?? false)
        }
        XCTAssertNil(damage(header + "https://a:443 1.1"), "the last newline may be missing")
    }
}
