/// The session-cleanup domain library.
public enum SessionCleanupVersion { public static let string = "0.1.0" }
