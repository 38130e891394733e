import Basics

/// Reads bearer tokens from systemd credentials (`LoadCredential=NAME:…` → `$CREDENTIALS_DIRECTORY/NAME`).
package enum CredentialReader {
    /// The token in credential `name`, without a trailing newline. Errors name the credential,
    /// never its contents.
    package static func token(named name: String, in directory: String?) throws(ConfigurationError) -> String {
        guard let directory else {
            throw ConfigurationError(
                file: "", line: 0,
                "credential '\(name)' is needed but $CREDENTIALS_DIRECTORY is unset (add LoadCredential=\(name):PATH to the unit)"
            )
        }
        let path = directory + "/" + name
        do {
            let bytes = try FileReading.contents(of: path, limit: 64 * 1024)
            // Bytes, not Characters: "\r\n" is one Character, which neither "\r" nor "\n" matches.
            var line = bytes[...]
            while let last = line.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: "\r") { line.removeLast() }
            guard !line.isEmpty, !line.contains(UInt8(ascii: "\n")), !line.contains(UInt8(ascii: "\r")) else {
                throw ConfigurationError(file: path, line: 0, "credential '\(name)' must hold one non-empty line")
            }
            return String(decoding: line, as: UTF8.self)
        } catch let error as SystemCallError {
            throw ConfigurationError(file: path, line: 0, "cannot read credential '\(name)': \(error)")
        } catch let error as ConfigurationError {
            throw error
        } catch {
            throw ConfigurationError(file: path, line: 0, "cannot read credential '\(name)'")
        }
    }

    /// What the unit's `SetCredential=` hands over when the file of a `LoadCredentialEncrypted=`
    /// of the same name is missing (systemd then uses it instead of failing the unit, so the daemon
    /// can say what is wrong).
    package static let missingFileStandIn = "store-key-file-missing"

    /// The key in credential `name`: exactly `byteCount` raw bytes (the store's key:
    /// `[Store] KeyCredential=`). Errors name the credential's file and what was wrong with it —
    /// its size, never its bytes.
    package static func key(named name: String, in directory: String?, byteCount: Int) throws(ConfigurationError)
        -> [UInt8]
    {
        guard let directory else {
            throw ConfigurationError(
                file: "", line: 0,
                "credential '\(name)' is needed but $CREDENTIALS_DIRECTORY is unset (add "
                    + "LoadCredentialEncrypted=\(name):PATH to the unit)")
        }
        let path = directory + "/" + name
        let bytes: [UInt8]
        do {
            bytes = try FileReading.contents(of: path, limit: 4096)
        } catch {
            throw ConfigurationError(file: path, line: 0, "cannot read credential '\(name)': \(error)")
        }
        guard !bytes.isEmpty, bytes != Array(missingFileStandIn.utf8) else {
            throw ConfigurationError(
                file: path, line: 0,
                "credential '\(name)' is \(bytes.isEmpty ? "empty" : "the unit's stand-in for a missing file"): "
                    + "the file the unit's LoadCredentialEncrypted=\(name): names is missing; create it as "
                    + "session-cleanup.conf(5) says under [Store]")
        }
        guard bytes.count == byteCount else {
            throw ConfigurationError(
                file: path, line: 0,
                "credential '\(name)' must hold exactly \(byteCount) random bytes (it holds \(bytes.count)); make one with: head -c \(byteCount) /dev/urandom"
            )
        }
        return bytes
    }

    /// The PEM text in credential `name` (mutual TLS): a certificate chain (`.certificate`) or an
    /// unencrypted private key (`.privateKey`). Errors name the credential, never its contents.
    package static func pem(named name: String, in directory: String?, holding kind: PEMKind)
        throws(ConfigurationError) -> String
    {
        guard let directory else {
            throw ConfigurationError(
                file: "", line: 0,
                "credential '\(name)' is needed but $CREDENTIALS_DIRECTORY is unset (add LoadCredential=\(name):PATH to the unit)"
            )
        }
        let path = directory + "/" + name
        let bytes: [UInt8]
        do {
            bytes = try FileReading.contents(of: path, limit: 256 * 1024)
        } catch {
            throw ConfigurationError(file: path, line: 0, "cannot read credential '\(name)': \(error)")
        }
        if let problem = kind.problem(in: bytes) {
            throw ConfigurationError(file: path, line: 0, "credential '\(name)' \(problem)")
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// What a PEM credential holds.
    package enum PEMKind: Sendable {
        /// `-----BEGIN CERTIFICATE-----` blocks: the client certificate, then any intermediates.
        case certificate
        /// One unencrypted private key (`PRIVATE KEY`, `EC PRIVATE KEY`, `RSA PRIVATE KEY`).
        case privateKey

        /// Why `bytes` is not such PEM, or nil (never quoting them).
        func problem(in bytes: [UInt8]) -> String? {
            switch self {
            case .certificate:
                return PEMCertificates.problem(in: bytes).map { "is not a PEM client certificate: \($0)" }
            case .privateKey:
                guard let text = String(validating: bytes, as: UTF8.self) else {
                    return "is not a PEM private key (not text: is it DER? convert it to PEM)"
                }
                if text.containsText("-----BEGIN ENCRYPTED PRIVATE KEY-----")
                    || text.containsText("Proc-Type: 4,ENCRYPTED")
                {
                    return "holds an encrypted private key: the daemon has no passphrase to give; "
                        + "protect it with LoadCredentialEncrypted= (systemd-creds) instead"
                }
                let begin = [
                    "-----BEGIN PRIVATE KEY-----", "-----BEGIN EC PRIVATE KEY-----", "-----BEGIN RSA PRIVATE KEY-----",
                ]
                guard begin.contains(where: { text.containsText($0) }),
                    text.containsText("PRIVATE KEY-----\n")
                        || text.hasSuffix("PRIVATE KEY-----")
                else { return "is not a PEM private key (expected -----BEGIN PRIVATE KEY-----)" }
                return nil
            }
        }
    }
}
