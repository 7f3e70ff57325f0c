/// Why FCM did not accept a message: its answer (status, `FcmError.errorCode` and message) or
/// what happened before one came. ``isTokenGone`` and ``isTokenInvalid`` say what to do with the
/// registration token; nothing else is about the token.
public struct FCMSendError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for the kind of failure, one per FCM error code and one per local failure.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// `UNREGISTERED` (404): the app instance is gone (uninstalled, token expired). Forget the token.
        public static let unregistered = Code(name: "unregistered")
        /// `INVALID_ARGUMENT` (400). With ``FCMSendError/isTokenInvalid`` the token is malformed
        /// (FCM's `FcmError` detail says so); otherwise a field of the message is (`BadRequest`).
        public static let invalidArgument = Code(name: "invalidArgument")
        /// `SENDER_ID_MISMATCH` (403): the token belongs to another Firebase project. The token
        /// cannot be sent to with this service account.
        public static let senderIDMismatch = Code(name: "senderIdMismatch")
        /// `THIRD_PARTY_AUTH_ERROR` (401): FCM's own APNs certificate or key, or web push
        /// credentials, are wrong in the Firebase console. Not retried, no token refresh.
        public static let thirdPartyAuthError = Code(name: "thirdPartyAuthError")
        /// 401 `UNAUTHENTICATED` again after a fresh access token: the service account cannot send.
        public static let unauthenticated = Code(name: "unauthenticated")
        /// 403 other than `SENDER_ID_MISMATCH` (`PERMISSION_DENIED`: the API is off for the
        /// project, or the account lacks the role).
        public static let permissionDenied = Code(name: "permissionDenied")
        /// 404 without `UNREGISTERED`: a wrong project or endpoint, not a gone token.
        public static let notFound = Code(name: "notFound")
        /// `QUOTA_EXCEEDED` (429), still, after the last attempt.
        public static let quotaExceeded = Code(name: "quotaExceeded")
        /// `UNAVAILABLE` (503) or another 5xx but 500, still, after the last attempt.
        public static let unavailable = Code(name: "unavailable")
        /// `INTERNAL` (500), still, after the last attempt.
        public static let `internal` = Code(name: "internal")
        /// Any other status.
        public static let rejected = Code(name: "rejected")
        /// The service account's token endpoint refused the assertion (`invalid_grant`: a revoked
        /// key, a clock far off) or answered what is not an access token.
        public static let tokenRefused = Code(name: "tokenRefused")
        /// No answer within the deadline, after the last attempt.
        public static let timedOut = Code(name: "timedOut")
        /// FCM or the token endpoint could not be reached (DNS, TCP, TLS), after the last attempt.
        public static let connectionFailed = Code(name: "connectionFailed")
        /// The certificate of FCM or of its token endpoint is not trusted (not issued by a CA the
        /// client trusts, expired, or not for its name). Not retried: a CA file or the system's
        /// trust store mends it.
        public static let untrusted = Code(name: "untrusted")
        /// Refused before sending: the message or token is invalid (``FCMError``).
        public static let invalidMessage = Code(name: "invalidMessage")
        /// The client was shut down.
        public static let shutdown = Code(name: "shutdown")
        public var description: String { name }
    }

    public var code: Code
    /// The HTTP status, when FCM answered.
    public var status: Int?
    /// `FcmError.errorCode` as FCM sent it (`UNREGISTERED`, …), or the Google error `status`
    /// (`UNAUTHENTICATED`, …) when there was no FCM detail; escaped and bounded.
    public var errorCode: String?
    /// FCM's message (escaped, at most 200 characters), or what went wrong before an answer.
    public var reason: String
    /// How many times the message was sent.
    public var attempts: Int
    /// A 400 about the token (FCM's `FcmError` says `INVALID_ARGUMENT` and no field of the
    /// message is named), or a `SENDER_ID_MISMATCH`: stop sending to it.
    public var isTokenInvalid: Bool
    /// How long FCM asked to be left before the next try (its `Retry-After` on a 429 or 5xx,
    /// cut to the retry policy's ceiling); `nil` when it did not say.
    public var retryAfter: Duration?

    public init(
        _ code: Code, status: Int? = nil, errorCode: String? = nil, reason: String, attempts: Int = 1, isTokenInvalid: Bool = false,
        retryAfter: Duration? = nil
    ) {
        self.code = code
        self.status = status
        self.errorCode = errorCode
        self.reason = reason
        self.attempts = attempts
        self.isTokenInvalid = isTokenInvalid
        self.retryAfter = retryAfter
    }

    /// `UNREGISTERED`: the token is gone; forget it.
    public var isTokenGone: Bool { code == .unregistered }

    public var description: String {
        let answer = status.map { "\($0) " } ?? ""
        let fcm = errorCode.map { "\($0): " } ?? ""
        return "\(code): \(answer)\(fcm)\(reason)\(attempts > 1 ? " (after \(attempts) attempts)" : "")"
    }
}
