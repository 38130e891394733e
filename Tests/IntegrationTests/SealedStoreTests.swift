import Foundation
import Glibc
import XCTest

@testable import Sessions

/// The store with a key (`[Store] KeyCredential=`): no session key in clear in any file it writes,
/// every key back at reopen with that key, a refusal without it or with another, a store of clear
/// keys sealed at open, and a sealed key moved to another session kept aside as damage.
final class SealedStoreTests: XCTestCase {
    private var dirs: [String] = []
    private static let planted = "PLANTED-SESSION-KEY-"

    override func tearDown() {
        for d in dirs { try? FileManager.default.removeItem(atPath: d) }
        dirs.removeAll()
        super.tearDown()
    }

    private func makeDir() throws -> String {
        let path = "/tmp/sealed-store-test-\(getpid())-\(SessionID.random())"
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        dirs.append(path)
        return path
    }

    private func randomKey() -> StoreKey {
        StoreKey(bytes: (0..<StoreKey.byteCount).map { _ in UInt8.random(in: 0...255) })!
    }

    /// `count` sessions whose keys are `planted` followed by 24 random hex digits.
    private func sessions(_ count: Int) -> [Session] {
        (0..<count).map { n in
            let secret = Self.planted + (0..<24).map { _ in String(UInt8.random(in: 0...15), radix: 16) }.joined()
            return Session(
                id: SessionID(rawValue: 0x5EA1_0000_0000_0000 | UInt64(n)), key: SessionKey(secret),
                endpoints: ["auth"], ownerUID: 1000, label: n % 3 == 0 ? "label \(n)" : nil,
                registeredAt: 1_700_000_000_000_000 + UInt64(n))
        }
    }

    private func register(_ sessions: [Session], in store: SessionStore) throws {
        var errors: [String] = []
        for s in sessions { try store.register(s) { if let e = $0 { errors.append(e.message) } } }
        XCTAssertTrue(store.flush(), "flush")
        XCTAssertEqual(errors, [])
    }

