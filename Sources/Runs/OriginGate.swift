/// Which calls of one run may go to an origin (scheme, host and port) now, so that an origin
/// that cannot be reached costs one call's retries, not a timeout per call.
///
/// An origin is `up` until a call to it cannot connect (DNS, connection refused or
/// unreachable): that call becomes the origin's **probe** and retries with backoff while every
/// other call for the origin is **parked**. Three transitions leave probing:
///
/// - the origin answers (any HTTP status, to the probe or a call already in flight): `up`, the
///   parked calls are released;
/// - the probe finishes, **whatever its outcome**: when its last attempt could not connect,
///   the origin is `unreachable` and the parked calls fail without an attempt; otherwise
///   (a timeout, TLS, a request that could not start, no budget left, expiry) nothing proves
///   the origin down, so it is `up` again and the parked calls are released to try it each.
///
/// So no call is ever left parked behind a probe that has finished. Calls for an unreachable
/// origin are refused for the rest of the run. Calls are the run's indices; the gate does no I/O.
struct OriginGate {
    /// What a call may do now.
    enum Admission: Equatable {
        /// Go ahead: start the request.
        case go
        /// Wait: the origin is being probed; the call is parked until the gate releases it.
        case park
        /// Do not attempt: the origin was given up on, for this reason.
        case refuse(cause: String)
    }

    /// What becomes of the parked calls when probing ends.
    struct Release: Equatable {
        /// Calls to queue again (each will be admitted afresh).
        var retry: [Int] = []
        /// Calls to fail without an attempt, and why.
        var fail: [Int] = []
        /// The probe's last cause, when the parked calls fail.
        var cause = ""
    }

    private enum State {
        case up
        case probing(probe: Int, parked: [Int])
        case unreachable(cause: String)
    }

    private var origins: [String: State] = [:]

    /// Whether `call` may go to `origin` now; parks it when another call is probing.
    mutating func admit(_ call: Int, to origin: String) -> Admission {
        // Every origin is up until a call cannot connect: then no lookup (no hashing) per call.
        if origins.isEmpty { return .go }
        switch origins[origin] ?? .up {
        case .up: return .go
        case .probing(let probe, _) where probe == call: return .go
        case .probing(let probe, var parked):
            if !parked.contains(call) { parked.append(call) }
            origins[origin] = .probing(probe: probe, parked: parked)
            return .park
        case .unreachable(let cause): return .refuse(cause: cause)
        }
    }

    /// `call` could not connect to `origin`: it probes the origin, unless another call already does.
    mutating func connectionFailed(_ call: Int, at origin: String) {
        guard case .up = origins[origin] ?? .up else { return }
        origins[origin] = .probing(probe: call, parked: [])
    }

    /// `origin` answered (any HTTP status): it is up; returns the calls parked behind its probe.
    mutating func answered(_ origin: String) -> [Int] {
        guard !origins.isEmpty, case .probing(_, let parked) = origins[origin] else { return [] }
        origins[origin] = nil  // up: the default
        return parked
    }

    /// `call` has its final outcome. If it was `origin`'s probe, probing ends here: the parked
    /// calls fail when its last attempt found the origin `unreachable` (with `cause`), and are
    /// released otherwise. Any other call's end changes nothing.
    mutating func callFinished(_ call: Int, at origin: String, unreachable: Bool, cause: String) -> Release {
        guard !origins.isEmpty, case .probing(let probe, let parked) = origins[origin], probe == call else {
            return Release()
        }
        if unreachable {
            origins[origin] = .unreachable(cause: cause)
            return Release(fail: parked, cause: cause)
        }
        origins[origin] = nil  // up: the default
        return Release(retry: parked)
    }
}
