import Configuration
import HTTPEngine
import Vocabulary

extension HTTPEngine.Limits {
    /// The daemon's limits: `MaxConcurrentRequests=` transfers in flight, and as many idle
    /// connections kept — more if the configured endpoints name more origins, one for each. (An
    /// origin's share of the calls in flight moves from turn to turn; each keeps the connections
    /// of its busiest turn, and closing one to open another's is what a pool must not do.)
    package init(_ configuration: Configuration) {
        let origins = Set(configuration.endpoints.compactMap { HTTPOrigin(url: $0.url) })
        let transfers = configuration.stop.maxConcurrentRequests
        self.init(maxTransfers: transfers, maxIdleConnections: max(transfers, origins.count))
    }
}
