import Foundation
import Glibc

/// A real proxy on 127.0.0.1, started and stopped by a test: Debian's tinyproxy (HTTP, with
/// CONNECT for https), optionally demanding a Basic user name and password, or
/// `Tests/Support/socks5_proxy.py` (SOCKS5, names resolved by the proxy). Its log says what it
/// forwarded. `@unchecked Sendable`: nothing changes after init.
final class ProxyServer: @unchecked Sendable {
    enum Kind { case http, socks5 }

    let port: Int
    let kind: Kind
    private let process = Process()
    private let directory: ScratchDirectory
    private var logPath: String { directory.path + "/proxy.log" }

    init(_ kind: Kind, user: String? = nil, password: String? = nil) throws {
        self.kind = kind
        directory = try ScratchDirectory("proxy")
        port = try EndSessionServer.closedPort()
        _ = FileManager.default.createFile(atPath: logPath, contents: nil)
        switch kind {
        case .http:
            var config = """
                Port \(port)
                Listen 127.0.0.1
                Timeout 30
                LogFile "\(logPath)"
                LogLevel Info
                PidFile "\(directory.path)/tinyproxy.pid"
                MaxClients 64
                Allow 127.0.0.1

                """
            if let user, let password { config += "BasicAuth \(user) \(password)\n" }
            // tinyproxy drops root for this user; it must be able to write the log.
            if getuid() == 0 {
                config += "User nobody\nGroup nogroup\n"
                chmod(directory.path, 0o777)
                chmod(logPath, 0o666)
            }
            process.executableURL = URL(fileURLWithPath: "/usr/bin/tinyproxy")
            process.arguments = ["-d", "-c", try directory.write("tinyproxy.conf", config)]
        case .socks5:
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "python3", EndSessionServer.supportDirectory + "/socks5_proxy.py", "--port", String(port), "--log",
                logPath,
            ]
        }
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let deadline = Date().addingTimeInterval(10)
        while !LoopbackPort.accepts(port) {
            guard process.isRunning, Date() < deadline else { throw TestSetupError("the \(kind) proxy did not start") }
            usleep(20_000)
        }
    }

    deinit {
        if process.isRunning {
            process.terminate()
            process.waitUntilExit()
        }
    }

    /// `http://127.0.0.1:PORT` or `socks5h://127.0.0.1:PORT`.
    var url: String { (kind == .http ? "http" : "socks5h") + "://127.0.0.1:\(port)" }

    /// What the proxy logged so far.
    var log: String { (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? "" }
}
