import Foundation
import XCTest

@testable import Configuration
@testable import Daemon

/// `[Store] KeyCredential=`: how the key is read, and the credential it names: exactly 32 bytes,
/// every other case an error naming the file and what was wrong, never the bytes.
final class StoreKeyConfigurationTests: XCTestCase {
    private func load(_ text: String) throws -> Configuration {
        try ConfigurationLoader.load(files: [(path: "test.conf", bytes: Array(text.utf8))])
    }

    private func credentials(_ bytes: [UInt8]) throws -> String {
        let directory = NSTemporaryDirectory() + "store-key-test-\(getpid())-\(UInt64.random(in: 0...UInt64.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: false)
        addTeardownBlock { try? FileManager.default.removeItem(atPath: directory) }
        try Data(bytes).write(to: URL(fileURLWithPath: directory + "/store-key"))
        return directory
    }

    func testKeyCredentialNamesACredentialOrNothing() throws {
        XCTAssertNil(try load("").store.keyCredential, "default: keys in clear")
        XCTAssertEqual(try load("[Store]\nKeyCredential=store-key\n").store.keyCredential, "store-key")
        XCTAssertNil(try load("[Store]\nKeyCredential=store-key\n[Store]\nKeyCredential=\n").store.keyCredential)
        XCTAssertThrowsError(try load("[Store]\nKeyCredential=/etc/credstore/key\n")) { error in
            XCTAssertTrue("\(error)".contains("a credential name"), "\(error)")
        }
        XCTAssertThrowsError(try load("[Store]\nKeyCredentials=x\n")) { error in
            XCTAssertTrue("\(error)".contains("did you mean KeyCredential=?"), "\(error)")
        }
    }

    func testTheKeyIsExactly32BytesAndEveryOtherCaseSaysWhatIsWrongWithoutTheBytes() throws {
        var settings = StoreSettings()
        XCTAssertNil(try StoreKeyCredential.load(settings, from: nil), "unset: no key")
        settings.keyCredential = "store-key"
        XCTAssertNotNil(
            try StoreKeyCredential.load(settings, from: try credentials([UInt8](repeating: 0x5A, count: 32))))
        let cases: [([UInt8], String)] = [
            (Array("ZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZZ".utf8), "must hold exactly 32 random bytes (it holds 33)"),
            ([], "is empty"),
            (
                Array(CredentialReader.missingFileStandIn.utf8),
                "the file the unit's LoadCredentialEncrypted=store-key: names is missing"
            ),
        ]
        for (bytes, expected) in cases {
            let directory = try credentials(bytes)
            XCTAssertThrowsError(try StoreKeyCredential.load(settings, from: directory)) { error in
                let text = "\(error)"
                XCTAssertTrue(text.contains("[Store] KeyCredential=store-key"), text)
                XCTAssertTrue(text.contains(directory + "/store-key"), "names the file: \(text)")
                XCTAssertTrue(text.contains(expected), text)
                XCTAssertFalse(text.contains("ZZZZ"), "never the bytes: \(text)")
                XCTAssertTrue(DaemonConfigurationLoader.isStoreKeyProblem(error as! ConfigurationError))
            }
        }
        var configuration = Configuration()
        configuration.store = settings
        XCTAssertThrowsError(
            try DaemonConfigurationLoader.checkCredentials(of: configuration, in: try credentials([1, 2, 3]))
        ) { XCTAssertTrue(DaemonConfigurationLoader.isStoreKeyProblem($0 as! ConfigurationError), "\($0)") }
        XCTAssertNoThrow(
            try DaemonConfigurationLoader.checkCredentials(
                of: configuration, in: try credentials([UInt8](repeating: 1, count: 32))))
    }
}
