import Foundation
import Glibc

@testable import Basics
@testable import Control
@testable import EventLoop
@testable import JSON

/// Runs an `EventLoop` on one dedicated thread, the only thread that touches the loop and what is
/// registered with it while it runs. Other threads reach it through ``sync(_:)``.
/// `@unchecked Sendable`: `actions`, `stopRequested` and `finished` are guarded by `condition`;
/// `loop` and the objects it serves are used only by the loop thread between `start` and `stop`.
final class LoopThread: @unchecked Sendable {
    let loop: EventLoop
    private let condition = NSCondition()
    private var actions: [() -> Void] = []
    private var stopRequested = false
    private var finished = true

    init() throws { loop = try EventLoop() }

    func start() {
        condition.lock()
        finished = false
        condition.unlock()
        let thread = Thread { [self] in run() }
        thread.name = "control-test-loop"
        thread.start()
    }

    private func run() {
        while true {
            condition.lock()
            let todo = actions
            actions = []
            let stop = stopRequested
            condition.unlock()
            for action in todo { action() }
            if stop { break }
            do { try loop.runOnce(maximumWait: .milliseconds(5)) } catch { break }
        }
        condition.lock()
        finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// Runs `body` on the loop thread and returns its result.
    func sync<T>(_ body: @escaping () -> T) -> T {
        let box = ResultBox<T>()
        condition.lock()
        actions.append { [condition] in
            let value = body()
            condition.lock()
            box.value = value
            condition.broadcast()
            condition.unlock()
        }
        while box.value == nil { condition.wait() }
        condition.unlock()
        return box.value!
    }

    /// Stops the thread and waits for it; afterwards the caller owns the loop again.
    func stop() {
        condition.lock()
        stopRequested = true
        while !finished { condition.wait() }
        condition.unlock()
    }
}

private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}

/// A handler that records what it was asked and answers at once, or after `slowDelay` for
/// `unregister` of an id starting with "slow", or never for an id starting with "never".
/// `@unchecked Sendable`: `records` is guarded by `lock`; `loop` is used only on its thread.
final class RecordingHandler: ControlRequestHandler, @unchecked Sendable {
    struct Record {
        let request: ControlRequest
        let peer: PeerCredentials
    }

    private let lock = NSLock()
    private var records: [Record] = []
    private let loop: EventLoop
    var slowDelay: Duration = .milliseconds(200)

    init(loop: EventLoop) { self.loop = loop }

    private var listedSessions: [ControlSessionInfo] = []

    /// What `list` answers.
    var listed: [ControlSessionInfo] {
        get {
            lock.lock()
            defer { lock.unlock() }
            return listedSessions
        }
        set {
            lock.lock()
            listedSessions = newValue
            lock.unlock()
        }
    }

    private var statusOverride: JSONValue?
    private var reportOverride: JSONValue?

    /// What `status` answers instead of `{"state":"running","sessions":N}`, if set.
    var cannedStatus: JSONValue? {
        get { locked { statusOverride } }
        set { locked { statusOverride = newValue } }
    }

    /// What `end` answers instead of `{"ended":0}`, if set.
    var cannedReport: JSONValue? {
        get { locked { reportOverride } }
        set { locked { reportOverride = newValue } }
    }

    private func locked<T>(_ body: () -> T) -> T {
        lock.lock()
        defer { lock.unlock() }
        return body()
    }

    var received: [Record] {
        lock.lock()
        defer { lock.unlock() }
        return records
    }

    func handle(_ request: ControlRequest, from peer: PeerCredentials, reply: ControlReply) {
        lock.lock()
        records.append(Record(request: request, peer: peer))
        let count = records.count
        lock.unlock()
        switch request {
        case .register:
            reply(.registered(id: String(format: "%016x", count)))
        case .unregister(let id) where id.hasPrefix("slow"):
            loop.schedule(after: slowDelay) { reply(.success) }
        case .unregister(let id) where id.hasPrefix("never"):
            break
        case .unregister(let id) where id.hasPrefix("huge"):
            reply(.failure(.internal, String(repeating: "x", count: 1 << 20)))
        case .unregister(let id) where id.hasPrefix("missing"):
            reply(.failure(.notFound, "no session \(id)"))
        case .unregister:
            reply(.success)
        case .list:
            reply(.sessions(listed))
        case .status:
            reply(.status(cannedStatus ?? ["state": "running", "sessions": .integer(Int64(count))]))
        case .end, .report:
            reply(.ended(report: cannedReport ?? ["ended": 0]))
        case .reload:
            reply(.reloaded(files: [], notes: []))
        }
    }
}

/// A plain blocking Unix-socket client with timeouts, for poking the server byte by byte.
final class RawClient {
    let fd: Int32
    private var buffered: [UInt8] = []

    init(path: String) throws {
        guard let address = UnixSocketAddress(path: path) else { throw POSIXError(.ENAMETOOLONG) }
        fd = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        guard address.connect(fd) == 0 else {
            let error = errno
            close(fd)
            throw POSIXError(.init(rawValue: error) ?? .EIO)
        }
    }

    deinit { close(fd) }

    /// Sends everything (EPIPE and friends end it quietly: the server may have closed).
    @discardableResult
    func send(_ text: String) -> Bool { send(Array(text.utf8)) }

    @discardableResult
    func send(_ bytes: [UInt8]) -> Bool {
        var offset = 0
        while offset < bytes.count {
            let count = bytes.withUnsafeBytes {
                Glibc.send(fd, $0.baseAddress! + offset, $0.count - offset, Int32(MSG_NOSIGNAL))
            }
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return false }
            offset += count
        }
        return true
    }

    func shutdownWrite() { shutdown(fd, Int32(SHUT_WR)) }

    enum ReadResult: Equatable {
        case line(String)
        case closed
        case timedOut
    }

    /// The next line, or `.closed` at end of file (or a reset), or `.timedOut`.
    func readLine(timeout: TimeInterval = 5) -> ReadResult {
        let deadline = Date().addingTimeInterval(timeout)
        while true {
            if let newline = buffered.firstIndex(of: UInt8(ascii: "\n")) {
                let line = String(decoding: buffered[..<newline], as: UTF8.self)
                buffered.removeFirst(newline + 1)
                return .line(line)
            }
            let left = deadline.timeIntervalSinceNow
            guard left > 0 else { return .timedOut }
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let ready = poll(&entry, 1, Int32(left * 1000) + 1)
            if ready < 0 && errno == EINTR { continue }
            if ready <= 0 { return .timedOut }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let count = recv(fd, &chunk, chunk.count, 0)
            if count < 0 && errno == EINTR { continue }
            if count <= 0 { return .closed }
            buffered.append(contentsOf: chunk[0..<count])
        }
    }

    /// The next line decoded as a JSON object.
    func readObject(timeout: TimeInterval = 5) -> [String: Any]? {
        guard case .line(let line) = readLine(timeout: timeout) else { return nil }
        return (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: Any]
    }
}
