import NIOCore
import Synchronization

/// Where the outcomes of a bulk send (HTTP/2 or legacy) gather until the consumer takes them. Permits of the
/// in-flight bound are returned as outcomes are taken, so a slow consumer slows the sending
/// instead of letting outcomes pile up.
@_spi(HeraldFlow) public final class BulkSink<Outcome: Sendable>: Sendable {
    @usableFromInline
    struct State {
        @usableFromInline var buffer = CircularBuffer<Outcome>(initialCapacity: 256)
        @usableFromInline var waiter: CheckedContinuation<Void, Never>?
        @usableFromInline var submitted = 0
        @usableFromInline var delivered = 0
        @usableFromInline var producerDone = false
        @usableFromInline var producerError: (any Error)?
        @usableFromInline var abandoned = false

        @inlinable init() {}
    }

    @usableFromInline
    let state = Mutex(State())
    @usableFromInline
    let limiter: InFlightLimiter

    @inlinable
    public init(limiter: InFlightLimiter) {
        self.limiter = limiter
    }

    /// The producer handed `count` more notifications to the client.
    @inlinable
    public func submitted(_ count: Int) {
        state.withLock { $0.submitted += count }
    }

    /// The producer has no more notifications (or failed with `error`).
    @inlinable
    public func producerFinished(error: (any Error)? = nil) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.producerDone = true
            state.producerError = error
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Final outcomes, from any thread.
    @inlinable
    public func deliver(contentsOf outcomes: some Collection<Outcome>) {
        let (waiter, abandoned) = state.withLock { state -> (CheckedContinuation<Void, Never>?, Bool) in
            state.delivered += outcomes.count
            if state.abandoned { return (nil, true) }
            state.buffer.append(contentsOf: outcomes)
            defer { state.waiter = nil }
            return (state.waiter, false)
        }
        if abandoned { limiter.release(outcomes.count) }
        waiter?.resume()
    }

    /// One final outcome, from any thread.
    @inlinable
    public func deliver(_ outcome: Outcome) {
        deliver(contentsOf: CollectionOfOne(outcome))
    }

    /// Takes every outcome gathered so far, waiting for at least one; an empty result means all
    /// outcomes have been taken.
    @inlinable
    public func take() async throws -> CircularBuffer<Outcome> {
        while true {
            let step = state.withLock { state -> Step in
                if !state.buffer.isEmpty {
                    defer { state.buffer = CircularBuffer(initialCapacity: 256) }
                    return .outcomes(state.buffer)
                }
                if state.producerDone, state.delivered == state.submitted { return .finished(state.producerError) }
                return .wait
            }
            switch step {
            case .outcomes(let outcomes):
                limiter.release(outcomes.count)
                return outcomes
            case .finished(let error):
                if let error { throw error }
                return CircularBuffer()
            case .wait:
                await withCheckedContinuation { continuation in
                    let ready = state.withLock { state -> Bool in
                        if !state.buffer.isEmpty || (state.producerDone && state.delivered == state.submitted) { return true }
                        state.waiter = continuation
                        return false
                    }
                    if ready { continuation.resume() }
                }
            }
        }
    }

    @usableFromInline
    enum Step {
        case outcomes(CircularBuffer<Outcome>)
        case finished((any Error)?)
        case wait
    }

    /// The consumer stopped early: outcomes still to come release their permits on arrival.
    @inlinable
    public func abandon() {
        let count = state.withLock { state -> Int in
            state.abandoned = true
            defer { state.buffer = CircularBuffer() }
            return state.buffer.count
        }
        limiter.release(count)
    }
}
