import Basics
import Configuration
import Control
import Glibc

/// Where a daemon finds its configuration and keeps its state and socket: the system daemon's
/// paths, or a user's own daemon's (`systemctl --user`, `session-cleanup --user`).
///
/// | | system (`session-cleanup daemon`) | user (`session-cleanup --user daemon`) |
/// |---|---|---|
/// | configuration | `/etc/session-cleanup/session-cleanup.conf` | `$XDG_CONFIG_HOME/session-cleanup/session-cleanup.conf` (`~/.config/…`) |
/// | state | `$STATE_DIRECTORY`, else `/var/lib/session-cleanup` | `$STATE_DIRECTORY`, else `$XDG_STATE_HOME/session-cleanup` (`~/.local/state/…`) |
/// | runtime (socket) | `$RUNTIME_DIRECTORY`, else `/run/session-cleanup` | `$RUNTIME_DIRECTORY`, else `$XDG_RUNTIME_DIR/session-cleanup` (`/run/user/UID/…`, or `/tmp/session-cleanup-UID`) |
///
/// Which one is chosen on the command line, never guessed from the uid: the system service runs
/// as the unprivileged `session-cleanup` user.
package struct DaemonPaths: Sendable, Equatable {
    /// Which daemon the paths belong to.
    package enum Instance: String, Sendable, Equatable {
        /// The system service (`session-cleanup.service` under PID 1).
        case system
        /// One user's own daemon, under their user manager.
        case user
    }

    /// Whose daemon this is.
    package var instance: Instance
    /// The main configuration file.
    package var configFile: String
    /// Whether a missing configuration file is an error (it was named with `--config`).
    package var configRequired: Bool
    /// The session store's directory.
    package var stateDirectory: String
    /// The control socket's directory.
    package var runtimeDirectory: String
    /// `$CREDENTIALS_DIRECTORY` (systemd's `LoadCredential=`), if set.
    package var credentialsDirectory: String?

    /// The control socket.
    package var controlSocket: String { runtimeDirectory + "/control.sock" }

    /// The system daemon's default configuration file.
    package static let systemConfigFile = Configuration.defaultPath

    /// Creates paths explicitly.
    package init(
        instance: Instance = .system, configFile: String, configRequired: Bool, stateDirectory: String,
        runtimeDirectory: String, credentialsDirectory: String?
    ) {
        self.instance = instance
        self.configFile = configFile
        self.configRequired = configRequired
        self.stateDirectory = stateDirectory
        self.runtimeDirectory = runtimeDirectory
        self.credentialsDirectory = credentialsDirectory
    }

    /// Resolves `instance`'s paths from the environment, as the table above says.
    package static func resolve(
        _ instance: Instance = .system, configOption: String?, environment: (String) -> String? = Self.getEnvironment
    ) -> DaemonPaths {
        let configFile: String
        let state: String
        let runtime: String
        switch instance {
        case .system:
            configFile = systemConfigFile
            state = first("STATE_DIRECTORY", environment) ?? "/var/lib/session-cleanup"
            runtime = first("RUNTIME_DIRECTORY", environment) ?? "/run/session-cleanup"
        case .user:
            let home = homeDirectory(environment)
            configFile =
                (absolute("XDG_CONFIG_HOME", environment) ?? home + "/.config")
                + "/session-cleanup/session-cleanup.conf"
            state =
                first("STATE_DIRECTORY", environment)
                ?? (absolute("XDG_STATE_HOME", environment) ?? home + "/.local/state") + "/session-cleanup"
            runtime = first("RUNTIME_DIRECTORY", environment) ?? userRuntimeDirectory(environment)
        }
        return DaemonPaths(
            instance: instance, configFile: configOption ?? configFile, configRequired: configOption != nil,
            stateDirectory: state, runtimeDirectory: runtime,
            credentialsDirectory: first("CREDENTIALS_DIRECTORY", environment))
    }

    /// The socket a client of `instance` connects to: the daemon's ``controlSocket`` as its unit
    /// (or the socket unit) makes it. Clients have no `$RUNTIME_DIRECTORY`, so this is the default.
    package static func controlSocket(of instance: Instance, environment: (String) -> String? = Self.getEnvironment)
        -> String
    {
        switch instance {
        case .system: return ControlClient.defaultSocketPath
        case .user: return userRuntimeDirectory(environment) + "/control.sock"
        }
    }

    /// Reads one variable of this process's environment.
    package static func getEnvironment(_ name: String) -> String? {
        getenv(name).map { String(cString: $0) }
    }

    /// Creates `path` and its missing parents with mode 0700 (existing ones are left as they are).
    package static func makeDirectory(_ path: String) throws(SystemCallError) {
        var current = path.hasPrefix("/") ? "" : "."
        for component in path.split(separator: "/") {
            current += "/" + component
            if mkdir(current, 0o700) != 0 && errno != EEXIST {
                throw SystemCallError.current("mkdir", current)
            }
        }
    }

    // MARK: Private

    /// A variable's first path: systemd passes colon-separated lists when a unit names several.
    private static func first(_ name: String, _ environment: (String) -> String?) -> String? {
        guard let value = environment(name), !value.isEmpty else { return nil }
        return String(value.split(separator: ":").first ?? Substring(value))
    }

    /// An XDG base directory variable; the specification says a relative one is to be ignored.
    private static func absolute(_ name: String, _ environment: (String) -> String?) -> String? {
        guard let value = environment(name), value.hasPrefix("/") else { return nil }
        return value
    }

    /// `$XDG_RUNTIME_DIR/session-cleanup`; without it (`su`, `sudo -u`), the user manager's
    /// `/run/user/UID` if it exists, else `/tmp/session-cleanup-UID`.
    private static func userRuntimeDirectory(_ environment: (String) -> String?) -> String {
        if let base = absolute("XDG_RUNTIME_DIR", environment) { return base + "/session-cleanup" }
        let uid = getuid()
        var info = stat()
        if stat("/run/user/\(uid)", &info) == 0, info.st_uid == uid { return "/run/user/\(uid)/session-cleanup" }
        return "/tmp/session-cleanup-\(uid)"
    }

    /// `$HOME`, else the password database's home, else `/`.
    private static func homeDirectory(_ environment: (String) -> String?) -> String {
        absolute("HOME", environment) ?? AccountLookup.homeDirectory(getuid()) ?? "/"
    }
}
