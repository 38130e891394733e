import SessionCleanup

/// `session-cleanup unregister ID`: forgets a session without ending it.
enum UnregisterVerb {
    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.count == 1, let id = options.positional.first else {
            throw UsageError("unregister takes one session ID")
        }
        guard try ControlVerbSupport.perform(.unregister(id: id), options) != nil else { return .refused }
        return .success
    }
}
