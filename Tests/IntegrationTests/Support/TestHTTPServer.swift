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

/// Certificates made with the `openssl` command for one test: a private CA, a server certificate
/// it signed for 127.0.0.1, and an unrelated self-signed server certificate.
struct TestCertificates {
    let directory: String
    var caFile: String { directory + "/ca.pem" }
    var serverCertificate: String { directory + "/server.pem" }
    var serverKey: String { directory + "/server.key" }
    var selfSignedCertificate: String { directory + "/self.pem" }
    var selfSignedKey: String { directory + "/self.key" }

    init() throws {
        directory = NSTemporaryDirectory() + "session-cleanup-tls-\(getpid())-\(UInt32.random(in: 0...UInt32.max))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        let ec = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
        try Self.openssl(
            ["req", "-x509"] + ec + [
                "-keyout", "ca.key", "-out", "ca.pem", "-days", "2", "-subj", "/CN=session-cleanup test CA",
            ], in: directory)
        try Self.openssl(
            ["req"] + ec + ["-keyout", "server.key", "-out", "server.csr", "-subj", "/CN=127.0.0.1"], in: directory)
        try "subjectAltName=IP:127.0.0.1,IP:::1,DNS:localhost\nbasicConstraints=CA:FALSE\n"
            .write(toFile: directory + "/server.ext", atomically: true, encoding: .utf8)
        try Self.openssl(
            [
                "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca.key", "-CAcreateserial",
                "-out", "server.pem", "-days", "2", "-extfile", "server.ext",
            ], in: directory)
        try Self.openssl(
            ["req", "-x509"] + ec + [
                "-keyout", "self.key", "-out", "self.pem", "-days", "2", "-subj", "/CN=127.0.0.1",
                "-addext", "subjectAltName=IP:127.0.0.1",
            ], in: directory)
    }

    private static func openssl(_ arguments: [String], in directory: String) throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["openssl"] + arguments
        process.currentDirectoryURL = URL(fileURLWithPath: directory)
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw TestSetupError("openssl \(arguments.first ?? "") failed with status \(process.terminationStatus)")
        }
    }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}
