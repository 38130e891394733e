import Foundation
import XCTest

@testable import Journal

/// The shipped message catalog is the event registry's, word for word. After changing an event
/// in `JournalEvents.swift`, regenerate it:
///
///     SC_UPDATE_CATALOG=1 swift test --skip-build --filter CatalogTests
final class CatalogTests: XCTestCase {
    private var catalogPath: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("systemd/session-cleanup.catalog").path
    }

    func testTheShippedCatalogIsGeneratedFromTheEventRegistry() throws {
        let expected = JournalCatalog.text()
        if ProcessInfo.processInfo.environment["SC_UPDATE_CATALOG"] == "1" {
            try expected.write(toFile: catalogPath, atomically: true, encoding: .utf8)
        }
        let shipped = try String(contentsOfFile: catalogPath, encoding: .utf8)
        XCTAssertEqual(
            shipped, expected,
            "systemd/session-cleanup.catalog is out of date: SC_UPDATE_CATALOG=1 swift test --filter CatalogTests")
    }
}
