extension ControlServer {
    /// Bounds on what clients may cost.
    package struct Limits: Sendable, Equatable {
        /// Longest request line, newline excluded.
        package var maxLineBytes: Int
        /// Time for a complete request line (from connecting, or from the previous reply), and
        /// for a reply to make progress while it is written.
        package var requestTimeout: Duration
        /// Connections served at once, in all.
        package var maxClients: Int
        /// Connections one uid other than root may hold at once.
        package var maxClientsPerUser: Int
        /// Of ``maxClients``, how many only root may use (so other users cannot lock root out).
        package var reservedForRoot: Int
        /// Largest reply; a larger one is replaced by an `internal` error.
        package var maxReplyBytes: Int

        /// The daemon's limits: 64 KiB lines, 5 s per request, 512 clients of which 16 are
        /// root's, 32 per other user, 32 MiB replies.
        package init(
            maxLineBytes: Int = 64 * 1024, requestTimeout: Duration = .seconds(5), maxClients: Int = 512,
            maxClientsPerUser: Int = 32, reservedForRoot: Int = 16, maxReplyBytes: Int = 32 * 1024 * 1024
        ) {
            self.maxLineBytes = maxLineBytes
            self.requestTimeout = requestTimeout
            self.maxClients = maxClients
            self.maxClientsPerUser = maxClientsPerUser
            self.reservedForRoot = reservedForRoot
            self.maxReplyBytes = maxReplyBytes
        }
    }
}
