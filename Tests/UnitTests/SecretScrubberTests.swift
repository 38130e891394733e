import XCTest

@testable import HTTPEngine

final class SecretScrubberTests: XCTestCase {
    func testPathQueryUserInfoAndHeaderValuesAreRemovedButTheHostStays() {
        let scrubber = SecretScrubber(
            url: "https://alice:pa55word@auth.example:8443/user/SK-12345/endsession?key=QK-999#frag",
            headers: ["Authorization: Bearer tok-abcdef", "X-Session: SK-12345"])
        let text = """
            Failed https://alice:pa55word@auth.example:8443/user/SK-12345/endsession?key=QK-999#frag \
            /user/SK-12345/endsession SK-12345 QK-999 tok-abcdef pa55word alice on auth.example port 8443
            """
        let scrubbed = scrubber.scrub(text)
        for secret in ["SK-12345", "QK-999", "tok-abcdef", "pa55word", "alice", "/user/", "endsession"] {
            XCTAssertFalse(scrubbed.contains(secret), "\(secret) left in \(scrubbed)")
        }
        XCTAssertTrue(scrubbed.contains("auth.example port 8443"), scrubbed)
    }

    func testShortPiecesAreNotTreatedAsSecrets() {
        let scrubber = SecretScrubber(url: "http://h/a/to/v1", headers: [])
        XCTAssertEqual(scrubber.scrub("Failed to connect to h port 80"), "Failed to connect to h port 80")
    }

    func testTextWithoutSecretsIsUnchanged() {
        let scrubber = SecretScrubber(url: "http://127.0.0.1:9/user/KEY-1234/endsession", headers: [])
        let text = "Failed to connect to 127.0.0.1 port 9 after 0 ms: Couldn't connect to server"
        XCTAssertEqual(scrubber.scrub(text), text)
    }
}
