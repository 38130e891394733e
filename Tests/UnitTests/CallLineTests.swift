import XCTest

@testable import SessionCleanup
@testable import Sessions

final class CallLineTests: XCTestCase {
    private func session(_ endpoints: [String]) -> Session {
        Session(id: .random(), key: SessionKey("key"), endpoints: endpoints, ownerUID: 0, registeredAt: 0)
    }

    private func templates(_ names: [String], unavailable: Set<String> = []) -> [String: EndpointTemplate] {
        var byName: [String: EndpointTemplate] = [:]
        for name in names {
            var endpoint = EndpointConfiguration(name: name, url: "http://127.0.0.1:8080/\(name)/{session}")
            if unavailable.contains(name) { endpoint.tokenCredential = "missing" }
            byName[name] = EndpointTemplate(endpoint, credentials: [:])
        }
        return byName
    }

    private func drain(_ line: inout CallLine) -> [String] {
        var taken: [String] = []
        while let call = line.take() { taken.append("\(call.session):\(call.endpoint)") }
        return taken
    }

    func testCallsComeInSessionOrderThenEachSessionsEndpointOrder() {
        var line = CallLine(
            sessions: [session(["a", "b"]), session(["b"]), session(["a", "b"])], templates: templates(["a", "b"]))
        XCTAssertEqual(drain(&line), ["0:a", "0:b", "1:b", "2:a", "2:b"])
        XCTAssertNil(line.take(), "an empty line stays empty")
    }

    func testCallsThatCannotBeMadeAreNamedOnceWithTheirCauseAndNeverTaken() {
        var line = CallLine(
            sessions: [session(["a", "gone"]), session(["locked", "a"]), session([])],
            templates: templates(["a", "locked"], unavailable: ["locked"]))
        var uncallable: [String] = []
        line.forEachUncallable { session, name, template, cause in
            uncallable.append("\(session):\(name):\(template == nil ? "unconfigured" : "configured"):\(cause)")
        }
        XCTAssertEqual(
            uncallable,
            [
                "0:gone:unconfigured:endpoint 'gone' is not configured",
                "1:locked:configured:credential 'missing' for endpoint 'locked' is unavailable",
            ])
        XCTAssertEqual(drain(&line), ["0:a", "1:a"], "naming them did not take anything from the line")
    }
}
