import HeraldCore

/// What to do with one answer from FCM: a pure function of the answer, the attempt and the
/// policy, so every status and `FcmError.errorCode` is tested as a value (FCM HTTP v1's
/// `ErrorCode`; Google's error model, `google.rpc.Status`; docs/fcm.md has the table).
enum FCMDecision: Sendable, Hashable {
    /// 200: FCM's `name` for the message (`projects/…/messages/…`).
    case accepted(name: String?)
    case retry(after: Duration)
    /// 401 for the access token: get a fresh one and send again, once.
    case refreshTokenAndRetry
    case fail(FCMSendError)

    /// What an attempt ended with.
    enum Attempt: Sendable, Hashable {
        /// An answer: its status, `Retry-After` and body (bounded by the transport).
        case answered(status: Int, retryAfter: String?, body: [UInt8])
        case timedOut
        case unreachable(String)
        /// FCM's certificate is not trusted; nothing was sent.
        case untrusted(String)

        /// The jitter for deciding on it: drawn only when a retry may need it (a draw is a
        /// `getrandom` system call on Linux, and nearly every answer is a 200).
        var jitter: Double {
            if case .answered(let status, _, _) = self, (200..<300).contains(status) { return 0.5 }
            return Double.random(in: 0..<1)
        }
    }

    /// The most of an answer body parsed; Google's error bodies are well under 2 KB.
    static let maximumBodyCount = 16 << 10

    /// - Parameters:
    ///   - attempts: how many times the message was sent, this one included.
    ///   - refreshed: whether a 401 already got a fresh access token for this message.
    ///   - random: a value in 0..<1 for the back-off's jitter.
    static func decide(_ attempt: Attempt, attempts: Int, refreshed: Bool, policy: FCMRetryPolicy, random: Double) -> FCMDecision {
        let canRetry = attempts < policy.maximumAttempts
        // Worked out only for a retry: nearly every answer is a 200.
        var backoff: Duration { policy.backoff.delay(afterAttempt: attempts, random: random) }
        switch attempt {
        case .timedOut:
            guard canRetry else { return .fail(FCMSendError(.timedOut, reason: "no answer within the deadline", attempts: attempts)) }
            return .retry(after: backoff)
        case .unreachable(let why):
            guard canRetry else { return .fail(FCMSendError(.connectionFailed, reason: why, attempts: attempts)) }
            return .retry(after: backoff)
        case .untrusted(let why):
            return .fail(FCMSendError(.untrusted, reason: why, attempts: attempts))
        case .answered(let status, let retryAfter, let body):
            if (200..<300).contains(status) {
                if let name = plainName(body) { return .accepted(name: name) }
                return .accepted(name: json(body)?["name"]?.stringValue.map { PeerText($0, limit: 200).description })
            }
            let error = GoogleError(body)
            func failure(_ code: FCMSendError.Code, _ fallback: String, tokenInvalid: Bool = false, retryAfter asked: Duration? = nil) -> FCMDecision {
                .fail(
                    FCMSendError(
                        code, status: status, errorCode: error.fcmErrorCode ?? error.status, reason: error.message ?? fallback, attempts: attempts,
                        isTokenInvalid: tokenInvalid, retryAfter: asked))
            }
            // Reported with a last 429 or 5xx, for the caller's own wait.
            var asked: Duration? { RetryAfter.asked(retryAfter, ceilingSeconds: policy.maximumRetryAfterSeconds) }
            // The FCM error code decides first: the same status carries several (401 is both an
            // expired access token and THIRD_PARTY_AUTH_ERROR).
            switch error.fcmErrorCode {
            case "UNREGISTERED"?:
                return failure(.unregistered, "the registration token is no longer valid")
            case "SENDER_ID_MISMATCH"?:
                return failure(.senderIDMismatch, "the registration token belongs to another sender", tokenInvalid: true)
            case "THIRD_PARTY_AUTH_ERROR"?, "APNS_AUTH_ERROR"?:
                return failure(.thirdPartyAuthError, "FCM's APNs or web push credentials were refused")
            default:
                break
            }
            switch status {
            case 400:
                // About the token only when FCM's own detail says INVALID_ARGUMENT and no field
                // of the message is named; a BadRequest names the message's fields.
                let aboutToken = error.fcmErrorCode == "INVALID_ARGUMENT" && !error.hasFieldViolations
                return failure(.invalidArgument, "the request is invalid", tokenInvalid: aboutToken)
            case 401:
                guard !refreshed else { return failure(.unauthenticated, "the access token was refused after a refresh") }
                return .refreshTokenAndRetry
            case 403:
                return failure(.permissionDenied, "permission denied")
            case 404:
                return failure(.notFound, "not found: check the project id and the endpoint")
            case 429:
                guard canRetry else { return failure(.quotaExceeded, "the sending quota is exceeded", retryAfter: asked) }
                return .retry(after: RetryAfter.delay(retryAfter, backoff: backoff, ceilingSeconds: policy.maximumRetryAfterSeconds))
            case 500..<600:
                guard canRetry else {
                    return status == 500 ? failure(.internal, "FCM failed", retryAfter: asked) : failure(.unavailable, "FCM is unavailable", retryAfter: asked)
                }
                return .retry(after: RetryAfter.delay(retryAfter, backoff: backoff, ceilingSeconds: policy.maximumRetryAfterSeconds))
            default:
                return failure(.rejected, "refused")
            }
        }
    }

