import Control
import Daemon
import Glibc
import JSON

extension ExitStatus {
    /// A client verb's "no": the daemon refused, or could not be reached (exit status 1).
    static let refused = ExitStatus.startFailed
}

/// The daemon a client verb talks to, and how to name it in an error.
struct DaemonTarget {
    /// Its control socket.
    var socketPath: String
    /// `the system daemon`, `your user daemon`, `the daemon at PATH`.
    var name: String
    /// What to try when it cannot be reached, or "".
    var hint: String
    /// Named with `--socket` or `$SESSION_CLEANUP_SOCKET`: no unit of ours to ask systemd about.
    var isExplicit = false

    /// `--socket PATH`, else `$SESSION_CLEANUP_SOCKET`, else the system daemon's socket, or with
    /// `--user` the user daemon's.
    init(_ options: Options, verb: String) {
        if let path = options.value(VerbOption.socket.name) ?? Self.environmentSocket() {
            socketPath = path
            name = "the daemon at \(path)"
            hint = ""
            isExplicit = true
            return
        }
        socketPath = DaemonPaths.controlSocket(of: options.instance)
        switch options.instance {
        case .system:
            name = "the system daemon"
            hint =
                getuid() == 0
                ? "systemctl status session-cleanup"
                : "systemctl status session-cleanup; for your own daemon: session-cleanup --user \(verb)"
        case .user:
            name = "your user daemon"
            hint = "systemctl --user enable --now session-cleanup"
        }
    }

    private static func environmentSocket() -> String? {
        guard let value = getenv("SESSION_CLEANUP_SOCKET").map({ String(cString: $0) }), !value.isEmpty else {
            return nil
        }
        return value
    }
}

/// A client verb could not get an answer: names the daemon it tried and what to check.
struct DaemonUnreachable: Error, CustomStringConvertible {
    let target: DaemonTarget
    let cause: ControlClientError

    var description: String {
        "cannot reach \(target.name): \(cause.message)" + (target.hint.isEmpty ? "" : "\n  (try: \(target.hint))")
    }
}

/// What the client verbs (`register`, `unregister`, `list`, `status`, `end`) share.
enum ControlVerbSupport {
    /// Sends `request` to the daemon `options` name; returns the response if the daemon said yes,
    /// else prints its "no" and returns nil. An unreachable daemon throws ``DaemonUnreachable``.
    /// `startsDaemon`: a writing verb, which may start a stopped daemon and says so on stderr
    /// (a read-only verb finds out with ``StoppedDaemon/find(_:target:)`` first and does not connect).
    static func perform(
        _ request: ControlRequest, _ options: Options, verb: String, timeout: Duration = .seconds(30),
        startsDaemon: Bool = false
    ) throws -> ControlResponse? {
        let target = DaemonTarget(options, verb: verb)
        if startsDaemon, let stopped = StoppedDaemon.find(options, target: target, verb: verb) {
            printError(
                "session-cleanup \(verb): the daemon was stopped; \(StoppedDaemon.socket) starts it for this request "
                    + "(\(stopped.systemctl) stop \(StoppedDaemon.socket) \(StoppedDaemon.service) keeps it stopped)")
        }
        let response: ControlResponse
        do {
            response = try ControlClient(socketPath: target.socketPath, timeout: timeout).send(request)
        } catch {
            throw DaemonUnreachable(target: target, cause: error)
        }
        guard response.ok else {
            let code = response.code.map { " [\($0)]" } ?? ""
            printError("session-cleanup \(verb): \(response.error ?? "the daemon refused the request")\(code)")
            return nil
        }
        return response
    }

    /// Compact JSON of `value` on one line (sorted keys), for `--json`.
    static func jsonText(_ value: some JSONWritable) -> String {
        guard let bytes = try? JSONWriter.text(of: value) else { return "null" }
        return String(decoding: bytes, as: UTF8.self)
    }
}
