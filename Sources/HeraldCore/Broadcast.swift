#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a broadcast channel stores messages for devices that are offline (apns-spec §1.9).
/// Fixed when the channel is created.
public enum ChannelStoragePolicy: Int, Sendable, Hashable, CaseIterable {
    /// Nothing is stored: broadcasts must have `apns-expiration: 0`.
    case noStorage = 0
    /// The most recent message is stored (up to 8 hours).
    case mostRecentMessage = 1
}

/// A broadcast channel as APNs describes it.
public struct BroadcastChannel: Sendable, Hashable {
    /// The channel ID APNs assigned (base64; do not assume its length).
    public var id: String
    public var storagePolicy: ChannelStoragePolicy
    /// `LiveActivity`, the only push type channels carry so far.
    public var pushType: String

    public init(id: String, storagePolicy: ChannelStoragePolicy, pushType: String = "LiveActivity") {
        self.id = id
        self.storagePolicy = storagePolicy
        self.pushType = pushType
    }
}

/// An iOS 18 broadcast push: one Live Activity update to every device subscribed to a channel
/// (apns-spec §1.9). It can update or end an activity, never start one.
public struct BroadcastNotification: Sendable, Hashable {
    /// The app's bundle ID (no push-type suffix).
    public var bundleID: String
    /// The channel to broadcast on.
    public var channelID: String
    /// `apns-priority`: 10 or 5.
    public var priority: PushPriority
    /// `apns-expiration`; must be ``PushExpiration/immediately`` on a no-storage channel.
    public var expiration: PushExpiration?
    /// `apns-request-id`, echoed by APNs; `nil` lets APNs make one.
    public var requestID: UUID?
    /// The Live Activity payload (`event` update or end).
    public var payload: EncodedPayload

    /// The largest broadcast payload (§1.8).
    public static let maximumPayloadSize = 5120

    public init(
        bundleID: String, channelID: String, payload: EncodedPayload, priority: PushPriority = .immediate,
        expiration: PushExpiration? = nil, requestID: UUID? = nil
    ) {
        self.bundleID = bundleID
        self.channelID = channelID
        self.priority = priority
        self.expiration = expiration
        self.requestID = requestID
        self.payload = payload
    }

    /// Refuses what APNs would refuse (§1.9): an empty bundle ID or channel ID, priority 1, a
    /// payload over 5120 bytes.
    public func validate() throws(APNSError) {
        if bundleID.isEmpty || bundleID.contains("/") {
            throw APNSError(local: .badPath, "a broadcast needs the app's bundle ID, got '\(bundleID)'")
        }
        if channelID.isEmpty { throw APNSError(local: .missingChannelId, "apns-channel-id is empty") }
        if priority == .low { throw APNSError(local: .badPriority, "broadcast priority must be 10 or 5") }
        try payload.checkSize(limit: Self.maximumPayloadSize)
    }

    /// `POST /4/broadcasts/apps/<bundleId>` (§1.9).
    public var path: String { "/4/broadcasts/apps/" + bundleID }

    /// The request headers, `authorization` excluded: the push type is `liveactivity` and there is
    /// no `apns-topic` (§1.9).
    public var headerFields: [(name: String, value: String)] {
        var fields: [(name: String, value: String)] = [
            ("apns-channel-id", channelID), ("apns-push-type", "liveactivity"), ("apns-priority", priority.description),
        ]
        if let expiration { fields.append(("apns-expiration", expiration.description)) }
        if let requestID { fields.append(("apns-request-id", requestID.uuidString.lowercased())) }
        return fields
    }
}

extension APNSEnvironment {
    /// Channel management in production: `api-manage-broadcast.push.apple.com:2196` (§1.9).
    public static let channelManagementProduction = APNSEnvironment.custom(host: "api-manage-broadcast.push.apple.com", port: 2196)
    /// Channel management in development: `api-manage-broadcast.sandbox.push.apple.com:2195` (§1.9).
    public static let channelManagementSandbox = APNSEnvironment.custom(host: "api-manage-broadcast.sandbox.push.apple.com", port: 2195)
}
