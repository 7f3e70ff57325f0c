import Foundation

/// What one flush round found in the queue.
struct FlushClaim: Sendable {
    enum Outcome: Sendable {
        /// Nothing to send.
        case empty
        /// A send failed; nobody sends before then.
        case backingOff(until: Date)
        /// Another flush holds the queue.
        case busy
        /// These events, oldest first, are this flush's to send.
        case batch([HeraldEvent])
    }

    var outcome: Outcome
    /// Events in the queue.
    var pending: Int
}

/// What became of the events of one batch, its halves included.
struct Delivery: Sendable {
    var taken: [HeraldEvent.Key] = []
    var dropped: [HeraldEvent.Key] = []
    var requests = 0
    /// Whether sending stopped before the whole batch was answered.
    private(set) var stopped = false
    /// Whether the stop counts as a failure to back off from (not so for a cancelled task).
    private(set) var backOff = false
    private(set) var retryAfter: Duration?

    mutating func stop(retryAfter: Duration?, backOff: Bool) {
        stopped = true
        self.backOff = backOff
        self.retryAfter = retryAfter
    }
}

extension ReceiptQueueDocument {
    /// Takes the oldest `size` events for `owner` to send, unless the queue is backing off,
    /// another flush holds it, or it is empty.
    mutating func claim(owner: String, size: Int, now: Date) -> FlushClaim {
        let pending = events.count
        let time = now.timeIntervalSince1970
        if let retry, retry.notBefore > time {
            return FlushClaim(outcome: .backingOff(until: Date(timeIntervalSince1970: retry.notBefore)), pending: pending)
        }
        if let lease, lease.owner != owner, lease.until > time { return FlushClaim(outcome: .busy, pending: pending) }
        guard !events.isEmpty else {
            release(owner)
            return FlushClaim(outcome: .empty, pending: 0)
        }
        lease = FlushLease(owner: owner, until: time + HeraldReceipts.leaseDuration)
        return FlushClaim(outcome: .batch(events.prefix(size).compactMap(\.value)), pending: pending)
    }

    /// Extends `owner`'s lease before a request; `false` when it is no longer `owner`'s.
    mutating func renew(_ owner: String, now: Date) -> Bool {
        let time = now.timeIntervalSince1970
        if let lease, lease.owner != owner, lease.until > time { return false }
        lease = FlushLease(owner: owner, until: time + HeraldReceipts.leaseDuration)
        return true
    }

    /// Ends `owner`'s lease, if it still holds it.
    mutating func release(_ owner: String) {
        if lease?.owner == owner { lease = nil }
    }

    /// Removes the events `delivery` settled, and backs off when it failed (or ends the back-off
    /// when it did not). Returns the events left and when to try again.
    mutating func settle(
        _ delivery: Delivery, retry policy: HeraldReceipts.Retry, now: Date, random: Double
    ) -> (pending: Int, retryAt: Date?) {
        let settled = Set(delivery.taken + delivery.dropped)
        events.removeAll { $0.key.map(settled.contains) ?? true }
        if delivery.backOff {
            let attempts = (retry?.attempts ?? 0) + 1
            let delay = policy.delay(afterAttempts: attempts, retryAfter: delivery.retryAfter, random: random)
            retry = RetryState(attempts: attempts, notBefore: now.timeIntervalSince1970 + delay.timeInterval)
        } else if !delivery.stopped {
            retry = nil
        }
        let time = now.timeIntervalSince1970
        return (events.count, retry.flatMap { $0.notBefore > time ? Date(timeIntervalSince1970: $0.notBefore) : nil })
    }
}
