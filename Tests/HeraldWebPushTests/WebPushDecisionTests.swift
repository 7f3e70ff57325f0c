import HeraldCore
@testable import HeraldWebPush
import Testing

/// Every answer a push service gives, as a value: what the client does with it.
@Suite("Web Push answers as decisions")
struct WebPushDecisionTests {
    static let policy = WebPushRetryPolicy(maximumAttempts: 3, backoff: Backoff(initial: .seconds(1), maximum: .seconds(8)), maximumRetryAfterSeconds: 60)

    static func answer(_ status: Int, retryAfter: String? = nil, body: String = "") -> WebPushDecision.Attempt {
        .answered(status: status, retryAfter: retryAfter, location: status == 201 ? "/message/1" : nil, body: Array(body.utf8))
    }

    static func decide(_ attempt: WebPushDecision.Attempt, attempts: Int = 1) -> WebPushDecision {
        WebPushDecision.decide(attempt, attempts: attempts, policy: policy, random: 0)
    }

    static func failure(_ decision: WebPushDecision) -> WebPushSendError? {
        if case .fail(let error) = decision { return error }
        return nil
    }

    @Test("201 is accepted with its Location; 200 and 202 too")
    func accepted() {
        #expect(Self.decide(Self.answer(201)) == .accepted(location: "/message/1"))
        #expect(Self.decide(Self.answer(202)) == .accepted(location: nil))
    }

    @Test("404 and 410: the subscription is gone, never retried, with the service's reason",
          arguments: [(404, #"{"reason":"NotFound"}"#, "NotFound"), (410, #"{"code":410,"errno":106,"message":"Request did not validate"}"#, "Request did not validate"), (410, "", "the subscription is gone")])
    func gone(status: Int, body: String, reason: String) {
        let error = Self.failure(Self.decide(Self.answer(status, body: body)))
        #expect(error?.isSubscriptionGone == true)
        #expect(error?.status == status && error?.reason == reason)
    }

    @Test("413 is too large; 400, 401 and 403 are rejections with Apple's reason; none retried",
          arguments: [(413, "", WebPushSendError.Code.payloadTooLarge, "the message is too large"), (400, #"{"reason":"BadWebPushTopic"}"#, .rejected, "BadWebPushTopic"),
                      (403, #"{"reason":"BadJwtToken"}"#, .rejected, "BadJwtToken"), (401, "unauthorized\u{1b}[31m", .rejected, "unauthorized\\u{1b}[31m")])
    func refusals(status: Int, body: String, code: WebPushSendError.Code, reason: String) {
        let error = Self.failure(Self.decide(Self.answer(status, body: body), attempts: 1))
        #expect(error?.code == code)
        #expect(error?.reason == reason, "escaped, never raw control characters")
    }

    @Test("429 and 5xx: retried after Retry-After (capped) or the back-off, whichever is longer; the last attempt fails with the status")
    func transient() {
        #expect(Self.decide(Self.answer(429, retryAfter: "5")) == .retry(after: .seconds(5)))
        #expect(Self.decide(Self.answer(429, retryAfter: "0")) == .retry(after: .seconds(1)), "never sooner than the back-off")
        #expect(Self.decide(Self.answer(429, retryAfter: "86400")) == .retry(after: .seconds(60)), "capped")
        #expect(Self.decide(Self.answer(429, retryAfter: "Wed, 21 Oct 2026 07:28:00 GMT"), attempts: 2) == .retry(after: .seconds(2)), "a date: the back-off")
        #expect(Self.decide(Self.answer(429, retryAfter: "-5")) == .retry(after: .seconds(1)))
        #expect(Self.decide(Self.answer(503)) == .retry(after: .seconds(1)))
        #expect(Self.decide(Self.answer(500), attempts: 2) == .retry(after: .seconds(2)))
        #expect(Self.failure(Self.decide(Self.answer(429), attempts: 3))?.code == .tooManyRequests)
        #expect(Self.failure(Self.decide(Self.answer(502, body: #"{"reason":"InternalServerError"}"#), attempts: 3)) == WebPushSendError(.serviceUnavailable, status: 502, reason: "InternalServerError", attempts: 3))
    }

    @Test("timeouts and unreachable services are retried, then fail naming what happened")
    func noAnswer() {
        #expect(Self.decide(.timedOut) == .retry(after: .seconds(1)))
        #expect(Self.decide(.unreachable("refused"), attempts: 2) == .retry(after: .seconds(2)))
        #expect(Self.failure(Self.decide(.timedOut, attempts: 3))?.code == .timedOut)
        #expect(Self.failure(Self.decide(.unreachable("connection refused"), attempts: 3)) == WebPushSendError(.connectionFailed, reason: "connection refused", attempts: 3))
    }

    @Test("a certificate not trusted fails at the first attempt: another cannot mend it")
    func untrusted() {
        #expect(Self.failure(Self.decide(.untrusted("not trusted"), attempts: 1)) == WebPushSendError(.untrusted, reason: "not trusted", attempts: 1))
    }

    @Test("topics: 32 base64url characters or fewer; a collapse ID that is not one becomes a digest of 32")
    func topics() throws {
        #expect(throws: Never.self) { try WebPushMessage.checkTopic("order-42_status") }
        for bad in ["", String(repeating: "a", count: 33), "has space", "slash/", "ünï"] {
            #expect(throws: WebPushError.self) { try WebPushMessage.checkTopic(bad) }
        }
        #expect(WebPushMessage.topic(forCollapseID: "order-42") == "order-42")
        let derived = WebPushMessage.topic(forCollapseID: "order 42 / status")
        #expect(derived.count == 32 && (try? WebPushMessage.checkTopic(derived)) != nil)
        #expect(WebPushMessage.topic(forCollapseID: "order 42 / status") == derived, "stable")
        #expect(throws: WebPushError.self) { _ = try WebPushMessage(payload: [UInt8](repeating: 0, count: 3994)) }
        #expect(throws: WebPushError.self) { _ = try WebPushMessage(payload: [], timeToLive: -1) }
    }
}
