/// Why a delivery to one device was rejected, retried or failed: an APNs reason (apns-spec §1.7),
/// or one of the gateway's own, with ``other(_:)`` for a string this version of Herald does not know.
///
/// Its identity is its stable string (``description``): what the store keeps beside a delivery and
/// the API returns. ``init(_:)`` parses any string back without losing it, so two reasons are equal
/// exactly when their strings are, however they were made (`.other("Unregistered")` equals
/// `.apns(.unregistered)`). A string literal is a reason too: `.retry(reason: "ServiceUnavailable")`.
public enum DeliveryReason: Sendable, Hashable, CustomStringConvertible, LosslessStringConvertible, ExpressibleByStringLiteral {
    /// APNs's reason, as APNs sent it (or as Herald's local validation refused the notification).
    case apns(APNSReason)
    /// A reason the gateway gives itself.
    case gateway(Gateway)
    /// A browser's push service's answer (RFC 8030), or the gateway's reason about a browser.
    case webPush(WebPush)
    /// FCM's answer (its `ErrorCode`), or the gateway's reason about an Android device.
    case fcm(FCM)
    /// Huawei Push Kit's answer (its result codes), or the gateway's reason about a Huawei device.
    case hms(HMS)
    /// The notification's deadline came while a device was still being retried: `Expired (last: …)`,
    /// with the reason of its last retry.
    indirect case expiredRetrying(last: DeliveryReason)
    /// Stored work this Herald cannot send (written by hand, or damaged): `Quarantined: …`, with
    /// what is wrong with it.
    case quarantined(String)
    /// A string that is none of the above (written by a newer Herald, or by hand), kept as it is.
    case other(String)

    /// The gateway's own reasons, each a fixed string. Adding one here gives it a metrics label of
    /// its own (``code``), so nothing else needs to be told.
    public enum Gateway: String, Sendable, Hashable, CaseIterable {
        /// The notification's app is not served by this gateway process (its configuration changed):
        /// retried, so a process that serves it, or this one restarted with it, sends it.
        case unknownApp = "UnknownApp"
        /// The stored payload is not a JSON object: it can never be sent.
        case payloadInvalid = "PayloadInvalid"
        /// The notification's apns-expiration passed before the client could deliver it.
        case expired = "Expired"
        /// The notification was cancelled before this device was sent to.
        case cancelled = "Cancelled"
        /// The device is registered as another kind of token than the notification's push type
        /// goes to (a VoIP push to an alert token): refused at once, never sent.
        case tokenKindMismatch = "TokenKindMismatch"
        /// A Live Activity start named a push-to-start token registered for another attributes
        /// type: refused at once, never sent.
        case activityTypeMismatch = "ActivityTypeMismatch"
        /// The notification's template could not be rendered for this device (a variable its
        /// user's data lacks, a click URL that is not https): never sent.
        case templateFailed = "TemplateFailed"
        /// The store could not screen the device's batch for its notification's category or
        /// digest (the database did not answer): retried.
        case storeUnavailable = "StoreUnavailable"
        /// Sending stopped before APNs answered: the client was shut down, or the worker's grace
        /// period ran out while the process stopped. Retried.
        case shutdown = "shutdown"
        // The APNs client gave up without an answer from APNs: HeraldAPNS's `APNSClientError`
        // codes, by name.
        /// No connection could be made.
        case connectionFailed
        /// TLS failed: the server is not trusted, or does not speak HTTP/2.
        case tlsFailed
        /// The connection was lost before an answer, every time.
        case connectionLost
        /// No answer within the request timeout, every time.
        case timedOut
        /// The client's own expiry check (the gateway records ``expired`` instead).
        case clientExpired = "expired"
        /// The credentials cannot be used for this notification.
        case invalidCredentials
        /// The client's configuration is out of range.
        case invalidConfiguration
        /// The server answered something that is not an APNs response.
        case protocolError
        /// A device is an APNs token, but its app has no APNs credentials configured (any more):
        /// it reaches browsers only.
        case apnsNotConfigured = "APNsNotConfigured"
        /// A device is an APNs token of an environment its app has no credential for: the app
        /// names credentials per environment (`credentialsByEnvironment`) and not this one.
        case apnsEnvironmentNotConfigured = "APNsEnvironmentNotConfigured"
        /// The device was not registered again for longer than its app keeps a silent device of
        /// its platform (`staleDeviceDays`; 270 days for FCM, whose tokens stop working after
        /// 270 days inactive): retired by the gateway's housekeeping, not by a push service.
        case stale = "Stale"
        /// The device's push service (its host, for its app) kept failing (5xx, no answer,
        /// connections lost), so the gateway backs it off: the device was not sent, and is retried
        /// when the host is next tried (docs/gateway.md, "Isolation").
        case hostBackedOff = "HostBackedOff"
    }

