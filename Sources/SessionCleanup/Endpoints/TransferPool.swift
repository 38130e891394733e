import CCurl

/// An engine's idle transfers (each a `ccurl_transfer` with its easy handle), kept for reuse and
/// grouped by the ``TransferProfile`` they are configured for, so a new request of a known
/// endpoint only sets what differs per call. A handle changes profile by a reset and a full
/// configuration, only when no idle handle of the wanted profile is left.
final class TransferPool {
    /// Profiles seen, and the idle transfers configured for each (same index).
    private var profiles: [TransferProfile] = []
    private var idleTransfers: [[OpaquePointer]] = []
    private var idle = 0
    private let limit: Int
    private let share: UnsafeMutableRawPointer?

    /// A pool keeping at most `limit` idle transfers, each using `share` (a CURLSH, or nil).
    init(limit: Int, share: UnsafeMutableRawPointer?) {
        self.limit = limit
        self.share = share
    }

    deinit { drain() }

    /// Frees every idle transfer.
    func drain() {
        for transfers in idleTransfers {
            for transfer in transfers { ccurl_transfer_free(transfer) }
        }
        profiles = []
        idleTransfers = []
        idle = 0
    }

    private func index(of profile: TransferProfile) -> Int? {
        for index in profiles.indices where profiles[index] == profile { return index }
        return nil
    }

    /// Idle transfers kept.
    var count: Int { idle }

    /// A transfer configured for `profile`: an idle one of that profile, else another idle one
    /// reconfigured, else a new one.
    func take(for profile: TransferProfile, subject: String) throws -> OpaquePointer {
        if let index = index(of: profile), let transfer = idleTransfers[index].popLast() {
            idle -= 1
            return transfer
        }
        let transfer: OpaquePointer
        if let index = idleTransfers.firstIndex(where: { !$0.isEmpty }), let reused = idleTransfers[index].popLast() {
            idle -= 1
            transfer = reused
            do {
                try TransferOptions.check(ccurl_transfer_reset(transfer, share), "curl_easy_reset", subject)
            } catch {
                ccurl_transfer_free(transfer)
                throw error
            }
        } else {
            var code = CURLE_OK
            guard let created = ccurl_transfer_new(share, &code) else {
                throw HTTPEngineError("curl_easy_init", subject, detail: String(cString: ccurl_easy_strerror(code)))
            }
            transfer = created
        }
        do {
            try TransferOptions.configure(transfer, for: profile, subject: subject)
        } catch {
            ccurl_transfer_free(transfer)
            throw error
        }
        return transfer
    }

    /// Takes back a finished transfer (no longer in the multi handle) configured for `profile`:
    /// released (ccurl_transfer_release) and kept, or freed when the pool is full.
    func put(_ transfer: OpaquePointer, profile: TransferProfile) {
        ccurl_transfer_release(transfer)
        guard idle < limit else {
            ccurl_transfer_free(transfer)
            return
        }
        idle += 1
        if let index = index(of: profile) {
            idleTransfers[index].append(transfer)
        } else {
            profiles.append(profile)
            idleTransfers.append([transfer])
        }
    }
}
