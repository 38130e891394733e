import Basics
import Daemon
import JSON

/// `session-cleanup status [--json]`: the daemon's state and its last stop run.
enum StatusVerb: Verb {
    static let description = VerbDescription(
        name: "status", summary: "the daemon's state, sessions and last stop run",
        options: [.json("the status")],
        isClient: true,
        details: "Durations are shown in human units and times in local time; --json keeps the exact numbers "
            + "(microseconds). Non-root users see the count of their own sessions only.",
        exitStatus: "0 the daemon answered; 3 it is stopped (systemd says so; the last stop run is read from the "
            + "state directory, nothing is started); 1 it refused or could not be reached.",
        examples: ["session-cleanup status", "session-cleanup --user status --json"])

    static func run(_ options: Options) throws -> ExitStatus {
        guard options.positional.isEmpty else { throw UsageError("status takes no arguments") }
        if let stopped = StoppedDaemon.find(options, target: DaemonTarget(options, verb: "status"), verb: "status") {
            return stoppedStatus(stopped, options)
        }
        guard let response = try ControlVerbSupport.perform(.status, options, verb: "status") else {
            return .refused
        }
        let status = response.status ?? .object([:])
        if options.has("--json") {
            print(ControlVerbSupport.jsonText(status))
        } else {
            for line in HumanReadable.lines(status) { print(line) }
        }
        return .success
    }

    /// The status of a stopped daemon, from its state directory: exits 3, as `systemctl status` does.
    private static func stoppedStatus(_ stopped: StoppedDaemon, _ options: Options) -> ExitStatus {
        var object: [String: JSONValue] = [
            "state": "stopped", "service": .string(stopped.activity.serviceState),
            "socket": .string(stopped.activity.socketState),
        ]
        var unreadable: String?
        do {
            if let facts = try StoppedDaemonDocuments.lastStopFacts(in: stopped.stateDirectory) {
                object["last_stop_run"] = facts
            }
        } catch {
            unreadable = "\(error)"
        }
        if options.has("--json") {
            if let unreadable { object["state_directory_error"] = .string(unreadable) }
            print(ControlVerbSupport.jsonText(JSONValue.object(object)))
            return .notRunning
        }
        print(stopped.sentence + "; nothing was started to answer.")
        for line in HumanReadable.lines(.object(object)) { print(line) }
        if let unreadable {
            print("The last stop run is not shown: \(unreadable) (root and the service's user can read it).")
        }
        print("")
        for line in stopped.advice { print(line) }
        return .notRunning
    }
}
