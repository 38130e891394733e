import Configuration

extension CleanupRun {
    /// Tuning, from `[Stop]`.
    package struct Settings: Sendable {
        /// Calls in flight at most.
        package var maxConcurrent: Int
        /// Requests per call at most.
        package var maxAttempts: Int
        /// The first retry's backoff; doubled per retry, with jitter.
        package var retryDelay: Duration
        /// Kept between a request's timeout and the deadline, to record its outcome in time.
        package var margin: Duration = .milliseconds(50)

        /// Settings from the configuration's `[Stop]`.
        package init(_ stop: StopSettings) {
            maxConcurrent = stop.maxConcurrentRequests
            maxAttempts = stop.maxAttempts
            retryDelay = stop.retryDelay
        }

        /// When a call retries.
        var retryPolicy: RetryPolicy { RetryPolicy(maxAttempts: maxAttempts, retryDelay: retryDelay) }
    }
}
