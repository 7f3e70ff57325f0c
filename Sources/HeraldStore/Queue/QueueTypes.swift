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

/// What APNs said about a device that makes it unreachable.
struct Invalidation: Sendable, Hashable {
    var token: String
    var reason: String
    /// When APNs saw the token go (410 and feedback); `nil` for reasons that invalidate at once.
    var timestamp: Date?

    /// The reasons that end a device, and how (apns-spec §1.7): `Unregistered` and
    /// `ExpiredToken` only if the device has not registered again since APNs's timestamp;
    /// `BadDeviceToken` and `DeviceTokenNotForTopic` at once.
    static func status(for reason: String) -> DeviceCode? {
        status(for: DeliveryReason(reason))
    }

    /// The one table of reasons that end a device: ``DeliveryDecision`` decides by it too.
    static func status(for reason: DeliveryReason) -> DeviceCode? {
        switch reason {
        // A browser's push service says so with 404 or 410 (RFC 8030 §7.3), and FCM with
        // UNREGISTERED, at the time they answer.
        case .webPush(.subscriptionGone), .fcm(.unregistered): return .unregistered
        case .fcm(.invalidToken), .fcm(.senderIdMismatch): return .invalid
        default: break
        }
        return switch reason.apnsReason {
        case .unregistered, .expiredToken: .unregistered
        case .badDeviceToken, .deviceTokenNotForTopic: .invalid
        default: nil
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
