import Vocabulary

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
package struct Configuration: Sendable, Equatable {
    /// `[Stop]`: how a stop run spends its budget.
    package var stop = StopSettings()
    /// `[Start]`: what happens after start-up.
    package var start = StartSettings()
    /// `[Control]`: the control socket.
    package var control = ControlSettings()
    /// `[Metrics]`: the file node_exporter's textfile collector reads.
    package var metrics = MetricsSettings()
    /// `[Sleep]`: what happens before the machine sleeps.
    package var sleep = SleepSettings()
    /// `[Store]`: how the session store keeps keys at rest.
    package var store = StoreSettings()
    /// `[Endpoint]` sections, in the order first defined.
    package var endpoints: [EndpointConfiguration] = []

    /// The defaults (no endpoints).
    package init() {}

    /// The default main file.
    package static let defaultPath = "/etc/session-cleanup/session-cleanup.conf"

    /// The endpoint called `name`.
    package func endpoint(named name: String) -> EndpointConfiguration? {
        endpoints.first { $0.name == name }
    }
}

/// `[Stop]` settings.
package struct StopSettings: Sendable, Equatable {
    /// `BudgetSec=`: the time a stop run may take, from SIGTERM to exit. Keep it below the
    /// unit's `TimeoutStopSec=` (30 s); the daemon extends systemd's timeout when it is not.
    package var budget: Duration = .seconds(25)
    /// The longest `BudgetSec=` accepted: systemd gives a whole poweroff or reboot 30 min
    /// (`JobTimeoutSec=` of `poweroff.target`/`reboot.target`) before it forces it.
    package static let maximumBudget: Duration = .seconds(30 * 60)
    /// `MinimumRequestSec=`: no request starts when less than this remains of the budget.
    package var minimumRequest: Duration = .seconds(1)
    /// `MaxConcurrentRequests=`: calls in flight at once (which bounds connections per host too;
    /// see `MaxConnectionsPerHost=`).
    package var maxConcurrentRequests = 256
    /// `RetryDelaySec=`: the first retry's backoff; doubled each retry, with jitter.
    package var retryDelay: Duration = .milliseconds(250)
    /// `MaxAttempts=`: requests per call at most (1 = no retries).
    package var maxAttempts = 4
    /// `OnRestart=`: whether a restart of the unit keeps the sessions (`keep`) or ends them.
    package var onRestart = OnRestartPolicy.keep
}

/// `[Start]` settings.
package struct StartSettings: Sendable, Equatable {
    /// `LeftoverBudgetSec=`: the budget for ending, after start-up, sessions an earlier stop run
    /// could not end.
    package var leftoverBudget: Duration = .seconds(60)
}

/// `[Control]` settings.
package struct ControlSettings: Sendable, Equatable {
    /// `SocketMode=`: who may connect (octal). Authorization inside is by peer uid.
    package var socketMode: UInt32 = 0o660
    /// Whether the file sets `SocketMode=`: under socket activation only a mode someone asked
    /// for is worth a warning when the socket unit's differs (the user unit's 0600, say).
    package var socketModeIsSet = false
    /// `SocketGroup=`: the socket's group; empty keeps the daemon's own.
    package var socketGroup = ""
    /// `MaxSessionsPerUser=`: registrations one non-root uid may hold.
    package var maxSessionsPerUser = 10_000
}

/// `[Metrics]` settings.
package struct MetricsSettings: Sendable, Equatable {
    /// `TextfileDirectory=`: where to keep `session_cleanup.prom` for node_exporter's textfile
    /// collector (Debian's reads `/var/lib/prometheus/node-exporter`); nil (the default): none.
    package var textfileDirectory: String?
}

/// `[Sleep]` settings.
package struct SleepSettings: Sendable, Equatable {
    /// `EndSessions=`: hold a logind delay lock for sleep and end every session before the
    /// machine sleeps (within logind's `InhibitDelayMaxSec=`); false (the default): sleep ends none.
    package var endSessions = false
}

/// `[Store]` settings.
package struct StoreSettings: Sendable, Equatable {
    /// `KeyCredential=`: a systemd credential holding the 32-byte key that seals session keys in
    /// the store's files (AES-256-GCM); nil (the default): keys are stored in clear, protected by
    /// the files' mode 0600 in a directory of mode 0700.
    package var keyCredential: String?
}

