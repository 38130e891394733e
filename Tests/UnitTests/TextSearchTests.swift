import XCTest

@testable import Basics

/// ``StringProtocol/containsText(_:)`` and its kin: UTF-8 bytes compared, every occurrence found.
final class TextSearchTests: XCTestCase {
    func testFindsTheFirstOccurrenceAsARangeOfTheString() throws {
        let text = "https://user:pw@host/a://b"
        let range = try XCTUnwrap(text.rangeOfText("://"))
        XCTAssertEqual(text[..<range.lowerBound], "https")
        XCTAssertEqual(text[range.upperBound...], "user:pw@host/a://b")
        XCTAssertNil(text.rangeOfText(":///"))
        XCTAssertNil("ab".rangeOfText("abc"))
        XCTAssertEqual("abc".rangeOfText(""), "abc".startIndex..<"abc".startIndex)
        let tail = text[range.upperBound...]
        let second = try XCTUnwrap(tail.rangeOfText("://"))
        XCTAssertEqual(text[second.upperBound...], "b", "a substring's range is in the string's indices")
    }

    func testComparesBytesNotCharacters() {
        XCTAssertTrue("a\r\nb".containsText("\n"), "a CRLF holds a newline")
        XCTAssertEqual("a\r\nb".replacingText("\n", with: " "), "a\r b")
        XCTAssertTrue("x{session}\u{301}".containsText("{session}"), "a combining mark after it")
        XCTAssertFalse("cafe\u{301}".containsText("café"), "no Unicode equivalence")
        XCTAssertTrue("naïve".containsText("ï"))
    }

    func testReplacesEveryOccurrenceLeftToRightWithoutOverlap() {
        XCTAssertEqual("a{s}b{s}{s}".replacingText("{s}", with: "KEY"), "aKEYbKEYKEY")
        XCTAssertEqual("aaaa".replacingText("aa", with: "b"), "bb")
        XCTAssertEqual("aaa".replacingText("aa", with: "b"), "ba")
        XCTAssertEqual("none here".replacingText("{s}", with: "x"), "none here")
        XCTAssertEqual("{s}".replacingText("{s}", with: ""), "")
        XCTAssertEqual("é{s}é".replacingText("{s}", with: "😀"), "é😀é")
        XCTAssertEqual("abc".replacingText("", with: "x"), "abc", "an empty text is not replaced")
    }

    func testSplitsKeepingEmptyPieces() {
        XCTAssertEqual("https://h/{s}/x/{s}".pieces(separatedBy: "{s}"), ["https://h/", "/x/", ""])
        XCTAssertEqual("{s}{s}".pieces(separatedBy: "{s}"), ["", "", ""])
        XCTAssertEqual("plain".pieces(separatedBy: "{s}"), ["plain"])
        XCTAssertEqual("".pieces(separatedBy: "{s}"), [""])
        XCTAssertEqual("aéb".pieces(separatedBy: "é"), ["a", "b"])
    }
}
