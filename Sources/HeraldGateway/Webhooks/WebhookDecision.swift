import HeraldCore

#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What the sender does with an event after one attempt, decided from the attempt's result
/// alone, before any I/O (as the queue's ``DeliveryDecision`` is).
enum WebhookDecision: Sendable, Hashable {
    /// The receiver answered 2xx: the event leaves the outbox.
    case sent
    /// Try again at `at`.
    case retry(at: Date)
    /// The next attempt would come after the webhook's give-up time: the event is dropped.
    case drop

    /// - Parameters:
    ///   - status: the receiver's HTTP status; `nil` when it could not be reached or did not
    ///     answer in time.
    ///   - attempt: attempts so far, this one included.
    ///   - random: a value in 0..<1 for the back-off's jitter.
    static func decide(
        status: Int?, attempt: Int, createdAt: Date, giveUpAfter: Duration, now: Date, backoff: Backoff, random: Double
    ) -> WebhookDecision {
        if let status, (200..<300).contains(status) { return .sent }
        let (whole, fraction) = backoff.delay(afterAttempt: attempt, random: random).components
        let next = now.addingTimeInterval(Double(whole) + Double(fraction) / 1e18)
        let (limit, limitFraction) = giveUpAfter.components
        let giveUpAt = createdAt.addingTimeInterval(Double(limit) + Double(limitFraction) / 1e18)
        return next > giveUpAt ? .drop : .retry(at: next)
    }
}
