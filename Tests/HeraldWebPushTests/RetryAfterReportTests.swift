import HeraldCore
@testable import HeraldWebPush
import Testing

/// A last 429 or 5xx reports the push service's `Retry-After`, so the caller (the gateway's
/// queue, its host circuits) waits as long before trying again.
@Suite("Web Push: Retry-After reported with a last failure")
struct WebPushRetryAfterReportTests {
    static let policy = WebPushRetryPolicy(maximumAttempts: 1, maximumRetryAfterSeconds: 60)

    static func failure(_ status: Int, retryAfter: String?) -> WebPushSendError? {
        let attempt = WebPushDecision.Attempt.answered(status: status, retryAfter: retryAfter, location: nil, body: [])
        if case .fail(let error) = WebPushDecision.decide(attempt, attempts: 1, policy: policy, random: 0) { return error }
        return nil
    }

    @Test("429 and 5xx carry it, cut to the policy's ceiling; none without one, or with a date")
    func reported() {
        #expect(Self.failure(503, retryAfter: "30")?.retryAfter == .seconds(30))
        #expect(Self.failure(500, retryAfter: "7")?.retryAfter == .seconds(7))
        #expect(Self.failure(429, retryAfter: "86400")?.retryAfter == .seconds(60))
        #expect(Self.failure(503, retryAfter: nil)?.retryAfter == nil)
        #expect(Self.failure(503, retryAfter: "Wed, 21 Oct 2026 07:28:00 GMT")?.retryAfter == nil)
        #expect(Self.failure(400, retryAfter: "30")?.retryAfter == nil, "a refusal is not retried")
    }
}
