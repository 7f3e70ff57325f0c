import HeraldCore

/// One message of Push Kit's scenario-specific API for HarmonyOS NEXT (v3,
/// `POST /v3/{projectId}/messages:send`, the only one HarmonyOS 5 and later take) to up to 1,000
/// push tokens: its `push-type`, its `payload` (whose shape the push type decides) and its
/// `pushOptions` (Push Kit's "请求体结构说明",
/// https://developer.huawei.com/consumer/en/doc/harmonyos-references/push-scenariozed-api-request-struct).
public struct HMSHarmonyMessage: Sendable, Hashable {
    /// The `push-type` header: which scenario the payload is for.
    public enum PushType: Int, Sendable, Hashable, CaseIterable {
        /// 0: a notification or a badge update (`AlertPayload`, `BadgePayload`).
        case alert = 0
        /// 1: a widget update.
        case widgetUpdate = 1
        /// 2: an extended notification (text-to-speech).
        case extensionNotification = 2
        /// 6: a background message.
        case background = 6
        /// 7: a live view update.
        case liveView = 7
        /// 10: an in-app call.
        case voipCall = 10
    }

    /// `pushOptions`.
    public struct Options: Sendable, Hashable {
        /// `testMessage`: a test message (at most 10 tokens, 1,000 a day per project).
        public var testMessage: Bool?
        /// `ttl`: seconds Push Kit keeps it for an offline device, 0 to 1,296,000 (default 86,400).
        public var timeToLiveSeconds: Int?
        /// `biTag`: a batch tag for receipts, at most 64 bytes.
        public var biTag: String?
        /// `receiptId`: the receipt configuration to use.
        public var receiptID: String?
        /// `collapseKey`: -1 (keep every offline message) or 0 to 100 (the latest of each group).
        public var collapseKey: Int?

        public init(testMessage: Bool? = nil, timeToLiveSeconds: Int? = nil, biTag: String? = nil, receiptID: String? = nil, collapseKey: Int? = nil) {
            (self.testMessage, self.timeToLiveSeconds, self.biTag, self.receiptID, self.collapseKey) = (testMessage, timeToLiveSeconds, biTag, receiptID, collapseKey)
        }

        var jsonObject: JSONValue {
            var object: [String: JSONValue] = [:]
            if let testMessage { object["testMessage"] = .bool(testMessage) }
            if let timeToLiveSeconds { object["ttl"] = .int(timeToLiveSeconds) }
            if let biTag { object["biTag"] = .string(biTag) }
            if let receiptID { object["receiptId"] = .string(receiptID) }
            if let collapseKey { object["collapseKey"] = .int(collapseKey) }
            return .object(object)
        }
    }

    public var pushType: PushType
    /// `target.token`: 1 to 1,000 push tokens, none twice.
    public var tokens: [String]
    /// `payload`: an object whose shape ``pushType`` decides (for ``PushType/alert``,
    /// `{"notification": {…}}` or `{"badge": {…}}`). Sent as given.
    public var payload: JSONValue
    public var options: Options?

    public init(pushType: PushType, tokens: [String], payload: JSONValue, options: Options? = nil) {
        self.pushType = pushType
        self.tokens = tokens
        self.payload = payload
        self.options = options
    }

    /// A notification (push type 0): `{"notification": {"category", "title", "body",
    /// "clickAction": {"actionType": 0}}}`, where action type 0 opens the app's home page.
    /// `category` is the notification's class (`MARKETING` by default, the one any app may use).
    public static func notification(
        tokens: [String], title: String, body: String, category: String = "MARKETING", options: Options? = nil
    ) -> HMSHarmonyMessage {
        let notification: JSONValue = .object([
            "category": .string(category), "title": .string(title), "body": .string(body), "clickAction": .object(["actionType": .int(0)]),
        ])
        return HMSHarmonyMessage(pushType: .alert, tokens: tokens, payload: .object(["notification": notification]), options: options)
    }

    /// The body sent: `{"payload": …, "target": {"token": […]}, "pushOptions": …}`.
    public var jsonObject: JSONValue {
        var object: [String: JSONValue] = ["payload": payload, "target": .object(["token": .array(tokens.map { .string($0) })])]
        if let options { object["pushOptions"] = options.jsonObject }
        return .object(object)
    }

    /// The request body, after ``validate()``.
    public func requestBody() throws(HMSError) -> [UInt8] {
        let object = jsonObject
        try Self.validate(object, pushType: pushType.rawValue)
        var writer = JSONWriter(capacity: 512)
        writer.value(object)
        return writer.bytes
    }