    /// Web Push's reasons (browsers; docs/webpush.md). Its answers that APNs gives too (429,
    /// 500, 503, 413) keep the strings the store has always kept for them: the same as APNs's.
    public enum WebPush: String, Sendable, Hashable, CaseIterable {
        /// The push service said the browser's subscription is gone (404 or 410, RFC 8030 §7.3):
        /// the device is retired unless it registered again since.
        case subscriptionGone = "SubscriptionGone"
        /// The message is larger than the push service takes (413, RFC 8030 §7.2): final.
        case payloadTooLarge = "PayloadTooLarge"
        /// The push service is limiting this sender (429, RFC 8030 §8.4): retried, after its
        /// `Retry-After` when it gave one.
        case tooManyRequests = "TooManyRequests"
        /// The push service failed (500): retried.
        case internalServerError = "InternalServerError"
        /// The push service is unavailable (502, 503, 504): retried.
        case serviceUnavailable = "ServiceUnavailable"
        /// A device is a browser's subscription, but its app has no `webPush` configured (any
        /// more): it cannot be sent to.
        case notConfigured = "WebPushNotConfigured"
        /// The browser's endpoint is not a push service the app may send to (not a known one nor
        /// in `webPush.allowedHosts`, or a private network's address): not sent, the device kept
        /// (the app's configuration may allow it later).
        case endpointNotAllowed = "EndpointNotAllowed"
        /// The push type reaches no browser (`background`: Web Push has no silent messages).
        case notForBrowsers = "NotForBrowsers"
        /// The push service refused the VAPID token (a wrong key, `aud`, `exp` or `sub`; Apple's
        /// `BadJwtToken`, or 401): the gateway's configuration, so retried.
        case badJwtToken = "BadJwtToken"
        /// Apple's Web Push service refused the `Topic` header.
        case badWebPushTopic = "BadWebPushTopic"
        /// The subscription is bound to another VAPID key than the one that signed (RFC 8292 §4).
        case vapidPkHashMismatch = "VapidPkHashMismatch"

        /// A gone subscription retires its device, as of the answer (RFC 8030 §7.3).
        public var deviceFate: DeviceFate? { self == .subscriptionGone ? .unregistered : nil }
    }

