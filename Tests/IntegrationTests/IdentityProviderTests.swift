import Foundation
import XCTest

/// Sessions that are OAuth tokens, ended at real identity providers on loopback (issue 24):
/// django-oauth-toolkit and glewlwyd by RFC 7009 revocation with the client's `id:secret` from a
/// credential, Keystone by each token revoking itself. Each case mints 200 tokens at the
/// provider, registers them, stops the daemon and then asks the provider — not the daemon —
/// how many are still active; the daemon must also have reported every one ended, and neither
/// the client secret nor any token may appear in its output, its state directory or `report`.
///
/// The providers are set up once per test run by `scripts/test.sh` (`Tests/Providers/providers.py
/// up`), which names their `providers.json` in `SESSION_CLEANUP_PROVIDERS`; without it (a plain
/// `swift test`) these tests skip. Each prints its figures (`identity-provider: …`).
final class IdentityProviderTests: XCTestCase {
    private static let tokens = 200

    /// One provider's recipe: the endpoint's settings and the credential it needs, if any.
    private struct Recipe {
        let provider: String
        let endpoint: (_ provider: [String: Any]) throws -> String
        /// The client whose `credential_file` goes into `ClientCredential=`, or nil.
        let client: String?
        /// The status every revocation must get when it proves the token was valid until then
        /// (Keystone: 204; 401 for a token it does not know), checked instead of asking the
        /// provider beforehand; nil: RFC 7009 answers 200 either way, so the provider is asked.
        var revokedStatus: Int? = nil
        /// What `providers.py mint` makes: `access` or `refresh` tokens.
        var kind = "access"
    }

    func testDjangoOAuthToolkitRevokesEveryTokenTheDaemonReportsEnded() throws {
        try endAll(
            Recipe(
                provider: "dot",
                endpoint: { "URL=\(try Self.string($0, "revocation_endpoint"))\nPreset=rfc7009\n" },
                client: "confidential"))
    }

    /// The README's advice: register the refresh token (the long-lived one).
    func testDjangoOAuthToolkitRevokesEveryRefreshTokenTheDaemonReportsEnded() throws {
        try endAll(
            Recipe(
                provider: "dot",
                endpoint: {
                    "URL=\(try Self.string($0, "revocation_endpoint"))\nPreset=rfc7009\n"
                        + "Body=token={session}&token_type_hint=refresh_token\n"
                },
                client: "confidential", kind: "refresh"))
    }

    func testGlewlwydRevokesEveryTokenTheDaemonReportsEnded() throws {
        // glewlwyd compares the raw secret: Basic without RFC 6749's form-encoding.
        try endAll(
            Recipe(
                provider: "glewlwyd",
                endpoint: {
                    "URL=\(try Self.string($0, "revocation_endpoint"))\nPreset=rfc7009\nClientAuthentication=basic-raw\n"
                },
                client: "session-cleanup"))
    }

    func testKeystoneTokensRevokeThemselvesAndTheDaemonReportsThemEnded() throws {
        try endAll(
            Recipe(
                provider: "keystone",
                endpoint: { "URL=\(try Self.string($0, "base_url"))/v3/auth/tokens\nPreset=keystone\n" },
                client: nil, revokedStatus: 204))
    }

    // MARK: The run

