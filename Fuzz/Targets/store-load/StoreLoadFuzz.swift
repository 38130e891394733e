import FuzzSupport
import Glibc
import Sessions

/// Loading a store from its state directory, as the daemon does at start (`SessionStore.open`:
/// reading the files, recovery, keeping damaged data aside, repairing), then using it. Two ways,
/// chosen by the first byte:
///
/// - **Damaged** (odd first byte): the next byte picks one of ``BaseStores`` — files written by
///   the store itself — and the rest damages them (bytes changed, either file cut or lost;
///   ``StoreDamage``). Invariants: opening succeeds; every session whose history lies in intact
///   frames is recovered (with its value when all of it is intact), none that an intact frame
///   removed comes back; damage to a frame is reported; an undamaged store opens clean with
///   exactly its sessions.
/// - **Raw** (even first byte): the rest, split at `@@LOG@@`, is the snapshot and the log as found
///   on a disk. Invariant: opening refuses only a newer format.
///
/// Both ways: no key (the planted secret) in the report or any error; the directory's files
/// recover the same sessions as the same bytes in memory (``StoreInspection``); every file named
/// as kept aside exists; a registration made after the load is durable, and the directory then
/// opens clean with everything; no descriptor is left open.
enum StoreLoadFuzz {
    static let separator = Array("@@LOG@@".utf8)

    static func run(_ input: [UInt8]) {
        guard let first = input.first else { return }
        let bases = BaseStores.all  // made before counting descriptors
        let descriptors = ScratchDirectory.openDescriptors()
        let path = ScratchDirectory.make()
        if first & 1 == 0 {
            raw(Array(input.dropFirst()), in: path)
        } else {
            damaged(Array(input.dropFirst()), bases, in: path)
        }
        ScratchDirectory.remove(path)
        Fuzz.require(ScratchDirectory.openDescriptors() == descriptors, "a descriptor was left open")
    }

    // MARK: The two ways

    private static func damaged(_ input: [UInt8], _ bases: [StoreFiles], in path: String) {
        var spec = FuzzBytes(input)
        let base = bases[Int(spec.next()) % bases.count]
        var damage = StoreDamage(snapshot: base.snapshot, log: base.log)
        damage.apply(&spec)
        let (store, report) = open(snapshot: damage.snapshot, log: damage.log, in: path)
        guard let store, let report else {
            return Fuzz.require(false, "a store this version wrote was refused (\(base.name), \(damage))")
        }
        let recovered = store.allSessions.byID

        let snapshotFrames = StoreInspection.frames(of: base.snapshot)
        let logFrames = StoreInspection.frames(of: base.log)
        let snapshot = snapshotFrames.flatMap { frame in
            frame.changes.compactMap { change -> (Session, Bool)? in
                guard case .register(let s) = change else { return nil }
                return (s, damage.snapshotIntact(frame.range))
            }
        }
        let commits = logFrames.dropFirst().map { ($0.changes, damage.logIntact($0.range)) }
        StoreExpectation(snapshot: snapshot, commits: commits).check(recovered, "\(base.name), \(damage)")

        let framesChanged =
            snapshotFrames.contains { !damage.snapshotIntact($0.range) }
            || logFrames.contains { !damage.logIntact($0.range) }
        if framesChanged && !damage.nothingLeft {
            Fuzz.require(!report.isClean, "damage to a frame went unreported (\(base.name), \(damage))")
        }
        if damage.isNone {
            Fuzz.require(report.isClean, "an undamaged store reported problems: \(report)")
            Fuzz.require(recovered == base.sessions.byID, "an undamaged store opened with other sessions")
        }
        use(store, report, in: path)
    }

    private static func raw(_ input: [UInt8], in path: String) {
        let parts = Fuzz.split(input, separator: separator)
        let snapshot = parts.first.flatMap { $0.isEmpty ? nil : $0 }
        let log = parts.count > 1 ? parts[1] : nil
        let (store, report) = open(snapshot: snapshot, log: log, in: path)
        guard let store, let report else { return }
        use(store, report, in: path)
    }

    // MARK: What every load must satisfy

    /// Writes the files into `path` and opens the store there; nil when opening refused (only a
    /// newer format, or sealed keys without a store key, may be refused).
    private static func open(snapshot: [UInt8]?, log: [UInt8]?, in path: String) -> (SessionStore?, LoadReport?) {
        ScratchDirectory.write(snapshot, to: StoreInspection.fileNames.snapshot, in: path)
        ScratchDirectory.write(log, to: StoreInspection.fileNames.log, in: path)
        let inMemory: StoreInspection.Contents?
        do throws(StoreError) {
            inMemory = try StoreInspection.recover(snapshot: snapshot, log: log)
        } catch {
            inMemory = nil
        }
        do throws(StoreError) {
            let (store, report) = try SessionStore.open(directory: path, compactionPolicy: CompactionPolicy())
            Fuzz.require(!PlantedSecret.leaks(into: "\(report)"), "the load report quotes a key: \(report)")
            Fuzz.require(
                report.sessionCount == store.count, "the report counts \(report.sessionCount), not \(store.count)")
            Fuzz.require(
                inMemory?.sessions.byID == store.allSessions.byID,
                "the directory recovered other sessions than the same bytes in memory")
            for file in report.preservedFiles {
                Fuzz.require(access(file, F_OK) == 0, "the report names \(file) as kept aside, but it is not there")
            }
            return (store, report)
        } catch {
            Fuzz.require(!PlantedSecret.leaks(into: "\(error)"), "an error quotes a key: \(error)")
            // A newer format, or a sealed key (record type 04) with no store key to open it.
            Fuzz.require(
                error.kind == .unsupportedFormat || error.kind == .storeKeyMissing,
                "open refused with \(error.kind): \(error)")
            Fuzz.require(inMemory == nil, "open refused what recovery in memory accepts: \(error)")
            return (nil, nil)
        }
    }

    /// After any load: a new registration is durable, and the directory then opens clean with
    /// every session.
    private static func use(_ store: SessionStore, _ report: LoadReport, in path: String) {
        var expected = store.allSessions.byID
        let added = BaseStores.session(999)
        if expected[added.id] == nil {
            var answered = false
            var failure: StoreError?
            do throws(StoreError) {
                try store.register(added) {
                    answered = true
                    failure = $0
                }
            } catch {
                Fuzz.require(false, "a registration after the load was refused: \(error)")
            }
            Fuzz.require(store.flush(), "a registration after the load was not written")
            Fuzz.require(
                answered && failure == nil, "a registration after the load failed: \(String(describing: failure))")
            expected[added.id] = added
        }
        store.close()
        do throws(StoreError) {
            let (again, second) = try SessionStore.open(directory: path, compactionPolicy: CompactionPolicy())
            defer { again.close() }
            Fuzz.require(second.isClean, "the repaired store does not open clean: \(second) (first: \(report))")
            Fuzz.require(
                again.allSessions.byID == expected,
                "the repaired store holds other sessions: \(again.allSessions.map(\.id).sorted()), not "
                    + "\(expected.keys.sorted()) (first load: \(report); second: \(second))")
        } catch {
            Fuzz.require(false, "the repaired store does not open: \(error)")
        }
    }
}
