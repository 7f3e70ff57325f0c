#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A Live Activity running on some devices, known by the update tokens its app reported for it
/// (ActivityKit's `pushTokenUpdates`, one per device it runs on). Events go to all of them.
public struct LiveActivity: Sendable, Hashable {
    public var app: String
    /// ActivityKit's `Activity.id`, as the app reported it.
    public var id: String
    public var state: LiveActivityState
    /// Its update tokens, in token order (at most ``LiveActivity/maximumTokens``).
    public var tokens: [ActivityToken]
    public var createdAt: Date
    /// When an `end` event was accepted.
    public var endedAt: Date?
    /// After this its update tokens are forgotten: the `end` event's dismissal date, or four hours
    /// after it (what the system does without one, apns-spec §3.1 `dismissal-date`).
    public var dismissalAt: Date?

    /// The most update tokens one activity may have: one per device it runs on (a user's iPhone,
    /// iPad and Mac, or the devices sharing it); more is refused.
    public static let maximumTokens = 1000
    /// The longest activity ID: ActivityKit's are UUIDs.
    public static let maximumIDLength = 128

    /// Whether `id` may name an activity: 1 to ``maximumIDLength`` of A-Z a-z 0-9 and `- _ . :`.
    public static func isValidID(_ id: String) -> Bool {
        !id.isEmpty && id.utf8.count <= maximumIDLength
            && id.utf8.allSatisfy { byte in
                switch byte {
                case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
                case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"): true
                default: false
                }
            }
    }

    public init(app: String, id: String, state: LiveActivityState, tokens: [ActivityToken], createdAt: Date, endedAt: Date? = nil, dismissalAt: Date? = nil) {
        self.app = app
        self.id = id
        self.state = state
        self.tokens = tokens
        self.createdAt = createdAt
        self.endedAt = endedAt
        self.dismissalAt = dismissalAt
    }
}

/// Whether a Live Activity takes events.
public enum LiveActivityState: String, Sendable, Hashable, CaseIterable {
    /// Updates and an end are sent to its tokens.
    case active
    /// An `end` was accepted: further events are refused (HTTP 409).
    case ended
}

/// One device's update token for a Live Activity.
public struct ActivityToken: Sendable, Hashable {
    /// Lower-case hex.
    public var token: String
    public var user: String?
    /// `nil`: the app's.
    public var environment: TokenEnvironment?
    public var createdAt: Date
    public var updatedAt: Date

    public init(token: String, user: String? = nil, environment: TokenEnvironment? = nil, createdAt: Date, updatedAt: Date) {
        self.token = token
        self.user = user
        self.environment = environment
        self.createdAt = createdAt
        self.updatedAt = updatedAt
    }
}
