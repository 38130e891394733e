import XCTest

@testable import SessionCleanup

final class ConfigurationTests: XCTestCase {
    private func build(_ text: String, file: String = "test.conf") throws -> Configuration {
        try ConfigurationLoader.build(from: try ConfigFile.parse(text, file: file))
    }

    private func error(_ text: String, file: String = "test.conf") -> ConfigurationError? {
        do {
            _ = try build(text, file: file)
            return nil
        } catch let error as ConfigurationError {
            return error
        } catch {
            XCTFail("unexpected \(error)")
            return nil
        }
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

    func testRepeatedEndpointSectionsWithAllSettings() throws {
        let configuration = try build(
            """
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
            """)
        XCTAssertEqual(configuration.endpoints.map(\.name), ["auth", "licence"])
        let licence = try XCTUnwrap(configuration.endpoint(named: "licence"))
        XCTAssertEqual(licence.method, "POST")
        XCTAssertEqual(licence.timeout, .seconds(5))
        XCTAssertEqual(licence.success, .anyTwoHundred)
        XCTAssertEqual(licence.goneStatuses, [404, 410, 409])
        XCTAssertEqual(licence.headers, ["Content-Type: application/json"])
        XCTAssertEqual(licence.tokenCredential, "licence-token")
        XCTAssertEqual(configuration.endpoint(named: "auth")?.method, "GET")
        XCTAssertEqual(configuration.endpoint(named: "auth")?.goneStatuses, [404, 410])
    }

    func testErrorsNameFileAndLine() {
        XCTAssertEqual(
            error("[Stop]\nBudget=3s\n", file: "a.conf")?.description, "a.conf:2: unknown key 'Budget' in [Stop]")
        XCTAssertEqual(error("\n\n[Stpo]\n")?.line, 3)
        XCTAssertEqual(error("[Stop]\nBudgetSec=soon\n")?.line, 2)
        XCTAssertEqual(error("BudgetSec=3s\n")?.line, 1)
        XCTAssertEqual(error("[Stop]\njust words\n")?.line, 2)
        XCTAssertEqual(error("[Stop]\nMaxConcurrentRequests=0\n")?.line, 2)
        XCTAssertEqual(error("[Stop\n")?.line, 1)
    }

    func testEndpointProblemsAreRefused() {
        XCTAssertNotNil(error("[Endpoint]\nURL=http://x/{session}\n"), "no Name=")
        XCTAssertNotNil(error("[Endpoint]\nName=a\n"), "no URL=")
        XCTAssertNotNil(error("[Endpoint]\nName=a\nURL=ftp://x/{session}\n"))
        XCTAssertNotNil(error("[Endpoint]\nName=a\nURL=http://x/end\n"), "the session is never sent")
        XCTAssertNotNil(error("[Endpoint]\nName=a b\nURL=http://x/{session}\n"))
        XCTAssertNotNil(error("[Endpoint]\nName=a\nURL=http://x/{session}\nMethod=PATCHY\n"))
        XCTAssertNotNil(error("[Endpoint]\nName=a\nURL=http://x/{session}\nTokenCredential=../etc/shadow\n"))
        let secret = error("[Endpoint]\nName=a\nURL=http://x/{session}\nToken=hunter2\n")
        XCTAssertEqual(secret?.line, 4)
        XCTAssertFalse(secret?.description.contains("hunter2") ?? true, "the refused secret is not echoed")
        let header = error("[Endpoint]\nName=a\nURL=http://x/{session}\nHeader=Authorization Bearer hunter2\n")
        XCTAssertEqual(header?.line, 4)
        XCTAssertFalse(header?.description.contains("hunter2") ?? true, "a malformed header is not echoed")
    }

    func testMinimumMustBeShorterThanTheBudget() {
        XCTAssertNotNil(error("[Stop]\nBudgetSec=1s\nMinimumRequestSec=2s\n"))
    }

    func testLaterFilesWinAndRedefineEndpoints() throws {
        let sections =
            try ConfigFile.parse(
                "[Stop]\nBudgetSec=10s\n[Endpoint]\nName=a\nURL=http://one/{session}\n", file: "main.conf")
            + ConfigFile.parse(
                "[Stop]\nBudgetSec=12s\n[Endpoint]\nName=a\nURL=http://two/{session}\n", file: "10-x.conf")
        let configuration = try ConfigurationLoader.build(from: sections)
        XCTAssertEqual(configuration.stop.budget, .seconds(12))
        XCTAssertEqual(configuration.endpoints.map(\.url), ["http://two/{session}"])
    }
}
