/// Decides, per origin, how many of an engine's transfers may run at once while the engine
/// learns whether the origin shares connections (HTTP/2), and whether a transfer asks libcurl to
/// wait for a connection it can share (`CURLOPT_PIPEWAIT`) rather than open one.
///
/// libcurl alone handles a burst of transfers to a new HTTPS origin badly: started before a
/// connection is up they each open their own (or, with PIPEWAIT, wait in a queue that frees one
/// per event, which serialises an HTTP/1.1 origin), and the same happens whenever more start at
/// once than the open connections have streams for. So the engine learns first and opens an
/// origin's connections one at a time:
///
/// 1. The first transfer goes alone (a probe); the others wait in the engine.
/// 2. Its connection's ALPN, once the connection is up, tells the version (OpenSSL; otherwise
///    its reply does). HTTP/1.x: no limit and no waiting from then on. No reply (refused,
///    timed out): nothing learned, so nothing pinned — no limit and no waiting (probing again
///    would run the calls to a server that does not answer one at a time), and the next reply
///    tells, as for an origin assumed HTTP/1.1 below.
///    HTTP/2: `streamsPerConnection` per connection believed open, plus one transfer (the
///    opener) that may open the next connection, all with PIPEWAIT; while the opener's
///    connection is being set up nobody else starts beyond the open connections' streams, and
///    once it is up (TLS and ALPN done) it adds a connection's streams.
///
/// An origin known from an earlier run to answer in HTTP/1.1 (``assumeHTTP1(_:)``) starts at
/// step 2's HTTP/1.x: no probe. If it offers HTTP/2 by now, the transfers already running
/// negotiate it, each on a connection of its own, and the first reply in HTTP/2 turns the origin
/// to step 2's HTTP/2 with those connections' streams for the rest.
///
/// An opener that ends before its connection is up leaves the count as it was. Pure
/// bookkeeping: origins and transfers are the engine's numbers.
struct MultiplexPlanner {
    private enum State: Equatable {
        case probing(UInt64)
        case http2(connections: Int, opener: UInt64?)
        case http1
        /// HTTP/1.x as an earlier run said, until a reply says otherwise.
        case assumedHTTP1
        /// The probe got no reply: no limit meanwhile, and the next reply tells.
        case unanswered
    }

    /// Streams the engine puts on one HTTP/2 connection (also libcurl's
    /// `CURLMOPT_MAX_CONCURRENT_STREAMS`).
    let streamsPerConnection: Int
    private var states: [Int: State] = [:]
    /// Origin → the transfer whose reply (a probe) or connection (an opener) is awaited.
    private(set) var awaited: [Int: UInt64] = [:]

    init(streamsPerConnection: Int) {
        self.streamsPerConnection = max(1, streamsPerConnection)
    }

    /// A transfer of `origin` is about to be handed to libcurl; `running` counts the origin's
    /// transfers running with it. `mayMultiplex`: its request allows HTTP/2 on this origin.
    /// Returns whether it should wait for a connection it can share.
    mutating func handing(_ tag: UInt64, origin: Int, mayMultiplex: Bool, running: Int) -> Bool {
        guard mayMultiplex else { return false }
        switch states[origin] {
        case nil:
            states[origin] = .probing(tag)
            awaited[origin] = tag
            return false
        case .probing, .http1, .assumedHTTP1, .unanswered:
            return false
        case .http2(let connections, let opener):
            if opener == nil, running > connections * streamsPerConnection {
                states[origin] = .http2(connections: connections, opener: tag)
                awaited[origin] = tag
            }
            return true
        }
    }

    /// `origin`, not met yet, answered in HTTP/1.1 before (an earlier run, or an earlier daemon):
    /// its transfers neither probe nor wait.
    mutating func assumeHTTP1(_ origin: Int) {
        if states[origin] == nil { states[origin] = .assumedHTTP1 }
    }

    /// How many transfers of `origin` may run now (nil: no limit of the planner's).
    func limit(_ origin: Int) -> Int? {
        switch states[origin] {
        case nil, .http1, .assumedHTTP1, .unanswered: return nil
        case .probing: return 1
        case .http2(let connections, _):
            // The opener counts among those running but uses none of the open connections' streams.
            return connections * streamsPerConnection + 1
        }
    }

    /// Whether `tag` is `origin`'s probe, its version not known yet.
    func isProbe(_ tag: UInt64, of origin: Int) -> Bool {
        states[origin] == .probing(tag)
    }

    /// The probe `tag` of `origin` has its connection, and ALPN chose HTTP/2 (`http2`) or not:
    /// what its reply would have told, a round trip sooner. Its connection counts as the first.
    mutating func probeConnected(_ tag: UInt64, origin: Int, http2: Bool) {
        guard isProbe(tag, of: origin) else { return }
        awaited[origin] = nil
        states[origin] = http2 ? .http2(connections: 1, opener: nil) : .http1
    }

    /// The opener `tag` of `origin` has its connection: one more connection's streams if it
    /// `opened` one, else (libcurl found room on an open one) as before.
    mutating func connected(_ tag: UInt64, origin: Int, opened: Bool) {
        guard awaited[origin] == tag, case .http2(let connections, _) = states[origin] else { return }
        awaited[origin] = nil
        states[origin] = .http2(connections: connections + (opened ? 1 : 0), opener: nil)
    }

    /// Transfer `tag` of `origin` finished; `version` is its reply's HTTP version (`2`, `1.1`,
    /// `1.0`, or nil without a reply), `opened` whether it had opened a connection of its own,
    /// `running` how many of the origin's transfers were running with it (itself included).
    mutating func finished(_ tag: UInt64, origin: Int, version: String?, opened: Bool, running: Int = 1) {
        switch states[origin] {
        case .probing(let probe) where probe == tag:
            awaited[origin] = nil
            switch version {
            case "2": states[origin] = .http2(connections: 1, opener: nil)
            case nil: states[origin] = .unanswered
            default: states[origin] = .http1
            }
        case .http2(let connections, let opener):
            if version != nil, version != "2" {
                states[origin] = .http1
                awaited[origin] = nil
            } else if opener == tag {
                awaited[origin] = nil
                states[origin] = .http2(connections: connections + (opened ? 1 : 0), opener: nil)
            }
        case .assumedHTTP1 where version == "2", .unanswered where version == "2":
            // Out of date: each transfer running has a connection of its own, shared from now on.
            states[origin] = .http2(connections: max(1, running), opener: nil)
        case .unanswered where version != nil:
            states[origin] = .http1
        default:
            break
        }
    }
}
