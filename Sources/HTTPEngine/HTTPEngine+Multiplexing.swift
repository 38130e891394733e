import CCurl

/// Sharing connections while the engine learns each origin's HTTP version (``MultiplexPlanner``):
/// whether a transfer waits for a connection it can share, how many of an origin's transfers
/// may run meanwhile, and what a connection coming up tells.
extension HTTPEngine {
    /// Whether a transfer about to be handed to libcurl should wait for a connection it can
    /// share (HTTP/2) rather than open one (see ``MultiplexPlanner``).
    func waitsToMultiplex(_ tag: UInt64, _ entry: ActiveTransfer) -> Bool {
        let mayMultiplex: Bool
        switch entry.request.version {
        case .http1_1: mayMultiplex = false
        case .automatic: mayMultiplex = entry.origin.isTLS
        case .http2: mayMultiplex = true
        }
        let origin = entry.originNumber
        let wait = multiplexing.handing(
            tag, origin: origin, mayMultiplex: mayMultiplex, running: queue.running(origin))
        applyLimit(origin)
        return wait
    }

    /// After libcurl ran (``CurlMultiOwner``): openers whose connection is up let more transfers
    /// of their origin go, and so do probes whose connection is up when ALPN tells the version
    /// (one round trip before their reply would).
    func curlActionDone() {
        guard !multiplexing.awaited.isEmpty else { return }
        for (origin, tag) in multiplexing.awaited {
            guard let handle = transfers[tag]?.handle, ccurl_transfer_connected(handle) != 0 else { continue }
            if multiplexing.isProbe(tag, of: origin) {
                let http2 = ccurl_transfer_alpn_http2(handle)
                guard http2 >= 0 else { continue }  // not told: its reply will tell
                multiplexing.probeConnected(tag, origin: origin, http2: http2 == 1)
            } else {
                multiplexing.connected(tag, origin: origin, opened: Self.openedConnection(handle))
            }
            applyLimit(origin)
        }
    }

    /// Whether a transfer opened a connection of its own rather than reusing one (libcurl may
    /// still find room on an open one for an opener).
    static func openedConnection(_ handle: OpaquePointer) -> Bool {
        var connects = 0
        _ = ccurl_easy_get_long(ccurl_transfer_easy(handle), CURLINFO_NUM_CONNECTS, &connects)
        return connects > 0
    }

    /// Gives the queue the planner's limit for `origin`; a hand-off follows if that let a
    /// blocked transfer go.
    func applyLimit(_ origin: Int) {
        if queue.restrict(origin, to: multiplexing.limit(origin)) { scheduleHandOff() }
    }
}
