import Foundation
import XCTest

/// `ClientCertificateCredential=` and `ClientKeyCredential=` end to end: nginx requires a client
/// certificate signed by the test CA; the daemon reads the certificate and key from its
/// credentials directory and hands them to libcurl from memory. Without them the same server
/// refuses every call (400), so the certificate is what ends the sessions.
final class MutualTLSTests: XCTestCase {
    /// The daemon's outcomes (session id → outcome), stderr, its scratch files and nginx's log.
    private func endThree(
        _ ca: TestCertificateAuthority, credentials files: [String: String], endpointKeys: String, http2: Bool = false
    ) throws -> (outcomes: [String], status: Int32?, stderr: String, files: [String], log: [NginxServer.Request]) {
        let server = try NginxServer(mode: http2 ? .http2 : .https, certificate: ca.server, clientCA: ca.caFile)
        let credentials = try ScratchDirectory("mtls-credentials")
        for (name, source) in files {
            let file = try credentials.write(name, try String(contentsOfFile: source, encoding: .utf8))
            chmod(file, 0o600)
        }
        let config =
            "[Stop]\nBudgetSec=8s\nMaxAttempts=1\n[Endpoint]\nName=mtls\nURL=\(server.base)/end/{session}\n"
            + "Success=2xx\nCAFile=\(ca.caFile)\n" + endpointKeys
        let daemon = try DaemonProcess(config: config, environment: ["CREDENTIALS_DIRECTORY": credentials.path])
        XCTAssertNotNil(daemon.waitUntilReady(), daemon.stderr)
        var ids: [String] = []
        for index in 0..<3 {
            let registered = try BuiltBinary.run(
                ["register", "--socket", daemon.socketPath, "--endpoint", "mtls"], stdin: "session-\(index)\n")
            XCTAssertEqual(registered.status, 0, registered.err)
            ids.append(registered.out.trimmingCharacters(in: .whitespacesAndNewlines))
        }
        daemon.signal(SIGTERM)
        let status = daemon.waitForExit(timeout: 15)
        let outcomes = JournalLines.callOutcomes(daemon.stderr)
        var texts: [String] = []
        let enumerator = FileManager.default.enumerator(atPath: daemon.scratch.path)
        while let name = enumerator?.nextObject() as? String {
            let path = daemon.scratch.path + "/" + name
            let type = try FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType
            guard type == .typeRegular else { continue }  // the notify and control sockets
            texts.append(String(decoding: try Data(contentsOf: URL(fileURLWithPath: path)), as: UTF8.self))
        }
        return (
            ids.map { outcomes["\($0)/mtls"]?["OUTCOME"] ?? "none" }, status, daemon.stderr, texts,
            server.requests(atLeast: 3)
        )
    }

    private let keys = "ClientCertificateCredential=mtls-cert\nClientKeyCredential=mtls-key\n"

    func testTheClientCertificateFromCredentialsEndsSessionsAtAServerThatRequiresOne() throws {
        let ca = try TestCertificateAuthority()
        let result = try endThree(
            ca, credentials: ["mtls-cert": ca.client.pem, "mtls-key": ca.client.key], endpointKeys: keys)
        XCTAssertEqual(result.outcomes, ["ended", "ended", "ended"], result.stderr)
        XCTAssertEqual(result.status, 0, result.stderr)
        XCTAssertEqual(result.log.map(\.client), ["SUCCESS", "SUCCESS", "SUCCESS"], "nginx verified the certificate")
        // The key reaches libcurl from memory: no file the daemon or the test wrote holds it.
        let key = try String(contentsOfFile: ca.client.key, encoding: .utf8)
        let body = key.split(separator: "\n").dropFirst().first.map(String.init) ?? key
        for text in result.files + [result.stderr] { XCTAssertFalse(text.contains(body), "the key is in an output") }
    }

    func testOverHTTP2TheCertificateIsPresentedToo() throws {
        let ca = try TestCertificateAuthority()
        let result = try endThree(
            ca, credentials: ["mtls-cert": ca.client.pem, "mtls-key": ca.client.key], endpointKeys: keys, http2: true)
        XCTAssertEqual(result.outcomes, ["ended", "ended", "ended"], result.stderr)
        XCTAssertEqual(Set(result.log.map(\.client)), ["SUCCESS"])
    }

