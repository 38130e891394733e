import Sessions

/// The identifier of one run (stop, leftover or on-demand): 32 lowercase hexadecimal characters
/// (128 random bits), like systemd's `INVOCATION_ID=`. Every journal entry of the run carries it
/// as `SESSION_CLEANUP_RUN_ID=`, and `session-cleanup report RUN_ID` names a run by it.
package struct RunID: Sendable, Hashable, CustomStringConvertible {
    private let high: SessionID
    private let low: SessionID

    /// A fresh identifier from the system's cryptographic random source.
    package static func random() -> RunID { RunID(high: .random(), low: .random()) }

    private init(high: SessionID, low: SessionID) {
        self.high = high
        self.low = low
    }

    /// Parses exactly 32 lowercase hexadecimal characters; nil for anything else.
    package init?(validating text: String) {
        let bytes = Array(text.utf8)
        guard bytes.count == 32,
            let high = SessionID(validating: String(decoding: bytes[..<16], as: UTF8.self)),
            let low = SessionID(validating: String(decoding: bytes[16...], as: UTF8.self))
        else { return nil }
        self.init(high: high, low: low)
    }

    /// The 32 lowercase hexadecimal characters.
    package var description: String { high.description + low.description }
}
