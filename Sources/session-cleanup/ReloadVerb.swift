import Control
import Daemon

/// `session-cleanup reload`: the unit's `ExecReload=`. Asks the daemon to read its configuration
/// again and returns once it is in force (exit 0), or once the daemon has refused it and kept the
/// old one (exit 78), so `systemctl reload` tells the truth.
enum ReloadVerb: Verb {
    static let description = VerbDescription(
        name: "reload", summary: "apply the configuration again (the unit's ExecReload=)",
        isClient: true,
        details: "Returns once the daemon has read and applied the configuration, printing the files it read and "
            + "what needs a restart to change. An invalid configuration is refused and the daemon keeps the one "
            + "it has, so systemctl reload fails instead of saying OK.",
        exitStatus: "0 reloaded; 78 invalid configuration (the old one stays in force); 1 the daemon refused or "
            + "could not be reached.",
        examples: ["session-cleanup check-config && systemctl reload session-cleanup", "session-cleanup reload"])

    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("reload takes no arguments") }
        let target = DaemonTarget(options, verb: "reload")
        let response: ControlResponse
        do {
            response = try ControlClient(socketPath: target.socketPath).send(.reload)
        } catch {
            throw DaemonUnreachable(target: target, cause: error)
        }
        guard response.ok else {
            printError("session-cleanup reload: \(response.error ?? "the daemon did not reload")")
            return response.code == .invalidConfiguration ? .configurationInvalid : .refused
        }
        guard case .object(let report)? = response.report else { return .success }
        if case .array(let files)? = report["files"] {
            let names = files.compactMap { item -> String? in if case .string(let name) = item { name } else { nil } }
            print("Configuration reloaded: \(names.isEmpty ? "no files (defaults)" : names.joined(separator: ", "))")
        }
        if case .array(let notes)? = report["notes"] {
            for case .string(let note) in notes { printError("session-cleanup reload: note: \(note)") }
        }
        return .success
    }
}
