import XCTest

@testable import Configuration

/// One `[Endpoint]` section read by the configuration loader, for the unit tests of its keys:
/// `header` holds the lines every test of a class shares (Name=, URL=, …), `lines` the test's own.
enum EndpointSectionFixture {
    /// The section's endpoint as the loader reads it.
    static func endpoint(_ header: String, _ lines: String) throws -> EndpointConfiguration {
        let text = "[Endpoint]\n" + header + lines
        let configuration = try ConfigurationLoader.load(files: [("t.conf", Array(text.utf8))])
        return try XCTUnwrap(configuration.endpoints.first)
    }

    /// The loader's error for the section, or nil when it reads it.
    static func refusal(_ header: String, _ lines: String) -> String? {
        do {
            _ = try endpoint(header, lines)
            return nil
        } catch {
            return "\(error)"
        }
    }
}
