import XCTest

@testable import Sessions

/// Recovery on bytes alone (no files): every kind of damage the store can meet, with the number
/// of sessions recovered, and what opening is told to do about it.
final class StoreRecoveryTests: XCTestCase {
    private let paths = StoreRecovery.Paths(snapshot: "/state/sessions.snapshot", log: "/state/sessions.log")

    private func session(_ n: Int) -> Session {
        Session(
            id: SessionID(rawValue: 0x5E55_0000_0000_0000 | UInt64(n)), key: SessionKey("key-\(n)-abcdefghijklmnop"),
            endpoints: ["auth"], ownerUID: 1000, label: n % 2 == 0 ? "label \(n)" : nil,
            registeredAt: 1_700_000_000_000_000 + UInt64(n))
    }

    /// A store as the store writes it: a snapshot of `inSnapshot` sessions at `sequence`, then
    /// one commit per element of `commits`, then the log's reserve.
    private struct Image {
        var snapshot: [UInt8]?
        var log: [UInt8]
        /// Where each commit frame ends in `log` (index 0: the header's end).
        var frameEnds: [Int]
        var reserveStart: Int { frameEnds.last ?? 0 }
    }

    private func image(inSnapshot: [Session], sequence: UInt64 = 0, commits: [[StoreRecord]]) -> Image {
        let snapshot = SnapshotEncoder.encode(inSnapshot, count: inSnapshot.count, lastSequence: sequence, createdAt: 1)
        var log = LogEncoder.header(snapshotSequence: sequence, snapshotSessions: inSnapshot.count, createdAt: 1)
        var ends = [log.count]
        for (i, records) in commits.enumerated() {
            var buffer = RecordBuffer()
            for r in records { buffer.append(r, isRemoval: false) }
            log +=
                LogEncoder.commit(records: buffer.bytes, ends: buffer.ends, firstSequence: sequence + 1 + UInt64(i))
                .bytes
            ends.append(log.count)
        }
        log += [UInt8](repeating: 0, count: StoreFormat.logReserveMinimum)
        return Image(snapshot: snapshot, log: log, frameEnds: ends)
    }

    private func recover(_ image: Image) throws -> RecoveredStore {
        try StoreRecovery.recover(snapshot: image.snapshot, log: image.log, paths: paths)
    }

    private func ids(_ r: RecoveredStore) -> Set<UInt64> { Set(r.table.frozen.map(\.id.rawValue)) }

    // MARK: Clean stores

    func testCleanStoreLoadsEverySessionAndPlansNothing() throws {
        let img = image(
            inSnapshot: (0..<50).map(session), sequence: 7,
            commits: [
                [.register(session(50))], [.remove(session(3).id)],
                [.outcome(session(4).id, attempts: 2, lastOutcome: "failed")],
            ])
        let r = try recover(img)
        XCTAssertTrue(r.report.isClean, r.report.description)
        XCTAssertEqual(r.table.count, 50)
        XCTAssertEqual(r.table[session(4).id]?.attempts, 2)
        XCTAssertEqual(r.lastSequence, 10)
        XCTAssertEqual(r.logicalEnd, img.reserveStart)
        XCTAssertEqual(r.plan, RepairPlan())
    }

    func testNothingOnDiskIsANewStore() throws {
        let r = try StoreRecovery.recover(snapshot: nil, log: nil, paths: paths)
        XCTAssertTrue(r.report.createdNewStore)
        XCTAssertTrue(r.plan.rewrite)
        XCTAssertTrue(r.report.isClean)
    }

    func testAFirstStartCutShortIsANewStoreButALogMissingBesideASnapshotIsNot() throws {
        // A new store writes its log before its snapshot.
        let fresh = image(inSnapshot: [], commits: [])
        let interrupted = try StoreRecovery.recover(snapshot: nil, log: fresh.log, paths: paths)
        XCTAssertTrue(interrupted.report.createdNewStore)
        XCTAssertTrue(interrupted.report.isClean)
        let noLog = try StoreRecovery.recover(snapshot: fresh.snapshot, log: nil, paths: paths)
        XCTAssertEqual(noLog.report.problems.map(\.kind), [.missingLog])
        let emptyLog = try StoreRecovery.recover(snapshot: fresh.snapshot, log: [], paths: paths)
        XCTAssertEqual(emptyLog.report.problems.map(\.kind), [.truncatedLog])
    }

    // MARK: Sequence numbers at their limit (the review's generation overflow)

