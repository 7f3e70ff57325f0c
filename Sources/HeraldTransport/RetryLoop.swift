/// What one attempt of a request came to, for ``retrying(after:delay:cancelled:_:)``: each
/// platform's client decides it from its own decision value (`WebPushDecision`, `FCMDecision`).
package enum RetryStep<Success: Sendable, Failure: Error>: Sendable {
    /// The request is done: answered, or failed for good.
    case done(Result<Success, Failure>)
    /// Send it again after `delay` (zero: at once).
    case retry(after: Duration)
}

/// The retry loop every platform's client shares: runs `attempt` with the number of the attempt
/// (after the `previous` ones), and while it says so waits and runs it again. A wait that is
/// cancelled ends the loop with `cancelled(attempts)`. How many attempts and how long to wait is
/// each platform's decision, not the loop's; the loop only keeps count and sleeps.
package func retrying<Success: Sendable, Failure: Error>(
    after previous: Int, delay: Duration = .zero, cancelled: (_ attempts: Int) -> Failure, _ attempt: (_ number: Int) async -> RetryStep<Success, Failure>
) async -> Result<Success, Failure> {
    var attempts = previous
    var wait = delay
    while true {
        if wait > .zero {
            do {
                try await Task.sleep(for: wait)
            } catch {
                return .failure(cancelled(attempts))
            }
        }
        attempts += 1
        switch await attempt(attempts) {
        case .done(let result): return result
        case .retry(let delay): wait = delay
        }
    }
}
