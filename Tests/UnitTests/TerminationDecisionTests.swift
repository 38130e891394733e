import Glibc
import XCTest

@testable import Configuration
@testable import Daemon
@testable import Systemd

final class TerminationDecisionTests: XCTestCase {
    private let unit = ServiceManagerUnit(manager: .system, name: "session-cleanup.service")

    private func decide(
        _ report: ServiceManagerReport, signal: DaemonSignal = .terminate, onRestart: OnRestartPolicy = .keep
    ) -> TerminationDecision {
        TerminationDecision.decide(signal: signal, onRestart: onRestart, ownUnit: { unit }, ask: { report })
    }

    private func reason(_ decision: TerminationDecision) -> String? {
        if case .stop(let reason) = decision { return reason }
        return nil
    }

    func testARestartJobHandsTheSessionsOver() {
        let decision = decide(.answered(unit, ServiceManagerAnswer(jobType: "restart", systemState: "running")))
        XCTAssertEqual(decision, .handOver(unit: unit, jobType: "restart"))
    }

    func testAStopJobIsAStopRunAndSaysWhichJob() {
        let decision = decide(.answered(unit, ServiceManagerAnswer(jobType: "stop", systemState: "running")))
        XCTAssertEqual(reason(decision), "session-cleanup.service has a stop job (system running)")
    }

    func testARestartJobWhileTheSystemShutsDownIsAStop() {
        let decision = decide(.answered(unit, ServiceManagerAnswer(jobType: "restart", systemState: "stopping")))
        XCTAssertNotNil(reason(decision))
    }

    func testNoJobIsAStop() {
        let decision = decide(.answered(unit, ServiceManagerAnswer(jobType: nil, systemState: "running")))
        XCTAssertEqual(reason(decision)?.contains("has no job"), true)
    }

    func testNoAnswerIsAStopThatNamesTheCause() {
        let timeout = ServiceManagerQueryError(errno: ETIMEDOUT, step: "no answer within 1000 ms")
        XCTAssertEqual(
            reason(decide(.unanswered(unit, timeout)))?.hasPrefix(
                "could not ask the system manager about session-cleanup.service: no answer within 1000 ms; "),
            true)
        let noBus = ServiceManagerQueryError(errno: ENOENT, step: "connect to the system bus")
        XCTAssertEqual(reason(decide(.unanswered(unit, noBus)))?.contains("connect to the system bus"), true)
    }

    func testNotUnderAServiceManagerIsAStop() {
        XCTAssertEqual(reason(decide(.notUnderServiceManager))?.contains("not started by a service manager"), true)
    }

    func testOnRestartEndAndSigintStopWithoutAskingTheManager() {
        var asked = false
        let restart = ServiceManagerReport.answered(
            unit, ServiceManagerAnswer(jobType: "restart", systemState: "running"))
        let ask: () -> ServiceManagerReport = {
            asked = true
            return restart
        }
        let unit = { self.unit }
        XCTAssertNotNil(
            reason(TerminationDecision.decide(signal: .terminate, onRestart: .end, ownUnit: unit, ask: ask)))
        XCTAssertNotNil(reason(TerminationDecision.decide(signal: .restart, onRestart: .end, ownUnit: unit, ask: ask)))
        XCTAssertNotNil(
            reason(TerminationDecision.decide(signal: .interrupt, onRestart: .keep, ownUnit: unit, ask: ask)))
        XCTAssertFalse(asked)
    }

    /// systemd ≥ 250 sends the units' RestartKillSignal=SIGUSR1 for a restart: a hand-over even
    /// when D-Bus is down or frozen, because the manager is never asked.
    func testSigusr1IsARestartHandedOverWithoutAskingTheManager() {
        var asked = false
        let frozen: () -> ServiceManagerReport = {
            asked = true
            return .unanswered(self.unit, ServiceManagerQueryError(errno: ETIMEDOUT, step: "no answer within 1000 ms"))
        }
        let decision = TerminationDecision.decide(
            signal: .restart, onRestart: .keep, ownUnit: { self.unit }, ask: frozen)
        XCTAssertEqual(decision, .handOver(unit: unit, jobType: TerminationDecision.restartSignalJob))
        XCTAssertFalse(asked)
    }

    func testSigusr1WithoutAServiceManagerIsAStop() {
        let decision = TerminationDecision.decide(
            signal: .restart, onRestart: .keep, ownUnit: { nil }, ask: { .notUnderServiceManager })
        XCTAssertEqual(reason(decision)?.contains("not started by a service manager"), true)
    }

    func testAnUnansweredSigtermSaysARestartWouldHaveSentSigusr1() {
        let timeout = ServiceManagerQueryError(errno: ETIMEDOUT, step: "no answer within 1000 ms")
        XCTAssertEqual(reason(decide(.unanswered(unit, timeout)))?.contains("RestartKillSignal="), true)
    }
}