    /// FCM's reasons (Android devices; docs/fcm.md), after FCM's `ErrorCode`s
    /// (https://firebase.google.com/docs/reference/fcm/rest/v1/ErrorCode). Those APNs gives too
    /// (quota, internal, unavailable) keep the strings the store has always kept: APNs's.
    public enum FCM: String, Sendable, Hashable, CaseIterable {
        /// FCM said the registration token is gone (`UNREGISTERED`): the device is retired
        /// unless it registered again since the answer.
        case unregistered = "FCMUnregistered"
        /// FCM said the registration token is malformed (`INVALID_ARGUMENT` about the token): the
        /// device is marked invalid.
        case invalidToken = "FCMInvalidToken"
        /// The registration token belongs to another Firebase project (`SENDER_ID_MISMATCH`):
        /// the device is marked invalid.
        case senderIdMismatch = "FCMSenderIdMismatch"
        /// FCM refused the message itself (`INVALID_ARGUMENT` naming its fields).
        case invalidMessage = "FCMInvalidMessage"
        /// FCM's own APNs or web credentials were refused (`THIRD_PARTY_AUTH_ERROR`): final.
        case thirdPartyAuthError = "FCMThirdPartyAuthError"
        /// FCM or its token endpoint refused the gateway's service account or project (401, 403,
        /// 404): the gateway's configuration, so retried until the notification expires.
        case senderRefused = "FCMSenderRefused"
        /// The project's or the device's sending quota is spent (`QUOTA_EXCEEDED`, 429): retried.
        case quotaExceeded = "TooManyRequests"
        /// FCM failed (`INTERNAL`, 500): retried.
        case internalError = "InternalServerError"
        /// FCM is overloaded (`UNAVAILABLE`, 503): retried.
        case unavailable = "ServiceUnavailable"
        /// A device is an Android device, but its app has no `fcm` configured (any more).
        case notConfigured = "FCMNotConfigured"

        /// `UNREGISTERED` retires the device as of the answer; a malformed or foreign token marks
        /// it invalid at once.
        public var deviceFate: DeviceFate? {
            switch self {
            case .unregistered: .unregistered
            case .invalidToken, .senderIdMismatch: .invalid
            default: nil
            }
        }
    }

    /// Huawei Push Kit's reasons (Huawei devices, Android and HarmonyOS NEXT; docs/hms.md), after
    /// Push Kit's result codes. Those APNs gives too (traffic control, internal, unavailable) keep
    /// the strings the store has always kept: APNs's.
    public enum HMS: String, Sendable, Hashable, CaseIterable {
        /// Push Kit named the token as failed and bad in itself (80100000 or 80300007: the Android
        /// API's `illegal_tokens`, HarmonyOS's `tokenFormatError` or `noRight`): the device is
        /// retired unless it registered again since the answer. Push Kit does not tell an
        /// uninstalled app's token from a malformed one.
        case invalidToken = "HMSInvalidToken"
        /// Push Kit named the token as failed for a reason about the sender or the message, not
        /// the token (HarmonyOS's `noPushTypeRight`, `countryNotSupport`, …): final, the device kept.
        case notSent = "HMSNotSent"
        /// Push Kit refused the message itself (80100001, 80100003, 80100013, 80100016, 80300008,
        /// …): final, the device kept.
        case invalidMessage = "HMSInvalidMessage"
        /// Push Kit or its OAuth endpoint refused the gateway's credentials or app (80200001,
        /// 80200003, 80300002, 80600003, a 1101 from the token endpoint, 404): the gateway's
        /// configuration, so retried until the notification expires.
        case senderRefused = "HMSSenderRefused"
        /// Push Kit's traffic control (503, or 429): retried.
        case rateLimited = "TooManyRequests"
        /// Push Kit failed (500, 81000001): retried.
        case internalError = "InternalServerError"
        /// Push Kit is unavailable (another 5xx): retried.
        case unavailable = "ServiceUnavailable"
        /// An answer Push Kit does not document: final, the device kept.
        case rejected = "HMSRejected"
        /// A device is a Huawei device, but its app has no `hms` configured (any more), or none
        /// for its API (app credentials for Android, a service account for HarmonyOS NEXT).
        case notConfigured = "HMSNotConfigured"

        /// An invalid token retires the device as of the answer.
        public var deviceFate: DeviceFate? { self == .invalidToken ? .unregistered : nil }
    }

    /// What a rejection does to its device, each platform's reasons saying which of theirs do.
    public enum DeviceFate: Sendable, Hashable {
        /// Retired as of the push service's answer, unless it registered again since.
        case unregistered
        /// Marked invalid at once: its token or address can never be sent to.
        case invalid
    }

