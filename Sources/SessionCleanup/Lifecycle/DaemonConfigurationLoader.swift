/// The configuration as the daemon loads it, at start and at every reload: the files (with
/// ``ConfigurationLoader``), then what only the daemon, inside its unit, can check — that every
/// `TokenCredential=` is in `$CREDENTIALS_DIRECTORY`. A credential the unit does not load would
/// otherwise fail every call to that endpoint, at shutdown, when nothing can be fixed.
public enum DaemonConfigurationLoader {
    /// Loads and checks; throws the first problem of the files, or every missing credential.
    public static func load(_ paths: DaemonPaths) throws(ConfigurationError) -> (Configuration, [String]) {
        let (configuration, files) = try ConfigurationLoader.load(
            path: paths.configFile, required: paths.configRequired)
        try checkCredentials(of: configuration, in: paths.credentialsDirectory)
        return (configuration, files)
    }

    /// Throws when a `TokenCredential=` cannot be read from `directory`, naming each such credential
    /// and the endpoints that use it (never a token's value).
    public static func checkCredentials(of configuration: Configuration, in directory: String?)
        throws(ConfigurationError)
    {
        var problems: [String] = []
        var seen: Set<String> = []
        for endpoint in configuration.endpoints {
            guard let credential = endpoint.tokenCredential, seen.insert(credential).inserted else { continue }
            do {
                _ = try CredentialReader.token(named: credential, in: directory)
            } catch {
                let users = configuration.endpoints.filter { $0.tokenCredential == credential }.map(\.name)
                problems.append("[Endpoint] \(users.joined(separator: ", ")) TokenCredential=\(credential): \(error)")
            }
        }
        guard !problems.isEmpty else { return }
        throw ConfigurationError(file: "", line: 0, problems.joined(separator: "; "))
    }
}
