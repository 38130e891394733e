import Configuration
import HTTPEngine
import Vocabulary

/// What the runtime libcurl cannot do that the configuration asks for: `HTTPVersion=2` over
/// `http://` (h2c, HTTP/2 with prior knowledge) before libcurl 8.0, where it ends one call per
/// connection and fails every other one at every stop. Refused at `check-config`, at start
/// (exit 78) and at reload, rather than found out at the shutdown that needed it.
package enum LibcurlSupportCheck {
    /// The endpoints that ask for h2c: `HTTPVersion=2` with an `http://` URL.
    package static func h2cEndpoints(of configuration: Configuration) -> [String] {
        configuration.endpoints.filter { endpoint in
            endpoint.httpVersion == .http2 && HTTPOrigin(url: endpoint.url).map { !$0.isTLS } == true
        }.map(\.name)
    }

    /// Throws when an endpoint asks for h2c and `version` (the runtime libcurl's, read only then:
    /// nothing else loads libcurl before the first run) is older than
    /// ``LibcurlRuntime/h2cMinimum``, or cannot be read; names the endpoints, the version and the
    /// way out.
    package static func check(
        _ configuration: Configuration,
        version: () throws(HTTPEngineError) -> LibcurlVersion = LibcurlRuntime.version
    ) throws(ConfigurationError) {
        let names = h2cEndpoints(of: configuration)
        guard !names.isEmpty else { return }
        let subject = "[Endpoint] \(names.joined(separator: ", ")) HTTPVersion=2 over http:// (h2c)"
        let found: LibcurlVersion
        do {
            found = try version()
        } catch {
            throw ConfigurationError(file: "", line: 0, "\(subject): cannot tell whether libcurl can: \(error)")
        }
        let minimum = LibcurlRuntime.h2cMinimum
        guard found < minimum else { return }
        throw ConfigurationError(
            file: "", line: 0,
            "\(subject): libcurl \(found) ends only one call per connection this way and fails the others "
                + "(fixed in libcurl \(minimum)); use https://, or HTTPVersion=1.1 or auto, or install libcurl "
                + "\(minimum) or newer")
    }
}