    func testWithoutTheCertificateTheSameServerRefusesEveryCall() throws {
        let result = try endThree(try TestCertificateAuthority(), credentials: [:], endpointKeys: "")
        XCTAssertEqual(result.outcomes, ["rejected", "rejected", "rejected"], result.stderr)
        XCTAssertEqual(result.log.map(\.status), [400, 400, 400])
        XCTAssertEqual(result.status, 75, "the sessions are kept")
    }

    func testACertificateOfAnotherCAIsRefusedByTheServer() throws {
        // untrusted.pem is self-signed: nginx cannot verify it against its client CA.
        let ca = try TestCertificateAuthority()
        let result = try endThree(
            ca, credentials: ["mtls-cert": ca.untrusted.pem, "mtls-key": ca.untrusted.key], endpointKeys: keys)
        XCTAssertEqual(result.outcomes, ["rejected", "rejected", "rejected"], result.stderr)
        XCTAssertTrue(result.log.allSatisfy { $0.client.hasPrefix("FAILED") }, "\(result.log.map(\.client))")
    }

    /// Two endpoints on one origin, one with the certificate and one without: a connection or TLS
    /// session made with the certificate must not carry the other endpoint's calls (nor the reverse).
    func testAConnectionWithTheCertificateIsNotReusedForAnEndpointWithout() throws {
        let ca = try TestCertificateAuthority()
        let server = try NginxServer(mode: .https, certificate: ca.server, clientCA: ca.caFile)
        let credentials = try ScratchDirectory("mtls-credentials")
        _ = try credentials.write("mtls-cert", try String(contentsOfFile: ca.client.pem, encoding: .utf8))
        _ = try credentials.write("mtls-key", try String(contentsOfFile: ca.client.key, encoding: .utf8))
        let endpoint = "URL=\(server.base)/{session}\nSuccess=2xx\nCAFile=\(ca.caFile)\n"
        let config =
            "[Stop]\nBudgetSec=8s\nMaxAttempts=1\nMaxConcurrentRequests=1\n"
            + "[Endpoint]\nName=with\n\(endpoint)\(keys)[Endpoint]\nName=without\n\(endpoint)"
        let daemon = try DaemonProcess(config: config, environment: ["CREDENTIALS_DIRECTORY": credentials.path])
        XCTAssertNotNil(daemon.waitUntilReady(), daemon.stderr)
        var ids: [String: String] = [:]
        for index in 0..<8 {
            let name = index % 2 == 0 ? "with" : "without"
            let registered = try BuiltBinary.run(
                ["register", "--socket", daemon.socketPath, "--endpoint", name], stdin: "\(name)-\(index)\n")
            XCTAssertEqual(registered.status, 0, registered.err)
            ids[registered.out.trimmingCharacters(in: .whitespacesAndNewlines)] = name
        }
        daemon.signal(SIGTERM)
        XCTAssertEqual(daemon.waitForExit(timeout: 15), 75, daemon.stderr)
        let outcomes = JournalLines.callOutcomes(daemon.stderr)
        for (id, name) in ids {
            XCTAssertEqual(
                outcomes["\(id)/\(name)"]?["OUTCOME"], name == "with" ? "ended" : "rejected",
                "\(name): \(daemon.stderr)")
        }
        let log = server.requests(atLeast: 8)
        XCTAssertEqual(log.filter { $0.client == "SUCCESS" }.count, 4, "\(log.map(\.client))")
        XCTAssertEqual(log.filter { $0.status == 400 }.count, 4, "\(log.map(\.status))")
    }

    func testAKeyThatIsNotPEMFailsTheStartNamingTheCredentialNotItsContents() throws {
        let ca = try TestCertificateAuthority()
        let credentials = try ScratchDirectory("mtls-credentials")
        _ = try credentials.write("mtls-cert", try String(contentsOfFile: ca.client.pem, encoding: .utf8))
        _ = try credentials.write("mtls-key", "s3cret-not-a-key\n")
        let config = "[Endpoint]\nName=mtls\nURL=https://127.0.0.1:9/{session}\n" + keys
        let daemon = try DaemonProcess(config: config, environment: ["CREDENTIALS_DIRECTORY": credentials.path])
        XCTAssertEqual(daemon.waitForExit(timeout: 10), 78, daemon.stderr)
        XCTAssertTrue(
            daemon.stderr.contains("ClientKeyCredential=mtls-key:")
                && daemon.stderr.contains("credential 'mtls-key' is not a PEM private key"), daemon.stderr)
        XCTAssertFalse(daemon.stderr.contains("s3cret"), daemon.stderr)
    }
}
