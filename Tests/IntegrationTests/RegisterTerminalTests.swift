import Foundation
import Glibc
import XCTest

/// `register` reading the key from a terminal (a pseudo-terminal the test drives).
final class RegisterTerminalTests: XCTestCase {
    /// A new pseudo-terminal: (master, slave). glibc's pty calls are not in Swift's Glibc
    /// module (they need _XOPEN_SOURCE), so they are looked up by name.
    private func openPseudoTerminal() throws -> (master: Int32, slave: Int32) {
        typealias OpenPT = @convention(c) (Int32) -> Int32
        typealias Grant = @convention(c) (Int32) -> Int32
        typealias Name = @convention(c) (Int32, UnsafeMutablePointer<CChar>?, Int) -> Int32
        let handle = dlopen(nil, RTLD_NOW)
        guard let open = dlsym(handle, "posix_openpt"), let grant = dlsym(handle, "grantpt"),
            let unlock = dlsym(handle, "unlockpt"), let name = dlsym(handle, "ptsname_r")
        else { throw POSIXError(.ENOSYS) }
        let master = unsafeBitCast(open, to: OpenPT.self)(O_RDWR | O_NOCTTY)
        guard master >= 0, unsafeBitCast(grant, to: Grant.self)(master) == 0,
            unsafeBitCast(unlock, to: Grant.self)(master) == 0
        else { throw POSIXError(.EIO) }
        var path = [CChar](repeating: 0, count: 128)
        guard unsafeBitCast(name, to: Name.self)(master, &path, path.count) == 0 else { throw POSIXError(.EIO) }
        let slave = Glibc.open(
            String(decoding: path.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self), O_RDWR | O_NOCTTY)
        guard slave >= 0 else { throw POSIXError(.EIO) }
        return (master, slave)
    }

    private func readAvailable(_ fd: Int32, for seconds: Double, until done: (String) -> Bool = { _ in false })
        -> String
    {
        var text: [UInt8] = []
        let deadline = Date().addingTimeInterval(seconds)
        var buffer = [UInt8](repeating: 0, count: 4096)
        while Date() < deadline {
            var entry = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            guard poll(&entry, 1, 50) == 1 else { continue }
            let count = read(fd, &buffer, buffer.count)
            if count <= 0 { break }
            text += buffer[0..<count]
            if done(String(decoding: text, as: UTF8.self)) { break }
        }
        return String(decoding: text, as: UTF8.self)
    }

    /// The key typed at the prompt used to be echoed, and so stayed in the terminal's scrollback.
    func testTheKeyTypedAtATerminalIsNotEchoedAndEchoComesBack() throws {
        let (master, slave) = try openPseudoTerminal()
        defer {
            close(master)
            close(slave)
        }
        var settings = termios()
        XCTAssertEqual(tcgetattr(slave, &settings), 0)
        XCTAssertNotEqual(settings.c_lflag & tcflag_t(ECHO), 0, "a terminal echoes by default")

        let process = Process()
        process.executableURL = URL(fileURLWithPath: BuiltBinary.path)
        process.arguments = ["register", "--endpoint", "auth", "--socket", "/nonexistent/control.sock"]
        let terminal = FileHandle(fileDescriptor: slave, closeOnDealloc: false)
        process.standardInput = terminal
        process.standardOutput = terminal
        process.standardError = terminal
        try process.run()
        let prompt = readAvailable(master, for: 5) { $0.contains("shown): ") }
        XCTAssertTrue(prompt.contains("Session key"), prompt)
        XCTAssertEqual(tcgetattr(slave, &settings), 0)
        XCTAssertEqual(settings.c_lflag & tcflag_t(ECHO), 0, "echo is off while the key is typed")
        _ = Array("Kq7s3cr3tTYPED\n".utf8).withUnsafeBytes { write(master, $0.baseAddress, $0.count) }
        let rest = readAvailable(master, for: 5) { $0.contains("session-cleanup: ") && $0.utf8.last == 0x0A }
        process.waitUntilExit()
        XCTAssertFalse(rest.contains("s3cr3t"), "the key was echoed: \(rest)")
        XCTAssertEqual(process.terminationStatus, 1, "no daemon at that socket: \(rest)")
        XCTAssertEqual(tcgetattr(slave, &settings), 0)
        XCTAssertNotEqual(settings.c_lflag & tcflag_t(ECHO), 0, "echo is back after reading")
        XCTAssertNotEqual(settings.c_lflag & tcflag_t(ISIG), 0, "and so are the signal keys")
    }
}
