import Endpoints
import Sessions

/// The run's line: the calls not yet taken, in the run's order — sessions in the order given,
/// each session's endpoints in the order it names them — served so that each origin keeps to
/// its quota of the calls in flight (``OriginQuotas``).
///
/// ``take()`` gives the earliest call whose origin is below its quota: a call passed over
/// because its origin was at its quota waits (deferred) and goes before the rest of the line
/// as soon as its origin is below it again. A call leaves the line once, when taken, or when
/// the run ends it untried (``takeUntried()``, in the run's order). Calls that cannot be made —
/// an endpoint not configured, or whose credentials are unavailable — are never taken: the run
/// ends them at its start (``prepare(_:)``).
///
/// The line holds two positions and its origins' counts, not a list of calls; only calls
/// passed over are held (8 bytes each). Pure bookkeeping, no I/O.
struct CallLine {
    /// A call of the line.
    struct Call {
        /// The session's index in the run's sessions.
        let session: Int
        /// The endpoint's name, as the session names it.
        let endpoint: String
        /// What every call to the endpoint shares.
        let template: EndpointTemplate
        /// The origin's number in ``OriginQuotas``; nil when the URL's host holds the key (every
        /// call its own origin: no quota).
        let origin: Int?
    }

    private struct Endpoint {
        let template: EndpointTemplate
        let origin: Int?
    }

    /// A call's place: `sessions[session].endpoints[endpoint]`.
    private struct Position: Comparable {
        let session: UInt32
        let endpoint: UInt32

        static func < (a: Position, b: Position) -> Bool { (a.session, a.endpoint) < (b.session, b.endpoint) }
    }

    /// The calls of one origin passed over, in line order.
    private struct Deferred {
        var positions: [Position] = []
        var head = 0
        var isEmpty: Bool { head == positions.count }
    }

    private let sessions: SessionList
    private let endpoints: [String: Endpoint]
    /// The last name looked up in `endpoints`: sessions mostly name the same endpoints.
    private var lastEndpoint: (name: String, endpoint: Endpoint?)?
    /// The next call not yet reached is `sessions[lineSession].endpoints[lineEndpoint]`.
    private var lineSession = 0
    private var lineEndpoint = 0
    private var quotas: OriginQuotas
    private let concurrency: Int
    private let originCount: Int
    /// Each origin's (by number) text and the templates of its endpoints.
    let origins: [(name: String, templates: [EndpointTemplate])]
    /// By origin.
    private var deferred: [Deferred]
    /// Origins with calls passed over, in the order of their first such call.
    private var deferredOrigins: [Int] = []

    /// The line of every call of `sessions`, with the endpoints' `templates` by name, for a run
    /// of `concurrency` calls in flight.
    init(sessions: [Session], templates: [String: EndpointTemplate], concurrency: Int) {
        self.init(sessions: SessionList(sessions), templates: templates, concurrency: concurrency)
    }

    /// The same for sessions listed from the store.
    init(sessions: SessionList, templates: [String: EndpointTemplate], concurrency: Int) {
        self.sessions = sessions
        self.concurrency = concurrency
        var numbers: [String: Int] = [:]
        var byName: [String: Endpoint] = [:]
        var named: [(name: String, templates: [EndpointTemplate])] = []
        // Numbered in the order of the endpoints' names: the same for every run of a configuration.
        for (name, template) in templates.sorted(by: { $0.key < $1.key }) {
            // A key in the host makes every call's origin its own: no quota to keep.
            guard template.httpOrigin != nil else {
                byName[name] = Endpoint(template: template, origin: nil)
                continue
            }
            let number = numbers[template.origin] ?? numbers.count
            numbers[template.origin] = number
            if number == named.count { named.append((template.origin, [])) }
            named[number].templates.append(template)
            byName[name] = Endpoint(template: template, origin: number)
        }
        endpoints = byName
        origins = named
        originCount = numbers.count
        deferred = Array(repeating: Deferred(), count: numbers.count)
        quotas = OriginQuotas(concurrency: concurrency, waiting: Array(repeating: 0, count: numbers.count))
    }

