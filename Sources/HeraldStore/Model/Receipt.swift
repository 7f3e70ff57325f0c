#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What a device reports about a notification it was sent (`POST /v1/receipts`).
public enum ReceiptEvent: String, Sendable, Hashable, CaseIterable {
    /// It reached the device (a Notification Service Extension ran, a service worker got the push).
    case received
    /// The user opened it (tapped the notification).
    case opened
    /// The user dismissed it.
    case dismissed
    /// The user chose one of its actions (or, in a browser, clicked it).
    case clicked
}

/// One receipt the gateway has verified, to be counted once.
public struct ReceiptRecord: Sendable, Hashable {
    public var app: String
    public var notification: String
    /// The device's ID, as the store keeps it.
    public var device: String
    public var platform: DevicePlatform
    public var event: ReceiptEvent
    /// For `clicked`: the action's ID; "" for none.
    public var action: String
    /// When the receipt's token was made: the send, near enough.
    public var issuedAt: Date

    public init(app: String, notification: String, device: String, platform: DevicePlatform, event: ReceiptEvent, action: String, issuedAt: Date) {
        self.app = app
        self.notification = notification
        self.device = device
        self.platform = platform
        self.event = event
        self.action = action
        self.issuedAt = issuedAt
    }

    /// The most bytes of an action ID (a UNNotificationAction identifier, a Web Notification action).
    public static let maximumActionLength = 64
}

/// An app's devices of one token kind with one key hash (``KeySpace``): where a receipt's
/// device is looked for.
public struct DeviceHashKey: Sendable, Hashable {
    public var app: String
    public var kind: TokenKind
    public var hash: UInt32

    public init(app: String, kind: TokenKind, hash: UInt32) {
        self.app = app
        self.kind = kind
        self.hash = hash
    }
}

/// One of an app's receipt keys as stored: a random 256-bit secret in slot 0 to 15.
public struct StoredReceiptKey: Sendable, Hashable {
    public var slot: Int
    /// Counts up with each rotation; the newest signs.
    public var generation: Int
    public var secret: [UInt8]
    public var createdAt: Date
    /// When it stops verifying (a rotation replaced it); `nil`: it is the newest.
    public var expiresAt: Date?
}

/// A notification's receipts, counted once per device, event and action.
public struct ReceiptCounts: Sendable, Hashable {
    public var byPlatform: [DevicePlatform: [ReceiptEvent: Int]] = [:]

    public init() {}

    /// Every platform's count of `event`.
    public func total(_ event: ReceiptEvent) -> Int {
        byPlatform.values.reduce(0) { $0 + ($1[event] ?? 0) }
    }
}

/// How far a notification got on one platform: sent, accepted, then what its devices reported.
public struct FunnelStages: Sendable, Hashable {
    public var accepted = 0
    public var sent = 0
    /// Devices that reported each event (once each).
    public var received = 0
    /// Devices that opened it or chose an action (`opened` or `clicked`).
    public var opened = 0
    public var dismissed = 0
    public var clicked = 0
    /// Milliseconds from the send to `received`, and to the first open: p50 and p95, over
    /// the first ``NotificationFunnel/latencySample`` receipts (`nil`: none).
    public var receivedLatency: (p50: Int, p95: Int)?
    public var openedLatency: (p50: Int, p95: Int)?

    public init() {}

    public static func == (a: Self, b: Self) -> Bool {
        a.accepted == b.accepted && a.sent == b.sent && a.received == b.received && a.opened == b.opened && a.dismissed == b.dismissed
            && a.clicked == b.clicked && a.receivedLatency?.p50 == b.receivedLatency?.p50 && a.receivedLatency?.p95 == b.receivedLatency?.p95
            && a.openedLatency?.p50 == b.openedLatency?.p50 && a.openedLatency?.p95 == b.openedLatency?.p95
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(accepted)
        hasher.combine(received)
        hasher.combine(opened)
    }
}

/// A notification's funnel by platform.
public struct NotificationFunnel: Sendable, Hashable {
    public var byPlatform: [DevicePlatform: FunnelStages] = [:]

    public init() {}

    /// The most receipts per platform and event read for the latency percentiles.
    public static let latencySample = 10_000
}

/// One day's funnel of an app: its notifications queued that day (UTC), and their receipts.
public struct DayFunnel: Sendable, Hashable {
    /// The day, `YYYY-MM-DD` (UTC).
    public var day: String
    public var notifications = 0
    public var targeted = 0
    public var accepted = 0
    public var received = 0
    public var opened = 0
    public var dismissed = 0
    public var clicked = 0

    public init(day: String) {
        self.day = day
    }
}

/// One line of an app's event stream (``HeraldStore/events(app:after:limit:)``).
public struct StreamEvent: Sendable, Hashable {
    /// Where the next read starts from, after this one.
    public var cursor: String
    public var type: StreamEventType
    public var at: Date
    /// The event's fields, a JSON object.
    public var data: String
}

/// What happened, in an app's event stream.
public enum StreamEventType: String, Sendable, Hashable, CaseIterable {
    case queued, accepted, rejected, failed, retired, completed, received, opened, dismissed, clicked
}
