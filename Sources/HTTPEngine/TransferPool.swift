import CCurl
import Vocabulary

/// An engine's idle transfers (each a `ccurl_transfer` with its easy handle), kept for reuse and
/// grouped by the ``TransferProfile`` they are configured for, so a new request of a known
/// endpoint only sets what differs per call. A handle changes profile by a reset and a full
/// configuration, only when no idle handle of the wanted profile is left.
///
/// Profiles are numbered in the order the pool first sees them (``profileNumber(for:)``, once per
/// request); ``take(profile:subject:)`` and ``put(_:profile:)`` go by that number, so a transfer
/// costs one profile comparison, not one per pool operation.
final class TransferPool {
    // Touched twice per transfer; exclusivity is not checked at run time (issue 10's instruction
    // count): the pool belongs to one engine on the loop's thread, and every access is one
    // statement that calls out to nothing which could reach the pool again.
    /// Profiles seen, by number; never removed, so a number stays valid for the pool's life.
    @exclusivity(unchecked) private var profiles: [TransferProfile] = []
    /// The idle transfers configured for each profile (same index as `profiles`).
    @exclusivity(unchecked) private var idleTransfers: [[OpaquePointer]] = []
    /// The profile object the last request brought, and its number: requests mostly come in
    /// runs of one endpoint, whose requests share one object (held here, so no other object can
    /// take its identity).
    @exclusivity(unchecked) private var lastProfile: (profile: TransferProfile, number: Int)?
    @exclusivity(unchecked) private var idle = 0
    private let limit: Int

    /// A pool keeping at most `limit` idle transfers.
    init(limit: Int) {
        self.limit = limit
    }

    deinit { drain() }

    /// Frees every idle transfer (profile numbers stay valid).
    func drain() {
        for index in idleTransfers.indices {
            for transfer in idleTransfers[index] { ccurl_transfer_free(transfer) }
            idleTransfers[index] = []
        }
        idle = 0
    }

    /// Idle transfers kept.
    var count: Int { idle }

    /// The number of `request`'s profile in this pool (a new one if the pool has not seen it).
    func profileNumber(for request: HTTPRequest) -> Int {
        let profile = request.profile
        if let last = lastProfile, last.profile === profile { return last.number }
        let number: Int
        if let known = profiles.firstIndex(of: profile) {
            number = known
        } else {
            number = profiles.count
            profiles.append(profile)
            idleTransfers.append([])
        }
        lastProfile = (profile, number)
        return number
    }

    /// A transfer configured for profile `number` and using `share` (a CURLSH): an idle one of
    /// that profile, else another idle one reconfigured, else a new one.
    func take(profile number: Int, share: UnsafeMutableRawPointer, subject: String) throws -> OpaquePointer {
        if let transfer = idleTransfers[number].popLast() {
            idle -= 1
            do {
                try TransferOptions.check(ccurl_transfer_use_share(transfer, share), "CURLOPT_SHARE", subject)
            } catch {
                ccurl_transfer_free(transfer)
                throw error
            }
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
            try TransferOptions.configure(transfer, for: profiles[number], subject: subject)
        } catch {
            ccurl_transfer_free(transfer)
            throw error
        }
        return transfer
    }

    /// Takes back a finished transfer (no longer in the multi handle) configured for profile
    /// `number`: released (ccurl_transfer_release) and kept, or freed when the pool is full.
    func put(_ transfer: OpaquePointer, profile number: Int) {
        ccurl_transfer_release(transfer)
        guard idle < limit else {
            ccurl_transfer_free(transfer)
            return
        }
        idle += 1
        idleTransfers[number].append(transfer)
    }
}