    func testSequenceNumbersAtTheLimitNeitherTrapNorLoseSessions() throws {
        // CRC-valid frames stamped 2^64 − 2 and 2^64 − 1: a `+ 1` on them used to trap.
        let img = image(
            inSnapshot: (0..<40).map(session), sequence: UInt64.max - 2,
            commits: [[.register(session(40))], [.register(session(41))]])
        let r = try recover(img)
        XCTAssertEqual(r.table.count, 42)
        XCTAssertTrue(r.plan.rewrite, "absurd numbers are renumbered by a rewrite")
        XCTAssertTrue(r.report.renumbered)
        XCTAssertEqual(r.lastSequence, 0)
        XCTAssertTrue(r.report.isClean, r.report.description)

        // A snapshot stamped 2^64 − 1 with a log continuing it (its first commit cannot be numbered).
        var alone = image(inSnapshot: (0..<40).map(session), sequence: .max, commits: [])
        alone.log =
            LogEncoder.header(snapshotSequence: .max, snapshotSessions: 40, createdAt: 1)
            + [UInt8](repeating: 0, count: 512)
        let r2 = try recover(alone)
        XCTAssertEqual(r2.table.count, 40)
        XCTAssertEqual(r2.lastSequence, 0)
    }

    func testFormat1GenerationAtTheLimitIsConvertedWithEverySession() throws {
        let img = format1Image(sessions: (0..<70).map(session), generation: .max, logRecords: [.register(session(70))])
        let r = try recover(img)
        XCTAssertEqual(r.table.count, 71)
        XCTAssertEqual(r.report.convertedFromFormat, 1)
        XCTAssertTrue(r.plan.rewrite)
        XCTAssertTrue(r.report.isClean, r.report.description)
    }

    // MARK: Lost snapshot

    func testLostSnapshotBesideAnEmptyLogIsReportedWithTheSessionsItHeld() throws {
        // The normal state right after a compaction: a snapshot and a log holding only its header.
        var img = image(inSnapshot: (0..<300).map(session), sequence: 12, commits: [])
        img.snapshot = nil
        let r = try recover(img)
        XCTAssertFalse(r.report.createdNewStore, "a lost snapshot is not a new store")
        XCTAssertEqual(r.report.problems.map(\.kind), [.missingSnapshot])
        XCTAssertTrue(r.report.problems[0].detail.contains("300 sessions"), r.report.problems[0].detail)
        XCTAssertEqual(r.report.problems[0].path, paths.snapshot)
        XCTAssertEqual(r.table.count, 0)
        XCTAssertTrue(r.plan.rewrite)
        XCTAssertGreaterThanOrEqual(r.lastSequence, 12, "the rewrite numbers on from what the log had")
    }

    func testLostSnapshotWithCommitsKeepsTheCommittedSessions() throws {
        var img = image(inSnapshot: (0..<10).map(session), sequence: 3, commits: [[.register(session(20))]])
        img.snapshot = nil
        let r = try recover(img)
        XCTAssertEqual(r.report.problems.map(\.kind), [.missingSnapshot])
        XCTAssertEqual(ids(r), [session(20).id.rawValue])
    }

    // MARK: Cuts at frame boundaries

    func testLogCutAtAnyFrameBoundaryIsReportedAndKeepsWhatPrecedesIt() throws {
        // 200 sessions, one commit each: the review cut such a log after commit 100 and lost the
        // other 100 silently.
        let img = image(inSnapshot: [], sequence: 0, commits: (0..<200).map { [.register(session($0))] })
        for (commits, end) in img.frameEnds.enumerated() {
            var cut = img
            cut.log = Array(img.log[0..<end])
            let r = try recover(cut)
            XCTAssertEqual(r.table.count, commits, "cut after commit \(commits)")
            XCTAssertEqual(r.report.problems.map(\.kind), [.truncatedLog], "cut after commit \(commits)")
            XCTAssertTrue(r.plan.restoreReserve || r.plan.rewrite)
        }
        let whole = try recover(img)
        XCTAssertTrue(whole.report.isClean)
        XCTAssertEqual(whole.table.count, 200)
    }

