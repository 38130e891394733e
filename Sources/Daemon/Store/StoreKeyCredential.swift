import Configuration
import Sessions

/// The store's key from the credential `[Store] KeyCredential=` names (`$CREDENTIALS_DIRECTORY/NAME`,
/// normally `LoadCredentialEncrypted=store-key:…`): exactly 32 random bytes, which seal the
/// session keys in the store's files. Checked like every credential at start, reload and
/// `check-config`; read once, at start, for the store.
package enum StoreKeyCredential {
    /// How each problem with the key credential begins (``DaemonConfigurationLoader/isStoreKeyProblem(_:)``).
    static let problemPrefix = "[Store] KeyCredential="

    /// The key, or nil when `KeyCredential=` is unset (keys stored in clear). Throws, naming the
    /// credential's file and what is wrong (never its bytes), when it cannot be read or is not
    /// exactly 32 bytes.
    package static func load(_ settings: StoreSettings, from directory: String?) throws(ConfigurationError)
        -> StoreKey?
    {
        guard let name = settings.keyCredential else { return nil }
        do throws(ConfigurationError) {
            let bytes = try CredentialReader.key(named: name, in: directory, byteCount: StoreKey.byteCount)
            guard let key = StoreKey(bytes: bytes) else {
                throw ConfigurationError(file: "", line: 0, "credential '\(name)' is not a store key")
            }
            return key
        } catch {
            throw ConfigurationError(
                error.problems.map {
                    ConfigurationProblem(
                        file: "", line: 0,
                        "\(problemPrefix)\(name): \($0) — the daemon does not start without it (the store's keys "
                            + "are sealed with it)")
                })
        }
    }

    /// What is wrong with the key credential `settings` names, or nil (also when none is named).
    static func problem(of settings: StoreSettings, in directory: String?) -> ConfigurationProblem? {
        do {
            _ = try load(settings, from: directory)
            return nil
        } catch {
            return error.problems.first
        }
    }
}
