import Basics
import CSystemd
import EventLoop
import Glibc

/// The listening control socket: accepts connections without blocking, each with its peer's
/// credentials, and backs off for ``pauseAfterFailure`` when accepting fails (out of descriptors
/// or memory: the connection stays queued, and spinning on it would only burn the loop). On
/// ``close()`` it removes the socket file if it is still the one this process made.
final class ControlListener {
    /// How long accepting pauses after a failure.
    static let pauseAfterFailure: Duration = .milliseconds(100)

    /// The socket's path.
    let socketPath: String
    /// The listening descriptor, or -1 once closed.
    private(set) var fd: Int32
    /// The socket file this process made (nil for one systemd passed, which is never removed).
    private var identity: (device: UInt64, inode: UInt64)?
    private let loop: EventLoop
    private let log: ControlSocketLog
    private var isPaused = false

    /// Listens on `fd` at `socketPath`; `identity` is the file's if this process made it. The
    /// owner watches ``fd`` on `loop` and calls ``accept()`` when it is readable.
    init(
        fd: Int32, identity: (device: UInt64, inode: UInt64)?, socketPath: String, loop: EventLoop,
        log: ControlSocketLog
    ) {
        self.fd = fd
        self.identity = identity
        self.socketPath = socketPath
        self.loop = loop
        self.log = log
    }

    /// Whether it still listens (until ``close()``).
    var isListening: Bool { fd >= 0 }

    /// The next connection waiting, with its peer's credentials; nil when none is waiting now (or
    /// accepting failed and pauses). A connection whose credentials cannot be read is closed and
    /// skipped.
    func accept() -> (fd: Int32, peer: PeerCredentials)? {
        while fd >= 0 {
            let client = csd_accept_nonblocking(fd)
            if client < 0 {
                switch -client {
                case EAGAIN, EWOULDBLOCK:
                    return nil
                case EINTR, ECONNABORTED, EPROTO:
                    continue
                case EMFILE, ENFILE, ENOBUFS, ENOMEM:
                    log.record(
                        .error,
                        "Control socket \(socketPath): accept: \(Errno(-client)); pausing 100 ms")
                    pause()
                    return nil
                default:
                    log.record(.error, "Control socket \(socketPath): accept: \(Errno(-client))")
                    pause()
                    return nil
                }
            }
            do {
                return (client, try PeerCredentials.of(socket: client))
            } catch {
                log.record(.warning, "Control socket \(socketPath): connection refused: \(error)")
                Glibc.close(client)
            }
        }
        return nil
    }

    /// Stops watching for ``pauseAfterFailure``, then resumes (if still listening).
    private func pause() {
        guard !isPaused, fd >= 0 else { return }
        isPaused = true
        try? loop.update(fd, readable: false, writable: false)
        loop.schedule(after: Self.pauseAfterFailure) { [weak self] in
            guard let self else { return }
            isPaused = false
            if fd >= 0 { try? loop.update(fd, readable: true, writable: false) }
        }
    }

    /// Stops listening and removes the socket file if this process made it and it is still that
    /// file (a newer daemon may already have replaced it).
    func close() {
        guard fd >= 0 else { return }
        loop.unwatch(fd)
        Glibc.close(fd)
        fd = -1
        var status = stat()
        if let identity, lstat(socketPath, &status) == 0, UInt64(status.st_dev) == identity.device,
            UInt64(status.st_ino) == identity.inode
        {
            unlink(socketPath)
        }
        identity = nil
    }
}
