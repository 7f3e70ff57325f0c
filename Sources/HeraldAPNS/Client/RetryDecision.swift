import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What became of one attempt to send a notification.
enum AttemptResult {
    case rejected(APNSError)
    /// Not processed by the server (REFUSED_STREAM, above GOAWAY's last stream ID).
    case unprocessed
    /// The connection or stream failed without an answer.
    case lost(String)
    /// No answer before the request timeout.
    case timedOut
}

/// What to do next with a notification after an attempt.
enum RetryDecision: Equatable {
    /// Done: this is its outcome.
    case final(FinalResult)
    /// Send it again after `delay`. `renewProviderToken`: mint a new JWT first
    /// (`ExpiredProviderToken`); `avoidConnection`: the connection should take no more work.
    case retry(after: Duration, renewProviderToken: Bool, avoidConnection: Bool)

    enum FinalResult: Equatable {
        /// The server answered with success (``RequestJob/succeeds(with:)``), as it came.
        case succeeded(RawResponse)
        case rejected(APNSError)
        case failed(APNSClientError)
    }
}

/// The retry rules, as a pure function of the attempt, the notification's history and the policy.
struct RetryDecider {
    /// Unprocessed re-sends are free (the server never saw the request) but bounded, so a server
    /// that refuses every stream cannot loop a notification forever.
    static let maximumUnprocessedResends = 16

    var policy: RetryPolicy
    var usesProviderTokens: Bool

    /// - Parameters:
    ///   - attempts: how many times it has been sent, this attempt included.
    ///   - expiredTokenRetries: how many times it was already retried after `ExpiredProviderToken`.
    ///   - unprocessedResends: how many times it was already re-sent unprocessed.
    ///   - expiration: its apns-expiration, which no retry may outlive.
    func decide(
        _ result: AttemptResult, attempts: Int, expiredTokenRetries: Int, unprocessedResends: Int,
        expiration: Date?, now: Date, random: Double
    ) -> RetryDecision {
        switch result {
        case .unprocessed:
            if unprocessedResends < Self.maximumUnprocessedResends {
                return .retry(after: .zero, renewProviderToken: false, avoidConnection: false)
            }
            return .final(.failed(APNSClientError(.connectionLost, "the server refused the request \(unprocessedResends + 1) times without processing it")))

        case .lost(let why):
            return retry(
                after: attempts <= 1 ? .zero : policy.backoff(afterAttempt: attempts - 1, random: random),
                attempts: attempts, expiration: expiration, now: now,
                otherwise: .failed(APNSClientError(.connectionLost, "\(why) (after \(attempts) attempt\(attempts == 1 ? "" : "s"))"))
            )

        case .timedOut:
            return retry(
                after: policy.backoff(afterAttempt: attempts, random: random), attempts: attempts,
                expiration: expiration, now: now,
                otherwise: .failed(APNSClientError(.timedOut, "no answer within the request timeout (after \(attempts) attempt\(attempts == 1 ? "" : "s"))"))
            )

        case .rejected(let error):
            switch error.retry {
            case .never, .afterFix:
                return .final(.rejected(error))
            case .withNewProviderToken:
                // Mint a new JWT and retry once (field-lessons #2); the connection is recycled.
                guard usesProviderTokens, expiredTokenRetries == 0 else { return .final(.rejected(error)) }
                return .retry(after: .zero, renewProviderToken: true, avoidConnection: true)
            case .withCachedProviderTokenAfterDelay:
                return retry(after: policy.providerTokenUpdateDelay, attempts: attempts, expiration: expiration, now: now, otherwise: .rejected(error))
            case .afterDelay, .withBackoff:
                return retry(after: policy.backoff(afterAttempt: attempts, random: random), attempts: attempts, expiration: expiration, now: now, otherwise: .rejected(error))
            case .onNewConnection:
                return retry(
                    after: policy.backoff(afterAttempt: attempts, random: random), attempts: attempts, expiration: expiration,
                    now: now, otherwise: .rejected(error), avoidConnection: true
                )
            }
        }
    }

    private func retry(
        after delay: Duration, attempts: Int, expiration: Date?, now: Date, otherwise final: RetryDecision.FinalResult,
        avoidConnection: Bool = false
    ) -> RetryDecision {
        guard attempts < policy.maximumAttempts else { return .final(final) }
        if let expiration, now.addingTimeInterval(delay.seconds) > expiration {
            if case .failed(let failure) = final {
                return .final(.failed(APNSClientError(.expired, "apns-expiration passed before it could be delivered; last problem: \(failure.message)")))
            }
            return .final(final)
        }
        return .retry(after: delay, renewProviderToken: false, avoidConnection: avoidConnection)
    }
}
