import Foundation
import XCTest

@testable import Configuration

/// ``CredentialReader``: a credential file holds one line; its line ending goes, any other line
/// break is refused — compared as bytes, since `"\r\n"` is one `Character`.
final class CredentialReaderTests: XCTestCase {
    private var directory = ""

    override func setUpWithError() throws {
        let name = "credentials-\(UUID().uuidString)"
        directory = FileManager.default.temporaryDirectory.appendingPathComponent(name).path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
    }

    override func tearDownWithError() throws {
        try FileManager.default.removeItem(atPath: directory)
    }

    private func token(holding text: String) throws(ConfigurationError) -> String {
        XCTAssertTrue(FileManager.default.createFile(atPath: directory + "/api", contents: Data(text.utf8)))
        return try CredentialReader.token(named: "api", in: directory)
    }

    func testTheLineEndingIsDroppedWhateverItIs() throws {
        XCTAssertEqual(try token(holding: "hunter2"), "hunter2")
        XCTAssertEqual(try token(holding: "hunter2\n"), "hunter2")
        XCTAssertEqual(try token(holding: "hunter2\r\n"), "hunter2", "a CRLF file (written on Windows, say)")
        XCTAssertEqual(try token(holding: "hunter2\r\n\r\n"), "hunter2")
    }

    func testALineBreakInsideOrNothingButLineBreaksIsRefusedWithoutQuotingTheToken() {
        for text in ["hun\r\nter2", "hun\nter2", "hun\rter2", "", "\r\n", "\n"] {
            XCTAssertThrowsError(try token(holding: text), text.debugDescription) { error in
                let message = "\(error)"
                XCTAssertTrue(message.contains("must hold one non-empty line"), message)
                XCTAssertFalse(message.contains("hun"), message)
            }
        }
    }
}
