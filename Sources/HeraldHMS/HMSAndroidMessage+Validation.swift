import HeraldCore

// Every rule here is Push Kit's "下行消息" reference
// (https://developer.huawei.com/consumer/cn/doc/HMSCore-References/https-send-api-0000001050986197).
extension HMSAndroidMessage {
    /// Push Kit's limit on a message's body without its tokens: "消息体最大不能超过4096Bytes（不包括Token）".
    public static let maximumPayloadCount = 4096
    /// The longest TTL: "最大值为\"1296000s\"（15天）".
    public static let maximumTimeToLiveSeconds = 1_296_000

    /// The bytes counted against ``maximumPayloadCount``: the compact JSON of the `message`
    /// object without `token` (Huawei does not say how it counts; JSON punctuation included, so
    /// what is refused here is over however it is counted without it, within a few bytes).
    public static func payloadCount(_ message: JSONValue) -> Int {
        guard var object = message.objectValue else { return 0 }
        object["token"] = nil
        var writer = JSONWriter(capacity: 512)
        writer.value(.object(object))
        return writer.bytes.count
    }

    /// Refuses a `message` object Push Kit would refuse: tokens missing, over 1,000, repeated or
    /// malformed; a `topic` or `condition` (Herald sends to tokens); no content (`data`,
    /// `notification` or `android.notification`); a notification without title and body; `data`
    /// that is not a string; a payload over 4,096 bytes; an `android.urgency` other than
    /// `HIGH`/`NORMAL`; an `android.ttl` that is not 0 to 1,296,000 seconds; an
    /// `android.collapse_key` outside -1…100; an Android notification without a valid
    /// `click_action`. The error names the field.
    public static func validate(_ message: JSONValue) throws(HMSError) {
        guard message.objectValue != nil else { throw HMSError(.invalidMessage, "a Push Kit message must be a JSON object", field: "message") }
        guard case .array(let items)? = message["token"] else {
            throw HMSError(.invalidToken, "a Push Kit message needs a token array", field: "message.token")
        }
        var tokens: [String] = []
        for item in items.prefix(HMSPushToken.maximumPerRequest + 1) {
            guard let token = item.stringValue else { throw HMSError(.invalidToken, "message.token must hold strings", field: "message.token") }
            tokens.append(token)
        }
        try HMSPushToken.checkList(tokens, field: "message.token")
        // "token/topic/condition三者只能且必须设置一个".
        if message["topic"] != nil || message["condition"] != nil {
            throw HMSError(.invalidMessage, "a message to tokens cannot also have a topic or condition", field: "message.topic")
        }
        if let data = message["data"], data.stringValue == nil {
            throw HMSError(.invalidMessage, "message.data must be a string (JSON text for structured data)", field: "message.data")
        }
        if let notification = message["notification"] {
            guard notification.objectValue != nil, notification["title"]?.stringValue != nil, notification["body"]?.stringValue != nil else {
                throw HMSError(.invalidMessage, "message.notification needs string title and body", field: "message.notification")
            }
        }
        if let android = message["android"] { try validateAndroid(android, notification: message["notification"]) }
        // "message结构体中必须存在有效消息负载".
        guard message["data"] != nil || message["notification"] != nil || message["android"]?["notification"] != nil || message["android"]?["data"] != nil else {
            throw HMSError(.invalidMessage, "a Push Kit message needs data, a notification or android.notification", field: "message")
        }
        if message["notification"] != nil, message["android"]?["notification"] == nil {
            throw HMSError(
                .invalidMessage, "a notification needs android.notification with a click_action (Push Kit requires it)", field: "message.android.notification")
        }
        let count = payloadCount(message)
        guard count <= maximumPayloadCount else {
            throw HMSError(.invalidMessage, "the message is \(count) bytes without its tokens; Push Kit takes at most \(maximumPayloadCount)", field: "message")
        }
    }

    private static func validateAndroid(_ android: JSONValue, notification: JSONValue?) throws(HMSError) {
        guard android.objectValue != nil else { throw HMSError(.invalidMessage, "message.android must be an object", field: "message.android") }
        if let urgency = android["urgency"] {
            guard let text = urgency.stringValue, Android.Urgency(rawValue: text) != nil else {
                throw HMSError(.invalidMessage, "message.android.urgency must be \"HIGH\" or \"NORMAL\"", field: "message.android.urgency")
            }
        }
        if let ttl = android["ttl"] {
            guard let text = ttl.stringValue, let seconds = ttlSeconds(text), seconds <= maximumTimeToLiveSeconds else {
                throw HMSError(
                    .invalidMessage, "message.android.ttl must be 0 to \(maximumTimeToLiveSeconds) seconds, like \"86400s\"", field: "message.android.ttl")
            }
        }
        if let key = android["collapse_key"] {
            guard let value = key.intValue, (-1...100).contains(value) else {
                throw HMSError(.invalidMessage, "message.android.collapse_key must be an integer from -1 to 100", field: "message.android.collapse_key")
            }
        }
        if let data = android["data"], data.stringValue == nil {
            throw HMSError(.invalidMessage, "message.android.data must be a string", field: "message.android.data")
        }
        if let androidNotification = android["notification"] {
            guard androidNotification.objectValue != nil else {
                throw HMSError(.invalidMessage, "message.android.notification must be an object", field: "message.android.notification")
            }
            // "此处title和message.notification.title两者最少需要设置一个", likewise body.
            for field in ["title", "body"] where androidNotification[field]?.stringValue == nil && notification?[field]?.stringValue == nil {
                throw HMSError(
                    .invalidMessage, "a notification needs a \(field) in message.notification or message.android.notification",
                    field: "message.android.notification.\(field)")
            }
            try validateClickAction(androidNotification["click_action"])
        }
    }

    /// `click_action`: type 1 with an intent or action, type 2 with an `https` URL, or type 3.
    private static func validateClickAction(_ action: JSONValue?) throws(HMSError) {
        let field = "message.android.notification.click_action"
        guard let action, action.objectValue != nil, let type = action["type"]?.intValue else {
            throw HMSError(.invalidMessage, "\(field) is required: an object with type 1, 2 or 3", field: field)
        }
        switch type {
        case 1:
            guard action["intent"]?.stringValue != nil || action["action"]?.stringValue != nil else {
                throw HMSError(.invalidMessage, "\(field) of type 1 needs an intent or an action", field: field)
            }
        case 2:
            guard let url = action["url"]?.stringValue, url.lowercased().hasPrefix("https://") else {
                throw HMSError(.invalidMessage, "\(field) of type 2 needs an https url", field: field)
            }
        case 3:
            break
        default:
            throw HMSError(.invalidMessage, "\(field).type must be 1 (a page), 2 (a URL) or 3 (the app)", field: field)
        }
    }

    /// The whole seconds of a TTL string: digits, an optional fraction of 1 to 9 digits, an
    /// optional `s`/`S` (Push Kit's pattern `\d+|\d+[sS]|\d+.\d{1,9}|\d+.\d{1,9}[sS]`).
    static func ttlSeconds(_ text: String) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 32 else { return nil }
        var number = Substring(text)
        if number.hasSuffix("s") || number.hasSuffix("S") { number = number.dropLast() }
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = parts.first, !whole.isEmpty, whole.count <= 18, whole.utf8.allSatisfy(isDigit) else { return nil }
        if parts.count == 2 {
            guard (1...9).contains(parts[1].count), parts[1].utf8.allSatisfy(isDigit) else { return nil }
        }
        return Int(whole)
    }

    private static func isDigit(_ byte: UInt8) -> Bool { byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9") }
}