    func testALogOfZeroBytesOnlyIsReportedAsCutNotAsTheReserve() throws {
        // Found by the store-load fuzzer: a log cut to one byte, that byte zero, read as nothing
        // but the reserve — a clean report although its header and every commit were gone.
        let img = image(inSnapshot: (0..<10).map(session), sequence: 4, commits: [[.register(session(10))]])
        for zeros in [1, 7, StoreFormat.logReserveMinimum] {
            var cut = img
            cut.log = [UInt8](repeating: 0, count: zeros)
            let r = try recover(cut)
            XCTAssertEqual(r.report.problems.map(\.kind), [.truncatedLog], "\(zeros) zero bytes")
            XCTAssertEqual(r.table.count, 10, "the snapshot's sessions are kept")
            XCTAssertTrue(r.plan.freshLog || r.plan.rewrite, "a log without its header is not appended to")
        }
    }

    func testLogCutInsideAFrameIsReportedAsACutNotATornWrite() throws {
        let img = image(inSnapshot: [], commits: (0..<3).map { [.register(session($0))] })
        var cut = img
        cut.log = Array(img.log[0..<(img.frameEnds[2] + 9)])
        let r = try recover(cut)
        XCTAssertEqual(r.table.count, 2)
        XCTAssertEqual(r.report.problems.map(\.kind), [.truncatedLog])
        XCTAssertEqual(r.plan.preserveLogBytes, img.frameEnds[2]..<(img.frameEnds[2] + 9))
    }

    func testTornLastWriteIsClearedAndReportedAsTorn() throws {
        let img = image(inSnapshot: [], commits: (0..<3).map { [.register(session($0))] })
        // The last write stopped halfway through its frame; the reserve's zeros follow it.
        var torn = img
        let third = img.frameEnds[2]..<img.frameEnds[3]
        let half = third.lowerBound + third.count / 2
        for i in half..<third.upperBound { torn.log[i] = 0 }
        let r = try recover(torn)
        XCTAssertEqual(r.table.count, 2)
        XCTAssertEqual(r.report.problems.map(\.kind), [.truncatedLogTail])
        XCTAssertEqual(r.plan.clearLogBytes?.lowerBound, third.lowerBound)
        XCTAssertFalse(r.plan.rewrite, "a torn tail is cleared in place")
        XCTAssertEqual(r.logicalEnd, third.lowerBound)
    }

    func testFramesCutOutOfTheMiddleAreReportedAsMissingCommits() throws {
        let img = image(inSnapshot: [], commits: (0..<10).map { [.register(session($0))] })
        var excised = img
        excised.log = Array(img.log[0..<img.frameEnds[4]] + img.log[img.frameEnds[7]...])
        let r = try recover(excised)
        XCTAssertEqual(r.table.count, 7)
        XCTAssertEqual(r.report.problems.map(\.kind), [.missingCommits])
        XCTAssertTrue(r.report.problems[0].detail.contains("5…7"), r.report.problems[0].detail)
        XCTAssertTrue(r.plan.rewrite)
    }

    func testSnapshotOlderThanTheLogContinuingItIsReported() throws {
        let newer = image(inSnapshot: (0..<5).map(session), sequence: 9, commits: [[.register(session(9))]])
        let older = image(inSnapshot: (0..<3).map(session), sequence: 4, commits: [])
        let r = try recover(Image(snapshot: older.snapshot, log: newer.log, frameEnds: newer.frameEnds))
        XCTAssertEqual(r.report.problems.map(\.kind), [.missingCommits])
        XCTAssertEqual(r.table.count, 4, "the old snapshot's 3 and the log's 1")
    }

    // MARK: Files that disagree

    func testALogStartedOnASnapshotOfAnotherSizeIsDamageBothKeptAsideEverySessionKept() throws {
        let img = image(inSnapshot: (0..<5).map(session), sequence: 3, commits: [[.register(session(7))]])
        // The same commit number, another snapshot: two sessions fewer than the log was started on.
        let other = SnapshotEncoder.encode((0..<3).map(session), count: 3, lastSequence: 3, createdAt: 1)
        let r = try recover(Image(snapshot: other, log: img.log, frameEnds: img.frameEnds))
        XCTAssertEqual(r.report.problems.map(\.kind), [.filesDisagree])
        XCTAssertTrue(r.plan.preserveSnapshot && r.plan.preserveLog && r.plan.rewrite, "\(r.plan)")
        XCTAssertEqual(ids(r), Set([0, 1, 2, 7].map { session($0).id.rawValue }))
    }

    func testASnapshotOlderThanItsLogKeepsBothFilesAside() throws {
        let newer = image(inSnapshot: (0..<5).map(session), sequence: 9, commits: [[.register(session(9))]])
        let older = image(inSnapshot: (0..<3).map(session), sequence: 4, commits: [])
        let r = try recover(Image(snapshot: older.snapshot, log: newer.log, frameEnds: newer.frameEnds))
        XCTAssertTrue(r.plan.preserveSnapshot && r.plan.preserveLog, "\(r.plan)")
    }

