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
}
