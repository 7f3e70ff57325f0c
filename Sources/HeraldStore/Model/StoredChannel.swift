#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An iOS 18 broadcast channel the gateway created at APNs for an app (apns-spec §1.9): Live
/// Activities subscribed to it get each event sent to it, one request however many listen.
public struct StoredChannel: Sendable, Hashable {
    public var app: String
    /// The `apns-channel-id` APNs gave it (base64).
    public var id: String
    /// Channels are per environment.
    public var environment: TokenEnvironment
    /// Whether APNs keeps the most recent message for devices that were offline.
    public var storesMostRecent: Bool
    public var createdAt: Date

    /// The most channels APNs allows an app in one environment (apns-spec §1.9).
    public static let maximumPerEnvironment = 10_000
    /// The longest channel ID the gateway keeps (APNs's are short base64; their size is not promised).
    public static let maximumIDLength = 256

    /// Whether `id` may be a channel ID: 1 to ``maximumIDLength`` of base64 (`A-Z a-z 0-9 + / =`).
    public static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= maximumIDLength
            && id.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
                case UInt8(ascii: "+"), UInt8(ascii: "/"), UInt8(ascii: "="): true
                default: false
                }
            }
    }

    public init(app: String, id: String, environment: TokenEnvironment, storesMostRecent: Bool, createdAt: Date) {
        self.app = app
        self.id = id
        self.environment = environment
        self.storesMostRecent = storesMostRecent
        self.createdAt = createdAt
    }
}
