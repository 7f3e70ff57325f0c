import HeraldCore

/// One FCM HTTP v1 message (the `Message` resource) to one registration token: a notification
/// the system shows, `data` the app receives, Android delivery options, or a raw message object
/// for anything else the API takes.
///
/// ``validate()`` refuses what FCM would: reserved data keys, a payload over 4,096 bytes, a bad
/// priority or TTL; the client validates before sending.
public struct FCMMessage: Sendable, Hashable {
    /// The registration token it is sent to.
    public var token: String
    /// What the system shows: `notification {title, body, image}`.
    public var notification: Notification?
    /// Key-value pairs for the app; FCM takes string values only (see ``setData(_:forKey:)``).
    public var data: [String: String]
    /// `android`: priority, TTL, collapse key, Android notification options.
    public var android: Android?
    /// A message object given whole (``init(raw:token:)``): sent as is, with `token` set and
    /// non-string data values JSON-encoded; the typed fields above are then ignored.
    public private(set) var raw: [String: JSONValue]?

    /// `notification`: shown by the system when the app is in the background.
    public struct Notification: Sendable, Hashable {
        public var title: String?
        public var body: String?
        /// An `https` URL of an image to show with it.
        public var image: String?

        public init(title: String? = nil, body: String? = nil, image: String? = nil) {
            self.title = title
            self.body = body
            self.image = image
        }
    }

    /// `android` (`AndroidConfig`).
    public struct Android: Sendable, Hashable {
        /// `priority`: `high` wakes a dozing device (and is for user-visible messages); `normal`
        /// may wait for a maintenance window.
        public enum Priority: String, Sendable, Hashable, CaseIterable {
            case high
            case normal
        }

        public var priority: Priority?
        /// `ttl`: how long FCM keeps the message for an offline device, 0 to 28 days; sent as a
        /// duration string (`"3.5s"`). Absent: FCM's default, 28 days.
        public var timeToLive: Duration?
        /// `collapse_key`: a newer message with the same key replaces one still waiting.
        public var collapseKey: String?
        /// `notification` (`AndroidNotification`): Android-only display options.
        public var notification: AndroidNotification?

        public init(priority: Priority? = nil, timeToLive: Duration? = nil, collapseKey: String? = nil, notification: AndroidNotification? = nil) {
            self.priority = priority
            self.timeToLive = timeToLive
            self.collapseKey = collapseKey
            self.notification = notification
        }
    }

    /// `android.notification` (`AndroidNotification`): fields written with FCM's names.
    public struct AndroidNotification: Sendable, Hashable {
        public var title: String?
        public var body: String?
        public var icon: String?
        /// `#rrggbb`.
        public var color: String?
        public var sound: String?
        /// Replaces a shown notification with the same tag.
        public var tag: String?
        public var clickAction: String?
        /// The Android notification channel (Android 8 and later).
        public var channelID: String?
        public var image: String?

        public init(
            title: String? = nil, body: String? = nil, icon: String? = nil, color: String? = nil, sound: String? = nil, tag: String? = nil,
            clickAction: String? = nil, channelID: String? = nil, image: String? = nil
        ) {
            (self.title, self.body, self.icon, self.color, self.sound) = (title, body, icon, color, sound)
            (self.tag, self.clickAction, self.channelID, self.image) = (tag, clickAction, channelID, image)
        }

        var members: [(String, String?)] {
            [
                ("title", title), ("body", body), ("icon", icon), ("color", color), ("sound", sound), ("tag", tag), ("click_action", clickAction),
                ("channel_id", channelID), ("image", image),
            ]
        }
    }

    /// A message built from typed fields.
    public init(token: String, notification: Notification? = nil, data: [String: String] = [:], android: Android? = nil) {
        self.token = token
        self.notification = notification
        self.data = data
        self.android = android
    }

    /// A message object given whole, as FCM's `Message` JSON (`{"token": …, "notification": …,
    /// "data": …, "android": …, "apns": …, "webpush": …}`). `token`, when given, replaces the
    /// object's own; non-string `data` values are JSON-encoded. Checked by ``validate()``.
    public init(raw: JSONValue, token: String? = nil) throws(FCMError) {
        guard var object = raw.objectValue else { throw FCMError(.invalidMessage, "a raw FCM message must be a JSON object", field: "message") }
        if let token { object["token"] = .string(token) }
        guard let target = object["token"]?.stringValue else {
            throw FCMError(.invalidMessage, "a raw FCM message needs a string token (Herald sends to registration tokens)", field: "message.token")
        }
        if let data = object["data"]?.objectValue {
            object["data"] = .object(data.mapValues { .string(Self.dataString($0)) })
        }
        self.init(token: target)
        self.raw = object
    }

    /// Sets a data value: a string as it is, anything else as its JSON text (FCM takes strings
    /// only). On a raw message, in its `data` object (made when it has none); a raw message whose
    /// `data` is not an object is left as it is.
    public mutating func setData(_ value: JSONValue, forKey key: String) {
        guard var object = raw else {
            data[key] = Self.dataString(value)
            return
        }
        var data: [String: JSONValue] = [:]
        switch object["data"] {
        case nil, .null?: break
        case .object(let members)?: data = members
        default: return
        }
        data[key] = .string(Self.dataString(value))
        object["data"] = .object(data)
        raw = object
    }

    static func dataString(_ value: JSONValue) -> String {
        value.stringValue ?? value.jsonString
    }

