/// The daemon's configuration: `session-cleanup.conf` plus its drop-ins.
///
/// ```
/// [Stop]
/// BudgetSec=25s
/// [Endpoint]
/// Name=auth
/// URL=https://auth.example.com/user/{session}/endsession
/// ```
/// Every default is written next to its property. Unknown sections and keys are errors:
/// a typo must not silently become a default.
public struct Configuration: Sendable, Equatable {
    /// `[Stop]`: how a stop run spends its budget.
    public var stop = StopSettings()
    /// `[Start]`: what happens after start-up.
    public var start = StartSettings()
    /// `[Control]`: the control socket.
    public var control = ControlSettings()
    /// `[Endpoint]` sections, in the order first defined.
    public var endpoints: [EndpointConfiguration] = []

    /// The defaults (no endpoints).
    public init() {}

    /// The default main file.
    public static let defaultPath = "/etc/session-cleanup/session-cleanup.conf"

    /// The endpoint called `name`.
    public func endpoint(named name: String) -> EndpointConfiguration? {
        endpoints.first { $0.name == name }
    }
}

/// `[Stop]` settings.
public struct StopSettings: Sendable, Equatable {
    /// `BudgetSec=`: the time a stop run may take, from SIGTERM to exit. Keep it below the
    /// unit's `TimeoutStopSec=` (30 s); the daemon extends systemd's timeout when it is not.
    public var budget: Duration = .seconds(25)
    /// The longest `BudgetSec=` accepted: systemd gives a whole poweroff or reboot 30 min
    /// (`JobTimeoutSec=` of `poweroff.target`/`reboot.target`) before it forces it.
    public static let maximumBudget: Duration = .seconds(30 * 60)
    /// `MinimumRequestSec=`: no request starts when less than this remains of the budget.
    public var minimumRequest: Duration = .seconds(1)
    /// `MaxConcurrentRequests=`: calls in flight at once (which bounds connections per host too;
    /// see `MaxConnectionsPerHost=`).
    public var maxConcurrentRequests = 256
    /// `RetryDelaySec=`: the first retry's backoff; doubled each retry, with jitter.
    public var retryDelay: Duration = .milliseconds(250)
    /// `MaxAttempts=`: requests per call at most (1 = no retries).
    public var maxAttempts = 4
    /// `OnRestart=`: whether a restart of the unit keeps the sessions (`keep`) or ends them.
    public var onRestart = OnRestartPolicy.keep
}

/// `[Start]` settings.
public struct StartSettings: Sendable, Equatable {
    /// `LeftoverBudgetSec=`: the budget for ending, after start-up, sessions an earlier stop run
    /// could not end.
    public var leftoverBudget: Duration = .seconds(60)
}

/// `[Control]` settings.
public struct ControlSettings: Sendable, Equatable {
    /// `SocketMode=`: who may connect (octal). Authorization inside is by peer uid.
    public var socketMode: UInt32 = 0o660
    /// `SocketGroup=`: the socket's group; empty keeps the daemon's own.
    public var socketGroup = ""
    /// `MaxSessionsPerUser=`: registrations one non-root uid may hold.
    public var maxSessionsPerUser = 10_000
}

/// `[Stop] OnRestart=`: what a restart of the unit does to the sessions.
public enum OnRestartPolicy: String, Sendable, Equatable {
    /// Keep them: the restarted daemon has them all (the default).
    case keep
    /// End them, as a stop does.
    case end
}

/// How an endpoint's reply is judged.
public enum SuccessRule: String, Sendable, Equatable {
    /// The reply is a JSON object whose one `success` member is `true` or a non-zero integer.
    case jsonSuccess = "json-success"
    /// Any 2xx status.
    case anyTwoHundred = "2xx"
}

/// One `[Endpoint]`: a named HTTP call that ends a session at one service.
public struct EndpointConfiguration: Sendable, Equatable {
    /// `Name=`: how sessions refer to it (`[A-Za-z0-9_.-]`).
    public var name: String
    /// `URL=`: http or https, with `{session}` where the (percent-encoded) key goes.
    public var url: String
    /// `Method=`: GET (the original call), POST, PUT or DELETE.
    public var method = "GET"
    /// `TimeoutSec=`: one request's timeout, further capped by the budget's time remaining.
    public var timeout: Duration = .seconds(20)
    /// `Success=`: how a reply is judged.
    public var success: SuccessRule = .jsonSuccess
    /// `GoneStatus=`: statuses meaning "already ended", counted as ended.
    public var goneStatuses: [Int] = [404, 410]
    /// `Header=`: extra `Name: value` headers (may use `{session}`).
    public var headers: [String] = []
    /// `Body=`: a request body template (may use `{session}`).
    public var body: String?
    /// `TokenCredential=`: a systemd credential holding a bearer token (`LoadCredential=`).
    public var tokenCredential: String?
    /// `CAFile=`: a private CA bundle to verify the server against.
    public var caFile: String?
    /// `HTTPVersion=`: `auto` (the default: HTTP/2 where an https server offers it, else 1.1;
    /// chosen from the benchmark, see BENCHMARKS.md), `1.1` or `2`.
    public var httpVersion: HTTPRequest.Version = .automatic
    /// `Proxy=`: `http://`, `https://` or `socks5h://host:port`; nil: no proxy, whatever the
    /// environment says.
    public var proxy: String?
    /// `NoProxy=`: hosts reached directly although `Proxy=` is set (comma-separated, libcurl's
    /// `NOPROXY` syntax); empty: none.
    public var noProxy = ""
    /// `ProxyCredential=`: a systemd credential holding `user:password` for the proxy.
    public var proxyCredential: String?
    /// `MaxConnectionsPerHost=`: calls in flight (so connections open) to this endpoint's host
    /// and port at once; nil: bounded by `MaxConcurrentRequests=` only. Endpoints sharing a host
    /// share the smallest value.
    public var maxConnectionsPerHost: Int?

    /// Creates an endpoint with defaults for everything but its name and URL.
    public init(name: String, url: String) {
        self.name = name
        self.url = url
    }
}
