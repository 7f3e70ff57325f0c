#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Receipts from devices, funnels, and each app's event stream (docs/receipts.md).
extension HeraldStore {
    /// `app`'s receipt keys that still verify at `now`, newest first: the first is made when
    /// there is none.
    public func receiptKeys(app: String, now: Date = Date()) async throws -> [StoredReceiptKey] {
        try await backend.receiptKeys(app: app, now: now)
    }

    /// Makes a new key the one that signs; the one it replaces still verifies for `overlap`.
    /// Returns the keys that verify now, newest first. A slot is reused after 16 rotations: a
    /// key rotated out 16 rotations ago stops verifying then, whatever its overlap.
    public func rotateReceiptKey(app: String, overlap: TimeInterval, now: Date = Date()) async throws -> [StoredReceiptKey] {
        try await backend.rotateReceiptKey(app: app, overlap: max(0, overlap), now: now)
    }

    /// The app of each of `notifications` still kept.
    public func notificationApps(_ notifications: [String]) async throws -> [String: String] {
        try await backend.notificationApps(notifications)
    }

    /// The active devices of each app, token kind and key hash of `keys` (their IDs). One read.
    public func receiptDevices(_ keys: [DeviceHashKey]) async throws -> [DeviceHashKey: [String]] {
        try await backend.receiptDevices(keys)
    }

    /// Stores verified receipts, each (notification, device, event, action) once, counts them,
    /// and appends each new one to its app's event stream; returns those not stored before.
    public func recordReceipts(_ receipts: [ReceiptRecord], now: Date = Date()) async throws -> [ReceiptRecord] {
        try await backend.recordReceipts(receipts, now: now)
    }

    /// A notification's receipts, by platform and event.
    public func receiptCounts(notification: String) async throws -> ReceiptCounts {
        try await backend.receiptCounts(notification: notification)
    }

    /// A notification's receipts as a funnel by platform (the counts of its sends are the
    /// notification's own).
    public func funnel(notification: String) async throws -> NotificationFunnel {
        try await backend.funnel(notification: notification)
    }

    /// `app`'s funnel per day (UTC) for the last `days` days, today last.
    public func dailyFunnel(app: String, days: Int, now: Date = Date()) async throws -> [DayFunnel] {
        try await backend.dailyFunnel(app: app, days: max(1, min(days, 92)), now: now)
    }

    /// Up to `limit` of `app`'s events after `cursor`, in order: each one's ``StreamEvent/cursor``
    /// is where the next read starts.
    public func events(app: String, after cursor: EventCursor = .start, limit: Int = 1000) async throws -> [StreamEvent] {
        try await backend.events(app: app, after: cursor, limit: max(1, min(limit, 10_000)))
    }

    /// Deletes up to `limit` events from before `cutoff`; returns how many.
    package func purgeEvents(before cutoff: Date, limit: Int = 1000) async throws -> Int {
        try await backend.purgeEvents(before: cutoff, limit: max(1, limit))
    }
}
