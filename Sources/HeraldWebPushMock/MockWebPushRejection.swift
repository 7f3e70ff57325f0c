/// A status and `reason` the mock answers a push request with: `{"reason": "…"}`, as Apple's push
/// service does.
///
/// Apple's reasons and statuses are from its document "Sending web push notifications in web apps
/// and browsers" (developer.apple.com/documentation/usernotifications): `BadJwtToken` (403: the
/// JWT is missing, signed with the wrong key, its `sub` is not a URL or `mailto:`, its `aud` is
/// not the push service's origin, or its `exp` is more than a day ahead), `BadWebPushTopic` (400),
/// `PayloadTooLarge` (413), `TooManyRequests` (429). `VapidPkHashMismatch` (the `k` is not the
/// key the subscription was made with), `BadTtl` and `BadUrgency` are the strings Apple's service
/// is reported to answer, quoted from it in public reports. `Unregistered` (410),
/// `InternalServerError` and `ServiceUnavailable` are APNs's own (apns-spec §1). `NotFound`,
/// `BadContentEncoding` and `DecryptionFailed` are the mock's: a real push service cannot see the
/// plaintext, but a browser drops a message that does not decrypt, so the mock says so loudly.
struct MockWebPushRejection: Sendable, Hashable, Error {
    var status: Int
    var reason: String
    /// Extra answer headers (`Retry-After`).
    var retryAfterSeconds: Int?

    init(status: Int, reason: String, retryAfterSeconds: Int? = nil) {
        self.status = (100...599).contains(status) ? status : 500
        self.reason = reason
        self.retryAfterSeconds = retryAfterSeconds.map { max(0, $0) }
    }

    static let badJwtToken = Self(status: 403, reason: "BadJwtToken")
    static let vapidKeyMismatch = Self(status: 403, reason: "VapidPkHashMismatch")
    /// `TTL` missing or not a whole number ≥ 0 (RFC 8030 §5.2).
    static let badTTL = Self(status: 400, reason: "BadTtl")
    /// `Urgency` not one of RFC 8030 §5.3's four.
    static let badUrgency = Self(status: 400, reason: "BadUrgency")
    /// `Topic` over 32 characters or outside base64url (RFC 8030 §5.4).
    static let badTopic = Self(status: 400, reason: "BadWebPushTopic")
    /// `Content-Encoding` other than `aes128gcm` (RFC 8291 §4).
    static let badContentEncoding = Self(status: 400, reason: "BadContentEncoding")
    static let payloadTooLarge = Self(status: 413, reason: "PayloadTooLarge")
    static let notFound = Self(status: 404, reason: "NotFound")
    static let gone = Self(status: 410, reason: "Unregistered")
    static let decryptionFailed = Self(status: 400, reason: "DecryptionFailed")
    /// A body the mock could not read (the connection failed mid-request).
    static let badRequest = Self(status: 400, reason: "BadRequest")

    static func tooManyRequests(retryAfterSeconds: Int) -> Self {
        Self(status: 429, reason: "TooManyRequests", retryAfterSeconds: retryAfterSeconds)
    }

    static func serverError(status: Int) -> Self {
        Self(status: status, reason: status == 503 ? "ServiceUnavailable" : "InternalServerError")
    }
}
