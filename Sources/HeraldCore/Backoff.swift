/// Exponential back-off with jitter: how long to wait before trying again. One rule for the
/// client's retries of a request and the gateway's retries of a queued delivery.
///
/// The delay after attempt *n* (counted from 1) is `initial × 2^(n-1)`, at most `maximum`, less a
/// random part of up to `jitter` of it: with `jitter` 0.2 a 10 s delay becomes anywhere in
/// (8 s, 10 s]. Jitter only shortens a delay, so `maximum` stays the longest wait, and retries that
/// failed together (APNs down for everyone) do not all come back at the same moment.
public struct Backoff: Sendable, Hashable {
    /// The delay after the first attempt.
    public var initial: Duration
    /// The longest delay.
    public var maximum: Duration
    /// The fraction of each delay that is random, from 0 (none) to 1 (anywhere from 0 to the delay).
    public var jitter: Double

    /// - Parameter jitter: clamped to 0...1 (NaN counts as 0).
    public init(initial: Duration, maximum: Duration, jitter: Double = 0) {
        self.initial = initial
        self.maximum = maximum
        self.jitter = Self.unit(jitter)
    }

    /// The delay before attempt `attempt + 1`, after `attempt` attempts (1-based; less than 1
    /// counts as 1), with its random part drawn from `random` (a value in 0..<1, clamped to 0...1).
    ///
    /// Never negative and never more than `maximum`, for any attempt up to `Int.max`.
    public func delay(afterAttempt attempt: Int, random: Double) -> Duration {
        let base = exponential(afterAttempt: attempt)
        let fraction = Self.unit(jitter) * Self.unit(random)
        // Without jitter the delay is exact (no round trip through `Double`).
        return fraction == 0 ? base : base * (1 - fraction)
    }

    /// The delay after `attempt` attempts before jitter: `initial × 2^(attempt-1)`, at most `maximum`.
    private func exponential(afterAttempt attempt: Int) -> Duration {
        let initial = max(self.initial, .zero)
        let maximum = max(self.maximum, .zero)
        guard initial > .zero else { return .zero }
        let doublings = attempt > 1 ? attempt - 1 : 0
        // `initial × 2^k ≤ maximum` exactly when `initial ≤ ⌊maximum / 2^k⌋`: checked before
        // multiplying, so no attempt number can overflow the product.
        guard doublings < Int.bitWidth - 1, initial <= maximum / (1 << doublings) else { return maximum }
        return initial * (1 << doublings)
    }

    private static func unit(_ value: Double) -> Double {
        value.isNaN ? 0 : min(max(value, 0), 1)
    }
}
