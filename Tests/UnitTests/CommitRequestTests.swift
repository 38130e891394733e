import XCTest

@testable import Sessions

/// When the store hands its changes to the writer: at once, or when its owner, having asked,
/// submits them.
final class CommitRequestTests: XCTestCase {
    func testWithoutAnOwnerWaitingEveryChangeSubmitsAtOnce() {
        var request = CommitRequest()
        XCTAssertTrue(request.staged())
        XCTAssertTrue(request.staged())
        XCTAssertFalse(request.take(), "there is nothing for an owner to schedule")
    }

    func testTheOwnerIsToldOncePerSubmissionHoweverManyChangesComeFirst() {
        var request = CommitRequest()
        request.waitsForOwner = true
        XCTAssertFalse(request.take(), "nothing staged yet")
        XCTAssertFalse(request.staged(), "the change waits for the owner")
        XCTAssertEqual(request.state, .wanted)
        XCTAssertTrue(request.take())
        XCTAssertEqual(request.state, .taken)
        XCTAssertFalse(request.staged())
        XCTAssertFalse(request.take(), "a submission is already arranged")
        request.submitted()
        XCTAssertEqual(request.state, .idle)
        XCTAssertFalse(request.take())
        XCTAssertFalse(request.staged())
        XCTAssertTrue(request.take(), "after the submission the next change asks again")
    }

    func testASubmissionBeforeTheOwnerAskedLeavesNothingToAsk() {
        var request = CommitRequest()
        request.waitsForOwner = true
        _ = request.staged()
        request.submitted()
        XCTAssertFalse(request.take())
    }
}
