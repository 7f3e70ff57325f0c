import Foundation
@testable import HeraldAPNS
import HeraldCore
import Testing

@Suite("Retry decisions (apns-spec §1.7)")
struct RetryDeciderTests {
    let decider = RetryDecider(policy: .default, usesProviderTokens: true)
    let now = Date(timeIntervalSince1970: 1_800_000_000)

    func decide(_ result: AttemptResult, attempts: Int = 1, expiredTokenRetries: Int = 0, unprocessed: Int = 0, expiration: Date? = nil, decider: RetryDecider? = nil) -> RetryDecision {
        (decider ?? self.decider).decide(
            result, attempts: attempts, expiredTokenRetries: expiredTokenRetries, unprocessedResends: unprocessed,
            expiration: expiration, now: now, random: 0.5
        )
    }

    func rejection(_ reason: String, status: Int) -> AttemptResult {
        .rejected(APNSError(status: status, responseBody: Array(#"{"reason":"\#(reason)"}"#.utf8)))
    }

    @Test("permanent rejections are final at once", arguments: ["BadDeviceToken", "Unregistered", "BadTopic", "PayloadTooLarge", "DeviceTokenNotForTopic", "Forbidden", "InvalidProviderToken"])
    func permanent(reason: String) {
        guard case .final(.rejected(let error)) = decide(rejection(reason, status: 400)) else {
            Issue.record("\(reason) must be final")
            return
        }
        #expect(error.reason.rawValue == reason)
    }

    @Test("500, 503, Shutdown and TooManyRequests back off exponentially, about 1 s first, up to 5 attempts")
    func backoff() {
        for (reason, status) in [("InternalServerError", 500), ("ServiceUnavailable", 503), ("Shutdown", 503), ("TooManyRequests", 429)] {
            var delays: [Duration] = []
            for attempt in 1...4 {
                guard case .retry(let delay, false, _) = decide(rejection(reason, status: status), attempts: attempt) else {
                    Issue.record("\(reason) attempt \(attempt) should retry")
                    return
                }
                delays.append(delay)
            }
            // With jitter 0.2 and random 0.5: 0.9 s, 1.8 s, 3.6 s, 7.2 s.
            #expect(delays == [.milliseconds(900), .milliseconds(1800), .milliseconds(3600), .milliseconds(7200)], "\(reason)")
            guard case .final(.rejected) = decide(rejection(reason, status: status), attempts: 5) else {
                Issue.record("\(reason) after 5 attempts must be final")
                return
            }
        }
        #expect(decide(rejection("Shutdown", status: 503)) == .retry(after: .milliseconds(900), renewProviderToken: false, avoidConnection: true))
    }

    @Test("the back-off is capped and its jitter stays within bounds")
    func capAndJitter() {
        let policy = RetryPolicy.default
        #expect(policy.backoff(afterAttempt: 20, random: 0) == .seconds(30))
        for random in stride(from: 0.0, to: 1.0, by: 0.1) {
            let delay = policy.backoff(afterAttempt: 1, random: random)
            #expect(delay > .milliseconds(799) && delay <= .seconds(1))
        }
    }

    @Test("RetryPolicy's delays are the shared Backoff's, the gateway queue's rule, for any attempt")
    func retryPolicyUsesBackoff() {
        for policy in [RetryPolicy.default, .none, RetryPolicy(maximumAttempts: 9, initialBackoff: .milliseconds(20), maximumBackoff: .seconds(3), jitter: 0.5, providerTokenUpdateDelay: .zero)] {
            let backoff = Backoff(initial: policy.initialBackoff, maximum: policy.maximumBackoff, jitter: policy.jitter)
            #expect(policy.backoff == backoff)
            for attempt in [0, 1, 2, 3, 10, 31, 32, 64, Int.max] {
                for random in [0, 0.25, 0.5, 0.999] {
                    #expect(policy.backoff(afterAttempt: attempt, random: random) == backoff.delay(afterAttempt: attempt, random: random))
                }
            }
            #expect(policy.backoff(afterAttempt: .max, random: 0) == policy.maximumBackoff)
        }
    }

    @Test("ExpiredProviderToken: a new token and one retry at once on another connection, then final")
    func expiredProviderToken() {
        #expect(decide(rejection("ExpiredProviderToken", status: 403)) == .retry(after: .zero, renewProviderToken: true, avoidConnection: true))
        guard case .final(.rejected) = decide(rejection("ExpiredProviderToken", status: 403), attempts: 2, expiredTokenRetries: 1) else {
            Issue.record("a second ExpiredProviderToken must be final")
            return
        }
        let certificates = RetryDecider(policy: .default, usesProviderTokens: false)
        guard case .final = decide(rejection("ExpiredProviderToken", status: 403), decider: certificates) else {
            Issue.record("without provider tokens there is nothing to renew")
            return
        }
    }

    @Test("TooManyProviderTokenUpdates retries with the cached token after a delay")
    func tooManyTokenUpdates() {
        #expect(decide(rejection("TooManyProviderTokenUpdates", status: 429)) == .retry(after: .seconds(2), renewProviderToken: false, avoidConnection: false))
    }

    @Test("unprocessed requests are re-sent at once, not counted, but bounded")
    func unprocessed() {
        #expect(decide(.unprocessed) == .retry(after: .zero, renewProviderToken: false, avoidConnection: false))
        guard case .final(.failed(let error)) = decide(.unprocessed, unprocessed: RetryDecider.maximumUnprocessedResends) else {
            Issue.record("endless refusals must end")
            return
        }
        #expect(error.code == .connectionLost)
    }

    @Test("a lost request is re-sent at once, then with back-off; timeouts back off; both end after the attempts")
    func lostAndTimedOut() {
        #expect(decide(.lost("gone")) == .retry(after: .zero, renewProviderToken: false, avoidConnection: false))
        #expect(decide(.lost("gone"), attempts: 2) == .retry(after: .milliseconds(900), renewProviderToken: false, avoidConnection: false))
        guard case .final(.failed(let lost)) = decide(.lost("gone"), attempts: 5) else {
            Issue.record("expected final")
            return
        }
        #expect(lost.code == .connectionLost)
        guard case .final(.failed(let late)) = decide(.timedOut, attempts: 5) else {
            Issue.record("expected final")
            return
        }
        #expect(late.code == .timedOut)
    }

    @Test("no retry outlives apns-expiration")
    func expiration() {
        let soon = now.addingTimeInterval(0.5)
        guard case .final(.rejected(let error)) = decide(rejection("ServiceUnavailable", status: 503), expiration: soon) else {
            Issue.record("a retry after 0.9 s would outlive an expiration 0.5 s away")
            return
        }
        #expect(error.reason == .serviceUnavailable)
        guard case .final(.failed(let failure)) = decide(.timedOut, expiration: soon) else {
            Issue.record("expected final")
            return
        }
        #expect(failure.code == .expired)
        guard case .retry = decide(rejection("ServiceUnavailable", status: 503), expiration: now.addingTimeInterval(60)) else {
            Issue.record("a retry well before expiration is fine")
            return
        }
    }

    @Test("RetryPolicy.none never retries")
    func noRetries() {
        let none = RetryDecider(policy: .none, usesProviderTokens: true)
        guard case .final = decide(rejection("ServiceUnavailable", status: 503), decider: none) else {
            Issue.record("expected final")
            return
        }
    }
}
