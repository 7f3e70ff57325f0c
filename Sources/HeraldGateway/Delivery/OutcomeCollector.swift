import HeraldStore
import Synchronization

/// The outcomes of one batch as they arrive, and a wait that ends when all are in or when the
/// worker stops waiting (the process is stopping and its grace period is over).
///
/// It holds the batch's outcomes themselves, each device's made once with its token and
/// `missing` as its result until its own comes in, and hands them over whole: a batch of 5,000
/// is not copied from results into outcomes after its send.
final class OutcomeCollector: Sendable {
    private struct State {
        var outcomes: [DeliveryOutcome]
        /// Which outcomes are in (each is recorded once).
        var received: [Bool]
        var remaining: Int
        var stopped = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    private let state: Mutex<State>

    /// Outcomes for `tokens`, in their order, each `missing` until recorded.
    init(tokens: [String], missing: DeliveryOutcome.Result) {
        let outcomes = tokens.map { DeliveryOutcome(token: $0, result: missing) }
        state = Mutex(State(outcomes: outcomes, received: Array(repeating: false, count: outcomes.count), remaining: outcomes.count))
    }

    /// The `index`th device's outcome; a second one for it, or one after ``take()``, is ignored.
    func record(_ result: DeliveryOutcome.Result, at index: Int) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard index >= 0, index < state.received.count, !state.received[index] else { return nil }
            state.received[index] = true
            state.outcomes[index].result = result
            state.remaining -= 1
            guard state.remaining == 0 else { return nil }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    /// Of `indices`, those whose outcome is not in.
    func unrecorded(among indices: some Sequence<Int>) -> [Int] {
        state.withLock { state in indices.filter { $0 >= 0 && $0 < state.received.count && !state.received[$0] } }
    }

    /// Stops waiting: outcomes not in yet stay `missing`.
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

    /// Every outcome, `missing` where none came, in the tokens' order; the collector keeps none
    /// (an outcome that comes later is not counted).
    func take() -> [DeliveryOutcome] {
        state.withLock { state in
            defer {
                state.outcomes = []
                state.received = []
            }
            return state.outcomes
        }
    }
}

/// A batch's grace period once its process is stopping: when it ends, every collector it
/// watches stops waiting (one made after it ended stops at once).
final class GracePeriod: Sendable {
    private let state = Mutex<(over: Bool, collectors: [OutcomeCollector])>((false, []))

    func watch(_ collector: OutcomeCollector) {
        let over = state.withLock { state -> Bool in
            if !state.over { state.collectors.append(collector) }
            return state.over
        }
        if over { collector.stop() }
    }

    func end() {
        let collectors = state.withLock { state -> [OutcomeCollector] in
            state.over = true
            defer { state.collectors = [] }
            return state.collectors
        }
        for collector in collectors { collector.stop() }
    }
}
