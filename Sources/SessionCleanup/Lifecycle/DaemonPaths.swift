import Glibc

/// Where the daemon finds its configuration and keeps its state and socket.
///
/// Under systemd, `StateDirectory=` and `RuntimeDirectory=` set `$STATE_DIRECTORY` and
/// `$RUNTIME_DIRECTORY`; started by hand, the defaults are `/var/lib/session-cleanup` and
/// `/run/session-cleanup` for root, and `$XDG_STATE_HOME/session-cleanup` (or
/// `~/.local/state/session-cleanup`) and `$XDG_RUNTIME_DIR/session-cleanup` (or
/// `/tmp/session-cleanup-UID`) for anyone else, so tests and users need no root.
public struct DaemonPaths: Sendable, Equatable {
    /// The main configuration file.
    public var configFile: String
    /// Whether a missing configuration file is an error (it was named with `--config`).
    public var configRequired: Bool
    /// The session store's directory.
    public var stateDirectory: String
    /// The control socket's directory.
    public var runtimeDirectory: String
    /// `$CREDENTIALS_DIRECTORY` (systemd's `LoadCredential=`), if set.
    public var credentialsDirectory: String?

    /// The control socket.
    public var controlSocket: String { runtimeDirectory + "/control.sock" }

    /// Creates paths explicitly.
    public init(
        configFile: String, configRequired: Bool, stateDirectory: String, runtimeDirectory: String,
        credentialsDirectory: String?
    ) {
        self.configFile = configFile
        self.configRequired = configRequired
        self.stateDirectory = stateDirectory
        self.runtimeDirectory = runtimeDirectory
        self.credentialsDirectory = credentialsDirectory
    }

    /// Resolves the paths from the environment, as described above.
    public static func resolve(configOption: String?, environment: (String) -> String? = Self.getEnvironment)
        -> DaemonPaths
    {
        let uid = getuid()
        // systemd passes colon-separated lists when a unit names several directories.
        func first(_ name: String) -> String? {
            guard let value = environment(name), !value.isEmpty else { return nil }
            return String(value.split(separator: ":").first ?? Substring(value))
        }
        let home = environment("HOME") ?? "/tmp"
        let state =
            first("STATE_DIRECTORY")
            ?? (uid == 0
                ? "/var/lib/session-cleanup"
                : (first("XDG_STATE_HOME") ?? home + "/.local/state") + "/session-cleanup")
        let runtime =
            first("RUNTIME_DIRECTORY")
            ?? (uid == 0
                ? "/run/session-cleanup"
                : first("XDG_RUNTIME_DIR").map { $0 + "/session-cleanup" } ?? "/tmp/session-cleanup-\(uid)")
        return DaemonPaths(
            configFile: configOption ?? Configuration.defaultPath, configRequired: configOption != nil,
            stateDirectory: state, runtimeDirectory: runtime, credentialsDirectory: first("CREDENTIALS_DIRECTORY"))
    }

    /// Reads one variable of this process's environment.
    public static func getEnvironment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Creates `path` and its missing parents with mode 0700 (existing ones are left as they are).
    public static func makeDirectory(_ path: String) throws(SystemCallError) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o700) != 0 && errno != EEXIST {
                throw SystemCallError.current("mkdir", current)
            }
        }
    }
}
