import Basics
import CEpoll
import Glibc

/// The daemon's one event loop: `epoll` over descriptors plus a timer queue, OpenBSD-daemon
/// style. Every handler runs here, in ordinary code on the thread that calls ``runOnce(maximumWait:)``;
/// nothing runs in a signal handler. When no timer is due the loop sleeps in `epoll_wait`
/// without a timeout, so an idle daemon wakes only for its own timers (the watchdog's).
///
/// Not thread-safe by design: one thread owns the loop and everything registered with it.
package final class EventLoop {
    /// What a descriptor became ready for.
    package struct Readiness: Sendable {
        /// Data (or a connection, or end of file) can be read.
        package var readable: Bool
        /// Data can be written without blocking.
        package var writable: Bool
        /// The descriptor reported an error or hang-up.
        package var failed: Bool
    }

    /// Identifies a scheduled timer so it can be cancelled.
    package struct TimerID: Hashable, Sendable {
        fileprivate let value: UInt64
    }

    private struct Timer {
        let deadline: MonotonicInstant
        let id: TimerID

        /// Earlier deadline first; equal deadlines in the order they were scheduled.
        func runsBefore(_ other: Timer) -> Bool {
            deadline < other.deadline || (deadline == other.deadline && id.value < other.id.value)
        }
    }

    /// A descriptor's handler and the number its epoll events carry.
    private struct Registration {
        /// Different for every `watch`, so an event queued for a descriptor's earlier life (closed,
        /// and the number reused, within one batch) is recognised and dropped.
        let id: UInt32
        let handler: (Readiness) -> Void
    }

    /// The clock the loop's timers use.
    package let clock: any MonotonicClock
    private let epollFD: Int32
    /// Registrations by descriptor. Looked up for every event; exclusivity is not checked at run
    /// time (issue 10's instruction count): the loop is confined to its thread, and every access
    /// is one statement — a handler runs after its registration was copied out.
    @exclusivity(unchecked) private var handlers = DescriptorTable<Registration>()
    private var nextRegistration: UInt32 = 0
    /// A binary min-heap on deadline; cancelled timers stay in it until they reach the top.
    private var timerHeap: [Timer] = []
    private var timerActions: [TimerID: () -> Void] = [:]
    private var nextTimerValue: UInt64 = 0
    /// One turn takes up to this many ready descriptors: a round of replies (up to
    /// `MaxConcurrentRequests=` at once) is handled in one turn, so every connection it frees is
    /// back in the pool before new calls are handed over.
    private var events = [epoll_event](repeating: epoll_event(), count: 1024)

    /// Counts `epoll_wait` returns, so benchmarks and tests can see wake-ups.
    package private(set) var wakeUps: UInt64 = 0

    /// For tests: while set, every registration (``watch(_:readable:writable:handler:)``,
    /// ``update(_:readable:writable:)``) fails with this errno, as `epoll_ctl` does when the
    /// kernel is out of memory or the user's `max_user_watches` is reached — failures no test
    /// can bring about for real without changing a system-wide limit.
    package var refusesRegistrations: Int32?

    /// Creates a loop on `clock`.
    package init(clock: any MonotonicClock = SystemMonotonicClock()) throws {
        self.clock = clock
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw SystemCallError.current("epoll_create1") }
        epollFD = fd
    }

    deinit { close(epollFD) }

    // MARK: Descriptors

    /// Watches `fd` for reading and/or writing; `handler` runs on every readiness, until
    /// ``unwatch(_:)``. Watching an already watched descriptor replaces its interest and handler.
    package func watch(
        _ fd: Int32, readable: Bool = true, writable: Bool = false,
        handler: @escaping (Readiness) -> Void
    ) throws {
        nextRegistration &+= 1
        let registration = Registration(id: nextRegistration, handler: handler)
        try control(fd, registration.id, Self.mask(readable: readable, writable: writable), known: handlers[fd] != nil)
        handlers[fd] = registration
    }

    /// Changes what an already watched descriptor is watched for.
    package func update(_ fd: Int32, readable: Bool, writable: Bool) throws {
        guard let registration = handlers[fd] else {
            throw SystemCallError("epoll_ctl", "descriptor \(fd) (not watched)", errno: ENOENT)
        }
        try control(fd, registration.id, Self.mask(readable: readable, writable: writable), known: true)
    }

    /// Adds or modifies `fd`'s epoll registration. The set may disagree with `handlers`: a
    /// descriptor closed without ``unwatch(_:)`` (libcurl closes its own) leaves the set on its
    /// own, and its number may come back as a new descriptor; so MOD falls back to ADD on
    /// ENOENT, and ADD to MOD on EEXIST.
    private func control(_ fd: Int32, _ id: UInt32, _ mask: UInt32, known: Bool) throws {
        if let refusesRegistrations {
            throw SystemCallError("epoll_ctl", "descriptor \(fd)", errno: refusesRegistrations)
        }
        var event = epoll_event()
        event.events = mask
        event.data.u64 = UInt64(id) << 32 | UInt64(UInt32(bitPattern: fd))
        var operation = known ? EPOLL_CTL_MOD : EPOLL_CTL_ADD
        if epoll_ctl(epollFD, operation, fd, &event) != 0 {
            let retry =
                (operation == EPOLL_CTL_MOD && errno == ENOENT) || (operation == EPOLL_CTL_ADD && errno == EEXIST)
            guard retry else { throw SystemCallError.current("epoll_ctl", "descriptor \(fd)") }
            operation = operation == EPOLL_CTL_MOD ? EPOLL_CTL_ADD : EPOLL_CTL_MOD
            guard epoll_ctl(epollFD, operation, fd, &event) == 0 else {
                throw SystemCallError.current("epoll_ctl", "descriptor \(fd)")
            }
        }
    }

    /// Stops watching `fd`. Call before closing it. Unknown descriptors are ignored.
    package func unwatch(_ fd: Int32) {
        guard handlers.removeValue(for: fd) != nil else { return }
        var event = epoll_event()
        // The descriptor may already be closed by its owner (libcurl does this); that is fine.
        _ = epoll_ctl(epollFD, EPOLL_CTL_DEL, fd, &event)
    }

    private static func mask(readable: Bool, writable: Bool) -> UInt32 {
        var mask: UInt32 = 0
        if readable { mask |= EPOLLIN.rawValue | EPOLLRDHUP.rawValue }
        if writable { mask |= EPOLLOUT.rawValue }
        return mask
    }

    // MARK: Timers

    /// Runs `action` once at `deadline` (or on the next turn if it has passed). Timers due at the
    /// same instant run in the order they were scheduled.
    @discardableResult
    package func schedule(at deadline: MonotonicInstant, _ action: @escaping () -> Void) -> TimerID {
        nextTimerValue += 1
        let id = TimerID(value: nextTimerValue)
        timerActions[id] = action
        push(Timer(deadline: deadline, id: id))
        return id
    }

    /// Runs `action` once after `delay`.
    @discardableResult
    package func schedule(after delay: Duration, _ action: @escaping () -> Void) -> TimerID {
        schedule(at: clock.now().advanced(by: delay), action)
    }

    /// Cancels a timer that has not run yet; cancelling twice or after it ran does nothing.
    package func cancel(_ id: TimerID) { timerActions[id] = nil }

    /// The deadline of the earliest live timer.
    package var nextDeadline: MonotonicInstant? {
        while let top = timerHeap.first, timerActions[top.id] == nil { popTimer() }
        return timerHeap.first?.deadline
    }

    // MARK: Running

    /// Waits for at most one batch of readiness events (or the next timer), then runs every
    /// handler and due timer. `maximumWait` bounds the wait (nil: until something happens).
    package func runOnce(maximumWait: Duration? = nil) throws {
        var timeout: Int32 = -1
        if let deadline = nextDeadline {
            let wait = deadline.duration(since: clock.now())
            timeout = Int32(clamping: max(0, wait.millisecondsRoundedUp))
        }
        if let maximumWait {
            let cap = Int32(clamping: max(0, maximumWait.millisecondsRoundedUp))
            timeout = timeout < 0 ? cap : min(timeout, cap)
        }
        let count = events.withUnsafeMutableBufferPointer { buffer in
            epoll_wait(epollFD, buffer.baseAddress, Int32(buffer.count), timeout)
        }
        wakeUps &+= 1
        if count < 0 {
            guard errno == EINTR else { throw SystemCallError.current("epoll_wait") }
            return
        }
        for index in 0..<Int(count) {
            let event = events[index]
            let fd = Int32(bitPattern: UInt32(truncatingIfNeeded: event.data.u64))
            let id = UInt32(truncatingIfNeeded: event.data.u64 >> 32)
            // A handler earlier in this batch may have unwatched this descriptor, or closed it
            // and watched a new one under the same number: that event is not the new one's.
            guard let registration = handlers[fd], registration.id == id else { continue }
            let bits = event.events
            registration.handler(
                Readiness(
                    readable: bits & (EPOLLIN.rawValue | EPOLLRDHUP.rawValue | EPOLLHUP.rawValue) != 0,
                    writable: bits & EPOLLOUT.rawValue != 0,
                    failed: bits & (EPOLLERR.rawValue | EPOLLHUP.rawValue) != 0))
        }
        runDueTimers()
    }

    private func runDueTimers() {
        let now = clock.now()
        while let top = timerHeap.first, top.deadline <= now {
            popTimer()
            if let action = timerActions.removeValue(forKey: top.id) { action() }
        }
    }

    // MARK: Heap

    private func push(_ timer: Timer) {
        timerHeap.append(timer)
        var child = timerHeap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard timerHeap[child].runsBefore(timerHeap[parent]) else { break }
            timerHeap.swapAt(child, parent)
            child = parent
        }
    }

    private func popTimer() {
        let last = timerHeap.removeLast()
        guard !timerHeap.isEmpty else { return }
        timerHeap[0] = last
        var parent = 0
        while true {
            let left = 2 * parent + 1
            let right = left + 1
            var smallest = parent
            if left < timerHeap.count, timerHeap[left].runsBefore(timerHeap[smallest]) { smallest = left }
            if right < timerHeap.count, timerHeap[right].runsBefore(timerHeap[smallest]) { smallest = right }
            guard smallest != parent else { return }
            timerHeap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
