import Glibc

/// An `errno` value, as every message of the daemon names one: `Permission denied (errno 13)`.
///
/// The one place that turns an error number into text, so that every message says it the same
/// way (in the manner of swift-system's `Errno`).
package struct Errno: Error, Hashable, Sendable, CustomStringConvertible {
    /// The number (positive).
    package let rawValue: Int32

    /// The error numbered `rawValue`.
    package init(_ rawValue: Int32) { self.rawValue = rawValue }

    /// The calling thread's `errno` now.
    package static var current: Errno { Errno(Glibc.errno) }

    /// `strerror`'s text alone: `Permission denied`.
    package var text: String { strerror(rawValue).map { String(cString: $0) } ?? "unknown error" }

    /// `Permission denied (errno 13)`.
    package var description: String { "\(text) (errno \(rawValue))" }
}
