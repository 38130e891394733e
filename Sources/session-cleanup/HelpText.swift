/// The help texts, built from the verbs' descriptions so they never disagree with the parser.
enum HelpText {
    /// Lines are wrapped to this width.
    static let width = 88

    /// `session-cleanup --help`.
    static var global: String {
        let visible = CommandLineInterface.verbs.map { $0.description }.filter { !$0.isHidden }
        let verbWidth = (visible.map(\.name.count).max() ?? 0) + 2
        var lines = [
            "Usage: session-cleanup [--user] VERB [OPTIONS]",
            "",
        ]
        lines += wrap(
            "Ends registered remote sessions when its daemon is stopped (systemctl stop, reboot, poweroff), "
                + "inside a deadline budget, and records what became of each in the journal.")
        lines += ["", "Verbs:"]
        for verb in visible { lines += hanging("  " + pad(verb.name, verbWidth), verb.summary) }
        lines += ["", "Options (before or after the verb):"]
        lines += hanging("  --user         ", "your own daemon (systemctl --user) instead of the system's")
        lines += hanging("  -h, --help     ", "this help; 'session-cleanup VERB --help' shows a verb's options")
        lines += hanging("  -V, --version  ", "print the version")
        lines += [""]
        lines += wrap(
            "Exit status: 0 success; 1 the daemon refused or could not be reached (the daemon: could not "
                + "start); 2 bad command line; 75 sessions kept for later; 78 invalid configuration.")
        lines += ["", "See session-cleanup(8), session-cleanup.conf(5) and session-cleanup-protocol(7)."]
        return lines.joined(separator: "\n")
    }

    /// `session-cleanup VERB --help`: usage, what it does, every option, exit status, examples.
    static func verb(_ verb: VerbDescription) -> String {
        var lines = ["Usage: \(verb.usage)", ""]
        lines += wrap(capitalized(verb.summary) + ".")
        if !verb.details.isEmpty { lines += [""] + wrap(verb.details) }
        let options = verb.allOptions
        let labels = options.map { option -> String in
            var label = option.shortName.map { "\($0), " } ?? "    "
            label += option.name
            if let value = option.value { label += " " + value }
            return label
        }
        let labelWidth = (labels.map(\.count).max() ?? 0) + 2
        lines += ["", "Options:"]
        for (label, option) in zip(labels, options) { lines += hanging("  " + pad(label, labelWidth), option.help) }
        if !verb.exitStatus.isEmpty { lines += [""] + wrap("Exit status: " + verb.exitStatus) }
        if !verb.examples.isEmpty {
            lines += ["", verb.examples.count == 1 ? "Example:" : "Examples:"]
            lines += verb.examples.map { "  " + $0 }
        }
        return lines.joined(separator: "\n")
    }

    /// The hint after a command-line mistake with no verb.
    static let tryHelp = "Try 'session-cleanup --help'."

    /// The hint after a mistake in `verb`'s command line.
    static func tryHelp(_ verb: VerbDescription) -> String { "Try 'session-cleanup \(verb.name) --help'." }

    // MARK: Layout

    private static func pad(_ text: String, _ width: Int) -> String {
        text.count >= width ? text + " " : text + String(repeating: " ", count: width - text.count)
    }

    private static func capitalized(_ text: String) -> String { text.prefix(1).uppercased() + text.dropFirst() }

    /// `text` in lines of at most ``width`` characters, each beginning with `indent`.
    static func wrap(_ text: String, indent: String = "", firstIndent: String? = nil) -> [String] {
        var lines: [String] = []
        var line = firstIndent ?? indent
        var lineHasWord = false
        for word in text.split(separator: " ", omittingEmptySubsequences: true) {
            if lineHasWord && line.count + 1 + word.count > width {
                lines.append(line)
                line = indent
                lineHasWord = false
            }
            line += (lineHasWord ? " " : "") + word
            lineHasWord = true
        }
        lines.append(line)
        return lines
    }

    /// `label` followed by `text`, continued under the text's first column.
    private static func hanging(_ label: String, _ text: String) -> [String] {
        wrap(text, indent: String(repeating: " ", count: label.count), firstIndent: label)
    }
}
