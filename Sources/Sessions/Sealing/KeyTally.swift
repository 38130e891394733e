/// What reading one file's records found of session keys: how many were stored in clear, how
/// many sealed keys opened, and which would not (no store key given, or one under which they do
/// not authenticate). Recovery decides from it whether a store must be converted or refused.
struct KeyTally {
    /// Register records holding a key in clear.
    var clear = 0
    /// Sealed register records whose key opened.
    var opened = 0
    /// Sealed register records whose key did not open: each one's file offset and session.
    var unopenable: [(offset: Int, id: SessionID)] = []
    /// Whether those were read without a store key at all.
    var readWithoutKey = false

    /// Sealed register records seen.
    var sealed: Int { opened + unopenable.count }
}