    /// The `Message` object sent.
    public var jsonObject: JSONValue {
        if let raw { return .object(raw.merging(["token": .string(token)]) { _, new in new }) }
        var message: [String: JSONValue] = ["token": .string(token)]
        if let notification {
            message["notification"] = Self.object([("title", notification.title), ("body", notification.body), ("image", notification.image)])
        }
        if !data.isEmpty { message["data"] = .object(data.mapValues { .string($0) }) }
        if let android {
            var object: [String: JSONValue] = [:]
            if let priority = android.priority { object["priority"] = .string(priority.rawValue) }
            if let ttl = android.timeToLive { object["ttl"] = .string(Self.durationString(ttl)) }
            if let collapseKey = android.collapseKey { object["collapse_key"] = .string(collapseKey) }
            if let notification = android.notification { object["notification"] = Self.object(notification.members) }
            message["android"] = .object(object)
        }
        return .object(message)
    }

    /// The request body, `{"message": …}`, after ``validate()``.
    public func requestBody() throws(FCMError) -> [UInt8] {
        let object = jsonObject
        try Self.validate(object)
        var writer = JSONWriter(capacity: 512)
        writer.beginObject()
        writer.key("message")
        writer.value(object)
        writer.endObject()
        return writer.bytes
    }

    /// Refuses what FCM would refuse, naming the field (see ``validate(_:)``).
    public func validate() throws(FCMError) {
        try Self.validate(jsonObject)
    }

    private static func object(_ members: [(String, String?)]) -> JSONValue {
        .object(Dictionary(uniqueKeysWithValues: members.compactMap { key, value in value.map { (key, JSONValue.string($0)) } }))
    }

    /// FCM's duration string: whole seconds and up to nine fractional digits, `"3.5s"`, `"60s"`.
    public static func durationString(_ duration: Duration) -> String {
        // Written so validation refuses it (a negative TTL), never silently as another value.
        if duration < .zero { return "-" + durationString(.zero - duration) }
        let (seconds, attoseconds) = duration.components
        let nanoseconds = attoseconds / 1_000_000_000
        guard nanoseconds != 0 else { return "\(seconds)s" }
        var fraction = String(nanoseconds)
        fraction = String(repeating: "0", count: 9 - fraction.count) + fraction
        while fraction.hasSuffix("0") { fraction.removeLast() }
        return "\(seconds).\(fraction)s"
    }
}

/// One message's request body for many tokens: written once with a stand-in token, then, for
/// each token, the bytes before it, the token and the bytes after it. `nil` when the message is
/// not valid or the stand-in is not found exactly once (each body is then written on its own).
struct FCMBodyTemplate {
    /// The body in pieces: the token goes between the first two, the varying data value (when
    /// there is one) between the other two, in the order the body has them.
    private let pieces: [[UInt8]]
    /// Whether the data value comes before the token in the body.
    private let valueFirst: Bool

    /// A token no registration token shares a body with: FCM's alphabet, checked like any token.
    static let standIn = "HERALD-TOKEN:0f8b6c1e9d2a47b3a5c4e6f7a8b9c0d1"
    /// A data value no caller's shares a body with, as long as the longest value a template
    /// takes (64 bytes): a message that fits with it fits with any.
    static let valueStandIn = "HERALD-VALUE:5b2e7d9c1a3f48e6b0d4c8a2f6e1b9d3a7c5e0f2b4d6a8c1e3f"

    /// The template of `message`; with `key`, its data has an entry `key` whose value each body
    /// gives (``body(for:value:)``). `nil` when the message cannot be made so (it is invalid,
    /// or raw with a `data` that is not an object).
    init?(_ message: FCMMessage, varying key: String? = nil) {
        var standing = message
        standing.token = Self.standIn
        if let key {
            if let data = message.raw?["data"], data.objectValue == nil, data != .null { return nil }
            standing.setData(.string(Self.valueStandIn), forKey: key)
        }
        guard let body = try? standing.requestBody() else { return nil }
        func find(_ needle: [UInt8], _ text: String) -> Int? {
            var found: Int?
            var start = 0
            while let range = body[start...].firstRange(of: needle) {
                guard found == nil else { return nil }
                found = range.lowerBound
                start = range.upperBound
            }
            return found.map { $0 + needle.count - text.utf8.count - 1 }
        }
        guard let tokenAt = find(Array("\"token\":\"\(Self.standIn)\"".utf8), Self.standIn) else { return nil }
        var cuts = [(tokenAt, Self.standIn.utf8.count)]
        if let key {
            var escaped = JSONWriter(capacity: key.utf8.count + 8)
            escaped.string(key)
            guard let valueAt = find(escaped.bytes + Array(":\"\(Self.valueStandIn)\"".utf8), Self.valueStandIn) else { return nil }
            cuts.append((valueAt, Self.valueStandIn.utf8.count))
        }
        valueFirst = cuts.count == 2 && cuts[1].0 < cuts[0].0
        cuts.sort { $0.0 < $1.0 }
        var pieces: [[UInt8]] = []
        var from = 0
        for (at, length) in cuts {
            pieces.append(Array(body[from..<at]))
            from = at + length
        }
        pieces.append(Array(body[from...]))
        self.pieces = pieces
    }

    /// The body for `token`, which must pass ``FCMRegistrationToken/isValid(_:)``, and the
    /// varying data value (which must need no JSON escaping) when the template has one.
    func body(for token: String, value: String = "") -> [UInt8] {
        var body = [UInt8]()
        body.reserveCapacity(pieces.reduce(0) { $0 + $1.count } + token.utf8.count + value.utf8.count)
        body += pieces[0]
        if pieces.count == 2 {
            body += token.utf8
        } else {
            body += valueFirst ? value.utf8 : token.utf8
            body += pieces[1]
            body += valueFirst ? token.utf8 : value.utf8
        }
        body += pieces[pieces.count - 1]
        return body
    }
}

