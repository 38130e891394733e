import Foundation
import XCTest

@testable import Vocabulary

/// The command line's own surface, with no daemon: each verb's help, the version in its three
/// spellings, usage errors, which daemon `--user` means, and bash completion of verbs and options.
final class CommandLineHelpTests: XCTestCase {
    static var repositoryRoot: String {
        var url = URL(fileURLWithPath: #filePath)
        while url.path != "/" && !FileManager.default.fileExists(atPath: url.path + "/Package.swift") {
            url.deleteLastPathComponent()
        }
        return url.path
    }

    /// Runs `script` with bash; its standard output.
    static func bash(_ script: String, environment: [String: String] = [:]) throws -> String {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/bash")
        process.arguments = ["-c", script]
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        let out = String(decoding: output.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        XCTAssertEqual(process.terminationStatus, 0, "bash -c \(script)")
        return out
    }

    /// The verbs the global help lists.
    private func verbs() throws -> [String] {
        let help = try BuiltBinary.run(["--help"])
        XCTAssertEqual(help.status, 0)
        guard let start = help.out.range(of: "Verbs:\n"),
            let end = help.out.range(of: "\n\n", range: start.upperBound..<help.out.endIndex)
        else { throw TestSetupError("no verb list in --help: \(help.out)") }
        return help.out[start.upperBound..<end.lowerBound].split(separator: "\n").compactMap {
            $0.split(separator: " ").first.map(String.init)
        }
    }

    func testEveryVerbHasItsOwnHelpWithItsOptionsAndAnExample() throws {
        let verbs = try verbs()
        XCTAssertEqual(
            verbs,
            [
                "daemon", "check-config", "register", "unregister", "list", "status", "end", "report", "reload",
                "version", "help",
            ])
        var texts: Set<String> = []
        for verb in verbs {
            let help = try BuiltBinary.run([verb, "--help"])
            XCTAssertEqual(help.status, 0, verb)
            XCTAssertTrue(help.out.hasPrefix("Usage: session-cleanup \(verb)"), help.out)
            XCTAssertTrue(help.out.contains("\nOptions:\n"), help.out)
            XCTAssertTrue(help.out.contains("  -h, --help"), help.out)
            XCTAssertTrue(help.out.contains("\nExample"), "\(verb) --help has an example")
            XCTAssertTrue(help.out.contains("\n  session-cleanup ") || help.out.contains("\n  systemctl "), help.out)
            XCTAssertEqual(try BuiltBinary.run([verb, "-h"]).out, help.out)
            XCTAssertEqual(try BuiltBinary.run(["help", verb]).out, help.out)
            texts.insert(help.out)
        }
        XCTAssertEqual(texts.count, verbs.count, "each verb's help is its own")
        let list = try BuiltBinary.run(["list", "--help"]).out
        for option in ["--outcome OUTCOME", "--endpoint NAME", "--json", "--socket PATH", "--user"] {
            XCTAssertTrue(list.contains(option), "list --help names \(option)")
        }
        XCTAssertTrue(try BuiltBinary.run(["register", "--help"]).out.contains("--endpoint NAME"))
        XCTAssertTrue(try BuiltBinary.run(["daemon", "--help"]).out.contains("--config PATH"))
        // A value that looks like --help is a value, not a request for help.
        let labelled = try BuiltBinary.run(["register", "--label", "--help"], stdin: "")
        XCTAssertEqual(labelled.status, 2, labelled.out)
    }

    func testTheVersionHasThreeSpellings() throws {
        for arguments in [["--version"], ["-V"], ["version"], ["list", "--version"], ["--user", "-V"]] {
            let result = try BuiltBinary.run(arguments)
            XCTAssertEqual(result.status, 0, "\(arguments)")
            XCTAssertEqual(result.out, "session-cleanup \(SessionCleanupVersion.string)\n", "\(arguments)")
        }
    }

    func testMistakesSayWhatAndPointAtTheVerbsHelp() throws {
        let unknown = try BuiltBinary.run(["list", "--bogus"])
        XCTAssertEqual(unknown.status, 2)
        XCTAssertEqual(
            unknown.err, "session-cleanup list: unknown option '--bogus'\nTry 'session-cleanup list --help'.\n")
        let verb = try BuiltBinary.run(["lsit"])
        XCTAssertEqual(verb.status, 2)
        XCTAssertEqual(verb.err, "session-cleanup: unknown verb 'lsit'\nTry 'session-cleanup --help'.\n")
        let flagValue = try BuiltBinary.run(["list", "--json=yes"])
        XCTAssertEqual(flagValue.status, 2)
        XCTAssertTrue(flagValue.err.contains("--json takes no value"), flagValue.err)
        let none = try BuiltBinary.run([])
        XCTAssertEqual(none.status, 2)
        XCTAssertTrue(none.err.hasPrefix("Usage: session-cleanup"), none.err)
    }

    func testUserTalksToTheUserDaemonAndErrorsNameWhichDaemon() throws {
        let runtime = try ScratchDirectory("user-runtime")
        let environment = ["XDG_RUNTIME_DIR": runtime.path, "SESSION_CLEANUP_SOCKET": ""]
        for arguments in [["--user", "status"], ["status", "--user"]] {
            let user = try BuiltBinary.run(arguments, environment: environment)
            XCTAssertEqual(user.status, 1)
            XCTAssertTrue(
                user.err.hasPrefix(
                    "session-cleanup status: cannot reach your user daemon: cannot connect to "
                        + "\(runtime.path)/session-cleanup/control.sock"), user.err)
            XCTAssertTrue(user.err.contains("systemctl --user enable --now session-cleanup"), user.err)
        }
        let system = try BuiltBinary.run(["status"], environment: environment)
        XCTAssertTrue(
            system.err.hasPrefix(
                "session-cleanup status: cannot reach the system daemon: cannot connect to "
                    + "/run/session-cleanup/control.sock")
                || system.status == 0, system.err)
    }

    func testUserDaemonReadsItsOwnConfiguration() throws {
        let home = try ScratchDirectory("user-home")
        _ = try home.write(
            "config/session-cleanup/session-cleanup.conf",
            "[Endpoint]\nName=mine\nURL=http://127.0.0.1:1/{session}\n")
        let result = try BuiltBinary.run(
            ["--user", "check-config"], environment: ["XDG_CONFIG_HOME": home.path + "/config", "HOME": home.path])
        XCTAssertEqual(result.status, 0, result.err)
        XCTAssertTrue(result.out.contains(home.path + "/config/session-cleanup/session-cleanup.conf"), result.out)
        XCTAssertTrue(result.out.contains("[Endpoint] mine"), result.out)
        let defaults = try BuiltBinary.run(
            ["--user", "check-config"], environment: ["XDG_CONFIG_HOME": "", "HOME": home.path])
        XCTAssertEqual(defaults.status, 0, defaults.err)
        XCTAssertTrue(defaults.out.contains("no files (defaults)"), defaults.out)
        XCTAssertTrue(defaults.out.contains("No [Endpoint] yet"), defaults.out)
    }

    func testBashCompletionOffersVerbsOptionsAndOutcomes() throws {
        func complete(_ words: [String]) throws -> [String] {
            let script = Self.repositoryRoot + "/completion/session-cleanup.bash"
            let line = [BuiltBinary.path] + words
            let quoted = line.map { "'\($0)'" }.joined(separator: " ")
            return try Self.bash(
                "source '\(script)'; COMP_WORDS=(\(quoted)); COMP_CWORD=\(line.count - 1); _session_cleanup; "
                    + "printf '%s\\n' \"${COMPREPLY[@]}\"",
                environment: ["SESSION_CLEANUP_SOCKET": "/nonexistent/control.sock"]
            ).split(separator: "\n").map(String.init)
        }
        XCTAssertEqual(try complete(["st"]), ["status"])
        XCTAssertEqual(try complete(["--user", "l"]), ["list"])
        XCTAssertEqual(try complete(["list", "--o"]), ["--outcome"])
        XCTAssertEqual(try complete(["list", "--outcome", "f"]), ["failed"])
        XCTAssertEqual(try complete(["end", "--a"]), ["--all"])
        XCTAssertEqual(try complete(["help", "che"]), ["check-config"])
        XCTAssertEqual(try complete(["--"]), ["--user", "--help", "--version"])
        let files = try complete(["check-config", "--config", Self.repositoryRoot + "/systemd/session-cleanup.co"])
        XCTAssertEqual(files, [Self.repositoryRoot + "/systemd/session-cleanup.conf"])
        XCTAssertEqual(try complete(["end", ""]), [], "no daemon: no ids, and no error")
    }
}
