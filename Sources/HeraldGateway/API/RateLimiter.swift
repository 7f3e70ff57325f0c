import NIOConcurrencyHelpers

/// A token bucket per API key: each key may make ``rate`` requests a second on average and
/// ``burst`` at once. One table per process; its keys are the configured API keys' names, so it
/// holds at most as many buckets as the configuration has keys.
///
/// The decision is a value (``Bucket/take(now:rate:burst:)``), tested as one; the class only
/// keeps the buckets under a lock.
final class RateLimiter: Sendable {
    struct Bucket: Sendable, Hashable {
        var tokens: Double
        var updated: ContinuousClock.Instant

        /// Takes one token if there is one. Otherwise returns how long until there is, and
        /// takes nothing.
        mutating func take(now: ContinuousClock.Instant, rate: Double, burst: Double) -> Duration? {
            let elapsed = now - updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            tokens = min(burst, tokens + max(0, seconds) * rate)
            updated = now
            if tokens >= 1 {
                tokens -= 1
                return nil
            }
            return .milliseconds(Int64(((1 - tokens) / rate * 1000).rounded(.up)))
        }
    }

    let rate: Double
    let burst: Double
    private let buckets = NIOLockedValueBox<[String: Bucket]>([:])

    init(requestsPerSecond: Int, burst: Int) {
        rate = Double(max(1, requestsPerSecond))
        self.burst = Double(max(1, burst))
    }

    /// `nil` when `key` may make a request now; else how long it should wait.
    func take(_ key: String, now: ContinuousClock.Instant = .now) -> Duration? {
        buckets.withLockedValue { table in
            var bucket = table[key] ?? Bucket(tokens: burst, updated: now)
            let wait = bucket.take(now: now, rate: rate, burst: burst)
            table[key] = bucket
            return wait
        }
    }
}
