/// `[Endpoint] Concurrency=`: how many calls in flight the endpoint's origin (scheme, host and
/// port) gets during a run.
package enum ConcurrencyMode: String, Sendable, Equatable {
    /// A limit per origin that starts small and follows the server: grows while its replies
    /// stay fast, cut on refused or reset connections, timeouts, 503/429 and rising latency.
    case adaptive
    /// The origin's share of `MaxConcurrentRequests=` (capped by `MaxConnectionsPerHost=`) from
    /// the start, whatever the server does.
    case fixed
}
