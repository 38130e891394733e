import XCTest

@testable import Configuration

final class ConfigurationTests: XCTestCase {
    private func load(_ files: [(String, String)]) throws -> Configuration {
        try ConfigurationLoader.load(files: files.map { ($0.0, Array($0.1.utf8)) })
    }

    private func build(_ text: String, file: String = "test.conf") throws -> Configuration {
        try load([(file, text)])
    }

    private func problems(_ text: String, file: String = "test.conf") -> [ConfigurationProblem] {
        problems(bytes: Array(text.utf8), file: file)
    }

    private func problems(bytes: [UInt8], file: String = "test.conf") -> [ConfigurationProblem] {
        do {
            let configuration = try ConfigurationLoader.load(files: [(file, bytes)])
            XCTFail("loaded \(configuration)")
            return []
        } catch {
            return error.problems
        }
    }

    private func error(_ text: String, file: String = "test.conf") -> ConfigurationProblem? {
        problems(text, file: file).first
    }

    func testEmptyFileGivesTheDocumentedDefaults() throws {
        let configuration = try build("")
        XCTAssertEqual(configuration.stop.budget, .seconds(25))
        XCTAssertEqual(configuration.stop.minimumRequest, .seconds(1))
        XCTAssertEqual(configuration.stop.maxConcurrentRequests, 256)
        XCTAssertTrue(configuration.endpoints.isEmpty)
    }

    func testStopSectionWithCommentsAndContinuations() throws {
        let configuration = try build(
            """
            # comment
            ; another
            [Stop]
            BudgetSec=1min \\
              30s
            MinimumRequestSec = 500ms
            MaxConcurrentRequests=64
            """)
        XCTAssertEqual(configuration.stop.budget, .seconds(90))
        XCTAssertEqual(configuration.stop.minimumRequest, .milliseconds(500))
        XCTAssertEqual(configuration.stop.maxConcurrentRequests, 64)
    }

    private let fullEndpoints = """
        [Endpoint]
        Name=auth
        URL=https://auth.example.com/user/{session}/endsession
        [Endpoint]
        Name=licence
        URL=https://[::1]:8443/sessions
        Method=post
        TimeoutSec=5s
        Success=2xx
        GoneStatus=404 410 409
        Header=Content-Type: application/json
        Body={"session": "{session}"}
        TokenCredential=licence-token
        CAFile=/etc/ssl/private-ca.pem

        """

