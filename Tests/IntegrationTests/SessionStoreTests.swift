import Foundation
import Glibc
import XCTest

@testable import Sessions

/// The store on real files: durability, what client changes and run results do in memory and
/// on disk, damage found at open, compaction in the background, files and descriptors.
final class SessionStoreTests: XCTestCase {
    private var dirs: [String] = []

    override func tearDown() {
        for d in dirs { try? FileManager.default.removeItem(atPath: d) }
        dirs.removeAll()
        super.tearDown()
    }

    // MARK: Helpers

    private func makeDir() throws -> String {
        let path = "/tmp/session-store-test-\(getpid())-\(SessionID.random())"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        dirs.append(path)
        return path
    }

    private func session(_ n: Int, uid: UInt32 = 1000, secret: String? = nil) -> Session {
        Session(
            id: SessionID(rawValue: 0x5E55_0000_0000_0000 | UInt64(n)),
            key: SessionKey(secret ?? "secret-key-\(n)-abcdefghijklmnop"),
            endpoints: ["auth"], ownerUID: uid, label: n % 2 == 0 ? "label \(n)" : nil,
            registeredAt: 1_700_000_000_000_000 + UInt64(n))
    }

    /// Registers and waits until durable; fails the test if it was not.
    private func register(
        _ sessions: [Session], in store: SessionStore, file: StaticString = #filePath, line: UInt = #line
    )
        throws
    {
        var errors: [StoreError] = []
        for s in sessions { try store.register(s) { if let e = $0 { errors.append(e) } } }
        XCTAssertTrue(store.flush(), "flush", file: file, line: line)
        XCTAssertEqual(errors.map(\.message), [], file: file, line: line)
    }

    private func bytes(_ path: String) throws -> [UInt8] { [UInt8](try Data(contentsOf: URL(fileURLWithPath: path))) }
    private func write(_ b: [UInt8], _ path: String) throws { try Data(b).write(to: URL(fileURLWithPath: path)) }
    private func files(_ dir: String) throws -> [String] {
        try FileManager.default.contentsOfDirectory(atPath: dir).sorted()
    }
    private func mode(_ path: String) -> mode_t {
        var st = stat()
        XCTAssertEqual(stat(path, &st), 0, path)
        return st.st_mode & 0o777
    }
    private func log(_ dir: String) -> String { dir + "/" + StoreFormat.logFileName }
    private func snapshot(_ dir: String) -> String { dir + "/" + StoreFormat.snapshotFileName }
    private func reopen(_ dir: String) throws -> (SessionStore, LoadReport) { try SessionStore.open(directory: dir) }
    /// The log's commit frames (its header frame left out).
    private func commitFrames(_ dir: String) throws -> [StoreFrame.Scanned] {
        try bytes(log(dir)).withUnsafeBytes { LogReader.read($0, formatHint: nil).frames }
    }

    // MARK: Durability

