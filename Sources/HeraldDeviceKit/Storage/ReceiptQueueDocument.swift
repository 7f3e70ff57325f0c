import Foundation

/// What the receipt queue's file holds: the events, the back-off both processes honour, and which
/// flush is sending (so the app and its extension do not send the same events twice).
struct ReceiptQueueDocument: Codable, Equatable, Sendable {
    var events: [StoredEvent] = []
    /// Set after a failed send: nobody sends before `notBefore`.
    var retry: RetryState?
    /// Set while a flush sends; another flush leaves the queue alone until it ends or expires.
    var lease: FlushLease?

    /// Drops events older than the age limit (and any that do not parse), then the earliest
    /// recorded past the bound.
    mutating func evict(limits: HeraldReceiptQueue.Limits, now: Date) {
        let oldest = now.timeIntervalSince1970 - limits.maximumAge.timeInterval
        events.removeAll { $0.at < oldest || $0.value == nil }
        if events.count > limits.maximumEvents { events.removeFirst(events.count - limits.maximumEvents) }
    }
}

/// An event as the file holds it; `at` in seconds since 1970.
struct StoredEvent: Codable, Equatable, Sendable {
    var receipt: String
    var event: String
    var action: String?
    var at: Double

    init(_ event: HeraldEvent) {
        receipt = event.receipt.token
        self.event = event.kind.name
        action = event.kind.action
        at = event.date.timeIntervalSince1970
    }

    /// The event, or `nil` when the file held something that is not one.
    var value: HeraldEvent? {
        guard let receipt = HeraldReceipt(token: receipt), let kind = HeraldEvent.Kind(name: event, action: action), kind.isValid,
              at.isFinite
        else { return nil }
        return HeraldEvent(kind, receipt: receipt, date: Date(timeIntervalSince1970: at))
    }

    /// The event's key, without checking the rest (`evict` drops what does not parse).
    var key: HeraldEvent.Key? {
        HeraldEvent.Kind(name: event, action: action).map { HeraldEvent.Key(token: receipt, kind: $0) }
    }
}

struct RetryState: Codable, Equatable, Sendable {
    /// Failed sends in a row.
    var attempts: Int
    /// Seconds since 1970.
    var notBefore: Double
}

struct FlushLease: Codable, Equatable, Sendable {
    var owner: String
    /// Seconds since 1970.
    var until: Double
}

extension Duration {
    /// The duration in seconds.
    var timeInterval: TimeInterval {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
