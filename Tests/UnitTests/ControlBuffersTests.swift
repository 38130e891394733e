import XCTest

@testable import Control

/// The bytes a control connection holds: request lines cut from what was received, and the reply
/// being written.
final class ControlBuffersTests: XCTestCase {
    private func bytes(_ text: String) -> ArraySlice<UInt8> { ArraySlice(text.utf8) }

    func testLinesAreCutAtNewlinesWithoutTheirCarriageReturns() {
        var lines = RequestLineBuffer()
        lines.append(bytes("{\"op\":\"list\"}\r\n{\"op\":\"st"))
        XCTAssertEqual(lines.nextLine(maxBytes: 100), .line(Array(#"{"op":"list"}"#.utf8)))
        XCTAssertEqual(lines.nextLine(maxBytes: 100), .none)
        XCTAssertTrue(lines.hasPartialRequest)
        lines.append(bytes("atus\"}\n"))
        XCTAssertEqual(lines.nextLine(maxBytes: 100), .line(Array(#"{"op":"status"}"#.utf8)))
        XCTAssertEqual(lines.pendingCount, 0)
    }

    func testALineOfExactlyTheLimitIsTakenAndOneByteMoreIsTooLong() {
        var lines = RequestLineBuffer()
        lines.append(bytes(String(repeating: "a", count: 8) + "\n" + String(repeating: "b", count: 9) + "\n"))
        XCTAssertEqual(lines.nextLine(maxBytes: 8), .line(Array(repeating: UInt8(ascii: "a"), count: 8)))
        XCTAssertEqual(lines.nextLine(maxBytes: 8), .tooLong)
    }

    func testAnUnfinishedLineOverTheLimitIsTooLongBeforeItsNewline() {
        var lines = RequestLineBuffer()
        lines.append(bytes(String(repeating: "a", count: 9)))
        XCTAssertEqual(lines.nextLine(maxBytes: 8), .tooLong)
    }

    func testTheUnterminatedLastLineIsARequestButWhitespaceIsNot() {
        var lines = RequestLineBuffer()
        lines.append(bytes("{\"op\":\"list\"}\r"))
        XCTAssertEqual(lines.nextLine(maxBytes: 100), .none)
        XCTAssertEqual(lines.takeUnterminatedLine(), Array(#"{"op":"list"}"#.utf8))
        XCTAssertEqual(lines.pendingCount, 0)
        lines.append(bytes(" \t\r"))
        XCTAssertFalse(lines.hasPartialRequest)
        XCTAssertNil(lines.takeUnterminatedLine())
    }

    func testCompactingKeepsWhatIsNotTaken() {
        var lines = RequestLineBuffer()
        lines.append(bytes("a\nb\nc"))
        XCTAssertEqual(lines.nextLine(maxBytes: 10), .line([UInt8(ascii: "a")]))
        lines.compact()
        XCTAssertEqual(lines.pendingCount, 3)
        XCTAssertEqual(lines.nextLine(maxBytes: 10), .line([UInt8(ascii: "b")]))
        lines.discard()
        XCTAssertEqual(lines.pendingCount, 0)
        XCTAssertEqual(lines.nextLine(maxBytes: 10), .none)
    }

    func testAReplyIsWrittenInPiecesAndReleasedOnceOut() {
        var reply = ReplyBuffer()
        XCTAssertTrue(reply.isEmpty)
        reply.append(Array("hello\n".utf8))
        reply.written(2)
        XCTAssertFalse(reply.isEmpty)
        reply.append(Array("more\n".utf8))
        XCTAssertEqual(reply.withUnsentBytes { Array($0) }, Array("llo\nmore\n".utf8), "queued behind the rest")
        reply.written(9)
        XCTAssertTrue(reply.isEmpty)
        reply.append(Array("x\n".utf8))
        XCTAssertEqual(reply.withUnsentBytes { Array($0) }, Array("x\n".utf8))
        reply.clear()
        XCTAssertTrue(reply.isEmpty)
    }
}
