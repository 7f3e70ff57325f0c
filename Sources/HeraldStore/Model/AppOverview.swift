#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How many of an app's devices share a status, a token kind, an environment and a platform.
public struct DeviceCount: Sendable, Hashable {
    public var status: DeviceStatus
    /// A browser's is `alert`: the push types it can receive.
    public var kind: TokenKind
    /// `nil`: registered without one (the app's default; always for a browser).
    public var environment: TokenEnvironment?
    public var platform: DevicePlatform
    public var count: Int

    public init(status: DeviceStatus, kind: TokenKind, environment: TokenEnvironment?, platform: DevicePlatform = .apns, count: Int) {
        self.status = status
        self.kind = kind
        self.environment = environment
        self.platform = platform
        self.count = count
    }
}

/// What of an app's sending is not finished.
public struct AppQueue: Sendable, Hashable {
    /// Notifications queued or sending.
    public var activeNotifications: Int
    /// Their devices not yet ended (queued, claimed, waiting for a retry, or in unread ranges).
    public var pendingDeliveries: Int

    public init(activeNotifications: Int, pendingDeliveries: Int) {
        self.activeNotifications = activeNotifications
        self.pendingDeliveries = pendingDeliveries
    }
}

/// The deliveries of an app that ended in one minute.
public struct ActivityMinute: Sendable, Hashable {
    /// The minute's start.
    public var start: Date
    public var accepted: Int
    public var rejected: Int
    public var failed: Int

    public init(start: Date, accepted: Int = 0, rejected: Int = 0, failed: Int = 0) {
        self.start = start
        self.accepted = accepted
        self.rejected = rejected
        self.failed = failed
    }
}