    /// FCM's usual answer, `{"name": "projects/…/messages/…"}` (any spacing), read without a
    /// JSON parse when the name is 1 to 200 of letters, digits and `/ _ - : .` (nothing to
    /// escape); `nil` for any other body, which is parsed.
    static func plainName(_ body: [UInt8]) -> String? {
        var index = 0
        func skipSpace() { while index < body.count, body[index] == 0x20 || body[index] == 0x0A || body[index] == 0x0D || body[index] == 0x09 { index += 1 } }
        func expect(_ text: StaticString) -> Bool {
            let count = text.utf8CodeUnitCount
            guard body.count - index >= count else { return false }
            let matches = text.withUTF8Buffer { $0.elementsEqual(body[index..<(index + count)]) }
            if matches { index += count }
            return matches
        }
        skipSpace()
        guard expect("{") else { return nil }
        skipSpace()
        guard expect("\"name\"") else { return nil }
        skipSpace()
        guard expect(":") else { return nil }
        skipSpace()
        guard expect("\"") else { return nil }
        let start = index
        while index < body.count, index - start <= 200, Self.isPlainNameByte(body[index]) { index += 1 }
        let end = index
        guard end > start, end - start <= 200, expect("\"") else { return nil }
        skipSpace()
        guard expect("}") else { return nil }
        skipSpace()
        guard index == body.count else { return nil }
        return String(decoding: body[start..<end], as: UTF8.self)
    }

    private static func isPlainNameByte(_ byte: UInt8) -> Bool {
        Base64URL.isAlphabet(byte) || byte == UInt8(ascii: "/") || byte == UInt8(ascii: ":") || byte == UInt8(ascii: ".")
    }

    static func json(_ body: [UInt8]) -> JSONValue? {
        guard !body.isEmpty, body.count <= maximumBodyCount else { return nil }
        return try? JSONValue(parsing: body)
    }

    /// Google's error body: `{"error": {"code", "message", "status", "details": [{"@type":
    /// "type.googleapis.com/google.firebase.fcm.v1.FcmError", "errorCode"}, {"@type":
    /// "type.googleapis.com/google.rpc.BadRequest", "fieldViolations": […]}]}}`. Every string is
    /// escaped and bounded; an unparseable or oversized body gives nothing.
    struct GoogleError: Sendable, Hashable {
        var message: String?
        var status: String?
        var fcmErrorCode: String?
        var hasFieldViolations = false

        static let fcmErrorType = "type.googleapis.com/google.firebase.fcm.v1.FcmError"
        static let badRequestType = "type.googleapis.com/google.rpc.BadRequest"

        init(_ body: [UInt8]) {
            guard let error = FCMDecision.json(body)?["error"] else {
                // A text body (a proxy's page): its start, as the reason.
                if !body.isEmpty { message = PeerText(body.prefix(FCMDecision.maximumBodyCount), limit: 200).description }
                return
            }
            message = error["message"]?.stringValue.map { PeerText($0, limit: 200).description }
            status = error["status"]?.stringValue.map { PeerText($0, limit: 64).description }
            guard case .array(let details)? = error["details"] else { return }
            for detail in details.prefix(32) {
                switch detail["@type"]?.stringValue {
                case Self.fcmErrorType?:
                    fcmErrorCode = detail["errorCode"]?.stringValue.map { PeerText($0, limit: 64).description }
                case Self.badRequestType?:
                    if case .array(let violations)? = detail["fieldViolations"], !violations.isEmpty { hasFieldViolations = true }
                default:
                    break
                }
            }
        }
    }
}

/// How the FCM client retries: 429 (`QUOTA_EXCEEDED`), 5xx (`UNAVAILABLE`, `INTERNAL`), timeouts
/// and unreachable servers (FCM may answer 429 without `Retry-After`: the back-off applies). A
/// 401's one retry with a fresh access token is due even past `maximumAttempts`, and with `.none`.
public typealias FCMRetryPolicy = HTTPRetryPolicy
