import Glibc
import SessionCleanup

/// `session-cleanup list [--json]`: the caller's sessions (root: everyone's). Keys never appear:
/// the protocol does not carry them back.
enum ListVerb {
    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("list takes no arguments") }
        guard let response = try ControlVerbSupport.perform(.list, options) else { return .refused }
        let sessions = response.sessions ?? []
        if options.flags.contains("--json") {
            print(ControlVerbSupport.jsonText(sessions))
            return .success
        }
        guard !sessions.isEmpty else {
            print("No sessions registered.")
            return .success
        }
        var rows = [["ID", "LABEL", "ENDPOINTS", "OWNER", "AGE"]]
        for session in sessions {
            rows.append([
                session.id, session.label ?? "-", session.endpoints.joined(separator: ","), userName(session.ownerUID),
                age(session.ageSeconds),
            ])
        }
        var widths = [Int](repeating: 0, count: 5)
        for row in rows { for (column, cell) in row.enumerated() { widths[column] = max(widths[column], cell.count) } }
        for row in rows {
            var line = ""
            for (column, cell) in row.enumerated() {
                line +=
                    column == row.count - 1
                    ? cell : cell + String(repeating: " ", count: widths[column] - cell.count + 2)
            }
            print(line)
        }
        return .success
    }

    /// `alice`, or the number when the uid has no name here.
    static func userName(_ uid: UInt32) -> String {
        AccountLookup.userName(uid_t(uid)) ?? String(uid)
    }

    /// `42s`, `17m`, `5h`, `3d`.
    static func age(_ seconds: UInt64) -> String {
        switch seconds {
        case ..<60: return "\(seconds)s"
        case ..<3600: return "\(seconds / 60)m"
        case ..<86400: return "\(seconds / 3600)h"
        default: return "\(seconds / 86400)d"
        }
    }
}
