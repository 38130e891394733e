import CSystemd
import Glibc

/// The daemon's one event loop: `epoll` over descriptors plus a timer queue, OpenBSD-daemon
/// style. Every handler runs here, in ordinary code on the thread that calls ``run(until:)``;
/// nothing runs in a signal handler. When no timer is due the loop sleeps in `epoll_wait`
/// without a timeout, so an idle daemon wakes only for its own timers (the watchdog's).
///
/// Not thread-safe by design: one thread owns the loop and everything registered with it.
public final class EventLoop {
    /// What a descriptor became ready for.
    public struct Readiness: Sendable {
        /// Data (or a connection, or end of file) can be read.
        public var readable: Bool
        /// Data can be written without blocking.
        public var writable: Bool
        /// The descriptor reported an error or hang-up.
        public var failed: Bool
    }

    /// Identifies a scheduled timer so it can be cancelled.
    public struct TimerID: Hashable, Sendable {
        fileprivate let value: UInt64
    }

    private struct Timer {
        let deadline: MonotonicInstant
        let id: TimerID
    }

    /// The clock the loop's timers use.
    public let clock: any MonotonicClock
    private let epollFD: Int32
    /// Handlers by descriptor; the descriptor's interest is kept to re-arm with `EPOLL_CTL_MOD`.
    private var handlers: [Int32: (Readiness) -> Void] = [:]
    /// A binary min-heap on deadline; cancelled timers stay in it until they reach the top.
    private var timerHeap: [Timer] = []
    private var timerActions: [TimerID: () -> Void] = [:]
    private var nextTimerValue: UInt64 = 0
    private var events = [epoll_event](repeating: epoll_event(), count: 64)

    /// Counts `epoll_wait` returns, so benchmarks and tests can see wake-ups.
    public private(set) var wakeUps: UInt64 = 0

    /// Creates a loop on `clock`.
    public init(clock: any MonotonicClock = SystemMonotonicClock()) throws {
        self.clock = clock
        let fd = epoll_create1(Int32(EPOLL_CLOEXEC))
        guard fd >= 0 else { throw SystemCallError.current("epoll_create1") }
        epollFD = fd
    }

    deinit { close(epollFD) }

    // MARK: Descriptors

    /// Watches `fd` for reading and/or writing; `handler` runs on every readiness, until
    /// ``unwatch(_:)``. Watching an already watched descriptor replaces its interest and handler.
    public func watch(
        _ fd: Int32, readable: Bool = true, writable: Bool = false,
        handler: @escaping (Readiness) -> Void
    ) throws {
        var event = epoll_event()
        event.events = Self.mask(readable: readable, writable: writable)
        event.data.fd = fd
        let operation = handlers[fd] == nil ? EPOLL_CTL_ADD : EPOLL_CTL_MOD
        guard epoll_ctl(epollFD, operation, fd, &event) == 0 else {
            throw SystemCallError.current("epoll_ctl", "descriptor \(fd)")
        }
        handlers[fd] = handler
    }

    /// Changes what an already watched descriptor is watched for.
    public func update(_ fd: Int32, readable: Bool, writable: Bool) throws {
        var event = epoll_event()
        event.events = Self.mask(readable: readable, writable: writable)
        event.data.fd = fd
        guard epoll_ctl(epollFD, EPOLL_CTL_MOD, fd, &event) == 0 else {
            throw SystemCallError.current("epoll_ctl", "descriptor \(fd)")
        }
    }

    /// Stops watching `fd`. Call before closing it. Unknown descriptors are ignored.
    public func unwatch(_ fd: Int32) {
        guard handlers.removeValue(forKey: fd) != nil else { return }
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

    /// Runs `action` once at `deadline` (or on the next turn if it has passed).
    @discardableResult
    public func schedule(at deadline: MonotonicInstant, _ action: @escaping () -> Void) -> TimerID {
        nextTimerValue += 1
        let id = TimerID(value: nextTimerValue)
        timerActions[id] = action
        push(Timer(deadline: deadline, id: id))
        return id
    }

    /// Runs `action` once after `delay`.
    @discardableResult
    public func schedule(after delay: Duration, _ action: @escaping () -> Void) -> TimerID {
        schedule(at: clock.now().advanced(by: delay), action)
    }

    /// Cancels a timer that has not run yet; cancelling twice or after it ran does nothing.
    public func cancel(_ id: TimerID) { timerActions[id] = nil }

    /// The deadline of the earliest live timer.
    public var nextDeadline: MonotonicInstant? {
        while let top = timerHeap.first, timerActions[top.id] == nil { popTimer() }
        return timerHeap.first?.deadline
    }

    // MARK: Running

    /// Turns the loop until `done()` is true, checking it before every wait.
    public func run(until done: () -> Bool) throws {
        while !done() { try runOnce() }
    }

    /// Waits for at most one batch of readiness events (or the next timer), then runs every
    /// handler and due timer. `maximumWait` bounds the wait (nil: until something happens).
    public func runOnce(maximumWait: Duration? = nil) throws {
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
            let fd = event.data.fd
            // A handler earlier in this batch may have unwatched this descriptor.
            guard let handler = handlers[fd] else { continue }
            let bits = event.events
            handler(
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
            guard timerHeap[child].deadline < timerHeap[parent].deadline else { break }
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
            if left < timerHeap.count, timerHeap[left].deadline < timerHeap[smallest].deadline { smallest = left }
            if right < timerHeap.count, timerHeap[right].deadline < timerHeap[smallest].deadline { smallest = right }
            guard smallest != parent else { return }
            timerHeap.swapAt(parent, smallest)
            parent = smallest
        }
    }
}
