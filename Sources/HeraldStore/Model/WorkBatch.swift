import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Devices a worker has claimed to send one notification to, under a lease: until it completes,
/// renews or releases the batch, no other worker gets them; if the lease runs out (the worker was
/// killed), they go back to the queue.
public struct WorkBatch: Sendable {
    /// The notification to send.
    public var notification: QueuedNotification
    /// The devices, each with its own badge when the notification increments badges.
    public var items: [WorkItem]
    /// Some of these devices may have been sent this before (a lease that ran out was taken
    /// over): the sender should give the notification a collapse ID so a device shows it once.
    public var isResend: Bool
    /// The worker that holds the lease.
    public var owner: String
    let source: Source

    /// Whether the store keeps each acceptance's APNs ID (a single delivery's row does). A
    /// broadcast range's acceptances are only counted: its sender need not carry their IDs.
    package var keepsAcceptanceIDs: Bool {
        if case .deliveries = source { return true }
        return false
    }

    enum Source: Sendable, Hashable {
        /// Delivery rows, by ID.
        case deliveries([Int64])
        /// A key range of the devices table: the range's number, and where it was read up to.
        case segment(number: Int, after: RangeCursor, exhausted: Bool)
    }
}

/// One device of a ``WorkBatch``.
public struct WorkItem: Sendable, Hashable {
    /// The device token, lower-case hex.
    public var token: String
    /// The badge to send (``BadgeMode/increment``), already counted in the store.
    public var badge: Int?
    /// How many times this device was claimed for this notification, this time included.
    public var attempt: Int
    /// The environment the device's token belongs to; `nil`: the app's.
    public var environment: TokenEnvironment? = nil
    /// The platform the device registered on, as the store keeps it.
    public var platform: DevicePlatform = .apns
}

/// What a worker needs to know to send a notification.
public struct QueuedNotification: Sendable, PlatformOptionsHolder {
    public var id: String
    public var app: String
    public var payload: [UInt8]
    public var pushType: PushType
    public var priority: PushPriority?
    public var expiration: PushExpiration?
    public var collapseID: String?
    public var badge: BadgeMode
    /// No attempt is made after this: the notification's apns-expiration, or its maximum age.
    public var deadline: Date
    /// Each platform's options for the notification (``NotificationRequest/platformOptions``;
    /// ``PlatformOptionsHolder/webPush`` and ``PlatformOptionsHolder/fcm`` read them).
    public var platformOptions: [DevicePlatform: [UInt8]] = [:]
    /// When its devices may be sent, if not at once.
    public var schedule: DeliverySchedule? = nil
    /// Its category, template and digest, if any.
    public var content: NotificationContent? = nil
    /// Whether the claim found it queued, not yet sending.
    var isQueued = false
}

/// How sending to one device of a ``WorkBatch`` ended.
public struct DeliveryOutcome: Sendable, Hashable {
    public enum Result: Sendable, Hashable {
        /// The platform accepted it; `receipt` is what it gave back (an apns-id, a Web Push
        /// `Location`, an FCM message name), if it is kept, and `uniqueID` the service's own ID
        /// for finding it in its logs where it gives one (APNs's apns-unique-id, in the
        /// development environment).
        case accepted(receipt: String?, uniqueID: String? = nil)
        /// APNs refused it, for good. A 410 carries when APNs saw the token go.
        case rejected(reason: DeliveryReason, timestamp: Date?)
        /// It could not be delivered now (APNs unreachable, 5xx, 429): try again later, until
        /// the notification's deadline: after the queue's back-off or, when `notBefore` is given
        /// (a push service's `Retry-After`, a host the gateway backs off), at that time, never sooner.
        case retry(reason: DeliveryReason, notBefore: Date? = nil)
        /// It cannot be delivered, and trying again would not help.
        case failed(reason: DeliveryReason)
        /// It was not sent, and will not be: the device opted out, was capped, or its user's
        /// digest holds it (``SkipReason``).
        case skipped(SkipReason)
    }

    public var token: String
    public var result: Result

    public init(token: String, result: Result) {
        self.token = token
        self.result = result
    }
}
