import CSealing

/// A session key sealed with the ``StoreKey`` for one store record (docs/store-format.md,
/// "Sealed keys"): the additional authenticated data is the session id's 8 bytes
/// (little-endian) followed by the record's type, so a sealed key moved into another session's
/// record, or into a record of another type, does not open.
enum SealedSessionKey {
    /// The additional authenticated data of session `id`'s key in a record of type `tag`.
    static func aad(id: SessionID, tag: UInt8) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(9)
        withUnsafeBytes(of: id.rawValue.littleEndian) { out.append(contentsOf: $0) }
        out.append(tag)
        return out
    }

    /// `key` sealed for session `id` in a record of type `tag`; nil when sealing failed.
    static func seal(_ key: SessionKey, id: SessionID, tag: UInt8, with storeKey: StoreKey) -> [UInt8]? {
        var plain = Array(key.exposedSecret.utf8)
        defer { plain.withUnsafeMutableBytes { csealing_wipe($0.baseAddress, $0.count) } }
        return plain.withUnsafeBytes { storeKey.seal($0, aad: aad(id: id, tag: tag)) }
    }

    /// The session key in `sealed`, or nil when it does not authenticate for session `id` and a
    /// record of type `tag` under `storeKey`.
    static func open(_ sealed: UnsafeRawBufferPointer, id: SessionID, tag: UInt8, with storeKey: StoreKey)
        -> SessionKey?
    {
        storeKey.open(sealed, aad: aad(id: id, tag: tag)) { SessionKey(String(decoding: $0, as: UTF8.self)) }
    }
}
