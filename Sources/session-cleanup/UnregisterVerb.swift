import Daemon

/// `session-cleanup unregister ID`: forgets a session without ending it.
enum UnregisterVerb: Verb {
    static let description = VerbDescription(
        name: "unregister", summary: "forget a session without ending it",
        arguments: [VerbArgument(usage: "ID", completion: .session)],
        isClient: true,
        details: "For a session the application ended itself. The daemon will not call its endpoints.",
        exitStatus: "0 forgotten; 1 the daemon refused (no such session) or could not be reached.",
        examples: ["session-cleanup unregister 3f2a9c0d5e7b1a44"])

    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.count == 1, let id = options.positional.first else {
            throw UsageError("unregister takes one session ID")
        }
        guard
            try ControlVerbSupport.perform(.unregister(id: id), options, verb: "unregister", startsDaemon: true) != nil
        else {
            return .refused
        }
        return .success
    }
}
