import Configuration

/// The configuration as the daemon loads it, at start and at every reload: the files (with
/// ``ConfigurationLoader``), what the runtime libcurl cannot do (``LibcurlSupportCheck``), then
/// what only the daemon, inside its unit, can check — that every `TokenCredential=`,
/// `ClientCredential=` and `ProxyCredential=` is in `$CREDENTIALS_DIRECTORY`. A credential the unit does not load would
/// otherwise fail every call to that endpoint, at shutdown, when nothing can be fixed. And that
/// `[Store] KeyCredential=` is there and holds a key: without it the store could not be read
/// (or would be written in clear), so that problem never falls back to the last good configuration.
package enum DaemonConfigurationLoader {
    /// Loads and checks; throws the first problem of the files, or every missing credential.
    package static func load(_ paths: DaemonPaths) throws(ConfigurationError) -> (Configuration, [String]) {
        let (configuration, files) = try ConfigurationLoader.load(
            path: paths.configFile, required: paths.configRequired)
        try checkCredentials(of: configuration, in: paths.credentialsDirectory)
        try LibcurlSupportCheck.check(configuration)
        return (configuration, files)
    }

    /// Throws when a `TokenCredential=`, `ClientCredential=`, `ProxyCredential=`,
    /// `ClientCertificateCredential=` or `ClientKeyCredential=` cannot be read from
    /// `directory` (or a proxy credential is not `user:password`, a client credential not `id:secret`, a
    /// certificate or key not PEM), naming each such credential and the endpoints
    /// that use it (never its value).
    package static func checkCredentials(of configuration: Configuration, in directory: String?)
        throws(ConfigurationError)
    {
        var problems: [String] = []
        var seen: Set<String> = []
        let kinds: [(key: String, name: (EndpointConfiguration) -> String?)] = [
            ("TokenCredential", \.tokenCredential), ("ProxyCredential", \.proxyCredential),
            ("ClientCredential", \.clientCredential), ("ClientCertificateCredential", \.clientCertificateCredential),
            ("ClientKeyCredential", \.clientKeyCredential),
        ]
        let pemKinds: [String: CredentialReader.PEMKind] = [
            "ClientCertificateCredential": .certificate, "ClientKeyCredential": .privateKey,
        ]
        for (key, name) in kinds {
            for endpoint in configuration.endpoints {
                guard let credential = name(endpoint), seen.insert(key + credential).inserted else { continue }
                do {
                    if let kind = pemKinds[key] {
                        _ = try CredentialReader.pem(named: credential, in: directory, holding: kind)
                        continue
                    }
                    let text = try CredentialReader.token(named: credential, in: directory)
                    if key == "ProxyCredential", !text.dropFirst().contains(":") {
                        throw ConfigurationError(
                            file: "", line: 0, "credential '\(credential)' must hold user:password")
                    }
                    if key == "ClientCredential", ClientCredential(text) == nil {
                        throw ConfigurationError(
                            file: "", line: 0, "credential '\(credential)' must hold \(ClientCredential.expected)")
                    }
                } catch {
                    let users = configuration.endpoints.filter { name($0) == credential }.map(\.name)
                    problems.append("[Endpoint] \(users.joined(separator: ", ")) \(key)=\(credential): \(error)")
                }
            }
        }
        var found = problems.isEmpty ? [] : [ConfigurationProblem(file: "", line: 0, problems.joined(separator: "; "))]
        if let problem = StoreKeyCredential.problem(of: configuration.store, in: directory) { found.append(problem) }
        guard !found.isEmpty else { return }
        throw ConfigurationError(found)
    }

    /// Whether `error` says the store's key credential is missing or malformed: the daemon then
    /// refuses to start rather than run on the last good configuration (which might store keys
    /// in clear, or not read a sealed store).
    package static func isStoreKeyProblem(_ error: ConfigurationError) -> Bool {
        error.problems.contains { $0.message.hasPrefix(StoreKeyCredential.problemPrefix) }
    }
}