/// `[Stop] OnRestart=`: what a restart of the unit does to the sessions.
package enum OnRestartPolicy: String, Sendable, Equatable {
    /// Keep them: the restarted daemon has them all (the default).
    case keep
    /// End them, as a stop does.
    case end
}

/// How an endpoint's reply is judged.
package enum SuccessRule: String, Sendable, Equatable {
    /// The reply is a JSON object whose one `success` member is `true` or a non-zero integer.
    case jsonSuccess = "json-success"
    /// Any 2xx status.
    case anyTwoHundred = "2xx"
}

/// One `[Endpoint]`: a named HTTP call that ends a session at one service.
package struct EndpointConfiguration: Sendable, Equatable {
    /// `Name=`: how sessions refer to it (`[A-Za-z0-9_.-]`).
    package var name: String
    /// `URL=`: http or https, with `{session}` where the (percent-encoded) key goes.
    package var url: String
    /// `Method=`: GET (the original call), POST, PUT or DELETE.
    package var method = "GET"
    /// `TimeoutSec=`: one request's timeout, further capped by the budget's time remaining.
    package var timeout: Duration = .seconds(20)
    /// `Success=`: how a reply is judged.
    package var success: SuccessRule = .jsonSuccess
    /// `GoneStatus=`: statuses meaning "already ended", counted as ended.
    package var goneStatuses: [Int] = [404, 410]
    /// `Header=`: extra `Name: value` headers (may use `{session}`).
    package var headers: [String] = []
    /// `Body=`: a request body template (may use `{session}`).
    package var body: String?
    /// `TokenCredential=`: a systemd credential holding a bearer token (`LoadCredential=`).
    package var tokenCredential: String?
    /// `Preset=`: the protocol whose settings fill in what the section does not set, or nil.
    package var preset: EndpointPreset?
    /// `ClientCredential=`: a systemd credential holding `client_id:client_secret`, sent as
    /// ``clientAuthentication`` says.
    package var clientCredential: String?
    /// `ClientAuthentication=`: how ``clientCredential`` is sent; HTTP Basic by default.
    package var clientAuthentication: ClientAuthentication = .basic
    /// `TokenURL=`: an OAuth 2.0 token endpoint. When set, ``clientCredential`` authenticates a
    /// client-credentials grant there (RFC 6749 §4.4) and the calls carry the access token it
    /// gives as a bearer token, instead of the client's own credentials.
    package var tokenURL: String?
    /// `TokenScope=`: the grant's `scope` (space-separated scopes); nil: none asked for.
    package var tokenScope: String?
    /// `TokenAudience=`: the grant's `audience` (an extension some providers need); nil: none.
    package var tokenAudience: String?
    /// `ClientCertificateCredential=`: a systemd credential holding the PEM client certificate
    /// this endpoint's TLS connections present (mutual TLS), with ``clientKeyCredential``.
    package var clientCertificateCredential: String?
    /// `ClientKeyCredential=`: a systemd credential holding the certificate's PEM private key.
    package var clientKeyCredential: String?
    /// `CAFile=`: a private CA bundle to verify the server against.
    package var caFile: String?
    /// `HTTPVersion=`: `auto` (the default: HTTP/2 where an https server offers it, else 1.1;
    /// chosen from the benchmark, see BENCHMARKS.md), `1.1` or `2`.
    package var httpVersion: HTTPRequest.Version = .automatic
    /// `Proxy=`: `http://`, `https://` or `socks5h://host:port`; nil: no proxy, whatever the
    /// environment says.
    package var proxy: String?
    /// `NoProxy=`: hosts reached directly although `Proxy=` is set (comma-separated, libcurl's
    /// `NOPROXY` syntax); empty: none.
    package var noProxy = ""
    /// `ProxyCredential=`: a systemd credential holding `user:password` for the proxy.
    package var proxyCredential: String?
    /// `MaxConnectionsPerHost=`: calls in flight (so connections open) to this endpoint's host
    /// and port at once; nil: bounded by `MaxConcurrentRequests=` only. Endpoints sharing a host
    /// share the smallest value.
    package var maxConnectionsPerHost: Int?
    /// `Concurrency=`: an adaptive limit of calls in flight to the endpoint's origin, or its
    /// fixed share. Endpoints sharing an origin are adaptive if any of them is.
    package var concurrency: ConcurrencyMode = .adaptive

    /// Creates an endpoint with defaults for everything but its name and URL.
    package init(name: String, url: String) {
        self.name = name
        self.url = url
    }
}
