import XCTest

@testable import EventLoop
@testable import Journal
@testable import Systemd
@testable import TestSupport

final class JournalFieldTests: XCTestCase {
    func testEveryFieldNameTheDaemonUsesIsOneJournaldKeeps() {
        for name in JournalField.Name.allConstants {
            XCTAssertTrue(JournalField.Name.isValid(name.rawValue), "\(name) would be dropped by journald")
        }
        XCTAssertEqual(Set(JournalField.Name.allConstants).count, JournalField.Name.allConstants.count)
    }

    func testNamesJournaldDropsAreRefused() {
        for bad in [
            "session_id", "_SESSION_ID", "1ST", "SESSION-ID", "SESSION ID", "", String(repeating: "A", count: 65),
        ] {
            XCTAssertNil(JournalField.Name(validating: bad), "'\(bad)' must be refused")
        }
        XCTAssertNotNil(JournalField.Name(validating: "SESSION_ID"))
        XCTAssertNotNil(JournalField.Name(validating: "A1_B2"))
    }

    func testMemoryJournalFindsEntriesByEvent() {
        let journal = MemoryJournal()
        journal.record(JournalEntry(.ready, "a"))
        journal.record(JournalEntry(.stopped, "b", [JournalField(.durationUsec, 42)]))
        XCTAssertEqual(journal.entries(event: "stopped").first?.value(of: .durationUsec), "42")
    }

    func testNotifyAssignmentsAreTheExactProtocolStrings() {
        XCTAssertEqual(NotifyAssignment.ready.description, "READY=1")
        XCTAssertEqual(NotifyAssignment.stopping.description, "STOPPING=1")
        XCTAssertEqual(NotifyAssignment.extendTimeout(.seconds(30)).description, "EXTEND_TIMEOUT_USEC=30000000")
        XCTAssertEqual(NotifyAssignment.status("two\nlines").description, "STATUS=two lines")
        XCTAssertEqual(
            NotifyAssignment.reloading(MonotonicInstant(microseconds: 7)).description, "RELOADING=1\nMONOTONIC_USEC=7")
    }
}
