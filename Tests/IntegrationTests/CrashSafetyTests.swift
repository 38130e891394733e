import Foundation
import Glibc
import XCTest

/// Crash safety of the real daemon: SIGKILL at random moments while clients register and while
/// the stop run ends sessions, then a restart on the same state directory shows what survived.
/// And a secrets scan: session keys appear nowhere but in the store files.
final class CrashSafetyTests: XCTestCase {
    // MARK: 1. kill -9 during registrations

    /// Every acknowledged registration survives a SIGKILL at a random moment; the store always loads.
    func testKillNineDuringRegistrationsLosesNothingAcknowledged() throws {
        let rounds = 52
        let workers = 2
        let closedPort = try EndSessionServer.closedPort()
        let config = "[Endpoint]\nName=auth\nURL=http://127.0.0.1:\(closedPort)/user/{session}/endsession\n"
        let tally = Tally()
        let started = Date()
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            var round = worker
            while round < rounds {
                do {
                    try Self.registrationRound(round: round, config: config, tally: tally)
                } catch {
                    tally.fail("round \(round): \(error)")
                }
                round += workers
            }
        }
        let elapsed = Date().timeIntervalSince(started)
        let t = tally.snapshot()
        print(
            "CrashSafety kill-9 during registrations: rounds \(t.rounds), registrations sent \(t.sent), "
                + "acknowledged \(t.acknowledged) (all found after restart: \(t.acknowledgedFound)), "
                + "unacknowledged found stored \(t.unacknowledgedStored) / not stored \(t.unacknowledgedMissing), "
                + "torn tails reported \(t.tornTails), in \(String(format: "%.1f", elapsed)) s")
        for failure in t.failures.prefix(20) { XCTFail(failure) }
        XCTAssertEqual(t.failures.count, 0, "\(t.failures.count) failures")
        XCTAssertEqual(t.rounds, rounds)
        XCTAssertGreaterThan(t.acknowledged, 0, "no registration was acknowledged in any round")
        XCTAssertEqual(t.acknowledgedFound, t.acknowledged)
    }

    private static func registrationRound(round: Int, config: String, tally: Tally) throws {
        let scratch = try ScratchDirectory("crash-reg")
        var daemon: DaemonProcess? = try DaemonProcess(config: config, scratch: scratch)
        guard daemon!.waitUntilReady(timeout: 10) != nil else {
            return tally.fail("round \(round): the daemon did not report READY=1: \(daemon!.stderr)")
        }
        let socketPath = daemon!.socketPath
        let log = RegistrationLog()
        let clients = 4
        let group = DispatchGroup()
        let connected = DispatchSemaphore(value: 0)
        for client in 0..<clients {
            group.enter()
            let thread = Thread {
                defer { group.leave() }
                Self.registerUntilTheDaemonDies(
                    client: client, round: round, socketPath: socketPath, log: log, connected: connected)
            }
            thread.start()
        }
        // The random moment is measured from when every client is connected and sending.
        for _ in 0..<clients { connected.wait() }
        usleep(UInt32.random(in: 0...50_000))
        daemon!.signal(SIGKILL)
        guard daemon!.waitForExit(timeout: 10) != nil else {
            return tally.fail("round \(round): SIGKILL did not end the daemon")
        }
        guard group.wait(timeout: .now() + 10) == .success else { return tally.fail("round \(round): clients hung") }
        daemon = nil

        // Restart on the same state directory and look.
        let check = try restart(scratch: scratch, config: config)
        defer {
            check.daemon.signal(SIGKILL)
            _ = check.daemon.waitForExit(timeout: 10)
        }
        guard check.ready else {
            return tally.fail("round \(round): the restarted daemon did not report READY=1: \(check.daemon.stderr)")
        }
        let damage = Self.storeDamage(in: check.daemon.stderr)
        for line in damage.unexpected { tally.fail("round \(round): store damage beyond a torn tail: \(line)") }
        guard let listed = Self.list(socketPath: check.daemon.socketPath) else {
            return tally.fail("round \(round): list failed after restart")
        }
        var listedByLabel: [String: String] = [:]
        for session in listed {
            guard let id = session["id"] as? String, let label = session["label"] as? String else {
                tally.fail("round \(round): listed session without id or label: \(session)")
                continue
            }
            if listedByLabel.updateValue(id, forKey: label) != nil {
                tally.fail("round \(round): label \(label) listed twice")
            }
        }
        let (sent, acked, errors) = log.snapshot()
        for error in errors { tally.fail("round \(round): \(error)") }
        var found = 0
        var unackedStored = 0
        for (label, id) in acked {
            if listedByLabel[label] == id {
                found += 1
            } else {
                tally.fail(
                    "round \(round): acknowledged registration \(label) (id \(id)) is not in the store after restart "
                        + "(listed as \(listedByLabel[label] ?? "absent")); \(listed.count) sessions listed")
            }
        }
        for label in listedByLabel.keys where acked[label] == nil {
            if sent.contains(label) {
                unackedStored += 1
            } else {
                tally.fail("round \(round): the store holds \(label), which no client sent")
            }
        }
        tally.record(
            sent: sent.count, acknowledged: acked.count, found: found, unacknowledgedStored: unackedStored,
            unacknowledgedMissing: sent.count - acked.count - unackedStored, tornTails: damage.tornTails)
    }

    /// Registers one session after another on one connection until the connection dies.
    private static func registerUntilTheDaemonDies(
        client: Int, round: Int, socketPath: String, log: RegistrationLog, connected: DispatchSemaphore
    ) {
        let connection = try? RawClient(path: socketPath)
        connected.signal()
        guard let connection else { return log.error("client \(client) could not connect") }
        var number = 0
        while true {
            let label = "r\(round)-c\(client)-n\(number)"
            number += 1
            let key = "k-\(label)-\(UInt64.random(in: 0...UInt64.max))"
            let line = #"{"op":"register","key":"\#(key)","endpoints":["auth"],"label":"\#(label)"}"# + "\n"
            log.sending(label)
            guard connection.send(line) else { return }
            switch connection.readLine(timeout: 5) {
            case .closed:
                return
            case .timedOut:
                return log.error("client \(client): no reply to \(label) within 5 s while the daemon lived")
            case .line(let text):
                guard
                    let object = (try? JSONSerialization.jsonObject(with: Data(text.utf8))) as? [String: Any],
                    object["ok"] as? Bool == true, let id = object["id"] as? String
                else { return log.error("client \(client): \(label) not acknowledged: \(text)") }
                log.acknowledged(label, id: id)
            }
        }
    }

    // MARK: 2. kill -9 during stop runs

    /// After SIGTERM and a SIGKILL at a random moment of the stop run, every session was either
    /// ended at the server or is still in the store.
    func testKillNineDuringStopRunsNeverLosesASession() throws {
        let rounds = 51
        let latencies = [20, 35, 50]
        let servers = try latencies.map { try EndSessionServer(latencyMilliseconds: $0) }
        defer { for server in servers { server.stop() } }
        let closedPort = try EndSessionServer.closedPort()
        let tally = Tally()
        let started = Date()
        let serverBox = UncheckedBox(servers)
        DispatchQueue.concurrentPerform(iterations: latencies.count) { worker in
            let server = serverBox.value[worker]
            var round = worker
            while round < rounds {
                do {
                    try Self.stopRunRound(round: round, server: server, closedPort: closedPort, tally: tally)
                } catch {
                    tally.fail("round \(round): \(error)")
                }
                round += latencies.count
            }
        }
        let elapsed = Date().timeIntervalSince(started)
        let t = tally.snapshot()
        print(
            "CrashSafety kill-9 during stop runs: rounds \(t.rounds), sessions \(t.sessions) ok- "
                + "(+ \(t.rejectedKept) rejected no- sessions, all kept), "
                + "ended-only \(t.endedOnly), stored-only \(t.storedOnly), both \(t.both), neither \(t.neither); "
                + "runs finished before the kill \(t.finishedBeforeKill), torn tails reported \(t.tornTails), "
                + "in \(String(format: "%.1f", elapsed)) s")
        for failure in t.failures.prefix(20) { XCTFail(failure) }
        XCTAssertEqual(t.failures.count, 0, "\(t.failures.count) failures")
        XCTAssertEqual(t.rounds, rounds)
        XCTAssertEqual(t.neither, 0, "sessions neither ended nor kept")
        XCTAssertGreaterThan(t.endedOnly, 0, "no round got far enough to remove an ended session")
        XCTAssertGreaterThan(t.storedOnly + t.both, 0, "no round was killed early enough to keep a session")
    }

    private static func stopRunRound(round: Int, server: EndSessionServer, closedPort: Int, tally: Tally) throws {
        let scratch = try ScratchDirectory("crash-stop")
        let concurrency = 4
        let config = """
            [Stop]
            BudgetSec=20s
            MaxConcurrentRequests=\(concurrency)
            MaxAttempts=2
            RetryDelaySec=10ms
            [Endpoint]
            Name=auth
            URL=http://127.0.0.1:\(server.port)/user/{session}/endsession
            TimeoutSec=5s

            """
        // On restart nothing may be ended behind the test's back: the endpoint is a closed port.
        let checkConfig = "[Endpoint]\nName=auth\nURL=http://127.0.0.1:\(closedPort)/user/{session}/endsession\n"
        var daemon: DaemonProcess? = try DaemonProcess(config: config, scratch: scratch)
        guard daemon!.waitUntilReady(timeout: 10) != nil else {
            return tally.fail("round \(round): the daemon did not report READY=1: \(daemon!.stderr)")
        }
        let count = Int.random(in: 14...26)
        var keys: [String: String] = [:]  // id -> key
        guard let connection = try? RawClient(path: daemon!.socketPath) else {
            return tally.fail("round \(round): cannot connect")
        }
        // Two sessions the server always rejects ("no-"): the run must keep them, whenever it is killed.
        for number in 0..<count {
            let prefix = number < 2 ? "no" : "ok"
            let key = "\(prefix)-crash-r\(round)-s\(number)-\(UInt64.random(in: 0...UInt64.max))"
            connection.send(#"{"op":"register","key":"\#(key)","endpoints":["auth"],"label":"s\#(number)"}"# + "\n")
            guard let reply = connection.readObject(timeout: 5), reply["ok"] as? Bool == true,
                let id = reply["id"] as? String
            else { return tally.fail("round \(round): registration \(number) not acknowledged") }
            keys[id] = key
        }
        // The run takes about ceil(count / concurrency) latencies; kill anywhere in it, or just after.
        let waves = (count + concurrency - 1) / concurrency
        let runMilliseconds = waves * server.latencyMilliseconds + 40
        daemon!.signal(SIGTERM)
        usleep(UInt32.random(in: 0...UInt32(runMilliseconds * 1000)))
        let finishedBeforeKill = !daemon!.process.isRunning
        daemon!.signal(SIGKILL)
        guard daemon!.waitForExit(timeout: 10) != nil else {
            return tally.fail("round \(round): SIGKILL did not end the daemon")
        }
        daemon = nil

        // What the server says: wait until nothing of this round is in flight there.
        let hashes = try server.hashes(of: Array(keys.values))
        var stats: [String: Any] = [:]
        let deadline = Date().addingTimeInterval(5)
        repeat {
            stats = try server.stats()
            if (stats["in_flight"] as? Int ?? 0) == 0 { break }
            usleep(5_000)
        } while Date() < deadline
        let byHash = stats["by_key_hash"] as? [String: [String: Any]] ?? [:]

        let check = try restart(scratch: scratch, config: checkConfig)
        defer {
            check.daemon.signal(SIGKILL)
            _ = check.daemon.waitForExit(timeout: 10)
        }
        guard check.ready else {
            return tally.fail("round \(round): the restarted daemon did not report READY=1: \(check.daemon.stderr)")
        }
        let damage = Self.storeDamage(in: check.daemon.stderr)
        for line in damage.unexpected { tally.fail("round \(round): store damage beyond a torn tail: \(line)") }
        guard let listed = Self.list(socketPath: check.daemon.socketPath) else {
            return tally.fail("round \(round): list failed after restart")
        }
        let stored = Set(listed.compactMap { $0["id"] as? String })
        for id in stored where keys[id] == nil { tally.fail("round \(round): unknown session \(id) in the store") }
        var endedOnly = 0
        var storedOnly = 0
        var both = 0
        var neither = 0
        var rejectedKept = 0
        for (id, key) in keys where key.hasPrefix("no-") {
            if stored.contains(id) {
                rejectedKept += 1
            } else {
                tally.fail("round \(round): session \(id), which the server rejected, is gone from the store")
            }
        }
        for (id, key) in keys where key.hasPrefix("ok-") {
            let ended = (byHash[hashes[key] ?? ""]?["successes"] as? Int ?? 0) >= 1
            switch (ended, stored.contains(id)) {
            case (true, false): endedOnly += 1
            case (false, true): storedOnly += 1
            case (true, true): both += 1
            case (false, false):
                neither += 1
                tally.fail("round \(round): session \(id) was neither ended at the server nor kept in the store")
            }
        }
        tally.record(
            sessions: count - 2, rejectedKept: rejectedKept, endedOnly: endedOnly, storedOnly: storedOnly, both: both,
            neither: neither,
            finishedBeforeKill: finishedBeforeKill, tornTails: damage.tornTails)
    }

    // MARK: 3. Secrets scan

    /// A representative session of the daemon's life; no output it produces holds a session key.
    func testSessionKeysAppearNowhereButInTheStoreFiles() throws {
        let server = try EndSessionServer(latencyMilliseconds: 0)
        defer { server.stop() }
        let closedPort = try EndSessionServer.closedPort()
        let scratch = try ScratchDirectory("secrets")
        let base = "http://127.0.0.1:\(server.port)"
        let closed = "http://127.0.0.1:\(closedPort)"
        let config = """
            [Stop]
            BudgetSec=5s
            MaxAttempts=2
            RetryDelaySec=10ms
            [Start]
            LeftoverBudgetSec=3s
            [Endpoint]
            Name=good
            URL=\(base)/user/{session}/endsession
            [Endpoint]
            Name=query
            URL=\(base)/x/endsession?session={session}&v=1
            [Endpoint]
            Name=body
            URL=\(base)/api/endsession
            Method=POST
            Header=Content-Type: application/json
            Body={"session": "{session}"}
            [Endpoint]
            Name=closed
            URL=\(closed)/user/{session}/endsession
            TimeoutSec=1s
            [Endpoint]
            Name=closedquery
            URL=\(closed)/end?session={session}
            TimeoutSec=1s

            """
        let marker = "SECRETMARK"
        func key(_ prefix: String, _ extra: String = "") -> String {
            "\(prefix)-\(marker)-\(String(format: "%016llx", UInt64.random(in: 0...UInt64.max)))\(extra)"
        }
        var outputs: [(source: String, text: String)] = []
        var keys: [String] = []

        var daemon: DaemonProcess? = try DaemonProcess(config: config, scratch: scratch)
        let firstReady = daemon!.waitUntilReady(timeout: 10)
        XCTAssertNotNil(firstReady, daemon!.stderr)
        outputs.append(("notify messages up to READY", (firstReady ?? []).joined(separator: "\n")))
        let socketPath = daemon!.socketPath
        func cli(_ arguments: [String], stdin: String? = "") throws -> (status: Int32, out: String, err: String) {
            let result = try BuiltBinary.run(arguments + ["--socket", socketPath], stdin: stdin)
            outputs.append(("cli \(arguments.joined(separator: " ")) stdout", result.out))
            outputs.append(("cli \(arguments.joined(separator: " ")) stderr", result.err))
            return result
        }
        func raw(_ line: String) throws -> String {
            let client = try RawClient(path: socketPath)
            client.send(line + "\n")
            guard case .line(let reply) = client.readLine(timeout: 10) else {
                XCTFail("no reply to a raw request")
                return ""
            }
            outputs.append(("raw reply", reply))
            return reply
        }
        func register(_ key: String, _ endpoints: [String], label: String) throws -> String? {
            keys.append(key)
            let request: [String: Any] = ["op": "register", "key": key, "endpoints": endpoints, "label": label]
            let line = String(decoding: try JSONSerialization.data(withJSONObject: request), as: UTF8.self)
            let reply = try raw(line)
            let object = (try? JSONSerialization.jsonObject(with: Data(reply.utf8))) as? [String: Any]
            XCTAssertEqual(object?["ok"] as? Bool, true, reply)
            return object?["id"] as? String
        }

        // Registrations that succeed, over the socket and with the command line.
        _ = try register(key("ok"), ["good"], label: "plain")
        _ = try register(key("ok", " /?&%+#=\"\\é"), ["good", "query", "body"], label: "odd-characters")
        _ = try register(key("no"), ["good"], label: "rejected")
        _ = try register(key("gone"), ["good"], label: "gone")
        _ = try register(key("badjson"), ["good", "body"], label: "bad-json")
        _ = try register(key("flaky"), ["query"], label: "flaky")
        _ = try register(key("reset"), ["good"], label: "reset")
        let closedID = try register(key("ok"), ["closed"], label: "closed-port")
        _ = try register(key("ok"), ["closedquery", "good"], label: "closed-query")
        let forgotten = try register(key("ok"), ["good"], label: "to-unregister")
        let cliKey = key("ok")
        keys.append(cliKey)
        let registered = try cli(
            ["register", "--endpoint", "good", "--endpoint", "closed", "--label", "cli"], stdin: cliKey + "\n")
        XCTAssertEqual(registered.status, 0, registered.err)

        // Requests the daemon refuses, each carrying a key.
        let refused = key("ok")
        keys.append(refused)
        for line in [
            #"{"op":"register","key":"\#(refused)","endpoints":["nowhere"]}"#,
            #"{"op":"register","key":"\#(refused)","endpoints":[]}"#,
            #"{"op":"register","key":"\#(refused)","endpoints":["good"],"bogus":1}"#,
            #"{"op":"register","key":"\#(refused)\u0001","endpoints":["good"]}"#,
            #"{"op":"register","key":"\#(refused)","endpoints":"good"}"#,
            #"{"op":"register","key":["\#(refused)"],"endpoints":["good"]}"#,
            #"{"op":"register","key":"\#(refused)","endpoints":["good","good"]}"#,
            #"{"op":"register","key":"\#(refused)","endpoints":["good"],"label":"\#(String(repeating: "l", count: 300))"}"#,
            #"{"op":"register","key":"\#(refused)\#(String(repeating: "k", count: 5000))","endpoints":["good"]}"#,
            #"{"op":"register","key":"\#(refused)","endpoints":["good"]"#,
            #"{"op":"regster","key":"\#(refused)","endpoints":["good"]}"#,
            #"["register","\#(refused)"]"#,
            "\(refused)",
        ] {
            let reply = try raw(line)
            XCTAssertTrue(reply.contains(#""ok":false"#), "refused request was accepted: \(reply)")
        }
        XCTAssertNotEqual(try cli(["register", "--endpoint", "nowhere"], stdin: refused + "\n").status, 0)
        XCTAssertNotEqual(
            try cli(["register", "--endpoint", "good"], stdin: refused + String(repeating: "k", count: 5000) + "\n")
                .status, 0)
        XCTAssertNotEqual(try cli(["register", "--endpoint", "good"], stdin: refused + "\nsecond line\n").status, 0)
        XCTAssertNotEqual(try cli(["register", "--endpoint", "good", refused], stdin: "").status, 0)

        // Looking, forgetting, ending on demand.
        for arguments in [["list"], ["list", "--json"], ["status"], ["status", "--json"]] {
            XCTAssertEqual(try cli(arguments).status, 0)
        }
        XCTAssertEqual(try cli(["unregister", try XCTUnwrap(forgotten)]).status, 0)
        let ended = try cli(["end", try XCTUnwrap(closedID), "--json"])
        XCTAssertTrue(ended.out.contains("failed") || ended.out.contains("error"), "no failure reported: \(ended.out)")
        _ = try cli(["end", try XCTUnwrap(closedID)])

        // A reload with a broken configuration keeps the old one.
        let configPath = scratch.path + "/session-cleanup.conf"
        try (config + "[Stop]\nBudgetSec=forever\n").write(toFile: configPath, atomically: true, encoding: .utf8)
        daemon!.signal(SIGHUP)
        let reloaded = daemon!.waitUntilReady(timeout: 10)
        XCTAssertNotNil(reloaded)
        outputs.append(("notify messages of the reload", (reloaded ?? []).joined(separator: "\n")))
        try config.write(toFile: configPath, atomically: true, encoding: .utf8)
        XCTAssertEqual(try cli(["status"]).status, 0)

        // Runtime directory while the daemon runs.
        outputs += Self.regularFiles(under: daemon!.runtimeDirectory).map { ("runtime file \($0.path)", $0.text) }

        // The stop run: some sessions end, the closed port keeps others.
        daemon!.signal(SIGTERM)
        let firstExit = daemon!.waitForExit(timeout: 20)
        XCTAssertEqual(firstExit, 75, "sessions behind the closed port are kept")
        outputs.append(("daemon stderr, first run", daemon!.stderr))
        outputs.append(("notify messages, first run", daemon!.notify.drain(for: 0.1).joined(separator: "\n")))
        outputs += Self.regularFiles(under: daemon!.runtimeDirectory).map { ("runtime file \($0.path)", $0.text) }
        daemon = nil

        // Next start: the leftover run tries again and fails again; then stop once more.
        let next = try Self.restart(scratch: scratch, config: config)
        XCTAssertTrue(next.ready, next.daemon.stderr)
        let listed = try cli(["list", "--json"])
        XCTAssertEqual(listed.status, 0)
        let deadline = Date().addingTimeInterval(10)
        while Date() < deadline {
            let status = try BuiltBinary.run(["status", "--json", "--socket", socketPath])
            if status.out.contains(#""background_runs":0"#) { break }
            usleep(50_000)
        }
        _ = try cli(["status", "--json"])
        outputs += Self.regularFiles(under: next.daemon.runtimeDirectory).map { ("runtime file \($0.path)", $0.text) }
        next.daemon.signal(SIGTERM)
        XCTAssertEqual(next.daemon.waitForExit(timeout: 20), 75)
        outputs.append(("daemon stderr, second run", next.daemon.stderr))
        outputs.append(("notify messages, second run", next.daemon.notify.drain(for: 0.1).joined(separator: "\n")))
        // Everything else in the scratch directory that is not the store (config, sockets, leftovers).
        outputs += Self.regularFiles(under: scratch.path)
            .filter { !$0.path.hasPrefix(next.daemon.stateDirectory + "/") }
            .map { ("scratch file \($0.path)", $0.text) }

        // Positive controls: the scan sees what the daemon did, and the server saw the keys.
        let allText = outputs.map(\.text).joined(separator: "\n")
        XCTAssertTrue(
            allText.contains("SESSION_CLEANUP_EVENT=stop-begun"), "the daemon's journal lines were not captured")
        XCTAssertTrue(allText.contains("reload-failed"), "the failed reload was not captured")
        let stats = try server.stats()
        XCTAssertGreaterThan(stats["calls"] as? Int ?? 0, 5, "the server was hardly called: \(stats)")

        // The scan: the marker, and each key's random part, appear nowhere.
        var needles = [marker]
        for key in keys {
            let parts = key.split(separator: "-")
            if parts.count >= 3 { needles.append(String(parts[2].prefix(12))) }
        }
        var leaks: [String] = []
        for (source, text) in outputs {
            for needle in needles where text.contains(needle) {
                let line = text.split(separator: "\n").first { $0.contains(needle) }.map(String.init) ?? ""
                leaks.append("\(source): \"\(needle)\" in: \(line.prefix(400))")
            }
        }
        // CRASH_SAFETY_DUMP=FILE writes everything scanned there, to see what the scan covered.
        if let dump = ProcessInfo.processInfo.environment["CRASH_SAFETY_DUMP"] {
            try outputs.map { "=== \($0.source)\n\($0.text)" }.joined(separator: "\n").write(
                toFile: dump, atomically: true, encoding: .utf8)
        }
        print(
            "CrashSafety secrets scan: \(outputs.count) outputs, \(allText.utf8.count) bytes, \(keys.count) keys, leaks \(leaks.count)"
        )
        for leak in leaks.prefix(30) { XCTFail("session key leaked: \(leak)") }

        // The store: 0600 files in a directory that others cannot read; the keys live there.
        let state = next.daemon.stateDirectory
        var info = stat()
        XCTAssertEqual(stat(state, &info), 0)
        XCTAssertEqual(info.st_mode & 0o007, 0, "state directory mode \(String(info.st_mode & 0o7777, radix: 8))")
        var storeHoldsKeys = false
        for name in try FileManager.default.contentsOfDirectory(atPath: state) {
            XCTAssertEqual(lstat(state + "/" + name, &info), 0)
            XCTAssertEqual(info.st_mode & 0o7777, 0o600, "\(name) has mode \(String(info.st_mode & 0o7777, radix: 8))")
            if let data = FileManager.default.contents(atPath: state + "/" + name),
                data.range(of: Data(marker.utf8)) != nil
            {
                storeHoldsKeys = true
            }
        }
        XCTAssertTrue(storeHoldsKeys, "the kept sessions' keys should be in the store files (positive control)")
    }

    // MARK: Support

    /// Starts the daemon again on `scratch`'s state directory.
    private static func restart(scratch: ScratchDirectory, config: String) throws -> (
        daemon: DaemonProcess, ready: Bool
    ) {
        unlink(scratch.path + "/notify.sock")
        let previous = scratch.path + "/daemon.stderr"
        if FileManager.default.fileExists(atPath: previous) {
            var n = 1
            while FileManager.default.fileExists(atPath: previous + ".\(n)") { n += 1 }
            rename(previous, previous + ".\(n)")
        }
        let daemon = try DaemonProcess(config: config, scratch: scratch)
        return (daemon, daemon.waitUntilReady(timeout: 10) != nil)
    }

    /// `list` over the socket as root: every session.
    private static func list(socketPath: String) -> [[String: Any]]? {
        guard let client = try? RawClient(path: socketPath), client.send(#"{"op":"list"}"# + "\n"),
            let reply = client.readObject(timeout: 10), reply["ok"] as? Bool == true
        else { return nil }
        return reply["sessions"] as? [[String: Any]]
    }

    /// `store-damaged` journal lines: torn tails (allowed) and anything else (not).
    static func storeDamage(in stderr: String) -> (tornTails: Int, unexpected: [String]) {
        let lines = stderr.split(separator: "\n").filter { $0.contains("SESSION_CLEANUP_EVENT=store-damaged") }
        let torn = lines.filter { $0.contains("truncatedLogTail") }
        let keptAside = lines.filter { $0.contains("Damaged store files kept for inspection") }
        var unexpected = lines.filter {
            !$0.contains("truncatedLogTail") && !$0.contains("Damaged store files kept for inspection")
        }
        if torn.isEmpty { unexpected += keptAside }
        return (torn.count, unexpected.map(String.init))
    }

    /// Every regular file under `directory`, read as text.
    static func regularFiles(under directory: String) -> [(path: String, text: String)] {
        guard let enumerator = FileManager.default.enumerator(atPath: directory) else { return [] }
        var files: [(String, String)] = []
        for case let relative as String in enumerator {
            let path = directory + "/" + relative
            var info = stat()
            guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                let data = FileManager.default.contents(atPath: path)
            else { continue }
            files.append((path, String(decoding: data, as: UTF8.self)))
        }
        return files
    }
}

/// What the client threads of one registration round sent and got back.
private final class RegistrationLog: @unchecked Sendable {
    private let lock = NSLock()
    private var sent: Set<String> = []
    private var acked: [String: String] = [:]
    private var errors: [String] = []

    func sending(_ label: String) { lock.withLock { _ = sent.insert(label) } }
    func acknowledged(_ label: String, id: String) { lock.withLock { acked[label] = id } }
    func error(_ text: String) { lock.withLock { errors.append(text) } }
    func snapshot() -> (sent: Set<String>, acked: [String: String], errors: [String]) {
        lock.withLock { (sent, acked, errors) }
    }
}

/// Counts across rounds run on several threads.
private final class Tally: @unchecked Sendable {
    struct Totals {
        var rounds = 0
        var failures: [String] = []
        var tornTails = 0
        // Registrations.
        var sent = 0
        var acknowledged = 0
        var acknowledgedFound = 0
        var unacknowledgedStored = 0
        var unacknowledgedMissing = 0
        // Stop runs.
        var sessions = 0
        var endedOnly = 0
        var storedOnly = 0
        var both = 0
        var neither = 0
        var finishedBeforeKill = 0
        var rejectedKept = 0
    }

    private let lock = NSLock()
    private var totals = Totals()

    func fail(_ text: String) { lock.withLock { totals.failures.append(text) } }
    func snapshot() -> Totals { lock.withLock { totals } }

    func record(
        sent: Int, acknowledged: Int, found: Int, unacknowledgedStored: Int, unacknowledgedMissing: Int, tornTails: Int
    ) {
        lock.withLock {
            totals.rounds += 1
            totals.sent += sent
            totals.acknowledged += acknowledged
            totals.acknowledgedFound += found
            totals.unacknowledgedStored += unacknowledgedStored
            totals.unacknowledgedMissing += unacknowledgedMissing
            totals.tornTails += tornTails
        }
    }

    func record(
        sessions: Int, rejectedKept: Int, endedOnly: Int, storedOnly: Int, both: Int, neither: Int,
        finishedBeforeKill: Bool,
        tornTails: Int
    ) {
        lock.withLock {
            totals.rounds += 1
            totals.sessions += sessions
            totals.rejectedKept += rejectedKept
            totals.endedOnly += endedOnly
            totals.storedOnly += storedOnly
            totals.both += both
            totals.neither += neither
            totals.finishedBeforeKill += finishedBeforeKill ? 1 : 0
            totals.tornTails += tornTails
        }
    }
}
