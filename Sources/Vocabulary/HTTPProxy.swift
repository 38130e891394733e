/// A proxy an endpoint's requests go through (`Proxy=`, `NoProxy=`, `ProxyCredential=`).
///
/// The engine uses exactly this and nothing from the environment: a daemon's environment is its
/// unit's, and a proxy picked up by surprise at shutdown is worse than none. The password is a
/// secret: ``description`` and `dump` never show it.
package struct HTTPProxy: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
    /// `http://host:port`, `https://host:port` or `socks5h://host:port` (the proxy resolves host
    /// names), without a user name or password.
    package var url: String
    /// Hosts reached directly, as libcurl's `CURLOPT_NOPROXY` takes them: comma-separated names
    /// (a name also matches its subdomains), IP addresses, CIDR ranges, or `*` for all. Empty:
    /// every host goes through the proxy.
    package var noProxy: String
    /// The user name and password the proxy asks for (Basic, or what it offers), or nil.
    package var credential: Credential?

    /// A proxy user name and password, from a systemd credential. Never printed.
    package struct Credential: Sendable, Equatable, CustomStringConvertible, CustomReflectable {
        /// The user name.
        package var user: String
        /// The password. Secret.
        package var password: String

        /// Creates a credential.
        package init(user: String, password: String) {
            self.user = user
            self.password = password
        }

        /// `<proxy credential>`.
        package var description: String { "<proxy credential>" }

        /// Nothing: the user name and password stay out of `dump`.
        package var customMirror: Mirror { Mirror(self, children: [:]) }
    }

    /// Creates a proxy setting.
    package init(url: String, noProxy: String = "", credential: Credential? = nil) {
        self.url = url
        self.noProxy = noProxy
        self.credential = credential
    }

    /// `socks5h://proxy.example:1080 (with a credential)`: never the password.
    package var description: String { url + (credential == nil ? "" : " (with a credential)") }

    /// Shows only what ``description`` shows.
    package var customMirror: Mirror {
        Mirror(self, children: ["url": url, "noProxy": noProxy, "hasCredential": credential != nil])
    }
}