    /// Refuses what Push Kit would refuse (see ``validate(_:pushType:)``).
    public func validate() throws(HMSError) {
        try Self.validate(jsonObject, pushType: pushType.rawValue)
    }
}

extension HMSHarmonyMessage {
    /// The payload limit applied: 4,096 bytes of `payload` JSON. Huawei documents 4,096 bytes
    /// for the Android API's message; the v3 reference read names none (docs/hms.md).
    public static let maximumPayloadCount = 4096
    /// The longest `pushOptions.ttl`: 1,296,000 seconds (15 days).
    public static let maximumTimeToLiveSeconds = 1_296_000
    /// Tokens a test message carries at most ("每次推送携带Token数不超过10个").
    public static let maximumTestTokens = 10

    /// Refuses a v3 body Push Kit would refuse: a `push-type` that is not one of Push Kit's; no
    /// `payload` object (or, for push type 0, none with `notification` or `badge`); `target.token`
    /// missing, over 1,000 (10 for a test message), repeated or malformed; a payload over 4,096
    /// bytes; `pushOptions` with a TTL outside 0…1,296,000, a `biTag` over 64 bytes or a
    /// `collapseKey` outside -1…100. The error names the field.
    public static func validate(_ body: JSONValue, pushType: Int) throws(HMSError) {
        guard body.objectValue != nil else { throw HMSError(.invalidMessage, "a v3 body must be a JSON object", field: "body") }
        guard PushType(rawValue: pushType) != nil else {
            throw HMSError(.invalidMessage, "push-type \(pushType) is not one of 0, 1, 2, 6, 7, 10", field: "push-type")
        }
        guard let payload = body["payload"], payload.objectValue?.isEmpty == false else {
            throw HMSError(.invalidMessage, "payload must be a non-empty object", field: "payload")
        }
        if pushType == PushType.alert.rawValue, payload["notification"]?.objectValue == nil, payload["badge"]?.objectValue == nil {
            throw HMSError(.invalidMessage, "an alert (push-type 0) payload needs a notification or badge object", field: "payload.notification")
        }
        guard case .array(let items)? = body["target"]?["token"] else {
            throw HMSError(.invalidToken, "target.token must be an array of push tokens", field: "target.token")
        }
        var tokens: [String] = []
        for item in items.prefix(HMSPushToken.maximumPerRequest + 1) {
            guard let token = item.stringValue else { throw HMSError(.invalidToken, "target.token must hold strings", field: "target.token") }
            tokens.append(token)
        }
        try HMSPushToken.checkList(tokens, field: "target.token")
        if let options = body["pushOptions"] {
            guard options.objectValue != nil else { throw HMSError(.invalidMessage, "pushOptions must be an object", field: "pushOptions") }
            if let test = options["testMessage"] {
                guard case .bool(let isTest) = test else { throw HMSError(.invalidMessage, "pushOptions.testMessage must be a boolean", field: "pushOptions.testMessage") }
                if isTest, tokens.count > maximumTestTokens {
                    throw HMSError(.invalidToken, "a test message carries at most \(maximumTestTokens) tokens", field: "target.token")
                }
            }
            if let ttl = options["ttl"] {
                guard let seconds = ttl.intValue, (0...maximumTimeToLiveSeconds).contains(seconds) else {
                    throw HMSError(.invalidMessage, "pushOptions.ttl must be 0 to \(maximumTimeToLiveSeconds) seconds", field: "pushOptions.ttl")
                }
            }
            if let tag = options["biTag"] {
                guard let text = tag.stringValue, text.utf8.count <= 64 else {
                    throw HMSError(.invalidMessage, "pushOptions.biTag must be a string of at most 64 bytes", field: "pushOptions.biTag")
                }
            }
            if let key = options["collapseKey"] {
                guard let value = key.intValue, (-1...100).contains(value) else {
                    throw HMSError(.invalidMessage, "pushOptions.collapseKey must be an integer from -1 to 100", field: "pushOptions.collapseKey")
                }
            }
        }
        var writer = JSONWriter(capacity: 512)
        writer.value(payload)
        guard writer.bytes.count <= maximumPayloadCount else {
            throw HMSError(.invalidMessage, "the payload is \(writer.bytes.count) bytes; Herald sends at most \(maximumPayloadCount)", field: "payload")
        }
    }
}
