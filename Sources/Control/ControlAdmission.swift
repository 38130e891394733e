import EventLoop

/// Who may open another control connection: at most ``ControlServer/Limits/maxClients`` in all,
/// of which the last ``ControlServer/Limits/reservedForRoot`` are root's (so other users cannot
/// lock root out), and ``ControlServer/Limits/maxClientsPerUser`` for one uid other than root.
/// It counts the connections open by uid; refusals are journaled at most once per
/// ``refusalLogInterval``, so a flood of them cannot flood the journal.
struct ControlAdmission {
    /// The shortest time between two journaled refusals.
    static let refusalLogInterval: Duration = .seconds(10)

    private let limits: ControlServer.Limits
    /// Connections open now, in all.
    private(set) var count = 0
    /// Connections open now by uid (only uids that hold one).
    private var countByUID: [UInt32: Int] = [:]
    private var lastRefusalLogged: MonotonicInstant?

    /// Admits within `limits`.
    init(limits: ControlServer.Limits) { self.limits = limits }

    /// Why `peer` may not have another connection now, or nil if it may.
    func refusal(for peer: PeerCredentials) -> String? {
        if count >= limits.maxClients {
            return "too many control connections (\(limits.maxClients)); try again later"
        }
        guard peer.uid != 0 else { return nil }
        if count >= limits.maxClients - limits.reservedForRoot {
            return "too many control connections (\(limits.maxClients - limits.reservedForRoot) for users "
                + "other than root); try again later"
        }
        if countByUID[peer.uid, default: 0] >= limits.maxClientsPerUser {
            return "too many control connections from uid \(peer.uid) (\(limits.maxClientsPerUser)); try again later"
        }
        return nil
    }

    /// Counts a connection `peer` opened.
    mutating func admitted(_ peer: PeerCredentials) {
        count += 1
        countByUID[peer.uid, default: 0] += 1
    }

    /// Counts a connection of `peer`'s as closed.
    mutating func closed(_ peer: PeerCredentials) {
        count -= 1
        let left = countByUID[peer.uid, default: 1] - 1
        countByUID[peer.uid] = left > 0 ? left : nil
    }

    /// Whether a refusal at `now` is journaled (then the next is not for ``refusalLogInterval``).
    mutating func journalsRefusal(at now: MonotonicInstant) -> Bool {
        guard lastRefusalLogged.map({ now.duration(since: $0) >= Self.refusalLogInterval }) ?? true else {
            return false
        }
        lastRefusalLogged = now
        return true
    }
}
