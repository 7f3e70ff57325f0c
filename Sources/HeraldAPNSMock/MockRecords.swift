import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A notification the mock accepted.
public struct AcceptedNotification: Sendable, Hashable {
    /// The device token, lower-case hex.
    public var token: String
    /// The apns-id it answered with.
    public var apnsID: String
    public var topic: String
    public var pushType: String
    public var priority: Int
    /// The request body as received.
    public var payload: [UInt8]
    /// Which connection it came on (counted from 1 in accept order).
    public var connection: Int
    /// The key ID (`kid`) of the provider token it was authenticated with, when the mock checks
    /// signatures; `nil` with a client certificate.
    public var keyID: String? = nil
    /// Its `apns-collapse-id`, if it had one: the device shows only the latest with the same one.
    public var collapseID: String? = nil
    /// When the mock answered it (a test measures a pace by it).
    public var receivedAt = Date()
}

/// A request the mock rejected.
public struct RejectedNotification: Sendable, Hashable {
    public var token: String
    public var status: Int
    public var reason: String
}
