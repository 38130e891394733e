import Glibc
import SessionCleanup

/// The verbs, their help, and the dispatch to each.
enum CommandLineInterface {
    static let usage = """
        Usage: session-cleanup VERB [OPTIONS]

        Ends registered remote sessions when the daemon is stopped (systemctl stop, shutdown).

        Verbs:
          daemon [--config PATH]        run the daemon (the unit's ExecStart=)
          check-config [--config PATH] [--no-host-checks]
                                        validate the configuration and exit (non-zero on errors)
          register --endpoint NAME [--endpoint NAME...] [--label TEXT]
                                        register a session; the key is read from stdin
          unregister ID                 forget a session without ending it
          list [--json]                 list your sessions (root: all), keys never shown
          status [--json]               the daemon's state and its last stop run
          end ID|--all [--json]         end sessions now, while the daemon runs
          reload                        apply the configuration again (the unit's ExecReload=);
                                        exit 78 when it is invalid and the old one is kept

        Options for every verb: --help, --version; client verbs take --socket PATH
        (default: $SESSION_CLEANUP_SOCKET or /run/session-cleanup/control.sock).

        Client verbs exit 0 on success, 1 when the daemon refuses or cannot be reached,
        2 on a bad command line. The control protocol: docs/control-protocol.md.
        """

    /// Runs the verb named by the first argument.
    static func run(_ arguments: [String]) -> ExitStatus {
        guard let verb = arguments.first else {
            printError(usage)
            return .usage
        }
        let rest = Array(arguments.dropFirst())
        if verb == "--help" || verb == "-h" || verb == "help" {
            print(usage)
            return .success
        }
        if verb == "--version" {
            print("session-cleanup \(SessionCleanupVersion.string)")
            return .success
        }
        if rest.contains("--help") || rest.contains("-h") {
            print(usage)
            return .success
        }
        if rest.contains("--version") {
            print("session-cleanup \(SessionCleanupVersion.string)")
            return .success
        }
        do {
            switch verb {
            case "daemon": return try DaemonVerb.run(try Options(rest, flags: [], values: ["--config"]))
            case "check-config":
                return try CheckConfigVerb.run(try Options(rest, flags: ["--no-host-checks"], values: ["--config"]))
            case "register":
                return try RegisterVerb.run(
                    try Options(rest, flags: [], values: ["--endpoint", "--label", "--socket"]))
            case "unregister": return try UnregisterVerb.run(try Options(rest, flags: [], values: ["--socket"]))
            case "list": return try ListVerb.run(try Options(rest, flags: ["--json"], values: ["--socket"]))
            case "status": return try StatusVerb.run(try Options(rest, flags: ["--json"], values: ["--socket"]))
            case "end": return try EndVerb.run(try Options(rest, flags: ["--all", "--json"], values: ["--socket"]))
            case "reload": return try ReloadVerb.run(try Options(rest, flags: [], values: ["--socket"]))
            default: throw UsageError("unknown verb '\(verb)'; see session-cleanup --help")
            }
        } catch let error as UsageError {
            printError("session-cleanup: \(error.message)")
            return .usage
        } catch {
            printError("session-cleanup: \(error)")
            return .startFailed
        }
    }
}

/// A command-line mistake.
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// Parsed `--flag`, `--option VALUE` (repeatable) and positional arguments.
struct Options {
    private(set) var flags: Set<String> = []
    private(set) var values: [String: [String]] = [:]
    private(set) var positional: [String] = []

    init(_ arguments: [String], flags allowedFlags: Set<String>, values allowedValues: Set<String>) throws {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            var name = argument
            var inlineValue: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            if allowedFlags.contains(name), inlineValue == nil {
                flags.insert(name)
            } else if allowedValues.contains(name) {
                if let inlineValue {
                    values[name, default: []].append(inlineValue)
                } else {
                    guard index + 1 < arguments.count else { throw UsageError("\(name) needs a value") }
                    index += 1
                    values[name, default: []].append(arguments[index])
                }
            } else if argument.hasPrefix("-") && argument != "-" {
                throw UsageError("unknown option '\(name)'")
            } else {
                positional.append(argument)
            }
            index += 1
        }
    }

    func value(_ name: String) -> String? { values[name]?.last }
}

func printError(_ text: String) {
    var line = text
    if !line.hasSuffix("\n") { line += "\n" }
    var bytes = Array(line.utf8)
    var offset = 0
    while offset < bytes.count {
        let written = bytes.withUnsafeMutableBytes { write(STDERR_FILENO, $0.baseAddress! + offset, $0.count - offset) }
        if written < 0 && errno == EINTR { continue }
        if written <= 0 { return }
        offset += written
    }
}