    func testRegisteredSessionsRoundTripThroughCommitAndReopen() throws {
        let dir = try makeDir()
        let (store, report) = try SessionStore.open(directory: dir)
        XCTAssertTrue(report.createdNewStore)
        XCTAssertTrue(report.isClean)
        let sessions = (0..<50).map { session($0, uid: UInt32(1000 + $0 % 3)) }
        try register(sessions.reversed(), in: store)
        XCTAssertFalse(store.hasUnsavedChanges)
        store.close()

        let (again, report2) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report2.isClean, report2.description)
        XCTAssertEqual(report2.sessionCount, 50)
        XCTAssertEqual(again.allSessions, sessions, "allSessions is sorted by registeredAt")
        XCTAssertEqual(again.session(id: sessions[7].id), sessions[7])
        XCTAssertEqual(again.sessions(ownedBy: 1001), sessions.filter { $0.ownerUID == 1001 })
        XCTAssertEqual(again.count(ownedBy: 1001), 17)
    }

    func testARegistrationIsInTheStoreOnlyOnceDurableAndIsAnsweredOnce() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        defer { store.close() }
        var answers: [StoreError?] = []
        try store.register(session(1)) { answers.append($0) }
        // Being written: not listed, not counted as stored, but held against the owner's limit
        // and its id taken.
        XCTAssertEqual(store.count, 0)
        XCTAssertEqual(store.allSessions, [])
        XCTAssertNil(store.session(id: session(1).id))
        XCTAssertEqual(store.count(ownedBy: 1000), 0)
        XCTAssertEqual(store.heldCount(ownedBy: 1000), 1)
        XCTAssertTrue(store.contains(session(1).id))
        XCTAssertThrowsError(try store.register(session(1)) { _ in }) { error in
            XCTAssertEqual((error as? StoreError)?.kind, .duplicateSession)
        }
        XCTAssertTrue(store.flush())
        XCTAssertEqual(answers.count, 1)
        XCTAssertNil(answers.first ?? StoreError(kind: .io, message: "no answer"))
        XCTAssertEqual(store.allSessions, [session(1)])
        XCTAssertEqual(store.count(ownedBy: 1000), 1)
    }

    func testUnregisterTakesEffectOnceDurable() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        try register([session(1), session(2)], in: store)
        var answered = false
        XCTAssertEqual(store.unregister(session(1).id) { answered = $0 == nil }?.id, session(1).id)
        XCTAssertNil(store.unregister(session(9).id) { _ in XCTFail("an absent id is not answered") })
        XCTAssertEqual(store.count, 2, "still stored until the removal is durable")
        XCTAssertTrue(store.flush())
        XCTAssertTrue(answered)
        XCTAssertEqual(store.allSessions, [session(2)])
        store.close()
        let (again, _) = try reopen(dir)
        defer { again.close() }
        XCTAssertEqual(again.allSessions, [session(2)])
    }

    func testARunResultRacingAnUnregistrationDoesNotBringTheSessionBackAfterTheNextStart() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        var two = session(1)
        two.endpoints = ["auth", "licence"]
        try register([two, session(2)], in: store)
        var answered = false
        XCTAssertNotNil(store.unregister(two.id) { answered = $0 == nil })
        // A run's partial result for the same session arrives while the removal is being written.
        XCTAssertTrue(store.replace(session(1)), "one endpoint ended it")
        XCTAssertNotNil(store.recordOutcome(id: two.id, outcome: "HTTP 503", attemptsDelta: 1))
        XCTAssertTrue(store.flush())
        XCTAssertTrue(answered)
        XCTAssertNil(store.session(id: two.id))
        store.close()
        let (again, _) = try reopen(dir)
        defer { again.close() }
        XCTAssertEqual(again.allSessions, [session(2)], "the unregistered session stays unregistered")
    }

    func testRunResultsTakeEffectAtOnceAndAreDurable() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        try register((0..<3).map { session($0) }, in: store)
        XCTAssertTrue(store.recordEnded(session(0).id))
        XCTAssertNil(store.session(id: session(0).id), "ended: gone")
        XCTAssertFalse(store.recordEnded(session(0).id), "ending an absent id does nothing")
        XCTAssertEqual(store.recordOutcome(id: session(1).id, outcome: "HTTP 503", attemptsDelta: 1)?.attempts, 1)
        store.recordOutcome(id: session(1).id, outcome: "HTTP 500", attemptsDelta: 2)
        XCTAssertNil(store.recordOutcome(id: session(0).id, outcome: "gone", attemptsDelta: 1))
        var fewer = session(2)
        fewer.endpoints = ["licence"]
        XCTAssertTrue(store.replace(fewer))
        XCTAssertFalse(store.replace(session(7)), "an id that is not registered is not replaced")
        XCTAssertEqual(store.count, 2, "run results apply at once")
        XCTAssertEqual(store.durableCount, 3, "until the removal is written, the files still hold the session")
        XCTAssertTrue(store.flush())
        XCTAssertEqual(store.durableCount, 2)
        store.close()

        let (again, report) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report.isClean)
        XCTAssertNil(again.session(id: session(0).id))
        XCTAssertEqual(again.session(id: session(1).id)?.attempts, 3)
        XCTAssertEqual(again.session(id: session(1).id)?.lastOutcome, "HTTP 500")
        XCTAssertEqual(again.session(id: session(2).id), fewer)
    }

    func testChangesStagedWhileACommitIsInFlightShareTheNextCommit() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        defer { store.close() }
        try register((0..<16).map { session($0) }, in: store)
        // The first registration went at once; the other 15 waited for it and went together.
        XCTAssertEqual(store.statistics.commits, 2)
        XCTAssertEqual(store.statistics.recordsCommitted, 16)
        XCTAssertEqual(try commitFrames(dir).map(\.recordCount), [1, 15])
        XCTAssertEqual(try commitFrames(dir).map(\.stamp), [1, 2], "commits are numbered in sequence")
    }

    func testWithAnEventLoopEverythingStagedInOneTurnSharesOneCommit() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        defer { store.close() }
        var turnsRequested = 0
        store.waitsForSubmit = true
        // The owner asks after each change, as StoreCommitter does.
        for n in 0..<16 {
            try store.register(session(n)) { XCTAssertNil($0) }
            if store.takeCommitRequest() { turnsRequested += 1 }
        }
        store.recordOutcome(id: session(0).id, outcome: "x", attemptsDelta: 1)
        if store.takeCommitRequest() { turnsRequested += 1 }
        XCTAssertEqual(turnsRequested, 1, "asked once to submit at the end of the turn")
        store.submitStaged()
        XCTAssertTrue(store.flush())
        XCTAssertEqual(try commitFrames(dir).map(\.recordCount), [16], "one commit, one fdatasync, for the turn")
    }

    // MARK: Damage found at open

    func testTornLastWriteAtEveryByteKeepsEarlierSessionsAndIsCleared() throws {
        let source = try makeDir()
        let (store, _) = try SessionStore.open(directory: source)
        try register([session(1), session(2)], in: store)
        let goodEnd = store.statistics.logBytes
        try register([session(3)], in: store)
        let fullEnd = store.statistics.logBytes
        store.close()
        let snapshotBytes = try bytes(snapshot(source))
        let logBytes = try bytes(log(source))

        // Past its last non-zero byte, "tearing" the frame changes nothing: it is whole.
        let lastNonZero = try XCTUnwrap(logBytes[goodEnd..<fullEnd].lastIndex { $0 != 0 })
        for tear in goodEnd...lastNonZero {
            // A write torn at `tear`: the rest of its frame never reached the disk (the reserve's
            // zeros are still there).
            let dir = try makeDir()
            var torn = logBytes
            for i in tear..<fullEnd { torn[i] = 0 }
            try write(snapshotBytes, snapshot(dir))
            try write(torn, log(dir))
            let (s, report) = try reopen(dir)
            XCTAssertEqual(s.allSessions, [session(1), session(2)], "torn at \(tear)")
            XCTAssertEqual(s.statistics.logBytes, goodEnd)
            if tear > goodEnd {
                XCTAssertEqual(report.problems.map(\.kind), [.truncatedLogTail], "torn at \(tear)")
                XCTAssertEqual(report.problems.first?.offset, goodEnd)
                XCTAssertEqual(report.preservedFiles.count, 1, "torn bytes are kept, not deleted")
            } else {
                XCTAssertTrue(report.isClean, "torn at \(tear): \(report)")
            }
            // The cleared log is a clean base for new commits.
            try register([session(4)], in: s)
            s.close()
            let (after, report2) = try reopen(dir)
            XCTAssertTrue(report2.isClean, "torn at \(tear): \(report2)")
            XCTAssertEqual(after.count, 3)
            after.close()
            try FileManager.default.removeItem(atPath: dir)
            dirs.removeLast()
        }
    }

    func testLogCutAtAFrameBoundaryIsReportedOnceAndRepaired() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        for n in 0..<6 { try register([session(n)], in: store) }
        store.close()
        let frames = try commitFrames(dir)
        let logBytes = try bytes(log(dir))
        try write(Array(logBytes[0..<(frames[2].offset + frames[2].size)]), log(dir))

        let (s, report) = try reopen(dir)
        XCTAssertEqual(s.count, 3, "the sessions of the three commits before the cut")
        XCTAssertEqual(report.problems.map(\.kind), [.truncatedLog])
        try register([session(9)], in: s)
        s.close()
        let (again, report2) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report2.isClean, "the reserve was given back: \(report2)")
        XCTAssertEqual(again.count, 4)
    }

    /// Found by the store-load fuzz target: a log cut before the end of its header (to nothing,
    /// say) beside an intact snapshot was appended to as it was, without a header, so the next
    /// open took the first new commit for the header and skipped it — an acknowledged
    /// registration lost.
    func testLogCutBeforeTheEndOfItsHeaderGetsAFreshLogAndLosesNoLaterRegistration() throws {
        for cut in [0, 5, 20] {
            let dir = try makeDir()
            var (store, _) = try SessionStore.open(directory: dir)
            try register((0..<3).map { session($0) }, in: store)
            store.close()
            (store, _) = try reopen(dir)
            store.compactionPolicy = CompactionPolicy(minimumLogBytes: 0, snapshotRatio: 0, maximumLogBytes: 0)
            try register([session(3)], in: store)
            XCTAssertTrue(store.waitUntilIdle(), "compaction: the sessions into the snapshot, a bare log")
            store.close()
            XCTAssertEqual(try commitFrames(dir).count, 0, "a compacted store's log holds only its header")
            try write(Array(try bytes(log(dir)).prefix(cut)), log(dir))

            let (s, report) = try reopen(dir)
            XCTAssertEqual(s.count, 4, "cut at \(cut): the snapshot's sessions")
            // Cut inside the header frame reads as a torn last write; before it, as a cut log.
            XCTAssertEqual(report.problems.count, 1, "cut at \(cut): \(report)")
            XCTAssertTrue(
                report.problems.allSatisfy { [.truncatedLog, .truncatedLogTail].contains($0.kind) }, "cut at \(cut)")
            try register([session(9)], in: s)
            s.close()
            let (again, report2) = try reopen(dir)
            defer { again.close() }
            XCTAssertTrue(report2.isClean, "cut at \(cut): \(report2)")
            XCTAssertEqual(again.count, 5, "cut at \(cut): the registration after the repair is there")
            XCTAssertNotNil(again.session(id: session(9).id), "cut at \(cut)")
        }
    }

    func testFlippedByteInTheMiddleOfTheLogKeepsTheLogAsideAndEveryOtherCommit() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        for batch in 0..<3 { try register((0..<4).map { session(batch * 10 + $0) }, in: store) }
        store.close()
        let frames = try commitFrames(dir)
        // Damage a frame of the second batch: its registrations are lost, the others kept.
        let victim = frames[frames.count / 2]
        var logBytes = try bytes(log(dir))
        logBytes[victim.offset + victim.size / 2] ^= 0x01
        try write(logBytes, log(dir))

        let (s, report) = try reopen(dir)
        XCTAssertEqual(s.count, 12 - victim.recordCount)
        XCTAssertEqual(report.problems.map(\.kind), [.corruptLogRecord], report.description)
        XCTAssertEqual(report.problems.first?.offset, victim.offset)
        XCTAssertTrue(report.rewroteSnapshot)
        let preserved = try XCTUnwrap(report.preservedFiles.first)
        XCTAssertTrue(preserved.hasPrefix(log(dir) + ".corrupt-"), preserved)
        XCTAssertEqual(try bytes(preserved), logBytes, "the damaged log is kept byte for byte")
        let ids = Set(s.allSessions.map(\.id))
        s.close()
        let (again, report2) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report2.isClean, "after repair the store opens clean: \(report2)")
        XCTAssertEqual(Set(again.allSessions.map(\.id)), ids)
    }

    func testCorruptSnapshotFrameCostsOnlyItsSessionAndIsKeptAside() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(
            directory: dir, compactionPolicy: CompactionPolicy(minimumLogBytes: 1, snapshotRatio: 0))
        try register((0..<100).map { session($0) }, in: store)
        XCTAssertTrue(store.waitUntilIdle())
        XCTAssertGreaterThanOrEqual(store.statistics.compactions, 1, "the sessions now live in the snapshot")
        store.compactionPolicy = CompactionPolicy()
        try register([session(500)], in: store)
        store.close()

        var snap = try bytes(snapshot(dir))
        let scan = snap.withUnsafeBytes { StoreFrame.scan($0) }
        XCTAssertEqual(scan.frames.count, 102, "a header, a frame per session, an end")
        let victim = scan.frames[40]
        snap[victim.offset + victim.size - 3] ^= 0xFF
        try write(snap, snapshot(dir))

        let (s, report) = try reopen(dir)
        XCTAssertEqual(s.count, 100, "99 of the snapshot's 100 and the one in the log")
        XCTAssertNotNil(s.session(id: session(500).id))
        XCTAssertEqual(report.problems.map(\.kind), [.corruptSnapshot])
        XCTAssertEqual(report.problems.first?.offset, victim.offset)
        let preserved = try XCTUnwrap(report.preservedFiles.first)
        XCTAssertTrue(preserved.hasPrefix(snapshot(dir) + ".corrupt-"))
        XCTAssertEqual(try bytes(preserved), snap)
        s.close()
        let (again, report2) = try reopen(dir)
        XCTAssertTrue(report2.isClean, report2.description)
        XCTAssertEqual(again.count, 100)
        again.close()
    }

    func testLostSnapshotBesideAnEmptyLogIsReportedNotReadAsANewStore() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(
            directory: dir, compactionPolicy: CompactionPolicy(minimumLogBytes: 1, snapshotRatio: 0))
        try register((0..<30).map { session($0) }, in: store)
        XCTAssertTrue(store.waitUntilIdle())
        store.close()
        XCTAssertEqual(try commitFrames(dir).count, 0, "after the compaction the log holds no commit")
        XCTAssertEqual(unlink(snapshot(dir)), 0)
        let (s, report) = try reopen(dir)
        defer { s.close() }
        XCTAssertFalse(report.createdNewStore)
        XCTAssertEqual(report.problems.map(\.kind), [.missingSnapshot])
        XCTAssertTrue(report.problems[0].detail.contains("30 sessions"), report.problems[0].detail)
    }

    func testANewStoreWritesItsLogFirstSoThatAMissingLogIsAlwaysReported() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        store.close()
        // As if the first start had stopped after the log: a new store again, nothing reported.
        XCTAssertEqual(unlink(snapshot(dir)), 0)
        let (again, report) = try reopen(dir)
        again.close()
        XCTAssertTrue(report.createdNewStore)
        XCTAssertTrue(report.isClean, report.description)
        // A snapshot without its log never comes from a first start: reported.
        XCTAssertEqual(unlink(log(dir)), 0)
        let (third, report3) = try reopen(dir)
        third.close()
        XCTAssertEqual(report3.problems.map(\.kind), [.missingLog])
    }

    func testUnknownRecordTypeRefusesToOpenAndLeavesTheFileAlone() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        store.close()
        var logBytes = LogEncoder.header(snapshotSequence: 0, snapshotSessions: 0, createdAt: 1)
        [UInt8](arrayLiteral: 0x7F).withUnsafeBytes {
            StoreFrame.append(stamp: 1, recordCount: 1, records: $0, to: &logBytes)
        }
        try write(logBytes, log(dir))
        XCTAssertThrowsError(try reopen(dir)) { error in
            let e = error as? StoreError
            XCTAssertEqual(e?.kind, .unsupportedFormat)
            XCTAssertEqual(e?.path, self.log(dir))
        }
        XCTAssertEqual(try bytes(log(dir)), logBytes, "the file is left untouched")
    }

    // MARK: Compaction

    func testBackgroundCompactionKeepsEverySessionWhileCommitsGoOn() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(
            directory: dir, compactionPolicy: CompactionPolicy(minimumLogBytes: 4096, snapshotRatio: 2))
        var expected: [SessionID: Session] = [:]
        for n in 0..<400 {
            var done = false
            try store.register(session(n)) { done = $0 == nil }
            expected[session(n).id] = session(n)
            if n % 3 == 0, let s = store.recordOutcome(id: session(n / 2).id, outcome: "o\(n)", attemptsDelta: 1) {
                expected[s.id] = s
            }
            if n % 5 == 0, store.recordEnded(session(n / 4).id) { expected[session(n / 4).id] = nil }
            XCTAssertTrue(store.flush())
            XCTAssertTrue(done)
        }
        XCTAssertTrue(store.waitUntilIdle())
        XCTAssertGreaterThan(store.statistics.compactions, 0)
        let sequence = store.statistics.sequence
        store.close()

        let (again, report) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report.isClean, report.description)
        XCTAssertEqual(report.lastSequence, sequence)
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: again.allSessions.map { ($0.id, $0) }), expected)
    }

    func testAnEmptyStoreIsCompactedSoNoEndedSessionsKeyLingers() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        try register([session(1, secret: "LINGERING-KEY-1")], in: store)
        store.recordEnded(session(1).id)
        XCTAssertTrue(store.waitUntilIdle())
        store.close()
        for name in try files(dir) {
            XCTAssertNil(try bytes(dir + "/" + name).firstRange(of: Array("LINGERING-KEY".utf8)), name)
        }
    }

    /// Issue 9: the stop's budget is for ending sessions, so once the store is stopping no
    /// compaction starts, however long the log (the same commits without the stop compact).
    func testNoCompactionStartsOnceTheStoreIsStopping() throws {
        for stopping in [false, true] {
            let dir = try makeDir()
            let (store, _) = try SessionStore.open(directory: dir)
            defer { store.close() }
            store.compactionPolicy = CompactionPolicy(minimumLogBytes: 0, snapshotRatio: 0, maximumLogBytes: 0)
            let atOpen = store.statistics.compactions  // a new store's first files count as one
            if stopping { store.beginShutdown() }
            for n in 0..<5 {
                try register([session(n)], in: store)
                store.recordOutcome(id: session(n).id, outcome: "HTTP 503", attemptsDelta: 1)
                XCTAssertTrue(store.flush())
            }
            XCTAssertTrue(store.waitUntilIdle())
            if stopping {
                XCTAssertEqual(store.statistics.compactions, atOpen, "no compaction while stopping")
                XCTAssertEqual(try commitFrames(dir).count, 10, "the log was not switched: every commit is in it")
            } else {
                XCTAssertGreaterThan(store.statistics.compactions, atOpen, "the same commits compact when not stopping")
            }
        }
    }

    func testAStopThatEndedEverySessionLeavesNoKeyOnDisk() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        defer { store.close() }
        try register((0..<20).map { session($0, secret: "ENDED-AT-STOP-\($0)-xxxxxxxx") }, in: store)
        store.beginShutdown()
        for n in 0..<20 { store.recordEnded(session(n).id) }
        XCTAssertTrue(store.flush())
        XCTAssertTrue(store.eraseIfEmpty(timeoutMilliseconds: 5_000), "an empty store is emptied even while stopping")
        for name in try files(dir) {
            XCTAssertNil(try bytes(dir + "/" + name).firstRange(of: Array("ENDED-AT-STOP".utf8)), name)
        }
        // Not while sessions remain: that would be a compaction inside the stop.
        try register([session(99)], in: store)
        XCTAssertFalse(store.eraseIfEmpty(timeoutMilliseconds: 1_000))
    }

    func testNewSnapshotBesideTheOldLogIsRecoveredWithoutDoubleCounting() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        try register((0..<10).map { session($0) }, in: store)
        for n in 0..<10 { store.recordOutcome(id: session(n).id, outcome: "failed", attemptsDelta: 1) }
        store.recordEnded(session(9).id)
        XCTAssertTrue(store.flush())
        let before = store.allSessions
        let oldLog = try bytes(log(dir))
        store.compactionPolicy = CompactionPolicy(minimumLogBytes: 1, snapshotRatio: 0)
        try register([session(10)], in: store)
        XCTAssertTrue(store.waitUntilIdle())
        store.close()
        // As if the crash came after the new snapshot's rename but before the new log's.
        try write(oldLog, log(dir))

        let (again, report) = try reopen(dir)
        XCTAssertTrue(report.isClean, report.description)
        XCTAssertGreaterThan(report.staleLogFramesSkipped, 0)
        XCTAssertEqual(again.allSessions, before + [session(10)], "attempts not double-counted, removed stays removed")
        try register([session(42)], in: again)
        again.close()
        let (third, report3) = try reopen(dir)
        defer { third.close() }
        XCTAssertTrue(report3.isClean)
        XCTAssertEqual(third.count, before.count + 2)
    }

    // MARK: Files, directory, descriptors

    func testStoreFilesAreMode0600EvenWithPermissiveUmask() throws {
        let old = umask(0)
        defer { umask(old) }
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        try register([session(1)], in: store)
        store.close()
        XCTAssertEqual(chmod(log(dir), 0o644), 0)
        XCTAssertEqual(chmod(snapshot(dir), 0o644), 0)
        var logBytes = try bytes(log(dir))
        logBytes[logBytes.count - 700] = 0x55  // damage in the reserve: a "torn" tail kept aside
        try write(logBytes, log(dir))
        let (s, report) = try reopen(dir)
        s.close()
        XCTAssertEqual(report.preservedFiles.count, 1)
        for name in try files(dir) { XCTAssertEqual(mode(dir + "/" + name), 0o600, name) }
        XCTAssertEqual(try files(dir).count, 3)
    }

    func testMissingDirectoryThrowsErrorNamingPathAndErrno() throws {
        let dir = try makeDir() + "/does-not-exist"
        XCTAssertThrowsError(try SessionStore.open(directory: dir)) { error in
            let e = error as? StoreError
            XCTAssertEqual(e?.kind, .io)
            XCTAssertEqual(e?.errnoCode, ENOENT)
            XCTAssertTrue("\(error)".contains(dir), "\(error)")
            XCTAssertTrue("\(error)".contains("No such file or directory"), "\(error)")
        }
        let file = try makeDir() + "/plain-file"
        try write([1], file)
        XCTAssertThrowsError(try SessionStore.open(directory: file)) { error in
            XCTAssertEqual((error as? StoreError)?.errnoCode, ENOTDIR)
            XCTAssertTrue("\(error)".contains(file))
        }
    }

    func testUnreadableStoreFileThrowsInsteadOfStartingEmpty() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        try register([session(1)], in: store)
        store.close()
        // A directory where the log should be: reading it fails, as a permission error would
        // (root ignores mode bits).
        XCTAssertEqual(unlink(log(dir)), 0)
        XCTAssertEqual(mkdir(log(dir), 0o700), 0)
        XCTAssertThrowsError(try reopen(dir)) { error in
            XCTAssertEqual((error as? StoreError)?.kind, .io)
            XCTAssertTrue("\(error)".contains(self.log(dir)), "\(error)")
        }
    }

    func testSecondOpenOfSameDirectoryIsRefusedWhileLocked() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        XCTAssertThrowsError(try SessionStore.open(directory: dir)) { error in
            XCTAssertEqual((error as? StoreError)?.kind, .locked)
            XCTAssertTrue("\(error)".contains(dir))
        }
        store.close()
        let (again, _) = try reopen(dir)
        again.close()
    }

    func testNoDescriptorIsLeftOpenWhenOpeningFails() throws {
        func openDescriptors() throws -> Int {
            try FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd").count
        }
        let locked = try makeDir()
        let (holder, _) = try SessionStore.open(directory: locked)
        defer { holder.close() }
        let unreadable = try makeDir()
        XCTAssertEqual(mkdir(log(unreadable), 0o700), 0)
        let newer = try makeDir()
        var future: [UInt8] = []
        var w = ByteWriter()
        StoreFrame.append(
            stamp: 0,
            record: .snapshotHeader(SnapshotHeader(formatVersion: 9, lastSequence: 0, sessionCount: 0, createdAt: 0)),
            to: &future, scratch: &w)
        try write(future, snapshot(newer))
        let before = try openDescriptors()
        for _ in 0..<20 {
            for dir in [locked, unreadable, newer, locked + "/missing"] {
                XCTAssertThrowsError(try SessionStore.open(directory: dir), dir)
            }
        }
        XCTAssertEqual(try openDescriptors(), before, "every failed open closed what it opened")
    }

    func testLeftoverTemporaryFilesFromACrashBeforeRenameAreIgnored() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        try register([session(1)], in: store)
        store.close()
        try write([0xFF, 0x00, 0x12], snapshot(dir) + ".tmp")
        try write([0xAA], log(dir) + ".tmp")
        let (again, report) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report.isClean)
        XCTAssertEqual(again.allSessions, [session(1)])
        XCTAssertEqual(try files(dir), [StoreFormat.logFileName, StoreFormat.snapshotFileName])
    }

    // MARK: Secrets

    func testNoSessionKeyAppearsInErrorsReportsOrDescriptions() throws {
        let secret = "TOPSECRET-7f3a9c"
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        var texts: [String] = []
        let s = session(1, secret: secret)
        try register([s], in: store)
        do { try store.register(s) { _ in } } catch { texts += ["\(error)", String(reflecting: error)] }
        let huge = Session(
            id: .random(), key: SessionKey(secret + String(repeating: "x", count: 2 << 20)), endpoints: [],
            ownerUID: 0, registeredAt: 0)
        do { try store.register(huge) { _ in } } catch { texts += ["\(error)", String(reflecting: error)] }
        XCTAssertEqual(texts.count, 4, "both registrations must fail")
        texts += ["\(s)", String(reflecting: s), "\(store.allSessions)", "\(store.statistics)"]
        store.close()

        // Damage the frame that holds the key, then open: report and problems must not leak it.
        var logBytes = try bytes(log(dir))
        let secretRange = try XCTUnwrap(logBytes.firstRange(of: Array(secret.utf8)))
        logBytes[secretRange.lowerBound] ^= 0x20
        try write(logBytes, log(dir))
        let (again, report) = try reopen(dir)
        again.close()
        XCTAssertFalse(report.isClean)
        texts += [report.description, String(reflecting: report)] + report.problems.map(\.description)
        for t in texts {
            XCTAssertFalse(t.contains(secret), t)
            XCTAssertFalse(t.contains("TOPSECRET"), t)
        }
    }
}
