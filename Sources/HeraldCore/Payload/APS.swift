#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The `aps` dictionary: Apple's keys of a payload (apns-spec §3.1). Every key is optional and is
/// left out of the JSON when `nil` (or `false` for the flags).
public struct APS: Sendable, Hashable {
    /// `alert`: a string or a dictionary.
    public var alert: Alert?
    /// `badge`: the app-icon number; `0` removes the badge, `nil` leaves it as it is.
    public var badge: Int?
    /// `sound`: a file name or the critical-alert dictionary.
    public var sound: Sound?
    /// `thread-id`: groups notifications.
    public var threadID: String?
    /// `category`: a registered notification category (action buttons).
    public var category: String?
    /// `content-available: 1`: a silent background push (push type `background`, priority 5).
    public var contentAvailable: Bool
    /// `mutable-content: 1`: routes the push through the Notification Service Extension.
    public var mutableContent: Bool
    /// `target-content-id`: the window or content to bring forward.
    public var targetContentID: String?
    /// `interruption-level`.
    public var interruptionLevel: InterruptionLevel?
    /// `relevance-score`: 0 to 1 for notification summaries; any number for Live Activities.
    public var relevanceScore: Double?
    /// `filter-criteria`: Focus filter matching.
    public var filterCriteria: String?
    /// `url-args`: Safari website push only; one value per `%@` of the `urlFormatString`.
    public var urlArgs: [String]?

    // Live Activities (§3.1; Apple's ActivityKit push documentation)

    /// `timestamp`: when the update was sent, written as UNIX seconds.
    public var timestamp: Date?
    /// `event`: start, update or end.
    public var event: LiveActivityEvent?
    /// `content-state`: must decode into the app's `ContentState`; see ``setContentState(_:)``.
    public var contentState: JSONValue?
    /// `stale-date`, written as UNIX seconds.
    public var staleDate: Date?
    /// `dismissal-date` (on `end`), written as UNIX seconds; a past date removes it at once.
    public var dismissalDate: Date?
    /// `attributes-type` (on `start`): the name of the app's `ActivityAttributes` type.
    public var attributesType: String?
    /// `attributes` (on `start`): the static attributes; see ``setAttributes(_:)``.
    public var attributes: JSONValue?
    /// `input-push-token: 1` (on `start`, iOS 18+): asks the device for an update token.
    public var inputPushToken: Bool
    /// `input-push-channel` (on `start`, iOS 18+): the broadcast channel ID to subscribe to.
    public var inputPushChannel: String?
    /// `content-changed: true`: believed to be the WidgetKit reload payload; Apple has not
    /// confirmed it (apns-spec §8.10).
    public var contentChanged: Bool

    public init(
        alert: Alert? = nil,
        badge: Int? = nil,
        sound: Sound? = nil,
        threadID: String? = nil,
        category: String? = nil,
        contentAvailable: Bool = false,
        mutableContent: Bool = false,
        interruptionLevel: InterruptionLevel? = nil,
        relevanceScore: Double? = nil
    ) {
        self.alert = alert
        self.badge = badge
        self.sound = sound
        self.threadID = threadID
        self.category = category
        self.contentAvailable = contentAvailable
        self.mutableContent = mutableContent
        self.interruptionLevel = interruptionLevel
        self.relevanceScore = relevanceScore
        self.inputPushToken = false
        self.contentChanged = false
    }

    /// Sets `content-state` from the app's `ContentState` value, encoded the way ActivityKit decodes
    /// it on the device: with a default `JSONEncoder` (so dates are seconds since 2001).
    public mutating func setContentState(_ state: some Encodable) throws(PayloadError) {
        contentState = try JSONValue(encoding: state)
    }

    /// Sets `attributes` from the app's `ActivityAttributes` value (for a push-to-start).
    public mutating func setAttributes(_ attributes: some Encodable) throws(PayloadError) {
        self.attributes = try JSONValue(encoding: attributes)
    }

    /// Whether this is a pure background push: `content-available` and no other key. Herald
    /// defaults the push type to `background` for such a payload.
    public var isContentAvailableOnly: Bool {
        var bare = APS()
        bare.contentAvailable = true
        return self == bare
    }
}

extension JSONValue {
    /// Encodes any `Encodable` with a default `JSONEncoder`, as ActivityKit decodes on the device.
    public init(encoding value: some Encodable) throws(PayloadError) {
        let data: Data
        do {
            data = try JSONEncoder().encode(value)
        } catch {
            throw PayloadError(.unencodable, "could not encode \(type(of: value)) as JSON: \(error)")
        }
        do {
            self = try JSONValue(parsing: data)
        } catch {
            throw PayloadError(.unencodable, "\(type(of: value)) encoded to invalid JSON: \(error)")
        }
    }
}
