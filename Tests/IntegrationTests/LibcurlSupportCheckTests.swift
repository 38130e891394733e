import CCurl
import Foundation
import XCTest

@testable import Configuration
@testable import Daemon
@testable import HTTPEngine
@testable import Vocabulary

/// h2c (`HTTPVersion=2` over `http://`) on a libcurl older than 8.0 ends one call per connection
/// (reproduced with Debian 12's curl 7.88.1 against nginx `listen … http2` without ssl: 1 of 20
/// answered, 19 "Error in the HTTP2 framing layer"): refused at `check-config`, at start and at
/// reload, naming the cause; the package suggests the libcurl that can.
final class LibcurlSupportCheckTests: XCTestCase {
    private func configuration(_ endpoints: [(String, String, HTTPRequest.Version)]) -> Configuration {
        var configuration = Configuration()
        configuration.endpoints = endpoints.map { name, url, version in
            var endpoint = EndpointConfiguration(name: name, url: url)
            endpoint.httpVersion = version
            return endpoint
        }
        return configuration
    }

    private let h2c = "[Endpoint]\nName=plain\nURL=http://127.0.0.1:9/user/{session}/end\nHTTPVersion=2\n"

    func testH2COnALibcurlBefore8IsRefusedNamingTheEndpointTheVersionAndTheWayOut() {
        let config = configuration([("plain", "http://127.0.0.1:9/{session}", .http2)])
        let old = LibcurlVersion(number: 0x07_58_01)
        XCTAssertEqual(old.description, "7.88.1")
        XCTAssertThrowsError(try LibcurlSupportCheck.check(config) { () throws(HTTPEngineError) in old }) { error in
            let text = "\(error)"
            XCTAssertTrue(text.contains("[Endpoint] plain HTTPVersion=2 over http:// (h2c)"), text)
            XCTAssertTrue(text.contains("libcurl 7.88.1"), text)
            XCTAssertTrue(text.contains("libcurl 8.0.0 or newer"), text)
        }
        XCTAssertNoThrow(
            try LibcurlSupportCheck.check(config) { () throws(HTTPEngineError) in
                LibcurlVersion(major: 8, minor: 0, patch: 0)
            })
    }

    func testOnlyH2CAsksWhichLibcurlRuns() throws {
        let config = configuration([
            ("tls", "https://127.0.0.1:9/{session}", .http2), ("auto", "http://127.0.0.1:9/{session}", .automatic),
            ("one", "HTTP://127.0.0.1:9/{session}", .http1_1),
        ])
        XCTAssertEqual(LibcurlSupportCheck.h2cEndpoints(of: config), [])
        try LibcurlSupportCheck.check(config) { () throws(HTTPEngineError) in
            XCTFail("libcurl's version was asked without an h2c endpoint")
            return LibcurlVersion(number: 0)
        }
        XCTAssertEqual(
            LibcurlSupportCheck.h2cEndpoints(of: configuration([("x", "HTTP://h:8080/{session}", .http2)])), ["x"])
    }

    func testALibcurlThatCannotBeLoadedIsACheckProblemNotASilentPass() {
        let config = configuration([("plain", "http://127.0.0.1:9/{session}", .http2)])
        XCTAssertThrowsError(
            try LibcurlSupportCheck.check(config) { () throws(HTTPEngineError) in
                throw HTTPEngineError("load libcurl.so.4", detail: "not found")
            }
        ) { error in
            XCTAssertTrue("\(error)".contains("cannot tell whether libcurl can: "), "\(error)")
        }
    }

    func testTheRuntimeVersionIsTheLoadedLibrarys() throws {
        // Built and run on the same host here: the headers' version is the library's.
        XCTAssertEqual(try LibcurlRuntime.version(), LibcurlVersion(number: UInt32(LIBCURL_VERSION_NUM)))
    }

    func testCheckConfigAndTheDaemonsLoadRefuseH2CExactlyWhenThisHostsLibcurlIsOlderThan8() throws {
        let refused = try LibcurlRuntime.version() < LibcurlRuntime.h2cMinimum
        let scratch = try ScratchDirectory("h2c")
        let file = try scratch.write("session-cleanup.conf", h2c)
        for extra in [[], ["--no-host-checks"]] {
            let result = try BuiltBinary.run(["check-config", "--config", file] + extra)
            XCTAssertEqual(result.status, refused ? 78 : 0, result.err)
            XCTAssertEqual(result.err.contains("(h2c): libcurl "), refused, result.err)
        }
        let paths = DaemonPaths.resolve(configOption: file) { _ in nil }
        XCTAssertEqual((try? DaemonConfigurationLoader.load(paths)) == nil, refused)
    }

    func testThePackageSuggestsTheLibcurlThatCanDoH2C() throws {
        var root = URL(fileURLWithPath: #filePath)
        while root.path != "/" && !FileManager.default.fileExists(atPath: root.path + "/Package.swift") {
            root.deleteLastPathComponent()
        }
        let control = try String(contentsOfFile: root.path + "/debian/control", encoding: .utf8)
        XCTAssertTrue(control.contains("Suggests: libcurl4 (>= \(LibcurlRuntime.h2cMinimum))"), control)
    }
}
