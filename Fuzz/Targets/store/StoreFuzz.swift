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
            Fuzz.require(error.kind == .unsupportedFormat, "open refused with \(error.kind): \(error)")
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
        Fuzz.require(byID(reopened.sessions) == byID(contents.sessions), "rewritten store holds other sessions")
    }

    // MARK: A store built, then damaged

    private static func built(_ input: [UInt8]) {
        var spec = Bytes(input)
        let model = Model(&spec)
        let snapshot = StoreInspection.snapshot(model.snapshotSessions, lastSequence: model.snapshotSequence)
        let log = StoreInspection.log(
            snapshotSequence: model.snapshotSequence, snapshotSessions: model.snapshotSessions.count,
            commits: model.commits)
        var damage = Damage(snapshot: snapshot.bytes, log: log.bytes)
        damage.apply(&spec)

        let contents: StoreInspection.Contents
        do throws(StoreError) {
            contents = try StoreInspection.recover(snapshot: damage.snapshot, log: damage.log)
        } catch {
            return Fuzz.require(false, "a store this version wrote was refused: \(error)")
        }
        let recovered = byID(contents.sessions)
        let snapshotIntact = snapshot.frames.map { damage.snapshotIntact($0) }
        let commitsIntact = log.frames.map { damage.logIntact($0) }
        let expected = model.expectation(snapshotIntact: snapshotIntact, commitsIntact: commitsIntact)
        for (id, value) in expected.present {
            Fuzz.require(recovered[id] != nil, "session \(id) lost although its history is intact (\(damage))")
            if let value { Fuzz.require(recovered[id] == value, "session \(id) recovered with another value") }
        }
        for id in expected.absent {
            Fuzz.require(recovered[id] == nil, "session \(id) came back although an intact frame removed it")
        }
        // Both files gone (or an empty log and no snapshot) is indistinguishable from a new store.
        let nothingLeft = damage.snapshot == nil && (damage.log?.isEmpty ?? true)
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

    private static func byID(_ sessions: [Session]) -> [SessionID: Session] {
        Dictionary(sessions.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
    }
}

/// The input read as a stream of bytes; zeros once it runs out.
struct Bytes {
    private let input: [UInt8]
    private var position = 0

    init(_ input: [UInt8]) { self.input = input }

    var isEmpty: Bool { position >= input.count }

    mutating func next() -> UInt8 {
        guard position < input.count else { return 0 }
        defer { position += 1 }
        return input[position]
    }

    mutating func u16() -> Int { Int(next()) | Int(next()) << 8 }

    mutating func text(_ prefix: String) -> String {
        let n = Int(next() % 24)
        return prefix + String((0..<n).map { _ in Character(Unicode.Scalar(0x61 + next() % 26)) })
    }
}

/// The store the input describes, and what a reader must find of it.
struct Model {
    var snapshotSequence: UInt64
    var snapshotSessions: [Session] = []
    var commits: [[StoreInspection.Change]] = []
    /// The sessions once every commit is applied.
    var final: [SessionID: Session] = [:]

    init(_ spec: inout Bytes) {
        // Sequence numbers as the store writes them: small, or near the point where it renumbers.
        let high = spec.next()
        snapshotSequence = high & 0x80 != 0 ? (1 << 63) - UInt64(high & 0x0F) - 1 : UInt64(high & 0x3F)
        var next: UInt64 = 1
        func newSession(_ spec: inout Bytes) -> Session {
            defer { next += 1 }
            return Session(
                id: SessionID(rawValue: 0x5E55_0000_0000_0000 | next), key: SessionKey(spec.text("key-")),
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

    /// Sessions a reader must find (with their value, when their whole history is intact) and
    /// sessions it must not, given which frames survived intact.
    func expectation(snapshotIntact: [Bool], commitsIntact: [Bool]) -> (
        present: [SessionID: Session?], absent: Set<SessionID>
    ) {
        enum State {
            case present(Session, exact: Bool)
            case absent
            case unknown
        }
        var states: [SessionID: State] = [:]
        for (i, s) in snapshotSessions.enumerated() {
            states[s.id] = snapshotIntact[i] ? .present(s, exact: true) : .unknown
        }
        for (j, changes) in commits.enumerated() {
            for change in changes {
                switch (change, commitsIntact[j]) {
                case (.register(let s), true): states[s.id] = .present(s, exact: true)
                case (.register(let s), false): states[s.id] = .unknown
                case (.remove(let id), true): states[id] = .absent
                case (.remove(let id), false): states[id] = .unknown
                case (.outcome(let id, let attempts, let last), true):
                    if case .present(var s, let exact) = states[id] {
                        s.attempts = attempts
                        s.lastOutcome = last
                        states[id] = .present(s, exact: exact)
                    }
                case (.outcome(let id, _, _), false):
                    if case .present(let s, _) = states[id] { states[id] = .present(s, exact: false) }
                }
            }
        }
        var present: [SessionID: Session?] = [:]
        var absent: Set<SessionID> = []
        for (id, state) in states {
            switch state {
            case .present(let s, let exact): present[id] = exact ? s : Session?.none
            case .absent: absent.insert(id)
            case .unknown: break
            }
        }
        return (present, absent)
    }
}

/// Damage done to a store's two files, as the input says: bytes changed, a file cut short or lost.
struct Damage: CustomStringConvertible {
    private let originalSnapshot: [UInt8]
    private let originalLog: [UInt8]
    var snapshot: [UInt8]?
    var log: [UInt8]?
    private var changed: [(inLog: Bool, offset: Int)] = []

    init(snapshot: [UInt8], log: [UInt8]) {
        originalSnapshot = snapshot
        originalLog = log
        self.snapshot = snapshot
        self.log = log
    }

    mutating func apply(_ spec: inout Bytes) {
        while !spec.isEmpty {
            let what = spec.next()
            let inLog = what & 1 != 0
            let size = (inLog ? log : snapshot)?.count ?? 0
            switch (what >> 1) % 8 {
            case 0 where size > 0:  // cut the file short
                let end = spec.u16() % size
                if inLog { log?.removeSubrange(end...) } else { snapshot?.removeSubrange(end...) }
            case 1:  // lose the file
                if inLog { log = nil } else { snapshot = nil }
            default:  // change one byte
                guard size > 0 else { continue }
                let offset = spec.u16() % size
                let flip = spec.next() | 1
                if inLog { log?[offset] ^= flip } else { snapshot?[offset] ^= flip }
                changed.append((inLog, offset))
            }
        }
    }

    var isNone: Bool { snapshot == originalSnapshot && log == originalLog }

    func snapshotIntact(_ frame: Range<Int>) -> Bool { intact(frame, snapshot, originalSnapshot) }
    func logIntact(_ frame: Range<Int>) -> Bool { intact(frame, log, originalLog) }

    private func intact(_ frame: Range<Int>, _ file: [UInt8]?, _ original: [UInt8]) -> Bool {
        guard let file, frame.upperBound <= file.count else { return frame.isEmpty && file != nil }
        return file[frame] == original[frame]
    }

    var description: String {
        "snapshot \(snapshot.map { "\($0.count) of \(originalSnapshot.count) bytes" } ?? "lost"), "
            + "log \(log.map { "\($0.count) of \(originalLog.count) bytes" } ?? "lost"), bytes changed at \(changed)"
    }
}
