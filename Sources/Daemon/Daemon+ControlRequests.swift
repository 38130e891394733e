import Control

extension Daemon: ControlRequestHandler {
    /// Every control request comes here first, and this is where each op is answered: `reload`
    /// by the daemon itself (it changes the configuration in force and tells systemd), the others
    /// by the ``SessionRequestHandler`` with the daemon's ``DaemonState`` as it is now. The
    /// answer goes back through `reply` only.
    package func handle(_ request: ControlRequest, from peer: PeerCredentials, reply: ControlReply) {
        guard let requests = started?.requests else {
            reply(.failure(.internal, "the daemon is not accepting requests"))
            return
        }
        let state = phase.state
        switch request {
        case .register(let key, let endpoints, let label):
            requests.register(key: key, endpoints: endpoints, label: label, for: peer, in: state, reply: reply)
        case .unregister(let id):
            requests.unregister(id, for: peer, reply: reply)
        case .list:
            requests.list(for: peer, reply: reply)
        case .status:
            requests.status(for: peer, in: state, reply: reply)
        case .end(let target):
            requests.end(target, for: peer, in: state, reply: reply)
        case .report(let runID):
            requests.report(runID, for: peer, in: state, reply: reply)
        case .reload:
            reloadRequested(by: peer, reply: reply)
        }
    }
}
