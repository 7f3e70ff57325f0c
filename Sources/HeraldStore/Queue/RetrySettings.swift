import HeraldCore

/// How the queue retries a device it could not deliver to: when each retry comes (the same
/// ``Backoff`` rule as the client's retries), until the notification's deadline.
public struct RetrySettings: Sendable, Hashable {
    /// The delay before each retry, from the device's attempt number.
    public var backoff: Backoff

    public init(backoff: Backoff) {
        self.backoff = backoff
    }

    /// The store's configured delays (``HeraldStore/Configuration/initialRetryDelay`` doubling up
    /// to ``HeraldStore/Configuration/maximumRetryDelay``), with `jitter` (default none, as the
    /// store has always retried).
    public init(_ configuration: HeraldStore.Configuration, jitter: Double = 0) {
        self.init(backoff: Backoff(initial: configuration.initialRetryDelay, maximum: configuration.maximumRetryDelay, jitter: jitter))
    }
}
