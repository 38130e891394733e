/// What the files' session keys say about the store key the pass was given
/// (docs/store-format.md, "Sealed keys"): sealed keys and no store key, or a store key none of
/// them opens under, refuse the store before anything is changed — its sessions are never taken
/// for none; a few that do not open beside many that do are damage, kept aside; keys in clear
/// with a store key given are sealed by a rewrite.
extension RecoveryPass {
    /// Throws when the store cannot be read with ``storeKey``; otherwise plans what the keys need.
    mutating func settleKeys() throws(StoreError) {
        let sealed = snapshotKeys.sealed + logKeys.sealed
        let opened = snapshotKeys.opened + logKeys.opened
        let directory = Self.directory(of: paths.log)
        if storeKey == nil, sealed > 0 {
            throw StoreError(
                kind: .storeKeyMissing,
                message: "the session store in \(directory) holds \(sealed) sealed session keys, but no store key "
                    + "was given ([Store] KeyCredential= unset, or its credential not loaded): they cannot be read "
                    + "without it; refusing to open (nothing was changed)",
                path: directory)
        }
        if storeKey != nil, sealed > 0, opened == 0 {
            throw StoreError(
                kind: .storeKeyRejected,
                message: "none of the \(sealed) sealed session keys in \(directory) authenticates under the store key: "
                    + "it is not the key that sealed them (another KeyCredential=, a re-created credential?) or every "
                    + "record is damaged; refusing to open (nothing was changed)",
                path: directory)
        }
        if let first = logKeys.unopenable.first {
            problem(
                .corruptLogRecord, paths.log, offset: first.offset,
                "\(logKeys.unopenable.count) sealed keys do not authenticate under the store key (damage, or a "
                    + "record moved to another session; the first: session \(first.id)); the log kept aside, "
                    + "those sessions cannot be ended")
            state.plan.preserveLog = true
            state.plan.rewrite = true
        }
        if storeKey != nil, snapshotKeys.clear + logKeys.clear > 0 {
            state.plan.rewrite = true
            state.report.keysSealed = true
        }
    }

    /// The directory part of `path`, for messages about the whole store.
    private static func directory(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "." }
        return slash == path.startIndex ? "/" : String(path[..<slash])
    }
}
