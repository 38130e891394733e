extension HTTPEngine {
    /// What bounds an engine's transfers and connections.
    ///
    /// Transfers in flight are bounded by ``maxTransfers`` (and per origin by
    /// ``maxTransfersPerOrigin`` or a request's `maxConnectionsPerHost`); beyond that they wait in
    /// the engine. An HTTP/1.1 transfer uses one connection, and libcurl reuses an idle connection
    /// to the origin before it opens another, so an origin never has more connections open than
    /// it had transfers in flight at once. Over HTTP/2 transfers share connections, up to
    /// ``maxStreamsPerConnection`` (or the server's own limit, if lower) each. Finished
    /// connections stay open for reuse, up to ``maxIdleConnections`` beyond those in use; the
    /// least recently used one is closed first.
    package struct Limits: Sendable, Equatable {
        /// Transfers handed to libcurl at once, in all. At least 1.
        package var maxTransfers: Int
        /// Transfers handed to libcurl at once for one origin. At least 1; default
        /// ``maxTransfers``.
        package var maxTransfersPerOrigin: Int
        /// Connections kept open, idle, for reuse, beyond those in use: enough for one to every
        /// origin a run talks to keeps a pool from closing one origin's connection to open
        /// another's. Default ``maxTransfers``.
        package var maxIdleConnections: Int
        /// HTTP/2 streams one connection carries at once, at most (the server's own limit, if
        /// lower, applies too). Default 100: what libcurl assumes of a new connection until the
        /// server's SETTINGS arrive, and what most servers allow.
        package var maxStreamsPerConnection: Int

        /// Limits for `maxTransfers` transfers in flight; the others default from it.
        package init(
            maxTransfers: Int, maxTransfersPerOrigin: Int? = nil, maxIdleConnections: Int? = nil,
            maxStreamsPerConnection: Int? = nil
        ) {
            self.maxTransfers = max(1, maxTransfers)
            self.maxTransfersPerOrigin = max(1, min(maxTransfersPerOrigin ?? maxTransfers, self.maxTransfers))
            self.maxIdleConnections = max(0, maxIdleConnections ?? maxTransfers)
            self.maxStreamsPerConnection = max(1, maxStreamsPerConnection ?? 100)
        }

        /// Connections open at most: in use plus idle (libcurl's `CURLMOPT_MAXCONNECTS`).
        package var maxConnections: Int { maxTransfers + maxIdleConnections }
    }
}
