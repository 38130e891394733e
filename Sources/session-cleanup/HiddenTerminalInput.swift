import Glibc

/// A terminal that does not echo what is typed, for as long as this value lives: how a secret
/// is read from a person (`register` reading a session key), as `passwd` and `ssh` do.
///
/// Echo is off, and so are the keys that send signals (Ctrl-C, Ctrl-Z, Ctrl-\): a signal
/// would end the process with echo still off. Ctrl-C then arrives as the byte 0x03, which the
/// reader treats as "cancelled". Line editing (backspace, Ctrl-U) and Ctrl-D still work.
/// ``restore()`` (or deinit) puts the terminal back as it was.
package final class HiddenTerminalInput {
    /// The byte Ctrl-C gives while signals are off.
    package static let interrupt: UInt8 = 0x03

    private let fd: Int32
    private var saved: termios
    private var restored = false

    /// Turns echo off on terminal `fd`; nil when `fd` is not a terminal (or cannot be changed).
    package init?(fd: Int32) {
        var current = termios()
        guard isatty(fd) == 1, tcgetattr(fd, &current) == 0 else { return nil }
        self.fd = fd
        saved = current
        current.c_lflag &= ~tcflag_t(ECHO | ECHONL | ISIG)
        guard tcsetattr(fd, TCSAFLUSH, &current) == 0 else { return nil }
    }

    deinit { restore() }

    /// Puts the terminal's settings back (once).
    package func restore() {
        guard !restored else { return }
        restored = true
        _ = tcsetattr(fd, TCSANOW, &saved)
    }
}
