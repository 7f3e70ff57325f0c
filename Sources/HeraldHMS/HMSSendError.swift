/// Why Push Kit did not accept a message: its answer (HTTP status, result code and `msg`) or
/// what happened before one came. ``failedTokens`` and ``isTokenInvalid`` say what to do with
/// the tokens; nothing else is about them.
public struct HMSSendError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A stable code for the kind of failure, one per Push Kit result code Herald acts on and one
    /// per local failure (Push Kit's "下行消息" error table,
    /// https://developer.huawei.com/consumer/cn/doc/HMSCore-References/https-send-api-0000001050986197).
    public struct Code: Sendable, Hashable, CustomStringConvertible {
        let name: String
        /// 80100001: a request parameter is wrong (`msg` says which; an unsupported `push-type`).
        public static let invalidParameter = Code(name: "invalidParameter")
        /// 80100003: the message structure is wrong.
        public static let invalidMessage = Code(name: "invalidMessage")
        /// 80100004: the message's expiry is already past (its TTL).
        public static let expired = Code(name: "expired")
        /// 80100013: `collapse_key` is invalid.
        public static let invalidCollapseKey = Code(name: "invalidCollapseKey")
        /// 80100016: the message holds content Huawei deems sensitive.
        public static let sensitiveContent = Code(name: "sensitiveContent")
        /// 80100017: more than 100 topic tasks at once, still, after the last attempt.
        public static let tooManyTopicTasks = Code(name: "tooManyTopicTasks")
        /// 80100018: a third-party review's signature does not match the message.
        public static let reviewMismatch = Code(name: "reviewMismatch")
        /// 80200001, 80200003, 80200005 or a bare 401 again after a fresh bearer: the credentials
        /// cannot send (a token of another app, a JWT that does not parse).
        public static let unauthenticated = Code(name: "unauthenticated")
        /// 80300002: the app may not send (Push Kit not enabled for it, or not in this region).
        public static let noPermission = Code(name: "noPermission")
        /// 80300007: every token was invalid. ``HMSSendError/failedTokens`` names them.
        public static let allTokensInvalid = Code(name: "allTokensInvalid")
        /// 80300008: the message body (without tokens) is over 4,096 bytes.
        public static let messageTooBig = Code(name: "messageTooBig")
        /// 80300010: too many tokens in one request (or none: Huawei's wording is "不符合默认值").
        public static let tooManyTokens = Code(name: "tooManyTokens")
        /// 80300011: no permission to send high-priority notifications.
        public static let noHighPriorityPermission = Code(name: "noHighPriorityPermission")
        /// 80300013: the receipt address (`receipt_id`) is wrong.
        public static let invalidReceipt = Code(name: "invalidReceipt")
        /// 80600003: Push Kit's own OAuth check failed, again after a fresh bearer.
        public static let oauthFailed = Code(name: "oauthFailed")
        /// 429 or 503 (Push Kit's "流量控制"), still, after the last attempt.
        public static let rateLimited = Code(name: "rateLimited")
        /// 500 or 81000001, still, after the last attempt.
        public static let `internal` = Code(name: "internal")
        /// Another 5xx (502, 504), still, after the last attempt.
        public static let unavailable = Code(name: "unavailable")
        /// 404: a wrong client ID, project ID or endpoint. Not a gone token.
        public static let notFound = Code(name: "notFound")
        /// Any other answer: an undocumented result code or status (see ``HMSSendError/resultCode``).
        public static let rejected = Code(name: "rejected")
        /// The OAuth token endpoint refused the client credentials (error 1101: a wrong secret or
        /// client ID) or answered what is not an access token.
        public static let tokenRefused = Code(name: "tokenRefused")
        /// No answer within the deadline, after the last attempt.
        public static let timedOut = Code(name: "timedOut")
        /// Push Kit or the token endpoint could not be reached, after the last attempt.
        public static let connectionFailed = Code(name: "connectionFailed")
        /// The server's certificate is not trusted. Not retried.
        public static let untrusted = Code(name: "untrusted")
        /// Refused before sending: the message or a token is invalid (``HMSError``).
        public static let invalidRequest = Code(name: "invalidRequest")
        /// The client has no credentials for this API (app credentials for v1, a service account for v3).
        public static let notConfigured = Code(name: "notConfigured")
        /// The client was shut down.
        public static let shutdown = Code(name: "shutdown")
        public var description: String { name }
    }

    public var code: Code
    /// The HTTP status, when Push Kit answered.
    public var status: Int?
    /// Push Kit's result code (`80300007`, …) as sent; escaped and bounded.
    public var resultCode: String?
    /// Push Kit's `msg` (escaped, at most 200 characters), or what went wrong before an answer.
    public var reason: String
    /// How many times the message was sent.
    public var attempts: Int
    /// The tokens Push Kit named as failed (80300007), in the order it named them.
    public var failedTokens: [HMSFailedToken]
    /// How long Push Kit asked to be left before the next try (a `Retry-After` with a 429 or 5xx,
    /// cut to the retry policy's ceiling; Huawei documents none); `nil` when it did not say.
    public var retryAfter: Duration?

    public init(
        _ code: Code, status: Int? = nil, resultCode: String? = nil, reason: String, attempts: Int = 1, failedTokens: [HMSFailedToken] = [],
        retryAfter: Duration? = nil
    ) {
        self.code = code
        self.status = status
        self.resultCode = resultCode
        self.reason = reason
        self.attempts = attempts
        self.failedTokens = failedTokens
        self.retryAfter = retryAfter
    }

    /// Whether some named token is itself bad: retire those with ``HMSFailedToken/isTokenInvalid``.
    public var isTokenInvalid: Bool { failedTokens.contains(where: \.isTokenInvalid) }

    public var description: String {
        let answer = status.map { "\($0) " } ?? ""
        let result = resultCode.map { "\($0): " } ?? ""
        return "\(code): \(answer)\(result)\(reason)\(attempts > 1 ? " (after \(attempts) attempts)" : "")"
    }
}

/// A message Push Kit accepted, for some or all of its tokens.
public struct HMSReceipt: Sendable, Hashable {
    /// Push Kit's `requestId` (escaped, bounded), for its message receipts and support.
    public var requestID: String?
    /// How many times it was sent.
    public var attempts: Int
    /// The tokens it was not sent to (80100000, "partial success"); empty when all were.
    public var failedTokens: [HMSFailedToken]
    /// Push Kit's count of failed tokens, when it gave one: more than ``failedTokens`` holds if
    /// its list was cut (the answer is read up to a bound).
    public var failureCount: Int

    public init(requestID: String?, attempts: Int, failedTokens: [HMSFailedToken] = [], failureCount: Int? = nil) {
        self.requestID = requestID
        self.attempts = attempts
        self.failedTokens = failedTokens
        self.failureCount = failureCount ?? failedTokens.count
    }

    /// Whether every token was sent to.
    public var isComplete: Bool { failureCount == 0 && failedTokens.isEmpty }
}
