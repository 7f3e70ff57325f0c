import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension StoreError {
    /// A renewal that found `renewed` of the batch's `held` rows (or its range) still leased to
    /// its owner: the others' lease ran out and another worker took them (or they were completed).
    static func leaseLost(_ batch: WorkBatch, renewed: Int, of held: Int) -> StoreError {
        switch batch.source {
        case .deliveries:
            StoreError(.leaseLost, "the lease on \(held - renewed) of \(held) devices of notification \(batch.notification.id) ran out and another worker took them")
        case .segment:
            StoreError(.leaseLost, "the lease on a range of notification \(batch.notification.id) ran out and another worker took it")
        }
    }
}

/// What a push service said about a device that makes it unreachable.
struct Invalidation: Sendable, Hashable {
    var token: String
    var reason: String
    /// When the push service saw the device go (APNs's 410 timestamp and feedback, the time of a
    /// Web Push or FCM answer); `nil` for reasons that invalidate at once.
    var timestamp: Date?

    /// What a stored reason does to its device (``status(for:)-(DeliveryReason)``).
    static func status(for reason: String) -> DeviceCode? {
        status(for: DeliveryReason(reason))
    }

    /// Which reasons end a device, and how: each platform's reasons say (``DeliveryReason/deviceFate``).
    /// ``DeliveryDecision`` decides by it too.
    static func status(for reason: DeliveryReason) -> DeviceCode? {
        switch reason.deviceFate {
        case .unregistered?: .unregistered
        case .invalid?: .invalid
        case nil: nil
        }
    }
}

/// How much work is waiting.
public struct QueueStatistics: Sendable, Hashable {
    /// Deliveries waiting to be sent or retried, or claimed now.
    public var pendingDeliveries: Int
    /// Key ranges of broadcasts not yet read to their end.
    public var pendingRanges: Int
    /// Notifications queued or sending.
    public var activeNotifications: Int
}

/// Milliseconds since the epoch, as the databases store times.
extension Date {
    var milliseconds: Int64 { Int64((timeIntervalSince1970 * 1000).rounded()) }
    init(milliseconds: Int64) { self.init(timeIntervalSince1970: Double(milliseconds) / 1000) }
}
