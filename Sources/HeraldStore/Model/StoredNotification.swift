import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Who a notification goes to.
public enum Audience: Sendable, Hashable {
    /// These device tokens (lower-case hex), registered or not.
    case tokens([String])
    /// Every active device of these users.
    case users([String])
    /// Every active device with any of these tags.
    case tags([String])
    /// Every active device of the app.
    case all
    /// Every update token of one Live Activity (``LiveActivity``), by its ID.
    case activity(String)

    /// Whether devices are read in key ranges as the broadcast goes (tags, all), rather than one
    /// delivery row per token written when it is queued (tokens, users).
    var isRange: Bool {
        switch self {
        case .tokens, .users, .activity: false
        case .tags, .all: true
        }
    }
}

/// How a notification changes the badge of each device it goes to.
public enum BadgeMode: String, Sendable, Hashable {
    /// The payload is sent as it is.
    case none
    /// Each device's stored badge goes up by one, and that value is its payload's `aps.badge`.
    case increment
}

/// Where a notification stands.
public enum NotificationStatus: String, Sendable, Hashable {
    /// Stored; nothing claimed yet.
    case queued
    /// Stored, to be sent later (its `sendAt` is ahead): cancel works meanwhile. Stored as
    /// queued; a list of queued notifications includes them.
    case scheduled
    /// Being delivered.
    case sending
    /// Every device has its outcome.
    case done
    /// Cancelled: what was not sent will not be.
    case cancelled
}

/// What a caller asks to send.
public struct NotificationRequest: Sendable {
    public var app: String
    public var audience: Audience
    /// The APNs JSON payload, checked by the caller (size, push type).
    public var payload: [UInt8]
    public var pushType: PushType
    public var priority: PushPriority?
    public var expiration: PushExpiration?
    public var collapseID: String?
    public var badge: BadgeMode
    /// The same key (per app) returns the notification stored the first time.
    public var idempotencyKey: String?
    /// For a Live Activity `start` (push type `liveactivity`): the attributes type whose
    /// push-to-start tokens it goes to; a token of another type is never sent it.
    public var activityType: String?
    /// For an event to an ``Audience/activity(_:)``: the event ends the activity, whose update
    /// tokens are forgotten after this date; later events are refused.
    public var endsActivityUntil: Date?
    /// Each platform's options for this notification, as its field in the gateway's API gave
    /// them (JSON text, stored as it is): ``PlatformOptionsHolder/webPush``, ``PlatformOptionsHolder/fcm``.
    public var platformOptions: [DevicePlatform: [UInt8]] = [:]
    /// When its devices may be sent (a later start, their local time, quiet hours, a pace);
    /// `nil`: at once.
    public var schedule: DeliverySchedule?
    /// Its category, template and digest, if any.
    public var content: NotificationContent?

    public init(
        app: String, audience: Audience, payload: [UInt8], pushType: PushType = .alert, priority: PushPriority? = nil,
        expiration: PushExpiration? = nil, collapseID: String? = nil, badge: BadgeMode = .none, idempotencyKey: String? = nil,
        activityType: String? = nil, endsActivityUntil: Date? = nil
    ) {
        self.app = app
        self.audience = audience
        self.payload = payload
        self.pushType = pushType
        self.priority = priority
        self.expiration = expiration
        self.collapseID = collapseID
        self.badge = badge
        self.idempotencyKey = idempotencyKey
        self.activityType = activityType
        self.endsActivityUntil = endsActivityUntil
    }
}

/// How many devices a notification reached, and how the others ended.
public struct NotificationCounts: Sendable, Hashable {
    /// Devices it goes to: for tag and all-device audiences, the active ones counted when it was
    /// queued, made exact when it is done.
    public var targeted: Int
    public var accepted: Int
    /// Rejections by APNs reason.
    public var rejected: [String: Int]
    /// Devices it could not reach (APNs unreachable until it expired, or cancelled).
    public var failed: Int
    /// Of the outcomes above, those of each platform but APNs (Web Push, FCM): the rest are APNs
    /// devices'. Counted as devices are sent to (not a cancel's); a platform none of whose
    /// devices has an outcome yet is absent.
    public var byPlatform: [DevicePlatform: PlatformCounts]
    /// Devices not sent it, by why (``SkipReason``): they opted out, were capped, or had it
    /// folded into a digest. A reason no device had is absent.
    public var skipped: [SkipReason: Int]

