import Daemon

/// A command-line mistake: printed with a pointer to the verb's `--help`, exit status 2.
struct UsageError: Error {
    let message: String
    init(_ message: String) { self.message = message }
}

/// A verb's command line, parsed against its ``VerbDescription``: flags (`--json`), options with
/// values (`--endpoint NAME`, `--endpoint=NAME`, repeatable) and positional arguments.
struct Options {
    private(set) var flags: Set<String> = []
    private(set) var values: [String: [String]] = [:]
    private(set) var positional: [String] = []

    /// Parses `arguments` (the words after the verb); anything `description` does not name is a
    /// ``UsageError``. With `raw`, every word is positional (for internal verbs).
    init(_ arguments: [String], for description: VerbDescription, raw: Bool = false) throws {
        if raw {
            positional = arguments
            return
        }
        var index = 0
        var onlyPositional = false
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if onlyPositional || argument == "-" || !argument.hasPrefix("-") {
                positional.append(argument)
                continue
            }
            if argument == "--" {
                onlyPositional = true
                continue
            }
            var name = argument
            var inlineValue: String?
            if argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") {
                name = String(argument[..<equals])
                inlineValue = String(argument[argument.index(after: equals)...])
            }
            guard let option = description.option(named: name) else {
                throw UsageError("unknown option '\(name)'")
            }
            if option.takesValue {
                if let inlineValue {
                    values[option.name, default: []].append(inlineValue)
                } else {
                    guard index < arguments.count else { throw UsageError("\(option.name) needs a value") }
                    values[option.name, default: []].append(arguments[index])
                    index += 1
                }
            } else {
                guard inlineValue == nil else { throw UsageError("\(option.name) takes no value") }
                flags.insert(option.name)
            }
        }
    }

    /// The last value given for `name` (`--socket`), or nil.
    func value(_ name: String) -> String? { values[name]?.last }

    /// Whether the flag `name` (`--json`) was given.
    func has(_ name: String) -> Bool { flags.contains(name) }

    /// The daemon the verb is about: `--user`'s, else the system's.
    var instance: DaemonPaths.Instance { has(VerbOption.user.name) ? .user : .system }

    /// Whether `arguments` ask for help or the version in a place where an option may stand
    /// (not as the value of an option such as `--label`): those win over every other mistake.
    static func request(in arguments: [String], for description: VerbDescription) -> HelpRequest? {
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            index += 1
            if argument == "--" { return nil }
            switch argument {
            case "--help", "-h": return .help
            case "--version", "-V": return .version
            default:
                if let option = description.option(named: argument), option.takesValue { index += 1 }
            }
        }
        return nil
    }

    /// See ``request(in:for:)``.
    enum HelpRequest {
        case help
        case version
    }
}