    private func endAll(_ recipe: Recipe) throws {
        let providers = try Self.providers()
        guard let provider = providers.document[recipe.provider] as? [String: Any] else {
            throw XCTSkip("\(recipe.provider) is not in \(providers.path) (providers.py up --providers)")
        }
        let scratch = try ScratchDirectory("idp-\(recipe.provider)")
        let tokenDirectory = try ScratchDirectory("idp-tokens")  // outside the daemon's, which is searched
        let tokenFile = tokenDirectory.path + "/tokens"
        try ProvidersScript.run([
            "mint", "--dir", providers.directory, recipe.provider, tokenFile, "\(Self.tokens)", "--kind", recipe.kind,
        ])
        let tokens = try String(contentsOfFile: tokenFile, encoding: .utf8).split(separator: "\n").map(String.init)
        XCTAssertEqual(tokens.count, Self.tokens)
        if recipe.revokedStatus == nil {
            XCTAssertEqual(
                try ProvidersScript.check(providers.directory, recipe.provider, tokenFile)["active"], Self.tokens)
        }

        var secrets: [String] = []
        var environment: [String: String] = [:]
        var authentication = ""
        var credentials: ScratchDirectory?  // held until the end: its deinit removes it
        if let client = recipe.client {
            let credential = try Self.clientCredential(provider, client)
            let directory = try ScratchDirectory("idp-credentials")
            credentials = directory
            let file = try directory.write("idp-client", credential)
            chmod(file, 0o600)
            environment["CREDENTIALS_DIRECTORY"] = directory.path
            authentication = "ClientCredential=idp-client\n"
            secrets.append(String(credential.drop { $0 != ":" }.dropFirst()))
        }
        let config =
            "[Stop]\nBudgetSec=25s\n[Endpoint]\nName=idp\n" + (try recipe.endpoint(provider)) + authentication
        let daemon = try DaemonProcess(config: config, environment: environment, scratch: scratch)
        XCTAssertNotNil(daemon.waitUntilReady(), daemon.stderr)
        let client = try RawClient(path: daemon.socketPath)
        for (index, token) in tokens.enumerated() {
            let line = #"{"op":"register","key":"\#(token)","endpoints":["idp"],"label":"t\#(index)"}"#
            guard client.send(line + "\n"), let reply = client.readObject(timeout: 10), reply["ok"] as? Bool == true
            else { return XCTFail("registration \(index) failed: \(daemon.stderr)") }
        }

        let signalled = Date()
        daemon.signal(SIGTERM)
        let status = daemon.waitForExit(timeout: 40)
        let stopSeconds = Date().timeIntervalSince(signalled)
        XCTAssertEqual(status, 0, "every session ended, none kept: \(daemon.stderr.suffix(2000))")

        let summary = try XCTUnwrap(
            daemon.stderr.split(separator: "\n").last { $0.contains("SESSION_CLEANUP_EVENT=run-finished") }
                .map { JournalLines.parse(String($0)) }, daemon.stderr)
        XCTAssertEqual(summary["SESSIONS_ENDED"], "\(Self.tokens)", "\(summary)")
        XCTAssertEqual(summary["CALLS_ENDED"], "\(Self.tokens)", "\(summary)")
        XCTAssertEqual(summary["SESSIONS_LEFT"], "0", "\(summary)")

        // The stop run's report, from the next daemon on the same state directory.
        let next = try DaemonProcess(config: config, environment: environment, scratch: scratch)
        XCTAssertNotNil(next.waitUntilReady(), next.stderr)
        let report = try BuiltBinary.run(["report", "--json", "--no-journal", "--socket", next.socketPath])
        XCTAssertEqual(report.status, 0, report.err)
        next.signal(SIGTERM)
        XCTAssertEqual(next.waitForExit(timeout: 10), 0, next.stderr)
        _ = credentials
        let document = try XCTUnwrap(
            try JSONSerialization.jsonObject(with: Data(report.out.utf8)) as? [String: Any], report.out)
        let outcomes = ((document["calls"] as? [String: Any]) ?? [:]).compactMapValues { $0 as? Int }
        XCTAssertEqual(outcomes, ["ended": Self.tokens, "total": Self.tokens], report.out)
        // Requests sent: every call's attempts, from the run's results file (one line per call).
        let results = try String(contentsOfFile: daemon.stateDirectory + "/last-stop-run.results", encoding: .utf8)
        let lines = results.split(separator: "\n").dropFirst().map {
            $0.split(separator: "\t", omittingEmptySubsequences: false)
        }
        XCTAssertEqual(lines.count, Self.tokens)
        let requests = lines.reduce(0) { $0 + ($1.count > 5 ? Int($1[5]) ?? 0 : 0) }
        if let status = recipe.revokedStatus {
            let statuses = Dictionary(grouping: lines, by: { $0.count > 4 ? String($0[4]) : "?" }).mapValues(\.count)
            XCTAssertEqual(statuses, ["\(status)": Self.tokens], "every token was valid until the daemon revoked it")
        }

        // The provider's word, not the daemon's.
        let after = try ProvidersScript.check(providers.directory, recipe.provider, tokenFile)
        XCTAssertEqual(after["active"], 0, "tokens still active at \(recipe.provider): \(after)")

        let outputs = [daemon.stderr, report.out, report.err, next.stderr] + (try Self.filesBelow(scratch.path))
        for (index, output) in outputs.enumerated() {
            for secret in secrets where output.contains(secret) {
                XCTFail("the client secret is in output \(index) (0: stderr, 1-2: report, 3: next daemon, then files)")
            }
            if let leaked = tokens.firstIndex(where: { output.contains($0) }) {
                XCTFail("token \(leaked) is in output \(index) (0: stderr, 1-2: report, 3: next daemon, then files)")
            }
        }
        print(
            "identity-provider: \(recipe.provider): \(tokens.count) \(recipe.kind) tokens registered, "
                + "\(after["inactive"] ?? -1) revoked at the provider (\(after["active"] ?? -1) active), daemon: "
                + "\(outcomes["ended"] ?? 0) of \(outcomes["total"] ?? 0) calls ended, "
                + "\(requests) requests, stop run \(String(format: "%.2f", stopSeconds)) s (SIGTERM to exit), "
                + "run \(((document["duration_usec"] as? Int) ?? -1) / 1000) ms")
    }

