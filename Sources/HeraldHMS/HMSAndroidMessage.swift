import HeraldCore

/// One message of Push Kit's Android API (v1, `POST /v1/{clientid}/messages:send`) to up to
/// 1,000 push tokens: a notification the system shows, `data` the app receives, Android delivery
/// options, or a raw `message` object for anything else the API takes.
///
/// ``validate()`` refuses what Push Kit would; the client validates before sending.
public struct HMSAndroidMessage: Sendable, Hashable {
    /// `message.token`: the push tokens it is sent to, 1 to 1,000, none twice.
    public var tokens: [String]
    /// `message.notification`: title and body, both required by Push Kit.
    public var notification: Notification?
    /// `message.data`: the app's payload, one string (often JSON text).
    public var data: String?
    /// `message.android`: urgency, TTL, collapse key, category, Android notification options.
    public var android: Android?
    /// `validate_only`: Push Kit checks the message and sends nothing.
    public var validateOnly = false
    /// A `message` object given whole (``init(raw:tokens:)``): sent as is, with `token` set; the
    /// typed fields above are then ignored.
    public private(set) var raw: [String: JSONValue]?

    /// `notification` (`Notification`).
    public struct Notification: Sendable, Hashable {
        public var title: String
        public var body: String
        /// An `https` URL of an image.
        public var image: String?

        public init(title: String, body: String, image: String? = nil) {
            self.title = title
            self.body = body
            self.image = image
        }
    }

    /// `android` (`AndroidConfig`).
    public struct Android: Sendable, Hashable {
        /// `urgency` of a data message: `HIGH` (needs Huawei's permission) or `NORMAL`.
        public enum Urgency: String, Sendable, Hashable, CaseIterable {
            case high = "HIGH"
            case normal = "NORMAL"
        }

        public var urgency: Urgency?
        /// `ttl`: how long Push Kit keeps the message for an offline device, 0 to 15 days;
        /// sent as whole seconds (`"86400s"`). Absent: Push Kit's default, a day.
        public var timeToLive: Duration?
        /// `collapse_key`: -1 (keep every offline message, the default), 0 (the latest only) or
        /// 1 to 100 (the latest of each group).
        public var collapseKey: Int?
        /// `category`: the message's class once Huawei granted self-classification (`IM`, `VOIP`, …).
        public var category: String?
        /// `bi_tag`: a batch tag Push Kit returns in its receipts.
        public var biTag: String?
        /// `notification` (`AndroidNotification`).
        public var notification: AndroidNotification?

        public init(
            urgency: Urgency? = nil, timeToLive: Duration? = nil, collapseKey: Int? = nil, category: String? = nil, biTag: String? = nil,
            notification: AndroidNotification? = nil
        ) {
            self.urgency = urgency
            self.timeToLive = timeToLive
            self.collapseKey = collapseKey
            self.category = category
            self.biTag = biTag
            self.notification = notification
        }
    }

    /// `android.notification.click_action` (`ClickAction`): what a tap does. Push Kit requires
    /// one on every Android notification.
    public enum ClickAction: Sendable, Hashable {
        /// Type 1: open a page of the app, by intent URI or action.
        case openPage(intent: String?, action: String?)
        /// Type 2: open an `https` URL.
        case openURL(String)
        /// Type 3: open the app.
        case openApp

        var jsonObject: JSONValue {
            switch self {
            case .openPage(let intent, let action):
                var object: [String: JSONValue] = ["type": .int(1)]
                if let intent { object["intent"] = .string(intent) }
                if let action { object["action"] = .string(action) }
                return .object(object)
            case .openURL(let url): return .object(["type": .int(2), "url": .string(url)])
            case .openApp: return .object(["type": .int(3)])
            }
        }
    }

    /// `android.notification` (`AndroidNotification`): fields written with Push Kit's names.
    public struct AndroidNotification: Sendable, Hashable {
        public var title: String?
        public var body: String?
        public var clickAction: ClickAction
        public var icon: String?
        /// `#RRGGBB`.
        public var color: String?
        public var sound: String?
        /// Replaces a shown notification with the same tag.
        public var tag: String?
        /// The Android notification channel.
        public var channelID: String?
        public var image: String?

