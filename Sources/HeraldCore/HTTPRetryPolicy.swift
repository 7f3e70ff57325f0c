/// How a client of an HTTP push service (Web Push, FCM) retries: 429, 5xx, timeouts and
/// unreachable servers, with the project's one back-off rule (``Backoff``) and `Retry-After`
/// honoured up to a ceiling (``RetryAfter``).
public struct HTTPRetryPolicy: Sendable, Hashable {
    /// The most times one message is sent, the first included.
    public var maximumAttempts: Int
    /// The back-off between attempts.
    public var backoff: Backoff
    /// The longest `Retry-After` followed; a longer one is cut to it.
    public var maximumRetryAfterSeconds: Int

    public init(maximumAttempts: Int = 5, backoff: Backoff = Backoff(initial: .seconds(1), maximum: .seconds(30), jitter: 0.2), maximumRetryAfterSeconds: Int = 60) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.backoff = backoff
        self.maximumRetryAfterSeconds = max(0, maximumRetryAfterSeconds)
    }

    /// Up to 5 attempts, 1 s doubling to 30 s, `Retry-After` up to a minute.
    public static let `default` = HTTPRetryPolicy()
    /// Never retry.
    public static let none = HTTPRetryPolicy(maximumAttempts: 1)
}
