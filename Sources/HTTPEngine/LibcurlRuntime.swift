import CCurl

/// The libcurl this process loads at run time (not the headers it was built with): its version,
/// and the versions below which a transport it offers does not work.
package enum LibcurlRuntime {
    /// The first libcurl whose HTTP/2 with prior knowledge over `http://` (h2c) carries more than
    /// one call per connection: before 8.0 every stream after a connection's first fails with
    /// "Error in the HTTP2 framing layer" (Debian 12's 7.88.1 ends 1 call of 20 against nginx).
    /// The Debian package's `Suggests:` names the same version (debian/control).
    package static let h2cMinimum = LibcurlVersion(major: 8, minor: 0, patch: 0)

    /// The loaded libcurl's version, loading it (`dlopen`) if no engine has yet.
    ///
    /// - Throws: ``HTTPEngineError`` when `libcurl.so.4` cannot be loaded (naming it and why).
    package static func version() throws(HTTPEngineError) -> LibcurlVersion {
        guard ccurl_load() == 0 else {
            throw HTTPEngineError("load \(CCURL_LIBRARY)", detail: String(cString: ccurl_load_error()))
        }
        return LibcurlVersion(number: ccurl_runtime_version())
    }
}

/// A libcurl version, `major.minor.patch`, ordered as versions are.
package struct LibcurlVersion: Comparable, Sendable, CustomStringConvertible {
    /// The major version.
    package let major: Int
    /// The minor version.
    package let minor: Int
    /// The patch level.
    package let patch: Int

    /// Creates `major.minor.patch`.
    package init(major: Int, minor: Int, patch: Int) {
        (self.major, self.minor, self.patch) = (major, minor, patch)
    }

    /// The version in libcurl's `version_num` form, `0xXXYYZZ`.
    package init(number: UInt32) {
        self.init(major: Int(number >> 16 & 0xFF), minor: Int(number >> 8 & 0xFF), patch: Int(number & 0xFF))
    }

    /// `7.88.1`.
    package var description: String { "\(major).\(minor).\(patch)" }

    /// Orders by major, then minor, then patch.
    package static func < (lhs: LibcurlVersion, rhs: LibcurlVersion) -> Bool {
        (lhs.major, lhs.minor, lhs.patch) < (rhs.major, rhs.minor, rhs.patch)
    }
}