    // MARK: Providers

    /// `SESSION_CLEANUP_PROVIDERS`'s `providers.json`, its directory and contents.
    private static func providers() throws -> (path: String, directory: String, document: [String: Any]) {
        guard let path = ProcessInfo.processInfo.environment["SESSION_CLEANUP_PROVIDERS"], !path.isEmpty else {
            throw XCTSkip("SESSION_CLEANUP_PROVIDERS is not set (scripts/test.sh sets the providers up and sets it)")
        }
        let data = try Data(contentsOf: URL(fileURLWithPath: path))
        let document = try XCTUnwrap(try JSONSerialization.jsonObject(with: data) as? [String: Any], path)
        let providers = (document["providers"] as? [String: Any]) ?? document
        return (path, URL(fileURLWithPath: path).deletingLastPathComponent().path, providers)
    }

    private static func string(_ provider: [String: Any], _ key: String) throws -> String {
        try XCTUnwrap(provider[key] as? String, "providers.json has no \(key): \(provider.keys.sorted())")
    }

    /// The contents of the client's `client_id:client_secret` file that `providers.py` wrote.
    private static func clientCredential(_ provider: [String: Any], _ client: String) throws -> String {
        let clients = try XCTUnwrap(provider["clients"] as? [String: Any], "providers.json: no clients")
        let entry = try XCTUnwrap(clients[client] as? [String: Any], "providers.json: no client \(client)")
        let path = try string(entry, "credential_file")
        return try String(contentsOfFile: path, encoding: .utf8)
    }

    /// The text of every regular file below `directory`: state, configuration, the daemon's stderr.
    private static func filesBelow(_ directory: String) throws -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: directory)
        var texts: [String] = []
        while let name = enumerator?.nextObject() as? String {
            let path = directory + "/" + name
            let type = try FileManager.default.attributesOfItem(atPath: path)[.type] as? FileAttributeType
            guard type == .typeRegular else { continue }  // the notify socket, the control socket
            let data = try Data(contentsOf: URL(fileURLWithPath: path))
            texts.append(String(decoding: data, as: UTF8.self))
        }
        return texts
    }
}
