import Daemon

/// `session-cleanup version` (also `--version`, `-V`): the version of this program.
enum VersionVerb: Verb {
    static let description = VerbDescription(
        name: "version", summary: "print the version (also --version, -V)",
        details: "The daemon's own version is in 'session-cleanup status' (it may be older after an upgrade, "
            + "until it is restarted).",
        examples: ["session-cleanup version"])

    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("version takes no arguments") }
        print(CommandLineInterface.versionLine)
        return .success
    }
}
