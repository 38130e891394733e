import Foundation
import Glibc

/// A scratch directory under /tmp, removed when the test ends.
final class ScratchDirectory {
    let path: String

    init(_ name: String) throws {
        var template = Array("/tmp/sc-\(name)-XXXXXX".utf8CString)
        guard let made = mkdtemp(&template) else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        path = String(cString: made)
    }

    deinit { try? FileManager.default.removeItem(atPath: path) }

    func write(_ name: String, _ text: String) throws -> String {
        let file = path + "/" + name
        try FileManager.default.createDirectory(
            atPath: (file as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        try text.write(toFile: file, atomically: true, encoding: .utf8)
        return file
    }
}

/// The freshly built `session-cleanup` binary, next to the test bundle.
enum BuiltBinary {
    static var path: String {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        var candidate = bundle
        // `swift test` runs `<build>/debug/<package>PackageTests.xctest`; the binary sits beside it.
        while candidate.path != "/" {
            let binary = candidate.appendingPathComponent("session-cleanup").path
            if FileManager.default.isExecutableFile(atPath: binary) { return binary }
            candidate.deleteLastPathComponent()
        }
        return bundle.appendingPathComponent("session-cleanup").path
    }

    /// Runs a CLI verb to completion: (exit status, stdout, stderr). With `asUID`, runs it as that
    /// user (and group) through `setpriv`: how tests act as someone other than root.
    @discardableResult
    static func run(
        _ arguments: [String], stdin: String? = nil, environment: [String: String] = [:], asUID uid: UInt32? = nil
    ) throws -> (status: Int32, out: String, err: String) {
        let process = Process()
        if let uid {
            process.executableURL = URL(fileURLWithPath: "/usr/bin/setpriv")
            process.arguments = ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", path] + arguments
        } else {
            process.executableURL = URL(fileURLWithPath: path)
            process.arguments = arguments
        }
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe()
        let err = Pipe()
        let input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        if let stdin { input.fileHandleForWriting.write(Data(stdin.utf8)) }
        try input.fileHandleForWriting.close()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (
            process.terminationStatus, String(decoding: outData, as: UTF8.self),
            String(decoding: errData, as: UTF8.self)
        )
    }
}

/// The real daemon, started by a test with its own state, runtime and notify socket.
final class DaemonProcess {
    let scratch: ScratchDirectory
    let notify: NotifySocket
    let process = Process()
    /// The daemon's stderr goes to a file: complete once it has exited, no reader thread needed.
    let stderrPath: String

    var stateDirectory: String { scratch.path + "/state" }
    var runtimeDirectory: String { scratch.path + "/run" }
    var socketPath: String { runtimeDirectory + "/control.sock" }
    var pid: Int32 { process.processIdentifier }

    init(config: String? = nil, environment: [String: String] = [:], scratch: ScratchDirectory? = nil) throws {
        self.scratch = try scratch ?? ScratchDirectory("daemon")
        notify = try NotifySocket(directory: self.scratch.path)
        stderrPath = self.scratch.path + "/daemon.stderr"
        _ = FileManager.default.createFile(atPath: stderrPath, contents: nil)
        var arguments = ["daemon"]
        if let config { arguments += ["--config", try self.scratch.write("session-cleanup.conf", config)] }
        process.executableURL = URL(fileURLWithPath: BuiltBinary.path)
        process.arguments = arguments
        var env = ProcessInfo.processInfo.environment
        env["NOTIFY_SOCKET"] = notify.path
        env["STATE_DIRECTORY"] = stateDirectory
        env["RUNTIME_DIRECTORY"] = runtimeDirectory
        env.removeValue(forKey: "JOURNAL_STREAM")
        env.removeValue(forKey: "WATCHDOG_USEC")
        env.removeValue(forKey: "WATCHDOG_PID")
        for (key, value) in environment { env[key] = value }
        process.environment = env
        process.standardError = try FileHandle(forWritingTo: URL(fileURLWithPath: stderrPath))
        process.standardOutput = FileHandle.nullDevice
        try process.run()
    }

    deinit {
        if process.isRunning {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
        }
    }

    /// What the daemon wrote to stderr so far (its journal lines when not under journald).
    var stderr: String { (try? String(contentsOfFile: stderrPath, encoding: .utf8)) ?? "" }

    func signal(_ number: Int32) { kill(process.processIdentifier, number) }

    /// Waits for READY=1 and returns the messages up to it.
    func waitUntilReady(timeout: TimeInterval = 10) -> [String]? {
        notify.receive(until: { $0.split(separator: "\n").contains("READY=1") }, timeout: timeout)
    }

    /// Waits for exit; returns the status, or nil if still running after `timeout`.
    func waitForExit(timeout: TimeInterval) -> Int32? {
        let deadline = Date().addingTimeInterval(timeout)
        while process.isRunning && Date() < deadline { usleep(2_000) }
        guard !process.isRunning else { return nil }
        return process.terminationStatus
    }
}

/// A test could not set up what it needs: a failure, never a skip.
struct TestSetupError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
