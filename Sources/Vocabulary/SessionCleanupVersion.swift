/// The version printed by `session-cleanup --version`.
package enum SessionCleanupVersion {
    /// Semantic version of this build.
    package static let string = "0.1.0"
}
