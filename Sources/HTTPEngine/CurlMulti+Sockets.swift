import CCurl
import EventLoop

/// The descriptors libcurl wants watched, registered with the loop (``SocketStates``): a
/// connection's socket stays registered, parked, between two transfers.
extension CurlMulti {
    /// CURLMOPT_SOCKETFUNCTION: libcurl wants `fd` watched for `what`, or no longer watched.
    func curlWantsSocket(_ fd: Int32, _ what: Int32) -> Int32 {
        var state = sockets[fd]
        if what == Int32(CCURL_POLL_REMOVE) {
            guard state.contains(.registered) else { return 0 }
            state.remove(.wanted)
            sockets[fd] = state
            // A connection's socket is parked: for reading only (an idle socket is always
            // writable), until the next transfer on it, an event, or its close.
            if !state.contains(.connection) {
                unregister(fd)
            } else if state.contains(.writable) && !register(fd, readable: true, writable: false) {
                unregister(fd)
            }
            return 0
        }
        let readable = what & Int32(CCURL_POLL_IN) != 0
        let writable = what & Int32(CCURL_POLL_OUT) != 0
        guard register(fd, readable: readable, writable: writable) else { return -1 }
        sockets[fd].insert(.wanted)
        return 0
    }

    /// Registers `fd` with the loop for `readable`/`writable`, or changes its registration (no
    /// system call when it is registered so already). False (and journaled) if the loop refused:
    /// libcurl then fails the transfers on it (CURLM_ABORTED_BY_CALLBACK).
    func register(_ fd: Int32, readable: Bool, writable: Bool) -> Bool {
        var state = sockets[fd]
        var mask: SocketStates.State = [.registered]
        if readable { mask.insert(.readable) }
        if writable { mask.insert(.writable) }
        let current = state.intersection([.registered, .readable, .writable])
        guard current != mask else { return true }
        do {
            if state.contains(.registered) {
                try loop.update(fd, readable: readable, writable: writable)
            } else {
                try loop.watch(fd, readable: readable, writable: writable) { [unowned self] readiness in
                    self.socketReady(fd, readiness)
                }
            }
        } catch {
            // libcurl then fails every transfer (CURLM_ABORTED_BY_CALLBACK): see
            // CurlMultiOwner.curlAbandonedEveryTransfer.
            owner?.curlFailed(HTTPEngineError("watch socket", detail: "\(error)"))
            return false
        }
        state.subtract([.registered, .readable, .writable])
        sockets[fd] = state.union(mask)
        return true
    }

    /// Unregisters `fd` from the loop, if it is registered.
    func unregister(_ fd: Int32) {
        var state = sockets[fd]
        guard state.contains(.registered) else { return }
        loop.unwatch(fd)
        state.subtract([.registered, .readable, .writable, .wanted])
        sockets[fd] = state
    }

    /// `ccurl_sockets`: libcurl made `fd` for a connection, or is about to close it (after
    /// telling the socket callback to stop watching it, if it was watched).
    func connectionSocket(_ fd: Int32, opened: Bool) {
        if opened {
            unregister(fd)  // a registration left under this number (cannot happen) goes first
            sockets[fd] = [.connection]
        } else {
            unregister(fd)
            sockets[fd] = []
        }
    }

    /// The loop saw `readiness` on `fd`: libcurl acts on it if it wants it watched; a parked
    /// socket is unregistered.
    func socketReady(_ fd: Int32, _ readiness: EventLoop.Readiness) {
        guard sockets[fd].contains(.wanted) else {
            // Parked, and the server closed it (or sent what was not asked for): libcurl finds
            // out when it next tries the connection.
            unregister(fd)
            return
        }
        var mask: Int32 = 0
        if readiness.readable { mask |= Int32(CCURL_CSELECT_IN) }
        if readiness.writable { mask |= Int32(CCURL_CSELECT_OUT) }
        if readiness.failed { mask |= Int32(CCURL_CSELECT_ERR) }
        socketAction(fd, mask)
    }
}
