import Basics
import Control
import Daemon
import Glibc
import Sessions

/// `session-cleanup register --endpoint NAME [--endpoint NAME…] [--label TEXT]`: registers the
/// session whose key is on standard input (never in argv, where `ps` shows it) and prints its id.
enum RegisterVerb: Verb {
    static let description = VerbDescription(
        name: "register", summary: "register a session to be ended; the key is read from standard input",
        options: [
            VerbOption(
                name: "--endpoint", value: "NAME",
                help: "an [Endpoint] that ends the session (repeat for several, e.g. auth and billing)",
                completion: .endpoint),
            VerbOption(name: "--label", value: "TEXT", help: "a label shown by list and in the journal"),
        ],
        isClient: true,
        details: "The key is read from standard input (one line; a terminal prompts for it), never from the "
            + "command line, where ps would show it. Prints the new session's id once the registration is durable.",
        exitStatus: "0 registered; 1 the daemon refused (unknown endpoint, a limit) or could not be reached.",
        examples: [
            "echo \"$KEY\" | session-cleanup register --endpoint auth --label web",
            "session-cleanup --user register --endpoint auth < keyfile",
        ])

    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else {
            throw UsageError("register takes no arguments; the key is read from standard input")
        }
        let endpoints = options.values["--endpoint"] ?? []
        guard !endpoints.isEmpty else { throw UsageError("register needs at least one --endpoint NAME") }
        let key = try readKey()
        let request = ControlRequest.register(key: key, endpoints: endpoints, label: options.value("--label"))
        guard let response = try ControlVerbSupport.perform(request, options, verb: "register", startsDaemon: true)
        else {
            return .refused
        }
        guard let id = response.id else {
            printError("session-cleanup: the daemon's reply carries no session id")
            return .refused
        }
        print(id)
        return .success
    }

    /// The key: all of standard input (a terminal: one line) less one trailing newline.
    private static func readKey() throws -> SessionKey {
        let limit = ControlRequest.maxKeyBytes
        let terminal = isatty(STDIN_FILENO) == 1
        // Typed at a terminal, the key is not echoed: it would stay in the scrollback.
        let hidden = terminal ? HiddenTerminalInput(fd: STDIN_FILENO) : nil
        defer { hidden?.restore() }
        if terminal { writeStderr("Session key (then Enter; it is not shown): ") }
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        reading: while bytes.count <= limit + 2 {
            let count = chunk.withUnsafeMutableBytes { read(STDIN_FILENO, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw UsageError("cannot read the session key from standard input: \(Errno.current)")
            }
            if count == 0 { break }
            bytes.append(contentsOf: chunk[0..<count])
            if terminal, bytes.contains(UInt8(ascii: "\n")) || bytes.contains(HiddenTerminalInput.interrupt) {
                break reading
            }
        }
        if terminal { writeStderr("\n") }  // the Enter was not echoed either
        guard !bytes.contains(HiddenTerminalInput.interrupt) else { throw UsageError("cancelled") }
        if bytes.last == UInt8(ascii: "\n") {
            bytes.removeLast()
            if bytes.last == UInt8(ascii: "\r") { bytes.removeLast() }
        }
        guard !bytes.isEmpty else { throw UsageError("no session key on standard input") }
        guard bytes.count <= limit else {
            throw UsageError("the session key on standard input is longer than \(limit) bytes")
        }
        guard !bytes.contains(UInt8(ascii: "\n")) else {
            throw UsageError("the session key on standard input has more than one line")
        }
        guard !bytes.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw UsageError("the session key on standard input contains control characters")
        }
        guard let text = String(validating: bytes, as: UTF8.self) else {
            throw UsageError("the session key on standard input is not UTF-8")
        }
        return SessionKey(text)
    }

    private static func writeStderr(_ text: String) {
        let bytes = Array(text.utf8)
        _ = bytes.withUnsafeBytes { write(STDERR_FILENO, $0.baseAddress, $0.count) }
    }
}
