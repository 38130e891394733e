import XCTest

@testable import Configuration
@testable import Endpoints
@testable import Runs
@testable import Sessions

final class CallLineTests: XCTestCase {
    private func session(_ endpoints: [String]) -> Session {
        Session(id: .random(), key: SessionKey("key"), endpoints: endpoints, ownerUID: 0, registeredAt: 0)
    }

    /// Endpoints named `names`, each on an origin of its own unless `host` gives it one.
    private func templates(
        _ names: [String], unavailable: Set<String> = [], host: [String: String] = [:]
    ) -> [String: EndpointTemplate] {
        var byName: [String: EndpointTemplate] = [:]
        for (index, name) in names.enumerated() {
            let origin = host[name] ?? "127.0.0.1:\(8080 + index)"
            var endpoint = EndpointConfiguration(name: name, url: "http://\(origin)/\(name)/{session}")
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
            sessions: [session(["a", "b"]), session(["b"]), session(["a", "b"])], templates: templates(["a", "b"]),
            concurrency: 8)
        line.prepare { _, _, _, _ in XCTFail("every call can be made") }
        XCTAssertEqual(drain(&line), ["0:a", "0:b", "1:b", "2:a", "2:b"])
        XCTAssertNil(line.take(), "an empty line stays empty")
    }

    func testCallsThatCannotBeMadeAreNamedOnceWithTheirCauseAndNeverTaken() {
        var line = CallLine(
            sessions: [session(["a", "gone"]), session(["locked", "a"]), session([])],
            templates: templates(["a", "locked"], unavailable: ["locked"]), concurrency: 8)
        var uncallable: [String] = []
        line.prepare { session, name, template, cause in
            uncallable.append("\(session):\(name):\(template == nil ? "unconfigured" : "configured"):\(cause)")
        }
        XCTAssertEqual(
            uncallable,
            [
                "0:gone:unconfigured:endpoint 'gone' is not configured",
                "1:locked:configured:credential 'missing' for endpoint 'locked' is unavailable",
            ])
        XCTAssertEqual(drain(&line), ["0:a", "1:a"], "preparing took nothing from the line")
    }

    /// Takes `count` calls, starting each (a request in flight), as "session:endpoint".
    private func start(_ count: Int, from line: inout CallLine) -> [String] {
        var taken: [String] = []
        for _ in 0..<count {
            guard let call = line.take() else { break }
            if let origin = call.origin { line.started(origin) }
            taken.append("\(call.session):\(call.endpoint)")
        }
        return taken
    }

    func testAnOriginAtItsQuotaIsPassedOverUntilOneOfItsCallsEnds() {
        // Sessions 0–5 on a, 6–11 on b (grouped); 4 in flight: 2 for each origin.
        let sessions = (0..<6).map { _ in session(["a"]) } + (0..<6).map { _ in session(["b"]) }
        var line = CallLine(sessions: sessions, templates: templates(["a", "b"]), concurrency: 4)
        line.prepare { _, _, _, _ in }
        XCTAssertEqual(start(4, from: &line), ["0:a", "1:a", "6:b", "7:b"], "a's third call waits for b's")
        line.stopped(1)  // one of b's ends: b's next, not a's passed-over calls
        XCTAssertEqual(start(1, from: &line), ["8:b"])
        line.stopped(0)  // one of a's ends: a's earliest passed-over call
        XCTAssertEqual(start(1, from: &line), ["2:a"])
    }

    func testQuotasFollowEachOriginsCallsSoABusierOriginGetsMore() {
        // a has 9 calls, b 3: of 4 in flight a may have 3 (⌈4 × 9/12⌉), b 1.
        let sessions = (0..<9).map { _ in session(["a"]) } + (0..<3).map { _ in session(["b"]) }
        var line = CallLine(sessions: sessions, templates: templates(["a", "b"]), concurrency: 4)
        line.prepare { _, _, _, _ in }
        XCTAssertEqual(start(4, from: &line), ["0:a", "1:a", "2:a", "9:b"])
    }

    func testACallWhoseOriginHasItsQuotaInFlightWaitsForOneOfItsCallsToEnd() {
        // 3 calls on a, 1 in flight allowed: a's quota is 1.
        var line = CallLine(sessions: (0..<3).map { _ in session(["a"]) }, templates: templates(["a"]), concurrency: 1)
        line.prepare { _, _, _, _ in }
        XCTAssertEqual(start(1, from: &line), ["0:a"])
        XCTAssertNil(line.take(), "a has its quota in flight: its next call waits, not a new connection")
        line.stopped(0)
        XCTAssertEqual(start(2, from: &line), ["1:a"])
        line.stopped(0)
        XCTAssertEqual(start(2, from: &line), ["2:a"])
        XCTAssertNil(line.take())
        XCTAssertNil(line.takeUntried(), "every call was taken")
    }

    func testEndpointsOnOneOriginShareItsQuota() {
        // a and b are one host: 2 in flight in all for it, c has its own.
        let sessions = [session(["a", "b", "c"]), session(["a", "b", "c"]), session(["a", "b", "c"])]
        var line = CallLine(
            sessions: sessions, templates: templates(["a", "b", "c"], host: ["a": "h:1", "b": "h:1"]), concurrency: 3)
        line.prepare { _, _, _, _ in }
        XCTAssertEqual(start(3, from: &line), ["0:a", "0:b", "0:c"])
    }

    func testCallsEndedUntriedComeInTheLinesOrderPassedOverOnesIncluded() {
        let sessions = (0..<4).map { _ in session(["a"]) } + (0..<4).map { _ in session(["b"]) }
        var line = CallLine(sessions: sessions, templates: templates(["a", "b"]), concurrency: 2)
        line.prepare { _, _, _, _ in }
        XCTAssertEqual(start(2, from: &line), ["0:a", "4:b"])
        var untried: [String] = []
        while let call = line.takeUntried() { untried.append("\(call.session):\(call.endpoint)") }
        XCTAssertEqual(untried, ["1:a", "2:a", "3:a", "5:b", "6:b", "7:b"])
    }
}
