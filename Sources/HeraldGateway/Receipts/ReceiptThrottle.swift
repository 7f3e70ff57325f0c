import NIOConcurrencyHelpers

/// A token bucket of receipts per client address (``GatewayContext/peer``): each address may
/// report ``rate`` receipts a second on average and ``burst`` at once, so a flood from one
/// address takes a bounded share of the gateway. The table is bounded (``maximumAddresses``):
/// full, it forgets the addresses whose buckets have filled again (idle), and if none has, all.
final class ReceiptThrottle: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: ContinuousClock.Instant
    }

    let rate: Double
    let burst: Double
    /// The most addresses tracked at once.
    static let maximumAddresses = 100_000
    private let buckets = NIOLockedValueBox<[Int: Bucket]>([:])

    init(perSecond: Int, burst: Int) {
        rate = Double(max(1, perSecond))
        self.burst = Double(max(1, burst))
    }

    /// Takes `count` receipts from `peer`'s bucket: `nil` when it may report them now, else
    /// how long until it may (`count` 0: whether it may report any). An unknown address (not
    /// IP) is not limited.
    func take(_ count: Int, from peer: Int?, now: ContinuousClock.Instant = .now) -> Duration? {
        guard let peer else { return nil }
        let (rate, burst) = (self.rate, self.burst)
        return buckets.withLockedValue { table in
            var bucket = table[peer] ?? Bucket(tokens: burst, updated: now)
            let elapsed = now - bucket.updated
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            bucket.tokens = min(burst, bucket.tokens + max(0, seconds) * rate)
            bucket.updated = now
            // Asked for none: whether it has any left (before a request's body is read).
            let wanted = Double(count)
            let needed = count == 0 ? 1 : wanted
            defer {
                if table[peer] == nil, table.count >= Self.maximumAddresses { Self.forgetIdle(&table, now: now, rate: rate, burst: burst) }
                table[peer] = bucket
            }
            if bucket.tokens >= needed {
                bucket.tokens -= wanted
                return nil
            }
            return .milliseconds(Int64(((needed - bucket.tokens) / rate * 1000).rounded(.up)))
        }
    }

    private static func forgetIdle(_ table: inout [Int: Bucket], now: ContinuousClock.Instant, rate: Double, burst: Double) {
        table = table.filter { _, bucket in
            let elapsed = now - bucket.updated
            return bucket.tokens + Double(elapsed.components.seconds) * rate < burst
        }
        if table.count >= maximumAddresses { table = [:] }
    }
}
