import CCurl
import XCTest

@testable import HTTPEngine
@testable import Vocabulary

final class TransportFailureKindTests: XCTestCase {
    func testCurlCodesMapToFailureKinds() {
        let expected: [(CURLcode, TransportFailure.Kind)] = [
            (CURLE_COULDNT_RESOLVE_HOST, .resolve), (CURLE_COULDNT_CONNECT, .connect),
            (CURLE_OPERATION_TIMEDOUT, .timeout), (CURLE_PEER_FAILED_VERIFICATION, .tls),
            (CURLE_SSL_CONNECT_ERROR, .tls), (CURLE_RECV_ERROR, .sendReceive), (CURLE_SEND_ERROR, .sendReceive),
            (CURLE_GOT_NOTHING, .sendReceive), (CURLE_PARTIAL_FILE, .sendReceive),
            (CURLE_FILESIZE_EXCEEDED, .tooLarge), (CURLE_WEIRD_SERVER_REPLY, .other),
        ]
        for (code, kind) in expected {
            XCTAssertEqual(TransferOutcome.kind(of: code), kind, "curl code \(code.rawValue)")
        }
    }

    func testDescriptionNamesKindAndPeer() {
        let failure = TransportFailure(kind: .connect, peer: "[::1]:8080", detail: "Connection refused")
        XCTAssertEqual("\(failure)", "connect failure talking to [::1]:8080: Connection refused")
    }
}
