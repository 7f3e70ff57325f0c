import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a webhook can be told of.
public enum WebhookEventType: String, Sendable, Hashable, CaseIterable, Comparable {
    /// A notification is done: its counts by outcome and reason.
    case notificationCompleted = "notification.completed"
    /// A device was retired (unregistered or invalid) by what APNs, a push service or FCM said.
    case deviceRetired = "device.retired"
    /// A device of a notification ended rejected or failed.
    case deliveryFailed = "delivery.failed"
    /// A device reported a notification received, opened, dismissed or clicked (docs/receipts.md).
    /// One event per receipt: only for webhooks that list it.
    case deliveryReceipt = "delivery.receipt"

    /// The events a webhook that lists none wants: all but receipts, which come one per device
    /// and are asked for by name.
    public static let byDefault: Set<WebhookEventType> = Set(allCases).subtracting([.deliveryReceipt])

    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// Which apps' webhooks want which events: the queue writes an event to its outbox only for
/// these, one row per webhook that wants it, in the transaction of the change it reports. A
/// webhook is known to the store by its key (the gateway's: its URL), which the sender looks up
/// again when it sends.
public struct WebhookInterest: Sendable, Hashable {
    private var hooks: [String: [WebhookEventType: [String]]] = [:]

    /// The most rows (one per event and webhook) an app's outbox holds: an event past it is not
    /// written, and is counted as refused (the gateway's `herald_webhook_events_refused_total`).
    /// So one app whose receiver is down, or whose broadcasts fail by the million, cannot grow
    /// the table every app shares without end. The bound is kept within a few seconds' writes when
    /// several processes write at once (each counts the outbox again when it nears the bound).
    public var maximumPending = Self.defaultMaximumPending
    public static let defaultMaximumPending = 1_000_000

    /// No app wants any event: nothing is written.
    public init() {}

    /// Webhook `hook` of `app` wants `events`.
    public mutating func add(app: String, hook: String, events: Set<WebhookEventType>) {
        for event in events.sorted() { hooks[app, default: [:]][event, default: []].append(hook) }
    }

    /// The webhooks of `app` that want `event`, in the order they were added.
    public func hooks(app: String, event: WebhookEventType) -> [String] { hooks[app]?[event] ?? [] }

    public var isEmpty: Bool { hooks.isEmpty }
}

/// An event of the outbox, claimed for sending to one webhook.
package struct WebhookDelivery: Sendable, Hashable {
    /// `evt_…`: the same on every attempt, and for every webhook told of the event.
    package var id: String
    /// The webhook's key (``WebhookInterest``).
    package var hook: String
    package var app: String
    package var type: WebhookEventType
    /// The JSON body, written when the event was: every attempt sends the same bytes.
    package var body: [UInt8]
    package var createdAt: Date
    /// Attempts so far, this one included.
    package var attempt: Int
}

/// An event's JSON body: `{"id", "type", "createdAt", "app", "data"}`.
struct WebhookEventBody {
    /// A new event ID: `evt_` and 32 random hex digits.
    static func makeID() -> String {
        var generator = SystemRandomNumberGenerator()
        let digits = Array("0123456789abcdef".utf8)
        var bytes = Array("evt_".utf8)
        for _ in 0..<2 {
            var value = generator.next() as UInt64
            for _ in 0..<16 {
                bytes.append(digits[Int(value & 0xF)])
                value >>= 4
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    static func time(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
    }

    /// The body of event `id`, with `data` written by `body`.
    static func write(id: String, type: WebhookEventType, app: String, now: Date, data: (inout JSONWriter) -> Void) -> String {
        var writer = JSONWriter(capacity: 256)
        writer.beginObject()
        writer.key("id")
        writer.string(id)
        writer.key("type")
        writer.string(type.rawValue)
        writer.key("createdAt")
        writer.string(time(now))
        writer.key("app")
        writer.string(app)
        writer.key("data")
        writer.beginObject()
        data(&writer)
        writer.endObject()
        writer.endObject()
        return String(decoding: writer.bytes, as: UTF8.self)
    }
}

/// A number of an app's webhook events of one type: those waiting in the outbox, or those it
/// had no room for (``WebhookInterest/maximumPending``).
package struct WebhookEventCount: Sendable, Hashable {
    package var app: String
    package var type: WebhookEventType
    package var count: Int

    package init(app: String, type: WebhookEventType, count: Int) {
        self.app = app
        self.type = type
        self.count = count
    }
}