    /// What a rejection with this reason does to its device; `nil`: nothing (the device stays).
    public var deviceFate: DeviceFate? {
        // Parsed: a reason made from its string alone is the same reason.
        switch Self(description) {
        case .apns(let reason): reason.deviceFate
        case .webPush(let reason): reason.deviceFate
        case .fcm(let reason): reason.deviceFate
        case .hms(let reason): reason.deviceFate
        case .gateway(let reason): reason == .stale ? .unregistered : nil
        case .expiredRetrying, .quarantined, .other: nil
        }
    }

    /// Every reason with a fixed string, each string once: APNs's known reasons, the gateway's,
    /// then Web Push's, FCM's and Push Kit's that are not one of those. Each is its own ``code``.
    public static let allKnown: [DeliveryReason] = {
        var seen = Set<String>()
        let all = APNSReason.allKnown.map(apns) + Gateway.allCases.map(gateway) + WebPush.allCases.map(webPush) + FCM.allCases.map(fcm) + HMS.allCases.map(hms)
        return all.filter { seen.insert($0.description).inserted }
    }()

    /// The reason a string stands for; never fails, and gives back exactly `text` as ``description``.
    public init(_ text: String) {
        // `Expired (last: …)` is unwrapped in a loop, a few levels deep at most: a string made to
        // nest deeper stays `other` inside, as it was, instead of recursing without bound.
        var inner = Substring(text)
        var depth = 0
        while depth < Self.maximumNesting, inner.hasPrefix(Self.expiredPrefix), inner.hasSuffix(")") {
            inner = inner.dropFirst(Self.expiredPrefix.count).dropLast()
            depth += 1
        }
        var reason: DeliveryReason
        if let fixed = Self.fixed[String(inner)] {
            reason = fixed
        } else if inner.hasPrefix(Self.quarantinedPrefix) {
            reason = .quarantined(String(inner.dropFirst(Self.quarantinedPrefix.count)))
        } else {
            reason = .other(String(inner))
        }
        for _ in 0..<depth { reason = .expiredRetrying(last: reason) }
        self = reason
    }

    public init(stringLiteral value: String) {
        self.init(value)
    }

    /// The stable string: what the store keeps and the API returns.
    public var description: String {
        switch self {
        case .apns(let reason): reason.rawValue
        case .gateway(let reason): reason.rawValue
        case .webPush(let reason): reason.rawValue
        case .fcm(let reason): reason.rawValue
        case .hms(let reason): reason.rawValue
        case .expiredRetrying(let last): Self.expiredPrefix + last.description + ")"
        case .quarantined(let what): Self.quarantinedPrefix + what
        case .other(let text): text
        }
    }

    /// The reason without its details, from a bounded set, for metrics labels: a known reason's
    /// string, `Expired` for ``expiredRetrying(last:)``, `Quarantined` for ``quarantined(_:)``,
    /// and `other` for a reason Herald does not know.
    public var code: String {
        switch Self(description) {
        case .apns(.unknown), .other: "other"
        case .apns(let reason): reason.rawValue
        case .gateway(let reason): reason.rawValue
        case .webPush(let reason): reason.rawValue
        case .fcm(let reason): reason.rawValue
        case .hms(let reason): reason.rawValue
        case .expiredRetrying: Gateway.expired.rawValue
        case .quarantined: "Quarantined"
        }
    }

    /// APNs's reason, when this is one Herald knows (whichever way the value was made).
    public var apnsReason: APNSReason? {
        // Parsing gives `.apns` only for known reasons.
        if case .apns(let reason) = Self(description) { return reason }
        return nil
    }

    public static func == (lhs: DeliveryReason, rhs: DeliveryReason) -> Bool {
        lhs.description == rhs.description
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(description)
    }

    private static let expiredPrefix = "Expired (last: "
    private static let quarantinedPrefix = "Quarantined: "
    private static let maximumNesting = 4

    /// The reasons with a fixed string, by string. Only exact strings: APNs's alternative
    /// spellings (``APNSReason/init(rawValue:)``) stay ``other(_:)``, so every string round-trips.
    private static let fixed: [String: DeliveryReason] = Dictionary(
        allKnown.map { ($0.description, $0) }, uniquingKeysWith: { first, _ in first }
    )
}
