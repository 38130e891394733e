import Glibc

/// A value guarded by a pthread mutex, for state that the store's writer queues and the owner's
/// thread both touch. Synchronization's `Mutex` waits on a futex inside the Swift runtime when it
/// is contended, which ThreadSanitizer cannot see; a pthread mutex it can, so a
/// `scripts/sanitize.sh thread` report here means a real race.
final class PThreadLocked<Value>: @unchecked Sendable {
    private var value: Value
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)

    init(_ value: Value) {
        self.value = value
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Runs `body` with the value while holding the lock.
    func withLock<Result>(_ body: (inout Value) throws -> Result) rethrows -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body(&value)
    }
}
