import Glibc

/// Small documents kept beside the sessions, in the store's directory (the one it is in now:
/// made again after a deletion, they follow it) — e.g. the last stop run's summary.
extension SessionStore {
    /// Replaces the document `name`, atomically and durably, mode 0600. `name` must be a plain
    /// file name.
    package func writeDocument(_ name: String, _ bytes: [UInt8]) throws(StoreError) {
        try checkOpen()
        try directory.writeAtomically(name, bytes)
    }

    /// The same with contents made a piece at a time (see `StoreDirectory.writeAtomically(_:pieces:)`):
    /// `next` fills its argument with the next piece and returns false once there is none.
    package func writeDocument(_ name: String, pieces next: (inout [UInt8]) -> Bool) throws(StoreError) {
        try checkOpen()
        try directory.writeAtomically(name, pieces: next)
    }

    /// Keeps `size` bytes of disk space allocated under the name `reserved` (made durably if it
    /// is not there), for a document that must be writable on a full disk.
    package func reserveDocument(_ reserved: String, size: Int) throws(StoreError) {
        try checkOpen()
        try directory.reserve(reserved, size: size)
    }

    /// Writes the document `name` into the space kept by ``reserveDocument(_:size:)`` under
    /// `reserved` (no new space needed), durably; `reserved` is gone afterwards. `bytes` must fit
    /// the reserved size (pad them to it: what they do not cover keeps its old contents).
    package func writeReservedDocument(_ reserved: String, _ bytes: [UInt8], as name: String) throws(StoreError) {
        try checkOpen()
        try directory.fillReserved(reserved, bytes, as: name)
    }

    /// Removes the document `name` durably (the directory is synced); nothing if there is none.
    package func removeDocument(_ name: String) throws(StoreError) {
        try checkOpen()
        try directory.removeIfPresent(name)
        try directory.fsyncDirectory()
    }

    /// The document `name`, or nil if there is none (or it cannot be read); of a document larger
    /// than `limit` bytes, its first `limit` bytes.
    package func readDocument(_ name: String, limit: Int = .max) -> [UInt8]? {
        guard !isClosed, let f = try? directory.openExisting(name, flags: O_RDONLY) else { return nil }
        return try? directory.readAll(f, name: name, limit: limit)
    }
}