        public init(
            title: String? = nil, body: String? = nil, clickAction: ClickAction = .openApp, icon: String? = nil, color: String? = nil, sound: String? = nil,
            tag: String? = nil, channelID: String? = nil, image: String? = nil
        ) {
            (self.title, self.body, self.clickAction, self.icon, self.color) = (title, body, clickAction, icon, color)
            (self.sound, self.tag, self.channelID, self.image) = (sound, tag, channelID, image)
        }

        var jsonObject: JSONValue {
            var object: [String: JSONValue] = ["click_action": clickAction.jsonObject]
            for (key, value) in [
                ("title", title), ("body", body), ("icon", icon), ("color", color), ("sound", sound), ("tag", tag), ("channel_id", channelID), ("image", image),
            ] {
                if let value { object[key] = .string(value) }
            }
            return .object(object)
        }
    }

    /// A message built from typed fields. A notification without Android options gets
    /// `android.notification.click_action` "open the app", which Push Kit requires.
    public init(tokens: [String], notification: Notification? = nil, data: String? = nil, android: Android? = nil) {
        self.tokens = tokens
        self.notification = notification
        self.data = data
        self.android = android
    }

    /// A `message` object given whole, as Push Kit's JSON. `tokens` replace the object's own
    /// `token`. Checked by ``validate()``.
    public init(raw: JSONValue, tokens: [String]) throws(HMSError) {
        guard let object = raw.objectValue else { throw HMSError(.invalidMessage, "a raw Push Kit message must be a JSON object", field: "message") }
        self.init(tokens: tokens)
        self.raw = object
    }

    /// The `message` object sent, tokens included.
    public var jsonObject: JSONValue {
        .object(contentObject.merging(["token": .array(tokens.map { .string($0) })]) { _, new in new })
    }

    /// The `message` object without its tokens: what Push Kit's 4,096-byte limit counts.
    var contentObject: [String: JSONValue] {
        if var raw {
            raw["token"] = nil
            return raw
        }
        var message: [String: JSONValue] = [:]
        if let notification {
            var object: [String: JSONValue] = ["title": .string(notification.title), "body": .string(notification.body)]
            if let image = notification.image { object["image"] = .string(image) }
            message["notification"] = .object(object)
        }
        if let data { message["data"] = .string(data) }
        var android: [String: JSONValue] = [:]
        if let config = self.android {
            if let urgency = config.urgency { android["urgency"] = .string(urgency.rawValue) }
            if let ttl = config.timeToLive { android["ttl"] = .string(Self.durationString(ttl)) }
            if let collapseKey = config.collapseKey { android["collapse_key"] = .int(collapseKey) }
            if let category = config.category { android["category"] = .string(category) }
            if let biTag = config.biTag { android["bi_tag"] = .string(biTag) }
            if let notification = config.notification { android["notification"] = notification.jsonObject }
        }
        // Push Kit: "如果是Android通知栏消息，本字段必填" (android is mandatory for a notification),
        // and click_action is mandatory in it.
        if notification != nil, android["notification"] == nil { android["notification"] = AndroidNotification().jsonObject }
        if !android.isEmpty { message["android"] = .object(android) }
        return message
    }

    /// The request body, `{"validate_only": false, "message": {…}}`, after ``validate()``.
    public func requestBody() throws(HMSError) -> [UInt8] {
        let object = jsonObject
        try Self.validate(object)
        var writer = JSONWriter(capacity: 512)
        writer.beginObject()
        writer.key("validate_only")
        writer.bool(validateOnly)
        writer.key("message")
        writer.value(object)
        writer.endObject()
        return writer.bytes
    }

    /// Refuses what Push Kit would refuse, naming the field (see ``validate(_:)``).
    public func validate() throws(HMSError) {
        try Self.validate(jsonObject)
    }

    /// Push Kit's TTL string: whole seconds, `"86400s"` (a fraction is dropped; a negative TTL is
    /// written as such, for validation to refuse).
    public static func durationString(_ duration: Duration) -> String {
        "\(duration.components.seconds)s"
    }
}
