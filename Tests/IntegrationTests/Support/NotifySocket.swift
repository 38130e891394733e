import Foundation
import Glibc

@testable import Basics

/// A datagram socket the test owns and points `NOTIFY_SOCKET` at: receives exactly the
/// messages the daemon sends with `sd_notify`.
final class NotifySocket {
    let path: String
    private let fd: Int32

    init(directory: String) throws {
        path = directory + "/notify.sock"
        unlink(path)  // a daemon started earlier on the same scratch directory left its socket
        guard let address = UnixSocketAddress(path: path) else { throw POSIXError(.ENAMETOOLONG) }
        fd = socket(AF_UNIX, Int32(SOCK_DGRAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
        guard address.bind(fd) == 0 else { throw POSIXError(.init(rawValue: errno) ?? .EIO) }
    }

    deinit { close(fd) }

    /// The next message, or nil after `timeout`.
    func receive(timeout: TimeInterval) -> String? {
        var pollfd = Glibc.pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        guard poll(&pollfd, 1, Int32(timeout * 1000)) == 1 else { return nil }
        var buffer = [UInt8](repeating: 0, count: 65536)
        let count = recv(fd, &buffer, buffer.count, 0)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count], as: UTF8.self)
    }

    /// Messages until one satisfies `match` (returned last), or nil after `timeout`.
    func receive(until match: (String) -> Bool, timeout: TimeInterval) -> [String]? {
        let deadline = Date().addingTimeInterval(timeout)
        var seen: [String] = []
        while Date() < deadline {
            guard let message = receive(timeout: deadline.timeIntervalSinceNow) else { return nil }
            seen.append(message)
            if match(message) { return seen }
        }
        return nil
    }

    /// Everything that arrives within `window`.
    func drain(for window: TimeInterval) -> [String] {
        var seen: [String] = []
        let deadline = Date().addingTimeInterval(window)
        while let message = receive(timeout: max(0, deadline.timeIntervalSinceNow)) { seen.append(message) }
        return seen
    }
}
