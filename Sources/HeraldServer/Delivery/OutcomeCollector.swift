import HeraldStore
import Synchronization

/// The outcomes of one batch as they arrive, and a wait that ends when all are in or when the
/// worker stops waiting (the process is stopping and its grace period is over).
final class OutcomeCollector: Sendable {
    private struct State {
        var results: [DeliveryOutcome.Result?]
        var remaining: Int
        var stopped = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state: Mutex<State>

    init(count: Int) {
        state = Mutex(State(results: Array(repeating: nil, count: count), remaining: count))
    }

    func record(_ result: DeliveryOutcome.Result, at index: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard index >= 0, index < state.results.count, state.results[index] == nil else { return nil }
            state.results[index] = result
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Stops waiting: outcomes not in yet are counted as `missing` by ``results(missing:)``.
    func stop() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.stopped = true
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Returns when every outcome is in, or after ``stop()``.
    func wait() async {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Bool in
                if state.remaining == 0 || state.stopped { return true }
                state.waiter = continuation
                return false
            }
            if ready { continuation.resume() }
        }
    }

    /// Every outcome, `missing` where none came.
    func results(missing: DeliveryOutcome.Result) -> [DeliveryOutcome.Result] {
        state.withLock { state in state.results.map { $0 ?? missing } }
    }
}
