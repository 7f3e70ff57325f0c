import HeraldCore

extension FCMMessage {
    /// FCM's limit on a message's notification and data together (FCM's "Message types": "the
    /// maximum payload for both message types is 4096 bytes").
    public static let maximumPayloadCount = 4096
    /// The longest TTL FCM keeps a message for: 4 weeks.
    public static let maximumTimeToLiveSeconds = 28 * 86400
    /// Data keys FCM reserves; keys starting with ``reservedDataKeyPrefixes`` are reserved too.
    public static let reservedDataKeys: Set<String> = ["from", "notification", "message_type"]
    /// Prefixes of reserved data keys (compared without case).
    public static let reservedDataKeyPrefixes = ["google", "gcm"]

    /// The bytes counted against ``maximumPayloadCount``: every data key and value, and the
    /// notification's title, body and image, in UTF-8. (FCM does not publish how it counts; this
    /// is the message's content without JSON punctuation, so a message refused here is over the
    /// limit however it is counted.)
    public static func payloadCount(_ message: JSONValue) -> Int {
        var count = 0
        for (key, value) in message["data"]?.objectValue ?? [:] {
            count += key.utf8.count + (value.stringValue?.utf8.count ?? value.jsonString.utf8.count)
        }
        for field in ["title", "body", "image"] {
            count += message["notification"]?[field]?.stringValue?.utf8.count ?? 0
        }
        return count
    }

    /// Refuses a `Message` object FCM would refuse: no token or an invalid one, `data` that is
    /// not an object of string values or has a reserved key, notification and data over 4,096
    /// bytes, an `android.priority` other than `high`/`normal`, an `android.ttl` that is not a
    /// duration string of 0 to 28 days. The error names the field.
    public static func validate(_ message: JSONValue) throws(FCMError) {
        guard message.objectValue != nil else { throw FCMError(.invalidMessage, "an FCM message must be a JSON object", field: "message") }
        guard let token = message["token"]?.stringValue else {
            throw FCMError(.invalidMessage, "an FCM message needs a string token", field: "message.token")
        }
        do {
            try FCMRegistrationToken.check(token)
        } catch {
            throw FCMError(.invalidToken, "message.token: " + error.message, field: "message.token")
        }
        if let data = message["data"] {
            guard let members = data.objectValue else { throw FCMError(.invalidMessage, "message.data must be an object of strings", field: "message.data") }
            for (key, value) in members {
                if key.isEmpty { throw FCMError(.invalidMessage, "message.data has an empty key", field: "message.data") }
                if isReservedDataKey(key) {
                    throw FCMError(
                        .invalidMessage, "message.data key \"\(PeerText(key, limit: 64))\" is reserved by FCM (from, notification, message_type, google…, gcm…)",
                        field: "message.data")
                }
                guard value.stringValue != nil else {
                    throw FCMError(.invalidMessage, "message.data value of \"\(PeerText(key, limit: 64))\" must be a string", field: "message.data")
                }
            }
        }
        if let notification = message["notification"] {
            guard let members = notification.objectValue else {
                throw FCMError(.invalidMessage, "message.notification must be an object", field: "message.notification")
            }
            for (key, value) in members where value.stringValue == nil {
                throw FCMError(.invalidMessage, "message.notification.\(PeerText(key, limit: 64)) must be a string", field: "message.notification")
            }
        }
        let count = payloadCount(message)
        guard count <= maximumPayloadCount else {
            throw FCMError(
                .invalidMessage, "the message's notification and data are \(count) bytes; FCM takes at most \(maximumPayloadCount)", field: "message.data")
        }
        if let android = message["android"] { try validateAndroid(android) }
        if let label = message["fcm_options"]?["analytics_label"] {
            guard let text = label.stringValue, isAnalyticsLabel(text) else {
                throw FCMError(
                    .invalidMessage, "message.fcm_options.analytics_label must be 1 to 50 of A-Z a-z 0-9 - _ . ~ %", field: "message.fcm_options.analytics_label")
            }
        }
    }

    /// Whether `text` is a label FCM takes for its delivery analytics: `^[a-zA-Z0-9-_.~%]{1,50}$`
    /// (FcmOptions, https://firebase.google.com/docs/reference/fcm/rest/v1/projects.messages#fcmoptions).
    public static func isAnalyticsLabel(_ text: String) -> Bool {
        (1...50).contains(text.utf8.count)
            && text.utf8.allSatisfy { byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || [0x2D, 0x5F, 0x2E, 0x7E, 0x25].contains(byte)
            }
    }

    /// Whether FCM reserves `key` in `data`.
    public static func isReservedDataKey(_ key: String) -> Bool {
        let lowered = key.lowercased()
        return reservedDataKeys.contains(lowered) || reservedDataKeyPrefixes.contains(where: { lowered.hasPrefix($0) })
    }

    private static func validateAndroid(_ android: JSONValue) throws(FCMError) {
        guard android.objectValue != nil else { throw FCMError(.invalidMessage, "message.android must be an object", field: "message.android") }
        if let priority = android["priority"] {
            guard let text = priority.stringValue, Android.Priority(rawValue: text.lowercased()) != nil else {
                throw FCMError(.invalidMessage, "message.android.priority must be \"high\" or \"normal\"", field: "message.android.priority")
            }
        }
        if let ttl = android["ttl"] {
            guard let text = ttl.stringValue, let seconds = durationSeconds(text), seconds <= maximumTimeToLiveSeconds else {
                throw FCMError(
                    .invalidMessage, "message.android.ttl must be a duration string of 0 to \(maximumTimeToLiveSeconds) seconds, like \"3.5s\"",
                    field: "message.android.ttl")
            }
        }
        if let collapseKey = android["collapse_key"], collapseKey.stringValue == nil {
            throw FCMError(.invalidMessage, "message.android.collapse_key must be a string", field: "message.android.collapse_key")
        }
        if let notification = android["notification"], notification.objectValue == nil {
            throw FCMError(.invalidMessage, "message.android.notification must be an object", field: "message.android.notification")
        }
    }

    /// The whole seconds of a duration string (`"3.5s"` → 3): digits, an optional fraction of 1
    /// to 9 digits, then `s`; `nil` for anything else.
    static func durationSeconds(_ text: String) -> Int? {
        guard text.hasSuffix("s"), text.utf8.count <= 32 else { return nil }
        let number = text.dropLast()
        let parts = number.split(separator: ".", omittingEmptySubsequences: false)
        guard (1...2).contains(parts.count), let whole = parts.first, !whole.isEmpty, whole.count <= 18, whole.allSatisfy(\.isASCIIDigit) else { return nil }
        if parts.count == 2 {
            guard (1...9).contains(parts[1].count), parts[1].allSatisfy(\.isASCIIDigit) else { return nil }
        }
        return Int(whole)
    }
}

extension Character {
    fileprivate var isASCIIDigit: Bool { ("0"..."9").contains(self) }
}
