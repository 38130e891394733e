import XCTest

@testable import Journal

/// The event registry: stable, unique ids, and priorities that keep floods out of the pools the
/// lifecycle and summary entries use (journald rate-limits per unit and per pool of priorities).
final class JournalEventTests: XCTestCase {
    func testEveryEventHasAUniqueNameAndA128BitMessageID() {
        let events = JournalEvent.all
        XCTAssertEqual(Set(events.map(\.name)).count, events.count)
        XCTAssertEqual(Set(events.map(\.messageID)).count, events.count)
        for event in events {
            XCTAssertEqual(event.messageID.count, 32, event.name)
            XCTAssertTrue(event.messageID.allSatisfy { "0123456789abcdef".contains($0) }, event.name)
            XCTAssertFalse(event.subject.isEmpty || event.explanation.isEmpty, event.name)
            XCTAssertFalse(event.explanation.contains("\n-- "), "\(event.name): a catalog line may not start with --")
            XCTAssertEqual(JournalEvent.named(event.name), event)
        }
    }

    func testTheLifecycleAndSummaryEntriesNeverShareThePoolsOfFloods() {
        // Floods: per-call outcomes not ended (warning), registrations (debug).
        let floods = [JournalEvent.callFinished, .registered, .unregistered]
        XCTAssertEqual(floods.map(\.priority), [.warning, .debug, .debug])
        XCTAssertTrue(floods.allSatisfy(\.isBulk))
        let lifecycle: [JournalEvent] = [
            .started, .storeLoaded, .ready, .runBegun, .stopBegun, .secondSignal, .expired, .callsEnded, .runFinished,
            .stopped, .registrations, .journalIncomplete,
        ]
        for event in lifecycle {
            XCTAssertTrue([.info, .notice].contains(event.priority), "\(event.name) must be info or notice")
        }
        for event in JournalEvent.all where !event.isBulk {
            XCTAssertNotEqual(event.priority, .debug, "\(event.name) would share the registrations' pool")
        }
    }

    func testEntriesTakeTheEventsPriorityUnlessTheCallSiteChoosesAnother() {
        XCTAssertEqual(JournalEntry(.stopBegun, "x").priority, .info)
        XCTAssertEqual(JournalEntry(.runFinished, "x", priority: .notice).priority, .notice)
        XCTAssertEqual(JournalEntry(.ready, "x").value(of: .event), "ready")
    }

    func testTheCatalogHasOneEntryPerEvent() {
        let catalog = JournalCatalog.text()
        for event in JournalEvent.all {
            XCTAssertTrue(catalog.contains("\n-- \(event.messageID)\nSubject: \(event.subject)\n"), event.name)
        }
        XCTAssertEqual(catalog.components(separatedBy: "\n-- ").count - 1, JournalEvent.all.count)
    }
}
