import CCurl
import EventLoop

/// libcurl's single timer, stood in for by a loop timer: libcurl is never re-entered from its
/// own callback, and a timer it moves often is not cancelled and rescheduled each time.
extension CurlMulti {
    /// CURLMOPT_TIMERFUNCTION: libcurl wants `curl_multi_socket_action(CURL_SOCKET_TIMEOUT)`
    /// after `milliseconds` (0: as soon as possible, -1: never). It is never called from here:
    /// a loop timer does it, even for 0, so libcurl is not re-entered from its own callback.
    func curlWantsTimer(_ milliseconds: Int) {
        guard milliseconds >= 0 else {
            curlDeadline = nil
            disarmTimer()
            return
        }
        // 0 (a transfer was added, say): due at once, so the loop runs libcurl in this turn's timer
        // pass rather than waiting up to a millisecond in epoll_wait first. The clock's origin is
        // "at once" without reading the clock. Asked for while libcurl runs from that timer, it
        // waits for the next turn (as any other deadline of "now" does), so libcurl cannot keep
        // the loop in one timer pass.
        let deadline =
            milliseconds == 0 && !inTimerAction
            ? MonotonicInstant(microseconds: 0) : loop.clock.now().advanced(byMicroseconds: Int64(milliseconds) * 1_000)
        curlDeadline = deadline
        // libcurl moves its timer often; a loop timer that fires no later can stay and re-arm.
        if let timerDeadline, timerDeadline <= deadline { return }
        disarmTimer()
        armTimer(at: deadline)
    }

    /// Schedules the loop timer at `deadline`.
    func armTimer(at deadline: MonotonicInstant) {
        timerDeadline = deadline
        timer = loop.schedule(at: deadline) { [unowned self] in self.timerFired() }
    }

    /// Cancels the loop timer, if one is scheduled.
    func disarmTimer() {
        if let timer { loop.cancel(timer) }
        timer = nil
        timerDeadline = nil
    }

    /// The loop timer fired: libcurl runs its timeout actions, unless its deadline moved later
    /// meanwhile (then the timer is armed again for it).
    func timerFired() {
        timer = nil
        timerDeadline = nil
        guard let due = curlDeadline else { return }
        if loop.clock.now() < due {
            armTimer(at: due)
            return
        }
        curlDeadline = nil
        inTimerAction = true
        socketAction(Int32(CCURL_SOCKET_TIMEOUT), 0)
        inTimerAction = false
    }
}
