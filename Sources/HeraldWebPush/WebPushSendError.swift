/// Why a push message was not accepted: the push service's answer (status and reason) or what
/// happened before one came. ``isSubscriptionGone`` says the subscription should be forgotten.
public struct WebPushSendError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for the kind of failure.
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// 404 or 410: the subscription expired or the user unsubscribed (RFC 8030 §7.3). Forget it.
        public static let subscriptionGone = Code(name: "subscriptionGone")
        /// 413: the encrypted body is over what the push service takes.
        public static let payloadTooLarge = Code(name: "payloadTooLarge")
        /// 400, 401 or 403 (and other 4xx): the push service refused the request; ``reason`` says
        /// why (Apple's `BadJwtToken`, `BadWebPushTopic`, …). Not retried.
        public static let rejected = Code(name: "rejected")
        /// 429, still, after the last attempt.
        public static let tooManyRequests = Code(name: "tooManyRequests")
        /// 5xx, still, after the last attempt.
        public static let serviceUnavailable = Code(name: "serviceUnavailable")
        /// No answer within the deadline, after the last attempt.
        public static let timedOut = Code(name: "timedOut")
        /// The push service could not be reached (DNS, TCP, TLS), after the last attempt.
        public static let connectionFailed = Code(name: "connectionFailed")
        /// The push service's certificate is not trusted (not issued by a CA the client trusts,
        /// expired, or not for its name). Not retried: a CA (`additionalTrustRoots`, `--ca-file`)
        /// or the system's trust store mends it.
        public static let untrusted = Code(name: "untrusted")
        /// The endpoint is not one the client's policy lets it send to (not a known push service
        /// nor an allowed host, or an address on a private network, also as its name resolved
        /// at connect); nothing was sent. ``reason`` names the host. Not retried.
        public static let endpointNotAllowed = Code(name: "endpointNotAllowed")
        /// The message or subscription could not be encrypted or signed for; not sent.
        public static let invalidRequest = Code(name: "invalidRequest")
        /// The client was shut down.
        public static let shutdown = Code(name: "shutdown")
        public var description: String { name }
    }

    public var code: Code
    /// The HTTP status, when the push service answered.
    public var status: Int?
    /// The push service's reason (`{"reason": …}` at Apple, the message at others), escaped and
    /// bounded; or what went wrong before an answer.
    public var reason: String
    /// How many times the message was sent.
    public var attempts: Int
    /// How long the push service asked to be left before the next try (its `Retry-After` on a
    /// 429 or 5xx, cut to the retry policy's ceiling); `nil` when it did not say.
    public var retryAfter: Duration?

    public init(_ code: Code, status: Int? = nil, reason: String, attempts: Int = 1, retryAfter: Duration? = nil) {
        self.code = code
        self.status = status
        self.reason = reason
        self.attempts = attempts
        self.retryAfter = retryAfter
    }

    /// The subscription is gone (404/410): stop sending to it.
    public var isSubscriptionGone: Bool { code == .subscriptionGone }

    public var description: String {
        let answer = status.map { "\($0) " } ?? ""
        return "\(code): \(answer)\(reason)\(attempts > 1 ? " (after \(attempts) attempts)" : "")"
    }
}
