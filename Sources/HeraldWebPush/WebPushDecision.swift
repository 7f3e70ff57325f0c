import HeraldCore

/// What to do with one answer from a push service: a pure function of the answer, the attempt
/// and the policy, so every status is tested as a value (RFC 8030 §5-§8; Apple's reasons).
enum WebPushDecision: Sendable, Hashable {
    case accepted(location: String?)
    case retry(after: Duration)
    case fail(WebPushSendError)

    /// What an attempt ended with.
    enum Attempt: Sendable, Hashable {
        /// An answer: its status, `Retry-After` and body (at most a few KB).
        case answered(status: Int, retryAfter: String?, location: String?, body: [UInt8])
        case timedOut
        case unreachable(String)
        /// The endpoint's address is not one the policy lets the client connect to; nothing was sent.
        case notAllowed(String)
        /// The push service's certificate is not trusted; nothing was sent.
        case untrusted(String)

        /// The jitter for deciding on it: drawn only when a retry may need it (a draw is a
        /// `getrandom` system call on Linux, and nearly every answer is a 201).
        var jitter: Double {
            if case .answered(let status, _, _, _) = self, (200..<300).contains(status) { return 0.5 }
            return Double.random(in: 0..<1)
        }
    }

    /// - Parameters:
    ///   - attempts: how many times the message was sent, this one included.
    ///   - random: a value in 0..<1 for the back-off's jitter.
    static func decide(_ attempt: Attempt, attempts: Int, policy: WebPushRetryPolicy, random: Double) -> WebPushDecision {
        let canRetry = attempts < policy.maximumAttempts
        let backoff = policy.backoff.delay(afterAttempt: attempts, random: random)
        switch attempt {
        case .answered(let status, let retryAfter, let location, let body):
            // Reported with a last failure, for the caller's own wait.
            var asked: Duration? { RetryAfter.asked(retryAfter, ceilingSeconds: policy.maximumRetryAfterSeconds) }
            switch status {
            case 200..<300:
                return .accepted(location: location)
            case 404, 410:
                return .fail(WebPushSendError(.subscriptionGone, status: status, reason: reason(body, otherwise: "the subscription is gone"), attempts: attempts))
            case 413:
                return .fail(WebPushSendError(.payloadTooLarge, status: status, reason: reason(body, otherwise: "the message is too large"), attempts: attempts))
            case 429:
                guard canRetry else {
                    return .fail(WebPushSendError(.tooManyRequests, status: status, reason: reason(body, otherwise: "too many requests"), attempts: attempts, retryAfter: asked))
                }
                // The push service's own wait, if it says one, within the policy's ceiling.
                return .retry(after: RetryAfter.delay(retryAfter, backoff: backoff, ceilingSeconds: policy.maximumRetryAfterSeconds))
            case 500..<600:
                guard canRetry else {
                    return .fail(WebPushSendError(.serviceUnavailable, status: status, reason: reason(body, otherwise: "the push service failed"), attempts: attempts, retryAfter: asked))
                }
                return .retry(after: RetryAfter.delay(retryAfter, backoff: backoff, ceilingSeconds: policy.maximumRetryAfterSeconds))
            default:
                return .fail(WebPushSendError(.rejected, status: status, reason: reason(body, otherwise: "refused"), attempts: attempts))
            }
        case .timedOut:
            guard canRetry else { return .fail(WebPushSendError(.timedOut, reason: "no answer within the deadline", attempts: attempts)) }
            return .retry(after: backoff)
        case .notAllowed(let why):
            return .fail(WebPushSendError(.endpointNotAllowed, reason: why, attempts: attempts))
        case .untrusted(let why):
            return .fail(WebPushSendError(.untrusted, reason: why, attempts: attempts))
        case .unreachable(let why):
            guard canRetry else { return .fail(WebPushSendError(.connectionFailed, reason: why, attempts: attempts)) }
            return .retry(after: backoff)
        }
    }

    /// The push service's reason: Apple's `{"reason": …}`, Mozilla's `{"message": …}` or
    /// `{"error": …}`, or the start of a text body; escaped and at most 200 characters.
    static func reason(_ body: [UInt8], otherwise fallback: String) -> String {
        if body.isEmpty { return fallback }
        if let json = try? JSONValue(parsing: body) {
            for key in ["reason", "message", "error"] {
                if let text = json[key]?.stringValue, !text.isEmpty { return PeerText(text, limit: 200).description }
            }
        }
        return PeerText(body, limit: 200).description
    }
}

/// How the Web Push client retries: 429, 5xx, timeouts and unreachable services (one policy
/// type with the FCM client's).
public typealias WebPushRetryPolicy = HTTPRetryPolicy
