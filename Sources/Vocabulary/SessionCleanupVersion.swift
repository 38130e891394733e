import CVersion

/// The version printed by `session-cleanup --version`.
package enum SessionCleanupVersion {
    /// The source's version.
    package static let source = "0.1.0"

    /// Semantic version of this build: the source's, or the one a package was built with
    /// (`scripts/package.sh --version V`), so that the binary and its package agree.
    package static let string: String = {
        let override = String(cString: cversion_override())
        return override.isEmpty ? source : override
    }()
}
