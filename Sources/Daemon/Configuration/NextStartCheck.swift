import Basics
import EventLoop
import Glibc

/// Before a restart hand-over: would the process systemd starts next accept the configuration?
/// A hand-over to a daemon that then refuses to start (exit 78) leaves every session stored with
/// no daemon to end them at shutdown, so an invalid configuration turns the restart into a stop
/// run. The check runs the binary now on disk (`check-config`; after an upgrade that is the new
/// version, which is what starts next), bounded in time.
enum NextStartCheck {
    /// What the check found.
    enum Verdict: Equatable {
        /// The configuration is valid for the next start.
        case valid
        /// `check-config` refused it: its message.
        case invalid(String)
        /// The check could not tell (no binary, a time-out, a crash): the hand-over goes ahead.
        case unknown(String)
    }

    /// The longest the check may take.
    static let timeout: Duration = .seconds(1)

    /// Runs `BINARY [--user] check-config --config FILE`, the binary being the one this process
    /// was started from, as it is on disk now (`--user` for a user's daemon: its own files).
    static func run(configFile: String, required: Bool, instance: DaemonPaths.Instance = .system) -> Verdict {
        guard let binary = binaryOnDisk() else { return .unknown("the executable's path is unknown") }
        // What the daemon itself refuses at start, not what check-config checks of the host.
        var arguments = [binary] + (instance == .user ? ["--user"] : []) + ["check-config", "--no-host-checks"]
        if required { arguments += ["--config", configFile] }
        return run(arguments)
    }

    /// `/proc/self/exe`, without the " (deleted)" an upgrade that replaced the file adds.
    static func binaryOnDisk() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let length = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard length > 0 else { return nil }
        var path = String(decoding: buffer[0..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        if path.hasSuffix(" (deleted)") { path.removeLast(" (deleted)".count) }
        return access(path, X_OK) == 0 ? path : nil
    }

    /// Runs `arguments` with stdin on /dev/null and its stderr captured; the verdict by exit status.
    static func run(_ arguments: [String]) -> Verdict {
        var pipeEnds: [Int32] = [-1, -1]
        guard pipe(&pipeEnds) == 0 else { return .unknown("pipe: errno \(errno)") }
        // Close-on-exec on both ends (the child gets the write end as its stderr by dup2).
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        _ = fcntl(pipeEnds[0], F_SETFL, O_NONBLOCK)
        defer { close(pipeEnds[0]) }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // The child must not inherit the daemon's blocked signals: it is killed at the time-out.
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK))
        var argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, arguments[0], &actions, &attributes, &argv, environ)
        close(pipeEnds[1])
        guard spawned == 0 else { return .unknown("cannot run \(arguments[0]): \(Errno(spawned))") }

        let clock = SystemMonotonicClock()
        let deadline = clock.now().advanced(by: timeout)
        var output: [UInt8] = []
        var status: Int32 = 0
        while true {
            var chunk = [UInt8](repeating: 0, count: 4096)
            let count = read(pipeEnds[0], &chunk, chunk.count)
            if count > 0, output.count < 4096 { output += chunk[0..<count] }
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid { break }
            if reaped < 0 && errno != EINTR { return .unknown("waitpid: errno \(errno)") }
            if clock.now() >= deadline {
                kill(pid, SIGKILL)
                waitpid(pid, &status, 0)
                return .unknown("check-config took longer than \(timeout.humanReadable)")
            }
            var entry = pollfd(fd: pipeEnds[0], events: Int16(POLLIN), revents: 0)
            poll(&entry, 1, 5)
        }
        let exited = status & 0x7f == 0
        let code = (status >> 8) & 0xff
        guard exited else { return .unknown("check-config ended by signal \(status & 0x7f)") }
        switch code {
        case 0: return .valid
        case ExitStatus.configurationInvalid.rawValue:
            var text = String(decoding: output, as: UTF8.self)
            while text.last?.isWhitespace == true { text.removeLast() }
            if text.hasPrefix("session-cleanup: ") { text.removeFirst("session-cleanup: ".count) }
            return .invalid(text.isEmpty ? "check-config exited 78" : text)
        default: return .unknown("check-config exited \(code)")
        }
    }
}
