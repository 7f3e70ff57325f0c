import HeraldCore
@testable import HeraldFCM
import Testing

/// A last 429 or 5xx reports FCM's `Retry-After`, so the caller waits as long before trying again.
@Suite("FCM: Retry-After reported with a last failure")
struct FCMRetryAfterReportTests {
    static let policy = FCMRetryPolicy(maximumAttempts: 1, maximumRetryAfterSeconds: 60)

    static func failure(_ status: Int, retryAfter: String?) -> FCMSendError? {
        let attempt = FCMDecision.Attempt.answered(status: status, retryAfter: retryAfter, body: [])
        if case .fail(let error) = FCMDecision.decide(attempt, attempts: 1, refreshed: false, policy: policy, random: 0) { return error }
        return nil
    }

    @Test("429, 500 and 503 carry it, cut to the policy's ceiling; none without one")
    func reported() {
        #expect(Self.failure(503, retryAfter: "30")?.retryAfter == .seconds(30))
        #expect(Self.failure(500, retryAfter: "7")?.retryAfter == .seconds(7))
        #expect(Self.failure(429, retryAfter: "86400")?.retryAfter == .seconds(60))
        #expect(Self.failure(503, retryAfter: nil)?.retryAfter == nil)
        #expect(Self.failure(403, retryAfter: "30")?.retryAfter == nil)
    }
}
