import Daemon
import Glibc
import Vocabulary

/// The verbs, and the dispatch to each: global options, then the verb's own.
enum CommandLineInterface {
    /// Every verb, in the order the global help lists them. Add new verbs here (see ``Verb``).
    static let verbs: [any Verb.Type] = [
        DaemonVerb.self, CheckConfigVerb.self, RegisterVerb.self, UnregisterVerb.self, ListVerb.self,
        StatusVerb.self, EndVerb.self, ReportVerb.self, ReloadVerb.self, VersionVerb.self, HelpVerb.self,
        CompleteVerb.self,
    ]

    /// The verb called `name`.
    static func verb(named name: String) -> (any Verb.Type)? {
        verbs.first { $0.description.name == name }
    }

    /// `session-cleanup 0.1.0`.
    static var versionLine: String { "session-cleanup \(SessionCleanupVersion.string)" }

    /// Runs the command line `arguments` (without the program name).
    static func run(_ arguments: [String]) -> ExitStatus {
        var rest = arguments[...]
        var user = false
        // Options before the verb, as in `session-cleanup --user list` (systemctl's convention).
        while let first = rest.first, first.hasPrefix("-") {
            rest = rest.dropFirst()
            switch first {
            case "--user": user = true
            case "--help", "-h":
                print(HelpText.global)
                return .success
            case "--version", "-V":
                print(versionLine)
                return .success
            default:
                printError("session-cleanup: unknown option '\(first)' before the verb\n\(HelpText.tryHelp)")
                return .usage
            }
        }
        guard let name = rest.first else {
            printError(HelpText.global)
            return .usage
        }
        guard let verb = verb(named: name) else {
            printError("session-cleanup: unknown verb '\(name)'\n\(HelpText.tryHelp)")
            return .usage
        }
        let description = verb.description
        let words = (user ? [VerbOption.user.name] : []) + Array(rest.dropFirst())
        if !description.isHidden {
            switch Options.request(in: words, for: description) {
            case .help?:
                print(HelpText.verb(description))
                return .success
            case .version?:
                print(versionLine)
                return .success
            case nil: break
            }
        }
        do {
            return try verb.run(try Options(words, for: description, raw: description.isHidden))
        } catch let error as UsageError {
            printError("session-cleanup \(description.name): \(error.message)\n\(HelpText.tryHelp(description))")
            return .usage
        } catch {
            printError("session-cleanup \(description.name): \(error)")
            return .startFailed
        }
    }
}

/// Writes `text` (and a newline) to standard error, whole, even when interrupted.
func printError(_ text: String) {
    var line = text
    if !line.hasSuffix("\n") { line += "\n" }
    let bytes = Array(line.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeBytes { raw -> Int in
            guard let base = raw.baseAddress else { return 0 }
            return write(STDERR_FILENO, base + offset, raw.count - offset)
        }
        if written < 0 && errno == EINTR { continue }
        if written <= 0 { return }
        offset += written
    }
}
