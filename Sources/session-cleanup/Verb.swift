import Daemon

/// One verb of the command line: what it is called, its help, and its work.
///
/// To add a verb: a file `NameVerb.swift` holding an `enum NameVerb: Verb`, and its type in
/// ``CommandLineInterface/verbs``. Its `--help`, the global help's verb list, option parsing and
/// bash completion all follow from ``description``; `run` receives only what that allows.
protocol Verb: Sendable {
    /// The verb's name, summary, arguments, options, examples.
    static var description: VerbDescription { get }
    /// Does the verb's work with its parsed command line.
    static func run(_ options: Options) throws -> ExitStatus
}

/// What a verb takes and how it explains itself.
struct VerbDescription {
    /// The verb as typed: `list`.
    var name: String
    /// One line for the global help: `list your sessions (root: all)`.
    var summary: String
    /// Positional arguments, in order.
    var arguments: [VerbArgument] = []
    /// The verb's own options (the common ones are added by ``allOptions``).
    var options: [VerbOption] = []
    /// Whether the verb talks to a daemon over its control socket (it then takes `--socket`).
    var isClient = false
    /// What the verb does, in a few sentences (wrapped as written).
    var details: String = ""
    /// Exit statuses beyond the usual, e.g. `75: some sessions were kept`.
    var exitStatus: String = ""
    /// Command lines that show the verb in use.
    var examples: [String] = []
    /// Left out of the global help and completion (internal verbs).
    var isHidden = false

    /// The usage line: `session-cleanup end ID|--all [OPTIONS]`.
    var usage: String {
        let words = ["session-cleanup", name] + arguments.map(\.usage) + ["[OPTIONS]"]
        return words.joined(separator: " ")
    }

    /// The verb's options followed by the ones every verb takes.
    var allOptions: [VerbOption] {
        var all = options
        if isClient { all.append(.socket) }
        all.append(.user)
        all.append(.help)
        return all
    }

    /// The option called `name` (`--json`), or nil.
    func option(named name: String) -> VerbOption? {
        allOptions.first { $0.name == name || $0.shortName == name }
    }
}

/// A positional argument.
struct VerbArgument {
    /// How usage shows it: `ID`, `ID|--all`.
    var usage: String
    /// What completes it.
    var completion: Completion = .none
    /// Whether it may be left out.
    var isOptional = false
}

/// An option: `--json` (a flag) or `--endpoint NAME` (takes a value).
struct VerbOption {
    /// `--endpoint`.
    var name: String
    /// `-h` for `--help`, if any.
    var shortName: String?
    /// The value's placeholder (`NAME`), or nil for a flag.
    var value: String?
    /// One line of help.
    var help: String
    /// What completes its value.
    var completion: Completion = .none

    /// Whether the option takes a value.
    var takesValue: Bool { value != nil }

    /// `--help`, taken by every verb.
    static let help = VerbOption(name: "--help", shortName: "-h", help: "show this help and exit")
    /// `--user`, taken by every verb: the user's own daemon instead of the system's.
    static let user = VerbOption(
        name: "--user",
        help: "your own daemon (systemctl --user session-cleanup) instead of the system's: its socket, "
            + "configuration and state")
    /// `--socket PATH`, taken by client verbs.
    static let socket = VerbOption(
        name: "--socket", value: "PATH",
        help: "the control socket (default: $SESSION_CLEANUP_SOCKET, else the system daemon's "
            + "\(DaemonPaths.controlSocket(of: .system)), or with --user $XDG_RUNTIME_DIR/session-cleanup/control.sock)",
        completion: .file)
    /// `--json`, for verbs that print something a program may read.
    static func json(_ what: String) -> VerbOption {
        VerbOption(name: "--json", help: "print \(what) as one line of JSON, with exact numbers (microseconds)")
    }
    /// `--config PATH`, for verbs that read the configuration.
    static let config = VerbOption(
        name: "--config", value: "PATH",
        help: "the main configuration file (default: \(DaemonPaths.systemConfigFile), or with --user "
            + "$XDG_CONFIG_HOME/session-cleanup/session-cleanup.conf); its drop-ins are PATH.d/*.conf",
        completion: .file)
}

/// What the shell may offer for a word.
enum Completion: Equatable {
    /// Nothing in particular.
    case none
    /// File names.
    case file
    /// The configured endpoints' names.
    case endpoint
    /// The ids of the sessions the caller may see.
    case session
    /// One of these words.
    case words([String])
    /// A verb's name.
    case verb
}
