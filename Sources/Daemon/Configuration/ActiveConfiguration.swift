import Configuration

/// The configuration in force, the files it came from, and how a reload replaces it: as a
/// whole, and only with a configuration that loaded without error (a broken file keeps the old
/// one). Shared by the parts of the daemon that read settings; they read ``current`` when they
/// need it, so a reload reaches each of them at once.
final class ActiveConfiguration {
    /// What a successful reload changed.
    struct Change {
        /// Whether `[Control] SocketMode=` or `SocketGroup=` changed: they apply only when the
        /// daemon creates its socket, at start.
        let controlSocketChanged: Bool
    }

    /// The configuration in force.
    private(set) var current: Configuration
    /// The files it was read from, in order.
    private(set) var files: [String]
    /// Why the daemon runs on the last good configuration (the files' error at start), until a
    /// reload loads the files; nil when it runs on the files.
    private(set) var fallbackCause: String?

    /// Starts with a configuration already loaded from `files`; `fallbackCause`: the files'
    /// error when it is the last good configuration instead.
    init(_ configuration: Configuration, files: [String], fallbackCause: String? = nil) {
        current = configuration
        self.files = files
        self.fallbackCause = fallbackCause
    }

    /// Loads the configuration again (files and credentials); on success it is in force.
    func reload(_ paths: DaemonPaths) throws(ConfigurationError) -> Change {
        let (loaded, loadedFiles) = try DaemonConfigurationLoader.load(paths)
        let previous = current
        let socketChanged =
            loaded.control.socketMode != previous.control.socketMode
            || loaded.control.socketGroup != previous.control.socketGroup
        current = loaded
        files = loadedFiles
        fallbackCause = nil
        return Change(controlSocketChanged: socketChanged)
    }
}
