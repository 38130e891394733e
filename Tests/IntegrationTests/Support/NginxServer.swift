import Foundation
import Glibc

/// Debian's nginx on 127.0.0.1, started and stopped by a test: plain HTTP, HTTPS (HTTP/1.1
/// only), or HTTPS offering HTTP/2 by ALPN. Every request gets `{"success": true}`; the access
/// log tells which connection carried it, whether its TLS session was resumed and which HTTP
/// version it used. `@unchecked Sendable`: nothing changes after init.
final class NginxServer: @unchecked Sendable {
    enum Mode { case http, https, http2 }

    /// One access-log line.
    struct Request {
        let connection: String
        let tlsResumed: Bool
        let httpVersion: String
        let path: String
        /// The port (origin) it came to.
        let port: Int
        /// The status nginx answered.
        let status: Int
        /// `$ssl_client_verify`: `SUCCESS` (a client certificate verified), `NONE`, `FAILED:…`, or
        /// `-` over plain HTTP.
        let client: String
    }

    /// The first origin's port (``ports`` has them all).
    var port: Int { ports[0] }
    /// One port per origin: each is an origin of its own to a client (its own TLS session).
    let ports: [Int]
    let mode: Mode
    private let process = Process()
    private let directory: ScratchDirectory
    private var logPath: String { directory.path + "/access.log" }

    /// `keepaliveRequests`: requests a connection carries before nginx closes it; `origins`: ports
    /// it listens on; `clientCA`: a CA file whose client certificate every TLS request must
    /// present (mutual TLS; without one nginx answers 400), its subject logged as ``Request/client``.
    init(
        mode: Mode, certificate: (pem: String, key: String)? = nil, keepaliveRequests: Int = 1000, origins: Int = 1,
        clientCA: String? = nil
    ) throws {
        self.mode = mode
        directory = try ScratchDirectory("nginx")
        var ports: [Int] = []
        while ports.count < origins {
            let port = try EndSessionServer.closedPort()
            if !ports.contains(port) { ports.append(port) }
        }
        self.ports = ports
        let flags = [Mode.http: "", .https: " ssl", .http2: " ssl http2"][mode] ?? ""
        var tls = ""
        if mode != .http {
            guard let certificate else { throw TestSetupError("an HTTPS nginx needs a certificate") }
            tls =
                "ssl_certificate \(certificate.pem); ssl_certificate_key \(certificate.key);\n"
                + "ssl_session_cache shared:test:1m;\n"
            if let clientCA { tls += "ssl_client_certificate \(clientCA); ssl_verify_client on;\n" }
        }
        let temp = directory.path
        let config = """
            worker_processes 1;
            daemon off;
            pid \(directory.path)/nginx.pid;
            error_log \(directory.path)/error.log warn;
            events { worker_connections 1024; }
            http {
                log_format test '$connection $ssl_session_reused $server_protocol $request_uri $server_port $status $ssl_client_verify';
                access_log \(logPath) test;
                client_body_temp_path \(temp); proxy_temp_path \(temp); fastcgi_temp_path \(temp);
                uwsgi_temp_path \(temp); scgi_temp_path \(temp);
                keepalive_requests \(keepaliveRequests);
                server {
                    \(ports.map { "listen 127.0.0.1:\($0)\(flags);" }.joined(separator: "\n"))
                    \(tls)
                    location / { default_type application/json; return 200 '{"success": true}'; }
                }
            }
            """
        let file = try directory.write("nginx.conf", config)
        process.executableURL = URL(fileURLWithPath: "/usr/sbin/nginx")
        process.arguments = ["-c", file, "-p", directory.path]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while !ports.allSatisfy({ LoopbackPort.accepts($0) }) {
            guard process.isRunning, Date() < deadline else {
                let log = (try? String(contentsOfFile: directory.path + "/error.log", encoding: .utf8)) ?? ""
                throw TestSetupError("nginx did not start: \(log)")
            }
            usleep(20_000)
        }
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// `https://127.0.0.1:PORT` (or http).
    var base: String { base(origin: 0) }

    /// The base URL of origin `origin` (its port in ``ports``).
    func base(origin: Int) -> String { (mode == .http ? "http" : "https") + "://127.0.0.1:\(ports[origin])" }

    /// The requests logged, once there are at least `count` (nginx writes a line just after its
    /// reply, so a client may see the reply first), or after 5 s.
    func requests(atLeast count: Int = 0) -> [Request] {
        let deadline = Date().addingTimeInterval(5)
        var logged = loggedRequests()
        while logged.count < count, Date() < deadline {
            usleep(10_000)
            logged = loggedRequests()
        }
        return logged
    }

    private func loggedRequests() -> [Request] {
        let text = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
        return text.split(separator: "\n").compactMap { line in
            let fields = line.split(separator: " ").map(String.init)
            guard fields.count >= 7, let port = Int(fields[4]), let status = Int(fields[5]) else { return nil }
            return Request(
                connection: fields[0], tlsResumed: fields[1] == "r", httpVersion: fields[2], path: fields[3],
                port: port, status: status, client: fields[6...].joined(separator: " "))
        }
    }
}
