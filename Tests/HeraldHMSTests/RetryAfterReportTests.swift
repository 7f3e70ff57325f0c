import HeraldCore
@testable import HeraldHMS
import Testing

/// A last 429 or 5xx reports a `Retry-After` (Huawei documents none, but one is followed), so the
/// caller waits as long before trying again.
@Suite("Push Kit: Retry-After reported with a last failure")
struct HMSRetryAfterReportTests {
    static let policy = HMSRetryPolicy(maximumAttempts: 1, maximumRetryAfterSeconds: 60)

    static func failure(_ status: Int, retryAfter: String?) -> HMSSendError? {
        let attempt = HMSDecision.Attempt.answered(status: status, retryAfter: retryAfter, body: [])
        if case .fail(let error) = HMSDecision.decide(attempt, tokens: ["t"], attempts: 1, refreshed: false, policy: policy, random: 0) { return error }
        return nil
    }

    @Test("traffic control and 5xx carry it, cut to the policy's ceiling; none without one")
    func reported() {
        #expect(Self.failure(503, retryAfter: "30")?.retryAfter == .seconds(30))
        #expect(Self.failure(502, retryAfter: "7")?.retryAfter == .seconds(7))
        #expect(Self.failure(429, retryAfter: "86400")?.retryAfter == .seconds(60))
        #expect(Self.failure(500, retryAfter: nil)?.retryAfter == nil)
    }
}
