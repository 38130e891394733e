import FuzzSupport
import Glibc
import Sessions

/// A store's two files as the store itself wrote them, and the sessions they hold.
struct StoreFiles: Sendable {
    let name: String
    let snapshot: [UInt8]
    let log: [UInt8]
    let sessions: [Session]
}

/// The undamaged stores the target damages, made once per process by `SessionStore` itself
/// (registrations, removals, outcomes and new versions committed one by one, and a compaction),
/// so that the inputs start from exactly what the daemon writes.
enum BaseStores {
    /// Three stages of one store's life: every commit in the log; just compacted (the sessions
    /// in the snapshot, an empty log); and more commits after that compaction.
    static let all: [StoreFiles] = make()

    /// The key of the `n`th session: the planted secret, so that a message quoting it is found.
    static func key(_ n: Int) -> SessionKey { SessionKey("\(PlantedSecret.text)-\(n)") }

    /// Session number `n` (ids 1, 2, …).
    static func session(_ n: Int, endpoints: [String] = ["auth", "licence"]) -> Session {
        Session(
            id: SessionID(rawValue: UInt64(n)), key: key(n), endpoints: endpoints, ownerUID: UInt32(1000 + n % 3),
            label: n % 2 == 0 ? "label \(n)" : nil, registeredAt: 1_700_000_000_000_000 + UInt64(n))
    }

    private static func make() -> [StoreFiles] {
        let path = ScratchDirectory.make()
        defer { ScratchDirectory.remove(path) }
        let never = CompactionPolicy(minimumLogBytes: .max)
        var store = open(path, never)
        var stages: [StoreFiles] = []
        func commit(_ body: () -> Void) {
            body()
            Fuzz.require(store.flush(), "a commit of the base store did not finish")
        }
        func register(_ sessions: [Session]) {
            commit {
                for s in sessions {
                    do throws(StoreError) {
                        try store.register(s) {
                            Fuzz.require($0 == nil, "registering \(s.id) failed: \(String(describing: $0))")
                        }
                    } catch {
                        Fuzz.require(false, "registering \(s.id) refused: \(error)")
                    }
                }
            }
        }
        func capture(_ name: String) {
            let snapshot = ScratchDirectory.read(StoreInspection.fileNames.snapshot, in: path) ?? []
            var log = ScratchDirectory.read(StoreInspection.fileNames.log, in: path) ?? []
            // The log's reserve is 64 KiB of zeros ahead of need; the format asks for 512 at
            // least, and an input of 16 KiB at most is what libFuzzer mutates well.
            let end = (StoreInspection.frames(of: log).last?.range.upperBound ?? 0) + 512
            if log.count > end { log.removeSubrange(end...) }
            stages.append(StoreFiles(name: name, snapshot: snapshot, log: log, sessions: store.allSessions))
        }

        register([session(1), session(2)])
        register([session(3)])
        register([session(4), session(5), session(6)])
        commit { store.unregister(SessionID(rawValue: 2)) { Fuzz.require($0 == nil, "unregister failed") } }
        commit { store.recordOutcome(id: SessionID(rawValue: 3), outcome: "HTTP 503", attemptsDelta: 1) }
        commit { store.replace(session(4, endpoints: ["licence"])) }
        commit { store.recordEnded(SessionID(rawValue: 5)) }
        capture("log")

        // Compaction happens in the background once the policy allows it; wait for it.
        var compacted = false
        store.onEvent = { if case .compacted = $0 { compacted = true } }
        store.compactionPolicy = CompactionPolicy(minimumLogBytes: 0, snapshotRatio: 0, maximumLogBytes: 0)
        store.submitStaged()
        for _ in 0..<200 where !compacted {
            var fd = pollfd(fd: store.completionDescriptor, events: Int16(POLLIN), revents: 0)
            if poll(&fd, 1, 50) > 0 { store.processCompletions() }
        }
        Fuzz.require(compacted, "the base store was not compacted")
        store.compactionPolicy = never
        capture("compacted")

        register([session(7), session(8)])
        commit { store.recordOutcome(id: SessionID(rawValue: 1), outcome: "timed out", attemptsDelta: 2) }
        commit { store.recordEnded(SessionID(rawValue: 6)) }
        commit { store.unregister(SessionID(rawValue: 7)) { Fuzz.require($0 == nil, "unregister failed") } }
        capture("compacted-then-log")
        store.close()

        // What the store wrote must read back as exactly what it held.
        for stage in stages {
            let contents = try? StoreInspection.recover(snapshot: stage.snapshot, log: stage.log)
            Fuzz.require(contents?.report.isClean == true, "base store '\(stage.name)' does not read back clean")
            Fuzz.require(
                contents?.sessions.byID == stage.sessions.byID, "base store '\(stage.name)' reads back other sessions")
        }
        store = open(path, never)  // and the directory opens clean
        store.close()
        return stages
    }

    private static func open(_ path: String, _ policy: CompactionPolicy) -> SessionStore {
        do throws(StoreError) {
            return try SessionStore.open(directory: path, compactionPolicy: policy).0
        } catch {
            Fuzz.require(false, "opening the base store in \(path) failed: \(error)")
            fatalError()
        }
    }
}