    /// Counts the calls of every origin and calls `uncallable` for every call of the line that
    /// cannot be made, in the line's order, with its session's index, the endpoint's name, its
    /// template (nil if not configured) and why. Once, before ``take()``; the line is unchanged.
    mutating func prepare(_ uncallable: (Int, String, EndpointTemplate?, String) -> Void) {
        var waiting = Array(repeating: 0, count: originCount)
        for index in sessions.indices {
            for name in sessions.endpoints(at: index) {
                guard let endpoint = lookUp(name) else {
                    uncallable(index, name, nil, "endpoint '\(name)' is not configured")
                    continue
                }
                if let cause = endpoint.template.unavailable {
                    uncallable(index, name, endpoint.template, cause)
                } else if let origin = endpoint.origin {
                    waiting[origin] += 1
                }
            }
        }
        let limits = quotas.limits
        quotas = OriginQuotas(concurrency: concurrency, waiting: waiting)
        for (origin, limit) in limits.enumerated() where limit != Int.max { quotas.limit(origin, to: limit) }
    }

    /// Takes the earliest call that can be made whose origin is below its quota; nil when no
    /// call is left or every call left waits for its origin (see ``OriginQuotas`` for when
    /// that happens with slots free). The run asks again as its calls end.
    mutating func take() -> Call? {
        for (index, origin) in deferredOrigins.enumerated() where quotas.hasRoom(origin) {
            return takeDeferred(origin, at: index)
        }
        while let next = nextInLine() {
            // No origin with calls passed over has room (above): an origin that has room has none.
            guard let origin = next.endpoint.origin, !quotas.hasRoom(origin) else {
                return taken(next.position, next.endpoint)
            }
            if deferred[origin].isEmpty { deferredOrigins.append(origin) }
            deferred[origin].positions.append(next.position)
        }
        return nil
    }

    /// Takes the next call to end untried, ignoring quotas: the calls passed over and the rest
    /// of the line, in the line's order; nil once none is left.
    mutating func takeUntried() -> Call? {
        var earliest: (index: Int, origin: Int, position: Position)?
        for (index, origin) in deferredOrigins.enumerated() {
            let position = deferred[origin].positions[deferred[origin].head]
            if earliest.map({ position < $0.position }) ?? true { earliest = (index, origin, position) }
        }
        if let earliest { return takeDeferred(earliest.origin, at: earliest.index) }
        return nextInLine().map { taken($0.position, $0.endpoint) }
    }

    /// A request of `origin` started.
    mutating func started(_ origin: Int) { quotas.started(origin) }

    /// A request of `origin` ended.
    mutating func stopped(_ origin: Int) { quotas.stopped(origin) }

    /// Holds `origin`'s calls in flight to `limit` (``OriginLimiter``).
    mutating func limit(_ origin: Int, to limit: Int) { quotas.limit(origin, to: limit) }

    /// Requests of `origin` in flight.
    func inFlight(_ origin: Int) -> Int { quotas.inFlight(origin) }

    // MARK: Positions

    private mutating func lookUp(_ name: String) -> Endpoint? {
        if let lastEndpoint, lastEndpoint.name == name { return lastEndpoint.endpoint }
        let endpoint = endpoints[name]
        lastEndpoint = (name, endpoint)
        return endpoint
    }

    /// The next callable call of the line, moving past it.
    private mutating func nextInLine() -> (position: Position, endpoint: Endpoint)? {
        while lineSession < sessions.count {
            let names = sessions.endpoints(at: lineSession)
            while lineEndpoint < names.count {
                let position = Position(session: UInt32(lineSession), endpoint: UInt32(lineEndpoint))
                lineEndpoint += 1
                if let found = lookUp(names[Int(position.endpoint)]), found.template.unavailable == nil {
                    return (position, found)
                }
            }
            lineSession += 1
            lineEndpoint = 0
        }
        return nil
    }

    private mutating func taken(_ position: Position, _ endpoint: Endpoint) -> Call {
        if let origin = endpoint.origin { quotas.taken(origin) }
        let session = Int(position.session)
        return Call(
            session: session, endpoint: sessions.endpoints(at: session)[Int(position.endpoint)],
            template: endpoint.template, origin: endpoint.origin)
    }

    /// Takes `origin`'s earliest call passed over (`origin` is `deferredOrigins[index]`).
    private mutating func takeDeferred(_ origin: Int, at index: Int) -> Call? {
        let position = deferred[origin].positions[deferred[origin].head]
        deferred[origin].head += 1
        if deferred[origin].isEmpty {
            deferred[origin] = Deferred()
            deferredOrigins.remove(at: index)
        }
        let name = sessions.endpoints(at: Int(position.session))[Int(position.endpoint)]
        guard let endpoint = lookUp(name) else { return nil }
        return taken(position, endpoint)
    }
}
