import Daemon

/// `session-cleanup help [VERB]`: the global help, or one verb's (as `VERB --help`).
enum HelpVerb: Verb {
    static let description = VerbDescription(
        name: "help", summary: "show the help, or a verb's help (as VERB --help)",
        arguments: [
            VerbArgument(usage: "[VERB]", completion: .verb, isOptional: true)
        ],
        examples: ["session-cleanup help list"])

    static func run(_ options: Options) throws -> ExitStatus {
        switch options.positional.count {
        case 0:
            print(HelpText.global)
        case 1:
            guard let verb = CommandLineInterface.verb(named: options.positional[0]), !verb.description.isHidden
            else { throw UsageError("no verb '\(options.positional[0])'") }
            print(HelpText.verb(verb.description))
        default:
            throw UsageError("help takes at most one verb")
        }
        return .success
    }
}
