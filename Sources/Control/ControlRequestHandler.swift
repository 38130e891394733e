/// What the control server hands each decoded request to. The server knows the protocol, not
/// the domain: authorization (by ``PeerCredentials/uid``), limits per user and persistence are
/// the handler's.
package protocol ControlRequestHandler: AnyObject {
    /// Called on the loop thread for every decoded request. Answer through `reply` exactly once,
    /// on the loop thread, now or later (after a group commit's fsync, after an `end` run).
    func handle(_ request: ControlRequest, from peer: PeerCredentials, reply: ControlReply)
}
