import FuzzSupport
import Sessions

/// Store frame decoding and loading (Sessions' recovery), two ways, chosen by the first byte:
///
/// - **Raw** (even first byte): the rest, split at `@@LOG@@`, is a snapshot and a log, as found on
///   a disk. Invariants beyond "no crash": opening refuses only for a newer format; whatever it
///   recovers, written again as a fresh store, opens clean with the same sessions.
/// - **Built** (odd first byte): the input describes a store — sessions in the snapshot, commits
///   that register, remove and record outcomes — which is encoded exactly as the store writes it,
///   then damaged as the input says (bytes changed in either file, either file cut or lost).
///   Invariants: a store that loads never has fewer sessions than its undamaged frames hold (every
///   session whose surviving history is intact is there, with its value when all of it is
///   intact; none that intact frames removed comes back); any damage that changes a byte of a
///   frame is reported; an undamaged store opens clean with exactly its sessions.
enum StoreFuzz {
    static let separator = Array("@@LOG@@".utf8)

    static func run(_ input: [UInt8]) {
        guard let first = input.first else { return }
        if first & 1 == 0 {
            raw(Array(input.dropFirst()))
        } else {
            built(Array(input.dropFirst()))
        }
    }

    // MARK: Raw bytes

    private static func raw(_ input: [UInt8]) {
        let parts = Fuzz.split(input, separator: separator)
        let snapshot = parts.first.flatMap { $0.isEmpty ? nil : $0 }
        let log = parts.count > 1 ? parts[1] : nil
        let contents: StoreInspection.Contents
        do throws(StoreError) {
            contents = try StoreInspection.recover(snapshot: snapshot, log: log)
        } catch {
            // A newer format, or a sealed key (record type 04) with no store key to open it.
            Fuzz.require(
                error.kind == .unsupportedFormat || error.kind == .storeKeyMissing,
                "open refused with \(error.kind): \(error)")
            return
        }
        Fuzz.require(contents.report.sessionCount == contents.sessions.count, "report counts differ")
        let sequence = contents.report.lastSequence
        let again = StoreInspection.snapshot(contents.sessions, lastSequence: sequence).bytes
        let freshLog = StoreInspection.log(
            snapshotSequence: sequence, snapshotSessions: contents.sessions.count, commits: []
        ).bytes
        guard let reopened = try? StoreInspection.recover(snapshot: again, log: freshLog) else {
            return Fuzz.require(false, "a store written from recovered sessions does not open")
        }
        Fuzz.require(reopened.report.isClean, "rewritten store not clean: \(reopened.report)")
        Fuzz.require(reopened.sessions.byID == contents.sessions.byID, "rewritten store holds other sessions")
    }

    // MARK: A store built, then damaged

    private static func built(_ input: [UInt8]) {
        var spec = FuzzBytes(input)
        let model = Model(&spec)
        let snapshot = StoreInspection.snapshot(model.snapshotSessions, lastSequence: model.snapshotSequence)
        let log = StoreInspection.log(
            snapshotSequence: model.snapshotSequence, snapshotSessions: model.snapshotSessions.count,
            commits: model.commits)
        var damage = StoreDamage(snapshot: snapshot.bytes, log: log.bytes)
        damage.apply(&spec)

        let contents: StoreInspection.Contents
        do throws(StoreError) {
            contents = try StoreInspection.recover(snapshot: damage.snapshot, log: damage.log)
        } catch {
            return Fuzz.require(false, "a store this version wrote was refused: \(error)")
        }
        Fuzz.require(!PlantedSecret.leaks(into: "\(contents.report)"), "the load report quotes a key")
        let recovered = contents.sessions.byID
        let expected = StoreExpectation(
            snapshot: zip(model.snapshotSessions, snapshot.frames).map { ($0, damage.snapshotIntact($1)) },
            commits: zip(model.commits, log.frames).map { ($0, damage.logIntact($1)) })
        expected.check(recovered, "\(damage)")
        // Both files gone (or an empty log and no snapshot) is indistinguishable from a new store.
        let nothingLeft = damage.nothingLeft
        let sessionFrameChanged = snapshot.frames.contains { !damage.snapshotIntact($0) }
        if (sessionFrameChanged || !damage.logIntact(0..<log.end)) && !nothingLeft {
            Fuzz.require(!contents.report.isClean, "damage to a frame went unreported (\(damage))")
        }
        if damage.isNone {
            Fuzz.require(contents.report.isClean, "an undamaged store reported problems: \(contents.report)")
            Fuzz.require(recovered == model.final, "an undamaged store opened with other sessions")
        }
        if recovered.count < model.final.count && !nothingLeft {
            Fuzz.require(!contents.report.isClean, "sessions lost silently (\(damage))")
        }
    }
}

/// The store the input describes, and what a reader must find of it.
struct Model {
    var snapshotSequence: UInt64
    var snapshotSessions: [Session] = []
    var commits: [[StoreInspection.Change]] = []
    /// The sessions once every commit is applied.
    var final: [SessionID: Session] = [:]

    init(_ spec: inout FuzzBytes) {
        // Sequence numbers as the store writes them: small, or near the point where it renumbers.
        let high = spec.next()
        snapshotSequence = high & 0x80 != 0 ? (1 << 63) - UInt64(high & 0x0F) - 1 : UInt64(high & 0x3F)
        var next: UInt64 = 1
        func newSession(_ spec: inout FuzzBytes) -> Session {
            defer { next += 1 }
            return Session(
                id: SessionID(rawValue: 0x5E55_0000_0000_0000 | next),
                key: SessionKey(spec.text(PlantedSecret.text + "-")),
                endpoints: spec.next() & 1 == 0 ? ["auth"] : ["auth", "licence"], ownerUID: UInt32(spec.next()),
                label: spec.next() & 1 == 0 ? nil : spec.text("label "), registeredAt: UInt64(spec.u16()),
                attempts: Int(spec.next() % 4), lastOutcome: spec.next() & 1 == 0 ? nil : spec.text("failed "))
        }
        for _ in 0..<Int(spec.next() % 40) {
            let s = newSession(&spec)
            snapshotSessions.append(s)
            final[s.id] = s
        }
        for _ in 0..<Int(spec.next() % 24) {
            var changes: [StoreInspection.Change] = []
            for _ in 0...Int(spec.next() % 4) {
                let ids = final.keys.sorted()
                switch spec.next() % 3 {
                case 0 where !ids.isEmpty:
                    let id = ids[Int(spec.next()) % ids.count]
                    changes.append(.remove(id))
                    final[id] = nil
                case 1 where !ids.isEmpty:
                    let id = ids[Int(spec.next()) % ids.count]
                    let attempts = Int(spec.next())
                    let outcome = spec.text("HTTP ")
                    changes.append(.outcome(id, attempts: attempts, lastOutcome: outcome))
                    final[id]?.attempts = attempts
                    final[id]?.lastOutcome = outcome
                default:
                    let s = newSession(&spec)
                    changes.append(.register(s))
                    final[s.id] = s
                }
            }
            commits.append(changes)
        }
    }
}