    func testLogFramesTheSnapshotClaimsButDoesNotHoldAreDamageAndTheirSessionsAreKept() throws {
        // The log registers 0…5 in commits 1…6; a "newer" snapshot at commit 4 lacks sessions 1 and 3.
        let commits: [[StoreRecord]] = (0..<6).map { [.register(session($0))] }
        let old = image(inSnapshot: [], sequence: 0, commits: commits)
        let snapshot = SnapshotEncoder.encode([0, 2].map(session), count: 2, lastSequence: 4, createdAt: 2)
        let r = try recover(Image(snapshot: snapshot, log: old.log, frameEnds: old.frameEnds))
        XCTAssertEqual(r.report.problems.map(\.kind), [.filesDisagree], r.report.description)
        XCTAssertTrue(r.report.problems[0].detail.contains("2 sessions they leave registered are not in it"))
        XCTAssertTrue(r.plan.preserveSnapshot && r.plan.preserveLog && r.plan.rewrite, "\(r.plan)")
        XCTAssertEqual(r.table.count, 6, "every session of both files")
    }

    func testASnapshotHoldingASessionTheLogRemovedBeforeItIsDamageAndTheSessionKept() throws {
        let commits: [[StoreRecord]] = [[.register(session(0))], [.register(session(1))], [.remove(session(0).id)]]
        let old = image(inSnapshot: [], sequence: 0, commits: commits)
        let snapshot = SnapshotEncoder.encode([0, 1].map(session), count: 2, lastSequence: 3, createdAt: 2)
        let r = try recover(Image(snapshot: snapshot, log: old.log, frameEnds: old.frameEnds))
        XCTAssertEqual(r.report.problems.map(\.kind), [.filesDisagree], r.report.description)
        XCTAssertEqual(r.table.count, 2, "kept: ending a session twice is the safe side")
    }

    func testASnapshotAheadOfTheLogWithARunsResultIsNotDamage() throws {
        // The compaction's snapshot (commit 2) already lacks session 1, ended by a run whose
        // removal the log commits later (commit 3): the files agree.
        let commits: [[StoreRecord]] = [[.register(session(0))], [.register(session(1))], [.remove(session(1).id)]]
        let old = image(inSnapshot: [], sequence: 0, commits: commits)
        let snapshot = SnapshotEncoder.encode([session(0)], count: 1, lastSequence: 2, createdAt: 2)
        let r = try recover(Image(snapshot: snapshot, log: old.log, frameEnds: old.frameEnds))
        XCTAssertTrue(r.report.isClean, r.report.description)
        XCTAssertEqual(ids(r), [session(0).id.rawValue])
    }

    // MARK: Compaction's crash window

    func testNewSnapshotBesideTheOldLogSkipsWhatItHoldsAndAppliesTheRest() throws {
        // The log continues snapshot 0 with commits 1…6; the new snapshot holds commits up to 4.
        let commits: [[StoreRecord]] = (0..<6).map { [.register(session($0))] }
        let old = image(inSnapshot: [], sequence: 0, commits: commits)
        let snapshot = SnapshotEncoder.encode((0..<4).map(session), count: 4, lastSequence: 4, createdAt: 2)
        let r = try recover(Image(snapshot: snapshot, log: old.log, frameEnds: old.frameEnds))
        XCTAssertTrue(r.report.isClean, r.report.description)
        XCTAssertEqual(r.report.staleLogFramesSkipped, 4)
        XCTAssertEqual(r.report.logFramesApplied, 2)
        XCTAssertEqual(r.table.count, 6)
        XCTAssertTrue(r.plan.rewrite, "commits newer than the snapshot go into a new one")

        let onlyStale = try recover(
            Image(
                snapshot: SnapshotEncoder.encode((0..<6).map(session), count: 6, lastSequence: 6, createdAt: 2),
                log: old.log, frameEnds: old.frameEnds))
        XCTAssertTrue(onlyStale.report.isClean)
        XCTAssertTrue(onlyStale.plan.freshLog)
        XCTAssertFalse(onlyStale.plan.rewrite)
        XCTAssertEqual(onlyStale.table.count, 6)
    }

    // MARK: Bit flips

