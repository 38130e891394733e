import SessionCleanup

/// `session-cleanup reload`: the unit's `ExecReload=`. Asks the daemon to read its configuration
/// again and returns once it is in force (exit 0), or once the daemon has refused it and kept the
/// old one (exit 78), so `systemctl reload` tells the truth.
enum ReloadVerb {
    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("reload takes no arguments") }
        let response = try ControlClient(socketPath: ControlVerbSupport.socketPath(options)).send(.reload)
        guard response.ok else {
            printError("session-cleanup: \(response.error ?? "the daemon did not reload")")
            return response.code == .invalidConfiguration ? .configurationInvalid : .refused
        }
        guard case .object(let report)? = response.report else { return .success }
        if case .array(let files)? = report["files"] {
            let names = files.compactMap { item -> String? in if case .string(let name) = item { name } else { nil } }
            print("Configuration reloaded: \(names.isEmpty ? "no files (defaults)" : names.joined(separator: ", "))")
        }
        if case .array(let notes)? = report["notes"] {
            for case .string(let note) in notes { printError("session-cleanup: note: \(note)") }
        }
        return .success
    }
}
