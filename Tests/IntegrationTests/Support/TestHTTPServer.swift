import Foundation
import XCTest

/// `Tests/Support/http_test_server.py` running in a child process, for one test.
final class TestHTTPServer {
    let process = Process()
    let host: String
    let port: Int

    /// The script's path, found from this file's.
    static let script = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Support/http_test_server.py").path

    /// Starts the server on `host` (port chosen by the kernel), optionally with TLS.
    init(host: String = "127.0.0.1", certificate: String? = nil, key: String? = nil) throws {
        self.host = host
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = ["python3", Self.script, "--host", host]
        if let certificate, let key { arguments += ["--cert", certificate, "--key", key] }
        process.arguments = arguments
        let output = Pipe()
        process.standardOutput = output
        try process.run()
        var data = Data()
        while !data.contains(UInt8(ascii: "\n")) {
            let chunk = output.fileHandleForReading.availableData
            if chunk.isEmpty { break }
            data.append(chunk)
        }
        let line = String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
        guard line.hasPrefix("PORT "), let port = Int(line.dropFirst(5)) else {
            process.terminate()
            throw TestSetupError("test HTTP server did not start on \(host): \(line.isEmpty ? "no output" : line)")
        }
        self.port = port
    }

    /// `http://127.0.0.1:PORT` (or `https://`, or `[::1]` for IPv6).
    func base(scheme: String = "http") -> String {
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "\(scheme)://\(shownHost):\(port)"
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }
}