    func testRepeatedEndpointSectionsWithAllSettings() throws {
        let configuration = try build(fullEndpoints)
        XCTAssertEqual(configuration.endpoints.map(\.name), ["auth", "licence"])
        let licence = try XCTUnwrap(configuration.endpoint(named: "licence"))
        XCTAssertEqual(licence.method, "POST")
        XCTAssertEqual(licence.timeout, .seconds(5))
        XCTAssertEqual(licence.success, .anyTwoHundred)
        XCTAssertEqual(licence.goneStatuses, [404, 410, 409])
        XCTAssertEqual(licence.headers, ["Content-Type: application/json"])
        XCTAssertEqual(licence.body, #"{"session": "{session}"}"#)
        XCTAssertEqual(licence.tokenCredential, "licence-token")
        XCTAssertEqual(licence.caFile, "/etc/ssl/private-ca.pem")
        XCTAssertEqual(configuration.endpoint(named: "auth")?.method, "GET")
        XCTAssertEqual(configuration.endpoint(named: "auth")?.goneStatuses, [404, 410])
    }

    /// Swift's "\r\n" is one Character: splitting a String on "\n" does not split a CRLF file.
    func testCRLFFilesReadExactlyLikeLFFiles() throws {
        let crlf = fullEndpoints.replacing("\n", with: "\r\n")
        XCTAssertEqual(Array(crlf.utf8).filter { $0 == 0x0D }.count, fullEndpoints.utf8.filter { $0 == 0x0A }.count)
        XCTAssertEqual(try build(crlf), try build(fullEndpoints))
        let crlfProblems = problems("[Stop]\r\nBudgetSec=soon\r\n\r\n[Stpo]\r\n")
        XCTAssertEqual(crlfProblems, problems("[Stop]\nBudgetSec=soon\n\n[Stpo]\n"))
        XCTAssertEqual(crlfProblems.map(\.line), [2, 4])
    }

    func testAControlCharacterInAValueIsRefusedSoNoHeaderCarriesALineBreak() {
        let smuggled = "[Endpoint]\nName=a\nURL=http://x/{session}\nHeader=X-A: 1\rX-Injected: Kq7s3cr3t\n"
        XCTAssertEqual(
            problems(smuggled).map(\.description),
            ["test.conf:4: the line contains a control character (only tabs are allowed)"])
        XCTAssertEqual(problems("[Stop]\nBudgetSec=1\u{1B}[2Js\n").map(\.line), [2])
        XCTAssertNoThrow(try build("[Stop]\nBudgetSec=\t20s\t\n"), "tabs are blanks")
    }

    func testProblemsNeverQuoteTheFile() {
        let secret = "Kq7s3cr3tTOKEN"
        let texts = [
            "[Endpoint]\nName=a\nURL=http://x/{session}\nHeader X-Token: \(secret)\n",  // no '='
            "[Endpoint]\nName=a\nURL=http://x/{session}\nHeader=X Token: \(secret)\n",  // bad header name
            "root:\(secret):19000:0:99999:7:::\ndaemon:*:19000\n",  // /etc/shadow as a drop-in
            "\(secret)==\n",  // a base64 token file as a drop-in
            "[\(secret)]\n",
            "[Stop]\n\(secret)=1\n",
            "[Stop]\nBudgetSec=\(secret)\n",
            "[Endpoint]\nName=\(secret)!\nURL=http://x/{session}\n",
            "[Endpoint]\nName=a\nURL=http://user:\(secret)@x/{session}\n",
            "[Endpoint]\nName=a\nURL=http://x/{session}\nToken=\(secret)\n",
            "[Endpoint]\nName=a\nURL=http://x/{session}\nMethod=\(secret)\n",
            "[Endpoint]\nName=a\nURL=http://x/{session}\nGoneStatus=\(secret)\n",
            "[Endpoint]\nName=a\nURL=http://x/{session}\nTokenCredential=/\(secret)\n",
            "[Control]\nSocketGroup=\(secret)!\n",
            "[Stop]\nBudgetSec=1s\\\n\(secret)\n",
            "[Stop]\r\nBudgetSec=\(secret)\r\n[Endpoint]\r\nHeader=X-Token: \(secret)\r\n",
        ]
        for text in texts {
            let found = problems(text)
            XCTAssertFalse(found.isEmpty, text)
            for problem in found { XCTAssertFalse(problem.description.contains("s3cr3t"), problem.description) }
        }
    }

    func testEveryProblemInEveryFileIsReported() {
        let files = [
            ("main.conf", "[Stop]\nBudget=3s\nMaxAttempts=0\n[Stpo]\nx\n"),
            ("10-a.conf", "[Endpoint]\nName=a\n[Endpoint]\nURL=http://x/{session}\n"),
            ("20-b.conf", "[Endpoint]\nName=b\nURL=http://x/{session}\nBody=x\n"),
        ]
        do {
            _ = try load(files)
            XCTFail("loaded")
        } catch let error as ConfigurationError {
            XCTAssertEqual(
                error.problems.map(\.description),
                [
                    "main.conf:2: unknown key in [Stop] (did you mean BudgetSec=?)",
                    "main.conf:3: invalid MaxAttempts=: expected an integer from 1 to 100",
                    "main.conf:4: unknown section (did you mean [Stop]?) (expected [Stop], [Start], [Control], [Metrics], [Sleep], [Store] or [Endpoint])",
                    "main.conf:5: expected Key=value or [Section]",
                    "10-a.conf:1: [Endpoint] 'a' has no URL=",
                    "10-a.conf:3: [Endpoint] has no Name=",
                    "20-b.conf:4: [Endpoint] 'b' has a Body= but Method=GET, which sends no body: set Method=POST, PUT or DELETE",
                ])
            XCTAssertEqual(error.summary, "main.conf:2: unknown key in [Stop] (did you mean BudgetSec=?) (and 6 more)")
        } catch {
            XCTFail("unexpected \(error)")
        }
    }

    func testErrorsNameFileAndLine() {
        XCTAssertEqual(error("\n\n[Stpo]\n")?.line, 3)
        XCTAssertEqual(error("[Stop]\nBudgetSec=soon\n")?.line, 2)
        XCTAssertEqual(error("BudgetSec=3s\n")?.line, 1)
        XCTAssertEqual(error("[Stop]\njust words\n")?.line, 2)
        XCTAssertEqual(error("[Stop]\nMaxConcurrentRequests=0\n")?.line, 2)
        XCTAssertEqual(error("[Stop\n")?.line, 1)
        XCTAssertEqual(error("[Stop]\nBudgetSec=1s \\")?.description, "test.conf:2: line continuation at end of file")
        XCTAssertEqual(problems(bytes: [0x5B, 0xFF, 0x5D]).map(\.description), ["test.conf: not valid UTF-8 text"])
    }

    func testEndpointProblemsAreRefused() {
        XCTAssertNotNil(error("[Endpoint]\nURL=http://x/{session}\n"), "no Name=")
        XCTAssertNotNil(error("[Endpoint]\nName=a\n"), "no URL=")
        XCTAssertNotNil(error("[Endpoint]\nName=a\nURL=ftp://x/{session}\n"))
        XCTAssertNotNil(error("[Endpoint]\nName=a\nURL=http:///{session}\n"), "no host")
        XCTAssertNotNil(error("[Endpoint]\nName=a\nURL=http://x/end\n"), "the session is never sent")
        XCTAssertNotNil(error("[Endpoint]\nName=a b\nURL=http://x/{session}\n"))
        XCTAssertNotNil(error("[Endpoint]\nName=a\nURL=http://x/{session}\nMethod=PATCHY\n"))
        XCTAssertNotNil(error("[Endpoint]\nName=a\nURL=http://x/{session}\nTokenCredential=../etc/shadow\n"))
        let secret = error("[Endpoint]\nName=a\nURL=http://x/{session}\nToken=hunter2\n")
        XCTAssertEqual(secret?.line, 4)
        XCTAssertEqual(
            problems("[Endpoint]\nName=a\nURL=http://x/{session}\nHeader=Authorization Bearer hunter2\n").map(\.line),
            [4])
        XCTAssertEqual(
            problems("[Endpoint]\nName=a\nURL=http:/ /x/{session}\n").count, 1,
            "a refused URL= is one problem, not also 'has no URL='")
    }

    func testAUserAndPasswordInTheURLAreRefused() {
        for url in ["http://user:pw@x/{session}", "https://user@x/{session}", "http://a:b@[::1]:80/{session}"] {
            XCTAssertEqual(
                error("[Endpoint]\nName=a\nURL=\(url)\n")?.message,
                "invalid URL=: a user name or password in the URL (user:password@host) would be shown wherever the URL is; "
                    + "put a token in TokenCredential= instead", url)
        }
        XCTAssertNoThrow(
            try build("[Endpoint]\nName=a\nURL=http://x/u/{session}?by=me@example.com\n"), "@ after the host")
    }

    /// A body with the default GET was never sent: every call failed, for ever.
    func testABodyNeedsAMethodThatSendsOne() throws {
        XCTAssertNotNil(error("[Endpoint]\nName=a\nURL=http://x/end\nBody={session}\n"))
        XCTAssertNotNil(error("[Endpoint]\nName=a\nURL=http://x/end\nMethod=GET\nBody={session}\n"))
        for method in ["POST", "PUT", "DELETE"] {
            XCTAssertEqual(
                try build("[Endpoint]\nName=a\nURL=http://x/end\nMethod=\(method)\nBody={session}\n").endpoints.first?
                    .method,
                method)
        }
        XCTAssertNoThrow(
            try build("[Endpoint]\nName=a\nURL=http://x/{session}\nBody=x\nBody=\n"), "an empty Body= clears it")
    }

    func testMinimumMustBeShorterThanTheBudgetOnceEveryFileIsRead() throws {
        XCTAssertEqual(error("[Stop]\nBudgetSec=1s\nMinimumRequestSec=2s\n")?.line, 3)
        // The main file's minimum is fine with the drop-in's budget: judged on the result.
        let configuration = try load([
            ("main.conf", "[Stop]\nMinimumRequestSec=30s\n"), ("10-a.conf", "[Stop]\nBudgetSec=60s\n"),
        ])
        XCTAssertEqual(configuration.stop.minimumRequest, .seconds(30))
    }

    func testLaterFilesWinAndRedefineEndpoints() throws {
        let configuration = try load([
            ("main.conf", "[Stop]\nBudgetSec=10s\n[Endpoint]\nName=a\nURL=http://one/{session}\n"),
            ("10-x.conf", "[Stop]\nBudgetSec=12s\n[Endpoint]\nName=a\nURL=http://two/{session}\n"),
        ])
        XCTAssertEqual(configuration.stop.budget, .seconds(12))
        XCTAssertEqual(configuration.endpoints.map(\.url), ["http://two/{session}"])
    }

    func testSuggestionsNameOnlyKnownKeys() {
        XCTAssertEqual(ConfigurationKeys.suggestion(for: "budgetsec", among: ["BudgetSec"]), "BudgetSec")
        XCTAssertEqual(
            ConfigurationKeys.suggestion(for: "BudgtSec", among: ["BudgetSec", "RetryDelaySec"]), "BudgetSec")
        XCTAssertNil(ConfigurationKeys.suggestion(for: "Timeout", among: ["BudgetSec"]))
        XCTAssertEqual(
            error("[Stop]\nColour=1\n")?.message, "unknown key in [Stop] (see the README for the keys of each section)")
    }
}
