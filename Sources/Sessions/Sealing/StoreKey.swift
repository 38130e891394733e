import CSealing

/// The key that seals session keys at rest (docs/store-format.md, "Sealed keys"): 32 bytes for
/// AES-256-GCM, from a systemd credential (`[Store] KeyCredential=`). Never printed: its
/// description is `<redacted>`, and its bytes leave the value only for libcrypto.
package struct StoreKey: Sendable, CustomStringConvertible, CustomDebugStringConvertible, CustomReflectable {
    /// Bytes a key has.
    package static let byteCount = Int(CSEALING_KEY_BYTES)
    /// Bytes sealing adds to a plaintext: the 12-byte nonce and the 16-byte tag.
    static let overhead = Int(CSEALING_OVERHEAD)

    private let bytes: [UInt8]

    /// The key in `bytes`, or nil unless they are exactly ``byteCount`` bytes.
    package init?(bytes: [UInt8]) {
        guard bytes.count == Self.byteCount else { return nil }
        self.bytes = bytes
    }

    /// Always `<redacted>`.
    package var description: String { "<redacted>" }
    /// Always `<redacted>`.
    package var debugDescription: String { "<redacted>" }
    /// A mirror with no children, so reflection-based printing shows nothing of the key.
    package var customMirror: Mirror { Mirror(self, children: [], displayStyle: .struct) }

    /// `plain` sealed with `aad` authenticated alongside: nonce ‖ ciphertext ‖ tag. Nil only when
    /// the kernel's randomness or libcrypto failed.
    func seal(_ plain: UnsafeRawBufferPointer, aad: [UInt8]) -> [UInt8]? {
        var out = [UInt8](repeating: 0, count: plain.count + Self.overhead)
        let status = bytes.withUnsafeBufferPointer { key in
            aad.withUnsafeBufferPointer { aad in
                out.withUnsafeMutableBufferPointer { out in
                    csealing_seal(
                        key.baseAddress, aad.baseAddress, aad.count,
                        plain.baseAddress?.assumingMemoryBound(to: UInt8.self), plain.count, out.baseAddress)
                }
            }
        }
        return status == 0 ? out : nil
    }

    /// Opens what ``seal(_:aad:)`` made with the same `aad`, handing the plaintext to `body`
    /// and wiping it afterwards; nil when it does not authenticate (another key, another `aad`,
    /// a changed byte).
    func open<R>(_ sealed: UnsafeRawBufferPointer, aad: [UInt8], _ body: (UnsafeRawBufferPointer) -> R) -> R? {
        guard sealed.count >= Self.overhead else { return nil }
        var plain = [UInt8](repeating: 0, count: sealed.count - Self.overhead)
        defer { plain.withUnsafeMutableBytes { csealing_wipe($0.baseAddress, $0.count) } }
        let status = bytes.withUnsafeBufferPointer { key in
            aad.withUnsafeBufferPointer { aad in
                plain.withUnsafeMutableBufferPointer { out in
                    csealing_open(
                        key.baseAddress, aad.baseAddress, aad.count,
                        sealed.baseAddress?.assumingMemoryBound(to: UInt8.self), sealed.count, out.baseAddress)
                }
            }
        }
        guard status == 0 else { return nil }
        return plain.withUnsafeBytes { body($0) }
    }
}
