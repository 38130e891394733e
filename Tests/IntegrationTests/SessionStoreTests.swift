import Foundation
import Glibc
import XCTest

@testable import SessionCleanup

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
            endpoints: ["https://svc.example.invalid/sessions/\(n)/end"], ownerUID: uid,
            label: n % 2 == 0 ? "label \(n)" : nil, registeredAt: 1_700_000_000_000_000 + UInt64(n))
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
    private func log(_ dir: String) -> String { dir + "/" + SessionStore.logFileName }
    private func snapshot(_ dir: String) -> String { dir + "/" + SessionStore.snapshotFileName }

    private func reopen(_ dir: String) throws -> (SessionStore, LoadReport) { try SessionStore.open(directory: dir) }

    // MARK: Basic durability

    func testRegisteredSessionsRoundTripThroughCommitAndReopen() throws {
        let dir = try makeDir()
        let (store, report) = try SessionStore.open(directory: dir)
        XCTAssertTrue(report.createdNewStore)
        XCTAssertTrue(report.isClean)
        let sessions = (0..<50).map { session($0, uid: UInt32(1000 + $0 % 3)) }
        for s in sessions.reversed() { try store.register(s) }
        XCTAssertTrue(store.hasPendingChanges)
        try store.commit()
        XCTAssertFalse(store.hasPendingChanges)
        store.close()

        let (again, report2) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report2.isClean, report2.description)
        XCTAssertEqual(report2.sessionCount, 50)
        XCTAssertEqual(again.allSessions, sessions, "allSessions is sorted by registeredAt")
        XCTAssertEqual(again.session(id: sessions[7].id), sessions[7])
        XCTAssertEqual(again.sessions(ownedBy: 1001), sessions.filter { $0.ownerUID == 1001 })
        XCTAssertEqual(again.count, 50)
    }

    func testUncommittedChangesAreNotVisibleAfterReopen() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        try store.register(session(1))
        try store.commit()
        try store.register(session(2))
        store.remove(session(1).id)
        store.recordOutcome(id: session(2).id, outcome: "x", attemptsDelta: 1)
        XCTAssertEqual(store.count, 1, "staged changes are visible in memory before commit")
        store.close()  // like a crash: nothing staged is written

        let (again, report) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report.isClean)
        XCTAssertEqual(again.allSessions, [session(1)])
    }

    func testRemoveAndOutcomeAreDurableAfterCommit() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        for n in 0..<3 { try store.register(session(n)) }
        try store.commit()
        XCTAssertEqual(store.remove(session(0).id)?.id, session(0).id)
        XCTAssertNil(store.remove(session(0).id), "removing an absent id stages nothing")
        XCTAssertEqual(store.recordOutcome(id: session(1).id, outcome: "HTTP 503", attemptsDelta: 1)?.attempts, 1)
        store.recordOutcome(id: session(1).id, outcome: "HTTP 500", attemptsDelta: 2)
        XCTAssertNil(store.recordOutcome(id: session(0).id, outcome: "gone", attemptsDelta: 1))
        XCTAssertEqual(store.pendingChangeCount, 3)
        try store.commit()
        store.close()

        let (again, report) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report.isClean)
        XCTAssertNil(again.session(id: session(0).id))
        XCTAssertEqual(again.session(id: session(1).id)?.attempts, 3)
        XCTAssertEqual(again.session(id: session(1).id)?.lastOutcome, "HTTP 500")
        XCTAssertEqual(again.session(id: session(2).id), session(2))
    }

    func testReplaceKeepsTheIdAndIsDurableButNeedsARegisteredSession() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        try store.register(session(1))
        try store.commit()
        var fewer = session(1)
        fewer.endpoints = ["licence"]
        XCTAssertTrue(store.replace(fewer))
        XCTAssertFalse(store.replace(session(2)), "an id that is not registered is not replaced")
        XCTAssertEqual(store.count, 1)
        try store.commit()
        store.close()
        let (again, report) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report.isClean)
        XCTAssertEqual(again.allSessions, [fewer])
    }

    func testGroupCommitWritesManyStagedChangesWithOneSync() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        defer { store.close() }
        for n in 0..<16 { try store.register(session(n)) }
        try store.commit()
        XCTAssertEqual(store.statistics.syncs, 1)
        XCTAssertEqual(store.statistics.commits, 1)
        XCTAssertEqual(store.statistics.recordsCommitted, 16)
        try store.commit()
        XCTAssertEqual(store.statistics.syncs, 1, "an empty commit does not sync")
        let scan = try bytes(log(dir)).withUnsafeBytes { StoreFrame.scan($0) }
        XCTAssertEqual(scan.frames.count, 1, "one commit is one frame")
        XCTAssertEqual(scan.frames.first?.recordCount, 16)
    }

    func testDuplicateRegistrationIsRejectedAndStagesNothing() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        defer { store.close() }
        try store.register(session(1))
        XCTAssertThrowsError(try store.register(session(1))) { error in
            XCTAssertEqual((error as? StoreError)?.kind, .duplicateSession)
        }
        XCTAssertEqual(store.pendingChangeCount, 1)
    }

    // MARK: Damage

    func testTornTailAtEveryByteOfLastCommitKeepsEarlierSessionsAndReportsDrop() throws {
        let source = try makeDir()
        let (store, _) = try SessionStore.open(directory: source)
        try store.register(session(1))
        try store.register(session(2))
        try store.commit()
        let goodEnd = store.statistics.logBytes
        try store.register(session(3))
        store.recordOutcome(id: session(1).id, outcome: "late", attemptsDelta: 1)
        try store.commit()
        let fullEnd = store.statistics.logBytes
        store.close()
        let snapshotBytes = try bytes(snapshot(source))
        let logBytes = try bytes(log(source))
        XCTAssertEqual(logBytes.count, fullEnd)

        for cut in goodEnd..<fullEnd {
            let dir = try makeDir()
            try write(snapshotBytes, snapshot(dir))
            try write(Array(logBytes[0..<cut]), log(dir))
            let (s, report) = try reopen(dir)
            XCTAssertEqual(s.allSessions, [session(1), session(2)], "cut at \(cut)")
            XCTAssertEqual(report.droppedTailBytes, cut - goodEnd, "cut at \(cut)")
            XCTAssertEqual(s.statistics.logBytes, goodEnd)
            if cut > goodEnd {
                XCTAssertEqual(report.problems.map(\.kind), [.truncatedLogTail], "cut at \(cut)")
                XCTAssertEqual(report.problems.first?.offset, goodEnd)
                XCTAssertEqual(report.problems.first?.path, log(dir))
                XCTAssertEqual(report.preservedFiles.count, 1, "torn bytes are kept, not deleted")
            } else {
                XCTAssertTrue(report.isClean)
            }
            // The truncated log is a clean base for new commits.
            try s.register(session(4))
            try s.commit()
            s.close()
            let (after, report2) = try reopen(dir)
            XCTAssertTrue(report2.isClean, "cut at \(cut): \(report2)")
            XCTAssertEqual(after.count, 3)
            after.close()
            try FileManager.default.removeItem(atPath: dir)
            dirs.removeLast()
        }
    }

    func testFlippedByteInMiddleOfLogMovesLogAsideAndKeepsRecordsBeforeAndAfter() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        var ends: [Int] = []
        for batch in 0..<3 {
            for n in 0..<4 { try store.register(session(batch * 10 + n)) }
            try store.commit()
            ends.append(store.statistics.logBytes)
        }
        store.close()
        var logBytes = try bytes(log(dir))
        let original = logBytes
        let flipAt = ends[0] + (ends[1] - ends[0]) / 2
        logBytes[flipAt] ^= 0x01
        try write(logBytes, log(dir))

        let (s, report) = try reopen(dir)
        let ids = Set(s.allSessions.map(\.id))
        XCTAssertEqual(ids, Set([0, 1, 2, 3, 20, 21, 22, 23].map { session($0).id }))
        XCTAssertEqual(report.problems.count, 1, report.description)
        XCTAssertEqual(report.problems.first?.kind, .corruptLogRecord)
        XCTAssertEqual(report.problems.first?.offset, ends[0])
        XCTAssertEqual(report.problems.first?.frameNumber, 1)
        XCTAssertEqual(report.problems.first?.bytesAffected, ends[1] - ends[0])
        XCTAssertTrue(report.rewroteSnapshot)
        XCTAssertEqual(report.preservedFiles.count, 1)
        let preserved = try XCTUnwrap(report.preservedFiles.first)
        XCTAssertTrue(preserved.hasPrefix(log(dir) + ".corrupt-"), preserved)
        XCTAssertEqual(try bytes(preserved), logBytes, "the damaged log is kept byte for byte")
        XCTAssertNotEqual(logBytes, original)
        s.close()

        let (again, report2) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report2.isClean, "after repair the store opens clean: \(report2)")
        XCTAssertEqual(Set(again.allSessions.map(\.id)), ids)
    }

    func testCorruptSnapshotIsMovedAsideReportedAndGoodSessionsKept() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        for n in 0..<100 { try store.register(session(n)) }
        try store.compact()  // 100 sessions now live in the snapshot (4 frames of 32 + header/end)
        try store.register(session(500))
        try store.commit()
        store.close()

        var snap = try bytes(snapshot(dir))
        let scan = snap.withUnsafeBytes { StoreFrame.scan($0) }
        let victim = scan.frames[2]  // second chunk of sessions
        let victimRecordsBeforeDamage = try snap.withUnsafeBytes { try StoreFrame.records($0, victim) }
        snap[victim.offset + victim.size - 3] ^= 0xFF
        try write(snap, snapshot(dir))

        let (s, report) = try reopen(dir)
        let victimRecords = victimRecordsBeforeDamage
        let lost = Set(
            victimRecords.compactMap { r -> SessionID? in
                if case .register(let x) = r { return x.id } else { return nil }
            })
        XCTAssertEqual(lost.count, 32)
        XCTAssertEqual(s.count, 101 - 32, "everything outside the damaged frame is kept, log applied too")
        XCTAssertNotNil(s.session(id: session(500).id))
        XCTAssertEqual(report.problems.map(\.kind), [.corruptSnapshot])
        XCTAssertEqual(report.problems.first?.offset, victim.offset)
        XCTAssertEqual(report.problems.first?.path, snapshot(dir))
        let preserved = try XCTUnwrap(report.preservedFiles.first)
        XCTAssertTrue(preserved.hasPrefix(snapshot(dir) + ".corrupt-"))
        XCTAssertEqual(try bytes(preserved), snap)
        s.close()
        let (again, report2) = try reopen(dir)
        XCTAssertTrue(report2.isClean, report2.description)
        XCTAssertEqual(again.count, 69)
        again.close()
    }

    func testTruncatedSnapshotIsReportedNotReadAsEmpty() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        for n in 0..<200 { try store.register(session(n)) }
        try store.compact()
        store.close()
        let snap = try bytes(snapshot(dir))
        try write(Array(snap[0..<(snap.count / 2)]), snapshot(dir))
        let (s, report) = try reopen(dir)
        defer { s.close() }
        XCTAssertFalse(report.isClean)
        XCTAssertEqual(report.problems.first?.kind, .corruptSnapshot)
        XCTAssertGreaterThan(s.count, 64, "good frames of a truncated snapshot are kept")
        XCTAssertLessThan(s.count, 200)
        XCTAssertEqual(report.preservedFiles.count, 1)
    }

    func testMissingSnapshotWithCommittedLogIsReported() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        try store.register(session(1))
        try store.commit()
        store.close()
        XCTAssertEqual(unlink(snapshot(dir)), 0)
        let (s, report) = try reopen(dir)
        defer { s.close() }
        XCTAssertEqual(report.problems.map(\.kind), [.missingSnapshot])
        XCTAssertEqual(s.allSessions, [session(1)])
    }

    func testFirstStartInterruptedWithOnlyGarbageInLogRecoversToCleanStore() throws {
        let dir = try makeDir()
        try write([0xFF, 0x53, 0x43, 0xFE, 0x40, 0, 0], log(dir))
        let (s, report) = try reopen(dir)
        XCTAssertEqual(report.problems.map(\.kind), [.truncatedLogTail])
        XCTAssertEqual(report.droppedTailBytes, 7)
        XCTAssertEqual(s.count, 0)
        try s.register(session(1))
        try s.commit()
        s.close()
        let (again, report2) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report2.isClean, report2.description)
        XCTAssertEqual(again.allSessions, [session(1)])
    }

    func testUnknownRecordTypeRefusesToOpenInsteadOfDroppingData() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        store.close()
        var frame: [UInt8] = []
        [UInt8](arrayLiteral: 0x7F).withUnsafeBytes {
            StoreFrame.append(generation: 1, recordCount: 1, records: $0, to: &frame)
        }
        try write(frame, log(dir))
        XCTAssertThrowsError(try reopen(dir)) { error in
            let e = error as? StoreError
            XCTAssertEqual(e?.kind, .unsupportedFormat)
            XCTAssertEqual(e?.path, self.log(dir))
            XCTAssertEqual(e?.offset, StoreFrame.headerSize + StoreFrame.payloadPrefixSize)
        }
        XCTAssertEqual(try bytes(log(dir)), frame, "the file is left untouched")
    }

    // MARK: Files and directory

    func testStoreFilesAreMode0600EvenWithPermissiveUmask() throws {
        let old = umask(0)
        defer { umask(old) }
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        try store.register(session(1))
        try store.commit()
        try store.compact()
        try store.register(session(2))
        try store.commit()
        store.close()
        var logBytes = try bytes(log(dir))
        logBytes.append(contentsOf: [0xFF, 0x53, 0x43])  // torn tail -> preserved bytes file
        try write(logBytes, log(dir))
        XCTAssertEqual(chmod(log(dir), 0o644), 0)
        let (s, report) = try reopen(dir)
        s.close()
        XCTAssertEqual(report.preservedFiles.count, 1)
        for name in try files(dir) {
            XCTAssertEqual(mode(dir + "/" + name), 0o600, name)
        }
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

    func testUnwritableStoreFileThrowsInsteadOfStartingEmpty() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        try store.register(session(1))
        try store.commit()
        store.close()
        // Replace the log by a directory: reading it fails with EISDIR; root ignores mode bits,
        // so this stands in for a permission error.
        XCTAssertEqual(unlink(log(dir)), 0)
        XCTAssertEqual(mkdir(log(dir), 0o700), 0)
        XCTAssertThrowsError(try reopen(dir)) { error in
            XCTAssertEqual((error as? StoreError)?.kind, .io)
            XCTAssertTrue("\(error)".contains(self.log(dir)), "\(error)")
            XCTAssertTrue("\(error)".contains("errno"), "\(error)")
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

    // MARK: Compaction

    func testCompactionPreservesAllSessionsAndResetsLog() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(
            directory: dir, compactionPolicy: CompactionPolicy(minimumLogBytes: 4096, snapshotRatio: 2))
        var expected: [SessionID: Session] = [:]
        var compactions = 0
        for n in 0..<400 {
            try store.register(session(n))
            expected[session(n).id] = session(n)
            if n % 3 == 0, let s = store.recordOutcome(id: session(n / 2).id, outcome: "o\(n)", attemptsDelta: 1) {
                expected[s.id] = s
            }
            if n % 5 == 0 {
                store.remove(session(n / 4).id)
                expected[session(n / 4).id] = nil
            }
            try store.commit()
            if try store.compactIfNeeded() { compactions += 1 }
        }
        XCTAssertGreaterThan(compactions, 0)
        XCTAssertEqual(store.statistics.compactions, compactions)
        XCTAssertLessThan(store.statistics.logBytes, 4096 + 2 * store.statistics.snapshotBytes)
        let generation = store.statistics.generation
        store.close()

        let (again, report) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report.isClean, report.description)
        XCTAssertEqual(report.generation, generation)
        XCTAssertEqual(Dictionary(uniqueKeysWithValues: again.allSessions.map { ($0.id, $0) }), expected)
    }

    func testCrashBetweenSnapshotRenameAndLogResetReplaysIdempotently() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        for n in 0..<10 { try store.register(session(n)) }
        try store.commit()
        for n in 0..<10 { store.recordOutcome(id: session(n).id, outcome: "failed", attemptsDelta: 1) }
        store.remove(session(9).id)
        try store.commit()
        let before = store.allSessions
        let oldLog = try bytes(log(dir))
        try store.compact()
        store.close()
        // State on disk if the crash hit after the new snapshot was renamed into place but before
        // the empty log replaced the old one: new snapshot + old log.
        try write(oldLog, log(dir))

        let (again, report) = try reopen(dir)
        XCTAssertTrue(report.isClean, report.description)
        XCTAssertEqual(report.staleLogFramesSkipped, 2)
        XCTAssertEqual(again.allSessions, before, "attempts not double-counted, removed stays removed")
        XCTAssertEqual(again.statistics.logBytes, 0, "stale log was reset")
        try again.register(session(42))
        try again.commit()
        again.close()
        let (third, report3) = try reopen(dir)
        defer { third.close() }
        XCTAssertTrue(report3.isClean)
        XCTAssertEqual(third.count, before.count + 1)
    }

    func testFramesWrittenAfterNewSnapshotOnTopOfStaleLogAreAppliedAndRecompacted() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        for n in 0..<5 { try store.register(session(n)) }
        try store.commit()
        let oldLog = try bytes(log(dir))
        try store.compact()
        let generation = store.statistics.generation
        store.close()
        // Stale frames of the old generation followed by a frame of the new generation.
        var w = ByteWriter()
        StoreRecord.remove(session(0).id).encode(into: &w)
        var logBytes = oldLog
        w.bytes.withUnsafeBytes {
            StoreFrame.append(generation: generation, recordCount: 1, records: $0, to: &logBytes)
        }
        try write(logBytes, log(dir))

        let (again, report) = try reopen(dir)
        defer { again.close() }
        XCTAssertEqual(report.staleLogFramesSkipped, 1)
        XCTAssertEqual(report.logRecordsApplied, 1)
        XCTAssertTrue(report.rewroteSnapshot)
        XCTAssertEqual(again.allSessions, (1..<5).map { session($0) })
        XCTAssertGreaterThan(again.statistics.generation, generation)
    }

    func testLeftoverTemporaryFilesFromCrashBeforeRenameAreIgnored() throws {
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        try store.register(session(1))
        try store.commit()
        store.close()
        try write([0xFF, 0x00, 0x12], snapshot(dir) + ".tmp")
        try write([0xAA], log(dir) + ".tmp")
        let (again, report) = try reopen(dir)
        defer { again.close() }
        XCTAssertTrue(report.isClean)
        XCTAssertEqual(again.allSessions, [session(1)])
        XCTAssertEqual(try files(dir), [SessionStore.logFileName, SessionStore.snapshotFileName])
    }

    // MARK: Secrets

    func testNoSessionKeyAppearsInErrorsReportsOrDescriptions() throws {
        let secret = "TOPSECRET-7f3a9c"
        let dir = try makeDir()
        let (store, _) = try SessionStore.open(directory: dir)
        var texts: [String] = []
        let s = session(1, secret: secret)
        try store.register(s)
        do { try store.register(s) } catch { texts += ["\(error)", String(reflecting: error)] }
        let huge = Session(
            id: .random(), key: SessionKey(secret + String(repeating: "x", count: 2 << 20)), endpoints: [],
            ownerUID: 0, registeredAt: 0)
        do { try store.register(huge) } catch { texts += ["\(error)", String(reflecting: error)] }
        XCTAssertEqual(texts.count, 4, "both registrations must fail")
        try store.commit()
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
