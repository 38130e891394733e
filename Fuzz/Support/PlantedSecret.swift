/// The secret the targets plant in their inputs: seeds and dictionaries carry it, and no
/// message the daemon writes may ever contain it. Its `/`, `@` and `-` keep it from being a
/// valid configuration key, section, endpoint name or session id, so no rule may echo it.
package enum PlantedSecret {
    /// The text itself.
    package static let text = "Kq7/s3cr3t@Vx-9"
    /// Its UTF-8 bytes.
    package static let bytes = Array(text.utf8)
    /// A piece long enough that quoting part of the secret also counts as a leak.
    package static let core = "s3cr3t"

    /// Whether `message` leaks the secret, whole or its core.
    package static func leaks(into message: String) -> Bool {
        Fuzz.contains(message, text) || Fuzz.contains(message, core)
    }
}