    /// The planted keys found in clear in any file of `dir` (corrupt copies included).
    private func keysInClear(_ dir: String) throws -> Set<String> {
        var found: Set<String> = []
        let prefix = Data(Self.planted.utf8)
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) {
            let data = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name))
            var start = data.startIndex
            while let range = data.range(of: prefix, in: start..<data.endIndex) {
                let end = min(range.upperBound + 24, data.endIndex)
                found.insert(String(decoding: data[range.lowerBound..<end], as: UTF8.self))
                start = range.upperBound
            }
        }
        return found
    }

    private func contents(_ dir: String) throws -> [String: Data] {
        var files: [String: Data] = [:]
        for name in try FileManager.default.contentsOfDirectory(atPath: dir) {
            files[name] = try Data(contentsOf: URL(fileURLWithPath: dir + "/" + name))
        }
        return files
    }

    /// A store of `planted` sessions with `key` (nil: clear): registered, half of them replaced by
    /// a run's result, compacted in between, so that both files hold register records.
    private func makeStore(_ dir: String, key: StoreKey?, planted: [Session]) throws {
        let (store, _) = try SessionStore.open(
            directory: dir, compactionPolicy: CompactionPolicy(minimumLogBytes: 1, snapshotRatio: 0), storeKey: key)
        try register(Array(planted.prefix(planted.count / 2)), in: store)
        XCTAssertTrue(store.waitUntilIdle())
        store.compactionPolicy = CompactionPolicy()
        try register(Array(planted.dropFirst(planted.count / 2)), in: store)
        for var s in planted.prefix(planted.count / 4) {
            s.attempts = 1
            s.lastOutcome = "failed"
            XCTAssertTrue(store.replace(s))
        }
        XCTAssertTrue(store.flush())
        store.close()
    }

    func testWithAKeyNoFileHoldsAKeyInClearAndReopeningWithItReadsThemAll() throws {
        let planted = sessions(1000)
        let clearDir = try makeDir()
        try makeStore(clearDir, key: nil, planted: planted)
        XCTAssertEqual(try keysInClear(clearDir).count, 1000, "without a key every planted key is in the files")

        let dir = try makeDir()
        let key = randomKey()
        try makeStore(dir, key: key, planted: planted)
        XCTAssertEqual(try keysInClear(dir), [], "with a key no planted key is in the files")
        XCTAssertTrue(FileManager.default.fileExists(atPath: dir + "/" + StoreFormat.snapshotFileName))

        let (store, report) = try SessionStore.open(directory: dir, storeKey: key)
        defer { store.close() }
        XCTAssertTrue(report.isClean, "\(report)")
        XCTAssertFalse(report.keysSealed)
        XCTAssertEqual(store.count, 1000)
        for s in planted {
            XCTAssertEqual(store.session(id: s.id)?.key, s.key, "session \(s.id)")
            XCTAssertEqual(store.session(id: s.id)?.attempts, s.id.rawValue & 0xFFFF < 250 ? 1 : 0)
        }
    }

    func testReopeningWithoutTheKeyRefusesAndChangesNothing() throws {
        let dir = try makeDir()
        try makeStore(dir, key: randomKey(), planted: sessions(20))
        let before = try contents(dir)
        XCTAssertThrowsError(try SessionStore.open(directory: dir)) { error in
            let error = error as? StoreError
            XCTAssertEqual(error?.kind, .storeKeyMissing)
            XCTAssertTrue(error?.message.contains("KeyCredential=") ?? false, "\(String(describing: error))")
            XCTAssertTrue(error?.message.contains(dir) ?? false, "names the store")
        }
        XCTAssertThrowsError(
            try SessionStore.openReadOnly(directory: dir, cause: StoreError(kind: .io, message: "EROFS"))
        ) { XCTAssertEqual(($0 as? StoreError)?.kind, .storeKeyMissing) }
        XCTAssertEqual(try contents(dir), before, "not a byte changed, nothing kept aside")
    }

    func testReopeningWithAnotherKeyRefusesAndChangesNothing() throws {
        let dir = try makeDir()
        try makeStore(dir, key: randomKey(), planted: sessions(20))
        let before = try contents(dir)
        XCTAssertThrowsError(try SessionStore.open(directory: dir, storeKey: randomKey())) { error in
            let error = error as? StoreError
            XCTAssertEqual(error?.kind, .storeKeyRejected)
            XCTAssertTrue(
                error?.message.contains("not the key that sealed them") ?? false, "\(String(describing: error))")
        }
        XCTAssertEqual(try contents(dir), before)
    }

    func testAStoreOfClearKeysIsSealedAtOpenAndKeepsEverySession() throws {
        let dir = try makeDir()
        let planted = sessions(1000)
        try makeStore(dir, key: nil, planted: planted)
        XCTAssertEqual(try keysInClear(dir).count, 1000)
        let key = randomKey()
        do {
            let (store, report) = try SessionStore.open(directory: dir, storeKey: key)
            defer { store.close() }
            XCTAssertTrue(report.keysSealed, "\(report)")
            XCTAssertTrue(report.description.contains("sealed the keys of 1000 sessions"), report.description)
            XCTAssertTrue(report.isClean)
            XCTAssertEqual(report.preservedFiles, [], "nothing kept aside: a clear copy would defeat the point")
            XCTAssertEqual(store.count, 1000)
            for s in planted { XCTAssertEqual(store.session(id: s.id)?.key, s.key) }
        }
        XCTAssertEqual(try keysInClear(dir), [], "after the conversion no planted key is in the files")
        let (again, report) = try SessionStore.open(directory: dir, storeKey: key)
        defer { again.close() }
        XCTAssertFalse(report.keysSealed, "converted once")
        XCTAssertEqual(again.count, 1000)
    }

    func testASealedKeyMovedIntoAnotherSessionsRecordIsDamageKeptAside() throws {
        let dir = try makeDir()
        let key = randomKey()
        let all = sessions(3)
        // Session 1's record carrying session 0's sealed key (same length: same place).
        func record(_ s: Session) -> [UInt8] {
            var w = ByteWriter()
            StoreRecord.register(s).encode(into: &w, sealingWith: key)
            return w.bytes
        }
        // Tag and id (9 bytes), then the sealed key: its length (1 byte) and 44 + 28 bytes.
        let keyEnd = 9 + 1 + 44 + 28
        let forged = Array(record(all[1]).prefix(9)) + record(all[0])[9..<keyEnd] + record(all[1]).dropFirst(keyEnd)
        var snapshot: [UInt8] = []
        var scratch = ByteWriter()
        let header = SnapshotHeader(formatVersion: 2, lastSequence: 5, sessionCount: 3, createdAt: 0)
        StoreFrame.append(stamp: 5, record: .snapshotHeader(header), to: &snapshot, scratch: &scratch)
        StoreFrame.append(stamp: 5, record: .register(all[0]), to: &snapshot, scratch: &scratch, sealingWith: key)
        forged.withUnsafeBytes { StoreFrame.append(stamp: 5, recordCount: 1, records: $0, to: &snapshot) }
        StoreFrame.append(stamp: 5, record: .register(all[2]), to: &snapshot, scratch: &scratch, sealingWith: key)
        StoreFrame.append(stamp: 5, record: .snapshotEnd(sessionCount: 3), to: &snapshot, scratch: &scratch)
        let log =
            LogEncoder.header(snapshotSequence: 5, snapshotSessions: 3, createdAt: 0)
            + [UInt8](repeating: 0, count: StoreFormat.logReserveMinimum)
        try Data(snapshot).write(to: URL(fileURLWithPath: dir + "/" + StoreFormat.snapshotFileName))
        try Data(log).write(to: URL(fileURLWithPath: dir + "/" + StoreFormat.logFileName))

        let (store, report) = try SessionStore.open(directory: dir, storeKey: key)
        defer { store.close() }
        XCTAssertEqual(report.problems.map(\.kind), [.corruptSnapshot], "\(report)")
        XCTAssertTrue(report.description.contains("do not authenticate under the store key"), report.description)
        XCTAssertEqual(report.preservedFiles.count, 1, "the snapshot kept aside")
        XCTAssertEqual(store.count, 2)
        XCTAssertEqual(store.session(id: all[0].id)?.key, all[0].key)
        XCTAssertNil(store.session(id: all[1].id), "no key of its own: it cannot be ended")
        XCTAssertEqual(store.session(id: all[2].id)?.key, all[2].key)
    }
}
