import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the queue does with one device after an attempt to send to it, decided before any I/O
/// from the outcome alone (like the client's retry decisions), so both backends carry out the
/// same decision and it is tested without a database.
public enum DeliveryDecision: Sendable, Hashable {
    /// The platform accepted it.
    case accept(receipt: String?, uniqueID: String? = nil)
    /// Try again at `at` (`reason` is why this attempt did not deliver).
    case retry(at: Date, reason: DeliveryReason)
    /// APNs says the token is no longer valid (`Unregistered`, `ExpiredToken`): the device is
    /// retired unless it registered again after `since`, when APNs saw the token go (apns-spec §1.7).
    case retireDevice(reason: DeliveryReason, since: Date)
    /// APNs says the token is wrong for good (`BadDeviceToken`, `DeviceTokenNotForTopic`): the
    /// device is invalid at once (apns-spec §1.7).
    case invalidateDevice(reason: DeliveryReason)
    /// APNs refused it for good, for a reason about the notification, not the device.
    case reject(reason: DeliveryReason)
    /// It cannot be delivered: the sender gave up, the notification was cancelled, or its deadline
    /// comes before the next retry would (`Expired (last: …)`).
    case fail(reason: DeliveryReason)
    /// Not sent, for good, without a fault (``SkipReason``).
    case skip(SkipReason)

    /// The decision for one device.
    ///
    /// - Parameters:
    ///   - outcome: how the attempt ended.
    ///   - attempt: how many times the device was claimed for this notification, this time included.
    ///   - deadline: the notification's deadline: no retry at or after it.
    ///   - cancelled: the notification was cancelled meanwhile: a retry ends as failed instead.
    ///   - now: when the outcome is recorded; a 410 without a timestamp counts from then.
    ///   - random: a value in 0..<1 for the back-off's jitter.
    public static func decide(
        outcome: DeliveryOutcome.Result, attempt: Int, deadline: Date, cancelled: Bool, now: Date, settings: RetrySettings,
        random: Double
    ) -> DeliveryDecision {
        switch outcome {
        case .accepted(let receipt, let uniqueID):
            return .accept(receipt: receipt, uniqueID: uniqueID)
        case .rejected(let reason, let timestamp):
            switch Invalidation.status(for: reason) {
            case .unregistered:
                return .retireDevice(reason: reason, since: timestamp ?? now)
            case .invalid:
                return .invalidateDevice(reason: reason)
            case .active, nil:
                return .reject(reason: reason)
            }
        case .retry(let reason, let notBefore):
            if cancelled { return .fail(reason: .gateway(.cancelled)) }
            // A time the outcome names replaces the back-off (a device held while its push
            // service's host is backed off comes due when the host is tried again, however many
            // times it was held); one already past means now.
            let next = notBefore.map { max($0, now) } ?? now.addingTimeInterval(settings.backoff.delay(afterAttempt: attempt, random: random).seconds)
            if next >= deadline { return .fail(reason: .expiredRetrying(last: reason)) }
            return .retry(at: next, reason: reason)
        case .failed(let reason):
            return .fail(reason: reason)
        case .skipped(let reason):
            return .skip(reason)
        }
    }

    /// The reason the decision carries: why it was not accepted (`nil` for ``accept(receipt:)``).
    public var reason: DeliveryReason? {
        switch self {
        case .accept, .skip: nil
        case .retry(_, let reason), .retireDevice(let reason, _), .invalidateDevice(let reason), .reject(let reason), .fail(let reason): reason
        }
    }
}
