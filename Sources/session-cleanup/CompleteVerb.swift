import Configuration
import Control
import Daemon

/// `session-cleanup __complete CWORD WORD…`: the candidates for bash completion, one per line,
/// computed from the verbs' descriptions (so completion never lags behind the parser). `CWORD`
/// and the words are bash's `COMP_CWORD` and `COMP_WORDS`. A lone line ``filesMarker`` asks the
/// shell to complete file names. Endpoint names and session ids come from the daemon (a short
/// timeout), endpoint names from the configuration file when the daemon does not answer.
enum CompleteVerb: Verb {
    static let description = VerbDescription(
        name: "__complete", summary: "bash completion candidates (used by the completion script)",
        isHidden: true)

    /// Printed alone when the word is a file name.
    static let filesMarker = "__files__"

    static func run(_ options: Options) throws -> ExitStatus {
        let arguments = options.positional
        guard let first = arguments.first, let index = Int(first), index >= 1 else {
            throw UsageError("usage: __complete CWORD WORD...")
        }
        let words = Array(arguments.dropFirst())
        let before = Array(words.dropFirst().prefix(max(0, index - 1)))  // without the program's name
        let current = index < words.count ? words[index] : ""
        let offered = candidates(before: before, current: current)
        if offered == [filesMarker] {
            print(filesMarker)  // the shell lists the files itself
        } else {
            for candidate in offered where candidate.hasPrefix(current) { print(candidate) }
        }
        return .success
    }

    /// The verbs the help lists.
    static var verbNames: [String] {
        CommandLineInterface.verbs.map { $0.description }.filter { !$0.isHidden }.map(\.name)
    }

    /// What may follow `before` (the words after the program's name), starting with `current`.
    static func candidates(before: [String], current: String) -> [String] {
        let globalOptions = ["--user", "--help", "--version"]
        var rest = before[...]
        var user = false
        while let word = rest.first, word.hasPrefix("-") {
            if word == "--user" { user = true }
            rest = rest.dropFirst()
        }
        guard let name = rest.first else {
            if current.hasPrefix("-") { return globalOptions }
            return verbNames
        }
        guard let verb = CommandLineInterface.verb(named: name)?.description, !verb.isHidden else { return [] }
        // Walk the verb's words: which option waits for its value, how many positionals were given.
        var pendingValue: VerbOption?
        var positionals = 0
        var socket: String?
        for word in rest.dropFirst() {
            if let option = pendingValue {
                if option.name == VerbOption.socket.name { socket = word }
                pendingValue = nil
            } else if let option = verb.option(named: word) {
                if option.takesValue { pendingValue = option }
                if option.name == VerbOption.user.name { user = true }
            } else if !word.hasPrefix("-") {
                positionals += 1
            }
        }
        let context = Context(verb: verb, user: user, socket: socket)
        if let option = pendingValue { return context.values(for: option.completion) }
        if current.hasPrefix("-") { return verb.allOptions.map(\.name) }
        guard positionals < verb.arguments.count else { return [] }
        return context.values(for: verb.arguments[positionals].completion)
    }

    /// Whose daemon to ask.
    private struct Context {
        let verb: VerbDescription
        let user: Bool
        let socket: String?

        func values(for completion: Completion) -> [String] {
            switch completion {
            case .none: return []
            case .file: return [CompleteVerb.filesMarker]
            case .words(let words): return words
            case .verb: return CompleteVerb.verbNames
            case .endpoint: return endpointNames()
            case .session: return sessionIDs()
            }
        }

        private var options: Options? {
            var words = user ? [VerbOption.user.name] : []
            if let socket { words += [VerbOption.socket.name, socket] }
            var description = verb
            description.isClient = true
            return try? Options(words, for: description)
        }

        private func ask(_ request: ControlRequest) -> ControlResponse? {
            guard let options else { return nil }
            let target = DaemonTarget(options, verb: verb.name)
            guard let response = try? ControlClient(socketPath: target.socketPath, timeout: .seconds(1)).send(request),
                response.ok
            else { return nil }
            return response
        }

        private func endpointNames() -> [String] {
            if case .array(let names)? = ask(.status)?.status?["endpoints"] {
                return names.compactMap { name -> String? in
                    if case .string(let text) = name { return text }
                    return nil
                }
            }
            let paths = DaemonPaths.resolve(user ? .user : .system, configOption: nil)
            guard let (configuration, _) = try? ConfigurationLoader.load(path: paths.configFile, required: false)
            else { return [] }
            return configuration.endpoints.map(\.name)
        }

        private func sessionIDs() -> [String] {
            ask(.list)?.sessions?.map(\.id) ?? []
        }
    }
}
