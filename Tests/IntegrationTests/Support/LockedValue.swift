import Foundation

/// A value one thread writes and another reads after waiting for it (the lock orders them).
final class LockedValue<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T

    init(_ value: T) { stored = value }

    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}