    func testAnyFlippedBitInASnapshotCostsAtMostTheOneSessionInItsFrameAndIsReported() throws {
        let img = image(inSnapshot: (0..<100).map(session), sequence: 5, commits: [])
        let snapshot = try XCTUnwrap(img.snapshot)
        var worst = 100
        for offset in stride(from: 0, to: snapshot.count, by: 3) {
            var damaged = img
            damaged.snapshot?[offset] ^= UInt8(1 << (offset % 8))
            let r = try recover(damaged)
            XCTAssertGreaterThanOrEqual(r.table.count, 99, "bit flip at byte \(offset)")
            XCTAssertFalse(r.report.isClean, "bit flip at byte \(offset) must be reported")
            XCTAssertTrue(r.plan.preserveSnapshot && r.plan.rewrite)
            worst = min(worst, r.table.count)
        }
        XCTAssertEqual(worst, 99, "some flip lands in a session's frame and costs exactly that session")
    }

    func testAFlippedBitInTheLogCostsAtMostOneCommitAndIsReported() throws {
        let img = image(inSnapshot: [], commits: (0..<20).map { c in (0..<3).map { .register(session(c * 3 + $0)) } })
        for offset in stride(from: 0, to: img.reserveStart, by: 5) {
            var damaged = img
            damaged.log[offset] ^= 0x10
            let r = try recover(damaged)
            XCTAssertGreaterThanOrEqual(r.table.count, 57, "bit flip at byte \(offset)")
            XCTAssertFalse(r.report.isClean, "bit flip at byte \(offset) must be reported")
        }
    }

    // MARK: Format 1

    /// Format 1: snapshot frames of up to 32 sessions stamped with the generation, a log without
    /// header or reserve, its frames stamped with the same generation.
    private func format1Image(sessions: [Session], generation: UInt64, logRecords: [StoreRecord]) -> Image {
        var snapshot: [UInt8] = []
        var w = ByteWriter()
        let header = SnapshotHeader(
            formatVersion: 1, lastSequence: 0, sessionCount: UInt64(sessions.count), createdAt: 1)
        StoreFrame.append(stamp: generation, record: .snapshotHeader(header), to: &snapshot, scratch: &w)
        for chunk in stride(from: 0, to: sessions.count, by: 32) {
            w.bytes.removeAll()
            let part = sessions[chunk..<min(chunk + 32, sessions.count)]
            for s in part { StoreRecord.register(s).encode(into: &w) }
            w.bytes.withUnsafeBytes {
                StoreFrame.append(stamp: generation, recordCount: part.count, records: $0, to: &snapshot)
            }
        }
        StoreFrame.append(
            stamp: generation, record: .snapshotEnd(sessionCount: UInt64(sessions.count)), to: &snapshot, scratch: &w)
        var log: [UInt8] = []
        for r in logRecords { StoreFrame.append(stamp: generation, record: r, to: &log, scratch: &w) }
        return Image(snapshot: snapshot, log: log, frameEnds: [])
    }

    func testFormat1StoreIsReadWhole() throws {
        let img = format1Image(
            sessions: (0..<70).map(session), generation: 3,
            logRecords: [.register(session(70)), .remove(session(0).id)])
        let r = try recover(img)
        XCTAssertTrue(r.report.isClean, r.report.description)
        XCTAssertEqual(r.table.count, 70)
        XCTAssertNil(r.table[session(0).id])
        XCTAssertEqual(r.report.convertedFromFormat, 1)
        XCTAssertTrue(r.plan.rewrite)
    }

    // MARK: Newer formats

    func testUnknownRecordTypeOrNewerVersionRefusesToOpen() {
        var log = LogEncoder.header(snapshotSequence: 0, snapshotSessions: 0, createdAt: 1)
        [UInt8](arrayLiteral: 0x7F).withUnsafeBytes {
            StoreFrame.append(stamp: 1, recordCount: 1, records: $0, to: &log)
        }
        XCTAssertThrowsError(try StoreRecovery.recover(snapshot: nil, log: log, paths: paths)) { error in
            XCTAssertEqual((error as? StoreError)?.kind, .unsupportedFormat)
        }
        var w = ByteWriter()
        var snapshot: [UInt8] = []
        let future = SnapshotHeader(formatVersion: 3, lastSequence: 0, sessionCount: 0, createdAt: 1)
        StoreFrame.append(stamp: 0, record: .snapshotHeader(future), to: &snapshot, scratch: &w)
        XCTAssertThrowsError(try StoreRecovery.recover(snapshot: snapshot, log: nil, paths: paths)) { error in
            XCTAssertEqual((error as? StoreError)?.kind, .unsupportedFormat)
        }
    }
}
