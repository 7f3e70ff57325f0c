import HeraldCore

/// How rejections and failures are retried (apns-spec §1.7's "Retry?" column): 500, 503,
/// `Shutdown` and `TooManyRequests` with exponential back-off and jitter, a bounded number of
/// attempts, and never past the notification's apns-expiration.
public struct RetryPolicy: Sendable, Hashable {
    /// The most times one notification is sent, the first included.
    public var maximumAttempts: Int
    /// The delay before the first retry; it doubles for each one after.
    public var initialBackoff: Duration
    /// The longest delay between attempts.
    public var maximumBackoff: Duration
    /// The fraction of each delay that is random (0: none, 1: anywhere from 0 to the delay).
    public var jitter: Double
    /// The delay before retrying after `TooManyProviderTokenUpdates`, with the cached token.
    public var providerTokenUpdateDelay: Duration

    /// About 1 s before the first retry, up to 5 attempts: right for an interactive run.
    public static let `default` = RetryPolicy(
        maximumAttempts: 5, initialBackoff: .seconds(1), maximumBackoff: .seconds(30), jitter: 0.2,
        providerTokenUpdateDelay: .seconds(2)
    )

    /// Never retry.
    public static let none = RetryPolicy(
        maximumAttempts: 1, initialBackoff: .zero, maximumBackoff: .zero, jitter: 0, providerTokenUpdateDelay: .zero
    )

    public init(
        maximumAttempts: Int, initialBackoff: Duration, maximumBackoff: Duration, jitter: Double,
        providerTokenUpdateDelay: Duration
    ) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.jitter = min(max(jitter, 0), 1)
        self.providerTokenUpdateDelay = providerTokenUpdateDelay
    }

    /// The back-off its delays follow: the same rule as the gateway's queue.
    var backoff: Backoff {
        Backoff(initial: initialBackoff, maximum: maximumBackoff, jitter: jitter)
    }

    /// The delay before attempt `attempt + 1`, after `attempt` attempts (1-based), with jitter
    /// drawn from `random` (a value in 0..<1).
    func backoff(afterAttempt attempt: Int, random: Double) -> Duration {
        backoff.delay(afterAttempt: attempt, random: random)
    }
}