    public init(
        targeted: Int = 0, accepted: Int = 0, rejected: [String: Int] = [:], failed: Int = 0, byPlatform: [DevicePlatform: PlatformCounts] = [:],
        skipped: [SkipReason: Int] = [:]
    ) {
        self.skipped = skipped
        self.targeted = targeted
        self.accepted = accepted
        self.rejected = rejected
        self.failed = failed
        self.byPlatform = byPlatform
    }

    /// Of the outcomes, those of browsers (Web Push subscriptions).
    public var browsers: PlatformCounts {
        get { byPlatform[.webpush] ?? PlatformCounts() }
        set { byPlatform[.webpush] = newValue }
    }

    /// Of the outcomes, those of Android devices (FCM registration tokens).
    public var android: PlatformCounts {
        get { byPlatform[.fcm] ?? PlatformCounts() }
        set { byPlatform[.fcm] = newValue }
    }

    /// APNs devices' outcomes: the totals less the other platforms'.
    public var apns: PlatformCounts {
        let others = byPlatform.filter { $0.key != .apns }.values
        return PlatformCounts(
            accepted: accepted - others.reduce(0) { $0 + $1.accepted }, rejected: rejected.values.reduce(0, +) - others.reduce(0) { $0 + $1.rejected },
            failed: failed - others.reduce(0) { $0 + $1.failed })
    }

    /// Devices without an outcome yet.
    public var pending: Int { max(0, targeted - accepted - rejected.values.reduce(0, +) - failed - skipped.values.reduce(0, +)) }
}

/// How many devices of one platform a notification was accepted, rejected and failed for.
public struct PlatformCounts: Sendable, Hashable {
    public var accepted: Int
    public var rejected: Int
    public var failed: Int

    public init(accepted: Int = 0, rejected: Int = 0, failed: Int = 0) {
        self.accepted = accepted
        self.rejected = rejected
        self.failed = failed
    }
}

/// A notification as stored: what was asked, and how it is going.
public struct StoredNotification: Sendable {
    /// Sortable by creation (a UUIDv7), lower case.
    public var id: String
    public var request: NotificationRequest
    public var status: NotificationStatus
    public var counts: NotificationCounts
    public var createdAt: Date
    public var finishedAt: Date?
}

/// How one device's delivery ended, as listed.
public struct DeliveryRecord: Sendable, Hashable {
    public enum Outcome: String, Sendable, Hashable, CaseIterable {
        case accepted, rejected, failed
        /// Not sent, by a preference, a frequency cap or a digest (``SkipReason``).
        case optedOut, capped, digested
    }

    public var token: String
    public var outcome: Outcome
    public var reason: String?
    /// What the platform gave back for an accepted delivery: the apns-id, a Web Push message's
    /// `Location`, an FCM message name (stored bounded, in the `apns_id` column).
    public var receipt: String?
    /// The push service's own ID for finding the delivery in its logs, where it gave one:
    /// APNs's `apns-unique-id` (development environment only; Apple's Push Notifications Console
    /// looks a delivery log up by it). Bounded as the receipt is.
    public var uniqueID: String?
    public var at: Date

    /// The receipt's name from when every delivery was APNs's.
    @available(*, deprecated, renamed: "receipt")
    public var apnsID: String? { receipt }
}

extension NotificationRequest: PlatformOptionsHolder {}

/// What holds a notification's options for each platform (``NotificationRequest``,
/// ``QueuedNotification``), with a view of each of today's.
public protocol PlatformOptionsHolder {
    var platformOptions: [DevicePlatform: [UInt8]] { get set }
}

extension PlatformOptionsHolder {
    /// What browsers receive instead of what is derived from `payload`: a JSON object (the
    /// gateway's `webPush` field: `navigate`, `payload`).
    public var webPush: [UInt8]? {
        get { platformOptions[.webpush] }
        set { platformOptions[.webpush] = newValue }
    }
    /// What refines the FCM message derived from `payload`: a JSON merge patch (RFC 7386; the
    /// gateway's `fcm.message` field).
    public var fcm: [UInt8]? {
        get { platformOptions[.fcm] }
        set { platformOptions[.fcm] = newValue }
    }
}

/// What ``HeraldStore/enqueue(_:forPusher:app:setAt:now:)`` did with a pusher's device.
public enum PusherOutcome: Sendable {
    /// The device is retired and its pusher was not set again since: nothing was queued.
    case rejected
    /// The device is registered (or was already); there was nothing to queue.
    case registered
    /// The device is registered and its notification queued (`created` false: the same
    /// idempotency key had queued it before).
    case queued(notification: StoredNotification, created: Bool)
}
