import FoundationEssentials
import Glibc
import SessionCleanup

extension ExitStatus {
    /// A client verb's "no": the daemon refused, or could not be reached (exit status 1).
    static let refused = ExitStatus.startFailed
}

/// What the client verbs (`register`, `unregister`, `list`, `status`, `end`) share.
enum ControlVerbSupport {
    /// The options every client verb takes besides its own.
    static let socketOption = "--socket"

    /// `--socket PATH`, else `$SESSION_CLEANUP_SOCKET`, else the system socket.
    static func socketPath(_ options: Options) -> String {
        if let path = options.value(socketOption) { return path }
        if let path = getenv("SESSION_CLEANUP_SOCKET").map({ String(cString: $0) }), !path.isEmpty { return path }
        return ControlClient.defaultSocketPath
    }

    /// Sends `request`; returns the response if the daemon said yes, else prints its "no" and
    /// returns nil. Unreachable daemons, and no reply within `timeout`, throw (the caller prints
    /// them; exit status 1).
    static func perform(
        _ request: ControlRequest, _ options: Options, timeout: Duration = .seconds(30)
    ) throws -> ControlResponse? {
        let response = try ControlClient(socketPath: socketPath(options), timeout: timeout).send(request)
        guard response.ok else {
            let code = response.code.map { " [\($0)]" } ?? ""
            printError("session-cleanup: \(response.error ?? "the daemon refused the request")\(code)")
            return nil
        }
        return response
    }

    /// Compact JSON of `value` on one line (sorted keys), for `--json`.
    static func jsonText(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "null" }
        return String(decoding: data, as: UTF8.self)
    }

    /// An opaque JSON object as indented `name: value` lines, for people.
    static func humanLines(_ value: JSONValue, indent: String = "") -> [String] {
        switch value {
        case .object(let members):
            var lines: [String] = []
            for name in members.keys.sorted() {
                let member = members[name] ?? .null
                if let scalar = scalarText(member) {
                    lines.append("\(indent)\(name): \(scalar)")
                } else {
                    lines.append("\(indent)\(name):")
                    lines += humanLines(member, indent: indent + "  ")
                }
            }
            return lines
        case .array(let items):
            return items.flatMap { item -> [String] in
                if let scalar = scalarText(item) { return ["\(indent)- \(scalar)"] }
                let nested = humanLines(item, indent: indent + "  ")
                guard let first = nested.first else { return ["\(indent)-"] }
                return ["\(indent)- " + first.dropFirst(indent.count + 2)] + nested.dropFirst()
            }
        default:
            return [indent + (scalarText(value) ?? "")]
        }
    }

    /// Scalars and arrays of scalars on one line; nil for what needs several.
    private static func scalarText(_ value: JSONValue) -> String? {
        switch value {
        case .null: return "-"
        case .bool(let flag): return flag ? "yes" : "no"
        case .integer(let number): return String(number)
        case .number(let number): return String(number)
        case .string(let text): return text
        case .array(let items):
            if items.isEmpty { return "(none)" }
            let texts = items.compactMap { item -> String? in
                if case .array = item { return nil }
                return scalarText(item)
            }
            return texts.count == items.count ? texts.joined(separator: ", ") : nil
        case .object(let members): return members.isEmpty ? "(none)" : nil
        }
    }
}
