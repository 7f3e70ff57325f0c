import NIOCore
import Synchronization

/// Bounds the notifications in flight: a counting semaphore that suspends callers (first come,
/// first served) instead of letting work queue without limit (field-lessons #4).
@_spi(HeraldFlow) public final class InFlightLimiter: Sendable {
    private struct Waiter {
        var id: UInt64
        var maximum: Int
        var continuation: CheckedContinuation<Int, any Error>
    }

    private struct State {
        var available: Int
        var waiters = CircularBuffer<Waiter>()
        var nextID: UInt64 = 0
    }

    private let state: Mutex<State>
    public let limit: Int

    public init(limit: Int) {
        self.limit = max(1, limit)
        state = Mutex(State(available: self.limit))
    }

    /// Takes between 1 and `maximum` permits, suspending until at least one is free.
    public func acquire(maximum: Int = 1) async throws -> Int {
        if let granted = state.withLock({ state -> Int? in
            guard state.waiters.isEmpty, state.available > 0 else { return nil }
            let granted = min(maximum, state.available)
            state.available -= granted
            return granted
        }) {
            return granted
        }
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                let granted = state.withLock { state -> Int? in
                    if Task.isCancelled { return -1 }
                    if state.waiters.isEmpty, state.available > 0 {
                        let granted = min(maximum, state.available)
                        state.available -= granted
                        return granted
                    }
                    state.waiters.append(Waiter(id: id, maximum: maximum, continuation: continuation))
                    return nil
                }
                if granted == -1 {
                    continuation.resume(throwing: CancellationError())
                } else if let granted {
                    continuation.resume(returning: granted)
                }
            }
        } onCancel: {
            let waiter = state.withLock { state -> Waiter? in
                guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                return state.waiters.remove(at: index)
            }
            waiter?.continuation.resume(throwing: CancellationError())
        }
    }

    /// Returns permits, waking waiters in order.
    public func release(_ count: Int = 1) {
        guard count > 0 else { return }
        var resumed: [(CheckedContinuation<Int, any Error>, Int)] = []
        state.withLock { state in
            state.available += count
            while state.available > 0, let waiter = state.waiters.first {
                state.waiters.removeFirst()
                let granted = min(waiter.maximum, state.available)
                state.available -= granted
                resumed.append((waiter.continuation, granted))
            }
        }
        for (continuation, granted) in resumed { continuation.resume(returning: granted) }
    }

    /// Permits free now.
    public var available: Int { state.withLock { $0.available } }

    /// Callers suspended in ``acquire(maximum:)`` now.
    public var waiting: Int { state.withLock { $0.waiters.count } }
}
