/// Damage done to a store's two files, as a fuzz input says: bytes changed, a file cut short or
/// lost. Remembers the undamaged files, so that a target can ask which frames survived intact.
package struct StoreDamage: CustomStringConvertible {
    private let originalSnapshot: [UInt8]
    private let originalLog: [UInt8]
    /// The snapshot as damaged (nil: lost).
    package var snapshot: [UInt8]?
    /// The log as damaged (nil: lost).
    package var log: [UInt8]?
    private var changed: [(inLog: Bool, offset: Int)] = []

    package init(snapshot: [UInt8], log: [UInt8]) {
        originalSnapshot = snapshot
        originalLog = log
        self.snapshot = snapshot
        self.log = log
    }

    /// Applies what the rest of `spec` says, until it runs out: per step one byte saying which
    /// file (bit 0) and what (cut it at an offset, lose it, or change one byte at an offset).
    package mutating func apply(_ spec: inout FuzzBytes) {
        while !spec.isEmpty {
            let what = spec.next()
            let inLog = what & 1 != 0
            let size = (inLog ? log : snapshot)?.count ?? 0
            switch (what >> 1) % 8 {
            case 0 where size > 0:  // cut the file short
                let end = spec.u16() % size
                if inLog { log?.removeSubrange(end...) } else { snapshot?.removeSubrange(end...) }
            case 1:  // lose the file
                if inLog { log = nil } else { snapshot = nil }
            default:  // change one byte
                guard size > 0 else { continue }
                let offset = spec.u16() % size
                let flip = spec.next() | 1
                if inLog { log?[offset] ^= flip } else { snapshot?[offset] ^= flip }
                changed.append((inLog, offset))
            }
        }
    }

    /// Whether both files are as they were.
    package var isNone: Bool { snapshot == originalSnapshot && log == originalLog }

    /// Whether both files are gone (or the log is empty and there is no snapshot): a reader
    /// cannot tell that from a new store.
    package var nothingLeft: Bool { snapshot == nil && (log?.isEmpty ?? true) }

    /// Whether the bytes `frame` of the undamaged snapshot are still there, unchanged.
    package func snapshotIntact(_ frame: Range<Int>) -> Bool { intact(frame, snapshot, originalSnapshot) }
    /// Whether the bytes `frame` of the undamaged log are still there, unchanged.
    package func logIntact(_ frame: Range<Int>) -> Bool { intact(frame, log, originalLog) }

    private func intact(_ frame: Range<Int>, _ file: [UInt8]?, _ original: [UInt8]) -> Bool {
        guard let file, frame.upperBound <= file.count else { return frame.isEmpty && file != nil }
        return file[frame] == original[frame]
    }

    package var description: String {
        "snapshot \(snapshot.map { "\($0.count) of \(originalSnapshot.count) bytes" } ?? "lost"), "
            + "log \(log.map { "\($0.count) of \(originalLog.count) bytes" } ?? "lost"), bytes changed at \(changed)"
    }
}
