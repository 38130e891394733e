import Foundation
import Glibc

/// `Tests/Support/endsession_server.py` on 127.0.0.1 or ::1, started and stopped by a test.
/// The behaviour of each call is chosen by the session key's prefix (ok-, no-, flaky-, hang-, …).
/// `@unchecked Sendable`: nothing changes after init; every query starts its own process.
final class EndSessionServer: @unchecked Sendable {
    let port: Int
    let host: String
    let latencyMilliseconds: Int
    let tls: Bool
    private let process = Process()
    private let directory: ScratchDirectory

    static var supportDirectory: String {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().appendingPathComponent("Support").path
    }

    init(
        host: String = "127.0.0.1", latencyMilliseconds: Int = 0, certificate: (pem: String, key: String)? = nil,
        tokenFile: String? = nil, client: (file: String, authentication: String)? = nil
    ) throws {
        self.host = host
        self.latencyMilliseconds = latencyMilliseconds
        tls = certificate != nil
        directory = try ScratchDirectory("server")
        let ready = directory.path + "/port"
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        var arguments = [
            "python3", Self.supportDirectory + "/endsession_server.py", "--host", host, "--port", "0",
            "--ready-file", ready, "--latency-ms", String(latencyMilliseconds),
        ]
        if let certificate { arguments += ["--tls-cert", certificate.pem, "--tls-key", certificate.key] }
        if let tokenFile { arguments += ["--token-file", tokenFile] }
        if let client { arguments += ["--client-file", client.file, "--client-auth", client.authentication] }
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while !FileManager.default.fileExists(atPath: ready) && Date() < deadline { usleep(10_000) }
        guard let text = try? String(contentsOfFile: ready, encoding: .utf8),
            let port = Int(text.trimmingCharacters(in: .whitespacesAndNewlines))
        else { throw POSIXError(.ETIMEDOUT) }
        self.port = port
    }

    deinit { stop() }

    func stop() {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// `http://127.0.0.1:PORT/user/{session}/endsession` (https, [::1] as configured).
    var endSessionURL: String {
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        return "\(tls ? "https" : "http")://\(authority)/user/{session}/endsession"
    }

    /// The server's own counters (`GET /_stats`), fetched over plain sockets by curl.
    func stats() throws -> [String: Any] {
        let authority = host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
        var arguments = ["-s", "--max-time", "5", "\(tls ? "https" : "http")://\(authority)/_stats"]
        if tls { arguments.insert("-k", at: 0) }
        let curl = Process()
        curl.executableURL = URL(fileURLWithPath: "/usr/bin/curl")
        curl.arguments = arguments
        let out = Pipe()
        curl.standardOutput = out
        try curl.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        curl.waitUntilExit()
        return (try JSONSerialization.jsonObject(with: data) as? [String: Any]) ?? [:]
    }

    /// How many calls carried `key`, and how many of them got a success reply.
    func calls(for key: String) throws -> (calls: Int, successes: Int) {
        let entry = (try stats()["by_key_hash"] as? [String: Any])?[Self.hash(key)] as? [String: Any]
        return ((entry?["calls"] as? Int) ?? 0, (entry?["successes"] as? Int) ?? 0)
    }

    /// The hash the server shows instead of a key: sha256 hex, first 12 digits.
    static func hash(_ key: String) -> String {
        (try? hashes(of: [key]))?[key] ?? ""
    }

    /// The hashes of many keys, from one run of the server's `--hash`.
    static func hashes(of keys: [String]) throws -> [String: String] {
        guard !keys.isEmpty else { return [:] }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", supportDirectory + "/endsession_server.py", "--hash"] + keys
        let out = Pipe()
        process.standardOutput = out
        try process.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n").map(String.init)
        guard lines.count == keys.count else { throw TestSetupError("--hash printed \(lines.count) lines") }
        return Dictionary(uniqueKeysWithValues: zip(keys, lines))
    }

    func hashes(of keys: [String]) throws -> [String: String] { try Self.hashes(of: keys) }

    /// A TCP port on 127.0.0.1 that nothing listens on (bound, read, closed): connections to it
    /// are refused.
    static func closedPort() throws -> Int {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestSetupError("cannot make a probe socket: errno \(errno)") }
        defer { close(fd) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(fd, pointer, length) == 0 && getsockname(fd, pointer, &length) == 0
            }
        }
        guard bound else { throw TestSetupError("cannot bind a probe socket: errno \(errno)") }
        return Int(UInt16(bigEndian: address.sin_port))
    }
}

/// Reads the daemon's journal lines (stderr, `<N>message [FIELD=value …]`) back into fields.
enum JournalLines {
    /// Every call's outcome: `SESSION_ID/ENDPOINT` → its fields. A `call-finished` line is one
    /// call; a `calls-ended` line stands for each of its sessions (one `SESSION_ID=` each).
    static func callOutcomes(_ stderr: String) -> [String: [String: String]] {
        var result: [String: [String: String]] = [:]
        for line in stderr.split(separator: "\n") {
            if line.contains("SESSION_CLEANUP_EVENT=call-finished") {
                let fields = parse(String(line))
                if let id = fields["SESSION_ID"] { result[id + "/" + (fields["ENDPOINT"] ?? "")] = fields }
            } else if line.contains("SESSION_CLEANUP_EVENT=calls-ended") {
                var fields = parse(String(line))
                for id in values(of: "SESSION_ID", in: String(line)) {
                    fields["SESSION_ID"] = id
                    result[id + "/" + (fields["ENDPOINT"] ?? "")] = fields
                }
            }
        }
        return result
    }

    /// Every value of a field that may repeat (` NAME=value` up to the next space).
    static func values(of name: String, in line: String) -> [String] {
        line.components(separatedBy: " \(name)=").dropFirst().map {
            String($0.prefix { $0 != " " && $0 != "]" })
        }
    }

    /// The fields of one line. Values run until the next ` NAME=` (names are upper case).
    static func parse(_ line: String) -> [String: String] {
        guard let open = line.range(of: " [SESSION_CLEANUP_EVENT="), line.hasSuffix("]") else { return [:] }
        let body = String(line[line.index(open.lowerBound, offsetBy: 2)..<line.index(before: line.endIndex)])
        var fields: [String: String] = [:]
        let pattern = try? NSRegularExpression(pattern: "(?:^| )([A-Z][A-Z0-9_]*)=")
        let ns = body as NSString
        let matches = pattern?.matches(in: body, range: NSRange(location: 0, length: ns.length)) ?? []
        for (index, match) in matches.enumerated() {
            let name = ns.substring(with: match.range(at: 1))
            let start = match.range.location + match.range.length
            let end = index + 1 < matches.count ? matches[index + 1].range.location : ns.length
            fields[name] = ns.substring(with: NSRange(location: start, length: end - start))
        }
        return fields
    }
}
