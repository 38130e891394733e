/// The version printed by `session-cleanup --version`.
public enum SessionCleanupVersion {
    /// Semantic version of this build.
    public static let string = "0.1.0"
}
