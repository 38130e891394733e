import XCTest

@testable import Metrics

/// The metrics file's text: what node_exporter's textfile collector reads.
final class MetricsTextTests: XCTestCase {
    func testSessionsByEndpointAndTheLastRunOfEachKindInTheExpositionFormat() {
        let stop = RunMetrics(
            kind: "stop", outcomes: ["auth": ["ended": 2, "failed": 1]], duration: .milliseconds(125),
            budget: .seconds(25), journalComplete: true, finishedAt: 1_764_500_000_500_000)
        let leftover = RunMetrics(
            kind: "leftover", outcomes: [:], duration: .seconds(1), budget: .seconds(60), journalComplete: false,
            finishedAt: 1_764_500_100_000_000)
        let text = MetricsText.text(sessionsByEndpoint: ["auth": 3, "billing": 1], lastRuns: [stop, leftover])
        let samples = text.split(separator: "\n").filter { !$0.hasPrefix("#") }
        XCTAssertEqual(
            samples,
            [
                #"session_cleanup_sessions{endpoint="auth"} 3"#,
                #"session_cleanup_sessions{endpoint="billing"} 1"#,
                #"session_cleanup_last_run_calls{kind="stop",endpoint="auth",outcome="ended"} 2"#,
                #"session_cleanup_last_run_calls{kind="stop",endpoint="auth",outcome="failed"} 1"#,
                #"session_cleanup_last_run_duration_seconds{kind="leftover"} 1"#,
                #"session_cleanup_last_run_duration_seconds{kind="stop"} 0.125"#,
                #"session_cleanup_last_run_budget_seconds{kind="leftover"} 60"#,
                #"session_cleanup_last_run_budget_seconds{kind="stop"} 25"#,
                #"session_cleanup_last_run_journal_complete{kind="leftover"} 0"#,
                #"session_cleanup_last_run_journal_complete{kind="stop"} 1"#,
                #"session_cleanup_last_run_timestamp_seconds{kind="leftover"} 1764500100"#,
                #"session_cleanup_last_run_timestamp_seconds{kind="stop"} 1764500000.5"#,
            ])
        XCTAssertTrue(text.contains("# TYPE session_cleanup_sessions gauge\n"), text)
        XCTAssertTrue(text.hasSuffix("\n"), "the collector wants whole lines")
    }

    func testALabelValueIsEscaped() {
        XCTAssertEqual(MetricsText.escaped("a\"b\\c\nd"), #"a\"b\\c\nd"#)
    }
}
