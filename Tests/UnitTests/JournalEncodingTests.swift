import XCTest

@testable import Journal
@testable import Sessions

final class JournalEncodingTests: XCTestCase {
    private func text(_ bytes: [UInt8]) -> String { String(decoding: bytes, as: UTF8.self) }

    func testNativeEntriesCarryTheEventIdAndTheSwiftCallSite() {
        let entry = JournalEntry(.stopBegun, "SIGTERM received", [JournalField(.signal, "SIGTERM")])
        let line = #line - 1
        let encoded = text(JournalEncoding.native(entry, identifier: "session-cleanup", dropped: 0))
        XCTAssertEqual(
            encoded,
            """
            MESSAGE=SIGTERM received
            PRIORITY=6
            SYSLOG_IDENTIFIER=session-cleanup
            MESSAGE_ID=f0c7b3496fc546efa0acfe2148663258
            SESSION_CLEANUP_EVENT=stop-begun
            CODE_FILE=UnitTests/JournalEncodingTests.swift
            CODE_LINE=\(line)
            CODE_FUNC=testNativeEntriesCarryTheEventIdAndTheSwiftCallSite()
            SIGNAL=SIGTERM

            """)
    }

    func testADurationInMicrosecondsGetsATwinForPeopleInTheJournalOnly() {
        var entry = JournalEntry(
            .runFinished, "done",
            [
                JournalField(.budgetUsec, "25000000"), JournalField(.durationUsec, "1200"),
                JournalField(.timeRemainingUsec, "360000000"),
            ])
        entry.location = nil
        let native = text(JournalEncoding.native(entry, identifier: "t", dropped: 0))
        XCTAssertTrue(native.contains("BUDGET_USEC=25000000\nBUDGET=25 s\n"), native)
        XCTAssertTrue(native.contains("DURATION_USEC=1200\nDURATION=1 ms\n"), native)
        XCTAssertTrue(native.contains("TIME_REMAINING_USEC=360000000\nTIME_REMAINING=6 min\n"), native)
        XCTAssertFalse(text(JournalEncoding.line(entry, dropped: 0)).contains("BUDGET="), "stderr keeps one form")
    }

    func testASessionIDFieldIsWrittenAsItsHexDigitsInBothForms() {
        let id = SessionID(rawValue: 0x0123_4567_89ab_cdef)
        var byID = JournalEntry(
            .callsEnded, "ended", [JournalField(.sessionID, id), JournalField(.sessionID, .init(rawValue: 0))])
        byID.location = nil
        var byText = byID
        byText.fields = [JournalField(.sessionID, id.description), JournalField(.sessionID, "0000000000000000")]
        XCTAssertEqual(byID.fields, byText.fields, "equal by value, whatever they hold")
        XCTAssertEqual(byID.values(of: .sessionID), ["0123456789abcdef", "0000000000000000"])
        XCTAssertEqual(
            JournalEncoding.native(byID, identifier: "t", dropped: 0),
            JournalEncoding.native(byText, identifier: "t", dropped: 0))
        XCTAssertEqual(JournalEncoding.line(byID, dropped: 0), JournalEncoding.line(byText, dropped: 0))
        XCTAssertTrue(text(JournalEncoding.line(byID, dropped: 0)).contains(" SESSION_ID=0123456789abcdef "))
    }

    /// A field's value is one line (`journalctl -o export` and field matches see it whole): a raw
    /// newline, e.g. in a STOP_REASON= quoting a configuration error, is written as backslash-n.
    func testAFieldValueWithANewlineIsWrittenOnOneLine() {
        var entry = JournalEntry(.reloadFailed, "bad", [JournalField(.stopReason, "line 1\nline 2\r")])
        entry.location = nil
        let native = text(JournalEncoding.native(entry, identifier: "x", dropped: 0))
        XCTAssertTrue(native.hasSuffix("\nSTOP_REASON=line 1\\nline 2\\r\n"), native)
    }

    func testAMessageWithANewlineUsesTheBinaryForm() {
        var entry = JournalEntry(.reloadFailed, "line 1\nline 2", [])
        entry.location = nil
        let bytes = JournalEncoding.native(entry, identifier: "x", dropped: 0)
        var expected = Array("MESSAGE\n".utf8)
        expected += [13, 0, 0, 0, 0, 0, 0, 0]  // 13 as 64-bit little endian
        expected += Array("line 1\nline 2\n".utf8)
        XCTAssertTrue(bytes.prefix(expected.count).elementsEqual(expected), text(bytes))
    }

    func testRepeatedFieldsAreAllWritten() {
        let entry = JournalEntry(
            .callsEnded, "2 sessions ended", [JournalField(.sessionID, "a"), JournalField(.sessionID, "b")])
        let encoded = text(JournalEncoding.native(entry, identifier: "x", dropped: 0))
        XCTAssertTrue(encoded.hasSuffix("SESSION_ID=a\nSESSION_ID=b\n"), encoded)
    }

    func testTheDroppedCountTravelsWithTheNextEntry() {
        let entry = JournalEntry(.ready, "Ready")
        let native = text(JournalEncoding.native(entry, identifier: "x", dropped: 7))
        XCTAssertTrue(native.contains("\nJOURNAL_DROPPED=7\n"), native)
        XCTAssertTrue(native.hasPrefix("MESSAGE=Ready (7 earlier journal entries were dropped"), native)
        let line = text(JournalEncoding.line(entry, dropped: 7))
        XCTAssertTrue(line.hasSuffix(" JOURNAL_DROPPED=7]\n"), line)
    }

    func testLinesArePrefixedWithThePriorityAndKeepNewlinesOnOneLine() {
        let entry = JournalEntry(
            .callFinished, "Session x failed", [JournalField(.error, "two\nlines"), JournalField(.outcome, "failed")])
        XCTAssertEqual(
            text(JournalEncoding.line(entry, dropped: 0)),
            "<4>Session x failed [SESSION_CLEANUP_EVENT=call-finished ERROR=two\\nlines OUTCOME=failed]\n")
    }

    func testANativeEntryJournaldRefusedIsWrittenAsTheSameLineItsEntryMakes() {
        let id = SessionID(rawValue: 0x0123_4567_89ab_cdef)
        let entries = [
            JournalEntry(.stopBegun, "SIGTERM received", [JournalField(.signal, "SIGTERM")]),
            JournalEntry(.reloadFailed, "two\nlines", [JournalField(.error, "a\nb=c"), JournalField(.sessionID, id)]),
            JournalEntry(.callFinished, String(repeating: "x", count: 70_000)),
        ]
        for entry in entries {
            for dropped in [0, 3] {
                let native = JournalEncoding.native(entry, identifier: "session-cleanup", dropped: dropped)
                XCTAssertEqual(
                    text(JournalEncoding.line(fromNative: native)), text(JournalEncoding.line(entry, dropped: dropped)))
            }
        }
    }
}
