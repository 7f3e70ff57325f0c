import Foundation

extension HeraldReceipts {
    /// How long to wait after a failed send: exponential back-off with jitter, shared by every
    /// process on the queue (the state is in its file).
    ///
    /// After the *n*th failure in a row the wait is `initial × 2^(n-1)`, at most `maximum`, less a
    /// random part of up to `jitter` of it (so devices that failed together do not all come back
    /// together); a `Retry-After` from the gateway, cut to `maximum`, is waited out in full.
    public struct Retry: Sendable, Hashable {
        /// The wait after the first failure. Default 1 s.
        public var initial: Duration
        /// The longest wait. Default 15 minutes.
        public var maximum: Duration
        /// The fraction of each wait that is random, 0 to 1. Default 0.2.
        public var jitter: Double

        /// A back-off from `initial` doubling up to `maximum`; `jitter` is clamped to 0...1.
        public init(initial: Duration = .seconds(1), maximum: Duration = .seconds(900), jitter: Double = 0.2) {
            self.initial = max(initial, .zero)
            self.maximum = max(maximum, self.initial)
            self.jitter = jitter.isNaN ? 0 : min(max(jitter, 0), 1)
        }

        /// 1 s doubling to 15 minutes, with 20 % jitter.
        public static let standard = Retry()

        /// The wait after `attempts` failures in a row (at least 1), given the gateway's
        /// `Retry-After`, with `random` in 0...1 drawing the jitter.
        func delay(afterAttempts attempts: Int, retryAfter: Duration?, random: Double) -> Duration {
            let doublings = min(max(attempts, 1) - 1, 62)
            // Doubling stops at `maximum`, before it could overflow.
            var base = initial
            for _ in 0..<doublings where base < maximum { base *= 2 }
            base = min(base, maximum)
            let jittered = base * (1 - jitter * min(max(random, 0), 1))
            guard let retryAfter else { return jittered }
            return max(min(retryAfter, maximum), jittered)
        }
    }
}
